// Early-return helpers for absl::Status / absl::StatusOr (Abseil 20220623 has none).
#ifndef SHOTSTREAM_SERVER_COMMON_STATUS_MACROS_H_
#define SHOTSTREAM_SERVER_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SS_CONCAT_INNER_(a, b) a##b
#define SS_CONCAT_(a, b) SS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define SS_RETURN_IF_ERROR(expr)                      \
  do {                                                \
    ::absl::Status ss_status_ = (expr);               \
    if (!ss_status_.ok()) return ss_status_;          \
  } while (0)

// `lhs = value of expr`, or returns its status from the enclosing function.
#define SS_ASSIGN_OR_RETURN(lhs, expr) \
  SS_ASSIGN_OR_RETURN_IMPL_(SS_CONCAT_(ss_statusor_, __LINE__), lhs, expr)

#define SS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // SHOTSTREAM_SERVER_COMMON_STATUS_MACROS_H_
