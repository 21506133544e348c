//===- LowPrecision.h - bf16 and IEEE half as stored ----------------------===//
//
// The 16-bit float types compiled code computes with under mixed precision
// (loom-autocast), as the runtime's kernels and collectives see them: their
// bits, with conversions to and from f32 (round to nearest, ties to even, as
// the generated code's casts round).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_LOWPRECISION_H
#define LOOM_RUNTIME_LOWPRECISION_H

#include <cstdint>
#include <cstring>

namespace loom::rt {

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

inline float toFloat(float x) { return x; }
inline float toFloat(Bf16 x) {
  uint32_t bits = uint32_t(x.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline float toFloat(F16 x) {
  _Float16 h;
  std::memcpy(&h, &x.bits, sizeof h);
  return (float)h;
}

/// `f` as a `T`, rounded to nearest (ties to even); NaN stays NaN.
template <typename T> T fromFloat(float f);
template <> inline float fromFloat<float>(float f) { return f; }
template <> inline Bf16 fromFloat<Bf16>(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN: keep it quiet, not Inf
    return Bf16{uint16_t((bits >> 16) | 0x40)};
  bits += 0x7fff + ((bits >> 16) & 1);
  return Bf16{uint16_t(bits >> 16)};
}
template <> inline F16 fromFloat<F16>(float f) {
  _Float16 h = (_Float16)f;
  F16 x;
  std::memcpy(&x.bits, &h, sizeof h);
  return x;
}

} // namespace loom::rt

#endif // LOOM_RUNTIME_LOWPRECISION_H
