#include "Train.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace linac::rt {

TrainState initialState(const Model &model) {
  TrainState s;
  // The data stream gets its own seed so changing the initialisation does not change the batches.
  s.dataRng = Rng(model.cfg.seed ^ 0x5eedda7a5eedda7aull);
  s.m.assign(model.params.values.size(), 0.0f);
  s.v.assign(model.params.values.size(), 0.0f);
  return s;
}

double learningRate(const Config &cfg, int step) {
  if (step < cfg.warmup)
    return cfg.lr * (step + 1) / cfg.warmup;
  double progress = double(step - cfg.warmup) / std::max(1, cfg.steps - cfg.warmup);
  progress = std::min(progress, 1.0);
  double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return cfg.lr * (cfg.minLrFraction + (1.0 - cfg.minLrFraction) * cosine);
}

double clipGradients(std::vector<float> &grads, double maxNorm) {
  double sum = 0;
  for (float g : grads)
    sum += double(g) * g;
  double norm = std::sqrt(sum);
  if (maxNorm > 0 && norm > maxNorm) {
    float scale = float(maxNorm / norm);
    for (float &g : grads)
      g *= scale;
  }
  return norm;
}

void adamwStep(Model &model, TrainState &state, double lr, int step) {
  const double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double c1 = 1.0 - std::pow(beta1, step), c2 = 1.0 - std::pow(beta2, step);
  std::vector<float> &w = model.params.values, &g = model.params.grads;
  for (const ParamInfo &p : model.params.info) {
    double decay = p.decay ? model.cfg.weightDecay : 0.0;
    for (size_t i = p.offset; i < p.offset + p.size; ++i) {
      state.m[i] = float(beta1 * state.m[i] + (1 - beta1) * g[i]);
      state.v[i] = float(beta2 * state.v[i] + (1 - beta2) * double(g[i]) * g[i]);
      double update = (state.m[i] / c1) / (std::sqrt(state.v[i] / c2) + eps) + decay * w[i];
      w[i] = float(w[i] - lr * update);
    }
  }
}

namespace {

constexpr char kCheckpointMagic[8] = {'L', 'I', 'N', 'A', 'C', 'K', 'P', 'T'};
constexpr uint32_t kCheckpointVersion = 1;
constexpr size_t kCheckpointHeader = 8 + 4 + 4 + 5 * 8;

uint64_t fnv1a(const char *data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < n; ++i)
    h = (h ^ uint8_t(data[i])) * 0x100000001b3ull;
  return h;
}

uint64_t layoutHash(const Model &model) {
  std::string layout;
  for (const ParamInfo &p : model.params.info) {
    layout += p.name;
    for (int64_t d : p.shape)
      layout += ":" + std::to_string(d);
    layout += ";";
  }
  return fnv1a(layout.data(), layout.size());
}

std::string hex(uint64_t x) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)x);
  return buf;
}

} // namespace

void saveCheckpoint(const std::string &path, Model &model, const TrainState &state) {
  std::string bytes(kCheckpointMagic, 8);
  auto put = [&](const void *p, size_t n) { bytes.append(static_cast<const char *>(p), n); };
  uint32_t version[2] = {kCheckpointVersion, 0};
  uint64_t fields[5] = {model.cfg.hash(), uint64_t(state.step), state.dataRng.state, model.params.values.size(),
                        layoutHash(model)};
  put(version, sizeof version);
  put(fields, sizeof fields);
  put(model.params.values.data(), model.params.values.size() * sizeof(float));
  put(state.m.data(), state.m.size() * sizeof(float));
  put(state.v.data(), state.v.size() * sizeof(float));
  uint64_t checksum = fnv1a(bytes.data(), bytes.size());
  put(&checksum, sizeof checksum);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out)
      throw Error(tmp + ": cannot write checkpoint");
  }
  std::filesystem::rename(tmp, path);
}

void loadCheckpoint(const std::string &path, Model &model, TrainState &state) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open checkpoint");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto refuse = [&](const std::string &why) { return Error(path + ": checkpoint refused: " + why); };
  if (bytes.size() < kCheckpointHeader || std::memcmp(bytes.data(), kCheckpointMagic, 8) != 0)
    throw refuse("not a linac checkpoint (bad magic)");
  uint32_t version[2];
  uint64_t fields[5];
  std::memcpy(version, bytes.data() + 8, sizeof version);
  std::memcpy(fields, bytes.data() + 16, sizeof fields);
  if (version[0] != kCheckpointVersion)
    throw refuse("format version " + std::to_string(version[0]) + ", this build reads version " +
                 std::to_string(kCheckpointVersion));
  uint64_t n = fields[3];
  if (n > bytes.size())
    throw refuse("truncated: header counts " + std::to_string(n) + " parameters, file has " +
                 std::to_string(bytes.size()) + " bytes");
  size_t expected = kCheckpointHeader + 3 * n * sizeof(float) + sizeof(uint64_t);
  if (bytes.size() != expected)
    throw refuse((bytes.size() < expected ? "truncated: " : "trailing data: ") + std::to_string(bytes.size()) +
                 " bytes, expected " + std::to_string(expected));
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + expected - 8, sizeof stored);
  if (fnv1a(bytes.data(), expected - 8) != stored)
    throw refuse("corrupt: checksum mismatch");
  if (fields[0] != model.cfg.hash())
    throw refuse("written for a different config (hash " + hex(fields[0]) + ", " + model.cfg.path + " has " +
                 hex(model.cfg.hash()) + ")");
  if (n != model.params.values.size() || fields[4] != layoutHash(model))
    throw refuse("parameter layout differs from this model's (" + std::to_string(n) + " vs " +
                 std::to_string(model.params.values.size()) + " parameters)");
  const char *p = bytes.data() + kCheckpointHeader;
  std::memcpy(model.params.values.data(), p, n * sizeof(float));
  state.m.resize(n);
  state.v.resize(n);
  std::memcpy(state.m.data(), p + n * sizeof(float), n * sizeof(float));
  std::memcpy(state.v.data(), p + 2 * n * sizeof(float), n * sizeof(float));
  state.step = int(fields[1]);
  state.dataRng.state = fields[2];
}

double CpuBackend::forward(const int32_t *tokens, const int32_t *targets, int B, int T) {
  return m.forward(tokens, targets, B, T);
}

double CpuBackend::trainStep(const int32_t *tokens, const int32_t *targets, int B, int T, double lr, int step,
                             TrainState &state, double &gradNorm) {
  RankBatch part = rankBatch(reducer, tokens, targets, B, T);
  m.zeroGrad();
  double loss = m.forward(part.tokens, part.targets, part.rows, T);
  m.backward();
  if (reducer)
    reduceGradients(*reducer, m.params.grads.data(), m.params.grads.size(), loss, part.scored);
  gradNorm = clipGradients(m.params.grads, m.cfg.gradClip);
  adamwStep(m, state, lr, step);
  return loss;
}

double validationLoss(Backend &backend, const Shard &val) {
  const Config &cfg = backend.model().cfg;
  int B = cfg.batch, T = cfg.seqLen;
  std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);
  double sum = 0;
  for (int i = 0; i < cfg.valBatches; ++i) {
    for (int b = 0; b < B; ++b)
      fixedWindow(val, int64_t(i) * B + b, T, &tokens[size_t(b) * T], &targets[size_t(b) * T]);
    sum += backend.forward(tokens.data(), targets.data(), B, T);
  }
  return sum / cfg.valBatches;
}

namespace {

std::string duration(double seconds) {
  long s = long(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

} // namespace

TrainResult train(Model &model, TrainState &state, BatchSource &source, const TrainOptions &opts) {
  CpuBackend cpu(model);
  return train(cpu, state, source, opts);
}

TrainResult train(Backend &backend, TrainState &state, BatchSource &source, const TrainOptions &opts) {
  Model &model = backend.model();
  const Config &cfg = model.cfg;
  int B = cfg.batch, T = cfg.seqLen;
  int last = opts.stopAt >= 0 ? std::min(opts.stopAt, cfg.steps) : cfg.steps;
  std::string csvPath = opts.outDir + "/log.csv";
  std::ofstream csv;
  if (opts.writeFiles) {
    std::filesystem::create_directories(opts.outDir);
    bool resuming = state.step > 0 && std::filesystem::exists(csvPath);
    csv.open(csvPath, resuming ? std::ios::app : std::ios::trunc);
    if (!resuming)
      csv << "step,loss,lr,grad_norm,val_loss\n";
  }

  std::vector<int32_t> tokens(size_t(B) * T), targets(size_t(B) * T);
  TrainResult result;
  auto start = std::chrono::steady_clock::now();
  int first = state.step;
  int printEvery = std::max(1, cfg.steps / 40);
  for (int step = state.step; step < last; ++step) {
    source.next(state.dataRng, B, T, tokens.data(), targets.data());
    double lr = learningRate(cfg, step), norm = 0;
    double loss = backend.trainStep(tokens.data(), targets.data(), B, T, lr, step + 1, state, norm);
    state.step = step + 1;
    result.losses.push_back(loss);

    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int done = state.step - first;
    result.tokensPerSecond = double(done) * B * T / elapsed;
    bool evalNow = opts.val && ((cfg.evalEvery > 0 && state.step % cfg.evalEvery == 0) || state.step == cfg.steps);
    std::string valField;
    if (evalNow) {
      result.lastValLoss = validationLoss(backend, *opts.val);
      valField = std::to_string(result.lastValLoss);
    }
    csv << state.step << "," << loss << "," << lr << "," << norm << "," << valField << "\n";
    csv.flush();
    if (!opts.quiet && (state.step % printEvery == 0 || state.step == last || evalNow)) {
      double eta = elapsed / done * (last - state.step);
      std::printf("step %5d/%d | loss %.4f | lr %.2e | grad norm %.3f | %.0f tok/s | eta %s%s\n", state.step,
                  cfg.steps, loss, lr, norm, result.tokensPerSecond, duration(eta).c_str(),
                  evalNow ? (" | val loss " + valField).c_str() : "");
      std::fflush(stdout);
    }
    if (opts.writeFiles && cfg.checkpointEvery > 0 && state.step % cfg.checkpointEvery == 0) {
      backend.sync(state);
      saveCheckpoint(opts.outDir + "/model.ckpt", model, state);
    }
  }
  backend.sync(state);
  if (opts.writeFiles) {
    csv.close();
    saveCheckpoint(opts.outDir + "/model.ckpt", model, state);
    writeLossPlot(csvPath, opts.outDir + "/loss.svg", cfg.path);
  }
  return result;
}

LossLog readLossLog(const std::string &csvPath) {
  std::ifstream in(csvPath);
  LossLog log;
  std::string line;
  std::getline(in, line); // header
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::stringstream row(line);
    for (std::string c; std::getline(row, c, ',');)
      cols.push_back(c);
    if (cols.size() < 2)
      continue;
    double step = std::stod(cols[0]);
    log.train.emplace_back(step, std::stod(cols[1]));
    if (cols.size() >= 5 && !cols[4].empty())
      log.val.emplace_back(step, std::stod(cols[4]));
  }
  return log;
}

void writeLossPlot(const std::string &csvPath, const std::string &svgPath, const std::string &title) {
  const LossLog log = readLossLog(csvPath);
  const std::vector<std::pair<double, double>> &trainPts = log.train, &valPts = log.val;
  if (trainPts.empty())
    return;
  double x0 = 0, x1 = trainPts.back().first, y0 = 1e30, y1 = -1e30;
  for (const auto *pts : {&trainPts, &valPts})
    for (auto [x, y] : *pts) {
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  if (y1 - y0 < 1e-9)
    y1 = y0 + 1;
  const double W = 720, H = 420, left = 60, right = 20, top = 30, bottom = 40;
  auto px = [&](double x) { return left + (x - x0) / std::max(1e-9, x1 - x0) * (W - left - right); };
  auto py = [&](double y) { return top + (y1 - y) / (y1 - y0) * (H - top - bottom); };
  std::ofstream svg(svgPath);
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
  svg << "<text x='" << left << "' y='18'>" << title << ": loss per step (blue train, red validation)</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
    char label[32];
    std::snprintf(label, sizeof label, "%.3g", y);
    svg << "<line x1='" << left << "' x2='" << W - right << "' y1='" << py(y) << "' y2='" << py(y)
        << "' stroke='#ddd'/>\n<text x='5' y='" << py(y) + 4 << "'>" << label << "</text>\n";
    svg << "<text x='" << px(x) - 10 << "' y='" << H - bottom + 18 << "'>" << long(x) << "</text>\n";
  }
  svg << "<text x='" << W / 2 << "' y='" << H - 5 << "'>step</text>\n";
  auto polyline = [&](const std::vector<std::pair<double, double>> &pts, const char *color) {
    svg << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
    for (auto [x, y] : pts)
      svg << px(x) << "," << py(y) << " ";
    svg << "'/>\n";
  };
  polyline(trainPts, "#1f77b4");
  if (!valPts.empty())
    polyline(valPts, "#d62728");
  svg << "</svg>\n";
}

} // namespace linac::rt
