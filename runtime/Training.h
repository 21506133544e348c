//===- Training.h - data loading and checkpoints ----------------*- C++ -*-===//
//
// What a training loop needs around libloomrt's sessions: a deterministic,
// prefetching data loader over in-memory arrays (from .npy files or token
// files) and checkpoints of parameters and optimizer state. No MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_TRAINING_H
#define LOOM_RUNTIME_TRAINING_H

#include "Npy.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace loom::train {

/// Named arrays whose first dimension indexes the same samples.
struct Dataset {
  std::vector<std::string> names;
  std::vector<npy::Array> arrays;
  int64_t samples = 0;

  /// Adds `array` as `name`; fails (with `error`) if its sample count
  /// differs from the arrays already there.
  bool add(const std::string &name, npy::Array array, std::string &error);
};

/// Cuts a flat file of token ids (`uint8` (bytes of a text: a character-level
/// vocabulary), `uint16` or `int32`, little-endian) into
/// consecutive windows of `length + 1` tokens: `inputs[i]` holds the first
/// `length` tokens of window i and `targets[i]` the last `length` (next-token
/// prediction), both as int64 arrays `[windows, length]`.
bool readTokens(const std::string &path, const std::string &dtype,
                int64_t length, npy::Array &inputs, npy::Array &targets,
                std::string &error);

/// The position of a loader in its stream of batches.
struct Position {
  int64_t epoch = 0;
  int64_t batch = 0; ///< batches already taken in this epoch
};

/// Serves fixed-size batches of a subset of a dataset's samples, epoch after
/// epoch. The order within epoch e is a permutation drawn from (seed, e)
/// alone, so a loader moved to a position continues exactly as one that got
/// there batch by batch. A background thread prepares the next batches. The
/// last incomplete batch of an epoch is dropped.
class DataLoader {
public:
  DataLoader(const Dataset &data, std::vector<int64_t> samples,
             int64_t batchSize, bool shuffle, uint64_t seed,
             int64_t prefetch = 2);
  ~DataLoader();
  DataLoader(const DataLoader &) = delete;
  DataLoader &operator=(const DataLoader &) = delete;

  int64_t batchesPerEpoch() const;
  /// Where the next batch comes from.
  Position position() const { return next_; }
  /// Restarts at `position` (discarding prefetched batches).
  void seek(Position position);
  /// The next batch: one dense buffer per array of the dataset, in order.
  std::vector<std::vector<char>> next();

private:
  std::vector<int64_t> order(int64_t epoch) const;
  std::vector<std::vector<char>> make(Position at,
                                      const std::vector<int64_t> &ids) const;
  void start();
  void stop();

  const Dataset &data_;
  std::vector<int64_t> samples_;
  int64_t batchSize_;
  bool shuffle_;
  uint64_t seed_;
  size_t prefetch_;
  Position next_;

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<std::vector<char>>> ready_;
  bool stopping_ = false;
};

/// The permutation of [0, n) for (seed, stream), by Fisher-Yates with
/// std::mt19937_64 (whose output the C++ standard fixes).
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream);

/// A checkpoint: named tensors plus a JSON-serializable record of where
/// training stands (step, data position, early-stopping state, ...).
struct Checkpoint {
  std::map<std::string, npy::Array> tensors;
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> strings;
};

/// Adds what a checkpoint keeps of `session` to `checkpoint`: the whole
/// value of every parameter and state tensor (a collective when one is split
/// over the run's ranks: every rank calls it), the run-time hyperparameters
/// as numbers "hparam.<name>", the step counter as "step", and the
/// parameters' names, one per line, as the string "parameters" (what
/// --init-from loads). On failure returns false and sets `error`.
bool gatherSession(loom_session_t *session, Checkpoint &checkpoint,
                   std::string &error);

/// Writes `checkpoint` to `path` atomically: a temporary file in the same
/// directory, flushed to disk, then renamed over `path`. The file holds a
/// checksum of everything in it.
bool writeCheckpoint(const std::string &path, const Checkpoint &checkpoint,
                     std::string &error);
/// Reads and verifies a checkpoint; a truncated or corrupted file fails
/// with a message that says so.
bool readCheckpoint(const std::string &path, Checkpoint &checkpoint,
                    std::string &error);

} // namespace loom::train

#endif // LOOM_RUNTIME_TRAINING_H
