#ifndef LINAC_RUNTIME_DATA_H
#define LINAC_RUNTIME_DATA_H

// Byte-level text data: every byte is a token (vocabulary 256). The corpus is the
// license texts every Debian system has under /usr/share/common-licenses.
//
// Shard format (little-endian): uint32 magic 0x4B48534C ("LSHK"), uint32 version 1,
// uint64 token count, then that many uint16 tokens. Shards are written once and
// memory-mapped.

#include "Rng.h"

#include <cstdint>
#include <string>
#include <vector>

namespace linac::rt {

constexpr uint32_t kShardMagic = 0x4B48534C;
constexpr uint32_t kShardVersion = 1;
/// Separates documents in the token stream (a NUL byte never occurs in the license texts).
constexpr int32_t kDocumentSeparator = 0;

struct CorpusSplit {
  std::vector<uint16_t> train, val;
  int documents = 0;
};

/// Regular files under `dir` in name order (symlinks skipped: they duplicate other licenses); the first 90% of
/// each document's bytes go to train, the rest to validation, so both see every license.
CorpusSplit readCorpus(const std::string &dir);
void writeShard(const std::string &path, const std::vector<uint16_t> &tokens);

/// A read-only memory map of a shard.
class Shard {
public:
  explicit Shard(const std::string &path);
  ~Shard();
  Shard(const Shard &) = delete;
  Shard &operator=(const Shard &) = delete;
  const uint16_t *tokens() const { return data; }
  int64_t size() const { return count; }

private:
  void *map = nullptr;
  size_t mapSize = 0;
  const uint16_t *data = nullptr;
  int64_t count = 0;
};

/// Writes DIR/train.bin and DIR/val.bin from the corpus unless both exist; returns a line saying what it did.
std::string prepareShards(const std::string &dataDir, const std::string &corpusDir = "/usr/share/common-licenses");

/// Fills tokens and next-token targets [B, T] for one training step.
class BatchSource {
public:
  virtual ~BatchSource() = default;
  virtual void next(Rng &rng, int B, int T, int32_t *tokens, int32_t *targets) = 0;
};

/// Windows of T + 1 tokens at random offsets of a shard.
class ShardBatches : public BatchSource {
public:
  explicit ShardBatches(const Shard &shard) : shard(shard) {}
  void next(Rng &rng, int B, int T, int32_t *tokens, int32_t *targets) override;

private:
  const Shard &shard;
};

/// Window `index` of the consecutive, non-overlapping windows of a shard (validation reads the same ones every time).
void fixedWindow(const Shard &shard, int64_t index, int T, int32_t *tokens, int32_t *targets);

} // namespace linac::rt

#endif
