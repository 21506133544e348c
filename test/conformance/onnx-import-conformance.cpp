//===- onnx-import-conformance.cpp - ONNX node tests through the importer -===//
//
// Imports every ONNX backend node test model (Debian's libonnx-testdata) and
// reports how many import and verify. A model is skipped, with its reason,
// when it uses an op the importer lacks, an opset outside 11-17, or a
// feature the importer names as unsupported (an attribute value, a shape
// that is only known at run time). Anything else that fails is a failure,
// and the exit code is 1 when there is one.
//
// Usage: onnx-import-conformance [DATA_DIR] [--verbose]
//
//===----------------------------------------------------------------------===//

#include "OnnxTestModels.h"
#include "loom/Import/OnnxImporter.h"
#include "loom/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace llvm;
using namespace loom_conformance;



int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/libonnx-testdata/data/node";
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    if (arg == "--verbose")
      verbose = true;
    else
      dataDir = arg.str();
  }

  std::vector<std::string> tests = listTests(dataDir);
  if (tests.empty()) {
    errs() << "error: no ONNX node tests found in " << dataDir << "\n";
    return 1;
  }

  mlir::DialectRegistry registry;
  mlir::loom::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.disableMultithreading();

  int imported = 0, failed = 0;
  SkipList skipped;
  std::vector<std::string> failures;
  for (const std::string &dir : tests) {
    std::string name = sys::path::filename(dir).str();
    SmallString<256> modelPath(dir);
    sys::path::append(modelPath, "model.onnx");
    auto buffer = MemoryBuffer::getFile(modelPath);
    if (!buffer)
      continue;
    ModelSummary summary = summarize((*buffer)->getBuffer());
    std::string reason = skipReason(summary);
    if (!reason.empty()) {
      skipped[reason].push_back(name);
      continue;
    }
    std::string message;
    mlir::OwningOpRef<mlir::ModuleOp> module;
    {
      mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
        if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
            message.empty())
          message = d.str();
        return mlir::success();
      });
      module = mlir::loom::importOnnxFile(&context, modelPath);
    }
    if (module) {
      ++imported;
      continue;
    }
    if (isUnsupportedFeature(message)) {
      skipped["feature: " + message.substr(message.find(": ") == std::string::npos
                                               ? 0
                                               : message.find(": ") + 2)]
          .push_back(name);
      continue;
    }
    ++failed;
    failures.push_back(name + ": " + message);
  }

  int numSkipped = 0;
  for (auto &[reason, names] : skipped)
    numSkipped += names.size();
  outs() << "ONNX node tests in " << dataDir << "\n";
  printSkips(outs(), skipped, verbose);
  if (!failures.empty()) {
    outs() << "failed (" << failures.size() << "):\n";
    for (const std::string &f : failures)
      outs() << "  " << f << "\n";
  }
  int total = tests.size();
  outs() << "imported " << imported << " of " << total << " (" << numSkipped
         << " skipped, " << failed << " failed); imported " << imported
         << " of the " << (imported + failed)
         << " whose ops and features the importer supports\n";
  return failed ? 1 : 0;
}
