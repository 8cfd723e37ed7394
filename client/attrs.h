// Op attributes on the client: a small value type and its conversion to the
// wire AttrValue, checked against the op's catalog schema.
//
// Attributes not given are not sent: the daemon applies the catalog default,
// so the client never hard-codes defaults. Conversion widens where it is
// lossless and unsurprising (an int for a float attribute, an int for an ints
// attribute) and rejects anything else with INVALID_ARGUMENT before a command
// is sent.
#ifndef TENSORD_CLIENT_ATTRS_H_
#define TENSORD_CLIENT_ATTRS_H_

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/dtype.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

// One attribute value. Implicit constructors keep call sites short:
//   {{"dim", std::vector<int64_t>{1}}, {"keepdim", true}, {"alpha", 2.0}}
class Attr {
 public:
  using Value = std::variant<int64_t, double, bool, std::string,
                             std::vector<int64_t>, std::vector<double>, DType>;

  Attr(bool v) : value_(v) {}  // NOLINT(runtime/explicit)
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  Attr(T v) : value_(static_cast<int64_t>(v)) {}          // NOLINT
  Attr(float v) : value_(static_cast<double>(v)) {}       // NOLINT
  Attr(double v) : value_(v) {}                           // NOLINT
  Attr(const char* v) : value_(std::string(v)) {}         // NOLINT
  Attr(std::string v) : value_(std::move(v)) {}           // NOLINT
  Attr(std::vector<int64_t> v) : value_(std::move(v)) {}  // NOLINT
  Attr(std::vector<double> v) : value_(std::move(v)) {}   // NOLINT
  Attr(DType v) : value_(v) {}                            // NOLINT

  const Value& value() const { return value_; }
  // The schema type name this value naturally has ("int", "ints", ...).
  absl::string_view type_name() const;

 private:
  Value value_;
};

using AttrMap = std::map<std::string, Attr>;

// Converts `attr` to the wire form of an attribute of schema type
// `schema_type` ("int", "float", "bool", "string", "ints", "floats",
// "dtype"). INVALID_ARGUMENT names the attribute and both types.
absl::StatusOr<v1::AttrValue> AttrToProto(absl::string_view name,
                                          const Attr& attr,
                                          absl::string_view schema_type);

// Converts every attribute of `attrs` for `op`: unknown names, wrong types
// and missing required attributes are INVALID_ARGUMENT naming the op.
absl::Status AttrsToProto(
    const v1::OpSchema& op, const AttrMap& attrs,
    google::protobuf::Map<std::string, v1::AttrValue>* out);

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_ATTRS_H_
