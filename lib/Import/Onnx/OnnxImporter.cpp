//===- OnnxImporter.cpp - ONNX models to the loom dialect -----------------===//
//
// Reads a model with ONNX's parser, runs ONNX's checker and shape inference,
// then walks the graph in order and emits loom ops. Every value is static:
// shape subgraphs (Shape, Gather, Concat, ...) fold to constants as they are
// built, so Reshape, Expand and friends see their target shapes.
//
// This file is compiled with exceptions (ONNX throws); no exception leaves it.
//
//===----------------------------------------------------------------------===//

#include "loom/Import/OnnxImporter.h"
#include "OnnxNodes.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/checker.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

FailureOr<Type> onnx_import::elementTypeOf(MLIRContext *ctx, int32_t type,
                                           Location loc) {
  Builder b(ctx);
  switch (type) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return b.getI8Type();
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return b.getI16Type();
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return b.getI32Type();
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return b.getI64Type();
  default:
    break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(type)
                         ? onnx::TensorProto::DataType_Name(
                               static_cast<onnx::TensorProto::DataType>(type))
                         : std::string("an unknown type");
  return emitError(loc) << "element type " << name << " (" << type
                        << ") is not supported";
}

/// Reads the little-endian elements of `tensor` into a DenseElementsAttr of
/// `type`, checking that the stored data has exactly as many elements as the
/// dims say.
static FailureOr<DenseElementsAttr> readTensor(const onnx::TensorProto &tensor,
                                               RankedTensorType type,
                                               Location loc) {
  int64_t count = type.getNumElements();
  auto mismatch = [&](int64_t found) {
    return emitError(loc) << "tensor \"" << tensor.name() << "\" has dims "
                          << "holding " << count << " elements but its data "
                          << "holds " << found;
  };
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError(loc) << "tensor \"" << tensor.name()
                          << "\" keeps its data in an external file, which "
                             "the importer does not read";
  Type element = type.getElementType();
  int32_t dtype = tensor.data_type();
  const std::string &raw = tensor.raw_data();
  bool hasRaw = tensor.has_raw_data();
  unsigned width = element.isInteger(1) ? 8 : element.getIntOrFloatBitWidth();
  // ONNX stores unsigned and narrow types widened; the byte width of each
  // element in raw_data is that of the ONNX type.
  if (hasRaw) {
    if ((int64_t)raw.size() != count * (int64_t)(width / 8))
      return mismatch(raw.size() / std::max(1u, width / 8));
    if (element.isInteger(1)) {
      SmallVector<bool> bits;
      for (char c : raw)
        bits.push_back(c != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
    }
    return DenseElementsAttr::getFromRawBuffer(type,
                                               ArrayRef<char>(raw.data(), raw.size()));
  }
  auto ints = [&](auto field) -> FailureOr<DenseElementsAttr> {
    if ((int64_t)field.size() != count)
      return mismatch(field.size());
    if (element.isInteger(1)) {
      SmallVector<bool> bits;
      for (auto v : field)
        bits.push_back(v != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
    }
    if (isa<FloatType>(element)) {
      // FLOAT16 and BFLOAT16 arrive as raw bit patterns in int32_data.
      SmallVector<APFloat> values;
      for (auto v : field)
        values.emplace_back(cast<FloatType>(element).getFloatSemantics(),
                            APInt(width, static_cast<uint64_t>(v)));
      return DenseElementsAttr::get(type, values);
    }
    SmallVector<APInt> values;
    for (auto v : field)
      values.emplace_back(width, static_cast<uint64_t>(v), /*isSigned=*/true);
    return DenseElementsAttr::get(type, values);
  };
  switch (dtype) {
  case onnx::TensorProto::FLOAT: {
    if (tensor.float_data_size() != count)
      return mismatch(tensor.float_data_size());
    SmallVector<float> values(tensor.float_data().begin(),
                              tensor.float_data().end());
    return DenseElementsAttr::get(type, ArrayRef<float>(values));
  }
  case onnx::TensorProto::DOUBLE: {
    if (tensor.double_data_size() != count)
      return mismatch(tensor.double_data_size());
    SmallVector<double> values(tensor.double_data().begin(),
                               tensor.double_data().end());
    return DenseElementsAttr::get(type, ArrayRef<double>(values));
  }
  case onnx::TensorProto::INT64:
    return ints(tensor.int64_data());
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    return ints(tensor.uint64_data());
  default:
    return ints(tensor.int32_data());
  }
}

FailureOr<DenseElementsAttr>
onnx_import::tensorToAttr(MLIRContext *ctx, const onnx::TensorProto &tensor,
                          Location loc) {
  FailureOr<Type> element = elementTypeOf(ctx, tensor.data_type(), loc);
  if (failed(element))
    return failure();
  SmallVector<int64_t> dims;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitError(loc) << "tensor \"" << tensor.name()
                            << "\" has a negative dimension " << d;
    dims.push_back(d);
  }
  return readTensor(tensor, RankedTensorType::get(dims, *element), loc);
}

/// ONNX's exception texts span lines; a diagnostic is one line.
static std::string oneLine(StringRef text) {
  std::string result;
  for (char c : text.trim())
    result.push_back(c == '\n' ? ' ' : c);
  return result;
}

//===----------------------------------------------------------------------===//
// Graph import
//===----------------------------------------------------------------------===//

namespace {

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, StringRef bufferName,
                const OnnxImportOptions &options)
      : ctx(ctx), builder(ctx), bufferName(bufferName), options(options) {}

  OwningOpRef<ModuleOp> run(onnx::ModelProto &model);

private:
  /// The type of a graph value. Inputs and intermediate values must be
  /// static; outputs may have dynamic dimensions (the graph decides them).
  FailureOr<RankedTensorType> valueType(const onnx::ValueInfoProto &info,
                                        Location loc, bool allowDynamic);
  /// Applies --input-shape to the model's inputs, before shape inference.
  LogicalResult fixInputShapes(onnx::GraphProto &graph, Location loc);
  LogicalResult checkBeforeInference(const onnx::ModelProto &model,
                                     Location loc);
  LogicalResult importNode(const onnx::NodeProto &node, unsigned index);
  Location graphLoc() { return FileLineColLoc::get(ctx, bufferName, 0, 0); }

  MLIRContext *ctx;
  OpBuilder builder;
  std::string bufferName;
  const OnnxImportOptions &options;
  int64_t opset = 0;
  /// Values by ONNX name.
  llvm::StringMap<Value> values;
  /// Static types ONNX's shape inference (or the model) declares, by name.
  llvm::StringMap<RankedTensorType> declared;
};

} // namespace

FailureOr<RankedTensorType>
GraphImporter::valueType(const onnx::ValueInfoProto &info, Location loc,
                         bool allowDynamic) {
  if (!info.type().has_tensor_type())
    return emitError(loc) << "value \"" << info.name()
                          << "\" is not a tensor; sequences, maps and optional "
                             "values are not supported";
  const auto &tensor = info.type().tensor_type();
  FailureOr<Type> element = elementTypeOf(ctx, tensor.elem_type(), loc);
  if (failed(element))
    return failure();
  if (!tensor.has_shape())
    return emitError(loc) << "value \"" << info.name()
                          << "\" has no shape; give one with --input-shape "
                          << info.name() << "=DIMSxDIMS";
  SmallVector<int64_t> dims;
  for (const auto &dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      dims.push_back(dim.dim_value());
      continue;
    }
    if (!allowDynamic)
      return emitError(loc)
             << "value \"" << info.name() << "\" has a dynamic dimension ("
             << (dim.has_dim_param() ? "\"" + dim.dim_param() + "\"" : "?")
             << "); fix it with --input-shape " << info.name() << "=...";
    dims.push_back(ShapedType::kDynamic);
  }
  return RankedTensorType::get(dims, *element);
}

LogicalResult GraphImporter::fixInputShapes(onnx::GraphProto &graph,
                                            Location loc) {
  llvm::StringSet<> used;
  for (auto &input : *graph.mutable_input()) {
    auto fixed = options.inputShapes.find(input.name());
    if (fixed == options.inputShapes.end())
      continue;
    used.insert(input.name());
    auto *tensor = input.mutable_type()->mutable_tensor_type();
    auto *shape = tensor->mutable_shape();
    if (tensor->has_shape() && shape->dim_size() != (int)fixed->second.size())
      return emitError(loc) << "--input-shape gives " << fixed->second.size()
                            << " dimensions for \"" << input.name()
                            << "\", which has rank " << shape->dim_size();
    shape->clear_dim();
    for (int64_t d : fixed->second)
      shape->add_dim()->set_dim_value(d);
  }
  for (const auto &entry : options.inputShapes)
    if (!used.contains(entry.getKey()))
      return emitError(loc) << "--input-shape names \"" << entry.getKey()
                            << "\", which is not an input of the model";
  // Shapes recorded by the exporter for intermediate values and outputs were
  // inferred from the old input shapes; shape inference recomputes them.
  if (!used.empty()) {
    graph.clear_value_info();
    for (auto &output : *graph.mutable_output())
      if (output.type().has_tensor_type())
        for (auto &dim : *output.mutable_type()
                              ->mutable_tensor_type()
                              ->mutable_shape()
                              ->mutable_dim())
          dim.clear_dim_value();
  }
  return success();
}

/// The rank of `name` where the graph declares it (inputs, initializers,
/// value_info), or -1.
static int64_t declaredRank(const onnx::GraphProto &graph,
                            const std::string &name) {
  for (const auto &init : graph.initializer())
    if (init.name() == name)
      return init.dims_size();
  auto fromInfo = [&](const auto &infos) -> int64_t {
    for (const auto &info : infos)
      if (info.name() == name && info.type().has_tensor_type() &&
          info.type().tensor_type().has_shape())
        return info.type().tensor_type().shape().dim_size();
    return -1;
  };
  int64_t rank = fromInfo(graph.input());
  return rank >= 0 ? rank : fromInfo(graph.value_info());
}

/// ONNX 1.12's shape inference reads past the input's dimensions for some
/// malformed nodes and crashes (found by fuzzing: LayerNormalization with an
/// axis beyond the input's rank). Those nodes are checked first: the input's
/// rank comes from the graph's declarations or, failing that, from shape
/// inference over the nodes before it, which cannot reach the bad node.
LogicalResult GraphImporter::checkBeforeInference(
    const onnx::ModelProto &model, Location loc) {
  const onnx::GraphProto &graph = model.graph();
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto &node = graph.node(k);
    if (node.op_type() != "LayerNormalization" || node.input_size() == 0)
      continue;
    int64_t axis = -1;
    for (const auto &attr : node.attribute())
      if (attr.name() == "axis")
        axis = attr.i();
    int64_t rank = declaredRank(graph, node.input(0));
    if (rank < 0) {
      onnx::ModelProto prefix = model;
      auto *nodes = prefix.mutable_graph()->mutable_node();
      nodes->erase(nodes->begin() + k, nodes->end());
      try {
        onnx::ShapeInferenceOptions options(true, 1, true);
        onnx::shape_inference::InferShapes(
            prefix, onnx::OpSchemaRegistry::Instance(), options);
      } catch (const std::exception &) {
        // The full inference reports this error before it reaches node k.
        return success();
      }
      rank = declaredRank(prefix.graph(), node.input(0));
    }
    if (rank >= 0 && (axis < -rank || axis >= rank))
      return emitError(loc) << "LayerNormalization node \"" << node.name()
                            << "\": axis " << axis
                            << " is out of range for an input of rank " << rank;
  }
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run(onnx::ModelProto &model) {
  Location loc = graphLoc();
  // Opsets.
  for (const auto &entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
    else if (entry.domain() == "com.microsoft")
      continue; // ONNX Runtime's contrib ops: MoE (version 1) is imported.
    else
      return emitError(loc) << "operator domain \"" << entry.domain()
                            << "\" is not supported",
             nullptr;
  }
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset) {
    emitError(loc) << "opset " << opset << " is not supported (Loom imports "
                   << "opsets " << kMinOnnxOpset << " to " << kMaxOnnxOpset
                   << ")";
    return nullptr;
  }
  if (model.functions_size() > 0) {
    emitError(loc) << "model-local functions are not supported";
    return nullptr;
  }

  if (failed(fixInputShapes(*model.mutable_graph(), loc)))
    return nullptr;

  // ONNX's checker, then shape inference (strict: a node whose inputs do not
  // fit it is an error).
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    emitError(loc) << "ONNX checker rejected the model: " << oneLine(e.what());
    return nullptr;
  }
  if (failed(checkBeforeInference(model, loc)))
    return nullptr;
  try {
    onnx::ShapeInferenceOptions inferOptions(/*check_type=*/true,
                                             /*strict_mode=*/1,
                                             /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       inferOptions);
  } catch (const std::exception &e) {
    emitError(loc) << "ONNX shape inference failed: " << oneLine(e.what());
    return nullptr;
  }

  const onnx::GraphProto &graph = model.graph();
  // Owned from the start, so that every early error return frees it.
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());

  // Declared types of intermediate values (only static ones are useful).
  for (const auto &info : graph.value_info()) {
    if (!info.type().has_tensor_type() ||
        !info.type().tensor_type().has_shape())
      continue;
    FailureOr<RankedTensorType> type = [&]() -> FailureOr<RankedTensorType> {
      ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
      return valueType(info, loc, /*allowDynamic=*/false);
    }();
    if (succeeded(type))
      declared[info.name()] = *type;
  }

  // Inputs: graph inputs that are not initializers, then float initializers
  // (parameters). Integer initializers become constants.
  llvm::StringMap<const onnx::TensorProto *> initializers;
  for (const auto &init : graph.initializer())
    initializers[init.name()] = &init;
  if (graph.sparse_initializer_size() > 0) {
    emitError(loc) << "sparse initializers are not supported";
    return nullptr;
  }

  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<DenseElementsAttr> paramValues;
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    FailureOr<RankedTensorType> type =
        valueType(input, NameLoc::get(builder.getStringAttr(input.name()), loc),
                  /*allowDynamic=*/false);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    paramValues.push_back({});
  }
  llvm::StringMap<DenseElementsAttr> constants;
  for (const auto &init : graph.initializer()) {
    Location initLoc = NameLoc::get(builder.getStringAttr(init.name()), loc);
    FailureOr<DenseElementsAttr> value = tensorToAttr(ctx, init, initLoc);
    if (failed(value))
      return nullptr;
    if (isa<FloatType>(value->getElementType())) {
      argTypes.push_back(value->getType());
      argNames.push_back(init.name());
      paramValues.push_back(*value);
    } else {
      constants[init.name()] = *value;
    }
  }

  SmallVector<RankedTensorType> declaredResults;
  for (const auto &output : graph.output()) {
    FailureOr<RankedTensorType> type = valueType(
        output, NameLoc::get(builder.getStringAttr(output.name()), loc),
        /*allowDynamic=*/true);
    if (failed(type))
      return nullptr;
    declaredResults.push_back(*type);
  }

  // The result types are those the graph computes; set once it is built.
  auto func = func::FuncOp::create(builder, loc, options.functionName,
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    Value arg = entry->getArgument(i);
    values[name] = arg;
    if (paramValues[i]) {
      func.setArgAttr(i, "loom.param", builder.getStringAttr(name));
      // Keep the initial value as a resource blob: printed once, compactly,
      // at the end of the module rather than inline.
      DenseElementsAttr init = paramValues[i];
      ArrayRef<char> raw = init.getRawData();
      if (init.isSplat()) {
        func.setArgAttr(i, "loom.init", init);
      } else {
        auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign(raw);
        func.setArgAttr(i, "loom.init",
                        DenseResourceElementsAttr::get(init.getType(), name,
                                                       std::move(blob)));
      }
    } else {
      func.setArgAttr(i, "loom.input", builder.getStringAttr(name));
    }
  }
  builder.setInsertionPointToStart(entry);
  for (auto &[name, value] : constants)
    values[name] = ConstantOp::create(
        builder, NameLoc::get(builder.getStringAttr(name), loc), value);

  // Nodes. ONNX requires topological order; a value used before it is made
  // (or never made) is reported by the node that uses it.
  for (auto [i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, i)))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    auto it = values.find(output.name());
    if (it == values.end() || !it->second) {
      emitError(NameLoc::get(builder.getStringAttr(output.name()), loc))
          << "graph output \"" << output.name()
          << "\" is not produced by any node, input or initializer";
      return nullptr;
    }
    Value value = it->second;
    if (failed(verifyCompatibleShape(declaredResults[i], value.getType())) ||
        declaredResults[i].getElementType() !=
            cast<RankedTensorType>(value.getType()).getElementType()) {
      emitError(value.getLoc())
          << "graph output \"" << output.name() << "\" is declared as "
          << declaredResults[i] << " but the graph computes "
          << value.getType();
      return nullptr;
    }
    results.push_back(value);
    resultTypes.push_back(value.getType());
  }
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "loom.output", builder.getStringAttr(output.name()));
  func::ReturnOp::create(builder, loc, results);

  // Parameters that only fed static operands (e.g. a Clip bound) are dropped.
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty() && func.getArgAttr(arg.getArgNumber(), "loom.param"))
      unused.set(arg.getArgNumber());
  if (failed(func.eraseArguments(unused)))
    return nullptr;

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &proto,
                                        unsigned index) {
  std::string name = proto.name().empty()
                         ? proto.op_type() + "_" + std::to_string(index)
                         : proto.name();
  Location loc = NameLoc::get(builder.getStringAttr(name), graphLoc());
  if (!proto.domain().empty() && proto.domain() != "ai.onnx" &&
      !(proto.domain() == "com.microsoft" && proto.op_type() == "MoE"))
    return emitError(loc) << proto.op_type() << " node \"" << name
                          << "\": operator domain \"" << proto.domain()
                          << "\" is not supported";
  SmallVector<Value> inputs;
  for (const std::string &input : proto.input()) {
    if (input.empty()) {
      inputs.push_back(Value());
      continue;
    }
    auto it = values.find(input);
    if (it == values.end())
      return emitError(loc) << proto.op_type() << " node \"" << name
                            << "\": input \"" << input
                            << "\" is not produced by any earlier node, graph "
                               "input or initializer";
    inputs.push_back(it->second);
  }
  SmallVector<RankedTensorType> expected;
  for (const std::string &output : proto.output())
    expected.push_back(declared.lookup(output));

  NodeContext node(proto, name, loc, builder, inputs, expected, opset);
  SmallVector<Value> outputs;
  if (failed(translateNode(node, outputs)))
    return failure();
  for (auto [i, output] : llvm::enumerate(proto.output())) {
    if (output.empty())
      continue;
    if (i >= outputs.size() || !outputs[i])
      return emitError(loc) << proto.op_type() << " node \"" << name
                            << "\": output #" << i << " (\"" << output
                            << "\") is not supported";
    // Loom's own shape inference must agree with ONNX's.
    if (expected[i] && expected[i] != outputs[i].getType())
      return emitError(loc) << proto.op_type() << " node \"" << name
                            << "\": ONNX infers " << expected[i]
                            << " for output \"" << output << "\" but Loom "
                            << "computes " << outputs[i].getType();
    values[output] = outputs[i];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
mlir::loom::importOnnxBuffer(MLIRContext *context, StringRef bytes,
                             StringRef bufferName, bool text,
                             const OnnxImportOptions &options) {
  context->loadDialect<LoomDialect, func::FuncDialect>();
  Location loc = FileLineColLoc::get(context, bufferName, 0, 0);
  onnx::ModelProto model;
  try {
    if (text) {
      std::string source = bytes.str();
      onnx::OnnxParser parser(source.c_str());
      auto status = parser.Parse(model);
      if (!status.IsOK()) {
        emitError(loc) << "cannot parse ONNX text: " << status.ErrorMessage();
        return nullptr;
      }
    } else if (!model.ParseFromArray(bytes.data(), bytes.size())) {
      emitError(loc) << "not a valid ONNX model (protobuf parsing failed)";
      return nullptr;
    }
  } catch (const std::exception &e) {
    emitError(loc) << "cannot parse ONNX model: " << oneLine(e.what());
    return nullptr;
  }
  if (!model.has_graph()) {
    emitError(loc) << "ONNX model has no graph";
    return nullptr;
  }
  try {
    GraphImporter importer(context, bufferName, options);
    return importer.run(model);
  } catch (const std::exception &e) {
    emitError(loc) << "ONNX import failed: " << oneLine(e.what());
    return nullptr;
  }
}

OwningOpRef<ModuleOp>
mlir::loom::importOnnxFile(MLIRContext *context, StringRef path,
                           const OnnxImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "cannot read \"" << path << "\": " << buffer.getError().message();
    return nullptr;
  }
  return importOnnxBuffer(context, (*buffer)->getBuffer(), path,
                          path.ends_with(".onnxtxt"), options);
}

bool mlir::loom::isOnnxOpSupported(StringRef opType) {
  return isSupportedOp(opType);
}

std::string mlir::loom::parseInputShapeOption(StringRef spec,
                                              OnnxImportOptions &options) {
  auto [name, dims] = spec.split('=');
  if (name.empty() || !spec.contains('='))
    return ("expected NAME=DIMS (e.g. x=4x32), got \"" + spec + "\"").str();
  SmallVector<int64_t> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t d;
      if (part.getAsInteger(10, d) || d < 0)
        return ("dimension \"" + part + "\" of --input-shape " + spec +
                " is not a non-negative integer")
            .str();
      shape.push_back(d);
    }
  }
  options.inputShapes[name] = shape;
  return "";
}
