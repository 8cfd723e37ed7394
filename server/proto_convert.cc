#include "server/proto_convert.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/ops/dispatch.h"
#include "server/wire_limits.h"

namespace tensord {
namespace {

v1::AttrValue AttrToProto(const AttrValue& value) {
  v1::AttrValue out;
  if (auto* i = std::get_if<int64_t>(&value)) out.set_i(*i);
  if (auto* f = std::get_if<double>(&value)) out.set_f(*f);
  if (auto* b = std::get_if<bool>(&value)) out.set_b(*b);
  if (auto* s = std::get_if<std::string>(&value)) out.set_s(*s);
  if (auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    auto* list = out.mutable_ints();  // present even when empty
    for (int64_t v : *is) list->add_values(v);
  }
  if (auto* fs = std::get_if<std::vector<double>>(&value)) {
    auto* list = out.mutable_floats();
    for (double v : *fs) list->add_values(v);
  }
  if (auto* d = std::get_if<DType>(&value)) {
    out.set_dtype(static_cast<v1::DType>(*d));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, AttrValue>> AttrsFromProto(
    const google::protobuf::Map<std::string, v1::AttrValue>& attrs) {
  std::map<std::string, AttrValue> out;
  for (const auto& [name, value] : attrs) {
    switch (value.value_case()) {
      case v1::AttrValue::kI:
        out[name] = value.i();
        break;
      case v1::AttrValue::kF:
        out[name] = value.f();
        break;
      case v1::AttrValue::kB:
        out[name] = value.b();
        break;
      case v1::AttrValue::kS:
        out[name] = value.s();
        break;
      case v1::AttrValue::kInts:
        out[name] = std::vector<int64_t>(value.ints().values().begin(),
                                         value.ints().values().end());
        break;
      case v1::AttrValue::kFloats:
        out[name] = std::vector<double>(value.floats().values().begin(),
                                        value.floats().values().end());
        break;
      case v1::AttrValue::kDtype: {
        auto dtype = DTypeFromWire(value.dtype());
        if (!dtype.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "attribute '", name, "': ", dtype.status().message()));
        }
        out[name] = *dtype;
        break;
      }
      case v1::AttrValue::VALUE_NOT_SET:
        out[name] = std::monostate{};  // explicit None
        break;
    }
  }
  return out;
}

absl::StatusOr<const Attrs*> CallAttrsFromProto(
    const OpDef& op,
    const google::protobuf::Map<std::string, v1::AttrValue>& attrs,
    Attrs* storage) {
  std::map<std::string, AttrValue> given;
  if (!attrs.empty()) {
    auto parsed = AttrsFromProto(attrs);
    if (!parsed.ok()) return parsed.status();
    given = *std::move(parsed);
  }
  return CallAttrs(op, std::move(given), storage);
}

v1::OpSchema OpSchemaToProto(uint32_t id, const OpDef& op) {
  v1::OpSchema schema;
  schema.set_id(id);
  schema.set_name(op.name);
  schema.set_min_inputs(op.min_inputs);
  schema.set_max_inputs(op.max_inputs);
  schema.set_num_outputs(op.num_outputs);
  schema.set_differentiable(op.differentiable);
  schema.set_doc(op.doc);
  for (const AttrSpec& spec : op.attrs) {
    v1::AttrSchema* attr = schema.add_attrs();
    attr->set_name(spec.name);
    attr->set_type(std::string(AttrTypeName(spec.type)));
    attr->set_required(spec.required);
    if (!spec.required)
      *attr->mutable_default_value() = AttrToProto(spec.default_value);
  }
  return schema;
}

v1::DeviceInfo DeviceToProto(const DeviceDescription& device) {
  v1::DeviceInfo info;
  info.set_name(device.name);
  info.set_kind(device.kind == DeviceKind::kCpu ? "cpu" : "cuda");
  info.set_description(device.description);
  info.set_total_memory(device.total_memory);
  info.set_compute_capability(device.compute_capability);
  return info;
}

v1::Status StatusToProto(const absl::Status& status, const std::string& op,
                         const std::string& site) {
  v1::Status out;
  out.set_code(static_cast<int32_t>(status.code()));
  // The runtime names the op in its messages ("matmul: shapes ..."); on the
  // wire the op has its own field, so the prefix is not repeated.
  absl::string_view message = status.message();
  if (!op.empty()) absl::ConsumePrefix(&message, absl::StrCat(op, ": "));
  std::string* text = out.mutable_message();
  text->assign(message.data(),
               std::min(message.size(), kMaxErrorMessageBytes + 1));
  CutText(text, kMaxErrorMessageBytes);
  out.set_op(op);
  out.set_site(site);
  CutText(out.mutable_site(), kMaxSiteBytes);
  return out;
}

v1::Status ShortStatus(const v1::Status& status) {
  v1::Status out;
  out.set_code(status.code());
  out.set_op(status.op());
  out.set_message(status.message().substr(0, kShortErrorBytes + 1));
  CutText(out.mutable_message(), kShortErrorBytes);
  out.set_site(status.site().substr(0, kShortErrorBytes + 1));
  CutText(out.mutable_site(), kShortErrorBytes);
  return out;
}

std::shared_ptr<const v1::Status> SharedStatusProto(const absl::Status& status,
                                                    const std::string& op,
                                                    const std::string& site) {
  return std::make_shared<const v1::Status>(StatusToProto(status, op, site));
}

}  // namespace tensord
