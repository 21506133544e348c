//===- Diagnostics.cpp - how Loom's tools print diagnostics ---------------===//
//
// See Diagnostics.h.
//
//===----------------------------------------------------------------------===//

#include "loom/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// Renders `loc` as the prefix of a diagnostic about `message`.
static std::string locationPrefix(Location loc, StringRef message) {
  std::string node;
  while (true) {
    if (auto name = dyn_cast<NameLoc>(loc)) {
      if (node.empty())
        node = name.getName().str();
      loc = name.getChildLoc();
      continue;
    }
    if (auto fused = dyn_cast<FusedLoc>(loc)) {
      if (fused.getLocations().empty())
        break;
      loc = fused.getLocations().front();
      continue;
    }
    if (auto callSite = dyn_cast<CallSiteLoc>(loc)) {
      loc = callSite.getCallee();
      continue;
    }
    break;
  }
  std::string prefix;
  llvm::raw_string_ostream os(prefix);
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue();
    if (file.getLine() > 0)
      os << ":" << file.getLine() << ":" << file.getColumn();
    os << ": ";
  }
  // Name the ONNX node unless the message already does.
  if (!node.empty() && !message.contains("\"" + node + "\""))
    os << "node \"" << node << "\": ";
  return prefix;
}

static StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

static void printDiagnostic(Diagnostic &diag, llvm::raw_ostream &os) {
  std::string message = diag.str();
  os << locationPrefix(diag.getLocation(), message)
     << severityName(diag.getSeverity()) << ": " << message << "\n";
  for (Diagnostic &note : diag.getNotes())
    printDiagnostic(note, os);
}

mlir::loom::ToolDiagnosticHandler::ToolDiagnosticHandler(MLIRContext *context,
                                                         llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context) {
  setHandler([&os](Diagnostic &diag) {
    printDiagnostic(diag, os);
    os.flush();
    return success();
  });
}
