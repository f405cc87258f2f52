#ifndef LINAC_TEST_NUMERICS_REFERENCE_H
#define LINAC_TEST_NUMERICS_REFERENCE_H

// Independent fp64 sequential reference for the example recurrences, forward and hand-derived reverse mode.
// It is the ground truth the compiler's kernels are checked against, so it is written from the math alone
// and shares nothing with the compiler.
//
// Layouts follow flash-linear-attention (all row-major, fp64):
//   token tensors [B,T,H,D], per-token scalars [B,T,H], per-head tensors [H,K], states [N,H,K,V]
//   (HGRN: state [N,H,K], output [B,T,H,K]).
// Without cu_seqlens N = B and sequence n is tokens [n*T, (n+1)*T) of the flattened b*T+t index. With
// cu_seqlens (N+1 offsets, cu[0] = 0, cu[N] = T) B must be 1, T is the total token count and sequence n is
// tokens [cu[n], cu[n+1]). Each sequence starts from h0[n] (zeros when h0 is null) and ends in finalState[n].
// Gates are log-space: a gate g decays by exp(g).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace linac::ref {

struct Shape {
  int64_t B, T, H, K, V;
  /// Empty means fixed-length sequences.
  std::vector<int32_t> cu_seqlens;
  int64_t numSeqs() const;
};

struct ForwardResult {
  std::vector<double> out;
  std::vector<double> finalState;
};

/// `inputs` holds one tensor per input of `name`, in the order of inputsOf(name). A scale <= 0 means
/// 1/sqrt(K); HGRN has no read and ignores it. Throws std::invalid_argument on an unknown name or a tensor
/// whose size does not match `s`.
ForwardResult forward(const std::string &name, const Shape &s, const std::vector<std::vector<double>> &inputs,
                      const std::vector<double> *h0, double scale);

struct BackwardResult {
  /// Same order and shapes as the inputs.
  std::vector<std::vector<double>> dInputs;
  /// Gradient w.r.t. the initial state; when h0 is null it is taken at h0 = 0.
  std::vector<double> dh0;
};

/// Gradient of sum(out * dOut) + sum(finalState * dFinal) w.r.t. every input and h0; a null dFinal is zeros.
BackwardResult backward(const std::string &name, const Shape &s, const std::vector<std::vector<double>> &inputs,
                        const std::vector<double> *h0, double scale, const std::vector<double> &dOut,
                        const std::vector<double> *dFinal);

/// TokenKey [B,T,H,K], TokenValue [B,T,H,V], TokenScalar [B,T,H], HeadKey [H,K].
enum class InputKind { TokenKey, TokenValue, TokenScalar, HeadKey };

/// The values an input takes, declared by each reference beside its inputs: the test generators draw from it
/// (no generator looks at an input's name). Real: N(0, 1); LogGate: a log-space decay gate, <= 0; Strength: a
/// write strength in (0, 1) (the delta rule's beta); UnitRows: rows of unit norm (the delta rule's keys).
enum class InputDomain { Real, LogGate, Strength, UnitRows };

struct Input {
  std::string name;
  InputKind kind;
  InputDomain domain = InputDomain::Real;
  bool operator==(const Input &o) const { return name == o.name && kind == o.kind && domain == o.domain; }
};

/// The inputs of `name` (names, kinds, domains), in the order forward() and backward() take them.
std::vector<Input> inputsOf(const std::string &name);

/// "hgrn", "retnet", "simple_gla", "gla", "hgrn2", "rwkv6", "deltanet", "gated_deltanet".
std::vector<std::string> recurrenceNames();

/// True for HGRN, whose state is [N,H,K] and output [B,T,H,K].
bool isVectorState(const std::string &name);

} // namespace linac::ref

#endif
