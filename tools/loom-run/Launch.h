//===- Launch.h - starting the local ranks of a run -------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_RUN_LAUNCH_H
#define LOOM_TOOLS_LOOM_RUN_LAUNCH_H

#include <string>
#include <vector>

/// Runs `args` as `nproc` local ranks with torchrun's variables (a TCP store
/// on `masterPort`, or a file store when 0), waits for them, and when one
/// fails names it and stops the others (SIGTERM, SIGKILL after `killAfter`
/// seconds). Returns 0 when every rank succeeded, else 1.
int launchRanks(unsigned nproc, unsigned masterPort, unsigned killAfter,
                std::vector<std::string> args);

#endif // LOOM_TOOLS_LOOM_RUN_LAUNCH_H
