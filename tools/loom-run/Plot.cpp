//===- Plot.cpp - loss curves as PNG images -------------------------------===//

#include "Plot.h"

#include "loom/Support/Canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace {
constexpr int kWidth = 800, kHeight = 480, kMargin = 56;
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
  Canvas canvas(kWidth, kHeight);
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

  return canvas.writePng(path, error);
}
