#ifndef LINAC_RUNTIME_CUDA_CUDAOPS_H
#define LINAC_RUNTIME_CUDA_CUDAOPS_H

// The dense ops of runtime/Ops.h on the GPU: same names, same buffers, same conventions (weights [OC, C],
// row-major activations, backward functions ADD into every gradient buffer). Every pointer is a device pointer;
// every launch goes to the default stream, so consecutive ops are ordered and a host copy after them waits.
// runtime-gpu-test checks each against its Ops.h counterpart.

#include <cstddef>
#include <cstdint>
#include <string>

namespace linac::rt::cuda {

/// Throws Error("what: CUDA's message") when the last runtime call or launch failed.
void check(const char *what);

/// Device memory that grows on demand and is never shrunk (activations are reused step after step).
template <typename T> class Buffer {
public:
  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  Buffer(Buffer &&other) noexcept : ptr(other.ptr), count(other.count), capacity(other.capacity) {
    other.ptr = nullptr;
    other.count = other.capacity = 0;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer();
  /// Contents are undefined after a resize that grows.
  void resize(size_t n);
  T *data() const { return ptr; }
  size_t size() const { return count; }
  void upload(const T *host, size_t n);
  void download(T *host, size_t n) const;
  void zero();

private:
  T *ptr = nullptr;
  size_t count = 0, capacity = 0;
};

/// Matrix products through cuBLAS. fp32: plain SGEMM (no TF32). bf16: inputs rounded to bf16 (cublasGemmEx),
/// fp32 accumulation and output; the fp32 master weights are untouched.
void setMatmulPrecision(bool bf16);
void matmulForward(float *out, const float *inp, const float *w, int64_t N, int64_t C, int64_t OC);
void matmulBackward(float *dinp, float *dw, const float *dout, const float *inp, const float *w, int64_t N,
                    int64_t C, int64_t OC);

void embeddingForward(float *out, const int32_t *tokens, const float *table, int64_t N, int64_t C);
void embeddingBackward(float *dtable, const float *dout, const int32_t *tokens, int64_t N, int64_t C);

void rmsnormForward(float *y, float *rstd, const float *x, const float *w, int64_t N, int64_t C);
void rmsnormBackward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd,
                     int64_t N, int64_t C);

void gateForward(float *g, const float *z, int64_t n);
void gateBackward(float *dz, const float *dg, const float *z, int64_t n);
void sigmoidForward(float *y, const float *z, int64_t n);
void sigmoidBackward(float *dz, const float *dy, const float *y, int64_t n);
void l2normForward(float *y, float *inv, const float *x, int64_t N, int64_t C);
void l2normBackward(float *dx, const float *dy, const float *y, const float *inv, int64_t N, int64_t C);

void swigluForward(float *h, const float *ab, int64_t N, int64_t F);
void swigluBackward(float *dab, const float *dh, const float *ab, int64_t N, int64_t F);

/// Rotary embedding in place on [B, T, H, D]; sign -1 is the backward. The angles come from Ops.h's formula
/// in double on the host (ropeTable), so both backends rotate by the same float cos/sin.
void rope(float *x, const float *cosSin, int64_t B, int64_t T, int64_t H, int64_t D, int sign);
/// [T, D/2] pairs (cos, sin) for rope(), on the device.
void ropeTable(Buffer<float> &table, int64_t T, int64_t D);

/// Causal softmax attention on [B, T, H, D]; prob [B, H, T, T] as in Ops.h. The backward needs a scratch of the
/// probabilities' size for the score gradients.
void attentionForward(float *out, float *prob, const float *q, const float *k, const float *v, int64_t B, int64_t T,
                      int64_t H, int64_t D);
void attentionBackward(float *dq, float *dk, float *dv, float *dscore, const float *dout, const float *prob,
                       const float *q, const float *k, const float *v, int64_t B, int64_t T, int64_t H, int64_t D);

/// Softmax cross-entropy rows: lossRows[n] = -log p(target) (0 where target < 0), dlogits of the mean over the
/// `counted` rows with a target (zero rows where target < 0).
void crossEntropy(float *dlogits, float *lossRows, const float *logits, const int32_t *targets, int64_t N,
                  int64_t Vocab, int64_t counted);

/// Ops.h's short convolution (causal, per channel, then SiLU) on [B, T, C] with taps [C, W]; the backward needs a
/// scratch of x's size.
void shortConvForward(float *y, float *pre, const float *x, const float *w, int64_t B, int64_t T, int64_t C,
                      int64_t W);
void shortConvBackward(float *dx, float *dw, float *scratch, const float *dy, const float *pre, const float *x,
                       const float *w, int64_t B, int64_t T, int64_t C, int64_t W);

/// y = a + b; y may alias either.
void add(float *y, const float *a, const float *b, int64_t n);
/// Rows of width `stride` -> their columns [offset, offset + width) as rows of width `width`, and back (adding).
void gatherColumns(float *out, const float *in, int64_t rows, int64_t stride, int64_t offset, int64_t width);
void scatterColumns(float *out, const float *in, int64_t rows, int64_t stride, int64_t offset, int64_t width);

/// Sum of squares of x in double, added into *sum (one device double).
void sumSquares(double *sum, const float *x, int64_t n);
/// AdamW (beta1 0.9, beta2 0.95, eps 1e-8) on one tensor, Train.cpp's arithmetic: the gradient is first
/// multiplied by gradScale (the clipping factor), the moments are updated in double and stored in float.
void adamw(float *w, float *m, float *v, const float *g, int64_t n, float gradScale, double lr, double decay,
           double c1, double c2);

} // namespace linac::rt::cuda

#endif
