#include "server/wire_limits.h"

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace {

// Tokens and resume secrets are compared, session ids echoed in errors.
constexpr size_t kMaxSecretBytes = 256;

absl::Status TooLong(absl::string_view field, size_t size, size_t limit,
                     absl::string_view unit) {
  return absl::InvalidArgumentError(absl::StrCat(field, " has ", size, " ",
                                                 unit, "; the limit is ", limit,
                                                 " (server/wire_limits.h)"));
}

absl::Status CheckText(absl::string_view field, const std::string& text,
                       size_t limit) {
  if (text.size() <= limit) return absl::OkStatus();
  return TooLong(field, text.size(), limit, "bytes");
}

absl::Status CheckList(absl::string_view field, int size, size_t limit) {
  if (static_cast<size_t>(size) <= limit) return absl::OkStatus();
  return TooLong(field, static_cast<size_t>(size), limit, "entries");
}

absl::Status CheckAttrs(
    const google::protobuf::Map<std::string, v1::AttrValue>& attrs) {
  if (attrs.empty()) return absl::OkStatus();
  if (attrs.size() > kMaxCallAttrs) {
    return TooLong("Call.attrs", attrs.size(), kMaxCallAttrs, "entries");
  }
  size_t bytes = 0;
  for (const auto& [name, value] : attrs) {
    if (name.size() > kMaxNameBytes) {
      return TooLong("Call.attrs name", name.size(), kMaxNameBytes, "bytes");
    }
    bytes += name.size() + sizeof(int64_t);
    switch (value.value_case()) {
      case v1::AttrValue::kS:
        if (value.s().size() > kMaxAttrStringBytes) {
          return TooLong(absl::StrCat("Call.attrs['", name, "'].s"),
                         value.s().size(), kMaxAttrStringBytes, "bytes");
        }
        bytes += value.s().size();
        break;
      case v1::AttrValue::kInts:
        bytes += sizeof(int64_t) * value.ints().values_size();
        break;
      case v1::AttrValue::kFloats:
        bytes += sizeof(double) * value.floats().values_size();
        break;
      default:
        break;
    }
  }
  if (bytes > kMaxCallAttrBytes) {
    return TooLong("Call.attrs (names, strings and 8 bytes per list element)",
                   bytes, kMaxCallAttrBytes, "bytes");
  }
  return absl::OkStatus();
}

absl::Status CheckCall(const v1::Call& call) {
  TD_RETURN_IF_ERROR(CheckText("Call.site", call.site(), kMaxSiteBytes));
  TD_RETURN_IF_ERROR(
      CheckList("Call.inputs", call.inputs_size(), kMaxCallHandles));
  TD_RETURN_IF_ERROR(
      CheckList("Call.outputs", call.outputs_size(), kMaxCallHandles));
  return CheckAttrs(call.attrs());
}

absl::Status CheckBackward(const v1::Backward& b) {
  TD_RETURN_IF_ERROR(CheckText("Backward.site", b.site(), kMaxSiteBytes));
  TD_RETURN_IF_ERROR(
      CheckList("Backward.roots", b.roots_size(), kMaxCallHandles));
  TD_RETURN_IF_ERROR(
      CheckList("Backward.grads", b.grads_size(), kMaxCallHandles));
  TD_RETURN_IF_ERROR(
      CheckList("Backward.inputs", b.inputs_size(), kMaxCallHandles));
  return CheckList("Backward.outputs", b.outputs_size(), kMaxCallHandles);
}

absl::Status CheckFallbacks(const v1::NoteFallbacks& note) {
  TD_RETURN_IF_ERROR(CheckList("NoteFallbacks.fallbacks", note.fallbacks_size(),
                               kMaxFallbacksPerCommand));
  for (const v1::FallbackCount& f : note.fallbacks()) {
    if (f.op().empty()) {
      return absl::InvalidArgumentError(
          "NoteFallbacks.fallbacks.op is empty; name the op that ran on the "
          "client (e.g. aten.cummax.default)");
    }
    TD_RETURN_IF_ERROR(
        CheckText("NoteFallbacks.fallbacks.op", f.op(), kMaxNameBytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHello(const v1::Hello& hello) {
  TD_RETURN_IF_ERROR(
      CheckText("Hello.client_name", hello.client_name(), kMaxClientNameBytes));
  TD_RETURN_IF_ERROR(CheckText("Hello.token", hello.token(), kMaxSecretBytes));
  TD_RETURN_IF_ERROR(CheckText("Hello.resume_session_id",
                               hello.resume_session_id(), kMaxSecretBytes));
  return CheckText("Hello.resume_secret", hello.resume_secret(),
                   kMaxSecretBytes);
}

void CutText(std::string* text, size_t limit) {
  if (text->size() <= limit) return;
  constexpr absl::string_view kMark = "...";
  size_t n = limit > kMark.size() ? limit - kMark.size() : 0;
  // Back off continuation bytes (10xxxxxx) to a character's first byte.
  while (n > 0 && (static_cast<unsigned char>((*text)[n]) & 0xC0) == 0x80) --n;
  text->resize(n);
  if (limit >= kMark.size()) text->append(kMark.data(), kMark.size());
}

absl::Status CheckCommand(const v1::Command& cmd) {
  switch (cmd.kind_case()) {
    case v1::Command::kCall:
      return CheckCall(cmd.call());
    case v1::Command::kPut:
      TD_RETURN_IF_ERROR(
          CheckText("Put.site", cmd.put().site(), kMaxSiteBytes));
      TD_RETURN_IF_ERROR(
          CheckText("Put.device", cmd.put().device(), kMaxNameBytes));
      return CheckList("Put.shape", cmd.put().shape_size(), kMaxShapeDims);
    case v1::Command::kGet:
      return CheckText("Get.site", cmd.get().site(), kMaxSiteBytes);
    case v1::Command::kBackward:
      return CheckBackward(cmd.backward());
    case v1::Command::kSetRequiresGrad:
      return CheckText("SetRequiresGrad.site", cmd.set_requires_grad().site(),
                       kMaxSiteBytes);
    case v1::Command::kOptions:
      return CheckText("SetOptions.default_device",
                       cmd.options().default_device(), kMaxNameBytes);
    case v1::Command::kRecordEvent:
      return CheckText("RecordEvent.device", cmd.record_event().device(),
                       kMaxNameBytes);
    case v1::Command::kWaitEvent:
      return CheckText("WaitEvent.device", cmd.wait_event().device(),
                       kMaxNameBytes);
    case v1::Command::kGetMemoryStats:
      return CheckText("GetMemoryStats.device", cmd.get_memory_stats().device(),
                       kMaxNameBytes);
    case v1::Command::kNoteFallbacks:
      return CheckFallbacks(cmd.note_fallbacks());
    default:
      // Packed runs are checked entry by entry as they are read (their
      // entries carry no text); Release lists are not kept.
      return absl::OkStatus();
  }
}

}  // namespace tensord
