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

/// Reads the op types and the default-domain opset of a model without ONNX's
/// headers: the importer is the thing under test, so this scans the protobuf
/// wire format for NodeProto.op_type and OperatorSetIdProto.version.
namespace {
struct ModelSummary {
  std::vector<std::string> opTypes;
  int64_t opset = -1;
};

bool readVarint(StringRef &data, uint64_t &value) {
  value = 0;
  for (int shift = 0; shift < 64 && !data.empty(); shift += 7) {
    uint8_t byte = data.front();
    data = data.drop_front();
    value |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

/// Calls `fn(field, wireType, payload-or-varint)` for each field of `data`.
template <typename Fn>
bool forEachField(StringRef data, Fn fn) {
  while (!data.empty()) {
    uint64_t key;
    if (!readVarint(data, key))
      return false;
    unsigned field = key >> 3, wire = key & 7;
    if (wire == 0) {
      uint64_t v;
      if (!readVarint(data, v))
        return false;
      fn(field, wire, StringRef(), v);
    } else if (wire == 2) {
      uint64_t len;
      if (!readVarint(data, len) || len > data.size())
        return false;
      fn(field, wire, data.take_front(len), 0);
      data = data.drop_front(len);
    } else if (wire == 5) {
      data = data.drop_front(std::min<size_t>(4, data.size()));
    } else if (wire == 1) {
      data = data.drop_front(std::min<size_t>(8, data.size()));
    } else {
      return false;
    }
  }
  return true;
}

ModelSummary summarize(StringRef model) {
  ModelSummary summary;
  // ModelProto: graph = 7, opset_import = 8. GraphProto: node = 1.
  // NodeProto: op_type = 4, domain = 7. OperatorSetIdProto: domain = 1,
  // version = 2.
  forEachField(model, [&](unsigned field, unsigned wire, StringRef payload,
                          uint64_t) {
    if (field == 7 && wire == 2) {
      forEachField(payload, [&](unsigned f, unsigned w, StringRef node,
                                uint64_t) {
        if (f != 1 || w != 2)
          return;
        forEachField(node, [&](unsigned nf, unsigned nw, StringRef text,
                               uint64_t) {
          if (nf == 4 && nw == 2)
            summary.opTypes.push_back(text.str());
        });
      });
    } else if (field == 8 && wire == 2) {
      std::string domain;
      int64_t version = -1;
      forEachField(payload, [&](unsigned f, unsigned w, StringRef text,
                                uint64_t v) {
        if (f == 1 && w == 2)
          domain = text.str();
        if (f == 2 && w == 0)
          version = v;
      });
      if (domain.empty() || domain == "ai.onnx")
        summary.opset = version;
    }
  });
  return summary;
}

bool isUnsupportedFeature(StringRef message) {
  return message.contains("not supported") ||
         message.contains("compile-time") ||
         message.contains("dynamic dimension");
}
} // namespace

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

  std::vector<std::string> tests;
  std::error_code ec;
  for (sys::fs::directory_iterator it(dataDir, ec), end; it != end && !ec;
       it.increment(ec))
    tests.push_back(it->path());
  if (ec || tests.empty()) {
    errs() << "error: no ONNX node tests found in " << dataDir << "\n";
    return 1;
  }
  std::sort(tests.begin(), tests.end());

  mlir::DialectRegistry registry;
  mlir::loom::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.disableMultithreading();

  int imported = 0, failed = 0;
  std::map<std::string, std::vector<std::string>> skipped; // reason -> tests
  std::vector<std::string> failures;
  for (const std::string &dir : tests) {
    std::string name = sys::path::filename(dir).str();
    SmallString<256> modelPath(dir);
    sys::path::append(modelPath, "model.onnx");
    auto buffer = MemoryBuffer::getFile(modelPath);
    if (!buffer)
      continue;
    ModelSummary summary = summarize((*buffer)->getBuffer());
    std::string reason;
    if (summary.opset < mlir::loom::kMinOnnxOpset ||
        summary.opset > mlir::loom::kMaxOnnxOpset)
      reason = "opset " + std::to_string(summary.opset) + " outside 11-17";
    for (const std::string &op : summary.opTypes)
      if (reason.empty() && !mlir::loom::isOnnxOpSupported(op))
        reason = "op " + op;
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
  outs() << "skipped (" << numSkipped << "):\n";
  for (auto &[reason, names] : skipped) {
    outs() << "  " << reason << ": " << names.size();
    if (verbose || names.size() <= 3) {
      outs() << " (";
      for (size_t i = 0; i < names.size(); ++i)
        outs() << (i ? ", " : "") << names[i];
      outs() << ")";
    }
    outs() << "\n";
  }
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
