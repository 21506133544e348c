//===- Trace.h - the process's timeline for loom-run --trace ----*- C++ -*-===//

#ifndef LOOM_RUNTIME_TRACE_H
#define LOOM_RUNTIME_TRACE_H

#include <cstdint>
#include <string>

namespace loom::rt::trace {

/// Whether events are being recorded (loom_trace_enable).
bool enabled();
/// Nanoseconds on the system's monotonic clock (shared by the processes of
/// one machine, so their timelines line up).
int64_t now();
/// Records a complete event [begin, end) named `name` in category `cat`.
void record(std::string name, const char *cat, int64_t begin, int64_t end);
/// Writes the events as Chrome trace JSON with pid `process`; fails with
/// `problem` set.
bool writeJson(const std::string &path, int process, std::string &problem);

} // namespace loom::rt::trace

#endif // LOOM_RUNTIME_TRACE_H
