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

/// Resets the temporaries' peak of every device engine sessions opened
/// (Runtime.cpp); loom_memory_reset_peak resets both.
void resetDevicePeaks();

} // namespace loom::rt

#endif // LOOM_RUNTIME_ALLOCATOR_H
