//===- OnnxTestModels.h - shared by the ONNX conformance runners -*- C++ -*-===//
//
// What both conformance runners need to know about an ONNX node test model
// before handing it to Loom: its op types and default-domain opset (read
// from the protobuf wire format directly, so the importer under test is not
// involved), and whether an importer error names an unsupported feature.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEST_CONFORMANCE_ONNXTESTMODELS_H
#define LOOM_TEST_CONFORMANCE_ONNXTESTMODELS_H

#include "loom/Import/OnnxImporter.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

#include <algorithm>
#include <string>
#include <vector>

namespace loom_conformance {
using llvm::StringRef;

/// Reads the op types and the default-domain opset of a model without ONNX's
/// headers: the importer is the thing under test, so this scans the protobuf
/// wire format for NodeProto.op_type and OperatorSetIdProto.version.
struct ModelSummary {
  std::vector<std::string> opTypes;
  int64_t opset = -1;
};

inline bool readVarint(StringRef &data, uint64_t &value) {
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

inline ModelSummary summarize(StringRef model) {
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

inline bool isUnsupportedFeature(StringRef message) {
  return message.contains("not supported") ||
         message.contains("compile-time") ||
         message.contains("dynamic dimension");
}

/// Why a model is skipped before import (an op the importer lacks or an opset
/// outside the supported range), or "" when it should be imported.
inline std::string skipReason(const ModelSummary &summary) {
  if (summary.opset < mlir::loom::kMinOnnxOpset ||
      summary.opset > mlir::loom::kMaxOnnxOpset)
    return "opset " + std::to_string(summary.opset) + " outside 11-17";
  for (const std::string &op : summary.opTypes)
    if (!mlir::loom::isOnnxOpSupported(op))
      return "op " + op;
  return "";
}

/// The test directories in `dataDir`, sorted; empty when there are none.
inline std::vector<std::string> listTests(const std::string &dataDir) {
  std::vector<std::string> tests;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dataDir, ec), end;
       it != end && !ec; it.increment(ec))
    tests.push_back(it->path());
  if (ec)
    return {};
  std::sort(tests.begin(), tests.end());
  return tests;
}

/// Tests skipped, grouped by reason.
using SkipList = std::map<std::string, std::vector<std::string>>;

/// Prints `skips` with their counts, naming the tests of a reason when there
/// are few of them (or always, with `verbose`).
inline void printSkips(llvm::raw_ostream &os, const SkipList &skips,
                       bool verbose) {
  size_t total = 0;
  for (const auto &entry : skips)
    total += entry.second.size();
  os << "skipped (" << total << "):\n";
  for (const auto &[reason, names] : skips) {
    os << "  " << reason << ": " << names.size();
    if (verbose || names.size() <= 3) {
      os << " (";
      for (size_t i = 0; i < names.size(); ++i)
        os << (i ? ", " : "") << names[i];
      os << ")";
    }
    os << "\n";
  }
}

} // namespace loom_conformance

#endif // LOOM_TEST_CONFORMANCE_ONNXTESTMODELS_H
