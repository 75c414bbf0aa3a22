// RetryBudget: how many times a broken stream is tried again. At most `retries` failures
// in a row, each delivered shot starting the count again; before the n-th retry in a row
// a backoff of min(2 s, 50 ms * 2^n). Python's shotstream.routing.RetryBudget is the same;
// client/testdata/retry_cases.txt pins both.
//
// Thread-compatible.
#ifndef SHOTSTREAM_CLIENT_RETRY_BUDGET_H_
#define SHOTSTREAM_CLIENT_RETRY_BUDGET_H_

#include <algorithm>
#include <optional>

#include "absl/time/time.h"

namespace shotstream::client {

class RetryBudget {
 public:
  explicit RetryBudget(int retries) : retries_(retries) {}

  // A shot was delivered.
  void Delivered() { failures_in_a_row_ = 0; }

  // A transient failure: the backoff before trying again, or nullopt when the budget is
  // spent (the error is the caller's then).
  std::optional<absl::Duration> Failed() {
    if (failures_in_a_row_ >= retries_) return std::nullopt;
    ++failures_in_a_row_;
    return std::min(absl::Seconds(2), absl::Milliseconds(50) * (int64_t{1} << failures_in_a_row_));
  }

  int failures_in_a_row() const { return failures_in_a_row_; }

 private:
  const int retries_;
  int failures_in_a_row_ = 0;
};

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_RETRY_BUDGET_H_
