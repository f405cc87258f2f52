#include "Eval.h"

#include "Train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace linac::rt {

namespace {

constexpr int kKeyBase = 16, kKeyCount = 112, kValueBase = 128, kValueCount = 128;

/// T tokens of filler text: a random window of the shard, or random lowercase letters without one.
void fillText(Rng &rng, int T, const Shard *filler, int32_t *out) {
  if (filler && filler->size() > T + 1) {
    int64_t start = int64_t(rng.below(uint64_t(filler->size() - T - 1)));
    for (int t = 0; t < T; ++t)
      out[t] = filler->tokens()[start + t];
  } else {
    for (int t = 0; t < T; ++t)
      out[t] = 'a' + int(rng.below(26));
  }
}

void putString(int32_t *out, const std::string &s) {
  for (size_t i = 0; i < s.size(); ++i)
    out[i] = uint8_t(s[i]);
}

/// Refuses a sequence shorter than a task's sample (it would be written past the row).
void requireLength(const char *task, int T, int needed) {
  if (T < needed)
    throw Error(std::string(task) + ": a sample needs " + std::to_string(needed) + " tokens, the sequence has " +
                std::to_string(T));
}

} // namespace

void mqarSample(Rng &rng, int T, int pairs, int32_t *tokens, int32_t *targets) {
  requireLength("MQAR", T, 4); // one pair and its query
  int n = std::max(1, std::min({pairs, T / 4, kKeyCount}));
  std::vector<int32_t> keys(kKeyCount), values(n);
  for (int i = 0; i < kKeyCount; ++i)
    keys[i] = kKeyBase + i;
  for (int i = 0; i < n; ++i) { // partial Fisher-Yates: n distinct keys
    std::swap(keys[i], keys[i + rng.below(uint64_t(kKeyCount - i))]);
    values[i] = kValueBase + int32_t(rng.below(kValueCount));
  }
  std::fill(tokens, tokens + T, 0);
  std::fill(targets, targets + T, -1);
  for (int i = 0; i < n; ++i) {
    tokens[2 * i] = keys[i];
    tokens[2 * i + 1] = values[i];
  }
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i)
    order[i] = i;
  for (int i = n - 1; i > 0; --i)
    std::swap(order[i], order[rng.below(uint64_t(i + 1))]);
  for (int j = 0; j < n; ++j) {
    int pos = 2 * n + 2 * j;
    tokens[pos] = keys[order[j]];
    tokens[pos + 1] = values[order[j]];
    targets[pos] = values[order[j]];
  }
}

void needleSample(Rng &rng, int T, const Shard *filler, int32_t *tokens, int32_t *targets) {
  requireLength("needle", T, 17);
  std::string digits;
  for (int i = 0; i < 4; ++i)
    digits += char('0' + rng.below(10));
  std::string needle = "key=" + digits + ";", query = "key=" + digits;
  fillText(rng, T, filler, tokens);
  int room = T - int(query.size()) - int(needle.size());
  int depth = int(rng.below(uint64_t(std::max(1, room))));
  putString(tokens + depth, needle);
  putString(tokens + T - query.size(), query);
  std::fill(targets, targets + T, -1);
  for (int i = 0; i < 4; ++i) // the position before each digit predicts it
    targets[T - 5 + i] = digits[i];
}

void variableTrackingSample(Rng &rng, int T, const Shard *filler, int32_t *tokens, int32_t *targets) {
  requireLength("variable tracking", T, Config::kShortestEvalLength);
  // Two chains of four distinct variables each; the second is the distractor.
  std::vector<char> names;
  for (char c = 'A'; c <= 'Z'; ++c)
    names.push_back(c);
  for (int i = 0; i < 8; ++i)
    std::swap(names[i], names[i + rng.below(uint64_t(26 - i))]);
  char answer = char('0' + rng.below(10)), other = char('0' + (answer - '0' + 1 + rng.below(9)) % 10);
  std::vector<std::string> chains[2];
  for (int c = 0; c < 2; ++c) {
    const char *n = &names[4 * c];
    chains[c] = {std::string{n[0], '=', c ? other : answer, ';'}, std::string{n[1], '=', n[0], ';'},
                 std::string{n[2], '=', n[1], ';'}, std::string{n[3], '=', n[2], ';'}};
  }
  std::vector<std::string> statements; // a random interleaving that keeps each chain in order
  size_t a = 0, b = 0;
  while (a < 4 || b < 4)
    statements.push_back((b == 4 || (a < 4 && rng.below(2))) ? chains[0][a++] : chains[1][b++]);
  std::string query = std::string{'?', names[3], '='};
  int fillerLen = T - 32 - int(query.size()) - 1;
  std::vector<int32_t> text(std::max(0, fillerLen));
  fillText(rng, int(text.size()), filler, text.data());
  std::vector<int> cuts(statements.size());
  for (int &c : cuts)
    c = int(rng.below(uint64_t(text.size() + 1)));
  std::sort(cuts.begin(), cuts.end());
  int pos = 0, from = 0;
  for (size_t i = 0; i < statements.size(); ++i) {
    for (; from < cuts[i]; ++from)
      tokens[pos++] = text[from];
    putString(tokens + pos, statements[i]);
    pos += int(statements[i].size());
  }
  for (; from < int(text.size()); ++from)
    tokens[pos++] = text[from];
  putString(tokens + pos, query);
  pos += int(query.size());
  tokens[pos] = answer;
  std::fill(targets, targets + T, -1);
  targets[pos - 1] = answer;
}

void MqarBatches::next(Rng &rng, int B, int T, int32_t *tokens, int32_t *targets) {
  for (int b = 0; b < B; ++b)
    mqarSample(rng, T, pairs > 0 ? pairs : T / 8, tokens + size_t(b) * T, targets + size_t(b) * T);
}

double taskAccuracy(Backend &backend, Task task, int T, uint64_t seed, const Shard *filler) {
  Model &model = backend.model();
  Rng rng(seed);
  int samples = model.cfg.evalSamples, B = std::min(samples, model.cfg.batch);
  std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);
  int64_t answers = 0, right = 0;
  for (int done = 0; done < samples; done += B) {
    int rows = std::min(B, samples - done);
    for (int b = 0; b < rows; ++b) {
      int32_t *tk = &tokens[size_t(b) * T], *tg = &targets[size_t(b) * T];
      if (task == Task::Mqar)
        mqarSample(rng, T, model.cfg.mqarPairs > 0 ? model.cfg.mqarPairs : T / 8, tk, tg);
      else if (task == Task::Needle)
        needleSample(rng, T, filler, tk, tg);
      else
        variableTrackingSample(rng, T, filler, tk, tg);
    }
    backend.forward(tokens.data(), targets.data(), rows, T);
    const float *logits = backend.logits();
    for (int64_t i = 0; i < int64_t(rows) * T; ++i) {
      if (targets[i] < 0)
        continue;
      const float *row = logits + i * kVocab;
      ++answers;
      right += std::max_element(row, row + kVocab) - row == targets[i];
    }
  }
  return answers ? double(right) / double(answers) : 0.0;
}

std::string evaluate(Backend &backend, const Shard *val, const std::string &checkpoint, int step) {
  Model &model = backend.model();
  const Config &cfg = model.cfg;
  std::ostringstream json;
  json.precision(6);
  json << "{\n  \"config\": \"" << cfg.path << "\",\n  \"checkpoint\": \"" << checkpoint << "\",\n  \"step\": "
       << step << ",\n  \"layers\": \"" << model.describe() << "\",\n";
  if (val) {
    double loss = validationLoss(backend, *val);
    std::printf("validation: loss %.4f | perplexity %.3f | %d x %d x %d tokens\n", loss, std::exp(loss),
                cfg.valBatches, cfg.batch, cfg.seqLen);
    json << "  \"val_loss\": " << loss << ",\n  \"val_perplexity\": " << std::exp(loss) << ",\n  \"val_tokens\": "
         << int64_t(cfg.valBatches) * cfg.batch * cfg.seqLen << ",\n";
  }
  const std::pair<Task, const char *> tasks[] = {
      {Task::Mqar, "mqar"}, {Task::Needle, "needle"}, {Task::VariableTracking, "variable_tracking"}};
  std::printf("%-18s", "task \\ length");
  for (int T : cfg.evalLengths)
    std::printf(" %8d", T);
  std::printf("\n");
  for (size_t i = 0; i < std::size(tasks); ++i) {
    json << "  \"" << tasks[i].second << "\": [";
    std::printf("%-18s", tasks[i].second);
    for (size_t j = 0; j < cfg.evalLengths.size(); ++j) {
      int T = cfg.evalLengths[j];
      // One seed per task and length, so every checkpoint is scored on the same samples.
      double acc = taskAccuracy(backend, tasks[i].first, T, cfg.seed * 1000003 + i * 7919 + T, val);
      std::printf(" %8.3f", acc);
      json << (j ? ", " : "") << "{\"length\": " << T << ", \"accuracy\": " << acc << ", \"samples\": "
           << cfg.evalSamples;
      if (tasks[i].first == Task::Mqar)
        json << ", \"pairs\": " << std::max(1, std::min({cfg.mqarPairs > 0 ? cfg.mqarPairs : T / 8, T / 4, kKeyCount}));
      json << "}";
    }
    std::printf("\n");
    json << "]" << (i + 1 < std::size(tasks) ? "," : "") << "\n";
  }
  json << "}\n";
  return json.str();
}

} // namespace linac::rt
