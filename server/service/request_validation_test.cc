// Request validation with expected answers: each field of a request, accepted and refused,
// for StreamShotsRequest and JobStart alike (the fuzzer checks it never breaks; this checks
// what it says).
#include "server/service/request_validation.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "server/dataset/dataset.h"
#include "server/source/fake_source.h"

namespace shotstream::service {
namespace {

class RequestValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = std::make_unique<source::FakeSource>(100);
    for (int64_t id : {3, 5, 8}) {
      fake->AddShot(id, {source::FakeTrace{std::vector<float>(100), {{"offset", 10}}}});
    }
    fake->Finish();
    dataset::DatasetSpec spec;
    spec.name = "d";
    registry_.at(0).name = "d";
    registry_.at(0).SetLoaded(dataset::Dataset::FromSource(spec, std::move(fake)));
    registry_.at(1).name = "broken";
    registry_.at(1).SetFailed(absl::InvalidArgumentError("x.sgy: byte 3225: bad format"));
    limits_.max_shots_per_request = 4;
    limits_.max_queue_depth = 8;
    limits_.default_queue_depth = 2;
    limits_.default_chunk_bytes = 1 << 20;
    limits_.max_chunk_bytes = 4 << 20;
  }

  v1::StreamShotsRequest Request(std::vector<int64_t> ids = {5, 3, 5}) {
    v1::StreamShotsRequest r;
    r.set_dataset("d");
    for (int64_t id : ids) r.add_shot_ids(id);
    return r;
  }

  // The status of validating `r`, and its message must name `says`.
  void ExpectRefused(const v1::StreamShotsRequest& r, absl::StatusCode code,
                     const std::string& says) {
    auto v = ValidateStreamRequest(r, registry_, limits_);
    ASSERT_FALSE(v.ok()) << says;
    EXPECT_EQ(v.status().code(), code) << v.status();
    EXPECT_NE(v.status().message().find(says), absl::string_view::npos) << v.status();
  }

  dataset::DatasetRegistry registry_{2};
  RequestLimits limits_;
};

TEST_F(RequestValidationTest, TheDefaultsOfAPlainRequest) {
  auto v = ValidateStreamRequest(Request(), registry_, limits_);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->shot_ids, (std::vector<int64_t>{5, 3, 5}));  // order and repeats kept
  EXPECT_EQ(v->queue_depth, 2u);
  const dataset::ShotSelection& s = v->selection;
  EXPECT_EQ(s.start, 0u);
  EXPECT_EQ(s.count, 100u);  // every sample
  EXPECT_EQ(s.max_chunk_bytes, uint64_t{1} << 20);
  EXPECT_EQ(s.encoding, wire::Encoding::kFloat32);
  EXPECT_TRUE(s.headers.empty());
  EXPECT_TRUE(s.where.empty());
  EXPECT_FALSE(s.raw_trace_headers);
  EXPECT_FALSE(s.accept_big_endian);
}

TEST_F(RequestValidationTest, ASelectionIsResolvedAndCarried) {
  v1::StreamShotsRequest r = Request();
  r.set_queue_depth(8);
  v1::ShotSelection* sel = r.mutable_selection();
  sel->add_headers("offset");
  sel->mutable_window()->set_start(10);  // stop 0: to the end
  auto* w = sel->add_where();
  w->set_header("offset");
  w->set_low(0);
  w->set_high(20);
  sel->set_encoding(v1::ENCODING_AUTO);
  sel->set_tolerance(0.01);
  sel->set_max_chunk_bytes(100 << 20);  // capped
  sel->set_raw_trace_headers(true);
  sel->set_accept_big_endian(true);
  auto v = ValidateStreamRequest(r, registry_, limits_);
  ASSERT_TRUE(v.ok()) << v.status();
  const dataset::ShotSelection& s = v->selection;
  EXPECT_EQ(v->queue_depth, 8u);
  ASSERT_EQ(s.headers.size(), 1u);
  EXPECT_EQ(s.headers[0].name, "offset");
  EXPECT_EQ(s.start, 10u);
  EXPECT_EQ(s.count, 90u);
  ASSERT_EQ(s.where.size(), 1u);
  EXPECT_EQ(s.where[0].high, 20);
  EXPECT_EQ(s.encoding, wire::Encoding::kAuto);  // still to be planned
  EXPECT_EQ(s.tolerance, 0.01);
  EXPECT_EQ(s.max_chunk_bytes, uint64_t{4} << 20);
  EXPECT_TRUE(s.raw_trace_headers);
  EXPECT_TRUE(s.accept_big_endian);
}

TEST_F(RequestValidationTest, EveryFieldRefusedNamesItself) {
  ExpectRefused(Request({3, 99}), absl::StatusCode::kNotFound, "has no shot 99");
  ExpectRefused(Request({3, 3, 3, 3, 3}), absl::StatusCode::kInvalidArgument,
                "max_shots_per_request");
  v1::StreamShotsRequest r = Request();
  r.set_dataset("nope");
  ExpectRefused(r, absl::StatusCode::kNotFound, "unknown dataset 'nope'");
  r.set_dataset("broken");
  ExpectRefused(r, absl::StatusCode::kFailedPrecondition, "bad format");
  r = Request();
  r.set_queue_depth(9);
  ExpectRefused(r, absl::StatusCode::kInvalidArgument, "max_queue_depth");
  r = Request();
  r.mutable_selection()->add_headers("ofset");
  ExpectRefused(r, absl::StatusCode::kInvalidArgument, "did you mean 'offset'");
  for (auto [start, stop] : {std::pair<uint32_t, uint32_t>{50, 40}, {0, 101}, {100, 0}}) {
    r = Request();
    r.mutable_selection()->mutable_window()->set_start(start);
    r.mutable_selection()->mutable_window()->set_stop(stop);
    ExpectRefused(r, absl::StatusCode::kInvalidArgument, "window: samples");
  }
  r = Request();
  r.mutable_selection()->add_where()->set_header("inline");
  ExpectRefused(r, absl::StatusCode::kInvalidArgument, "where[0].header");
  r = Request();
  auto* w = r.mutable_selection()->add_where();
  w->set_header("offset");
  w->set_low(5);
  w->set_high(1);
  ExpectRefused(r, absl::StatusCode::kInvalidArgument, "where[0] (offset): low 5 is above high 1");
  r = Request();
  r.mutable_selection()->set_encoding(static_cast<v1::Encoding>(42));
  ExpectRefused(r, absl::StatusCode::kInvalidArgument, "encoding: 42");
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    r = Request();
    r.mutable_selection()->set_tolerance(bad);
    ExpectRefused(r, absl::StatusCode::kInvalidArgument, "tolerance");
  }
}

TEST_F(RequestValidationTest, AJobStartIsValidatedAsAStreamIs) {
  v1::JobStart j;
  j.set_dataset("d");
  j.add_shot_ids(8);
  j.mutable_selection()->mutable_window()->set_start(90);
  auto v = ValidateJobStart(j, registry_, limits_);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->selection.count, 10u);
  j.mutable_selection()->add_headers("nope");
  EXPECT_EQ(ValidateJobStart(j, registry_, limits_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shotstream::service
