#include "Data.h"

#include "Config.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

namespace linac::rt {

namespace fs = std::filesystem;

CorpusSplit readCorpus(const std::string &dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && !entry.is_symlink())
      files.push_back(entry.path());
  if (ec || files.empty())
    throw Error(dir + ": no corpus files (" + (ec ? ec.message() : "directory is empty") + ")");
  std::sort(files.begin(), files.end());
  CorpusSplit split;
  for (const fs::path &file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t cut = text.size() * 9 / 10;
    for (size_t i = 0; i < text.size(); ++i)
      (i < cut ? split.train : split.val).push_back(uint8_t(text[i]));
    split.train.push_back(kDocumentSeparator);
    split.val.push_back(kDocumentSeparator);
    ++split.documents;
  }
  return split;
}

void writeShard(const std::string &path, const std::vector<uint16_t> &tokens) {
  // A temporary of this process's own: data-parallel ranks (and concurrent runs) sharing a data_dir each write
  // the same shard and rename it into place; one name for all of them lost a rename to another's (seen with
  // --ranks 2 on a fresh data_dir).
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    uint32_t header[2] = {kShardMagic, kShardVersion};
    uint64_t count = tokens.size();
    out.write(reinterpret_cast<const char *>(header), sizeof header);
    out.write(reinterpret_cast<const char *>(&count), sizeof count);
    out.write(reinterpret_cast<const char *>(tokens.data()), std::streamsize(tokens.size() * sizeof(uint16_t)));
    if (!out)
      throw Error(tmp + ": cannot write shard");
  }
  // Rename last so an interrupted run never leaves a shard that looks complete.
  fs::rename(tmp, path);
}

Shard::Shard(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw Error(path + ": cannot open shard (run 'linac-train prepare' first)");
  struct stat st;
  fstat(fd, &st);
  mapSize = size_t(st.st_size);
  const size_t headerSize = 16;
  if (mapSize < headerSize) {
    ::close(fd);
    throw Error(path + ": not a token shard (" + std::to_string(mapSize) + " bytes, shorter than the header)");
  }
  map = mmap(nullptr, mapSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED)
    throw Error(path + ": cannot map shard");
  uint32_t header[2];
  uint64_t n;
  std::memcpy(header, map, sizeof header);
  std::memcpy(&n, static_cast<char *>(map) + 8, sizeof n);
  std::string problem = header[0] != kShardMagic       ? "bad magic"
                        : header[1] != kShardVersion    ? "version " + std::to_string(header[1]) + ", expected 1"
                        : headerSize + n * 2 != mapSize ? "header says " + std::to_string(n) +
                                                              " tokens but the file has room for " +
                                                              std::to_string((mapSize - headerSize) / 2)
                                                        : "";
  if (!problem.empty()) {
    munmap(map, mapSize);
    throw Error(path + ": not a valid token shard: " + problem);
  }
  data = reinterpret_cast<const uint16_t *>(static_cast<char *>(map) + headerSize);
  count = int64_t(n);
}

Shard::~Shard() { munmap(map, mapSize); }

std::string prepareShards(const std::string &dataDir, const std::string &corpusDir) {
  std::string train = dataDir + "/train.bin", val = dataDir + "/val.bin";
  if (fs::exists(train) && fs::exists(val))
    return "using shards in " + dataDir;
  CorpusSplit split = readCorpus(corpusDir);
  fs::create_directories(dataDir);
  writeShard(train, split.train);
  writeShard(val, split.val);
  return "wrote " + train + " (" + std::to_string(split.train.size()) + " tokens) and " + val + " (" +
         std::to_string(split.val.size()) + " tokens) from " + std::to_string(split.documents) + " files in " +
         corpusDir;
}

void ShardBatches::next(Rng &rng, int B, int T, int32_t *tokens, int32_t *targets) {
  int64_t span = shard.size() - T - 1;
  if (span <= 0)
    throw Error("shard of " + std::to_string(shard.size()) + " tokens is shorter than seq_len + 1");
  for (int b = 0; b < B; ++b) {
    int64_t start = int64_t(rng.below(uint64_t(span)));
    for (int t = 0; t < T; ++t) {
      tokens[b * T + t] = shard.tokens()[start + t];
      targets[b * T + t] = shard.tokens()[start + t + 1];
    }
  }
}

void fixedWindow(const Shard &shard, int64_t index, int T, int32_t *tokens, int32_t *targets) {
  int64_t windows = (shard.size() - 1) / T;
  int64_t start = (index % windows) * T;
  for (int t = 0; t < T; ++t) {
    tokens[t] = shard.tokens()[start + t];
    targets[t] = shard.tokens()[start + t + 1];
  }
}

} // namespace linac::rt
