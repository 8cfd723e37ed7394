// Status propagation helpers, as used across tensord's boundaries.
#ifndef TENSORD_RUNTIME_CORE_STATUS_MACROS_H_
#define TENSORD_RUNTIME_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TD_CONCAT_INNER_(a, b) a##b
#define TD_CONCAT_(a, b) TD_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define TD_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status td_status_ = (expr);      \
    if (!td_status_.ok()) return td_status_; \
  } while (0)

// `TD_ASSIGN_OR_RETURN(auto x, F());` declares x from an OK StatusOr, or
// returns its status.
#define TD_ASSIGN_OR_RETURN(lhs, expr) \
  TD_ASSIGN_OR_RETURN_IMPL_(TD_CONCAT_(td_statusor_, __LINE__), lhs, expr)
#define TD_ASSIGN_OR_RETURN_IMPL_(var, lhs, expr) \
  auto var = (expr);                              \
  if (!var.ok()) return var.status();             \
  lhs = std::move(var).value()

#endif  // TENSORD_RUNTIME_CORE_STATUS_MACROS_H_
