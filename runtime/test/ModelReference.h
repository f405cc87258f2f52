#ifndef LINAC_RUNTIME_TEST_MODELREFERENCE_H
#define LINAC_RUNTIME_TEST_MODELREFERENCE_H

// An independent fp64 forward of the runtime's hybrid model (runtime/Model.h), and its gradient by fp64 central
// differences at chosen entries: the truth that the fp32 CPU model and the GPU backend are each measured against,
// instead of against each other.
//
// It is written from the model's definition, not from Model.cpp's code: plain double loops over the parameters
// looked up by name in the model's ParamInfo table (every tensor the table holds must be used, with the shape the
// architecture implies, or it throws). It shares with the runtime only conventions, not arithmetic: the layer
// layout (Config::attentionLayers) and the linear-attention input plan (planInputs: which projections a recurrence
// takes and how each is transformed; the optional short convolution, short_conv, goes on the per-token ones that are
// not gates or rates). The recurrence core is the fp64 sequential reference of test/Numerics
// (linac::ref::forward), which the compiled kernels are themselves tested against.

#include "runtime/Config.h"
#include "runtime/Model.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace linac::modelref {

/// True when linac::ref has the recurrence `variant` (the eight examples); a recurrence loaded from a kernel
/// library (test/Numerics/novel.mlir) has none, and referenceLoss throws std::invalid_argument for it.
bool hasReference(const std::string &variant);

/// The mean cross-entropy of tokens [B, T] against targets [B, T] (negative targets ignored; 0 if none counts)
/// of the model `cfg` whose parameters, laid out as `info` says, are `params`, in fp64.
double referenceLoss(const rt::Config &cfg, const std::vector<rt::ParamInfo> &info, const std::vector<double> &params,
                     const int32_t *tokens, const int32_t *targets, int B, int T);

/// dLoss/dparams[i] for each i of `flatIndices`, by central differences of referenceLoss in fp64. The step starts
/// at s = h * rms(the tensor holding i), the tensor's own scale (weights 0.02, norm gains 1; h for an all-zero
/// tensor); fourth-order stencils at s and 2s, combined by Richardson extrapolation, give each value and an
/// estimate of its truncation error, and s is halved while that estimate exceeds the rounding noise (about an ulp
/// of the loss divided by s); the value of least estimated error (truncation + noise) is returned. `errors`, when
/// given, receives those estimates. The forward restarts at the layer holding the entry (the residual stream before
/// it is kept), and the entries are spread over the machine's cores.
std::vector<double> referenceGradient(const rt::Config &cfg, const std::vector<rt::ParamInfo> &info,
                                      const std::vector<double> &params, const int32_t *tokens, const int32_t *targets,
                                      int B, int T, const std::vector<size_t> &flatIndices, double h,
                                      std::vector<double> *errors = nullptr);

/// `perTensor` distinct entries of every tensor of `info` (all of a smaller one), drawn from `seed`: flat indices
/// into the parameter buffer, tensor by tensor in `info`'s order.
std::vector<size_t> sampleEntries(const std::vector<rt::ParamInfo> &info, size_t perTensor, uint64_t seed);

/// One tensor's gradient error on its sampled entries: rms(got - ref) / rms(ref) over them. The rms is taken
/// over the tensor's whole sample, so an entry whose true gradient is zero is still counted (only the error it
/// adds to the numerator); a tensor whose sampled reference is all zero gets error 0 if `got` is all zero too,
/// else infinity, and a non-finite `got` gives infinity. `refError` is the reference's own error estimate
/// (referenceGradient's `errors`) on the same scale, rms(estimate) / rms(ref): where it is not far below the
/// tolerance, the reference is too coarse to judge by.
struct TensorError {
  std::string name;
  size_t samples = 0;
  double refRms = 0, error = 0, refError = 0;
};

/// The error of `got` (a full gradient buffer, `info`'s layout) at `flatIndices` against `ref` (one value per
/// index, referenceGradient's order), per tensor of `info`; `refErrors` (same order as `ref`), when given, fills
/// refError.
std::vector<TensorError> sampledErrors(const std::vector<rt::ParamInfo> &info, const std::vector<size_t> &flatIndices,
                                       const float *got, const std::vector<double> &ref,
                                       const std::vector<double> *refErrors = nullptr);

/// runtime-gpu-test's whole-model shape, which runtime-test also checks on the CPU against the reference: a 3:1
/// hybrid of four layers, width 64, two heads of 32, B = 3, T = 100 (not a multiple of the chunk size 64).
rt::Config gpuTestConfig(const std::string &variant);

} // namespace linac::modelref

#endif
