//===- Trace.cpp - the process's timeline for loom-run --trace ------------===//
//
// Events are recorded in memory while tracing is on and written as Chrome
// trace events ("ph": "X", microseconds) by loom_trace_write. Compiled
// pipeline programs mark their actions with loom_rt_mark (loom.pipeline_mark).
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include "loom/runtime.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

namespace {

struct Event {
  std::string name;
  const char *cat;
  int64_t begin, end;
};

std::atomic<bool> on{false};
std::mutex mutex;
std::vector<Event> events;
/// The begin time of each open pipeline mark, by its code less the end bit.
thread_local std::map<int64_t, int64_t> open;

} // namespace

namespace loom::rt::trace {

bool enabled() { return on.load(std::memory_order_relaxed); }

int64_t now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record(std::string name, const char *cat, int64_t begin, int64_t end) {
  std::lock_guard<std::mutex> lock(mutex);
  events.push_back({std::move(name), cat, begin, end});
}

} // namespace loom::rt::trace

extern "C" {

/// Called by compiled pipeline programs at the start and end of each action:
/// code = kind << 40 | microbatch << 1 | end (kind 0 forward, 1 backward,
/// 2 weight gradients, 3 optimizer).
LOOM_API void loom_rt_mark(int64_t code) {
  if (!loom::rt::trace::enabled())
    return;
  int64_t key = code & ~(int64_t)1;
  if (!(code & 1)) {
    open[key] = loom::rt::trace::now();
    return;
  }
  auto it = open.find(key);
  if (it == open.end())
    return;
  static const char *kinds[] = {"forward", "backward", "weight", "optimizer"};
  int64_t kind = (code >> 40) & 3, microbatch = (code >> 1) & ((1ll << 39) - 1);
  std::string name = kinds[kind];
  if (kind != 3)
    name += " " + std::to_string(microbatch);
  loom::rt::trace::record(name, "compute", it->second, loom::rt::trace::now());
  open.erase(it);
}

LOOM_API void loom_trace_enable(int enable) { on = enable != 0; }

} // extern "C"

namespace loom::rt::trace {

/// The recorded events as Chrome trace JSON (written by Runtime.cpp's
/// loom_trace_write, which owns status creation).
bool writeJson(const std::string &path, int process, std::string &problem) {
  std::FILE *f = std::fopen(path.c_str(), "w");
  if (!f) {
    problem = "cannot write " + path;
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  std::fprintf(f,
               "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
               "\"args\": {\"name\": \"rank %d\"}}",
               process, process);
  for (const Event &e : events)
    std::fprintf(f,
                 ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", "
                 "\"pid\": %d, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f}",
                 e.name.c_str(), e.cat, process, e.begin / 1e3,
                 (e.end - e.begin) / 1e3);
  std::fprintf(f, "\n]}\n");
  bool ok = std::fclose(f) == 0;
  if (!ok)
    problem = "cannot write " + path;
  return ok;
}

} // namespace loom::rt::trace
