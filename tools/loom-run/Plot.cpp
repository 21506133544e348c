//===- Plot.cpp - loss curves as PNG images -------------------------------===//

#include "Plot.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace {
constexpr int kWidth = 800, kHeight = 480, kMargin = 56;

/// A 5x7 bitmap font for axis labels: one 5-bit row mask per line, top
/// first, most significant bit leftmost.
struct Glyph {
  char c;
  unsigned char rows[7];
};
constexpr Glyph kFont[] = {
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},
    {'2', {14, 17, 1, 2, 4, 8, 31}},     {'3', {31, 2, 4, 2, 1, 17, 14}},
    {'4', {2, 6, 10, 18, 31, 2, 2}},     {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},
    {'8', {14, 17, 17, 14, 17, 17, 14}}, {'9', {14, 17, 17, 15, 1, 2, 12}},
    {'.', {0, 0, 0, 0, 0, 12, 12}},      {'-', {0, 0, 0, 31, 0, 0, 0}},
    {'e', {0, 0, 14, 17, 31, 16, 14}},   {'l', {12, 4, 4, 4, 4, 4, 14}},
    {'o', {0, 0, 14, 17, 17, 17, 14}},   {'s', {0, 0, 15, 16, 14, 1, 30}},
    {'t', {8, 8, 28, 8, 8, 9, 6}},       {'p', {0, 0, 30, 17, 30, 16, 16}},
    {'+', {0, 4, 4, 31, 4, 4, 0}},       {' ', {0, 0, 0, 0, 0, 0, 0}},
};

struct Canvas {
  std::vector<unsigned char> pixels =
      std::vector<unsigned char>(kWidth * kHeight * 3, 255);
  void set(int x, int y, const unsigned char *rgb) {
    if (x < 0 || y < 0 || x >= kWidth || y >= kHeight)
      return;
    std::copy(rgb, rgb + 3, &pixels[(y * kWidth + x) * 3]);
  }
  /// `text` with its top-left corner at (x, y), 2 pixels per font pixel.
  void text(int x, int y, const std::string &text, const unsigned char *rgb) {
    for (char c : text) {
      for (const Glyph &g : kFont) {
        if (g.c != c)
          continue;
        for (int r = 0; r < 7; ++r)
          for (int col = 0; col < 5; ++col)
            if (g.rows[r] & (16 >> col))
              for (int dy = 0; dy < 2; ++dy)
                for (int dx = 0; dx < 2; ++dx)
                  set(x + 2 * col + dx, y + 2 * r + dy, rgb);
      }
      x += 12;
    }
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
  // Axis labels: the value range on the left, the step range below.
  auto number = [](double v, const char *format = "%.6g") {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), format, v);
    return std::string(buffer);
  };
  canvas.text(4, kMargin - 7, number(ymax, "%.3g"), axis);
  canvas.text(4, kHeight - kMargin - 7, number(ymin, "%.3g"), axis);
  canvas.text(4, kHeight / 2 - 7, "loss", axis);
  canvas.text(kMargin, kHeight - kMargin + 10, number(xmin), axis);
  std::string last = number(xmax);
  canvas.text(kWidth - kMargin - 12 * (int)last.size(),
              kHeight - kMargin + 10, last, axis);
  canvas.text(kWidth / 2 - 24, kHeight - kMargin + 10, "step", axis);
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
