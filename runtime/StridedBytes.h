//===- StridedBytes.h - a strided memref as raw bytes ----------*- C++ -*-===//
//
// What point-to-point messages move: a memref's elements, whatever their
// type, between its strided layout and a dense row-major buffer.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_STRIDEDBYTES_H
#define LOOM_RUNTIME_STRIDEDBYTES_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace loom::rt {

/// A strided memref of `element`-byte elements: its first element, sizes
/// and strides (in elements).
struct StridedBytes {
  char *data;
  size_t element;
  std::vector<int64_t> sizes, strides;

  size_t count() const {
    size_t n = 1;
    for (int64_t s : sizes)
      n *= (size_t)s;
    return n;
  }

  /// The number of trailing elements laid out contiguously, and the
  /// dimensions before them (a dense memref is one run of count()).
  size_t run(size_t &outerRank) const {
    size_t run = 1;
    outerRank = sizes.size();
    while (outerRank > 0 && (sizes[outerRank - 1] == 1 ||
                             strides[outerRank - 1] == (int64_t)run)) {
      run *= (size_t)sizes[outerRank - 1];
      --outerRank;
    }
    return run;
  }
  bool dense() const {
    size_t outerRank;
    run(outerRank);
    return outerRank == 0;
  }

  /// Copies between the memref and the dense row-major `packed` (resized to
  /// count() elements), one memcpy per contiguous run.
  void copy(std::vector<char> &packed, bool intoPacked) const {
    size_t n = count();
    packed.resize(n * element);
    if (n == 0)
      return;
    size_t outerRank;
    size_t runBytes = run(outerRank) * element;
    std::vector<int64_t> index(outerRank, 0);
    for (char *at = packed.data(), *end = at + n * element; at < end;
         at += runBytes) {
      int64_t offset = 0;
      for (size_t d = 0; d < outerRank; ++d)
        offset += index[d] * strides[d];
      char *view = data + offset * (int64_t)element;
      if (intoPacked)
        std::memcpy(at, view, runBytes);
      else
        std::memcpy(view, at, runBytes);
      for (size_t d = outerRank; d-- > 0;) {
        if (++index[d] < sizes[d])
          break;
        index[d] = 0;
      }
    }
  }
};

} // namespace loom::rt

#endif // LOOM_RUNTIME_STRIDEDBYTES_H
