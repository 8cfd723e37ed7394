// Op attributes: their schema (part of each op-table row) and validated values.
#ifndef TENSORD_RUNTIME_OPS_ATTRS_H_
#define TENSORD_RUNTIME_OPS_ATTRS_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/core/dtype.h"

namespace tensord {

enum class AttrType { kInt, kFloat, kBool, kString, kInts, kFloats, kDType };

// std::monostate is "None": an optional attribute that was not given.
using AttrValue =
    std::variant<std::monostate, int64_t, double, bool, std::string,
                 std::vector<int64_t>, std::vector<double>, DType>;

struct AttrSpec {
  std::string name;
  AttrType type;
  bool required = false;
  AttrValue default_value;  // when not required; monostate = None
};

absl::string_view AttrTypeName(AttrType type);

// The attributes of one call, checked against the op's schema: every schema
// attribute is present (given or default), each of its declared type.
class Attrs {
 public:
  Attrs() = default;
  // Validates `given` against `schema` (unknown names, wrong types, missing
  // required attributes are INVALID_ARGUMENT naming `op`) and fills defaults.
  // An int given for a float attribute is converted.
  static absl::StatusOr<Attrs> Build(absl::string_view op,
                                     const std::vector<AttrSpec>& schema,
                                     std::map<std::string, AttrValue> given);

  bool Has(const std::string& name) const;  // present and not None
  int64_t Int(const std::string& name) const;
  double Float(const std::string& name) const;
  bool Bool(const std::string& name) const;
  const std::string& String(const std::string& name) const;
  const std::vector<int64_t>& Ints(const std::string& name) const;
  const std::vector<double>& Floats(const std::string& name) const;
  DType GetDType(const std::string& name) const;
  // The bytes these values hold, their map's nodes included (what a graph
  // node keeping them costs: Note [Metadata charge]).
  size_t ByteSize() const;

 private:
  const AttrValue& Get(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_ATTRS_H_
