//===- ConvKernelTest.cpp - the runtime's im2col + GEMM convolution -------===//
//
// loom_kernel_conv2d_f32 against a direct six-deep loop, for grouped,
// strided and dilated convolutions, the 1x1 shortcut, and operands whose
// layouts are not dense (padded rows), which take the packing paths.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

/// MLIR's descriptor of a rank-5 f32 memref.
struct Desc5 {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[5];
  int64_t strides[5];
};

} // namespace

extern "C" void _mlir_ciface_loom_kernel_conv2d_f32(Desc5 *in, Desc5 *filter,
                                                    Desc5 *out, int64_t sh,
                                                    int64_t sw, int64_t dh,
                                                    int64_t dw);

namespace {

/// A [d0..d4] tensor stored with `pad` unused floats after each innermost
/// row, so that its layout is dense only when pad == 0.
struct Tensor5 {
  std::vector<float> storage;
  Desc5 desc{};
  Tensor5(std::array<int64_t, 5> shape, int64_t pad, float seed) {
    int64_t stride = 1;
    desc.strides[4] = 1;
    int64_t row = shape[4] + pad;
    stride = row;
    for (int d = 3; d >= 0; --d) {
      desc.strides[d] = stride;
      stride *= shape[d];
    }
    storage.resize(stride + 3);
    for (size_t i = 0; i < storage.size(); ++i)
      storage[i] = std::sin(seed + 0.37f * (float)i);
    for (int d = 0; d < 5; ++d)
      desc.sizes[d] = shape[d];
    desc.allocated = desc.aligned = storage.data();
    desc.offset = 3; // a view that does not start at the allocation
  }
  float &at(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) {
    return desc.aligned[desc.offset + a * desc.strides[0] + b * desc.strides[1] +
                        c * desc.strides[2] + d * desc.strides[3] +
                        e * desc.strides[4]];
  }
};

void checkConv(int64_t n, int64_t g, int64_t cg, int64_t fg, int64_t h,
               int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
               int64_t dh, int64_t dw, int64_t pad) {
  int64_t oh = (h - (kh - 1) * dh - 1) / sh + 1;
  int64_t ow = (w - (kw - 1) * dw - 1) / sw + 1;
  Tensor5 in({n, g, cg, h, w}, pad, 0.1f);
  Tensor5 filter({g, fg, cg, kh, kw}, pad, 1.7f);
  Tensor5 out({n, g, fg, oh, ow}, pad, 2.9f);
  // The kernel accumulates into out, as linalg.conv_2d_ngchw_gfchw.
  std::vector<double> want;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < g; ++b)
      for (int64_t f = 0; f < fg; ++f)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) {
            double sum = out.at(a, b, f, y, x);
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j)
                  sum += (double)in.at(a, b, c, y * sh + i * dh, x * sw + j * dw) *
                         filter.at(b, f, c, i, j);
            want.push_back(sum);
          }
  _mlir_ciface_loom_kernel_conv2d_f32(&in.desc, &filter.desc, &out.desc, sh,
                                      sw, dh, dw);
  size_t k = 0;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < g; ++b)
      for (int64_t f = 0; f < fg; ++f)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x, ++k)
            ASSERT_NEAR(out.at(a, b, f, y, x), want[k], 1e-4)
                << "at " << a << "," << b << "," << f << "," << y << "," << x;
}

TEST(ConvKernel, GroupedStridedDilated) {
  checkConv(/*n=*/2, /*g=*/2, /*cg=*/3, /*fg=*/4, /*h=*/9, /*w=*/8, /*kh=*/3,
            /*kw=*/2, /*sh=*/2, /*sw=*/1, /*dh=*/1, /*dw=*/2, /*pad=*/0);
}

TEST(ConvKernel, Depthwise) {
  checkConv(2, 5, 1, 1, 7, 7, 3, 3, 2, 2, 1, 1, 0);
}

TEST(ConvKernel, PointwiseShortcut) {
  checkConv(2, 1, 6, 5, 4, 5, 1, 1, 1, 1, 1, 1, 0);
}

TEST(ConvKernel, NonDenseLayouts) {
  // Rows padded by two floats: the filter and output go through packed
  // copies, and the 1x1 shortcut does not apply.
  checkConv(2, 2, 3, 2, 6, 7, 3, 3, 1, 2, 2, 1, /*pad=*/2);
  checkConv(1, 1, 4, 3, 5, 5, 1, 1, 1, 1, 1, 1, /*pad=*/1);
}

} // namespace
