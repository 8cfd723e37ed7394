// GraphCaptureBackend over CUDA stream capture (cudaStreamBeginCapture,
// cudaStreamEndCapture, cudaGraphInstantiate, cudaGraphLaunch).
//
// NOT YET RUN ON A GPU: it compiles and links here (no GPU was lent when it
// was written); docs/runtime.md says so until a GPU session has run it.
// Without CUDA (a CPU-only build) NewCudaGraphCapture returns null.
#ifndef TENSORD_RUNTIME_GRAPH_CUDA_GRAPH_CAPTURE_H_
#define TENSORD_RUNTIME_GRAPH_CUDA_GRAPH_CAPTURE_H_

#include <memory>

#include "runtime/graph/graph_capture.h"

namespace tensord {

// Captures in cudaStreamCaptureModeThreadLocal: a synchronising CUDA call
// made by this thread while capturing (cudaMalloc, a blocking copy)
// invalidates the capture instead of running, so End reports it and the
// caller falls back to eager; other sessions' threads are not affected.
std::unique_ptr<GraphCaptureBackend> NewCudaGraphCapture();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_GRAPH_CUDA_GRAPH_CAPTURE_H_
