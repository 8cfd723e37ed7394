// JSON to Python pickle, for `tensorctl snapshot -o FILE.pickle`.
//
// PyTorch's memory tools read snapshots as pickles only:
// torch.cuda.memory._dump_snapshot writes one, and both
// `python -m torch.cuda._memory_viz trace_plot|segment_plot FILE` and the
// drag-and-drop viewer at pytorch.org/memory_viz unpickle what they are
// given. The daemon sends its snapshot as JSON (snapshot.h), so tensorctl
// turns that JSON into the same value pickled: objects become dicts, arrays
// lists, integers ints, and so on.
//
// The pickle uses protocol 2 opcodes the viewer's own JavaScript unpickler
// knows (MemoryViz.js) and that Python's pickle.load reads; lists and dicts
// are filled 1000 items per APPENDS/SETITEMS, as Python's pickler does (the
// viewer spreads each batch into one call's arguments).
#ifndef TENSORD_TOOLS_SNAPSHOT_PICKLE_H_
#define TENSORD_TOOLS_SNAPSHOT_PICKLE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tensord {
namespace tensorctl {

// The pickle of the JSON value `json` (one value, whitespace around it
// allowed). INVALID_ARGUMENT, with the byte offset, for malformed JSON or
// nesting deeper than 64.
absl::StatusOr<std::string> JsonToPickle(absl::string_view json);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_SNAPSHOT_PICKLE_H_
