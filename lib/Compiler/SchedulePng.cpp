//===- SchedulePng.cpp - a pipeline schedule as a Gantt chart -------------===//
//
// loomc --schedule-png: every stage's actions of the chosen schedule, placed
// in time by simulatePipeline (forward passes 1 unit, backward 2 or, split
// for zero-bubble, 1 + 1), as one row per stage; idle time stays grey.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Compiler.h"
#include "loom/Support/Canvas.h"

#include "passes/Transforms/Pipeline.h"

#include "mlir/IR/Diagnostics.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::loom;

LogicalResult mlir::loom::writeSchedulePng(StringRef path, StringRef kind,
                                           int64_t stages,
                                           int64_t microbatches,
                                           int64_t chunks, Location loc) {
  FailureOr<SmallVector<SmallVector<TimedAction>>> timeline =
      simulatePipeline(kind, stages, microbatches, chunks);
  if (failed(timeline))
    return emitError(loc) << "cannot simulate the " << kind
                          << " schedule of " << stages << " stages";
  double makespan = 0;
  for (const auto &stage : *timeline)
    for (const TimedAction &t : stage)
      makespan = std::max(makespan, t.end);
  const int left = 100, top = 56, row = 40, unit =
      std::max(16, std::min(48, (int)(1100 / std::max(makespan, 1.0))));
  ::loom::Canvas canvas(left + (int)(makespan * unit) + 24,
                        top + row * (int)stages + 48);
  const unsigned char ink[3] = {40, 40, 40}, idle[3] = {232, 232, 232},
                      white[3] = {255, 255, 255};
  const unsigned char colors[3][3] = {
      {31, 119, 180}, {44, 160, 44}, {255, 127, 14}};
  char title[160];
  std::snprintf(title, sizeof title,
                "%s, %lld stages%s, %lld microbatches: bubble %.3f",
                kind.str().c_str(), (long long)stages,
                chunks > 1 ? (" x " + std::to_string(chunks) + " chunks").c_str()
                           : "",
                (long long)microbatches, simulatedBubble(*timeline));
  canvas.text(left, 16, title, ink);
  for (auto [s, stage] : llvm::enumerate(*timeline)) {
    int y0 = top + (int)s * row, y1 = y0 + row - 8;
    canvas.text(8, y0 + 10, "rank " + std::to_string(s), ink);
    canvas.fill(left, y0, left + (int)(makespan * unit), y1, idle);
    for (const TimedAction &t : stage) {
      int x0 = left + (int)(t.start * unit), x1 = left + (int)(t.end * unit);
      // Odd chunks of the interleaved schedule in a darker shade.
      unsigned char color[3];
      for (int c = 0; c < 3; ++c)
        color[c] = (unsigned char)(colors[t.action.kind][c] *
                                   (t.action.chunk % 2 ? 0.65 : 1.0));
      canvas.fill(x0 + 1, y0, x1 - 1, y1, color);
      // With chunks, "microbatch.chunk" where it fits.
      std::string label = std::to_string(t.action.microbatch);
      if (chunks > 1 && (x1 - x0) >= 12 * (int)(label.size() + 2))
        label += "." + std::to_string(t.action.chunk);
      canvas.text((x0 + x1) / 2 - 6 * (int)label.size(), y0 + 10, label,
                  white);
    }
  }
  // The legend.
  int y = top + row * (int)stages + 12;
  const char *names[3] = {"F", "B", "W"};
  int x = left;
  for (int k = 0; k < 3; ++k) {
    if (k == 2 && kind != "zero-bubble")
      break;
    canvas.fill(x, y, x + 16, y + 16, colors[k]);
    canvas.text(x + 22, y + 1, names[k], ink);
    x += 60;
  }
  if (chunks > 1)
    canvas.text(x, y + 1, "(darker: odd chunks, labels microbatch.chunk)", ink);
  std::string error;
  if (!canvas.writePng(path.str(), error))
    return emitError(loc) << error;
  return success();
}
