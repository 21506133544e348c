//===- LoomAttrs.cpp - attributes of the loom dialect ---------------------===//
//
// Parsing, printing and verification of the mesh and sharding attributes.
//
//   #loom.mesh<dp = 2, tp = 2>
//   #loom.sharding<@mesh, [{dp}, {}], partial = {tp}>
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::loom;

#include "dialects/Loom/LoomEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/Loom/LoomAttrs.cpp.inc"

void LoomDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Loom/LoomAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater,
                                     parseAxis))
    return {};
  return MeshAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), names, sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(llvm::zip(getAxisNames(), getAxisSizes()), printer,
                        [&](auto axis) {
                          printer.printKeywordOrString(
                              std::get<0>(axis).getValue());
                          printer << " = " << std::get<1>(axis);
                        });
  printer << ">";
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> names,
                               ArrayRef<int64_t> sizes) {
  if (names.empty())
    return emitError() << "mesh must have at least one axis";
  if (names.size() != sizes.size())
    return emitError() << "mesh has " << names.size() << " axis names but "
                       << sizes.size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [name, size] : llvm::zip(names, sizes)) {
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" appears more than once";
    if (size <= 0)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" must have a positive size, got " << size;
  }
  return success();
}

std::optional<int64_t> MeshAttr::getAxisSize(StringRef name) const {
  for (auto [axis, size] : llvm::zip(getAxisNames(), getAxisSizes()))
    if (axis.getValue() == name)
      return size;
  return std::nullopt;
}

int64_t MeshAttr::getNumDevices() const {
  int64_t devices = 1;
  for (int64_t size : getAxisSizes())
    devices *= size;
  return devices;
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

/// Parses `{a, b}` into an array of string attributes.
static ParseResult parseAxisSet(AsmParser &parser, ArrayAttr &result) {
  SmallVector<Attribute> axes;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces, [&] {
        std::string name;
        if (parser.parseKeywordOrString(&name))
          return failure();
        axes.push_back(parser.getBuilder().getStringAttr(name));
        return success();
      }))
    return failure();
  result = parser.getBuilder().getArrayAttr(axes);
  return success();
}

static void printAxisSet(AsmPrinter &printer, ArrayAttr axes) {
  printer << "{";
  llvm::interleaveComma(axes, printer, [&](Attribute axis) {
    printer.printKeywordOrString(cast<StringAttr>(axis).getValue());
  });
  printer << "}";
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims;
  ArrayAttr partial = parser.getBuilder().getArrayAttr({});
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        ArrayAttr axes;
        if (parseAxisSet(parser, axes))
          return failure();
        dims.push_back(axes);
        return success();
      }))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisSet(parser, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return ShardingAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), mesh, parser.getBuilder().getArrayAttr(dims),
      partial);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getDimAxes(), printer, [&](Attribute axes) {
    printAxisSet(printer, cast<ArrayAttr>(axes));
  });
  printer << "]";
  if (!getPartialAxes().empty()) {
    printer << ", partial = ";
    printAxisSet(printer, getPartialAxes());
  }
  printer << ">";
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dimAxes,
                     ArrayAttr partialAxes) {
  if (!mesh)
    return emitError() << "sharding must name a mesh";
  llvm::StringSet<> seen;
  auto checkAxes = [&](Attribute attr) -> LogicalResult {
    auto axes = dyn_cast<ArrayAttr>(attr);
    if (!axes)
      return emitError() << "sharding axes must be an array of axis names";
    for (Attribute axis : axes) {
      auto name = dyn_cast<StringAttr>(axis);
      if (!name)
        return emitError() << "sharding axis must be a name, got " << axis;
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis \"" << name.getValue()
                           << "\" is used more than once in a sharding";
    }
    return success();
  };
  for (Attribute axes : dimAxes)
    if (failed(checkAxes(axes)))
      return failure();
  return checkAxes(partialAxes);
}

SmallVector<StringRef> ShardingAttr::getAxesOfDim(unsigned dim) const {
  SmallVector<StringRef> names;
  for (Attribute axis : cast<ArrayAttr>(getDimAxes()[dim]))
    names.push_back(cast<StringAttr>(axis).getValue());
  return names;
}

LogicalResult ShardingAttr::verifyFor(
    RankedTensorType type, MeshAttr mesh,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (static_cast<int64_t>(getDimAxes().size()) != type.getRank())
    return emitError() << "sharding has " << getDimAxes().size()
                       << " dimensions but the tensor has rank "
                       << type.getRank();
  auto axisSize = [&](StringRef name) -> FailureOr<int64_t> {
    if (std::optional<int64_t> size = mesh.getAxisSize(name))
      return *size;
    return emitError() << "mesh " << getMesh() << " has no axis \"" << name
                       << "\"";
  };
  for (unsigned dim = 0, e = type.getRank(); dim < e; ++dim) {
    int64_t product = 1;
    for (StringRef name : getAxesOfDim(dim)) {
      FailureOr<int64_t> size = axisSize(name);
      if (failed(size))
        return failure();
      product *= *size;
      int64_t extent = type.getDimSize(dim);
      if (!ShapedType::isDynamic(extent) && extent % product != 0)
        return emitError() << "mesh axis \"" << name << "\" of size " << *size
                           << " does not divide dimension " << dim << " (size "
                           << extent << ")"
                           << (product != *size ? " after the axes before it"
                                                : "");
    }
  }
  for (Attribute axis : getPartialAxes())
    if (failed(axisSize(cast<StringAttr>(axis).getValue())))
      return failure();
  return success();
}
