// A program outside Bazel that uses the installed C++ client as a user's code would: it
// streams one shot with a header column, stages it (to the GPU where there is one, else in
// host memory), copies it back and writes what it got, for the install test to compare.
//
//   shot_values TARGET DATASET SHOT_ID OUT.f32   (prints "shot ID TRACES SAMPLES OFFSET0")
#include <cstdio>
#include <string>
#include <vector>

#include "shotstream/client/client.h"
#include "shotstream/client/grpc_tuning.h"
#include "shotstream/gpu/device_stager.h"

int main(int argc, char** argv) {
  if (argc != 5) return std::fprintf(stderr, "usage: %s TARGET DATASET SHOT OUT\n", argv[0]), 2;
  shotstream::client::TuneGrpcForLargeMessages();
  auto client = shotstream::client::Client::Connect(argv[1]);
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;
  shotstream::client::StreamOptions options;
  options.headers = {"offset"};
  auto reader = (*client)->Stream(argv[2], {std::stoll(argv[3])}, options);
  shotstream::client::Shot shot;
  auto more = reader->Next(&shot);
  if (!more.ok()) return std::fprintf(stderr, "%s\n", more.status().ToString().c_str()), 1;
  if (!*more) return std::fprintf(stderr, "no shot\n"), 1;
  const uint32_t n_traces = shot.n_traces, n_samples = shot.n_samples;
  const std::vector<double> offsets = *shot.header("offset");
  shotstream::gpu::DeviceStager stager;
  auto staged = stager.Stage(std::move(shot.samples));
  if (!staged.ok()) return std::fprintf(stderr, "%s\n", staged.status().ToString().c_str()), 1;
  std::vector<float> host(size_t{n_traces} * n_samples);
  if (absl::Status s = staged->CopyToHost(host.data()); !s.ok()) {
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  FILE* out = std::fopen(argv[4], "wb");
  if (out == nullptr || std::fwrite(host.data(), sizeof(float), host.size(), out) != host.size() ||
      std::fclose(out) != 0) {
    return std::perror(argv[4]), 1;
  }
  std::printf("shot %s %u %u %g\n", argv[3], n_traces, n_samples, offsets.empty() ? 0 : offsets[0]);
  return 0;
}
