//===- Bundle.cpp - compiled models as bundles ----------------------------===//
//
// Entry-point signatures, native object emission (MLIR's LLVM IR export and
// LLVM's code generator for the host CPU), and the bundle directory: the
// object linked into a shared library by the system compiler driver, the
// parameter file and the JSON manifest.
//
//===----------------------------------------------------------------------===//

#include "loom/Target/Bundle.h"

#include "dialects/Loom/LoomOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif

using namespace mlir;
using namespace mlir::loom;

//===----------------------------------------------------------------------===//
// Signatures
//===----------------------------------------------------------------------===//

static FailureOr<std::string> dtypeOf(Type type, Location loc) {
  if (type.isF32())
    return std::string("float32");
  if (type.isF64())
    return std::string("float64");
  if (type.isF16())
    return std::string("float16");
  if (type.isBF16())
    return std::string("bfloat16");
  if (type.isInteger(1))
    return std::string("bool");
  for (unsigned width : {8, 16, 32, 64})
    if (type.isInteger(width))
      return "int" + std::to_string(width);
  return emitError(loc) << "element type " << type
                        << " cannot cross the runtime boundary";
}

/// The dense little-endian bytes of an initial value.
static FailureOr<std::vector<char>> initialBytes(Attribute init,
                                                 RankedTensorType type,
                                                 Location loc) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return emitError(loc) << "the initial value of this parameter is missing";
    ArrayRef<char> data = blob->getData();
    return std::vector<char>(data.begin(), data.end());
  }
  auto dense = dyn_cast<DenseElementsAttr>(init);
  if (!dense || dense.getType() != type || type.getElementType().isInteger(1))
    return emitError(loc) << "unsupported initial value " << init;
  ArrayRef<char> raw = dense.getRawData();
  int64_t width = type.getElementTypeBitWidth() / 8;
  std::vector<char> bytes;
  bytes.reserve(type.getNumElements() * width);
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i)
    bytes.insert(bytes.end(), raw.begin() + (dense.isSplat() ? 0 : i * width),
                 raw.begin() + (dense.isSplat() ? 0 : i * width) + width);
  return bytes;
}

static FailureOr<EntryArgument>
makeArgument(Type type, DictionaryAttr attrs, EntryArgument::Kind kind,
             unsigned index, Location loc) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return emitError(loc) << "entry point argument #" << index
                          << " must be a statically shaped tensor, got "
                          << type;
  EntryArgument arg;
  arg.kind = kind;
  arg.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  FailureOr<std::string> dtype = dtypeOf(tensor.getElementType(), loc);
  if (failed(dtype))
    return failure();
  arg.dtype = *dtype;
  arg.bytes = mlir::loom::detail::tensorBytes(tensor);
  StringRef nameAttr = kind == EntryArgument::Kind::Parameter ? "loom.param"
                       : kind == EntryArgument::Kind::State   ? "loom.state"
                       : kind == EntryArgument::Kind::Input   ? "loom.input"
                       : kind == EntryArgument::Kind::Hyperparameter
                           ? "loom.hyperparam"
                           : "loom.output";
  auto name = attrs ? attrs.getAs<StringAttr>(nameAttr) : StringAttr();
  arg.name = name ? name.str()
                  : (kind == EntryArgument::Kind::Output ? "output"
                                                         : "input") +
                        std::to_string(index);
  if (kind == EntryArgument::Kind::Hyperparameter) {
    auto value = attrs.getAs<FloatAttr>("loom.default");
    if (!value || !tensor.getElementType().isF64() || tensor.getRank() != 0)
      return emitError(loc) << "hyperparameter '" << arg.name
                            << "' must be an f64 scalar with a loom.default";
    arg.name = "hparam." + arg.name;
    arg.defaultValue = value.getValueAsDouble();
  }
  if (kind == EntryArgument::Kind::Parameter) {
    FailureOr<std::vector<char>> bytes =
        initialBytes(attrs.get("loom.init"), tensor, loc);
    if (failed(bytes))
      return failure();
    arg.initialValue = std::move(*bytes);
  }
  if (auto updates = attrs ? attrs.getAs<StringAttr>("loom.update") : nullptr)
    arg.updates = updates.str();
  if (auto logical =
          attrs ? attrs.getAs<DenseI64ArrayAttr>("loom.logical_shape") : nullptr)
    arg.logicalShape.assign(logical.asArrayRef().begin(),
                            logical.asArrayRef().end());
  if (auto sharding = attrs ? attrs.getAs<ShardingAttr>("loom.sharding")
                            : nullptr) {
    bool split = false;
    for (unsigned d = 0; d < sharding.getDimAxes().size(); ++d) {
      std::vector<std::string> axes;
      for (StringRef axis : sharding.getAxesOfDim(d))
        axes.push_back(axis.str());
      split |= !axes.empty();
      arg.sharding.push_back(std::move(axes));
    }
    if (!split)
      arg.sharding.clear();
  }
  return arg;
}

/// The values an integer argument may hold where it indexes something: the
/// intersection over its uses as gather indices ([-rows, rows)) and as class
/// labels ([0, classes), plus the ignore index), looking through reshapes.
static void indexRange(BlockArgument arg, EntryArgument &out) {
  SmallVector<Value> worklist{arg};
  auto restrict = [&](int64_t lo, int64_t hi, StringRef meaning) {
    if (!out.indexMin || lo > *out.indexMin)
      out.indexMin = lo;
    if (!out.indexMax || hi < *out.indexMax) {
      out.indexMax = hi;
      out.indexMeaning = meaning.str();
    }
  };
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<ReshapeOp, ExpandOp>(user)) {
        worklist.push_back(user->getResult(0));
      } else if (auto gather = dyn_cast<GatherOp>(user)) {
        if (use.getOperandNumber() != 1)
          continue;
        int64_t rows = gather.getInput().getType().getDimSize(gather.getAxis());
        restrict(-rows, rows, "rows of the table it indexes");
      } else if (isa<SoftmaxCrossEntropyOp, NllLossOp>(user)) {
        if (use.getOperandNumber() != 1)
          continue;
        auto scores = cast<RankedTensorType>(user->getOperand(0).getType());
        restrict(0, scores.getDimSize(1), "classes of the loss");
        auto ignore = user->getAttrOfType<IntegerAttr>("ignore_index");
        if (ignore)
          out.ignoreIndex = ignore.getInt();
      }
    }
  }
}

FailureOr<SmallVector<EntrySignature>>
mlir::loom::collectEntrySignatures(ModuleOp module) {
  SmallVector<EntrySignature> entries;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    EntrySignature entry;
    entry.name = func.getSymName().str();
    for (unsigned i = 0; i < func.getNumArguments() && entry.mesh.empty(); ++i)
      if (auto sharding =
              func.getArgAttrOfType<ShardingAttr>(i, "loom.sharding"))
        if (auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
                func, sharding.getMesh()))
          for (auto [name, size] : llvm::zip(mesh.getMesh().getAxisNames(),
                                             mesh.getMesh().getAxisSizes()))
            entry.mesh.emplace_back(name.str(), size);
    // A pipeline stage's program runs on the mesh even when none of its
    // tensors is split.
    if (entry.mesh.empty() && func->hasAttr("loom.pipeline_stage"))
      if (auto mesh = module.lookupSymbol<MeshOp>("mesh"))
        for (auto [name, size] : llvm::zip(mesh.getMesh().getAxisNames(),
                                           mesh.getMesh().getAxisSizes()))
          entry.mesh.emplace_back(name.str(), size);
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      DictionaryAttr attrs = func.getArgAttrDict(i);
      bool isParam = attrs && attrs.get("loom.param") && attrs.get("loom.init");
      bool isState = attrs && attrs.get("loom.state");
      bool isHyper = attrs && attrs.get("loom.hyperparam");
      FailureOr<EntryArgument> arg = makeArgument(
          type, attrs,
          isParam   ? EntryArgument::Kind::Parameter
          : isState ? EntryArgument::Kind::State
          : isHyper ? EntryArgument::Kind::Hyperparameter
                    : EntryArgument::Kind::Input,
          i, func.getLoc());
      if (failed(arg))
        return failure();
      if (arg->kind == EntryArgument::Kind::Input &&
          getElementTypeOrSelf(type).isSignlessInteger())
        indexRange(func.getArgument(i), *arg);
      entry.arguments.push_back(std::move(*arg));
    }
    // Optimizer state has its parameter's shape: its logical shape too.
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
      auto of = func.getArgAttrOfType<StringAttr>(i, "loom.state_of");
      if (!of)
        continue;
      for (unsigned j = 0; j < func.getNumArguments(); ++j)
        if (func.getArgAttrOfType<StringAttr>(j, "loom.param") == of &&
            func.getArgumentTypes()[j] == type)
          entry.arguments[i].logicalShape = entry.arguments[j].logicalShape;
    }
    for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
      FailureOr<EntryArgument> arg =
          makeArgument(type, func.getResultAttrDict(i),
                       EntryArgument::Kind::Output, i, func.getLoc());
      if (failed(arg))
        return failure();
      entry.arguments.push_back(std::move(*arg));
    }
    // An update must name a parameter or state of the same entry point and
    // have its type, since the runtime swaps the two buffers.
    llvm::StringSet<> updatedNames;
    for (const EntryArgument &out : entry.arguments) {
      if (out.updates.empty())
        continue;
      if (!updatedNames.insert(out.updates).second)
        return func.emitError("two outputs update '") << out.updates << "'";
      auto target = llvm::find_if(entry.arguments, [&](const EntryArgument &a) {
        return a.name == out.updates &&
               (a.kind == EntryArgument::Kind::Parameter ||
                a.kind == EntryArgument::Kind::State);
      });
      if (target == entry.arguments.end() || target->dtype != out.dtype ||
          target->shape != out.shape)
        return func.emitError("output '")
               << out.name << "' updates '" << out.updates
               << "', which is not a parameter or state of the same type";
    }
    entries.push_back(std::move(entry));
  }
  if (entries.empty())
    return module.emitError("the module has no public function to compile");
  return entries;
}

//===----------------------------------------------------------------------===//
// Object emission
//===----------------------------------------------------------------------===//

/// Adds `void loom_entry_<name>(void **descriptors)` calling
/// `_mlir_ciface_<name>(descriptors[0], descriptors[1], ...)`: one symbol
/// with one signature per entry point, which the runtime can call without
/// knowing the arity at compile time.
static LogicalResult addPackedEntry(llvm::Module &module, StringRef name) {
  llvm::Function *callee = module.getFunction(("_mlir_ciface_" + name).str());
  if (!callee)
    return failure();
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptrType = llvm::PointerType::get(ctx, 0);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrType},
                                       /*isVarArg=*/false);
  auto *wrapper = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                         ("loom_entry_" + name).str(), module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  SmallVector<llvm::Value *> args;
  for (unsigned i = 0, e = callee->arg_size(); i < e; ++i) {
    llvm::Value *slot = builder.CreateConstGEP1_64(ptrType, wrapper->getArg(0), i);
    args.push_back(builder.CreateLoad(ptrType, slot));
  }
  builder.CreateCall(callee, args);
  builder.CreateRetVoid();
  return success();
}

namespace {
/// LLVM's diagnostics during code generation, printed as LLVM prints them,
/// less its "loop not vectorized" warnings: loom-vectorize-inner-loops asks
/// for every loop it deems vectorizable to be vectorized, and a loop LLVM
/// then declines (its legality checks see more than the pass: array bounds
/// it cannot identify, unsafe dependences) is the compiler's concern, not
/// the user's; it runs as scalar code.
struct CodegenDiagnostics : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo &info) override {
    return info.getKind() == llvm::DK_OptimizationFailure;
  }
};
} // namespace

LogicalResult mlir::loom::emitObjectFile(ModuleOp llvmModule,
                                         ArrayRef<EntrySignature> entries,
                                         unsigned optLevel,
                                         llvm::raw_pwrite_stream &os) {
  MLIRContext *context = llvmModule.getContext();
  registerBuiltinDialectTranslation(*context);
  registerLLVMDialectTranslation(*context);
  // CUDA host code: launches and the kernels' binaries (gpu.binary).
  registerGPUDialectTranslation(*context);
  registerNVVMDialectTranslation(*context);
  llvm::LLVMContext llvmContext;
  llvmContext.setDiagnosticHandler(std::make_unique<CodegenDiagnostics>());
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(llvmModule, llvmContext, "loom");
  if (!module)
    return llvmModule.emitError("cannot translate the module to LLVM IR");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvmModule.emitError("no code generator for ")
           << triple.str() << ": " << error;
  llvm::SubtargetFeatures features;
  for (const auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(feature, enabled);
  llvm::CodeGenOptLevel level = optLevel == 0 ? llvm::CodeGenOptLevel::None
                                : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                : optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                                : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(),
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine)
    return llvmModule.emitError("cannot create a target machine for ")
           << triple.str();
  module->setDataLayout(machine->createDataLayout());
  module->setTargetTriple(triple);

  for (const EntrySignature &entry : entries)
    if (failed(addPackedEntry(*module, entry.name)))
      return llvmModule.emitError("entry point @")
             << entry.name << " has no C interface to wrap";

  auto optimize = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                            machine.get());
  if (llvm::Error err = optimize(module.get()))
    return llvmModule.emitError("LLVM optimization failed: ")
           << llvm::toString(std::move(err));

  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return llvmModule.emitError("the target cannot emit object files");
  codegen.run(*module);
  return success();
}

//===----------------------------------------------------------------------===//
// Bundle directory
//===----------------------------------------------------------------------===//

static StringRef kindName(EntryArgument::Kind kind) {
  switch (kind) {
  case EntryArgument::Kind::Input:
    return "input";
  case EntryArgument::Kind::Parameter:
    return "parameter";
  case EntryArgument::Kind::State:
    return "state";
  case EntryArgument::Kind::Output:
    return "output";
  case EntryArgument::Kind::Hyperparameter:
    return "hyperparameter";
  }
  return "input";
}

static LogicalResult writeFile(Location loc, StringRef path,
                               llvm::function_ref<void(llvm::raw_ostream &)> fn) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return emitError(loc) << "cannot write " << path << ": " << ec.message();
  fn(os);
  os.close();
  if (os.has_error())
    return emitError(loc) << "cannot write " << path << ": "
                          << os.error().message();
  return success();
}

LogicalResult mlir::loom::writeBundle(ModuleOp llvmModule,
                                      ArrayRef<EntrySignature> entries,
                                      unsigned optLevel, StringRef path,
                                      DictionaryAttr training,
                                      StringRef target) {
  Location loc = llvmModule.getLoc();
  // Build everything in a fresh sibling directory, then move it in place.
  SmallString<256> model(path);
  model += ".tmp-%%%%%%";
  SmallString<256> tmpDir;
  llvm::sys::fs::createUniquePath(model, tmpDir, /*MakeAbsolute=*/false);
  if (std::error_code ec = llvm::sys::fs::create_directory(tmpDir))
    return emitError(loc) << "cannot create a directory next to " << path
                          << ": " << ec.message();
  llvm::scope_exit cleanup(
      [&] { (void)llvm::sys::fs::remove_directories(tmpDir); });
  auto inTmp = [&](StringRef file) {
    SmallString<256> p(tmpDir);
    llvm::sys::path::append(p, file);
    return std::string(p);
  };

  std::string object = inTmp("model.o");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(loc) << "cannot write " << object << ": "
                            << ec.message();
    if (failed(emitObjectFile(llvmModule, entries, optLevel, os)))
      return failure();
  }

  // The system compiler driver links the shared library (and libm, which
  // the generated code calls for erf, tanh and friends).
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return emitError(loc) << "cannot find the system compiler driver `cc` to "
                             "link the model's shared library";
  std::string library = inTmp("model.so");
  SmallVector<StringRef> args = {*cc, "-shared", "-o", library, object, "-lm"};
  std::string linkError;
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0,
                                &linkError) != 0)
    return emitError(loc) << "linking " << library << " failed"
                          << (linkError.empty() ? "" : ": ") << linkError;
  (void)llvm::sys::fs::remove(object);

  // Parameters, each 64-byte aligned and stored once however many entry
  // points take it.
  llvm::json::Array jsonEntries;
  std::vector<char> params;
  llvm::StringMap<int64_t> paramOffsets;
  for (const EntrySignature &entry : entries) {
    llvm::json::Array arguments;
    for (const EntryArgument &arg : entry.arguments) {
      llvm::json::Object obj{{"name", arg.name},
                             {"kind", kindName(arg.kind)},
                             {"dtype", arg.dtype},
                             {"shape", llvm::json::Array(arg.shape)}};
      if (arg.kind == EntryArgument::Kind::Parameter) {
        // Entry points share a parameter's bytes when name and value agree.
        auto it = paramOffsets.find(arg.name);
        int64_t size = arg.initialValue.size();
        bool same = it != paramOffsets.end() &&
                    it->second + size <= (int64_t)params.size() &&
                    std::equal(arg.initialValue.begin(),
                               arg.initialValue.end(),
                               params.begin() + it->second);
        if (!same) {
          params.resize(llvm::alignTo(params.size(), 64));
          paramOffsets[arg.name] = (int64_t)params.size();
          params.insert(params.end(), arg.initialValue.begin(),
                        arg.initialValue.end());
        }
        obj["offset"] = paramOffsets[arg.name];
        obj["bytes"] = (int64_t)arg.initialValue.size();
      }
      if (arg.kind == EntryArgument::Kind::State)
        obj["init"] = "zeros";
      if (arg.kind == EntryArgument::Kind::Hyperparameter)
        obj["default"] = arg.defaultValue;
      if (!arg.updates.empty())
        obj["updates"] = arg.updates;
      if (!arg.logicalShape.empty())
        obj["logical_shape"] = llvm::json::Array(arg.logicalShape);
      if (!arg.sharding.empty()) {
        llvm::json::Array dims;
        for (const std::vector<std::string> &axes : arg.sharding)
          dims.push_back(llvm::json::Array(axes));
        obj["sharding"] = std::move(dims);
      }
      if (arg.indexMin && arg.indexMax) {
        obj["index_range"] = llvm::json::Array{*arg.indexMin, *arg.indexMax};
        obj["index_meaning"] = arg.indexMeaning;
        if (arg.ignoreIndex)
          obj["ignore_index"] = *arg.ignoreIndex;
      }
      arguments.push_back(std::move(obj));
    }
    llvm::json::Object jsonEntry{{"name", entry.name},
                                 {"symbol", "loom_entry_" + entry.name},
                                 {"arguments", std::move(arguments)}};
    // The compiler's prediction of the temporaries' peak (loom-buffer-peak).
    if (auto peaks =
            llvmModule->getAttrOfType<DictionaryAttr>("loom.buffer_peak"))
      if (auto peak = peaks.getAs<IntegerAttr>(entry.name))
        jsonEntry["temporary_peak_bytes"] = peak.getInt();
    jsonEntries.push_back(std::move(jsonEntry));
  }
  if (failed(writeFile(loc, inTmp("params.bin"), [&](llvm::raw_ostream &os) {
        os.write(params.data(), params.size());
      })))
    return failure();

  llvm::json::Object manifest{
      {"format", "loom-bundle"},
      {"format_version", 1},
      {"loom_version", LOOM_VERSION},
      {"target",
       llvm::json::Object{{"kind", target},
                          {"triple", llvm::sys::getDefaultTargetTriple()},
                          {"cpu", llvm::sys::getHostCPUName().str()}}},
      {"library", "model.so"},
      {"parameters_file", "params.bin"},
      {"entry_points", std::move(jsonEntries)}};
  for (const EntrySignature &entry : entries) {
    if (entry.mesh.empty())
      continue;
    llvm::json::Array axes;
    for (const auto &[name, size] : entry.mesh)
      axes.push_back(llvm::json::Object{{"name", name}, {"size", size}});
    manifest["mesh"] = std::move(axes);
    break;
  }
  if (training) {
    llvm::json::Object config;
    for (NamedAttribute attr : training) {
      if (auto str = dyn_cast<StringAttr>(attr.getValue()))
        config[attr.getName().str()] = str.str();
      else if (auto f = dyn_cast<FloatAttr>(attr.getValue()))
        config[attr.getName().str()] = f.getValueAsDouble();
      else if (auto b = dyn_cast<BoolAttr>(attr.getValue()))
        config[attr.getName().str()] = b.getValue();
      else if (auto i = dyn_cast<IntegerAttr>(attr.getValue()))
        config[attr.getName().str()] = i.getInt();
    }
    manifest["training"] = std::move(config);
  }
  if (failed(writeFile(loc, inTmp("manifest.json"), [&](llvm::raw_ostream &os) {
        os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
           << "\n";
      })))
    return failure();

  // Swap the finished bundle in; an older one is removed only afterwards.
  std::string old;
  if (llvm::sys::fs::exists(path)) {
    old = (path + ".old").str();
    (void)llvm::sys::fs::remove_directories(old);
    if (std::error_code ec = llvm::sys::fs::rename(path, old))
      return emitError(loc) << "cannot replace " << path << ": "
                            << ec.message();
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpDir, path))
    return emitError(loc) << "cannot create " << path << ": " << ec.message();
  cleanup.release();
  if (!old.empty())
    (void)llvm::sys::fs::remove_directories(old);
  return success();
}
