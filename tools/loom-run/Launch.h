//===- Launch.h - starting the local ranks of a run -------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_RUN_LAUNCH_H
#define LOOM_TOOLS_LOOM_RUN_LAUNCH_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

/// Prints `tool: error: message` to stderr in one write, so that the lines
/// of ranks and their launcher sharing one stderr do not interleave
/// mid-line (llvm::WithColor on errs() writes prefix, label and message
/// separately). Colored when stderr is a terminal. Returns 1.
int reportError(llvm::StringRef tool, const llvm::Twine &message);

/// Runs `args` as `nproc` local ranks with torchrun's variables (a TCP store
/// on `masterPort`, or a file store when 0), waits for them, and when one
/// fails names it and stops the others (SIGTERM, SIGKILL after `killAfter`
/// seconds). Returns 0 when every rank succeeded, else 1. `phases` (one per
/// rank, or none: all alike) says which ranks compute at the same time, for
/// pinning ranks that outnumber the CPUs (plan::pinRanks) unless
/// LOOM_CPU_BIND=none.
int launchRanks(unsigned nproc, unsigned masterPort, unsigned killAfter,
                std::vector<std::string> args, std::vector<int64_t> phases);

/// This process's command line (as /proc/self/exe) without the options
/// named in `launcherOptions` (each with its value, as `--name V` or
/// `--name=V`, one or two dashes): what each rank of a command that starts
/// its own ranks runs.
std::vector<std::string>
rankCommandLine(int argc, char **argv,
                std::initializer_list<const char *> launcherOptions);

#endif // LOOM_TOOLS_LOOM_RUN_LAUNCH_H
