//===- Launch.cpp - loom-run launch: local ranks of a distributed run -----===//
//
//   loom-run launch --nproc N [--master-port P] [--kill-after S] -- COMMAND ...
//
// Starts N processes of COMMAND with the variables torchrun sets (RANK,
// LOCAL_RANK, WORLD_SIZE, and the rendezvous: a file store in a fresh
// temporary directory through LOOM_STORE, or the TCP store at
// 127.0.0.1:P through MASTER_ADDR/MASTER_PORT), waits for them, and when
// one fails (non-zero exit or a signal) names it and stops the others:
// SIGTERM, then SIGKILL after --kill-after seconds. Exits 0 when every rank
// succeeded, else 1. Unless LOOM_NUM_THREADS is set, each rank's thread pool
// gets an equal share of the CPUs (at least one thread). Ranks of one
// thread that outnumber the CPUs by a whole factor are pinned to one CPU
// each, as many on every CPU (LOOM_CPU_BIND=none leaves them to the
// operating system).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "Parallel.h"
#include "loom/Planner/Planner.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sched.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace llvm;

cl::SubCommand launchCommand(
    "launch", "Start N local ranks of a command with torchrun's variables, "
              "and stop them all if one fails (ranks of one thread that "
              "outnumber the CPUs by a whole factor are pinned, as many per "
              "CPU; LOOM_CPU_BIND=none leaves them to the system)");
static cl::opt<unsigned> nproc("nproc", cl::desc("Number of ranks (default 2)"),
                               cl::init(2), cl::sub(launchCommand));
static cl::opt<unsigned>
    masterPort("master-port",
               cl::desc("Rendezvous through the TCP store that rank 0 serves "
                        "on this port (default: a file store in a fresh "
                        "temporary directory)"),
               cl::init(0), cl::sub(launchCommand));
static cl::opt<unsigned>
    killAfter("kill-after",
              cl::desc("Seconds the other ranks get to exit after one fails, "
                       "before SIGKILL (default 5)"),
              cl::init(5), cl::sub(launchCommand));
static cl::list<std::string> command(cl::Positional, cl::OneOrMore,
                                     cl::desc("-- COMMAND [ARGS...]"),
                                     cl::sub(launchCommand));

namespace {

int launchError(const Twine &message) {
  return reportError("loom-run launch", message);
}

std::string describe(int status) {
  if (WIFEXITED(status))
    return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

/// Killed by SIGPIPE: the rank wrote to a peer that had gone.
bool brokenPipe(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE;
}

/// Killed by a signal that the rank's own fault or a kill raised.
bool crashed(int status) { return WIFSIGNALED(status) && !brokenPipe(status); }

} // namespace

int runLaunch() {
  return launchRanks(nproc, masterPort, killAfter,
                     std::vector<std::string>(command.begin(), command.end()),
                     {});
}

int launchRanks(unsigned nproc, unsigned masterPort, unsigned killAfter,
                std::vector<std::string> args, std::vector<int64_t> phases) {
  assert((phases.empty() || phases.size() == nproc) && "a phase per rank");
  if (nproc < 1)
    return launchError("--nproc must be at least 1");
  if (masterPort > 65535)
    return launchError("--master-port " + Twine(masterPort) + " is not a port");
  const char *bindChoice = std::getenv("LOOM_CPU_BIND");
  StringRef bind = bindChoice && *bindChoice ? bindChoice : "auto";
  if (bind != "auto" && bind != "none")
    return launchError("LOOM_CPU_BIND=" + bind + " is not one of auto, none");
  SmallString<128> store;
  if (!masterPort) {
    if (std::error_code ec =
            sys::fs::createUniqueDirectory("loom-rendezvous", store))
      return launchError("cannot create a rendezvous directory: " +
                         ec.message());
  }

  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  // Ranks share the CPUs instead of each starting a thread per CPU.
  bool threadsGiven = std::getenv("LOOM_NUM_THREADS");
  int threads = threadsGiven
                    ? loom::rt::configuredThreads()
                    : std::max(1, loom::rt::availableCpus() / int(nproc));
  std::string threadsPerRank = std::to_string(threads);

  // One-thread ranks that outnumber the CPUs by a whole factor are pinned
  // (plan::pinRanks, which the planner's step simulation follows): left to
  // the scheduler, the two ranks of one pipeline stage of a dp=2 x pp=2
  // run on 2 CPUs often shared a CPU while the other idled (the benchmark
  // GPT's step took 19.5-22.9 ms pinned one rank of each stage per CPU,
  // 36.5-38.0 ms with both ranks of a stage on one CPU, 25.9-27.3 ms
  // unpinned).
  std::vector<int> cpus;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &allowed))
        cpus.push_back(cpu);
  std::vector<int64_t> pins;
  if (bind == "auto" && !cpus.empty()) {
    phases.resize(nproc, 0);
    pins = mlir::loom::plan::pinRanks(phases, cpus.size(), threads);
  }
  if (!pins.empty()) {
    std::string line;
    raw_string_ostream os(line);
    os << "loom-run launch: " << nproc << " ranks on " << cpus.size()
       << " CPUs, pinned:";
    for (size_t i = 0; i < cpus.size(); ++i) {
      os << (i ? "," : "") << " ranks";
      for (unsigned r = 0; r < nproc; ++r)
        if (pins[r] == int64_t(i))
          os << " " << r;
      os << " on CPU " << cpus[i];
    }
    os << " (LOOM_CPU_BIND=none leaves them to the system)\n";
    errs() << line;
  }

  std::map<pid_t, int> ranks;
  for (unsigned r = 0; r < nproc; ++r) {
    pid_t pid = ::fork();
    if (pid < 0)
      return launchError("cannot start rank " + Twine(r) + ": " +
                         std::strerror(errno));
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      if (!pins.empty()) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[pins[r]], &one);
        // Without the pin the rank still runs, as the system places it.
        (void)::sched_setaffinity(0, sizeof(one), &one);
      }
      if (!threadsGiven)
        ::setenv("LOOM_NUM_THREADS", threadsPerRank.c_str(), 1);
      if (masterPort) {
        ::setenv("LOOM_STORE", "tcp", 1);
        ::setenv("MASTER_ADDR", "127.0.0.1", 1);
        ::setenv("MASTER_PORT", std::to_string(masterPort).c_str(), 1);
      } else {
        ::setenv("LOOM_STORE", ("file:" + store).str().c_str(), 1);
      }
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "loom-run launch: rank %u: cannot run %s: %s\n", r,
                   argv[0], std::strerror(errno));
      std::_Exit(127);
    }
    ranks[pid] = (int)r;
  }

  int firstFailed = -1;
  std::string firstStatus;
  auto deadline = std::chrono::steady_clock::time_point::max();
  bool killed = false;
  while (!ranks.empty()) {
    int status = 0;
    // Until a rank fails, wait without polling: each rank is reaped as it
    // ends, so the one that failed first is seen first.
    pid_t pid = ::waitpid(-1, &status, firstFailed < 0 ? 0 : WNOHANG);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid == 0) {
      if (firstFailed >= 0 && !killed &&
          std::chrono::steady_clock::now() > deadline) {
        for (auto &[p, r] : ranks)
          ::kill(p, SIGKILL);
        killed = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (pid < 0)
      break;
    auto it = ranks.find(pid);
    if (it == ranks.end())
      continue;
    int rank = it->second;
    ranks.erase(it);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || firstFailed >= 0)
      continue;
    // A rank that died makes its peers fail at their next collective,
    // almost at once: among the ranks that end within a moment of the
    // first failure, one killed by a signal is the cause. SIGPIPE is not:
    // it kills a rank that wrote to a peer that had already gone (Loom's
    // ranks ignore it, other commands may not), so when it is the first
    // failure seen, the first other failure in that moment is the cause.
    // Ranks reaped in the moment below still count among those stopped.
    size_t reaped = 0;
    if (!crashed(status)) {
      auto grace = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(200);
      while (!ranks.empty() && std::chrono::steady_clock::now() < grace) {
        int other = 0;
        pid_t done = ::waitpid(-1, &other, WNOHANG);
        if (done <= 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
        auto found = ranks.find(done);
        if (found == ranks.end())
          continue;
        int otherRank = found->second;
        ranks.erase(found);
        ++reaped;
        bool failed = !WIFEXITED(other) || WEXITSTATUS(other) != 0;
        if (crashed(other) || (failed && brokenPipe(status))) {
          rank = otherRank;
          status = other;
          if (crashed(other))
            break;
        }
      }
    }
    firstFailed = rank;
    firstStatus = describe(status);
    size_t stopping = ranks.size() + reaped;
    launchError("rank " + Twine(rank) + " of " + Twine(nproc) + " failed (" +
                firstStatus + "); stopping the other " + Twine(stopping) +
                " rank" + (stopping == 1 ? "" : "s"));
    for (auto &[p, r] : ranks)
      ::kill(p, SIGTERM);
    deadline = std::chrono::steady_clock::now() +
               std::chrono::seconds(killAfter);
  }
  if (!store.empty())
    (void)sys::fs::remove_directories(store);
  if (firstFailed >= 0)
    return launchError("the run failed: rank " + Twine(firstFailed) +
                       " failed first (" + firstStatus + ")");
  return 0;
}

int reportError(StringRef tool, const Twine &message) {
  std::string line;
  raw_string_ostream os(line);
  os.enable_colors(errs().has_colors());
  WithColor::error(os, tool) << message << "\n";
  errs() << line;
  return 1;
}

std::vector<std::string>
rankCommandLine(int argc, char **argv,
                std::initializer_list<const char *> launcherOptions) {
  std::vector<std::string> args{"/proc/self/exe"};
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    StringRef name = arg.starts_with("--") ? arg.drop_front(2)
                     : arg.starts_with("-") ? arg.drop_front(1)
                                            : StringRef();
    bool launcher = false, joined = false;
    for (StringRef option : launcherOptions) {
      if (name == option)
        launcher = true;
      else if (name.starts_with(option) && name.drop_front(option.size())
                                               .starts_with("="))
        launcher = joined = true;
    }
    if (!launcher)
      args.push_back(arg.str());
    else if (!joined)
      ++i; // its value
  }
  return args;
}
