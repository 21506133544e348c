//===- loomc.cpp - Loom's compiler driver ---------------------------------===//
//
// llc-style front end: `loomc MODEL.onnx|MODEL.mlir [--emit=PHASE] [-o OUT]`.
// Parses the command line and calls the compiler library.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Compiler.h"
#include "loom/InitAll.h"
#include "loom/Support/Diagnostics.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

static cl::OptionCategory loomcCategory("loomc options");

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx | model.mlir>"),
                                      cl::cat(loomcCategory));

static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(loomcCategory));

static cl::opt<mlir::loom::EmitPhase> emitPhase(
    "emit",
    cl::desc("Phase to stop after (default: bundle when -o ends in .loom, "
             "else loom)"),
    cl::values(clEnumValN(mlir::loom::EmitPhase::Loom, "loom",
                          "the loom dialect, as imported and simplified"),
               clEnumValN(mlir::loom::EmitPhase::Linalg, "linalg",
                          "linalg/tensor/arith/math on tensors"),
               clEnumValN(mlir::loom::EmitPhase::LLVM, "llvm",
                          "the LLVM dialect for CPUs"),
               clEnumValN(mlir::loom::EmitPhase::Obj, "obj",
                          "a native object file for this CPU"),
               clEnumValN(mlir::loom::EmitPhase::Bundle, "bundle",
                          "a bundle directory for loom-run and libloomrt")),
    cl::cat(loomcCategory));

static cl::opt<std::string> target("target",
                                  cl::desc("Device to compile for (cpu; the "
                                           "CUDA target comes later)"),
                                  cl::init("cpu"), cl::cat(loomcCategory));

static cl::opt<char> optLevel("O",
                              cl::desc("Optimization level: -O0 keeps the "
                                       "imported IR as is, -O1..-O3 simplify "
                                       "(default -O2)"),
                              cl::Prefix, cl::init('2'), cl::cat(loomcCategory));

static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape for a dynamic ONNX input, e.g. "
                         "--input-shape x=4x32 (repeatable)"),
                cl::value_desc("NAME=DIMS"), cl::cat(loomcCategory));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::ParseCommandLineOptions(argc, argv,
                              "loomc: compiles ONNX models for training with "
                              "Loom\n");

  mlir::loom::CompilerOptions options;
  options.inputPath = inputPath;
  options.outputPath = outputPath;
  if (emitPhase.getNumOccurrences())
    options.emit = emitPhase;
  if (optLevel < '0' || optLevel > '3') {
    WithColor::error(errs(), "loomc") << "invalid optimization level -O"
                                      << optLevel << " (expected 0-3)\n";
    return 1;
  }
  options.optLevel = optLevel - '0';
  if (target != "cpu") {
    WithColor::error(errs(), "loomc")
        << "target \"" << target << "\" is not supported (supported: cpu)\n";
    return 1;
  }
  for (const std::string &spec : inputShapes) {
    std::string error = mlir::loom::parseInputShapeOption(spec, options.import);
    if (!error.empty()) {
      WithColor::error(errs(), "loomc") << error << "\n";
      return 1;
    }
  }

  mlir::DialectRegistry registry;
  mlir::loom::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Errors name the ONNX node; a dump of the op adds noise, not information.
  context.printOpOnDiagnostic(false);
  mlir::loom::ToolDiagnosticHandler diagnostics(&context, errs());

  if (failed(mlir::loom::compile(context, options)))
    return 1;
  return 0;
}
