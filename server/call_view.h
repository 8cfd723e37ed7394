// One Call as the command runner reads it, whichever way it came: a v1::Call
// message, or an entry of a packed run (Note [Packed commands],
// proto/packed_commands.h), which has no attributes and no site text.
// A view: it points into the message or the packed reader it was made from.
#ifndef TENSORD_SERVER_CALL_VIEW_H_
#define TENSORD_SERVER_CALL_VIEW_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "google/protobuf/map.h"
#include "proto/packed_commands.h"
#include "proto/tensord.pb.h"

namespace tensord {

struct CallView {
  using AttrMap = google::protobuf::Map<std::string, v1::AttrValue>;

  uint32_t op_id = 0;
  absl::Span<const uint64_t> inputs;
  absl::Span<const uint64_t> outputs;
  uint32_t site_id = 0;
  const std::string* site = nullptr;  // never null once made by Of()
  const AttrMap* attrs = nullptr;     // never null once made by Of()

  static CallView Of(const v1::Call& call) {
    CallView v;
    v.op_id = call.op_id();
    v.inputs = absl::MakeConstSpan(call.inputs().data(), call.inputs_size());
    v.outputs = absl::MakeConstSpan(call.outputs().data(), call.outputs_size());
    v.site_id = call.site_id();
    v.site = &call.site();
    v.attrs = &call.attrs();
    return v;
  }

  static CallView Of(const packed::Entry& entry) {
    static const std::string* const kNoSite = new std::string();
    static const AttrMap* const kNoAttrs = new AttrMap();
    CallView v;
    v.op_id = entry.op_id;
    v.inputs = entry.inputs;
    v.outputs = entry.outputs;
    v.site_id = entry.site_id;
    v.site = kNoSite;
    v.attrs = kNoAttrs;
    return v;
  }
};

}  // namespace tensord

#endif  // TENSORD_SERVER_CALL_VIEW_H_
