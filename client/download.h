// Reassembly of a `Get` answer (Data chunks for one request_id) and
// conversion of the downloaded bytes to C++ element types. No I/O, no locks:
// the session's reader thread feeds an assembler under its own mutex.
#ifndef TENSORD_CLIENT_DOWNLOAD_H_
#define TENSORD_CLIENT_DOWNLOAD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/dtype.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

// A downloaded tensor: C-contiguous little-endian bytes plus its meta.
struct HostTensor {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::string device;
  std::string bytes;

  int64_t numel() const;
};

// Collects the Data chunks of one request. Chunks must arrive in order: the
// first carries meta and total_bytes, offsets are consecutive, the last sets
// `last`. Any violation is INTERNAL (a daemon bug, reported not trusted).
class DataAssembler {
 public:
  // Applies one chunk. Returns an error on a protocol violation; after an
  // error or once done() the assembler ignores nothing: callers stop feeding.
  absl::Status Add(const v1::Data& chunk) {
    return AddBytes(chunk, chunk.payload().data());
  }
  // The same for a chunk whose bytes are elsewhere (a region span: the
  // shared buffer it names); `bytes` is copied.
  absl::Status AddBytes(const v1::Data& chunk, absl::string_view bytes) {
    return AddPieces(chunk, {bytes});
  }
  // The same for a chunk whose bytes arrive in pieces (a payload left in
  // gRPC's slices, Note [Data frames in place] in client/data_frame.h):
  // copied in order, as if concatenated.
  absl::Status AddPieces(const v1::Data& chunk,
                         absl::Span<const absl::string_view> pieces);
  bool done() const { return done_; }
  // Assembles the bytes into `dst` (`capacity` bytes, the caller's) instead
  // of HostTensor::bytes, which then stays empty. A tensor of more bytes is
  // INVALID_ARGUMENT at its first chunk (DestinationTooSmall), nothing
  // written. Before any Add. Bytes already in place (a chunk whose `bytes`
  // are at their destination: a download into a shared buffer) are not
  // copied.
  void SetDestination(char* dst, size_t capacity) {
    dst_ = dst;
    capacity_ = capacity;
  }
  // Moves the assembled tensor out; only valid once done().
  HostTensor Take() { return std::move(tensor_); }

 private:
  bool started_ = false;
  bool done_ = false;
  uint64_t total_bytes_ = 0;
  uint64_t received_ = 0;
  char* dst_ = nullptr;  // SetDestination's, else tensor_.bytes
  size_t capacity_ = 0;
  HostTensor tensor_;
};

// The error of a download into `capacity` bytes of a tensor of `total`.
absl::Status DestinationTooSmall(size_t capacity, uint64_t total, DType dtype);

// Converts `numel` elements of `src_dtype` at `src` to T (numeric cast, as
// torch's `.tolist()` then a C++ cast). T must have a DTypeOf.
template <typename T>
void ConvertElements(DType src_dtype, const void* src, int64_t numel, T* dst);

// The common case: all elements of `tensor` as T.
template <typename T>
std::vector<T> ToVector(const HostTensor& tensor) {
  if constexpr (std::is_same_v<T, bool>) {
    // std::vector<bool> packs its bits (no data()): convert, then pack.
    std::unique_ptr<bool[]> flat(new bool[tensor.numel()]);
    ConvertElements<bool>(tensor.dtype, tensor.bytes.data(), tensor.numel(),
                          flat.get());
    return std::vector<bool>(flat.get(), flat.get() + tensor.numel());
  } else {
    std::vector<T> out(tensor.numel());
    ConvertElements<T>(tensor.dtype, tensor.bytes.data(), tensor.numel(),
                       out.data());
    return out;
  }
}

// Explicit instantiations live in download.cc.
#define TENSORD_DECLARE_CONVERT(T) \
  extern template void ConvertElements<T>(DType, const void*, int64_t, T*);
TENSORD_DECLARE_CONVERT(float)
TENSORD_DECLARE_CONVERT(double)
TENSORD_DECLARE_CONVERT(int64_t)
TENSORD_DECLARE_CONVERT(int32_t)
TENSORD_DECLARE_CONVERT(int8_t)
TENSORD_DECLARE_CONVERT(uint8_t)
TENSORD_DECLARE_CONVERT(bool)
#undef TENSORD_DECLARE_CONVERT

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_DOWNLOAD_H_
