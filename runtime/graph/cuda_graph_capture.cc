#include "runtime/graph/cuda_graph_capture.h"

#ifdef TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
#endif

namespace tensord {

#ifdef TENSORD_WITH_CUDA
namespace {

cudaStream_t AsCuda(StreamHandle stream) {
  return static_cast<cudaStream_t>(stream);
}

class CudaGraph : public ExecutableGraph {
 public:
  CudaGraph(cudaGraph_t graph, cudaGraphExec_t exec, size_t nodes)
      : graph_(graph), exec_(exec), nodes_(nodes) {}
  ~CudaGraph() override {
    // Launches already queued keep running: CUDA defers the destruction.
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }

  absl::Status Launch(StreamHandle stream) override {
    TD_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, AsCuda(stream)));
    return absl::OkStatus();
  }
  size_t num_nodes() const override { return nodes_; }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  size_t nodes_;
};

class CudaCapture : public StreamCapture {
 public:
  explicit CudaCapture(cudaStream_t stream) : stream_(stream) {}
  ~CudaCapture() override {
    if (stream_ == nullptr) return;
    cudaGraph_t graph = nullptr;  // abandoned: end it and drop what it held
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess &&
        graph != nullptr) {
      cudaGraphDestroy(graph);
    }
    cudaGetLastError();  // an invalidated capture's error is not sticky
  }

  absl::StatusOr<std::unique_ptr<ExecutableGraph>> End() override {
    cudaStream_t stream = stream_;
    stream_ = nullptr;
    cudaGraph_t graph = nullptr;
    TD_CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream, &graph));
    size_t nodes = 0;
    absl::Status counted = cuda::ToStatus(
        cudaGraphGetNodes(graph, nullptr, &nodes), "cudaGraphGetNodes");
    cudaGraphExec_t exec = nullptr;
    absl::Status made =
        counted.ok() ? cuda::ToStatus(cudaGraphInstantiate(&exec, graph, 0),
                                      "cudaGraphInstantiate")
                     : counted;
    if (!made.ok()) {
      cudaGraphDestroy(graph);
      return made;
    }
    return std::unique_ptr<ExecutableGraph>(new CudaGraph(graph, exec, nodes));
  }

 private:
  cudaStream_t stream_;
};

class CudaGraphCapture : public GraphCaptureBackend {
 public:
  absl::StatusOr<std::unique_ptr<StreamCapture>> Begin(
      StreamHandle stream) override {
    TD_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(
        AsCuda(stream), cudaStreamCaptureModeThreadLocal));
    return std::unique_ptr<StreamCapture>(new CudaCapture(AsCuda(stream)));
  }
};

}  // namespace

std::unique_ptr<GraphCaptureBackend> NewCudaGraphCapture() {
  return std::make_unique<CudaGraphCapture>();
}

#else

std::unique_ptr<GraphCaptureBackend> NewCudaGraphCapture() { return nullptr; }

#endif  // TENSORD_WITH_CUDA

}  // namespace tensord
