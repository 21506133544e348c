//===- TensorBoard.h - TensorBoard event files ------------------*- C++ -*-===//
//
// `loom-run train --tensorboard DIR` writes scalars the way TensorFlow's
// summary writers do: an `events.out.tfevents.*` file of TFRecord records
// (length, masked CRC-32C of the length, data, masked CRC-32C of the data),
// each the serialized `Event` protobuf (tensorflow/core/util/event.proto):
// first a `file_version` event, then one event per scalar with its step,
// wall time and a `Summary` holding `tag` and `simple_value`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_RUN_TENSORBOARD_H
#define LOOM_TOOLS_LOOM_RUN_TENSORBOARD_H

#include <cstdint>
#include <fstream>
#include <string>

namespace loom::run {

class EventWriter {
public:
  /// Creates DIR (and its parents) and a new event file in it; on failure
  /// returns false and sets `error`.
  bool open(const std::string &dir, std::string &error);
  bool isOpen() const { return out.is_open(); }
  /// Appends the scalar `value` of `tag` at `step` and flushes, so that a
  /// running TensorBoard sees it.
  void scalar(const std::string &tag, int64_t step, double value);
  const std::string &path() const { return file; }

private:
  void record(const std::string &event);
  std::ofstream out;
  std::string file;
};

} // namespace loom::run

#endif // LOOM_TOOLS_LOOM_RUN_TENSORBOARD_H
