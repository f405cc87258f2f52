// The C header linacc writes next to the object: the ABI of each entry point
// and a table of its inputs, so callers (tests, the runtime) need no MLIR.

#include "lib/Target/Header.h"
#include "lib/Analysis/Structure.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace linac;

std::string linac::inputActivation(RecurrenceOp rec, unsigned inputIndex) {
  BlockArgument arg = rec.getInputArguments()[inputIndex];
  if (auto given = rec.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "linac.activation"))
    return given.str();
  std::string derived = "none";
  rec.getBody().walk([&](Operation *op) {
    if (auto decay = dyn_cast<DecayOp>(op); decay && decay.getGate() == arg)
      derived = "log_sigmoid";
    if (auto delta = dyn_cast<DeltaOp>(op)) {
      if (delta.getBeta() == arg)
        derived = "sigmoid";
      if (delta.getKey() == arg)
        derived = "l2_normalize";
    }
  });
  return derived;
}

EntryPointInfo linac::describeEntryPoint(RecurrenceOp rec, StringRef sourceFile) {
  EntryPointInfo info;
  info.name = rec.getSymName().str();
  info.sourceFile = sourceFile.str();
  info.matrixState = rec.getStateType().isMatrix();
  std::optional<RecurrenceStructure> st = RecurrenceStructure::analyze(rec);
  for (auto [i, arg] : llvm::enumerate(rec.getInputArguments())) {
    EntryPointInfo::Input input;
    if (auto name = rec.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "linac.name"))
      input.name = name.str();
    else
      input.name = "input" + std::to_string(i);
    bool perHead = rec.isPerHead(i);
    bool isVector = isa<RankedTensorType>(arg.getType());
    bool key = isVector && st && st->dims.lookup(arg) == Dim::Key;
    std::string dim = !isVector ? "" : (key ? ",K" : ",V");
    if (perHead) {
      input.kind = !isVector ? "LINAC_HEAD_SCALAR" : (key ? "LINAC_HEAD_KEY" : "LINAC_HEAD_VALUE");
      input.shape = "[H" + dim + "]";
    } else {
      input.kind = !isVector ? "LINAC_TOKEN_SCALAR" : (key ? "LINAC_TOKEN_KEY" : "LINAC_TOKEN_VALUE");
      input.shape = "[B,T,H" + dim + "]";
    }
    input.activation = inputActivation(rec, i);
    info.inputs.push_back(input);
  }
  return info;
}

static const char *kAbiHeader = R"(/* The ABI shared by every entry point linacc generates. */
#ifndef LINAC_ABI_H
#define LINAC_ABI_H

#include <stdint.h>

/* How an input is laid out: per token [B,T,H,*] or per head [H,*]; *_KEY has the
   key dimension K, *_VALUE the value dimension V, *_SCALAR none. */
enum linac_input_kind {
  LINAC_TOKEN_KEY, LINAC_TOKEN_VALUE, LINAC_TOKEN_SCALAR,
  LINAC_HEAD_KEY, LINAC_HEAD_VALUE, LINAC_HEAD_SCALAR
};
/* How a model should produce an input from its raw projection z (from the recurrence: a decay's gate is a
   log decay, the delta rule's beta a rate and its key a unit vector; `linac.activation` on the argument
   overrides): as it comes, log_sigmoid(z) (<= 0), sigmoid(z) (in (0, 1)), or z / |z| per token. */
enum linac_activation {
  @ACTIVATIONS@
};
typedef struct linac_input_desc {
  const char *name;
  enum linac_input_kind kind;
  enum linac_activation activation;
} linac_input_desc;
/* Forward entry point of every recurrence, row-major fp32 buffers:
     inputs[i]   input i of the table below
     out         [B,T,H,V] (vector states: [B,T,H,K])
     h0, ht      initial / final state [N,H,K,V] (vector states: [N,H,K]); either may be NULL
     cu_seqlens  NULL: N = B sequences of T tokens each.
                 else: N+1 offsets, B = 1 and T = total tokens; sequence n is tokens [cu[n], cu[n+1]).
     scale       read scale; <= 0 selects K^-1/2. */
typedef void (*linac_forward_fn)(const float *const *inputs, float *out, const float *h0, float *ht,
                                 const int32_t *cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K,
                                 int64_t V, float scale);
/* Backward entry point: the gradient of sum(out * dout) + sum(ht * dht) with respect to every input
   (dinputs[i], shaped like inputs[i]; overwritten) and the initial state (dh0, may be NULL). It needs the
   forward's inputs, h0 and sizes only: states are recomputed from the inputs, keeping one state per chunk
   boundary (N * H * ceil(T / C) * K * V floats). dht may be NULL (no final-state cotangent). */
typedef void (*linac_backward_fn)(const float *const *inputs, const float *h0, const float *dout,
                                  const float *dht, float *const *dinputs, float *dh0,
                                  const int32_t *cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K,
                                  int64_t V, float scale);
#endif
)";

std::string linac::emitAbiHeader() {
  // The enumerators of kActivations, in its order (the input tables hold indices into it).
  std::string enumerators;
  for (llvm::StringRef name : kActivations)
    enumerators += (enumerators.empty() ? "" : ", ") + activationEnumerator(name);
  std::string header = kAbiHeader;
  header.replace(header.find("@ACTIVATIONS@"), 13, enumerators);
  return header;
}

std::string linac::emitCHeader(ArrayRef<EntryPointInfo> entries, ArrayRef<std::string> variants, StringRef forward,
                               ArrayRef<std::string> backwardVariants, StringRef guardStem, StringRef io) {
  std::string guard = "LINAC_GENERATED_" + guardStem.upper();
  for (char &c : guard)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "/* Generated by linacc. Do not edit. */\n#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include \"linac_abi.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
  for (const EntryPointInfo &e : entries) {
    os << llvm::formatv("\n/* linac.recurrence @{0} from {1}: {2} state. */\n", e.name, e.sourceFile,
                        e.matrixState ? "matrix [K,V]" : "vector [K]");
    os << llvm::formatv("/* linac_{0}_forward runs the {1} variant. */\n", e.name, forward);
    if (io != "f32")
      os << llvm::formatv("/* 16-bit I/O: the per-token inputs, out and dout are {0} buffers (their bits passed through\n"
                          "   the float pointers); per-head inputs, states and the input gradients are float. */\n",
                          io);
    std::vector<std::string> suffixes = {""};
    for (const std::string &v : variants)
      suffixes.push_back("_" + v);
    for (const std::string &suffix : suffixes)
      os << llvm::formatv("void linac_{0}_forward{1}{2}(const float *const *inputs, float *out, const float *h0,\n"
                          "    float *ht, const int32_t *cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K,\n"
                          "    int64_t V, float scale);\n",
                          e.name, "", suffix);
    if (!backwardVariants.empty()) {
      os << llvm::formatv("/* linac_{0}_backward runs the {1} variant. */\n", e.name, backwardVariants.front());
      std::vector<std::string> suffixes = {""};
      for (const std::string &v : backwardVariants)
        suffixes.push_back("_" + v);
      for (const std::string &suffix : suffixes)
        os << llvm::formatv("void linac_{0}_backward{1}(const float *const *inputs, const float *h0,\n"
                            "    const float *dout, const float *dht, float *const *dinputs, float *dh0,\n"
                            "    const int32_t *cu_seqlens, int64_t N, int64_t T, int64_t H, int64_t K, int64_t V,\n"
                            "    float scale);\n",
                            e.name, suffix);
    }
    os << llvm::formatv("enum {{ linac_{0}_num_inputs = {1}, linac_{0}_state_rank = {2} };\n", e.name, e.inputs.size(),
                        e.matrixState ? 2 : 1);
    os << llvm::formatv("extern const char linac_{0}_io[]; /* \"{1}\": the I/O type of every entry point */\n",
                        e.name, io);
    os << llvm::formatv("static const linac_input_desc linac_{0}_inputs[] = {{\n", e.name);
    for (const auto &in : e.inputs)
      os << llvm::formatv("  {{\"{0}\", {1}, {2}}, /* {3} */\n", in.name, in.kind, activationEnumerator(in.activation),
                          in.shape);
    os << "};\n";
  }
  os << "\n#ifdef __cplusplus\n}\n#endif\n#endif\n";
  return out;
}
