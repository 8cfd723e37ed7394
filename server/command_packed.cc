// Note [Packed commands]: a tiny-op stream is Calls and Releases, one of each
// per op, and as protobuf messages each costs the daemon an arena message
// with two repeated fields (and a map) to construct, parse and destroy, and
// the client as much to build and serialise: in `perf` of 100k dependent
// `add`s, protobuf was about 18% of the daemon's CPU. A client that Welcome
// allows (Welcome.packed_commands) therefore sends runs of them as one
// Command.packed: `count` commands with consecutive seqs, each a few varints
// (proto/packed_commands.h). The runner decodes an entry into a CallView and
// runs it exactly as the Call message it stands for (the same checks, the
// same errors, the same Ack entries), so a client may mix both freely. Only
// the common shape is packed: a Call with attributes or a site text to bind
// stays a Call message.
//
// A malformed run is a frame error naming the run's seq, the entry and the
// byte: the entries before it have run, the ones from it on do not (their
// outputs are never created, so later uses fail as for any unknown handle).
// Resume: a resent run whose first entries were applied skips those
// (RunBatch's applied_seq), so a run may straddle the daemon's applied seq.
#include "absl/strings/str_cat.h"
#include "server/command_runner.h"

namespace tensord {

void CommandRunner::RunPacked(const v1::Command& cmd, v1::Ack* ack) {
  const v1::Packed& run = cmd.packed();
  auto frame_error = [&](absl::string_view what) {
    ReportFrameError(
        absl::InvalidArgumentError(absl::StrCat(
            "packed commands at seq ", cmd.seq(), " (", run.count(),
            " commands, ", run.entries().size(), " bytes): ", what)),
        "frame", "");
  };
  if (run.count() == 0) {
    return frame_error("a run must stand for at least one command");
  }
  const uint64_t last = packed::LastSeq(cmd);
  packed::Reader reader(run.entries());
  packed::Entry entry;
  uint64_t seq = cmd.seq();
  for (; !reader.done(); ++seq) {
    const uint64_t index = seq - cmd.seq();
    if (seq > last) {
      return frame_error(absl::StrCat("entry ", index, " at byte ",
                                      reader.offset(), " is past its count"));
    }
    absl::Status decoded = reader.Next(&entry);
    if (!decoded.ok()) {
      return frame_error(absl::StrCat("entry ", index, " (seq ", seq,
                                      "): ", decoded.message()));
    }
    if (seq <= applied_seq_) continue;  // applied before a resume
    if (entry.kind == packed::Kind::kRelease) {
      for (uint64_t id : entry.handles) handles_.Release(id);
      continue;
    }
    const CallView call = CallView::Of(entry);
    if (profiler_.enabled()) {
      RunProfiled(&call, nullptr, ack);
    } else {
      RunCall(call, ack);
    }
  }
  if (seq != last + 1) {
    frame_error(
        absl::StrCat("its entries stand for ", seq - cmd.seq(), " commands"));
  }
}

}  // namespace tensord
