// Reading a file mapping safely: when the file is truncated under the mapping, touching
// the lost pages raises SIGBUS, which would kill the process. RunGuardingMapping turns a
// SIGBUS at an address inside the guarded range into a false return instead.
//
// Thread-safe: each thread guards its own range; a SIGBUS anywhere else goes to the
// handler that was there before (by default: the process dies, as it would have).
// `touch` is left by siglongjmp when the fault comes, so it must own nothing that needs
// destroying: plain loops over the bytes and memcpy, not allocations.
#ifndef SHOTSTREAM_SERVER_COMMON_MAPPING_GUARD_H_
#define SHOTSTREAM_SERVER_COMMON_MAPPING_GUARD_H_

#include <cstddef>

#include "absl/functional/function_ref.h"

namespace shotstream {

// Runs touch(); false when it faulted on [begin, begin + size) (it did not finish).
bool RunGuardingMapping(const void* begin, size_t size, absl::FunctionRef<void()> touch);

}  // namespace shotstream

#endif  // SHOTSTREAM_SERVER_COMMON_MAPPING_GUARD_H_
