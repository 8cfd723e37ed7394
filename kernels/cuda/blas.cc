// cuBLAS GEMMs for kernels/cuda/blas.h. Row-major products are computed as
// their column-major transposes (C^T = B^T A^T), so no operand is copied:
// a row-major matrix read column-major is its transpose (op N), a
// column-major one needs op T.
//
// Note [Half GEMM]: float16/bfloat16 products are one cublasGemm*Ex call
// with CUDA_R_16F/CUDA_R_16BF operands and output and CUBLAS_COMPUTE_32F
// (float accumulation, one rounding to half at the end), as PyTorch does; the
// matmul rows are native_half_cuda, so the dispatcher passes half tensors
// here instead of converting them to float32 and back (Note [Half compute]).
// The default math mode lets cuBLAS use reduced-precision split-K reductions
// for half outputs, again as PyTorch's default allows.
//
// Handles: one cuBLAS handle per (thread, device), bound to the caller's
// stream before each call. Session executors are single threads, so a
// handle is never used concurrently (cuBLAS handles are not thread-safe).
// Each (thread, device, stream) gets a workspace of its own, as PyTorch
// gives its handles (cublasSetStream drops the one set before): with one
// cuBLAS picks the split-K and stream-K kernels that need scratch space;
// one per stream, because kernels of two streams may run at once. It is
// plain cudaMalloc memory (32 MiB on Hopper, 4 MiB before), outside the
// caching allocator and the quotas, kept for the thread's life.
#if TENSORD_WITH_CUDA
#include "kernels/cuda/blas.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <climits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"

namespace tensord {
namespace cuda {
namespace {

struct Workspace {
  void* ptr = nullptr;  // null: none could be had (cuBLAS's default kernels)
  size_t bytes = 0;
};

struct ThreadHandles {
  std::map<int, cublasHandle_t> by_device;
  std::map<std::pair<int, cudaStream_t>, Workspace> workspaces;
  ~ThreadHandles() {
    for (auto& [device, handle] : by_device) cublasDestroy(handle);
    for (auto& [key, ws] : workspaces) cudaFree(ws.ptr);
  }
};

size_t WorkspaceBytes(int device) {
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major >= 9 ? size_t{32} << 20 : size_t{4} << 20;
}

absl::Status HandleFor(cudaStream_t stream, cublasHandle_t* out) {
  thread_local ThreadHandles handles;
  int device = 0;
  TD_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  auto it = handles.by_device.find(device);
  if (it == handles.by_device.end()) {
    cublasHandle_t h = nullptr;
    TD_CUDA_RETURN_IF_ERROR(cublasCreate(&h));
    it = handles.by_device.emplace(device, h).first;
  }
  TD_CUDA_RETURN_IF_ERROR(cublasSetStream(it->second, stream));
  auto ws = handles.workspaces.find({device, stream});
  if (ws == handles.workspaces.end()) {
    Workspace made;
    made.bytes = WorkspaceBytes(device);
    if (cudaMalloc(&made.ptr, made.bytes) != cudaSuccess) {
      cudaGetLastError();
      made = Workspace();
    }
    ws = handles.workspaces.emplace(std::make_pair(device, stream), made).first;
  }
  if (ws->second.ptr != nullptr) {
    TD_CUDA_RETURN_IF_ERROR(
        cublasSetWorkspace(it->second, ws->second.ptr, ws->second.bytes));
  }
  *out = it->second;
  return absl::OkStatus();
}

// One matrix operand in cuBLAS terms: its op and leading dimension.
struct Operand {
  cublasOperation_t op;
  int64_t ld;
};

// `rows` x `cols` row-major-indexed matrix with strides (s_row, s_col),
// as read column-major by cuBLAS (which then sees its transpose for op N).
Operand Describe(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col) {
  // Size-1 dims carry any stride; give them the one cuBLAS accepts.
  if (cols == 1) s_col = 1;
  if (rows == 1) s_row = cols;
  if (s_col == 1 && s_row >= cols) return {CUBLAS_OP_N, s_row};
  if (rows == 1 && s_col == 1) return {CUBLAS_OP_N, cols};
  return {CUBLAS_OP_T, s_col < rows ? rows : s_col};  // column-major
}

}  // namespace

bool GemmLayoutOk(const StridedView& m) {
  const int64_t rows = m.sizes[1], cols = m.sizes[2];
  const int64_t sr = m.strides[1], sc = m.strides[2];
  const bool row_major = (cols == 1 || sc == 1) && (rows == 1 || sr >= cols);
  const bool col_major = (rows == 1 || sr == 1) && (cols == 1 || sc >= rows);
  return row_major || col_major;
}

absl::Status BatchedMatmul(const StridedView& a, const StridedView& b,
                           const StridedView& out, bool allow_tf32,
                           StreamHandle stream) {
  const int64_t batch = out.sizes[0], m = out.sizes[1], n = out.sizes[2];
  const int64_t k = a.sizes[2];
  if (batch == 0 || m == 0 || n == 0) return absl::OkStatus();
  for (int64_t v : {batch, m, n, k, a.strides[0], b.strides[0]}) {
    if (v > INT_MAX) {
      return absl::UnimplementedError(
          "matmul on cuda: a dimension exceeds 2^31-1 (cuBLAS int API)");
    }
  }
  auto s = static_cast<cudaStream_t>(stream);
  if (k == 0) {  // an empty sum: zeros
    TD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(out.data, 0, batch * m * n * ItemSize(out.dtype), s));
    return absl::OkStatus();
  }
  cudaDataType_t type;
  cublasComputeType_t compute;
  if (out.dtype == DType::kFloat32) {
    type = CUDA_R_32F;
    compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  } else if (out.dtype == DType::kFloat64) {
    type = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
  } else if (out.dtype == DType::kFloat16 || out.dtype == DType::kBFloat16) {
    // Note [Half GEMM]: half operands and output, float accumulation.
    type = out.dtype == DType::kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
    compute = CUBLAS_COMPUTE_32F;
  } else {
    return absl::UnimplementedError(
        absl::StrCat("matmul on cuda supports float16/bfloat16/float32/"
                     "float64, not ",
                     DTypeName(out.dtype), " (as in PyTorch)"));
  }
  if (a.dtype != out.dtype || b.dtype != out.dtype) {
    return absl::InternalError(absl::StrCat(
        "matmul on cuda: operands ", DTypeName(a.dtype), " and ",
        DTypeName(b.dtype), " for a ", DTypeName(out.dtype), " output"));
  }
  if (!GemmLayoutOk(a) || !GemmLayoutOk(b)) {
    return absl::InternalError("matmul on cuda: operand layout not GEMM-ready");
  }
  cublasHandle_t handle;
  absl::Status got = HandleFor(s, &handle);
  if (!got.ok()) return got;
  const Operand A = Describe(m, k, a.strides[1], a.strides[2]);
  const Operand B = Describe(k, n, b.strides[1], b.strides[2]);
  const double one64 = 1.0, zero64 = 0.0;
  const float one32 = 1.0f, zero32 = 0.0f;
  // The scale type follows the compute type: double for 64F, else float
  // (half GEMMs too, since they compute in 32F).
  const void* alpha = type == CUDA_R_64F ? static_cast<const void*>(&one64)
                                         : static_cast<const void*>(&one32);
  const void* beta = type == CUDA_R_64F ? static_cast<const void*>(&zero64)
                                        : static_cast<const void*>(&zero32);
  // Column-major: C^T [n x m] = op(B) [n x k] * op(A) [k x m]. One product
  // goes to cublasGemmEx, whose heuristics pick faster kernels than the
  // batched entry point's for a batch of one.
  if (batch == 1) {
    TD_CUDA_RETURN_IF_ERROR(cublasGemmEx(
        handle, B.op, A.op, static_cast<int>(n), static_cast<int>(m),
        static_cast<int>(k), alpha, b.data, type, static_cast<int>(B.ld),
        a.data, type, static_cast<int>(A.ld), beta, out.data, type,
        static_cast<int>(n), compute, CUBLAS_GEMM_DEFAULT));
    return absl::OkStatus();
  }
  TD_CUDA_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
      handle, B.op, A.op, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), alpha, b.data, type, static_cast<int>(B.ld),
      b.strides[0], a.data, type, static_cast<int>(A.ld), a.strides[0], beta,
      out.data, type, static_cast<int>(n), m * n, static_cast<int>(batch),
      compute, CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace tensord
#endif  // TENSORD_WITH_CUDA
