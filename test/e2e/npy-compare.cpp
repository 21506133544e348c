//===- npy-compare.cpp - compares two .npy files numerically --------------===//
//
//   npy-compare ACTUAL.npy EXPECTED.npy [--rtol R]
//
// Passes (exit 0) when the arrays have the same shape and
// max|actual - expected| <= R * max|expected| (a norm-wise relative error,
// which stays meaningful where single elements are near zero). Prints the
// error either way. Integer and bool arrays must match exactly.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static double element(const loom::npy::Array &a, size_t i) {
  return loom::npy::elementAsDouble(a.data.data(), a.dtype, i);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: npy-compare ACTUAL EXPECTED [--rtol R]\n");
    return 2;
  }
  double rtol = 1e-4;
  for (int i = 3; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--rtol")
      rtol = std::atof(argv[i + 1]);
  loom::npy::Array actual, expected;
  std::string error;
  if (!loom::npy::read(argv[1], actual, error) ||
      !loom::npy::read(argv[2], expected, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  if (actual.shape != expected.shape) {
    std::fprintf(stderr, "error: shapes differ (%zu vs %zu dimensions)\n",
                 actual.shape.size(), expected.shape.size());
    return 1;
  }
  bool exact = expected.dtype != LOOM_DTYPE_FLOAT32 &&
               expected.dtype != LOOM_DTYPE_FLOAT64;
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0, n = expected.numElements(); i < n; ++i) {
    double a = element(actual, i), b = element(expected, i);
    if (std::isnan(a) != std::isnan(b)) {
      std::fprintf(stderr, "error: element %zu is %g, expected %g\n", i, a, b);
      return 1;
    }
    if (!std::isnan(b)) {
      maxDiff = std::fmax(maxDiff, std::fabs(a - b));
      maxRef = std::fmax(maxRef, std::fabs(b));
    }
  }
  double relative = maxRef > 0 ? maxDiff / maxRef : maxDiff;
  bool ok = exact ? maxDiff == 0 : relative <= rtol;
  std::printf("%s: max abs error %.3g, relative %.3g (tolerance %s)\n",
              ok ? "match" : "MISMATCH", maxDiff, relative,
              exact ? "exact" : std::to_string(rtol).c_str());
  return ok ? 0 : 1;
}
