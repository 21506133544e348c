//===- Canvas.cpp - small RGB pictures written as PNG ---------------------===//

#include "loom/Support/Canvas.h"

#include <png.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace loom;

namespace {
/// A 5x7 bitmap font: one 5-bit row mask per line, top first, most
/// significant bit leftmost.
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
    {'F', {31, 16, 16, 30, 16, 16, 16}}, {'B', {30, 17, 17, 30, 17, 17, 30}},
    {'W', {17, 17, 17, 21, 21, 21, 10}}, {'r', {0, 0, 22, 25, 16, 16, 16}},
    {'a', {0, 0, 14, 1, 15, 17, 15}},    {'n', {0, 0, 22, 25, 17, 17, 17}},
    {'k', {16, 16, 18, 20, 24, 20, 18}}, {'b', {16, 16, 22, 25, 17, 17, 30}},
    {'u', {0, 0, 17, 17, 17, 19, 13}},   {'=', {0, 0, 31, 0, 31, 0, 0}},
    {'/', {1, 1, 2, 4, 8, 16, 16}},      {'(', {2, 4, 8, 8, 8, 4, 2}},
    {')', {8, 4, 2, 2, 2, 4, 8}},        {',', {0, 0, 0, 0, 12, 4, 8}},
    {'m', {0, 0, 26, 21, 21, 17, 17}},   {'i', {4, 0, 12, 4, 4, 4, 14}},
    {'g', {0, 0, 15, 17, 15, 1, 14}},    {'h', {16, 16, 22, 25, 17, 17, 17}},
    {'c', {0, 0, 14, 16, 16, 17, 14}},   {'d', {1, 1, 13, 19, 17, 17, 15}},
    {'f', {6, 9, 8, 28, 8, 8, 8}},       {'w', {0, 0, 17, 17, 21, 21, 10}},
    {'x', {0, 0, 17, 10, 4, 10, 17}},    {'v', {0, 0, 17, 17, 17, 10, 4}},
    {':', {0, 12, 12, 0, 12, 12, 0}},    {'z', {0, 0, 31, 2, 4, 8, 31}},
    {'y', {0, 0, 17, 17, 15, 1, 14}},
};
} // namespace

Canvas::Canvas(int width, int height)
    : width_(width), height_(height),
      pixels_((size_t)width * height * 3, 255) {}

void Canvas::set(int x, int y, const unsigned char *rgb) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_)
    return;
  std::copy(rgb, rgb + 3, &pixels_[((size_t)y * width_ + x) * 3]);
}

void Canvas::fill(int x0, int y0, int x1, int y1, const unsigned char *rgb) {
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      set(x, y, rgb);
}

void Canvas::text(int x, int y, const std::string &text,
                  const unsigned char *rgb) {
  for (char c : text) {
    for (const Glyph &g : kFont) {
      if (g.c != c)
        continue;
      for (int r = 0; r < 7; ++r)
        for (int col = 0; col < 5; ++col)
          if (g.rows[r] & (16 >> col))
            fill(x + 2 * col, y + 2 * r, x + 2 * col + 2, y + 2 * r + 2, rgb);
    }
    x += 12;
  }
}

void Canvas::line(int x0, int y0, int x1, int y1, const unsigned char *rgb) {
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

bool Canvas::writePng(const std::string &path, std::string &error) const {
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
  png_set_IHDR(png, info, width_, height_, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height_; ++y)
    png_write_row(png, const_cast<png_bytep>(&pixels_[(size_t)y * width_ * 3]));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  bool ok = std::fclose(f) == 0 && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok)
    error = "cannot write " + path;
  return ok;
}
