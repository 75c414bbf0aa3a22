// The write session without the transport: messages taken in order, the dataset committed
// into a registry, and every protocol error named, leaving nothing behind.
#include "server/write/write_session.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/crc32.h"
#include "gtest/gtest.h"

namespace shotstream::write {
namespace {

std::string TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/session_XXXXXX";
  return ::mkdtemp(&dir[0]);
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

v1::WriteShotsRequest Start(const std::string& name, double interval = 2000, int format = 5) {
  v1::WriteShotsRequest m;
  m.mutable_start()->set_dataset(name);
  m.mutable_start()->set_sample_interval_us(interval);
  m.mutable_start()->set_sample_format(format);
  return m;
}

// Shot `id` of 2 traces x 4 samples as one part (or as two: `split`).
std::vector<v1::WriteShotsRequest> Shot(int64_t id, bool split = false) {
  std::vector<float> samples(8);
  for (int i = 0; i < 8; ++i) samples[i] = id * 10.0f + i;
  const uint32_t crc = Crc32(0, samples.data(), samples.size() * 4);
  std::vector<v1::WriteShotsRequest> parts(split ? 2 : 1);
  for (size_t p = 0; p < parts.size(); ++p) {
    v1::ShotPart* s = parts[p].mutable_shot();
    if (p == 0) {
      s->set_shot_id(id);
      s->set_n_traces(2);
      s->set_n_samples(4);
      auto* h = s->add_headers();
      h->set_name("offset");
      h->add_values(-50);
      h->add_values(50);
    }
    const size_t n = split ? 16 : 32;
    s->set_samples(reinterpret_cast<const char*>(samples.data()) + p * 16, n);
    if (p + 1 == parts.size()) {
      s->set_shot_end(true);
      s->set_crc32(crc);
    }
  }
  return parts;
}

v1::WriteShotsRequest Finish() {
  v1::WriteShotsRequest m;
  m.mutable_finish();
  return m;
}

class WriteSessionTest : public ::testing::Test {
 protected:
  SessionContext Context() {
    SessionContext c;
    c.datasets = &registry_;
    c.write_dir = dir_;
    c.who = "alice";
    c.load = [this](dataset::DatasetEntry* entry, const std::string& path) {
      dataset::DatasetSpec spec;
      spec.name = entry->name;
      spec.globs = {path};
      loaded_.push_back(path);
      ASSERT_TRUE(entry->Load(spec).ok());
    };
    c.published = [this](const dataset::DatasetEntry& e) { published_.push_back(e.name); };
    return c;
  }

  std::string dir_ = TempDir();
  dataset::DatasetRegistry registry_;
  std::vector<std::string> loaded_, published_;
};

TEST_F(WriteSessionTest, MessagesInOrderMakeADatasetVisibleOnlyAtCommit) {
  WriteSession s(Context());
  ASSERT_TRUE(s.Take(Start("model")).ok());
  EXPECT_EQ(registry_.Reserve("model").code(), absl::StatusCode::kAlreadyExists);
  for (int64_t id : {4, 2}) {
    for (const auto& m : Shot(id, /*split=*/id == 2)) ASSERT_TRUE(s.Take(m).ok());
  }
  EXPECT_EQ(registry_.Find("model"), nullptr);
  ASSERT_TRUE(s.Take(Finish()).ok());
  ASSERT_TRUE(s.finishing());
  auto entry = s.Commit();
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(registry_.Find("model"), *entry);
  EXPECT_EQ(published_, (std::vector<std::string>{"model"}));
  ASSERT_EQ(loaded_.size(), 1u);
  EXPECT_EQ(loaded_[0], dir_ + "/model.sgy");
  auto d = (*entry)->dataset();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->catalog().shots().size(), 2u);
  EXPECT_EQ(s.shots(), 2u);
  EXPECT_EQ(s.sample_bytes(), 2u * 32);
  EXPECT_EQ(s.max_error(), 0);
  EXPECT_EQ(Files(dir_), (std::vector<std::string>{"model.sgy"}));
}

TEST_F(WriteSessionTest, ProtocolErrorsAreNamedAndLeaveNothing) {
  struct Case {
    std::vector<v1::WriteShotsRequest> messages;
    absl::StatusCode code;
    std::string says;
  };
  std::vector<Case> cases = {
      {{Shot(1)[0]}, absl::StatusCode::kInvalidArgument, "must be `start`"},
      {{Finish()}, absl::StatusCode::kInvalidArgument, "must be `start`"},
      {{Start("")}, absl::StatusCode::kInvalidArgument, "start.dataset"},
      {{Start("../x")}, absl::StatusCode::kInvalidArgument, "../x"},
      {{Start("a", 0)}, absl::StatusCode::kInvalidArgument, "start.sample_interval_us: 0"},
      {{Start("a", -1)}, absl::StatusCode::kInvalidArgument, "sample_interval_us"},
      {{Start("a", 1000, 2)}, absl::StatusCode::kInvalidArgument, "format"},
      {{Start("a"), Start("b")}, absl::StatusCode::kInvalidArgument, "a second `start`"},
      {{Start("a"), Finish(), Finish()}, absl::StatusCode::kInvalidArgument, "after `finish`"},
      {{Start("a"), v1::WriteShotsRequest()}, absl::StatusCode::kInvalidArgument,
       "none of start, shot, finish"},
  };
  for (const Case& c : cases) {
    WriteSession s(Context());
    absl::Status status;
    for (const auto& m : c.messages) {
      status = s.Take(m);
      if (!status.ok()) break;
    }
    EXPECT_EQ(status.code(), c.code) << c.says << ": " << status;
    EXPECT_NE(status.message().find(c.says), absl::string_view::npos) << status;
    s.Abandon();
    EXPECT_TRUE(registry_.Reserve("a").ok()) << "the name is free again";
    registry_.Release("a");
  }
  EXPECT_TRUE(Files(dir_).empty());
}

TEST_F(WriteSessionTest, ACommitWithoutFinishOrInsideAShotIsRefused) {
  {
    WriteSession s(Context());
    ASSERT_TRUE(s.Take(Start("half")).ok());
    ASSERT_TRUE(s.Take(Shot(1, true)[0]).ok());
    EXPECT_EQ(s.Commit().status().code(), absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(s.Take(Finish()).ok());
    auto inside = s.Commit();
    EXPECT_EQ(inside.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(inside.status().message().find("inside shot 1"), absl::string_view::npos);
  }  // destroyed unfinished: its temporary goes, its name is free
  EXPECT_TRUE(Files(dir_).empty());
  EXPECT_TRUE(registry_.Reserve("half").ok());
  // Writing off: FAILED_PRECONDITION saying how to turn it on.
  SessionContext off = Context();
  off.write_dir.clear();
  WriteSession s(off);
  auto status = s.Take(Start("x"));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("--write_dir"), absl::string_view::npos);
}

}  // namespace
}  // namespace shotstream::write
