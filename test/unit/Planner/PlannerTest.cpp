//===- PlannerTest.cpp - the planner's cost model against its sources -----===//
//
// Each figure the cost model produces is checked against the published
// formula it implements, evaluated here independently: Megatron-LM's FLOP
// counts (Narayanan et al., 2021, eq. 3), the activation bytes of a
// transformer layer (Korthikanti et al., 2022, table 2), the pipeline
// bubble of each schedule, ring all-reduce time, and ZeRO's memory split.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Planner.h"

#include "gtest/gtest.h"

using namespace mlir::loom::plan;

namespace {

Cluster testCluster() {
  Cluster c;
  c.name = "test";
  c.device = "test-gpu";
  c.peakFp32 = 20e12;
  c.peakBf16 = c.peakFp16 = 300e12;
  c.memoryBytes = 80.0 * (1ull << 30);
  c.memoryBandwidth = 2e12;
  c.gemmEfficiency = 0.8;
  c.memoryEfficiency = 0.7;
  c.kernelOverhead = 5e-6;
  c.devicesPerNode = 8;
  c.nodes = 64;
  c.intraNode = {300e9, 5e-6};
  c.interNode = {25e9, 10e-6};
  c.linkEfficiency = 0.8;
  c.memoryMargin = 0.05;
  return c;
}

Transformer gpt(int64_t layers, int64_t hidden, int64_t heads) {
  Transformer m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.seq = 2048;
  m.vocab = 51200;
  return m;
}

Estimate mustEstimate(const Transformer &m, const Cluster &c, const Plan &p) {
  llvm::Expected<Estimate> e = estimate(m, c, p);
  if (!e) {
    ADD_FAILURE() << llvm::toString(e.takeError());
    return {};
  }
  return *e;
}

TEST(PlannerTest, Gpt3HasItsPublishedParameterCount) {
  Transformer m = gpt(96, 12288, 96);
  m.vocab = 50257;
  // Brown et al., 2020: 175.0 billion parameters.
  EXPECT_NEAR(m.parameters() / 1e9, 175.0, 0.5);
}

TEST(PlannerTest, ModelFlopsFollowMegatronsFormula) {
  Transformer m = gpt(24, 2304, 24);
  double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  double expected = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(m.modelFlops(512) / expected, 1.0, 1e-12);
}

TEST(PlannerTest, FullRecomputeAddsAForwardPassAsMegatronCountsIt) {
  Transformer m = gpt(24, 2304, 24);
  Plan p;
  p.dp = 32;
  p.microbatch = 4;
  p.microbatches = 4;
  p.remat = "full";
  Estimate e = mustEstimate(m, testCluster(), p);
  double B = 512, s = 2048, l = 24, h = 2304, V = 51200;
  double expected = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(e.hardwareFlops / expected, 1.0, 1e-12);
  // The head is not recomputed: the ratio is not quite 3/4.
  double model = 72 * (1 + s / (6 * h) + V / (12 * l * h));
  double hardware = 96 * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(e.modelFlops / e.hardwareFlops, model / hardware, 1e-12);
}

/// Activation bytes per layer, Korthikanti et al. 2022, table 2 (16-bit).
TEST(PlannerTest, ActivationsFollowKorthikanti) {
  Transformer m = gpt(8, 4096, 32);
  Cluster c = testCluster();
  double s = 2048, b = 2, h = 4096, a = 32, t = 8, L = 8;
  Plan p;
  p.microbatch = 2;
  p.tp = 8;
  struct Case {
    const char *remat;
    bool sp;
    double perLayer;
  } cases[] = {
      {"none", false, s * b * h * (10 + 24 / t + 5 * a * s / (h * t))},
      {"none", true, s * b * h / t * (34 + 5 * a * s / h)},
      {"selective", false, s * b * h * (10 + 24 / t)},
      {"selective", true, s * b * h * 34 / t},
  };
  for (const Case &k : cases) {
    p.remat = k.remat;
    p.sequenceParallel = k.sp;
    Estimate e = mustEstimate(m, c, p);
    EXPECT_NEAR(e.activations / (L * k.perLayer), 1.0, 1e-12)
        << k.remat << (k.sp ? " with" : " without") << " sequence parallelism";
  }
  // Full recompute keeps each layer's input (2sbh, split by sequence
  // parallelism) plus one layer's whole activations while it recomputes.
  p.remat = "full";
  p.sequenceParallel = true;
  Estimate e = mustEstimate(m, c, p);
  double full = L * 2 * s * b * h / t + s * b * h / t * (34 + 5 * a * s / h);
  EXPECT_NEAR(e.activations / full, 1.0, 1e-12);
}

TEST(PlannerTest, BubbleFractionOfEachSchedule) {
  Transformer m = gpt(16, 1024, 16);
  Cluster c = testCluster();
  Plan p;
  p.pp = 4;
  p.microbatches = 8;
  auto fraction = [&](const char *schedule, int64_t v) {
    p.schedule = schedule;
    p.virtualStages = v;
    Estimate e = mustEstimate(m, c, p);
    double busy = e.compute + e.recompute + e.ppComm;
    return e.bubble / (e.bubble + busy);
  };
  // (p - 1) / (m + p - 1) for GPipe and 1F1B; divided by V (in units of
  // a whole stage's work) for the interleaved schedule.
  EXPECT_NEAR(fraction("1f1b", 1), 3.0 / 11.0, 1e-9);
  EXPECT_NEAR(fraction("gpipe", 1), 3.0 / 11.0, 1e-9);
  EXPECT_NEAR(fraction("interleaved-1f1b", 2), 1.5 / 9.5, 1e-9);
  EXPECT_LT(fraction("zero-bubble", 1), fraction("1f1b", 1) / 2);
}

TEST(PlannerTest, GradientAllReduceIsARing) {
  Transformer m = gpt(2, 1024, 16);
  Cluster c = testCluster();
  Plan p;
  p.dp = 8;
  p.overlapGradReduce = false;
  p.precision = "bf16";
  Estimate e = mustEstimate(m, c, p);
  // fp32 gradients of every parameter, ring all-reduce over 8 ranks on
  // the node's links.
  double bytes = 4 * m.parameters();
  double ring = 2.0 * 7 / 8 * bytes / (300e9 * 0.8) + 2 * 7 * 5e-6;
  EXPECT_NEAR(e.dpComm / ring, 1.0, 1e-9);
  // Across nodes the same ring runs at the network's bandwidth.
  p.dp = 16;
  e = mustEstimate(m, c, p);
  double across = 2.0 * 15 / 16 * bytes / (25e9 * 0.8) + 2 * 15 * 10e-6;
  EXPECT_NEAR(e.dpComm / across, 1.0, 1e-9);
}

TEST(PlannerTest, ZeroSplitsStateGradientsAndParameters) {
  Transformer m = gpt(4, 2048, 16);
  Cluster c = testCluster();
  Plan p;
  p.dp = 8;
  double params = m.parameters();
  for (int64_t zero = 0; zero <= 3; ++zero) {
    p.zero = zero;
    Estimate e = mustEstimate(m, c, p);
    EXPECT_NEAR(e.optimizerState, 8 * params / (zero >= 1 ? 8 : 1), 1);
    EXPECT_NEAR(e.gradients, 4 * params / (zero >= 2 ? 8 : 1), 1);
    EXPECT_NEAR(e.parameters, 4 * params / (zero >= 3 ? 8 : 1), 1);
  }
}

TEST(PlannerTest, InvalidPlansSayWhy) {
  Transformer m = gpt(4, 2048, 16);
  Cluster c = testCluster();
  Plan p;
  p.tp = 3;
  llvm::Expected<Estimate> e = estimate(m, c, p);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("does not divide"),
            std::string::npos);
  p.tp = 16;
  e = estimate(m, c, p);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("spans nodes"),
            std::string::npos);
  p.tp = 1;
  p.pp = 2;
  p.dp = 2;
  p.zero = 2;
  e = estimate(m, c, p);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("ZeRO-1"), std::string::npos);
}

TEST(PlannerTest, SearchPrefersDataParallelismForASmallModel) {
  Transformer m = gpt(12, 768, 12);
  Cluster c = testCluster();
  SearchSpace space;
  space.globalBatch = 64;
  space.devices = 8;
  llvm::Expected<SearchResult> r = search(m, c, space);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  ASSERT_FALSE(r->plans.empty());
  const Plan &best = r->plans.front().plan;
  EXPECT_EQ(best.dp, 8);
  EXPECT_EQ(best.tp, 1);
  EXPECT_EQ(best.pp, 1);
  for (size_t i = 1; i < r->plans.size(); ++i)
    EXPECT_LE(r->plans[i - 1].estimate.step, r->plans[i].estimate.step);
}

TEST(PlannerTest, SearchReportsTheSmallestMemoryWhenNothingFits) {
  Transformer m = gpt(96, 12288, 96);
  Cluster c = testCluster();
  SearchSpace space;
  space.globalBatch = 8;
  space.devices = 8;
  llvm::Expected<SearchResult> r = search(m, c, space);
  ASSERT_TRUE(bool(r));
  EXPECT_TRUE(r->plans.empty());
  ASSERT_TRUE(r->leastMemory.has_value());
  EXPECT_GT(r->leastMemory->estimate.memory, c.memoryBytes);
  EXPECT_GT(r->outOfMemory, 0);
}

/// `text` with its first `from` replaced by `to`.
std::string withReplaced(std::string text, const std::string &from,
                         const std::string &to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(PlannerTest, ClusterDescriptionsAreCheckedFieldByField) {
  const char *good = R"({
    "name": "c", "devices_per_node": 8, "nodes": 2,
    "device": {"name": "g", "memory_gib": 80, "memory_bandwidth_gbs": 2000,
               "peak_tflops": {"fp32": 19.5, "bf16": 312}},
    "intra_node": {"bandwidth_gbs": 300, "latency_us": 5},
    "inter_node": {"bandwidth_gbs": 25, "latency_us": 10}})";
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(good);
  ASSERT_TRUE(bool(v));
  llvm::Expected<Cluster> c = parseCluster(*v);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->devices(), 16);
  EXPECT_DOUBLE_EQ(c->peakBf16, 312e12);
  EXPECT_DOUBLE_EQ(c->intraNode.bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(c->memoryBytes, 80.0 * (1ull << 30));

  auto error = [](const std::string &text) {
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
    if (!v)
      return llvm::toString(v.takeError());
    llvm::Expected<Cluster> c = parseCluster(*v);
    return c ? std::string() : llvm::toString(c.takeError());
  };
  auto replaced = [&](const std::string &from, const std::string &to) {
    return withReplaced(good, from, to);
  };
  EXPECT_EQ(error(replaced("\"nodes\"", "\"node\"")),
            "\"node\" is not a known field");
  EXPECT_EQ(error(replaced("\"memory_gib\": 80,", "")),
            "\"device.memory_gib\" is missing");
  EXPECT_EQ(error(replaced("\"latency_us\": 5", "\"latency_us\": -5")),
            "\"intra_node.latency_us\" must be a non-negative number");
  EXPECT_EQ(error(replaced("\"fp32\": 19.5", "\"fp8\": 19.5")),
            "\"device.peak_tflops.fp8\" is not a known field");

  // What loom-run calibrate adds: GEMM rates by shape and fits of the
  // collectives.
  std::string calibrated = replaced(
      "\"peak_tflops\"",
      "\"gemm\": [{\"m\": 64, \"n\": 32, \"k\": 16, \"precision\": "
      "\"bf16\", \"gflops\": 150}], \"peak_tflops\"");
  calibrated.replace(calibrated.find("\"intra_node\""), 12,
                     "\"collectives\": {\"all_reduce\": {\"bandwidth_gbs\": "
                     "2, \"latency_us\": 130, \"ranks\": 2, \"times\": "
                     "[{\"bytes\": 256, \"us\": 300}, {\"bytes\": 4096, "
                     "\"us\": 500}]}}, \"intra_node\"");
  llvm::Expected<llvm::json::Value> cv = llvm::json::parse(calibrated);
  ASSERT_TRUE(bool(cv));
  llvm::Expected<Cluster> cc = parseCluster(*cv);
  ASSERT_TRUE(bool(cc)) << llvm::toString(cc.takeError());
  ASSERT_EQ(cc->gemm.size(), 1u);
  EXPECT_EQ(cc->gemm[0].precision, "bf16");
  EXPECT_DOUBLE_EQ(cc->gemm[0].flops, 150e9);
  ASSERT_TRUE(cc->allReduce.has_value());
  EXPECT_DOUBLE_EQ(cc->allReduce->bandwidth, 2e9);
  EXPECT_DOUBLE_EQ(cc->allReduce->latency, 130e-6);
  EXPECT_EQ(cc->allReduce->ranks, 2);
  ASSERT_EQ(cc->allReduce->times.size(), 2u);
  EXPECT_DOUBLE_EQ(cc->allReduce->times[1].first, 4096);
  EXPECT_DOUBLE_EQ(cc->allReduce->times[1].second, 500e-6);
  EXPECT_FALSE(cc->allGather.has_value());
  auto swap = [&](const std::string &from, const std::string &to) {
    return error(withReplaced(calibrated, from, to));
  };
  EXPECT_EQ(swap("\"precision\": \"bf16\"", "\"precision\": \"int8\""),
            "\"device.gemm[0].precision\" must be fp32, tf32, bf16 or fp16");
  EXPECT_EQ(swap("\"gflops\": 150", "\"tflops\": 150"),
            "\"device.gemm[0].tflops\" is not a known field");
  EXPECT_EQ(swap("\"all_reduce\"", "\"allreduce\""),
            "\"collectives.allreduce\" is not a known field");
  EXPECT_EQ(swap("\"gemm\": [{\"m\": 64, \"n\": 32, \"k\": 16, "
                 "\"precision\": \"bf16\", \"gflops\": 150}]",
                 "\"gemm\": {}"),
            "\"device.gemm\" must be an array of {\"m\", \"n\", \"k\", "
            "\"precision\", \"gflops\"}");
  EXPECT_EQ(swap("\"m\": 64", "\"m\": 0"),
            "\"device.gemm[0]\" needs positive m, n, k and gflops");
  EXPECT_EQ(swap("\"bandwidth_gbs\": 2, \"latency_us\": 130",
                 "\"bandwidth_gbs\": 0, \"latency_us\": 130"),
            "\"collectives.all_reduce.bandwidth_gbs\" must be positive");
  EXPECT_EQ(swap("\"bytes\": 4096", "\"bytes\": 128"),
            "\"collectives.all_reduce.times[1]\" must come after a smaller "
            "size");
  EXPECT_EQ(swap("\"us\": 500", "\"ms\": 500"),
            "\"collectives.all_reduce.times[1].ms\" is not a known field");
  EXPECT_EQ(swap("\"ranks\": 2, ", ""),
            "\"collectives.all_reduce.times\" must be an array of "
            "{\"bytes\", \"us\"} next to \"ranks\"");

  // What clusterToJson writes (loom-run calibrate's profile) reads back
  // the same, field for field.
  llvm::Expected<Cluster> back = parseCluster(clusterToJson(*cc));
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->name, cc->name);
  EXPECT_EQ(back->device, cc->device);
  EXPECT_EQ(back->devices(), 16);
  EXPECT_DOUBLE_EQ(back->memoryBytes, cc->memoryBytes);
  EXPECT_DOUBLE_EQ(back->memoryBandwidth, cc->memoryBandwidth);
  EXPECT_DOUBLE_EQ(back->peakFp32, cc->peakFp32);
  EXPECT_DOUBLE_EQ(back->peakBf16, cc->peakBf16);
  EXPECT_DOUBLE_EQ(back->peakFp16, 0);
  EXPECT_DOUBLE_EQ(back->intraNode.bandwidth, cc->intraNode.bandwidth);
  EXPECT_DOUBLE_EQ(back->interNode.latency, cc->interNode.latency);
  ASSERT_EQ(back->gemm.size(), 1u);
  EXPECT_EQ(back->gemm[0].m, 64);
  EXPECT_DOUBLE_EQ(back->gemm[0].flops, 150e9);
  ASSERT_TRUE(back->allReduce.has_value());
  EXPECT_DOUBLE_EQ(back->allReduce->latency, 130e-6);
  EXPECT_EQ(back->allReduce->ranks, 2);
  ASSERT_EQ(back->allReduce->times.size(), 2u);
  EXPECT_DOUBLE_EQ(back->allReduce->times[0].first, 256);
  EXPECT_DOUBLE_EQ(back->allReduce->times[0].second, 300e-6);
  EXPECT_FALSE(back->allGather.has_value());
  EXPECT_EQ(back->coresPerNode, 0);
  EXPECT_EQ(back->threadsPerDevice, 1);

  // Time-shared cores (loom-run calibrate with more ranks than CPUs).
  std::string shared = replaced("\"nodes\": 2,", "\"nodes\": 2, "
                                                 "\"cores_per_node\": 4,");
  shared.replace(shared.find("\"memory_gib\""), 12,
                 "\"threads\": 2, \"memory_gib\"");
  llvm::Expected<llvm::json::Value> sv = llvm::json::parse(shared);
  ASSERT_TRUE(bool(sv));
  llvm::Expected<Cluster> sc = parseCluster(*sv);
  ASSERT_TRUE(bool(sc)) << llvm::toString(sc.takeError());
  EXPECT_EQ(sc->coresPerNode, 4);
  EXPECT_EQ(sc->threadsPerDevice, 2);
  llvm::Expected<Cluster> sback = parseCluster(clusterToJson(*sc));
  ASSERT_TRUE(bool(sback)) << llvm::toString(sback.takeError());
  EXPECT_EQ(sback->coresPerNode, 4);
  EXPECT_EQ(sback->threadsPerDevice, 2);
  EXPECT_EQ(error(withReplaced(shared, "\"cores_per_node\": 4",
                               "\"cores_per_node\": 0")),
            "\"cores_per_node\" must be positive");
  EXPECT_EQ(error(withReplaced(shared, "\"threads\": 2", "\"threads\": 0")),
            "\"device.threads\" must be positive");
}

TEST(PlannerTest, TimeSharedCoresAreSplitAmongTheBusyDevices) {
  // 4 devices of 1 thread on 2 cores: the profile's figures are those of
  // a device with a core of its own; 4 busy ones get half a core each, 3
  // get 2/3 of one, 2 or 1 a whole core.
  Cluster c;
  c.devicesPerNode = 4;
  c.coresPerNode = 2;
  EXPECT_TRUE(c.timeShared());
  EXPECT_DOUBLE_EQ(c.computeSpeed(4), 0.5);
  EXPECT_DOUBLE_EQ(c.computeSpeed(3), 2.0 / 3);
  EXPECT_DOUBLE_EQ(c.computeSpeed(2), 1);
  EXPECT_DOUBLE_EQ(c.computeSpeed(1), 1);
  // Threads count: 2 devices of 2 threads on 2 cores share as 4 would.
  c.devicesPerNode = 2;
  c.threadsPerDevice = 2;
  EXPECT_DOUBLE_EQ(c.computeSpeed(2), 0.5);
  EXPECT_DOUBLE_EQ(c.computeSpeed(1), 1);
  EXPECT_EQ(c.measuredBusy(), 1);
  // One device of 4 threads on 2 cores was measured oversubscribed as it
  // runs: no further slowdown.
  c.devicesPerNode = 1;
  c.threadsPerDevice = 4;
  EXPECT_TRUE(c.timeShared());
  EXPECT_EQ(c.measuredBusy(), 1);
  EXPECT_DOUBLE_EQ(c.computeSpeed(1), 1);
  c.threadsPerDevice = 1;
  c.devicesPerNode = 2;
  // Cores enough for every device, or none given: no sharing.
  c.coresPerNode = 4;
  EXPECT_FALSE(c.timeShared());
  EXPECT_DOUBLE_EQ(c.computeSpeed(1), 1);
  c.coresPerNode = 0;
  EXPECT_FALSE(c.timeShared());
  EXPECT_DOUBLE_EQ(c.computeSpeed(1), 1);
}

TEST(PlannerTest, PinnedRanksSpreadEachPhaseOverTheCpus) {
  using Pins = std::vector<int64_t>;
  // dp=2 x pp=2 on 2 CPUs, stages 0 1 0 1 by rank: each CPU runs one rank
  // of each stage.
  EXPECT_EQ(pinRanks({0, 1, 0, 1}, 2, 1), (Pins{0, 0, 1, 1}));
  // calibrate's turns of 2 (ranks 0 1, then 2 3): a turn's ranks on
  // different CPUs.
  EXPECT_EQ(pinRanks({0, 0, 1, 1}, 2, 1), (Pins{0, 1, 0, 1}));
  // All alike: in rank order, two per CPU.
  EXPECT_EQ(pinRanks({0, 0, 0, 0}, 2, 1), (Pins{0, 0, 1, 1}));
  // pp=4: neighbouring stages on different CPUs.
  EXPECT_EQ(pinRanks({0, 1, 2, 3}, 2, 1), (Pins{0, 1, 0, 1}));
  // pp=4 x dp=2 (stages 0 0 1 1 2 2 3 3): each CPU runs one rank of each
  // stage.
  EXPECT_EQ(pinRanks({0, 0, 1, 1, 2, 2, 3, 3}, 2, 1),
            (Pins{0, 1, 0, 1, 0, 1, 0, 1}));
  // dp=4 x pp=2: each CPU runs two ranks of each stage.
  EXPECT_EQ(pinRanks({0, 1, 0, 1, 0, 1, 0, 1}, 2, 1),
            (Pins{0, 0, 0, 0, 1, 1, 1, 1}));
  // dp=2 x pp=3 on 3 CPUs: stage s's ranks, s and s + 3, on CPUs s / 2 and
  // (s + 3) / 2.
  EXPECT_EQ(pinRanks({0, 1, 2, 0, 1, 2}, 3, 1), (Pins{0, 0, 1, 1, 2, 2}));
  // Not pinned: CPUs enough, a number of ranks that does not divide over
  // the CPUs, ranks of several threads, a single CPU (nothing to choose).
  EXPECT_TRUE(pinRanks({0, 1}, 2, 1).empty());
  EXPECT_TRUE(pinRanks({0, 1, 2}, 2, 1).empty());
  EXPECT_TRUE(pinRanks({0, 1, 0, 1}, 2, 2).empty());
  EXPECT_TRUE(pinRanks({0, 1, 0, 1}, 1, 1).empty());
  EXPECT_TRUE(pinRanks({0, 1, 0, 1}, 0, 1).empty());
}

} // namespace
