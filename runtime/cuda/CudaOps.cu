#include "CudaOps.h"

#include "runtime/Config.h"
#include "runtime/Ops.h"

#include <cmath>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <vector>

// Correctness first: one block per row for the row ops, one block per (query, head, sequence) for attention, the
// reductions in shared memory. Nothing here is tuned; the matmuls (cuBLAS) carry most of the FLOPs.

namespace linac::rt::cuda {

void check(const char *what) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw Error(std::string(what) + ": " + cudaGetErrorString(status));
}

template <typename T> Buffer<T>::~Buffer() { cudaFree(ptr); }

template <typename T> void Buffer<T>::resize(size_t n) {
  count = n;
  if (n <= capacity)
    return;
  cudaFree(ptr);
  ptr = nullptr;
  cudaMalloc(&ptr, n * sizeof(T));
  check("cudaMalloc");
  capacity = n;
}

template <typename T> void Buffer<T>::upload(const T *host, size_t n) {
  resize(n);
  cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice);
  check("cudaMemcpy to device");
}

template <typename T> void Buffer<T>::download(T *host, size_t n) const {
  cudaMemcpy(host, ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
  check("cudaMemcpy to host");
}

template <typename T> void Buffer<T>::zero() {
  cudaMemset(ptr, 0, count * sizeof(T));
  check("cudaMemset");
}

template class Buffer<float>;
template class Buffer<double>;
template class Buffer<int32_t>;
template class Buffer<__nv_bfloat16>;

namespace {

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

/// Block-wide sum; every thread gets the result. `scratch` holds blockDim.x / 32 values.
template <typename T> __device__ T blockSum(T x, T *scratch) {
  for (int o = 16; o > 0; o /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads(); // scratch may still be read from a previous call
  if (lane == 0)
    scratch[warp] = x;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w)
    total += scratch[w];
  return total;
}

__device__ float blockMax(float x, float *scratch) {
  for (int o = 16; o > 0; o /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0)
    scratch[warp] = x;
  __syncthreads();
  float best = scratch[0];
  for (int w = 1; w < warps; ++w)
    best = fmaxf(best, scratch[w]);
  return best;
}

// ---- matmul -------------------------------------------------------------------------------------------------

struct Blas {
  cublasHandle_t handle = nullptr;
  bool bf16 = false;
  Buffer<__nv_bfloat16> a, b;
  Blas() {
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
      throw Error("cublasCreate failed (is libcublas there and a GPU visible?)");
    // Plain fp32 products: TF32 would put 1e-3 errors into the fp32 path.
    cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  }
};

Blas &blas() {
  static Blas instance;
  return instance;
}

void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string(what) + ": cuBLAS status " + std::to_string(int(status)));
}

__global__ void toBf16(__nv_bfloat16 *out, const float *in, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __float2bfloat16(in[i]);
}

/// Column-major C[m, n] = op(A) op(B) + beta C, fp32 or bf16 inputs. Row-major buffers are the transposed
/// column-major matrices, which is how the callers below read them.
void gemm(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
          int64_t aSize, const float *B, int64_t ldb, int64_t bSize, float beta, float *C, int64_t ldc) {
  Blas &b = blas();
  const float one = 1.0f;
  if (!b.bf16) {
    checkBlas(cublasSgemm(b.handle, ta, tb, int(m), int(n), int(k), &one, A, int(lda), B, int(ldb), &beta, C,
                          int(ldc)),
              "cublasSgemm");
    return;
  }
  b.a.resize(size_t(aSize));
  b.b.resize(size_t(bSize));
  toBf16<<<blocksFor(aSize), kThreads>>>(b.a.data(), A, aSize);
  toBf16<<<blocksFor(bSize), kThreads>>>(b.b.data(), B, bSize);
  check("toBf16");
  checkBlas(cublasGemmEx(b.handle, ta, tb, int(m), int(n), int(k), &one, b.a.data(), CUDA_R_16BF, int(lda),
                         b.b.data(), CUDA_R_16BF, int(ldb), &beta, C, CUDA_R_32F, int(ldc), CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
}

} // namespace

void setMatmulPrecision(bool bf16) {
  Blas &b = blas();
  b.bf16 = bf16;
  // Pedantic math keeps fp32 products free of TF32; bf16 inputs want the tensor cores.
  cublasSetMathMode(b.handle, bf16 ? CUBLAS_DEFAULT_MATH : CUBLAS_PEDANTIC_MATH);
}

// out[N, OC] = inp[N, C] w[OC, C]^T. Column-major: out^T (OC x N) = w^T (OC x C, w read as C x OC) inp^T (C x N).
void matmulForward(float *out, const float *inp, const float *w, int64_t N, int64_t C, int64_t OC) {
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, w, C, OC * C, inp, C, N * C, 0.0f, out, OC);
}

void matmulBackward(float *dinp, float *dw, const float *dout, const float *inp, const float *w, int64_t N,
                    int64_t C, int64_t OC) {
  // dinp^T (C x N) += w (C x OC) dout^T (OC x N)
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, w, C, OC * C, dout, OC, N * OC, 1.0f, dinp, C);
  // dw^T (C x OC) += inp^T (C x N) dout (N x OC)
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, C, N * C, dout, OC, N * OC, 1.0f, dw, C);
}

// ---- embedding ----------------------------------------------------------------------------------------------

namespace {

__global__ void embeddingForwardKernel(float *out, const int32_t *tokens, const float *table, int64_t N,
                                       int64_t C) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N * C)
    out[i] = table[int64_t(tokens[i / C]) * C + i % C];
}

__global__ void embeddingBackwardKernel(float *dtable, const float *dout, const int32_t *tokens, int64_t N,
                                        int64_t C) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N * C)
    atomicAdd(&dtable[int64_t(tokens[i / C]) * C + i % C], dout[i]);
}

} // namespace

void embeddingForward(float *out, const int32_t *tokens, const float *table, int64_t N, int64_t C) {
  embeddingForwardKernel<<<blocksFor(N * C), kThreads>>>(out, tokens, table, N, C);
  check("embeddingForward");
}

void embeddingBackward(float *dtable, const float *dout, const int32_t *tokens, int64_t N, int64_t C) {
  embeddingBackwardKernel<<<blocksFor(N * C), kThreads>>>(dtable, dout, tokens, N, C);
  check("embeddingBackward");
}

// ---- RMSNorm and L2 norm ------------------------------------------------------------------------------------

namespace {

constexpr int kRowThreads = 128;

__global__ void rmsnormForwardKernel(float *y, float *rstd, const float *x, const float *w, int64_t C) {
  __shared__ float scratch[kRowThreads / 32];
  const float *xr = x + int64_t(blockIdx.x) * C;
  float sq = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    sq += xr[c] * xr[c];
  float r = 1.0f / sqrtf(blockSum(sq, scratch) / float(C) + float(kNormEps));
  if (threadIdx.x == 0)
    rstd[blockIdx.x] = r;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    y[int64_t(blockIdx.x) * C + c] = xr[c] * r * w[c];
}

__global__ void rmsnormBackwardInputKernel(float *dx, const float *dy, const float *x, const float *w,
                                           const float *rstd, int64_t C) {
  __shared__ float scratch[kRowThreads / 32];
  int64_t row = int64_t(blockIdx.x) * C;
  float proj = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    proj += dy[row + c] * w[c] * x[row + c];
  proj = blockSum(proj, scratch) / float(C);
  float r = rstd[blockIdx.x];
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    dx[row + c] += r * (dy[row + c] * w[c] - x[row + c] * r * r * proj);
}

/// dw[c] += sum over rows of dy * x * rstd: a 32 x 8 block sums 32 columns over kRowsPerBlock rows, then adds
/// one partial per column (few atomics, coalesced reads).
constexpr int kRowsPerBlock = 256;
__global__ void rmsnormBackwardWeightKernel(float *dw, const float *dy, const float *x, const float *rstd,
                                            int64_t N, int64_t C) {
  __shared__ float part[8][33];
  int64_t c = int64_t(blockIdx.x) * 32 + threadIdx.x;
  int64_t first = int64_t(blockIdx.y) * kRowsPerBlock;
  float sum = 0;
  if (c < C)
    for (int64_t n = first + threadIdx.y; n < min(N, first + kRowsPerBlock); n += 8)
      sum += dy[n * C + c] * x[n * C + c] * rstd[n];
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int i = 1; i < 8; ++i)
      sum += part[i][threadIdx.x];
    atomicAdd(&dw[c], sum);
  }
}

__global__ void l2normForwardKernel(float *y, float *inv, const float *x, int64_t C) {
  __shared__ float scratch[kRowThreads / 32];
  const float *xr = x + int64_t(blockIdx.x) * C;
  float sq = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    sq += xr[c] * xr[c];
  float r = 1.0f / sqrtf(blockSum(sq, scratch) + float(kNormEps));
  if (threadIdx.x == 0)
    inv[blockIdx.x] = r;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    y[int64_t(blockIdx.x) * C + c] = xr[c] * r;
}

__global__ void l2normBackwardKernel(float *dx, const float *dy, const float *y, const float *inv, int64_t C) {
  __shared__ float scratch[kRowThreads / 32];
  int64_t row = int64_t(blockIdx.x) * C;
  float along = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    along += y[row + c] * dy[row + c];
  along = blockSum(along, scratch);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    dx[row + c] += inv[blockIdx.x] * (dy[row + c] - y[row + c] * along);
}

} // namespace

void rmsnormForward(float *y, float *rstd, const float *x, const float *w, int64_t N, int64_t C) {
  rmsnormForwardKernel<<<unsigned(N), kRowThreads>>>(y, rstd, x, w, C);
  check("rmsnormForward");
}

void rmsnormBackward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd,
                     int64_t N, int64_t C) {
  rmsnormBackwardInputKernel<<<unsigned(N), kRowThreads>>>(dx, dy, x, w, rstd, C);
  dim3 grid(unsigned((C + 31) / 32), unsigned((N + kRowsPerBlock - 1) / kRowsPerBlock));
  rmsnormBackwardWeightKernel<<<grid, dim3(32, 8)>>>(dw, dy, x, rstd, N, C);
  check("rmsnormBackward");
}

void l2normForward(float *y, float *inv, const float *x, int64_t N, int64_t C) {
  l2normForwardKernel<<<unsigned(N), kRowThreads>>>(y, inv, x, C);
  check("l2normForward");
}

void l2normBackward(float *dx, const float *dy, const float *y, const float *inv, int64_t N, int64_t C) {
  l2normBackwardKernel<<<unsigned(N), kRowThreads>>>(dx, dy, y, inv, C);
  check("l2normBackward");
}

// ---- elementwise --------------------------------------------------------------------------------------------

namespace {

__device__ float sigmoidf(float z) { return 1.0f / (1.0f + expf(-z)); }

__global__ void gateForwardKernel(float *g, const float *z, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    g[i] = (fminf(z[i], 0.0f) - log1pf(expf(-fabsf(z[i])))) / float(kGateNormalizer);
}
__global__ void gateBackwardKernel(float *dz, const float *dg, const float *z, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    dz[i] += dg[i] * sigmoidf(-z[i]) / float(kGateNormalizer);
}
__global__ void sigmoidForwardKernel(float *y, const float *z, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = sigmoidf(z[i]);
}
__global__ void sigmoidBackwardKernel(float *dz, const float *dy, const float *y, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    dz[i] += dy[i] * y[i] * (1.0f - y[i]);
}
__global__ void swigluForwardKernel(float *h, const float *ab, int64_t N, int64_t F) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N * F)
    return;
  int64_t n = i / F, f = i % F;
  float a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f];
  h[i] = a * sigmoidf(a) * b;
}
__global__ void swigluBackwardKernel(float *dab, const float *dh, const float *ab, int64_t N, int64_t F) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N * F)
    return;
  int64_t n = i / F, f = i % F;
  float a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f], s = sigmoidf(a), d = dh[i];
  dab[n * 2 * F + f] += d * b * s * (1.0f + a * (1.0f - s));
  dab[n * 2 * F + F + f] += d * a * s;
}
__global__ void shortConvForwardKernel(float *y, float *pre, const float *x, const float *w, int64_t B, int64_t T,
                                       int64_t C, int64_t W) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= B * T * C)
    return;
  int64_t t = (i / C) % T, c = i % C;
  float sum = 0.0f;
  for (int64_t j = 0; j < W && j <= t; ++j)
    sum += w[c * W + j] * x[i - j * C];
  pre[i] = sum;
  y[i] = sum * sigmoidf(sum);
}
/// d = dy * silu'(pre), the convolution's output gradient.
__global__ void shortConvOutputGradKernel(float *d, const float *dy, const float *pre, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float a = pre[i], s = sigmoidf(a);
  d[i] = dy[i] * s * (1.0f + a * (1.0f - s));
}
/// dx[b, t, c] += sum_j w[c, j] d[b, t + j, c]: a gather, no atomics.
__global__ void shortConvInputGradKernel(float *dx, const float *d, const float *w, int64_t B, int64_t T, int64_t C,
                                         int64_t W) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= B * T * C)
    return;
  int64_t t = (i / C) % T, c = i % C;
  float sum = 0.0f;
  for (int64_t j = 0; j < W && t + j < T; ++j)
    sum += w[c * W + j] * d[i + j * C];
  dx[i] += sum;
}
/// dw[c, j] += sum_{b, t >= j} x[b, t - j, c] d[b, t, c]: one block per tap, its threads over (b, t).
__global__ void shortConvWeightGradKernel(float *dw, const float *d, const float *x, int64_t B, int64_t T, int64_t C,
                                          int64_t W) {
  int64_t c = blockIdx.x / W, j = blockIdx.x % W;
  float sum = 0.0f;
  for (int64_t r = threadIdx.x; r < B * T; r += blockDim.x)
    if (r % T >= j)
      sum += x[(r - j) * C + c] * d[r * C + c];
  __shared__ float part[kRowThreads];
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (int(threadIdx.x) < stride)
      part[threadIdx.x] += part[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    dw[c * W + j] += part[0];
}
__global__ void addKernel(float *y, const float *a, const float *b, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a[i] + b[i];
}
__global__ void gatherColumnsKernel(float *out, const float *in, int64_t rows, int64_t stride, int64_t offset,
                                    int64_t width) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * width)
    out[i] = in[(i / width) * stride + offset + i % width];
}
__global__ void scatterColumnsKernel(float *out, const float *in, int64_t rows, int64_t stride, int64_t offset,
                                     int64_t width) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * width)
    out[(i / width) * stride + offset + i % width] += in[i];
}

} // namespace

void gateForward(float *g, const float *z, int64_t n) {
  gateForwardKernel<<<blocksFor(n), kThreads>>>(g, z, n);
  check("gateForward");
}
void gateBackward(float *dz, const float *dg, const float *z, int64_t n) {
  gateBackwardKernel<<<blocksFor(n), kThreads>>>(dz, dg, z, n);
  check("gateBackward");
}
void sigmoidForward(float *y, const float *z, int64_t n) {
  sigmoidForwardKernel<<<blocksFor(n), kThreads>>>(y, z, n);
  check("sigmoidForward");
}
void sigmoidBackward(float *dz, const float *dy, const float *y, int64_t n) {
  sigmoidBackwardKernel<<<blocksFor(n), kThreads>>>(dz, dy, y, n);
  check("sigmoidBackward");
}
void swigluForward(float *h, const float *ab, int64_t N, int64_t F) {
  swigluForwardKernel<<<blocksFor(N * F), kThreads>>>(h, ab, N, F);
  check("swigluForward");
}
void swigluBackward(float *dab, const float *dh, const float *ab, int64_t N, int64_t F) {
  swigluBackwardKernel<<<blocksFor(N * F), kThreads>>>(dab, dh, ab, N, F);
  check("swigluBackward");
}
void shortConvForward(float *y, float *pre, const float *x, const float *w, int64_t B, int64_t T, int64_t C,
                      int64_t W) {
  shortConvForwardKernel<<<blocksFor(B * T * C), kThreads>>>(y, pre, x, w, B, T, C, W);
  check("shortConvForward");
}
void shortConvBackward(float *dx, float *dw, float *scratch, const float *dy, const float *pre, const float *x,
                       const float *w, int64_t B, int64_t T, int64_t C, int64_t W) {
  int64_t n = B * T * C;
  shortConvOutputGradKernel<<<blocksFor(n), kThreads>>>(scratch, dy, pre, n);
  shortConvInputGradKernel<<<blocksFor(n), kThreads>>>(dx, scratch, w, B, T, C, W);
  shortConvWeightGradKernel<<<unsigned(C * W), kRowThreads>>>(dw, scratch, x, B, T, C, W);
  check("shortConvBackward");
}
void add(float *y, const float *a, const float *b, int64_t n) {
  addKernel<<<blocksFor(n), kThreads>>>(y, a, b, n);
  check("add");
}
void gatherColumns(float *out, const float *in, int64_t rows, int64_t stride, int64_t offset, int64_t width) {
  gatherColumnsKernel<<<blocksFor(rows * width), kThreads>>>(out, in, rows, stride, offset, width);
  check("gatherColumns");
}
void scatterColumns(float *out, const float *in, int64_t rows, int64_t stride, int64_t offset, int64_t width) {
  scatterColumnsKernel<<<blocksFor(rows * width), kThreads>>>(out, in, rows, stride, offset, width);
  check("scatterColumns");
}

// ---- RoPE ---------------------------------------------------------------------------------------------------

namespace {

__global__ void ropeKernel(float *x, const float *cosSin, int64_t B, int64_t T, int64_t H, int64_t D, int sign) {
  int64_t half = D / 2, i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= B * T * H * half)
    return;
  int64_t pair = i % half, row = i / half, t = row / H % T;
  float c = cosSin[(t * half + pair) * 2], s = sign * cosSin[(t * half + pair) * 2 + 1];
  float *p = x + row * D + 2 * pair;
  float x0 = p[0], x1 = p[1];
  p[0] = x0 * c - x1 * s;
  p[1] = x0 * s + x1 * c;
}

} // namespace

void ropeTable(Buffer<float> &table, int64_t T, int64_t D) {
  std::vector<float> host(size_t(T * D));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < D / 2; ++i) {
      double angle = double(t) * std::pow(10000.0, -2.0 * double(i) / double(D)); // Ops.h's rope()
      host[size_t((t * (D / 2) + i) * 2)] = float(std::cos(angle));
      host[size_t((t * (D / 2) + i) * 2 + 1)] = float(std::sin(angle));
    }
  table.upload(host.data(), host.size());
}

void rope(float *x, const float *cosSin, int64_t B, int64_t T, int64_t H, int64_t D, int sign) {
  ropeKernel<<<blocksFor(B * T * H * (D / 2)), kThreads>>>(x, cosSin, B, T, H, D, sign);
  check("rope");
}

// ---- causal softmax attention -------------------------------------------------------------------------------

namespace {

constexpr int kAttnThreads = 128;

/// Block (t, h, b): the probabilities of query t over keys 0..t, then its output row.
__global__ void attentionForwardKernel(float *out, float *prob, const float *q, const float *k, const float *v,
                                       int64_t T, int64_t H, int64_t D, float scale) {
  extern __shared__ float shared[]; // q row [D], scores [T]
  __shared__ float scratch[kAttnThreads / 32];
  int64_t t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  float *qs = shared, *score = shared + D;
  const float *qt = q + ((b * T + t) * H + h) * D;
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x)
    qs[d] = qt[d];
  __syncthreads();
  float localMax = -INFINITY;
  for (int64_t s = threadIdx.x; s <= t; s += blockDim.x) {
    const float *ks = k + ((b * T + s) * H + h) * D;
    float dot = 0;
    for (int64_t d = 0; d < D; ++d)
      dot += qs[d] * ks[d];
    score[s] = dot * scale;
    localMax = fmaxf(localMax, score[s]);
  }
  float maxScore = blockMax(localMax, scratch);
  float localSum = 0;
  for (int64_t s = threadIdx.x; s <= t; s += blockDim.x) {
    score[s] = expf(score[s] - maxScore);
    localSum += score[s];
  }
  float sum = blockSum(localSum, scratch);
  float *p = prob + ((b * H + h) * T + t) * T;
  for (int64_t s = threadIdx.x; s < T; s += blockDim.x) {
    float ps = s <= t ? score[s] / sum : 0.0f;
    if (s <= t)
      score[s] = ps;
    p[s] = ps;
  }
  __syncthreads();
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0;
    for (int64_t s = 0; s <= t; ++s)
      acc += score[s] * v[((b * T + s) * H + h) * D + d];
    out[((b * T + t) * H + h) * D + d] = acc;
  }
}

/// Block (t, h, b): dscore[t, s] = p (dout_t . v_s - sum_s' p dp) * scale for s <= t, then dq_t.
__global__ void attentionBackwardQueryKernel(float *dq, float *dscore, const float *dout, const float *prob,
                                             const float *k, const float *v, int64_t T, int64_t H, int64_t D,
                                             float scale) {
  extern __shared__ float shared[]; // dout row [D], dscore row [T]
  __shared__ float scratch[kAttnThreads / 32];
  int64_t t = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  float *dos = shared, *ds = shared + D;
  const float *dot_ = dout + ((b * T + t) * H + h) * D;
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x)
    dos[d] = dot_[d];
  __syncthreads();
  const float *p = prob + ((b * H + h) * T + t) * T;
  float localWeighted = 0;
  for (int64_t s = threadIdx.x; s <= t; s += blockDim.x) {
    const float *vs = v + ((b * T + s) * H + h) * D;
    float dp = 0;
    for (int64_t d = 0; d < D; ++d)
      dp += dos[d] * vs[d];
    ds[s] = dp;
    localWeighted += p[s] * dp;
  }
  float weighted = blockSum(localWeighted, scratch);
  float *dsRow = dscore + ((b * H + h) * T + t) * T;
  for (int64_t s = threadIdx.x; s <= t; s += blockDim.x) {
    ds[s] = p[s] * (ds[s] - weighted) * scale;
    dsRow[s] = ds[s];
  }
  __syncthreads();
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0;
    for (int64_t s = 0; s <= t; ++s)
      acc += ds[s] * k[((b * T + s) * H + h) * D + d];
    dq[((b * T + t) * H + h) * D + d] += acc;
  }
}

/// Block (s, h, b): dk_s = sum_{t >= s} dscore[t, s] q_t and dv_s = sum_{t >= s} p[t, s] dout_t.
__global__ void attentionBackwardKeyKernel(float *dk, float *dv, const float *dscore, const float *dout,
                                           const float *prob, const float *q, int64_t T, int64_t H, int64_t D) {
  int64_t s = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const float *dsCol = dscore + (b * H + h) * T * T + s, *pCol = prob + (b * H + h) * T * T + s;
  for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
    float accK = 0, accV = 0;
    for (int64_t t = s; t < T; ++t) {
      int64_t row = ((b * T + t) * H + h) * D + d;
      accK += dsCol[t * T] * q[row];
      accV += pCol[t * T] * dout[row];
    }
    dk[((b * T + s) * H + h) * D + d] += accK;
    dv[((b * T + s) * H + h) * D + d] += accV;
  }
}

size_t attentionShared(int64_t T, int64_t D) { return size_t(T + D) * sizeof(float); }

void allowShared(const void *kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

} // namespace

void attentionForward(float *out, float *prob, const float *q, const float *k, const float *v, int64_t B, int64_t T,
                      int64_t H, int64_t D) {
  size_t shared = attentionShared(T, D);
  allowShared(reinterpret_cast<const void *>(attentionForwardKernel), shared);
  attentionForwardKernel<<<dim3(unsigned(T), unsigned(H), unsigned(B)), kAttnThreads, shared>>>(
      out, prob, q, k, v, T, H, D, 1.0f / std::sqrt(float(D)));
  check("attentionForward");
}

void attentionBackward(float *dq, float *dk, float *dv, float *dscore, const float *dout, const float *prob,
                       const float *q, const float *k, const float *v, int64_t B, int64_t T, int64_t H, int64_t D) {
  size_t shared = attentionShared(T, D);
  allowShared(reinterpret_cast<const void *>(attentionBackwardQueryKernel), shared);
  dim3 grid{unsigned(T), unsigned(H), unsigned(B)};
  attentionBackwardQueryKernel<<<grid, kAttnThreads, shared>>>(dq, dscore, dout, prob, k, v, T, H, D,
                                                               1.0f / std::sqrt(float(D)));
  attentionBackwardKeyKernel<<<grid, kAttnThreads>>>(dk, dv, dscore, dout, prob, q, T, H, D);
  check("attentionBackward");
}

// ---- cross-entropy ------------------------------------------------------------------------------------------

namespace {

__global__ void crossEntropyKernel(float *dlogits, float *lossRows, const float *logits, const int32_t *targets,
                                   int64_t Vocab, int64_t counted) {
  __shared__ float scratchF[kThreads / 32];
  __shared__ double scratchD[kThreads / 32];
  int64_t n = blockIdx.x;
  const float *row = logits + n * Vocab;
  float *drow = dlogits + n * Vocab;
  int32_t target = targets[n];
  if (target < 0) {
    for (int64_t c = threadIdx.x; c < Vocab; c += blockDim.x)
      drow[c] = 0.0f;
    if (threadIdx.x == 0)
      lossRows[n] = 0.0f;
    return;
  }
  float localMax = -INFINITY;
  for (int64_t c = threadIdx.x; c < Vocab; c += blockDim.x)
    localMax = fmaxf(localMax, row[c]);
  float maxLogit = blockMax(localMax, scratchF);
  double localSum = 0; // in double, as Ops.h's crossEntropy
  for (int64_t c = threadIdx.x; c < Vocab; c += blockDim.x)
    localSum += exp(double(row[c] - maxLogit));
  double sum = blockSum(localSum, scratchD);
  if (threadIdx.x == 0)
    lossRows[n] = float(log(sum) - double(row[target] - maxLogit));
  for (int64_t c = threadIdx.x; c < Vocab; c += blockDim.x)
    drow[c] = float((exp(double(row[c] - maxLogit)) / sum - (c == target ? 1.0 : 0.0)) / double(counted));
}

} // namespace

void crossEntropy(float *dlogits, float *lossRows, const float *logits, const int32_t *targets, int64_t N,
                  int64_t Vocab, int64_t counted) {
  crossEntropyKernel<<<unsigned(N), kThreads>>>(dlogits, lossRows, logits, targets, Vocab, counted);
  check("crossEntropy");
}

// ---- optimizer ----------------------------------------------------------------------------------------------

namespace {

__global__ void sumSquaresKernel(double *sum, const float *x, int64_t n) {
  __shared__ double scratch[kThreads / 32];
  double local = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    local += double(x[i]) * x[i];
  local = blockSum(local, scratch);
  if (threadIdx.x == 0)
    atomicAdd(sum, local);
}

__global__ void adamwKernel(float *w, float *m, float *v, const float *g, int64_t n, float gradScale, double lr,
                            double decay, double c1, double c2) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  const double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  float gi = g[i] * gradScale;
  float mi = float(beta1 * m[i] + (1 - beta1) * gi);
  float vi = float(beta2 * v[i] + (1 - beta2) * double(gi) * gi);
  m[i] = mi;
  v[i] = vi;
  double update = (mi / c1) / (sqrt(vi / c2) + eps) + decay * w[i];
  w[i] = float(w[i] - lr * update);
}

} // namespace

void sumSquares(double *sum, const float *x, int64_t n) {
  unsigned blocks = unsigned(std::min<int64_t>(1024, (n + kThreads - 1) / kThreads));
  sumSquaresKernel<<<std::max(1u, blocks), kThreads>>>(sum, x, n);
  check("sumSquares");
}

void adamw(float *w, float *m, float *v, const float *g, int64_t n, float gradScale, double lr, double decay,
           double c1, double c2) {
  adamwKernel<<<blocksFor(n), kThreads>>>(w, m, v, g, n, gradScale, lr, decay, c1, c2);
  check("adamw");
}

} // namespace linac::rt::cuda
