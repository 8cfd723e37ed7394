// HandleMetaSource over a session's HandleTable: what a step signature
// records of the handles older than the step (step_signature.h).
#ifndef TENSORD_SERVER_GRAPH_REPLAY_HANDLE_META_H_
#define TENSORD_SERVER_GRAPH_REPLAY_HANDLE_META_H_

#include <string>

#include "server/graph_replay/step_signature.h"
#include "server/handle_table.h"

namespace tensord {

class HandleTableMeta : public HandleMetaSource {
 public:
  // `table` must outlive this.
  explicit HandleTableMeta(const HandleTable* table) : table_(table) {}

  void AppendMeta(uint64_t id, std::string* out) const override;
  const void* StorageOf(uint64_t id) const override;

 private:
  const HandleTable* table_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_GRAPH_REPLAY_HANDLE_META_H_
