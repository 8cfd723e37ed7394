// The fake daemon's Welcome and op-schema table (client/fake_welcome.h).
#include "client/fake_welcome.h"

#include <string>

namespace tensord {
namespace testing {
namespace fake {
namespace {

v1::OpSchema* AddOp(v1::Welcome* w, const std::string& name, int min_in,
                    int max_in) {
  v1::OpSchema* op = w->add_ops();
  op->set_id(w->ops_size());
  op->set_name(name);
  op->set_min_inputs(min_in);
  op->set_max_inputs(max_in);
  op->set_num_outputs(1);
  return op;
}

void AddAttr(v1::OpSchema* op, const std::string& name, const std::string& type,
             bool required = false) {
  v1::AttrSchema* a = op->add_attrs();
  a->set_name(name);
  a->set_type(type);
  a->set_required(required);
}

}  // namespace

v1::Welcome FakeWelcome(const FakeOptions& options) {
  v1::Welcome welcome;
  v1::Welcome* w = &welcome;
  w->set_session_id("fake-session-1");
  w->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  w->set_server_version("fake");
  w->set_chunk_bytes(options.chunk_bytes);
  w->set_max_frame_bytes(options.max_frame_bytes);
  w->set_default_device("cpu");
  w->set_packed_commands(options.packed_commands);
  v1::DeviceInfo* cpu = w->add_devices();
  cpu->set_name("cpu");
  cpu->set_kind("cpu");
  for (const char* name : {"zeros", "ones", "full"}) {
    v1::OpSchema* op = AddOp(w, name, 0, 0);
    AddAttr(op, "shape", "ints");
    AddAttr(op, "dtype", "dtype");
    AddAttr(op, "device", "string");
    if (std::string(name) == "full") AddAttr(op, "fill_value", "float", true);
  }
  v1::OpSchema* arange = AddOp(w, "arange", 0, 0);
  AddAttr(arange, "start", "float");
  AddAttr(arange, "end", "float", true);
  AddAttr(arange, "step", "float");
  AddAttr(arange, "dtype", "dtype");
  AddAttr(arange, "device", "string");
  for (const char* name : {"add", "sub"}) {
    AddAttr(AddOp(w, name, 2, 2), "alpha", "float");
  }
  for (const char* name : {"mul", "div", "matmul"}) AddOp(w, name, 2, 2);
  for (const char* name : {"neg", "relu"}) AddOp(w, name, 1, 1);
  for (const char* name : {"sum", "mean"}) {
    v1::OpSchema* op = AddOp(w, name, 1, 1);
    AddAttr(op, "dim", "ints");
    AddAttr(op, "keepdim", "bool");
  }
  return welcome;
}

}  // namespace fake
}  // namespace testing
}  // namespace tensord
