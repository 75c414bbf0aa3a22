#include "server/zarr/zarr_array.h"

#include <atomic>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace shotstream::zarr {
namespace {

using json = nlohmann::json;

bool Exists(env::Env* env, const std::string& path) { return env->Stat(path).ok(); }

absl::StatusOr<json> ReadJson(env::Env* env, const std::string& path) {
  SS_ASSIGN_OR_RETURN(const std::string text, env::ReadFileToString(env, path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": not a JSON object"));
  }
  return j;
}

absl::StatusOr<std::vector<uint64_t>> Dims(const json& j, const std::string& what) {
  if (!j.is_array()) return absl::InvalidArgumentError(absl::StrCat(what, " is not a list"));
  std::vector<uint64_t> out;
  for (const json& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", j.dump(), ": not sizes"));
    }
    out.push_back(d.get<uint64_t>());
  }
  return out;
}

// Reads exactly `size` bytes at `offset`, or DATA_LOSS (the file ends first) or the Env's
// error, naming the file and the byte.
absl::Status ReadExactly(const env::RandomAccessFile& file, uint8_t* dst, uint64_t size,
                         uint64_t offset, const std::string& path) {
  absl::StatusOr<size_t> n = file.Read(offset, size, reinterpret_cast<char*>(dst));
  if (!n.ok()) return n.status();
  if (*n < size) {
    return absl::DataLossError(absl::StrCat(path, ": cannot read ", size, " bytes at byte ",
                                            offset, " (end of file)"));
  }
  return absl::OkStatus();
}

std::atomic<uint64_t> next_array_id{1};

}  // namespace

bool IsZarrNode(const std::string& dir, env::Env* env) {
  if (env == nullptr) env = env::Env::Default();
  return Exists(env, dir + "/zarr.json") || Exists(env, dir + "/.zarray") ||
         Exists(env, dir + "/.zgroup");
}

absl::StatusOr<std::unique_ptr<ZarrArray>> ZarrArray::Open(const std::string& dir,
                                                           env::Env* env) {
  std::unique_ptr<ZarrArray> a(new ZarrArray(env != nullptr ? env : env::Env::Default()));
  a->dir_ = dir;
  a->id_ = next_array_id.fetch_add(1);
  SS_RETURN_IF_ERROR(a->Load());
  return a;
}

absl::Status ZarrArray::Load() {
  std::string meta_path = dir_ + "/zarr.json";
  const bool v3 = Exists(env_, meta_path);
  if (!v3) meta_path = dir_ + "/.zarray";
  if (!Exists(env_, meta_path)) {
    return absl::NotFoundError(absl::StrCat(dir_, ": no Zarr array here (no zarr.json or .zarray)"));
  }
  SS_ASSIGN_OR_RETURN(const json m, ReadJson(env_, meta_path));
  auto refuse = [&](const absl::Status& s) {
    return absl::FailedPreconditionError(absl::StrCat(meta_path, ": ", s.message()));
  };
  auto record = [&](const std::string& path) {
    if (absl::StatusOr<env::FileStat> st = env_->Stat(path); st.ok()) {
      metadata_.push_back({path, FileIdentity::Of(*st)});
    }
  };
  record(meta_path);
  if (v3) {
    zarr_format_ = 3;
    if (m.value("node_type", "") != "array") {
      return absl::NotFoundError(absl::StrCat(meta_path, ": a ", m.value("node_type", "node"),
                                              ", not an array"));
    }
    if (m.value("zarr_format", 0) != 3) return refuse(absl::InvalidArgumentError("zarr_format is not 3"));
    auto shape = Dims(m.value("shape", json()), "shape");
    if (!shape.ok()) return refuse(shape.status());
    shape_ = *shape;
    auto dtype = ParseDataType(m.value("data_type", json()).dump(), 3);
    if (!dtype.ok()) return refuse(dtype.status());
    dtype_ = *dtype;
    const json grid = m.value("chunk_grid", json());
    if (grid.value("name", "") != "regular") {
      return refuse(absl::InvalidArgumentError(
          absl::StrCat("chunk_grid ", grid.dump(), " (a regular grid is served)")));
    }
    auto chunk = Dims(grid["configuration"].value("chunk_shape", json()), "chunk_shape");
    if (!chunk.ok()) return refuse(chunk.status());
    chunk_ = *chunk;
    const json keys = m.value("chunk_key_encoding", json::object());
    const std::string kname = keys.value("name", "default");
    const json kconf = keys.value("configuration", json::object());
    if (kname == "default") {
      default_keys_ = true;
      separator_ = kconf.value("separator", "/");
    } else if (kname == "v2") {
      separator_ = kconf.value("separator", ".");
    } else {
      return refuse(absl::InvalidArgumentError(absl::StrCat("chunk_key_encoding '", kname, "'")));
    }
    if (m.contains("storage_transformers") && !m["storage_transformers"].empty()) {
      return refuse(absl::InvalidArgumentError("storage_transformers are not served"));
    }
    auto fill = ParseFillValue(m.value("fill_value", json()).dump(), dtype_, 3);
    if (!fill.ok()) return refuse(fill.status());
    fill_ = *fill;
    const json codecs = m.value("codecs", json::array());
    read_chunk_ = chunk_;
    for (size_t i = 0; i < codecs.size(); ++i) {
      const json& c = codecs[i];
      if (c.is_object() && c.value("name", "") == "sharding_indexed") {
        if (i != 0 || codecs.size() != 1) {
          return refuse(absl::InvalidArgumentError(
              "sharding_indexed with other codecs around it is not served (it must be the "
              "only codec of the array)"));
        }
        const json conf = c.value("configuration", json::object());
        auto inner = Dims(conf.value("chunk_shape", json()), "sharding_indexed chunk_shape");
        if (!inner.ok()) return refuse(inner.status());
        if (inner->size() != chunk_.size()) {
          return refuse(absl::InvalidArgumentError("sharding_indexed chunk_shape rank"));
        }
        for (size_t d = 0; d < chunk_.size(); ++d) {
          if ((*inner)[d] == 0 || chunk_[d] % (*inner)[d] != 0) {
            return refuse(absl::InvalidArgumentError(absl::StrCat(
                "sharding_indexed chunk_shape ", conf["chunk_shape"].dump(),
                " does not divide the shard ", json(chunk_).dump())));
          }
        }
        read_chunk_ = *inner;
        sharded_ = true;
        index_at_start_ = conf.value("index_location", "end") == "start";
        for (const json& ic : conf.value("codecs", json::array())) {
          if (ic.value("name", "") == "sharding_indexed") {
            return refuse(absl::InvalidArgumentError("nested sharding is not served"));
          }
          auto parsed = ParseV3Codec(ic.dump());
          if (!parsed.ok()) return refuse(parsed.status());
          codecs_.push_back(*parsed);
        }
        for (const json& ic : conf.value("index_codecs", json::array())) {
          auto parsed = ParseV3Codec(ic.dump());
          if (!parsed.ok()) return refuse(parsed.status());
          if (parsed->name != "bytes" && parsed->name != "crc32c") {
            return refuse(absl::InvalidArgumentError(absl::StrCat(
                "sharding_indexed index_codecs '", parsed->name, "' (bytes and crc32c are served)")));
          }
          index_codecs_.push_back(*parsed);
        }
        continue;
      }
      auto parsed = ParseV3Codec(c.dump());
      if (!parsed.ok()) return refuse(parsed.status());
      codecs_.push_back(*parsed);
    }
    for (const Codec& c : codecs_) {
      if (c.name == "transpose" && c.order.size() != shape_.size()) {
        return refuse(absl::InvalidArgumentError("transpose order's rank"));
      }
    }
    if (m.contains("dimension_names") && m["dimension_names"].is_array()) {
      for (const json& n : m["dimension_names"]) {
        dimension_names_.push_back(n.is_string() ? n.get<std::string>() : "");
      }
    }
    if (m.contains("attributes")) attributes_ = m["attributes"].dump();
  } else {
    zarr_format_ = 2;
    auto shape = Dims(m.value("shape", json()), "shape");
    if (!shape.ok()) return refuse(shape.status());
    shape_ = *shape;
    auto chunk = Dims(m.value("chunks", json()), "chunks");
    if (!chunk.ok()) return refuse(chunk.status());
    chunk_ = read_chunk_ = *chunk;
    auto dtype = ParseDataType(m.value("dtype", json()).dump(), 2);
    if (!dtype.ok()) return refuse(dtype.status());
    dtype_ = *dtype;
    auto fill = ParseFillValue(m.value("fill_value", json()).dump(), dtype_, 2);
    if (!fill.ok()) return refuse(fill.status());
    fill_ = *fill;
    if (m.contains("filters") && m["filters"].is_array() && !m["filters"].empty()) {
      std::vector<std::string> ids;
      for (const json& f : m["filters"]) ids.push_back(f.value("id", f.dump()));
      return refuse(absl::InvalidArgumentError(absl::StrCat(
          "filters ", absl::StrJoin(ids, ", "), " are not served (a compressor is)")));
    }
    separator_ = m.value("dimension_separator", ".");
    const std::string order = m.value("order", "C");
    Codec compressor;
    const bool compressed = m.contains("compressor") && !m["compressor"].is_null();
    if (compressed) {
      auto parsed = ParseV2Compressor(m["compressor"].dump());
      if (!parsed.ok()) return refuse(parsed.status());
      compressor = *parsed;
    }
    if (order == "F") {
      Codec t;
      t.name = t.label = "transpose";
      for (size_t d = shape_.size(); d-- > 0;) t.order.push_back(static_cast<int>(d));
      codecs_.push_back(t);
    } else if (order != "C") {
      return refuse(absl::InvalidArgumentError(absl::StrCat("order '", order, "'")));
    }
    if (compressed && compressor.name == "zfpy") {
      codecs_.push_back(compressor);
    } else {
      Codec bytes;
      bytes.name = bytes.label = "bytes";
      codecs_.push_back(bytes);
      if (compressed) codecs_.push_back(compressor);
    }
    const std::string attrs_path = dir_ + "/.zattrs";
    if (Exists(env_, attrs_path)) {
      SS_ASSIGN_OR_RETURN(const json attrs, ReadJson(env_, attrs_path));
      attributes_ = attrs.dump();
      record(attrs_path);
      if (attrs.contains("_ARRAY_DIMENSIONS") && attrs["_ARRAY_DIMENSIONS"].is_array()) {
        for (const json& n : attrs["_ARRAY_DIMENSIONS"]) {
          dimension_names_.push_back(n.is_string() ? n.get<std::string>() : "");
        }
      }
    }
  }
  if (chunk_.size() != shape_.size() || shape_.empty()) {
    return refuse(absl::InvalidArgumentError(absl::StrCat(
        "chunk shape ", json(chunk_).dump(), " does not fit the shape ", json(shape_).dump())));
  }
  for (uint64_t c : read_chunk_) {
    if (c == 0) return refuse(absl::InvalidArgumentError("a chunk dimension of 0"));
  }
  return absl::OkStatus();
}

std::string ZarrArray::Describe() const {
  std::vector<std::string> codecs;
  for (const Codec& c : codecs_) codecs.push_back(c.label);
  return absl::StrCat("v", zarr_format_, " ", dtype_.name, " ", json(shape_).dump(),
                      sharded_ ? absl::StrCat(", shards ", json(chunk_).dump(), " of chunks ")
                               : ", chunks ",
                      json(read_chunk_).dump(), ", ", absl::StrJoin(codecs, " + "));
}

std::string ZarrArray::KeyPath(absl::Span<const uint64_t> coords) const {
  std::string key = absl::StrJoin(coords, separator_);
  if (default_keys_) return absl::StrCat(dir_, "/c", coords.empty() ? "" : separator_, key);
  return absl::StrCat(dir_, "/", coords.empty() ? "0" : key);
}

std::shared_ptr<const ChunkData> ZarrArray::Filled() const {
  auto c = std::make_shared<ChunkData>();
  uint64_t n = 1;
  for (uint64_t d : read_chunk_) n *= d;
  c->bytes.resize(n * dtype_.size);
  for (uint64_t i = 0; i < n; ++i) std::memcpy(c->bytes.data() + i * dtype_.size, fill_.data(), fill_.size());
  return c;
}

absl::StatusOr<std::shared_ptr<const ChunkData>> ZarrArray::Decode(
    absl::Span<const uint64_t> coords, io::ReadStats* stats) const {
  // The stored chunk (or shard) and, for a shard, the inner chunk's place in it.
  std::vector<uint64_t> outer(coords.begin(), coords.end());
  uint64_t inner = 0, n_inner = 1;
  if (sharded_) {
    for (size_t d = 0; d < coords.size(); ++d) {
      const uint64_t per = chunk_[d] / read_chunk_[d];
      outer[d] = coords[d] / per;
      inner = inner * per + coords[d] % per;
      n_inner *= per;
    }
  }
  const std::string path = KeyPath(outer);
  absl::StatusOr<std::unique_ptr<env::RandomAccessFile>> f = env_->OpenRead(path);
  if (!f.ok() && !absl::IsNotFound(f.status())) return f.status();
  std::optional<FileIdentity> identity;
  uint64_t file_size = 0;
  if (f.ok()) {
    SS_ASSIGN_OR_RETURN(const env::FileStat st, (*f)->Stat());
    identity = FileIdentity::Of(st);
    file_size = st.size;
  }
  {
    // A chunk file is the one first read, or the array changed under the server.
    absl::MutexLock lock(&mu_);
    auto it = seen_.find(path);
    const bool differs =
        it != seen_.end() && (!identity.has_value() || it->second.inode != identity->inode ||
                              it->second.size != identity->size ||
                              it->second.mtime_ns != identity->mtime_ns ||
                              it->second.ctime_ns != identity->ctime_ns);
    if (differs) {
      if (changed_.empty()) changed_ = absl::StrCat(path, " changed since the server read it");
      return absl::DataLossError(absl::StrCat(changed_, "; the dataset is opened again"));
    }
    if (identity.has_value() && it == seen_.end()) seen_.emplace(path, *identity);
  }
  if (!identity.has_value()) return Filled();  // a chunk never written: the fill value

  ChunkBytes stored;
  if (!sharded_) {
    stored.resize(file_size);
    SS_RETURN_IF_ERROR(ReadExactly(**f, stored.data(), stored.size(), 0, path));
  } else {
    // The shard's index: (offset, size) little-endian uint64 pairs, one per inner chunk,
    // then a CRC-32C where index_codecs say so.
    const bool crc = !index_codecs_.empty() && index_codecs_.back().name == "crc32c";
    const uint64_t index_bytes = n_inner * 16 + (crc ? 4 : 0);
    if (file_size < index_bytes) {
      return absl::DataLossError(absl::StrCat(path, ": shard of ", file_size,
                                              " bytes, shorter than its index of ", index_bytes));
    }
    std::vector<uint8_t> index(index_bytes);
    const uint64_t index_at = index_at_start_ ? 0 : file_size - index_bytes;
    SS_RETURN_IF_ERROR(ReadExactly(**f, index.data(), index.size(), index_at, path));
    if (crc) {
      uint32_t want;
      std::memcpy(&want, index.data() + n_inner * 16, 4);
      if (Crc32c(index.data(), n_inner * 16) != want) {
        return absl::DataLossError(absl::StrCat(path, ": the shard index's CRC-32C does not match"));
      }
    }
    uint64_t at, size;
    std::memcpy(&at, index.data() + inner * 16, 8);
    std::memcpy(&size, index.data() + inner * 16 + 8, 8);
    if (at == UINT64_MAX && size == UINT64_MAX) {
      auto filled = Filled();
      auto c = std::make_shared<ChunkData>(*filled);
      c->file = identity;
      return std::shared_ptr<const ChunkData>(std::move(c));
    }
    if (at > file_size || size > file_size - at) {
      return absl::DataLossError(absl::StrCat(path, ": inner chunk ", inner, " at byte ", at,
                                              " of ", size, " bytes lies outside the shard of ",
                                              file_size));
    }
    stored.resize(size);
    SS_RETURN_IF_ERROR(ReadExactly(**f, stored.data(), size, at, path));
  }
  if (stats != nullptr) {
    ++stats->reads;
    stats->bytes_read += stored.size();
  }
  auto decoded = DecodeChunk(std::move(stored), codecs_, read_chunk_, dtype_);
  if (!decoded.ok()) {
    return absl::DataLossError(absl::StrCat(path, sharded_ ? absl::StrCat(" (inner chunk ", inner, ")") : "",
                                            ": ", decoded.status().message()));
  }
  auto c = std::make_shared<ChunkData>();
  c->bytes = std::move(*decoded);
  c->file = identity;
  return std::shared_ptr<const ChunkData>(std::move(c));
}

absl::StatusOr<std::shared_ptr<const ChunkData>> ZarrArray::Chunk(
    absl::Span<const uint64_t> coords, ChunkCache* cache, io::ReadStats* stats) const {
  uint64_t linear = 0;
  for (size_t d = 0; d < coords.size(); ++d) {
    const uint64_t n = (shape_[d] + read_chunk_[d] - 1) / read_chunk_[d];
    linear = linear * n + coords[d];
  }
  const ChunkCache::Key key{id_, linear};
  if (cache != nullptr) {
    std::shared_ptr<const ChunkData> hit = cache->Find(key);
    if (hit != nullptr) {
      // Kept only while its file is the one it was decoded from.
      std::vector<uint64_t> outer(coords.begin(), coords.end());
      if (sharded_) {
        for (size_t d = 0; d < coords.size(); ++d) outer[d] = coords[d] / (chunk_[d] / read_chunk_[d]);
      }
      const std::string path = KeyPath(outer);
      const absl::StatusOr<env::FileStat> st = env_->Stat(path);
      const bool exists = st.ok();
      bool same = exists == hit->file.has_value();
      if (same && exists) {
        const FileIdentity now = FileIdentity::Of(*st);
        same = now.inode == hit->file->inode && now.size == hit->file->size &&
               now.mtime_ns == hit->file->mtime_ns && now.ctime_ns == hit->file->ctime_ns;
      }
      if (same) return hit;
      cache->Erase(key);
    }
  }
  SS_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkData> chunk, Decode(coords, stats));
  if (cache != nullptr) cache->Insert(key, chunk);
  return chunk;
}

absl::StatusOr<std::vector<uint8_t>> ZarrArray::ReadAll() const {
  const size_t rank = shape_.size();
  const size_t elem = dtype_.size;
  uint64_t total = 1;
  for (uint64_t d : shape_) total *= d;
  std::vector<uint8_t> out(total * elem);
  if (total == 0) return out;
  std::vector<uint64_t> grid(rank), stride(rank, 1);
  for (size_t d = 0; d < rank; ++d) grid[d] = (shape_[d] + read_chunk_[d] - 1) / read_chunk_[d];
  for (size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * shape_[d];
  std::vector<uint64_t> c(rank, 0);
  while (true) {
    SS_ASSIGN_OR_RETURN(std::shared_ptr<const ChunkData> chunk, Chunk(c, nullptr, nullptr));
    // Copy the chunk's rows (runs along the last axis) that lie inside the array.
    std::vector<uint64_t> extent(rank);
    for (size_t d = 0; d < rank; ++d) {
      extent[d] = std::min(read_chunk_[d], shape_[d] - c[d] * read_chunk_[d]);
    }
    std::vector<uint64_t> i(rank, 0);
    while (true) {
      uint64_t src = 0, dst = 0;
      for (size_t d = 0; d < rank; ++d) {
        src = src * read_chunk_[d] + i[d];
        dst += (c[d] * read_chunk_[d] + i[d]) * stride[d];
      }
      std::memcpy(out.data() + dst * elem, chunk->bytes.data() + src * elem,
                  extent[rank - 1] * elem);
      size_t d = rank - 1;
      while (d-- > 0) {
        if (++i[d] < extent[d]) break;
        i[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    size_t d = rank;
    while (d-- > 0) {
      if (++c[d] < grid[d]) break;
      c[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
  return out;
}

absl::Status ZarrArray::CheckUnchanged() const {
  for (const auto& [path, identity] : metadata_) {
    SS_RETURN_IF_ERROR(identity.CheckUnchanged(path, env_));
  }
  absl::MutexLock lock(&mu_);
  if (!changed_.empty()) return absl::DataLossError(changed_);
  return absl::OkStatus();
}

}  // namespace shotstream::zarr
