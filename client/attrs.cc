#include "client/attrs.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tensord {
inline namespace client {
namespace {

absl::Status TypeError(absl::string_view name, absl::string_view want,
                       absl::string_view got) {
  return absl::InvalidArgumentError(
      absl::StrCat("attribute '", name, "' must be ", want, ", got ", got));
}

// Visitor producing the wire value for one schema type.
struct Converter {
  absl::string_view name;
  absl::string_view type;
  v1::AttrValue out;

  absl::Status operator()(int64_t v) {
    if (type == "int") {
      out.set_i(v);
    } else if (type == "float") {
      out.set_f(static_cast<double>(v));
    } else if (type == "ints") {
      out.mutable_ints()->add_values(v);
    } else if (type == "floats") {
      out.mutable_floats()->add_values(static_cast<double>(v));
    } else {
      return TypeError(name, type, "int");
    }
    return absl::OkStatus();
  }
  absl::Status operator()(double v) {
    if (type == "float") {
      out.set_f(v);
    } else if (type == "floats") {
      out.mutable_floats()->add_values(v);
    } else if (type == "int" && std::isfinite(v) && v == std::trunc(v)) {
      out.set_i(static_cast<int64_t>(v));
    } else {
      return TypeError(name, type, "float");
    }
    return absl::OkStatus();
  }
  absl::Status operator()(bool v) {
    if (type != "bool") return TypeError(name, type, "bool");
    out.set_b(v);
    return absl::OkStatus();
  }
  absl::Status operator()(const std::string& v) {
    if (type == "string") {
      out.set_s(v);
    } else if (type == "dtype") {
      absl::StatusOr<DType> dtype = DTypeFromName(v);
      if (!dtype.ok()) return TypeError(name, type, absl::StrCat("'", v, "'"));
      out.set_dtype(ToWire(*dtype));
    } else {
      return TypeError(name, type, "string");
    }
    return absl::OkStatus();
  }
  absl::Status operator()(const std::vector<int64_t>& v) {
    if (type == "ints") {
      out.mutable_ints()->mutable_values()->Add(v.begin(), v.end());
    } else if (type == "floats") {
      for (int64_t x : v) out.mutable_floats()->add_values(x);
    } else {
      return TypeError(name, type, "ints");
    }
    return absl::OkStatus();
  }
  absl::Status operator()(const std::vector<double>& v) {
    if (type != "floats") return TypeError(name, type, "floats");
    out.mutable_floats()->mutable_values()->Add(v.begin(), v.end());
    return absl::OkStatus();
  }
  absl::Status operator()(DType v) {
    if (type != "dtype") return TypeError(name, type, "dtype");
    out.set_dtype(ToWire(v));
    return absl::OkStatus();
  }
};

}  // namespace

absl::string_view Attr::type_name() const {
  static constexpr absl::string_view kNames[] = {
      "int", "float", "bool", "string", "ints", "floats", "dtype"};
  return kNames[value_.index()];
}

absl::StatusOr<v1::AttrValue> AttrToProto(absl::string_view name,
                                          const Attr& attr,
                                          absl::string_view schema_type) {
  Converter converter{name, schema_type, {}};
  // std::visit takes the visitor by reference: `converter.out` is filled.
  absl::Status status = std::visit(converter, attr.value());
  if (!status.ok()) return status;
  return std::move(converter.out);
}

absl::Status AttrsToProto(
    const v1::OpSchema& op, const AttrMap& attrs,
    google::protobuf::Map<std::string, v1::AttrValue>* out) {
  for (const auto& [name, attr] : attrs) {
    const v1::AttrSchema* schema = nullptr;
    for (const v1::AttrSchema& s : op.attrs()) {
      if (s.name() == name) schema = &s;
    }
    if (schema == nullptr) {
      std::vector<std::string> known;
      for (const v1::AttrSchema& s : op.attrs()) known.push_back(s.name());
      return absl::InvalidArgumentError(
          absl::StrCat(op.name(), ": unknown attribute '", name, "'; known: [",
                       absl::StrJoin(known, ", "), "]"));
    }
    absl::StatusOr<v1::AttrValue> value =
        AttrToProto(name, attr, schema->type());
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op.name(), ": ", value.status().message()));
    }
    (*out)[name] = *std::move(value);
  }
  for (const v1::AttrSchema& s : op.attrs()) {
    if (s.required() && attrs.find(s.name()) == attrs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op.name(), ": missing required attribute '", s.name(),
                       "' (", s.type(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace client
}  // namespace tensord
