//===- Search.cpp - enumerate and rank parallel plans ----------------------===//
//
// Every factorization of the device count into dp x ep x pp x tp (tp within
// a node), every microbatch size dividing a data rank's share of the batch,
// every schedule, ZeRO stage, precision, recompute policy and sequence
// parallelism the model and cluster allow: each is estimated, those that do
// not fit are dropped, the rest ranked by step time.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Planner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir::loom::plan;

static std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      out.push_back(d);
      if (d != n / d)
        out.push_back(n / d);
    }
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T>
static std::vector<T> choices(const std::optional<T> &fixed,
                              std::vector<T> all) {
  if (fixed)
    return {*fixed};
  return all;
}

llvm::Expected<SearchResult>
mlir::loom::plan::search(const Transformer &model, const Cluster &cluster,
                         const SearchSpace &space) {
  int64_t devices = space.devices ? space.devices : cluster.devices();
  if (devices > cluster.devices())
    return llvm::createStringError(
        llvm::formatv("{0} devices requested; the cluster has {1}", devices,
                      cluster.devices()));
  if (space.globalBatch < 1)
    return llvm::createStringError("the global batch must be at least 1");

  SearchResult result;
  result.devices = devices;
  result.globalBatch = space.globalBatch;
  auto consider = [&](const Plan &plan) {
    ++result.considered;
    llvm::Expected<Estimate> e = estimate(model, cluster, plan);
    if (!e) {
      llvm::consumeError(e.takeError());
      ++result.invalid;
      return;
    }
    if (!e->fits()) {
      ++result.outOfMemory;
      if (!result.leastMemory || e->memory < result.leastMemory->estimate.memory)
        result.leastMemory = Ranked{plan, *e};
      return;
    }
    result.plans.push_back({plan, *e});
  };

  // Mixed precision against fp32. fp16 needs loss scaling and buys nothing
  // bf16 does not where both run at the same rate: it is searched only on
  // devices without bf16. bf16-pure changes the numerics of training (no
  // fp32 master weights), so the planner takes it only when told to.
  std::vector<std::string> precisions;
  if (cluster.peakBf16 > 0)
    precisions.push_back("bf16");
  else if (cluster.peakFp16 > 0)
    precisions.push_back("fp16");
  precisions.push_back("fp32");

  for (int64_t tp : divisors(devices)) {
    if (space.tp && tp != *space.tp)
      continue;
    if (tp > cluster.devicesPerNode)
      continue;
    for (int64_t ep : divisors(devices / tp)) {
      if (space.ep ? ep != *space.ep : (model.experts == 0 && ep > 1))
        continue;
      for (int64_t pp : divisors(devices / tp / ep)) {
        if ((space.pp && pp != *space.pp) || pp > model.layers)
          continue;
        int64_t dp = devices / tp / ep / pp;
        if (space.dp && dp != *space.dp)
          continue;
        int64_t dataRanks = dp * ep;
        if (space.globalBatch % dataRanks) {
          ++result.considered;
          ++result.invalid;
          continue;
        }
        int64_t perRank = space.globalBatch / dataRanks;
        for (int64_t b : divisors(perRank)) {
          if (space.microbatch && b != *space.microbatch)
            continue;
          int64_t m = perRank / b;
          std::vector<std::pair<std::string, int64_t>> schedules;
          if (pp == 1)
            schedules = {{"1f1b", 1}};
          else
            schedules = {{"1f1b", 1}, {"gpipe", 1}, {"zero-bubble", 1},
                         {"interleaved-1f1b", 2}, {"interleaved-1f1b", 4}};
          std::vector<int64_t> zeros = {0};
          if (dataRanks > 1)
            zeros = pp > 1 ? std::vector<int64_t>{0, 1}
                           : std::vector<int64_t>{0, 1, 2, 3};
          for (auto &[schedule, v] : schedules) {
            if (pp > 1 && !space.schedules.empty() &&
                !llvm::is_contained(space.schedules, schedule))
              continue;
            for (int64_t zero : choices(space.zero, zeros))
              for (const std::string &precision :
                   choices(space.precision, precisions))
                for (const std::string &remat : choices(
                         space.remat,
                         std::vector<std::string>{"none", "selective", "full"}))
                  for (bool sp : choices(space.sequenceParallel,
                                         tp > 1 ? std::vector<bool>{false, true}
                                                : std::vector<bool>{false})) {
                    Plan plan;
                    plan.dp = dp;
                    plan.tp = tp;
                    plan.pp = pp;
                    plan.ep = ep;
                    plan.zero = zero;
                    plan.microbatch = b;
                    plan.microbatches = m;
                    plan.schedule = schedule;
                    plan.virtualStages = v;
                    plan.precision = precision;
                    plan.remat = remat;
                    plan.sequenceParallel = sp;
                    if (space.overlapGradReduce)
                      plan.overlapGradReduce = *space.overlapGradReduce;
                    if (space.gradReduceDtype)
                      plan.gradReduceDtype = *space.gradReduceDtype;
                    consider(plan);
                  }
          }
        }
      }
    }
  }
  // Fastest first; among equally fast plans the one needing less memory.
  std::stable_sort(result.plans.begin(), result.plans.end(),
                   [](const Ranked &a, const Ranked &b) {
                     if (a.estimate.step != b.estimate.step)
                       return a.estimate.step < b.estimate.step;
                     return a.estimate.memory < b.estimate.memory;
                   });
  return result;
}
