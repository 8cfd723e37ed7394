#include "runtime/ops/attrs.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/check.h"

namespace tensord {
namespace {

bool Matches(AttrType type, const AttrValue& v) {
  switch (type) {
    case AttrType::kInt:
      return std::holds_alternative<int64_t>(v);
    case AttrType::kFloat:
      return std::holds_alternative<double>(v);
    case AttrType::kBool:
      return std::holds_alternative<bool>(v);
    case AttrType::kString:
      return std::holds_alternative<std::string>(v);
    case AttrType::kInts:
      return std::holds_alternative<std::vector<int64_t>>(v);
    case AttrType::kFloats:
      return std::holds_alternative<std::vector<double>>(v);
    case AttrType::kDType:
      return std::holds_alternative<DType>(v);
  }
  return false;
}

}  // namespace

absl::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kDType:
      return "dtype";
  }
  return "?";
}

absl::StatusOr<Attrs> Attrs::Build(absl::string_view op,
                                   const std::vector<AttrSpec>& schema,
                                   std::map<std::string, AttrValue> given) {
  Attrs attrs;
  for (const AttrSpec& spec : schema) {
    auto it = given.find(spec.name);
    if (it == given.end() ||
        std::holds_alternative<std::monostate>(it->second)) {
      if (spec.required) {
        return absl::InvalidArgumentError(
            absl::StrCat(op, ": missing required attribute '", spec.name, "' (",
                         AttrTypeName(spec.type), ")"));
      }
      attrs.values_[spec.name] = spec.default_value;
      if (it != given.end()) given.erase(it);
      continue;
    }
    AttrValue value = std::move(it->second);
    given.erase(it);
    if (spec.type == AttrType::kFloat &&
        std::holds_alternative<int64_t>(value)) {
      value = static_cast<double>(std::get<int64_t>(value));
    }
    if (spec.type == AttrType::kInts &&
        std::holds_alternative<int64_t>(value)) {
      value = std::vector<int64_t>{std::get<int64_t>(value)};
    }
    if (!Matches(spec.type, value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": attribute '", spec.name, "' must be of type ",
                       AttrTypeName(spec.type)));
    }
    attrs.values_[spec.name] = std::move(value);
  }
  if (!given.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": unknown attribute '", given.begin()->first, "'"));
  }
  return attrs;
}

const AttrValue& Attrs::Get(const std::string& name) const {
  auto it = values_.find(name);
  TD_CHECK(it != values_.end(), name.c_str());
  return it->second;
}

size_t Attrs::ByteSize() const {
  constexpr size_t kMapNode = 4 * sizeof(void*);  // a std::map node's links
  size_t bytes = sizeof(Attrs);
  for (const auto& [name, value] : values_) {
    bytes += kMapNode + sizeof(name) + sizeof(value) + name.capacity();
    if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
      bytes += ints->capacity() * sizeof(int64_t);
    } else if (const auto* floats = std::get_if<std::vector<double>>(&value)) {
      bytes += floats->capacity() * sizeof(double);
    } else if (const auto* text = std::get_if<std::string>(&value)) {
      bytes += text->capacity();
    }
  }
  return bytes;
}

bool Attrs::Has(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() &&
         !std::holds_alternative<std::monostate>(it->second);
}
int64_t Attrs::Int(const std::string& name) const {
  return std::get<int64_t>(Get(name));
}
double Attrs::Float(const std::string& name) const {
  return std::get<double>(Get(name));
}
bool Attrs::Bool(const std::string& name) const {
  return std::get<bool>(Get(name));
}
const std::string& Attrs::String(const std::string& name) const {
  return std::get<std::string>(Get(name));
}
const std::vector<int64_t>& Attrs::Ints(const std::string& name) const {
  return std::get<std::vector<int64_t>>(Get(name));
}
const std::vector<double>& Attrs::Floats(const std::string& name) const {
  return std::get<std::vector<double>>(Get(name));
}
DType Attrs::GetDType(const std::string& name) const {
  return std::get<DType>(Get(name));
}

}  // namespace tensord
