//===- Plot.cpp - loss curves as PNG images -------------------------------===//

#include "Plot.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace {
constexpr int kWidth = 800, kHeight = 480, kMargin = 40;

struct Canvas {
  std::vector<unsigned char> pixels =
      std::vector<unsigned char>(kWidth * kHeight * 3, 255);
  void set(int x, int y, const unsigned char *rgb) {
    if (x < 0 || y < 0 || x >= kWidth || y >= kHeight)
      return;
    std::copy(rgb, rgb + 3, &pixels[(y * kWidth + x) * 3]);
  }
  /// A 2-pixel-wide line (Bresenham).
  void line(int x0, int y0, int x1, int y1, const unsigned char *rgb) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    while (true) {
      set(x0, y0, rgb);
      set(x0, y0 + 1, rgb);
      if (x0 == x1 && y0 == y1)
        break;
      int e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }
};
} // namespace

bool loom::writePlot(const std::string &path, const std::vector<Curve> &curves,
                     std::string &error) {
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const Curve &c : curves)
    for (auto [x, y] : c.points) {
      if (!std::isfinite(y))
        continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (!(xmin <= xmax)) {
    error = "nothing to plot";
    return false;
  }
  if (xmax == xmin)
    xmax = xmin + 1;
  if (ymax == ymin)
    ymax = ymin + 1;
  Canvas canvas;
  auto px = [&](double x) {
    return kMargin + (int)std::lround((x - xmin) / (xmax - xmin) *
                                      (kWidth - 2 * kMargin));
  };
  auto py = [&](double y) {
    return kHeight - kMargin -
           (int)std::lround((y - ymin) / (ymax - ymin) *
                            (kHeight - 2 * kMargin));
  };
  const unsigned char axis[3] = {60, 60, 60}, grid[3] = {220, 220, 220};
  for (int q = 1; q < 4; ++q) {
    int y = kMargin + q * (kHeight - 2 * kMargin) / 4;
    int x = kMargin + q * (kWidth - 2 * kMargin) / 4;
    canvas.line(kMargin, y, kWidth - kMargin, y, grid);
    canvas.line(x, kMargin, x, kHeight - kMargin, grid);
  }
  canvas.line(kMargin, kHeight - kMargin, kWidth - kMargin, kHeight - kMargin,
              axis);
  canvas.line(kMargin, kMargin, kMargin, kHeight - kMargin, axis);
  for (const Curve &c : curves) {
    const std::pair<double, double> *prev = nullptr;
    for (const auto &p : c.points) {
      if (!std::isfinite(p.second))
        continue;
      if (prev)
        canvas.line(px(prev->first), py(prev->second), px(p.first),
                    py(p.second), c.rgb);
      else
        canvas.set(px(p.first), py(p.second), c.rgb);
      prev = &p;
    }
  }

  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    error = "cannot write " + tmp;
    return false;
  }
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    std::remove(tmp.c_str());
    error = "libpng failed to write " + path;
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, kWidth, kHeight, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < kHeight; ++y)
    png_write_row(png, &canvas.pixels[y * kWidth * 3]);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  bool ok = std::fclose(f) == 0 && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok)
    error = "cannot write " + path;
  return ok;
}
