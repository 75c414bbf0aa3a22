// EpochShots for C++ users of the client: which shots each data-parallel rank takes in an
// epoch (common/epoch_shots.h has them and says how). Pure functions, thread-safe.
#ifndef SHOTSTREAM_CLIENT_EPOCH_SHOTS_H_
#define SHOTSTREAM_CLIENT_EPOCH_SHOTS_H_

#include "shotstream/common/epoch_shots.h"

namespace shotstream::client {

using ::shotstream::EpochPermutation;
using ::shotstream::EpochProgress;
using ::shotstream::EpochRemainder;
using ::shotstream::EpochShots;
using ::shotstream::EvenShares;
using ::shotstream::RemainderOf;

}  // namespace shotstream::client

#endif  // SHOTSTREAM_CLIENT_EPOCH_SHOTS_H_
