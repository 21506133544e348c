//===- Training.cpp - data loading and checkpoints ------------------------===//

#include "Training.h"

#include "Files.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace loom;
using namespace loom::train;

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

bool Dataset::add(const std::string &name, npy::Array array,
                  std::string &error) {
  if (array.shape.empty()) {
    error = "\"" + name + "\" is a scalar; data arrays need a first "
            "dimension that indexes samples";
    return false;
  }
  if (!arrays.empty() && array.shape[0] != samples) {
    error = "\"" + name + "\" has " + std::to_string(array.shape[0]) +
            " samples but \"" + names[0] + "\" has " + std::to_string(samples);
    return false;
  }
  samples = array.shape[0];
  names.push_back(name);
  arrays.push_back(std::move(array));
  return true;
}

bool loom::train::readTokens(const std::string &path, const std::string &dtype,
                             int64_t length, npy::Array &inputs,
                             npy::Array &targets, std::string &error) {
  size_t width = dtype == "uint8"    ? 1
                 : dtype == "uint16" ? 2
                 : dtype == "int32"  ? 4
                                     : 0;
  if (!width) {
    error = "token dtype must be uint8, uint16 or int32, got \"" + dtype +
            "\"";
    return false;
  }
  std::vector<char> bytes;
  if (!loom::rt::readWholeFile(path, bytes)) {
    error = "cannot read token file " + path;
    return false;
  }
  if (bytes.size() % width) {
    error = path + " holds " + std::to_string(bytes.size()) +
            " bytes, not a whole number of " + dtype + " tokens";
    return false;
  }
  int64_t count = bytes.size() / width;
  int64_t windows = length > 0 ? (count - 1) / length : 0;
  if (windows <= 0) {
    error = path + " holds " + std::to_string(count) +
            " tokens, too few for one sequence of " + std::to_string(length);
    return false;
  }
  auto token = [&](int64_t i) -> int64_t {
    if (width == 1)
      return (unsigned char)bytes[i];
    if (width == 2) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * i, 2);
      return v;
    }
    int32_t v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    return v;
  };
  for (npy::Array *a : {&inputs, &targets}) {
    a->dtype = LOOM_DTYPE_INT64;
    a->shape = {windows, length};
    a->data.resize(windows * length * sizeof(int64_t));
  }
  auto *in64 = reinterpret_cast<int64_t *>(inputs.data.data());
  auto *out64 = reinterpret_cast<int64_t *>(targets.data.data());
  for (int64_t w = 0; w < windows; ++w)
    for (int64_t t = 0; t < length; ++t) {
      in64[w * length + t] = token(w * length + t);
      out64[w * length + t] = token(w * length + t + 1);
    }
  return true;
}

std::vector<int64_t> loom::train::permutation(int64_t n, uint64_t seed,
                                              uint64_t stream) {
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; ++i)
    p[i] = i;
  // Seeding from both numbers through seed_seq decorrelates the epochs.
  std::seed_seq sequence{(uint32_t)seed, (uint32_t)(seed >> 32),
                         (uint32_t)stream, (uint32_t)(stream >> 32)};
  std::mt19937_64 rng(sequence);
  for (int64_t i = n - 1; i > 0; --i) {
    // rng() % (i + 1) has a bias below 2^-40 for any dataset that fits in
    // memory, and unlike uniform_int_distribution it is the same everywhere.
    int64_t j = (int64_t)(rng() % (uint64_t)(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

DataLoader::DataLoader(const Dataset &data, std::vector<int64_t> samples,
                       int64_t batchSize, bool shuffle, uint64_t seed,
                       int64_t prefetch)
    : data_(data), samples_(std::move(samples)), batchSize_(batchSize),
      shuffle_(shuffle), seed_(seed), prefetch_(std::max<int64_t>(prefetch, 1)) {
  start();
}

DataLoader::~DataLoader() { stop(); }

int64_t DataLoader::batchesPerEpoch() const {
  return batchSize_ > 0 ? (int64_t)samples_.size() / batchSize_ : 0;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  if (!shuffle_)
    return samples_;
  std::vector<int64_t> p = permutation(samples_.size(), seed_, epoch);
  std::vector<int64_t> result(samples_.size());
  for (size_t i = 0; i < p.size(); ++i)
    result[i] = samples_[p[i]];
  return result;
}

std::vector<std::vector<char>>
DataLoader::make(Position at, const std::vector<int64_t> &ids) const {
  std::vector<std::vector<char>> batch;
  for (const npy::Array &array : data_.arrays) {
    size_t row = array.data.size() / std::max<int64_t>(array.shape[0], 1);
    std::vector<char> buffer(row * batchSize_);
    for (int64_t i = 0; i < batchSize_; ++i)
      std::memcpy(buffer.data() + i * row,
                  array.data.data() + ids[at.batch * batchSize_ + i] * row,
                  row);
    batch.push_back(std::move(buffer));
  }
  return batch;
}

void DataLoader::start() {
  stopping_ = false;
  worker_ = std::thread([this, at = next_]() mutable {
    int64_t perEpoch = batchesPerEpoch();
    std::vector<int64_t> ids;
    int64_t idsEpoch = -1;
    while (perEpoch > 0) {
      if (idsEpoch != at.epoch) { // one permutation per epoch
        ids = order(at.epoch);
        idsEpoch = at.epoch;
      }
      std::vector<std::vector<char>> batch = make(at, ids);
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock,
                    [&] { return stopping_ || ready_.size() < prefetch_; });
      if (stopping_)
        return;
      ready_.push_back(std::move(batch));
      changed_.notify_all();
      if (++at.batch == perEpoch) {
        at.batch = 0;
        ++at.epoch;
      }
    }
  });
}

void DataLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (worker_.joinable())
    worker_.join();
  ready_.clear();
}

void DataLoader::seek(Position position) {
  stop();
  // A position past the epoch's batches (from a checkpoint of other data)
  // restarts that epoch rather than reading past the samples.
  if (position.batch < 0 || position.batch >= batchesPerEpoch())
    position.batch = 0;
  next_ = position;
  start();
}

std::vector<std::vector<char>> DataLoader::next() {
  if (batchesPerEpoch() == 0)
    return {}; // nothing to serve; callers check batchesPerEpoch() first
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty(); });
  std::vector<std::vector<char>> batch = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  if (++next_.batch == batchesPerEpoch()) {
    next_.batch = 0;
    ++next_.epoch;
  }
  return batch;
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

// Layout: "LOOMCKPT", u32 version, u32 0, u64 header bytes, the JSON header,
// the tensor data, and a u64 FNV-1a checksum of header and data.
static const char kMagic[8] = {'L', 'O', 'O', 'M', 'C', 'K', 'P', 'T'};
static const uint32_t kVersion = 1;

static uint64_t fnv1a(uint64_t hash, const char *data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= (unsigned char)data[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

bool loom::train::gatherSession(loom_session_t *session, Checkpoint &ckpt,
                                std::string &error) {
  auto failed = [&](loom_status_t status) {
    error = loom_status_message(status);
    loom_status_free(status);
    return false;
  };
  // By name: a split tensor's gather is a collective, and the ranks of a
  // pipeline hold their tensors in different orders.
  std::map<std::string, size_t> byName;
  for (size_t i = 0, e = loom_session_tensor_count(session); i < e; ++i) {
    loom_tensor_info_t info;
    if (loom_status_t s = loom_session_tensor_info(session, i, &info))
      return failed(s);
    byName[info.name] = i;
  }
  std::string parameters;
  for (auto [name, i] : byName) {
    loom_tensor_info_t info;
    if (loom_status_t s = loom_session_tensor_info(session, i, &info))
      return failed(s);
    if (info.kind == LOOM_TENSOR_HYPERPARAMETER) {
      const void *data = nullptr;
      size_t bytes = 0;
      if (loom_status_t s = loom_session_tensor_data(session, i, &data, &bytes))
        return failed(s);
      double value = 0;
      std::memcpy(&value, data, sizeof value);
      ckpt.numbers[info.name] = value;
      continue;
    }
    if (info.kind != LOOM_TENSOR_PARAMETER && info.kind != LOOM_TENSOR_STATE)
      continue;
    npy::Array a;
    a.dtype = info.dtype;
    int32_t rank = 0;
    int64_t dims[LOOM_MAX_RANK];
    if (loom_status_t s =
            loom_session_tensor_whole_shape(session, i, &rank, dims))
      return failed(s);
    a.shape.assign(dims, dims + rank);
    a.data.resize(a.numElements() * loom_dtype_size(info.dtype));
    if (loom_status_t s =
            loom_session_tensor_gather(session, i, a.data.data(), a.data.size()))
      return failed(s);
    if (info.kind == LOOM_TENSOR_PARAMETER)
      parameters += (parameters.empty() ? "" : "\n") + std::string(info.name);
    if (std::string(info.name) == "step" && a.dtype == LOOM_DTYPE_INT64 &&
        a.data.size() == sizeof(int64_t)) {
      int64_t step = 0;
      std::memcpy(&step, a.data.data(), sizeof step);
      ckpt.numbers["step"] = (double)step;
    }
    ckpt.tensors[info.name] = std::move(a);
  }
  ckpt.strings["parameters"] = parameters;
  return true;
}

bool loom::train::writeCheckpoint(const std::string &path,
                                  const Checkpoint &checkpoint,
                                  std::string &error) {
  nlohmann::json header;
  header["tensors"] = nlohmann::json::array();
  uint64_t offset = 0;
  for (const auto &[name, array] : checkpoint.tensors) {
    header["tensors"].push_back({{"name", name},
                                 {"dtype", loom_dtype_name(array.dtype)},
                                 {"shape", array.shape},
                                 {"offset", offset},
                                 {"bytes", array.data.size()}});
    offset += array.data.size();
  }
  header["numbers"] = checkpoint.numbers;
  header["strings"] = checkpoint.strings;
  header["data_bytes"] = offset;
  std::string text =
      header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  uint64_t hash = 14695981039346656037ull;
  uint64_t headerBytes = text.size();
  uint32_t words[2] = {kVersion, 0};
  bool ok = std::fwrite(kMagic, 8, 1, f) == 1 &&
            std::fwrite(words, 8, 1, f) == 1 &&
            std::fwrite(&headerBytes, 8, 1, f) == 1 &&
            std::fwrite(text.data(), 1, text.size(), f) == text.size();
  hash = fnv1a(hash, text.data(), text.size());
  for (const auto &[name, array] : checkpoint.tensors) {
    ok = ok && std::fwrite(array.data.data(), 1, array.data.size(), f) ==
                   array.data.size();
    hash = fnv1a(hash, array.data.data(), array.data.size());
  }
  ok = ok && std::fwrite(&hash, 8, 1, f) == 1;
  ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write checkpoint " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool loom::train::readCheckpoint(const std::string &path,
                                 Checkpoint &checkpoint, std::string &error) {
  std::vector<char> bytes;
  if (!loom::rt::readWholeFile(path, bytes)) {
    error = "cannot read checkpoint " + path;
    return false;
  }
  auto corrupt = [&](const std::string &why) {
    error = "checkpoint " + path + " is corrupted or not a Loom checkpoint (" +
            why + ")";
    return false;
  };
  if (bytes.size() < 32 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return corrupt("no LOOMCKPT header");
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version != kVersion) {
    error = "checkpoint " + path + " has format version " +
            std::to_string(version) + "; this Loom reads version " +
            std::to_string(kVersion);
    return false;
  }
  uint64_t headerBytes;
  std::memcpy(&headerBytes, bytes.data() + 16, 8);
  if (headerBytes > bytes.size() - 32)
    return corrupt("truncated header");
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  uint64_t hash = fnv1a(14695981039346656037ull, bytes.data() + 24,
                        bytes.size() - 32);
  if (hash != stored)
    return corrupt("checksum mismatch: truncated or modified");
  nlohmann::json header = nlohmann::json::parse(
      bytes.begin() + 24, bytes.begin() + 24 + headerBytes, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return corrupt("unreadable header");
  const char *data = bytes.data() + 24 + headerBytes;
  uint64_t dataBytes = bytes.size() - 32 - headerBytes;
  try {
    if (header.value("data_bytes", (uint64_t)0) != dataBytes)
      return corrupt("data size differs from the header");
    for (const auto &t : header.at("tensors")) {
      npy::Array array;
      std::string dtype = t.at("dtype");
      bool known = false;
      for (int d = LOOM_DTYPE_FLOAT32; d <= LOOM_DTYPE_BOOL; ++d)
        if (dtype == loom_dtype_name((loom_dtype_t)d)) {
          array.dtype = (loom_dtype_t)d;
          known = true;
        }
      uint64_t offset = t.at("offset"), size = t.at("bytes");
      if (!known || offset + size > dataBytes)
        return corrupt("bad tensor record");
      array.shape = t.at("shape").get<std::vector<int64_t>>();
      array.data.assign(data + offset, data + offset + size);
      checkpoint.tensors[t.at("name")] = std::move(array);
    }
    checkpoint.numbers =
        header.at("numbers").get<std::map<std::string, double>>();
    checkpoint.strings =
        header.at("strings").get<std::map<std::string, std::string>>();
  } catch (const std::exception &e) {
    return corrupt(e.what());
  }
  return true;
}
