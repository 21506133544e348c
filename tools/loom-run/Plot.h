//===- Plot.h - loss curves as PNG images -----------------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_RUN_PLOT_H
#define LOOM_TOOLS_LOOM_RUN_PLOT_H

#include <string>
#include <utility>
#include <vector>

namespace loom {

/// One curve: (step, value) points and an RGB colour.
struct Curve {
  std::vector<std::pair<double, double>> points;
  unsigned char rgb[3];
};

/// Draws `curves` on shared axes (x: step, y: loss, both scaled to the data,
/// with light grid lines at 1/4, 1/2 and 3/4 and the ranges written at the
/// axes' ends) and writes a PNG with libpng.
bool writePlot(const std::string &path, const std::vector<Curve> &curves,
               std::string &error);

} // namespace loom

#endif // LOOM_TOOLS_LOOM_RUN_PLOT_H
