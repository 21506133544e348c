//===- Collectives.h - the communicator compiled collectives use ----------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_H
#define LOOM_RUNTIME_COLLECTIVES_H

#include "Comm.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::rt {

/// The communicator of the session whose entry point runs on this thread
/// (null outside a distributed session), set by loom_session_run.
extern thread_local comm::Communicator *currentCommunicator;
/// The first collective failure of the running entry point, if any.
extern thread_local std::string collectiveError;
/// The sizes of the running bundle's mesh axes (empty without a mesh).
extern thread_local std::vector<int64_t> currentMesh;

/// For a bundle whose buffers live on a device (null on the CPU): copies
/// `bytes` between host and device memory, either way, after the device
/// work queued so far; 0 on failure. Set by loom_session_run from the
/// bundle's engine; the collectives then exchange host copies of their
/// buffers.
extern thread_local int (*deviceCopy)(void *dst, const void *src, size_t bytes);

/// Waits until every message the running entry point sent has been taken
/// by its receiver; returns the failure, if any (called by
/// loom_session_run before the entry point's outputs are used).
std::string finishPointToPoint();

} // namespace loom::rt

#endif // LOOM_RUNTIME_COLLECTIVES_H
