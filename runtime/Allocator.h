//===- Allocator.h - the heap of compiled bundles ---------------*- C++ -*-===//
//
// What libloomrt's allocator of compiled code's temporaries can tell about
// itself (see Allocator.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ALLOCATOR_H
#define LOOM_RUNTIME_ALLOCATOR_H

#include <cstddef>

namespace loom::rt {

/// Bytes compiled code has asked for and not freed, and their most since
/// the process started or loom_memory_reset_peak.
void temporaryBytes(size_t *live, size_t *peak);

} // namespace loom::rt

#endif // LOOM_RUNTIME_ALLOCATOR_H
