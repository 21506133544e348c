//===- Canvas.h - small RGB pictures written as PNG -------------*- C++ -*-===//
//
// What loom-run's loss curves and loomc's schedule pictures draw on: an RGB
// raster with rectangles, lines and a 5x7 bitmap font, written by libpng.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_CANVAS_H
#define LOOM_SUPPORT_CANVAS_H

#include <string>
#include <vector>

namespace loom {

class Canvas {
public:
  /// A white picture of `width` x `height` pixels.
  Canvas(int width, int height);
  int width() const { return width_; }
  int height() const { return height_; }
  void set(int x, int y, const unsigned char *rgb);
  /// The rectangle [x0, x1) x [y0, y1).
  void fill(int x0, int y0, int x1, int y1, const unsigned char *rgb);
  /// `text` with its top-left corner at (x, y), 2 pixels per font pixel
  /// (12 pixels per character); characters the font lacks are skipped.
  void text(int x, int y, const std::string &text, const unsigned char *rgb);
  /// A 2-pixel-wide line (Bresenham).
  void line(int x0, int y0, int x1, int y1, const unsigned char *rgb);
  /// Writes the picture as a PNG (through a temporary file renamed over
  /// `path`); fails with `error` set.
  bool writePng(const std::string &path, std::string &error) const;

private:
  int width_, height_;
  std::vector<unsigned char> pixels_;
};

} // namespace loom

#endif // LOOM_SUPPORT_CANVAS_H
