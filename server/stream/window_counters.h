// WindowCounters: what the stream windows of one service hold and have sent, for the
// metrics endpoint and the tests. Every field is an atomic, safe to read at any time.
#ifndef SHOTSTREAM_SERVER_STREAM_WINDOW_COUNTERS_H_
#define SHOTSTREAM_SERVER_STREAM_WINDOW_COUNTERS_H_

#include <atomic>
#include <cstdint>
#include <iterator>

namespace shotstream::stream {

struct WindowCounters {
  std::atomic<int64_t> shots_held{0};      // read or being read, not yet fully sent
  std::atomic<int64_t> inflight_bytes{0};  // decoded bytes held (the budget in use)
  std::atomic<int64_t> inflight_bytes_peak{0};
  std::atomic<int64_t> budget_waits{0};  // reads that waited for the byte budget
  // Streams whose consumer stopped taking chunks for the stall timeout (now), and what
  // they gave back (shots read ahead and their decoded bytes, since start).
  std::atomic<int64_t> stalled_streams{0};
  std::atomic<int64_t> shots_given_back{0};
  std::atomic<int64_t> bytes_given_back{0};
  std::atomic<int64_t> max_shots_held_by_one_stream{0};
  std::atomic<int64_t> reads_in_flight{0};
  std::atomic<int64_t> shots_sent{0};
  std::atomic<int64_t> bytes_sent{0};
  std::atomic<int64_t> shots_sent_zero_copy{0};  // of shots_sent: sent from the file mapping
  // Coalescing: positioned reads issued, bytes read (gaps included), bytes of traces.
  std::atomic<int64_t> reads_issued{0};
  std::atomic<int64_t> bytes_read{0};
  std::atomic<int64_t> bytes_wanted{0};
  // Shot read latency histogram (seconds, cumulative buckets as Prometheus has them).
  static constexpr double kLatencyBuckets[] = {0.001, 0.002, 0.005, 0.01, 0.02,
                                               0.05,  0.1,   0.2,   0.5,  1.0};
  std::atomic<int64_t> read_latency_count[std::size(kLatencyBuckets) + 1] = {};
  std::atomic<int64_t> read_latency_sum_us{0};
};

}  // namespace shotstream::stream

#endif  // SHOTSTREAM_SERVER_STREAM_WINDOW_COUNTERS_H_
