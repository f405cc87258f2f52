#ifndef LINAC_RUNTIME_EVAL_H
#define LINAC_RUNTIME_EVAL_H

// Evaluation: validation loss and perplexity, and three synthetic recall tasks
// generated from a seed at each context length. A task fills tokens [T] and targets
// [T]; targets are -1 except at the positions whose next token is an answer, and
// accuracy is the fraction of those where the model's argmax is the answer.
//
//   MQAR (multi-query associative recall, Zoology): k1 v1 k2 v2 ... kn vn, then the
//     keys again in a shuffled order, each followed by its value. Keys are bytes
//     16..127, values 128..255 (chance 1/128).
//   Needle in a haystack: validation text with "key=DDDD;" hidden at a random depth;
//     the sequence ends with "key=DDDD" and the four digits are scored (chance 1/10).
//   Variable tracking (RULER): "A=7;B=A;C=B;D=C;" and a distractor chain spread through
//     validation text; the sequence ends with "?D=" and the digit is scored (chance 1/10).

#include "Data.h"
#include "Train.h"

#include <string>

namespace linac::rt {

/// pairs is clipped to T / 4 so every key is queried once. Throws Error for T < 4 (one pair and its query).
void mqarSample(Rng &rng, int T, int pairs, int32_t *tokens, int32_t *targets);
/// filler: text to hide the needle in; null fills with random lowercase letters. Throws Error for T < 17.
void needleSample(Rng &rng, int T, const Shard *filler, int32_t *tokens, int32_t *targets);
/// Throws Error for T < Config::kShortestEvalLength (36).
void variableTrackingSample(Rng &rng, int T, const Shard *filler, int32_t *tokens, int32_t *targets);

/// Synthetic MQAR training data (`linac-train mqar`): the loss counts the answers only.
class MqarBatches : public BatchSource {
public:
  explicit MqarBatches(int pairs) : pairs(pairs) {}
  void next(Rng &rng, int B, int T, int32_t *tokens, int32_t *targets) override;

private:
  int pairs;
};

enum class Task { Mqar, Needle, VariableTracking };

/// Fraction of answer positions predicted right over cfg.evalSamples samples of length T from `seed`.
double taskAccuracy(Backend &backend, Task task, int T, uint64_t seed, const Shard *filler);

/// Runs every task at every cfg.evalLengths entry (and the validation loss when val is set); prints a table and
/// returns the JSON report.
std::string evaluate(Backend &backend, const Shard *val, const std::string &checkpoint, int step);

} // namespace linac::rt

#endif
