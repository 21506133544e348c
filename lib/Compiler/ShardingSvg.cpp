//===- ShardingSvg.cpp - pictures of how parameters are split -------------===//
//
// `loomc --report-svg FILE`: every parameter of the training step as a grid
// of its blocks, each coloured by the set of ranks that hold it and labelled
// with them, as JAX's `visualize_array_sharding` draws one array.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Compiler.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

using namespace mlir;
using namespace mlir::loom;

namespace {

/// XML-escapes `text`.
std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// A fill colour for the `index`-th distinct set of ranks.
std::string colour(size_t index) {
  static const char *palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                  "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                  "#9c755f", "#bab0ac"};
  return palette[index % (sizeof(palette) / sizeof(palette[0]))];
}

} // namespace

LogicalResult mlir::loom::writeShardingSvg(ModuleOp module, StringRef entry,
                                           StringRef path) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func)
    return module.emitError() << "no function @" << entry << " to draw";
  SmallVector<std::pair<StringRef, int64_t>> mesh;
  for (auto meshOp : module.getOps<MeshOp>())
    for (auto [name, size] : llvm::zip(meshOp.getMesh().getAxisNames(),
                                       meshOp.getMesh().getAxisSizes()))
      mesh.push_back({name.getValue(), size});
  int64_t ranks = 1;
  for (auto &axis : mesh)
    ranks *= axis.second;

  std::string body;
  llvm::raw_string_ostream os(body);
  const int width = 480, left = 20, maxRowHeight = 48;
  int y = 20;
  std::string meshText;
  for (auto &[name, size] : mesh)
    meshText += (meshText.empty() ? "" : ", ") + name.str() + "=" +
                std::to_string(size);
  os << "<text x=\"" << left << "\" y=\"" << y
     << "\" font-size=\"16\" font-weight=\"bold\">parameters of @" << entry
     << " on mesh " << escape(meshText.empty() ? "(none)" : meshText)
     << "</text>\n";
  y += 18;
  os << "<text x=\"" << left << "\" y=\"" << y
     << "\" font-size=\"12\">each block labelled with the ranks that hold "
        "it; grey: every rank</text>\n";
  y += 20;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = func.getArgAttrOfType<StringAttr>(i, "loom.param");
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!name || !type)
      continue;
    auto sharding = func.getArgAttrOfType<ShardingAttr>(i, "loom.sharding");
    int64_t rank = type.getRank();
    // Per dimension: the mesh axes (as indices) splitting it.
    SmallVector<SmallVector<size_t>> dimAxes(rank);
    SmallVector<int64_t> blocks(rank, 1), whole(type.getShape());
    if (sharding)
      for (int64_t d = 0; d < rank; ++d)
        for (StringRef axis : sharding.getAxesOfDim(d))
          for (auto [a, m] : llvm::enumerate(mesh))
            if (m.first == axis) {
              dimAxes[d].push_back(a);
              blocks[d] *= m.second;
              whole[d] *= m.second;
            }
    // Rows: the blocks of dimension 0; columns: those of the others.
    int64_t rows = rank ? blocks[0] : 1, cols = 1;
    for (int64_t d = 1; d < rank; ++d)
      cols *= blocks[d];
    // The ranks holding each (row, column) block.
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> holders;
    for (int64_t r = 0; r < ranks; ++r) {
      SmallVector<int64_t> coords(mesh.size());
      for (int64_t a = mesh.size(), rest = r; a-- > 0;) {
        coords[a] = rest % mesh[a].second;
        rest /= mesh[a].second;
      }
      SmallVector<int64_t> index(rank, 0);
      for (int64_t d = 0; d < rank; ++d)
        for (size_t a : dimAxes[d])
          index[d] = index[d] * mesh[a].second + coords[a];
      int64_t row = rank ? index[0] : 0, col = 0;
      for (int64_t d = 1; d < rank; ++d)
        col = col * blocks[d] + index[d];
      holders[{row, col}].push_back(r);
    }
    std::string shape, split;
    for (int64_t d = 0; d < rank; ++d) {
      shape += (d ? "x" : "") + std::to_string(whole[d]);
      std::string axes;
      if (sharding)
        for (StringRef axis : sharding.getAxesOfDim(d))
          axes += (axes.empty() ? "" : ", ") + axis.str();
      split += (d ? ", {" : "{") + axes + "}";
    }
    if (auto logical =
            func.getArgAttrOfType<DenseI64ArrayAttr>(i, "loom.logical_shape")) {
      std::string onnx;
      for (auto [d, size] : llvm::enumerate(logical.asArrayRef()))
        onnx += (d ? "x" : "") + std::to_string(size);
      shape = onnx + " (viewed as " + shape + ")";
    }
    os << "<text x=\"" << left << "\" y=\"" << y + 14
       << "\" font-size=\"13\">" << escape(name.getValue()) << "  "
       << escape(shape) << "  [" << escape(split) << "]</text>\n";
    y += 20;
    int rowHeight = std::max<int>(18, maxRowHeight / std::max<int64_t>(1, rows));
    int cellWidth = width / cols;
    std::map<std::vector<int64_t>, size_t> setColour;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) {
        const std::vector<int64_t> &who = holders[{row, col}];
        auto [it, fresh] = setColour.try_emplace(who, setColour.size());
        std::string label;
        if ((int64_t)who.size() == ranks && ranks > 1) {
          label = "all ranks";
        } else {
          for (int64_t r : who)
            label += (label.empty() ? "" : ",") + std::to_string(r);
          label = (who.size() > 1 ? "ranks " : "rank ") + label;
        }
        int x0 = left + (int)col * cellWidth, y0 = y + (int)row * rowHeight;
        os << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\""
           << cellWidth << "\" height=\"" << rowHeight << "\" fill=\""
           << ((int64_t)who.size() == ranks ? std::string("#d9d9d9")
                                            : colour(it->second))
           << "\" stroke=\"white\"/>\n";
        os << "<text x=\"" << x0 + cellWidth / 2 << "\" y=\""
           << y0 + rowHeight / 2 + 4
           << "\" font-size=\"11\" text-anchor=\"middle\">" << escape(label)
           << "</text>\n";
      }
    y += (int)rows * rowHeight + 14;
  }

  std::string error;
  auto output = openOutputFile(path, &error);
  if (!output)
    return module.emitError() << error;
  output->os() << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
               << width + 2 * left << "\" height=\"" << y + 10
               << "\" font-family=\"sans-serif\">\n"
               << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
               << body << "</svg>\n";
  output->keep();
  return success();
}
