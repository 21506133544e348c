//===- onnx-node-conformance.cpp - ONNX node tests, end to end ------------===//
//
// For every ONNX backend node test (Debian's libonnx-testdata): import the
// model, compile it to a CPU bundle, run it through libloomrt on
// test_data_set_0's inputs and compare with its outputs, with ONNX's own
// backend-test tolerances (|actual - expected| <= atol + rtol * |expected|,
// rtol 1e-3, atol 1e-7; integers and booleans exactly).
//
// Skipped, each with its reason: ops the importer lacks, opsets outside
// 11-17, features the importer or the CPU lowering names as unsupported.
// Prints `N passed, M failed, K skipped`; exits 1 when a test fails that is
// not listed in the expected-failures file given with --xfail (one test name
// per line, `#` comments), or when a listed test passes (so the list stays
// true).
//
// With --cuda, every test that passes on the CPU is also compiled for the
// CUDA target (kernels for sm_80 and sm_90, assembled by ptxas into
// fatbins; host code in the LLVM dialect); a failure to compile is a
// failure of the test. With --run-cuda (scripts/gpu-check.sh, on a machine
// with a GPU), every bundle is a CUDA bundle, run on the GPU.
//
// Usage: onnx-node-conformance [DATA_DIR] [--xfail FILE] [--cuda | --run-cuda]
//                              [--verbose]
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "OnnxTestModels.h"
#include "lib/Import/Onnx/OnnxNodes.h"
#include "loom/Compiler/Compiler.h"
#include "loom/InitAll.h"
#include "loom/runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

using namespace llvm;
using namespace loom_conformance;

namespace {

struct Outcome {
  enum Kind { Passed, Failed, Skipped } kind;
  std::string detail;
};

/// Dense bytes of a TensorProto in the runtime's layout (bool: one byte).
bool tensorBytes(mlir::MLIRContext &ctx, const onnx::TensorProto &tensor,
                 std::vector<char> &out, std::string &error) {
  std::string message;
  mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  mlir::FailureOr<mlir::DenseElementsAttr> attr =
      mlir::loom::onnx_import::tensorToAttr(&ctx, tensor,
                                            mlir::UnknownLoc::get(&ctx));
  if (mlir::failed(attr)) {
    error = message;
    return false;
  }
  int64_t n = attr->getNumElements();
  mlir::Type element = attr->getElementType();
  out.clear();
  if (element.isInteger(1)) {
    for (bool b : attr->getValues<bool>())
      out.push_back(b ? 1 : 0);
    return true;
  }
  size_t width = element.getIntOrFloatBitWidth() / 8;
  ArrayRef<char> raw = attr->getRawData();
  for (int64_t i = 0; i < n; ++i) {
    size_t at = attr->isSplat() ? 0 : i * width;
    out.insert(out.end(), raw.begin() + at, raw.begin() + at + width);
  }
  return true;
}

bool readProto(const std::string &path, onnx::TensorProto &tensor) {
  std::ifstream in(path, std::ios::binary);
  return in && tensor.ParseFromIstream(&in);
}

/// Compiles as `options` says; the first error's message, or failure's
/// absence as std::nullopt.
std::optional<std::string>
compileFirstError(mlir::MLIRContext &ctx,
                  const mlir::loom::CompilerOptions &options) {
  std::string message;
  mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && message.empty())
      message = d.str();
    return mlir::success();
  });
  if (mlir::succeeded(mlir::loom::compile(ctx, options)))
    return std::nullopt;
  return message;
}

/// Runs one node test; `workDir` holds its bundle.
Outcome runTest(mlir::MLIRContext &ctx, const std::string &dir,
                const std::string &workDir, bool cuda, bool runCuda) {
  std::string modelPath = dir + "/model.onnx";
  auto buffer = MemoryBuffer::getFile(modelPath);
  if (!buffer)
    return {Outcome::Skipped, "no model.onnx"};
  std::string reason = skipReason(summarize((*buffer)->getBuffer()));
  if (!reason.empty())
    return {Outcome::Skipped, reason};

  mlir::loom::CompilerOptions options;
  options.inputPath = modelPath;
  options.outputPath = workDir + "/model.loom";
  options.emit = mlir::loom::EmitPhase::Bundle;
  if (runCuda)
    options.target = "cuda";
  if (std::optional<std::string> error = compileFirstError(ctx, options)) {
    const std::string &message = *error;
    size_t at = message.find("' op has no CPU lowering yet");
    if (at != std::string::npos)
      return {Outcome::Skipped,
              "no CPU lowering for " + message.substr(1, at - 1)};
    if (isUnsupportedFeature(message))
      return {Outcome::Skipped,
              "feature: " + message.substr(message.find(": ") == std::string::npos
                                               ? 0
                                               : message.find(": ") + 2)};
    return {Outcome::Failed, "compile: " + message};
  }

  loom_session_t *session = nullptr;
  if (loom_status_t status =
          loom_session_create(options.outputPath.c_str(), nullptr, &session)) {
    std::string why = loom_status_message(status);
    loom_status_free(status);
    return {Outcome::Failed, "load: " + why};
  }
  struct Destroy {
    loom_session_t *s;
    ~Destroy() { loom_session_destroy(s); }
  } destroy{session};

  std::vector<size_t> inputs, outputs;
  for (size_t i = 0, e = loom_session_tensor_count(session); i < e; ++i) {
    loom_tensor_info_t info;
    loom_status_free(loom_session_tensor_info(session, i, &info));
    if (info.kind == LOOM_TENSOR_INPUT)
      inputs.push_back(i);
    else if (info.kind == LOOM_TENSOR_OUTPUT)
      outputs.push_back(i);
  }
  std::string dataDir = dir + "/test_data_set_0";
  // Inputs by name when the tensor has one, else in order.
  for (size_t k = 0;; ++k) {
    onnx::TensorProto tensor;
    std::string path = dataDir + "/input_" + std::to_string(k) + ".pb";
    if (!sys::fs::exists(path))
      break;
    if (!readProto(path, tensor))
      return {Outcome::Failed, "cannot parse " + path};
    size_t index;
    if (loom_status_t status = loom_session_find_tensor(
            session, tensor.name().c_str(), &index)) {
      loom_status_free(status);
      if (k >= inputs.size())
        continue; // An input the model turned into a constant.
      index = inputs[k];
    }
    std::vector<char> bytes;
    std::string error;
    if (!tensorBytes(ctx, tensor, bytes, error))
      return {Outcome::Skipped, "input data: " + error};
    if (loom_status_t status =
            loom_session_set_tensor(session, index, bytes.data(), bytes.size())) {
      std::string why = loom_status_message(status);
      loom_status_free(status);
      return {Outcome::Failed, "input: " + why};
    }
  }
  if (loom_status_t status = loom_session_run(session)) {
    std::string why = loom_status_message(status);
    loom_status_free(status);
    return {Outcome::Failed, "run: " + why};
  }

  for (size_t k = 0; k < outputs.size(); ++k) {
    onnx::TensorProto tensor;
    std::string path = dataDir + "/output_" + std::to_string(k) + ".pb";
    if (!readProto(path, tensor))
      return {Outcome::Failed, "cannot parse " + path};
    size_t index = outputs[k];
    size_t named;
    if (loom_status_t status =
            loom_session_find_tensor(session, tensor.name().c_str(), &named))
      loom_status_free(status);
    else
      index = named;
    loom_tensor_info_t info;
    loom_status_free(loom_session_tensor_info(session, index, &info));
    std::vector<char> expected;
    std::string error;
    if (!tensorBytes(ctx, tensor, expected, error))
      return {Outcome::Skipped, "output data: " + error};
    const void *data;
    size_t bytes;
    loom_status_free(loom_session_tensor_data(session, index, &data, &bytes));
    if (bytes != expected.size())
      return {Outcome::Failed, "output " + std::to_string(k) + " has " +
                                   std::to_string(bytes) + " bytes, expected " +
                                   std::to_string(expected.size())};
    bool isFloat = info.dtype == LOOM_DTYPE_FLOAT32 ||
                   info.dtype == LOOM_DTYPE_FLOAT64 ||
                   info.dtype == LOOM_DTYPE_FLOAT16 ||
                   info.dtype == LOOM_DTYPE_BFLOAT16;
    size_t count = bytes / loom_dtype_size(info.dtype);
    for (size_t i = 0; i < count; ++i) {
      double a = loom::npy::elementAsDouble(static_cast<const char *>(data), info.dtype, i);
      double b = loom::npy::elementAsDouble(expected.data(), info.dtype, i);
      bool ok = isFloat ? (std::isnan(a) && std::isnan(b)) ||
                              (std::isinf(b) && a == b) ||
                              std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)
                        : a == b;
      if (!ok)
        return {Outcome::Failed, "output " + std::to_string(k) + " element " +
                                     std::to_string(i) + " is " +
                                     std::to_string(a) + ", expected " +
                                     std::to_string(b)};
    }
  }
  if (cuda) {
    // The same model for the CUDA target: host code and kernels' fatbins.
    mlir::loom::CompilerOptions gpu = options;
    gpu.target = "cuda";
    gpu.emit = mlir::loom::EmitPhase::LLVM;
    gpu.outputPath = workDir + "/model.cuda.mlir";
    if (std::optional<std::string> error = compileFirstError(ctx, gpu))
      return {Outcome::Failed, "CUDA compile: " + *error};
  }
  return {Outcome::Passed, ""};
}

} // namespace

int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/libonnx-testdata/data/node";
  std::string xfailPath;
  bool verbose = false, cuda = false, runCuda = false;
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "--verbose")
      verbose = true;
    else if (arg == "--cuda")
      cuda = true;
    else if (arg == "--run-cuda")
      runCuda = true;
    else if (arg == "--xfail" && i + 1 < argc)
      xfailPath = argv[++i];
    else
      dataDir = arg.str();
  }
  StringSet<> expectedFailures;
  if (!xfailPath.empty()) {
    std::ifstream in(xfailPath);
    if (!in) {
      errs() << "error: cannot read " << xfailPath << "\n";
      return 1;
    }
    std::string line;
    while (std::getline(in, line)) {
      StringRef name = StringRef(line).split('#').first.trim();
      if (!name.empty())
        expectedFailures.insert(name);
    }
  }

  std::vector<std::string> tests = listTests(dataDir);
  if (tests.empty()) {
    errs() << "error: no ONNX node tests found in " << dataDir << "\n";
    return 1;
  }

  mlir::loom::registerAllPasses();
  // The compiler library applies the pass-manager command-line options.
  mlir::registerPassManagerCLOptions();
  mlir::DialectRegistry registry;
  mlir::loom::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.disableMultithreading();
  context.loadAllAvailableDialects();

  SmallString<128> workDir;
  if (sys::fs::createUniqueDirectory("loom-node-conformance", workDir)) {
    errs() << "error: cannot create a temporary directory\n";
    return 1;
  }

  int passed = 0, failed = 0, skipped = 0;
  SkipList skips;
  std::vector<std::string> unexpected, fixed, knownFailures;
  for (const std::string &dir : tests) {
    std::string name = sys::path::filename(dir).str();
    Outcome outcome =
        runTest(context, dir, std::string(workDir), cuda && !runCuda, runCuda);
    bool xfail = expectedFailures.contains(name);
    switch (outcome.kind) {
    case Outcome::Passed:
      ++passed;
      if (xfail)
        fixed.push_back(name);
      break;
    case Outcome::Failed:
      ++failed;
      (xfail ? knownFailures : unexpected)
          .push_back(name + ": " + outcome.detail);
      break;
    case Outcome::Skipped:
      ++skipped;
      skips[outcome.detail].push_back(name);
      break;
    }
  }
  (void)sys::fs::remove_directories(workDir);

  outs() << "ONNX node tests run end to end "
         << (runCuda ? "on the GPU"
                     : cuda ? "on the CPU and compiled for CUDA (sm_80, sm_90)"
                            : "on the CPU")
         << " (" << dataDir << ")\n";
  printSkips(outs(), skips, verbose);
  if (!knownFailures.empty()) {
    outs() << "failed, expected (" << knownFailures.size() << ", listed in "
           << xfailPath << "):\n";
    for (const std::string &f : knownFailures)
      outs() << "  " << f << "\n";
  }
  if (!unexpected.empty()) {
    outs() << "failed, unexpected (" << unexpected.size() << "):\n";
    for (const std::string &f : unexpected)
      outs() << "  " << f << "\n";
  }
  if (!fixed.empty()) {
    outs() << "passed but listed as expected failures (remove them from "
           << xfailPath << "):\n";
    for (const std::string &f : fixed)
      outs() << "  " << f << "\n";
  }
  outs() << "conformance: " << passed << " passed, " << failed << " failed, "
         << skipped << " skipped\n";
  return unexpected.empty() && fixed.empty() ? 0 : 1;
}
