//===- Simulate.cpp - loomc --plan-simulate ---------------------------------===//
//
// Plans a transformer described by its shape on a described cluster: the
// model need not exist as an ONNX file, nor the cluster as machines.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Planner.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir::loom::plan;
using llvm::Error;
using llvm::StringRef;
namespace json = llvm::json;

llvm::Expected<json::Object> mlir::loom::plan::parseFixList(StringRef text) {
  json::Object out;
  llvm::SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (key.empty() || value.empty() || !item.contains('='))
      return llvm::createStringError("expected key=value in '" + item + "'");
    int64_t number;
    if (!value.getAsInteger(10, number))
      out[key] = number;
    else if (value == "true" || value == "false")
      out[key] = value == "true";
    else
      out[key] = value.str();
  }
  return out;
}

Error mlir::loom::plan::simulate(const SimulateOptions &options,
                                 llvm::raw_ostream &os) {
  llvm::Expected<Transformer> model = loadTransformer(options.modelPath);
  if (!model)
    return model.takeError();
  llvm::Expected<Cluster> cluster = loadCluster(options.clusterPath);
  if (!cluster)
    return cluster.takeError();
  SearchSpace space;
  space.globalBatch = options.globalBatch;
  space.devices = options.devices;
  llvm::Expected<json::Object> fixed = parseFixList(options.fix);
  if (!fixed)
    return llvm::createStringError("--plan-fix: " +
                                   llvm::toString(fixed.takeError()));
  if (Error e = parseConstraints(*fixed, space))
    return llvm::createStringError("--plan-fix: " + llvm::toString(std::move(e)));
  if (space.globalBatch < 1)
    return llvm::createStringError("--global-batch is required (sequences "
                                   "per step)");
  llvm::Expected<SearchResult> result = search(*model, *cluster, space);
  if (!result)
    return result.takeError();
  printPlans(os, *model, *cluster, *result, options.top);
  if (!options.jsonPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(options.jsonPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return llvm::createStringError("cannot write " + options.jsonPath +
                                     ": " + ec.message());
    file << llvm::formatv("{0:2}", plansToJson(*result, options.top)) << "\n";
  }
  if (result->plans.empty())
    return llvm::createStringError(
        result->leastMemory
            ? "no plan fits in the devices' memory"
            : "no valid plan: check that the batch divides over the data "
              "ranks and the fixed choices suit the model");
  return Error::success();
}
