//===- MemRefDescriptor.h - MLIR's memref descriptor -----------*- C++ -*-===//
//
// The descriptor through which compiled code passes a memref to the
// runtime's kernels (MLIR's C interface: `_mlir_ciface_<name>` takes one
// pointer to it per memref argument). Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MEMREFDESCRIPTOR_H
#define LOOM_RUNTIME_MEMREFDESCRIPTOR_H

#include <cstdint>

namespace loom::rt {

/// MLIR's descriptor of a rank-`Rank` memref of `T`.
template <typename T, int Rank> struct Descriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
  T *data() const { return aligned + offset; }
};

} // namespace loom::rt

#endif // LOOM_RUNTIME_MEMREFDESCRIPTOR_H
