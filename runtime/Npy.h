//===- Npy.h - numpy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes numpy's .npy format (versions 1-3, little-endian, C
// order), the tensor file format of loom-run. Part of the runtime's support
// code: no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_NPY_H
#define LOOM_RUNTIME_NPY_H

#include "loom/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::npy {

struct Array {
  loom_dtype_t dtype = LOOM_DTYPE_FLOAT32;
  std::vector<int64_t> shape;
  std::vector<char> data;
  size_t numElements() const;
};

/// Reads `path`; on failure returns false and sets `error`.
bool read(const std::string &path, Array &out, std::string &error);
/// Parses the `size` bytes of a .npy file at `data`; `name` (a path, or a
/// member of an archive) names it in `error`.
bool parse(const char *data, size_t size, const std::string &name,
           Array &out, std::string &error);
/// Writes `array` to `path` through a temporary file renamed into place.
bool write(const std::string &path, const Array &array, std::string &error);
/// Element `i` of dense little-endian `data` of `dtype`, as a double
/// (half and bfloat16 included; NaN for an unknown dtype).
double elementAsDouble(const char *data, loom_dtype_t dtype, size_t i);
/// The numpy descr of a dtype ("<f4", ...); empty when numpy has none
/// (bfloat16).
std::string descrOf(loom_dtype_t dtype);

} // namespace loom::npy

#endif // LOOM_RUNTIME_NPY_H
