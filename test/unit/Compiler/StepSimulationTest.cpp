//===- StepSimulationTest.cpp - loomc --plan's step simulation ------------===//
//
// predictStep on small hand-written programs, against timelines worked out
// by hand in the comments from the cluster's figures (chosen so that every
// product takes 1 ms), not from the simulator's code.
//
//===----------------------------------------------------------------------===//

#include "loom/Compiler/Plan.h"
#include "loom/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class StepSimulationTest : public ::testing::Test {
protected:
  StepSimulationTest() {
    DialectRegistry registry;
    loom::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    // A 64x32 by 32x16 product is 2 * 64 * 16 * 32 = 65536 FLOPs: 1 ms.
    cluster.peakFp32 = 65536e3;
    cluster.gemmEfficiency = 1;
    cluster.kernelOverhead = 0;
    cluster.memoryBandwidth = 12e6;
    cluster.memoryEfficiency = 1;
    cluster.devicesPerNode = 8;
    cluster.intraNode = {1e9, 1e-6};
    cluster.interNode = {1e9, 1e-6};
  }

  FailureOr<loom::StepPrediction> predict(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source.str();
    if (!module)
      return failure();
    return loom::predictStep(*module, cluster);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  loom::plan::Cluster cluster;
};

constexpr double ms = 1e-3;

/// Two 1 ms products, an all-reduce of 4000 bytes started after the first
/// and waited for after the second.
constexpr const char *kStartedAllReduce = R"mlir(
    loom.mesh @mesh = <dp = 2>
    func.func @train_step(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>,
                          %g: tensor<1000xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<1000xf32>) {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %s = loom.all_reduce_start sum %g on @mesh ["dp"] : tensor<1000xf32>
      %d = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %w = loom.wait %s : tensor<1000xf32>
      return %c, %d, %w : tensor<64x16xf32>, tensor<64x16xf32>, tensor<1000xf32>
    })mlir";

TEST_F(StepSimulationTest, AllReduceOverlapsTheWorkUntilItsWait) {
  // all-reduce of 4000 bytes over 2 ranks: 2 (2 - 1) x 0.5 ms latency +
  // 2 (2 - 1) / 2 x 4000 B / (4e6 B/s) = 1 ms + 1 ms = 2 ms. Timeline:
  // product [0, 1], all-reduce started at 1 ends at 3, product [1, 2], the
  // wait until 3: step 3 ms, of which 2 compute and 1 exposed.
  cluster.allReduce = loom::plan::Link{4e6, 0.5e-3};
  FailureOr<loom::StepPrediction> p = predict(kStartedAllReduce);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 3 * ms, 1e-9);
  EXPECT_NEAR(p->compute, 2 * ms, 1e-9);
  EXPECT_NEAR(p->exposedComm, 1 * ms, 1e-9);
  EXPECT_NEAR(p->flops, 2 * 65536.0, 1e-6);
}

TEST_F(StepSimulationTest, ElementwiseChainsAreFused) {
  // add reads %p and %q (2 x 4000 B); its result goes only to exp, in the
  // same loop: neither written nor read back; exp writes 4000 B. 12000 B
  // at 12e6 B/s: 1 ms. Unfused it would be 20000 B.
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    func.func @train_step(%p: tensor<1000xf32>, %q: tensor<1000xf32>) -> tensor<1000xf32> {
      %x = loom.add %p, %q : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %y = loom.exp %x : tensor<1000xf32>
      return %y : tensor<1000xf32>
    })mlir");
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 1 * ms, 1e-9);
}

TEST_F(StepSimulationTest, AdamWUpdateIsOneLoop) {
  // AdamW's shape: new moments m' = 0.9 m + 0.9 g and v' = v + g * g, both
  // returned and read by p' = p - m' / sqrt(v'). One loop (the splat 0.9
  // folded into it) reads p, g, m and v and writes p', m' and v': 7 x 4000
  // B at 28e6 B/s, 1 ms. Counting each op's operands and multi-use results
  // would make it 52000 B.
  cluster.memoryBandwidth = 28e6;
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    func.func @train_step(%p: tensor<1000xf32>, %g: tensor<1000xf32>,
                          %m: tensor<1000xf32>, %v: tensor<1000xf32>)
        -> (tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>) {
      %c = loom.constant dense<9.000000e-01> : tensor<1000xf32>
      %m1 = loom.mul %m, %c : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %g1 = loom.mul %g, %c : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %mn = loom.add %m1, %g1 : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %g2 = loom.mul %g, %g : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %vn = loom.add %v, %g2 : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %s = loom.sqrt %vn : tensor<1000xf32>
      %r = loom.div %mn, %s : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %pn = loom.sub %p, %r : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      return %pn, %mn, %vn : tensor<1000xf32>, tensor<1000xf32>, tensor<1000xf32>
    })mlir");
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 1 * ms, 1e-9);
}

/// `@op` of %p with two elementwise consumers, both returned.
constexpr const char *kTwoConsumers = R"mlir(
    func.func @train_step(%p: tensor<1000xf32>, %q: tensor<1000xf32>)
        -> (tensor<1000xf32>, tensor<1000xf32>) {
      %e = loom.@op %p : tensor<1000xf32>
      %a = loom.add %e, %q : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      %b = loom.mul %e, %q : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      return %a, %b : tensor<1000xf32>, tensor<1000xf32>
    })mlir";

TEST_F(StepSimulationTest, CostlyProducersAreComputedOnceAndReadByEach) {
  // A negation with two consumers is recomputed in each one's loop: two
  // loops reading %p and %q and writing a result, 2 x 12000 B at 8e6 B/s,
  // 3 ms. An exponential is computed once (reads %p, writes %e) and read
  // by both loops with %q: 8000 + 2 x 12000 B, 4 ms.
  cluster.memoryBandwidth = 8e6;
  std::string source = kTwoConsumers;
  size_t at = source.find("@op");
  FailureOr<loom::StepPrediction> cheap =
      predict(std::string(source).replace(at, 3, "neg"));
  ASSERT_TRUE(succeeded(cheap));
  EXPECT_NEAR(cheap->step, 3 * ms, 1e-9);
  FailureOr<loom::StepPrediction> costly =
      predict(std::string(source).replace(at, 3, "exp"));
  ASSERT_TRUE(succeeded(costly));
  EXPECT_NEAR(costly->step, 4 * ms, 1e-9);
}

TEST_F(StepSimulationTest, ProducersReadByProductsKeepTheirOwnLoop) {
  // %x feeds a product (1 ms) and a negation: its own loop reads %p and %q
  // and writes %x (3 x 8192 B), and the negation's loop computes it again
  // from %p and %q and writes %y (another 3 x 8192 B): 49152 B at 49.152e6
  // B/s, 1 ms. Step 2 ms.
  cluster.memoryBandwidth = 49.152e6;
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    func.func @train_step(%p: tensor<64x32xf32>, %q: tensor<64x32xf32>,
                          %b: tensor<32x16xf32>) -> (tensor<64x16xf32>, tensor<64x32xf32>) {
      %x = loom.add %p, %q : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
      %m = loom.matmul %x, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %y = loom.neg %x : tensor<64x32xf32>
      return %m, %y : tensor<64x16xf32>, tensor<64x32xf32>
    })mlir");
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 2 * ms, 1e-9);
}

/// A 2-stage mesh and stage 0: one product, sent to stage 1, then a
/// product after stage 1's reply arrives.
constexpr const char *kStageZero = R"mlir(
    loom.mesh @mesh = <pp = 2>
    func.func @train_step_stage0(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      loom.send %c on @mesh ["pp"] offset 1 : tensor<64x16xf32>
      %r = loom.recv on @mesh ["pp"] offset 1 : tensor<64x16xf32>
      %d = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      return %d : tensor<64x16xf32>
    }
)mlir";

TEST_F(StepSimulationTest, PipelineStagesWaitForTheirMessages) {
  // A message of 4096 B: 0.5 ms + 4096 B / (4.096e6 B/s) = 1.5 ms (the
  // copy out is free at this memory bandwidth). Stage 0: product [0, 1],
  // sends at 1 (arrives 2.5), then waits for stage 1's reply. Stage 1:
  // receives at 2.5, product [2.5, 3.5], replies at 3.5 (arrives 5).
  // Stage 0 receives at 5, product [5, 6]: step 6 ms, 2 of compute and 4
  // waiting.
  cluster.p2p = loom::plan::Link{4.096e6, 0.5e-3};
  cluster.memoryBandwidth = 1e18;
  FailureOr<loom::StepPrediction> p = predict(std::string(kStageZero) + R"mlir(
    func.func @train_step_stage1(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %r = loom.recv on @mesh ["pp"] offset -1 : tensor<64x16xf32>
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      loom.send %c on @mesh ["pp"] offset -1 : tensor<64x16xf32>
      return %c : tensor<64x16xf32>
    })mlir");
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 6 * ms, 1e-9);
  EXPECT_NEAR(p->compute, 2 * ms, 1e-9);
  EXPECT_NEAR(p->waiting, 4 * ms, 1e-9);
}

/// Stage 0 computes one product, sends it and waits for stage 1's; stage 1
/// computes two, then receives stage 0's and sends its second.
const std::string kUnevenStages = std::string(kStageZero) + R"mlir(
    func.func @train_step_stage1(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %e = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %r = loom.recv on @mesh ["pp"] offset -1 : tensor<64x16xf32>
      loom.send %e on @mesh ["pp"] offset -1 : tensor<64x16xf32>
      return %e : tensor<64x16xf32>
    })mlir";

/// kUnevenStages on 2 devices, messages of 1.5 ms, free copies.
class UnevenStagesTest : public StepSimulationTest {
protected:
  FailureOr<loom::StepPrediction> predictUnevenStages() {
    cluster.p2p = loom::plan::Link{4.096e6, 0.5e-3};
    cluster.memoryBandwidth = 1e18;
    cluster.devicesPerNode = 2;
    return predict(kUnevenStages);
  }
};

TEST_F(UnevenStagesTest, StagesOnTheirOwnCoresKeepTheProfilesRate) {
  // Messages take 1.5 ms (as above). Stage 0: product [0, 1], sends at 1
  // (arrives 2.5). Stage 1: products [0, 2], receives at 2.5, sends (arrives
  // 4). Stage 0 receives at 4, product [4, 5]: step 5 ms.
  FailureOr<loom::StepPrediction> p = predictUnevenStages();
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 5 * ms, 1e-9);
  EXPECT_NEAR(p->compute, 2 * ms, 1e-9);
}

TEST_F(UnevenStagesTest, TimeSharedCoresGoToTheStagesComputing) {
  // The same on 2 devices sharing 1 core: the profile's rate is that of a
  // device with the core to itself; both computing get half of it each.
  // Both compute [0, 2] (a product each at half the profile's rate). Stage
  // 0 sends at 2 (arrives 3.5) and waits; stage 1's second product runs
  // alone, [2, 3]; it receives at 3.5 and sends (arrives 5). Stage 0
  // receives at 5 and computes alone, [5, 6]: step 6 ms, of which 3
  // computing and 3 waiting.
  cluster.coresPerNode = 1;
  FailureOr<loom::StepPrediction> p = predictUnevenStages();
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 6 * ms, 1e-9);
  EXPECT_NEAR(p->compute, 3 * ms, 1e-9);
  EXPECT_NEAR(p->waiting, 3 * ms, 1e-9);
}

TEST_F(StepSimulationTest, PinnedRanksShareTheirCpuNotTheNodes) {
  // pp=4 on 2 cores: one rank per stage, stages 0 and 2 pinned to CPU 0
  // (plan::pinRanks), 1 and 3 to CPU 1. Stages 0 and 2 compute a product
  // each at once, at half the rate on their shared CPU, [0, 2], while CPU 1
  // idles (stage 1 waits for stage 0's message, stage 3 computes nothing).
  // The message (1.5 ms) arrives at 3.5: step 3.5 ms.
  cluster.p2p = loom::plan::Link{4.096e6, 0.5e-3};
  cluster.memoryBandwidth = 1e18;
  cluster.devicesPerNode = 4;
  cluster.coresPerNode = 2;
  const char *source = R"mlir(
    loom.mesh @mesh = <pp = 4>
    func.func @train_step_stage0(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      loom.send %c on @mesh ["pp"] offset 1 : tensor<64x16xf32>
      return %c : tensor<64x16xf32>
    }
    func.func @train_step_stage1(%a: tensor<64x32xf32>) -> tensor<64x16xf32> {
      %r = loom.recv on @mesh ["pp"] offset -1 : tensor<64x16xf32>
      return %r : tensor<64x16xf32>
    }
    func.func @train_step_stage2(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      return %c : tensor<64x16xf32>
    }
    func.func @train_step_stage3(%a: tensor<64x32xf32>) -> tensor<64x32xf32> {
      return %a : tensor<64x32xf32>
    })mlir";
  FailureOr<loom::StepPrediction> p = predict(source);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 3.5 * ms, 1e-9);
  // On 3 cores the 4 ranks are not pinned (they do not divide over the
  // cores): the two computing ranks share the node's 3 cores, each at the
  // profile's rate, [0, 1]; the message arrives at 2.5.
  cluster.coresPerNode = 3;
  p = predict(source);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 2.5 * ms, 1e-9);
}

TEST_F(StepSimulationTest, StagesWaitingForEachOtherAreAnError) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    loom.mesh @mesh = <pp = 2>
    func.func @train_step_stage0() -> tensor<4xf32> {
      %r = loom.recv on @mesh ["pp"] offset 1 : tensor<4xf32>
      loom.send %r on @mesh ["pp"] offset 1 : tensor<4xf32>
      return %r : tensor<4xf32>
    }
    func.func @train_step_stage1() -> tensor<4xf32> {
      %r = loom.recv on @mesh ["pp"] offset -1 : tensor<4xf32>
      loom.send %r on @mesh ["pp"] offset -1 : tensor<4xf32>
      return %r : tensor<4xf32>
    })mlir");
  EXPECT_TRUE(failed(p));
  EXPECT_NE(message.find("do not match"), std::string::npos) << message;
}

TEST_F(StepSimulationTest, MeasuredTimesBySizeTimeCollectives) {
  loom::plan::MeasuredCollective reduce(loom::plan::Link{4e6, 0.5e-3});
  reduce.ranks = 2;
  reduce.times = {{1000, 1e-3}, {3000, 2e-3}, {5000, 5e-3}};
  // Linear between the sizes around 2000 and 4000 bytes; the smallest's
  // time below; the last slope (1.5 us per byte) beyond.
  EXPECT_DOUBLE_EQ(*reduce.timeFor(2000), 1.5e-3);
  EXPECT_DOUBLE_EQ(*reduce.timeFor(4000), 3.5e-3);
  EXPECT_DOUBLE_EQ(*reduce.timeFor(10), 1e-3);
  EXPECT_DOUBLE_EQ(*reduce.timeFor(6000), 6.5e-3);
  EXPECT_FALSE(loom::plan::MeasuredCollective().timeFor(10));

  // The all-reduce of 4000 bytes over the 2 ranks measured takes 3.5 ms
  // (the fit would say 2 ms): after the 1 ms product, the wait: 4.5 ms.
  cluster.allReduce = reduce;
  const char *step = R"mlir(
    loom.mesh @mesh = <dp = 2>
    func.func @train_step(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>,
                          %g: tensor<1000xf32>) -> (tensor<64x16xf32>, tensor<1000xf32>) {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %r = loom.all_reduce sum %g on @mesh ["dp"] : tensor<1000xf32>
      return %c, %r : tensor<64x16xf32>, tensor<1000xf32>
    })mlir";
  FailureOr<loom::StepPrediction> p = predict(step);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 4.5 * ms, 1e-9);
  // Times measured over another group size: the fit.
  cluster.allReduce->ranks = 4;
  p = predict(step);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 3 * ms, 1e-9);

  // A started all-reduce takes the back-to-back times when the profile has
  // them (4000 bytes: 0.875 ms, done before the second product ends at
  // 2 ms), else the synchronous ones (3.5 ms from 1 ms: 4.5 ms).
  cluster.allReduce->ranks = 2;
  p = predict(kStartedAllReduce);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 4.5 * ms, 1e-9);
  loom::plan::MeasuredCollective backToBack = reduce;
  backToBack.times = {{1000, 0.5e-3}, {5000, 1e-3}};
  cluster.allReduceStarted = backToBack;
  p = predict(kStartedAllReduce);
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 2 * ms, 1e-9);
}

TEST_F(StepSimulationTest, GemmRatesInterpolateOnAGrid) {
  // Samples on a 2x2x2 grid (m 16|256, n 32|512, k 32|512): every corner 1
  // GFLOP/s except m=256, n=512, k=512 at 9 GFLOP/s.
  cluster.gemm.clear();
  for (int64_t m : {16, 256})
    for (int64_t n : {32, 512})
      for (int64_t k : {32, 512})
        cluster.gemm.push_back(
            {m, n, k, "fp32", m == 256 && n == 512 && k == 512 ? 9e9 : 1e9});
  // On a sample: its rate.
  EXPECT_DOUBLE_EQ(cluster.gemmRate(256, 512, 512, "fp32"), 9e9);
  EXPECT_DOUBLE_EQ(cluster.gemmRate(16, 512, 512, "fp32"), 1e9);
  // Halfway in log2 along k (128 between 32 and 512) at m=256, n=512:
  // (1 + 9) / 2.
  EXPECT_DOUBLE_EQ(cluster.gemmRate(256, 512, 128, "fp32"), 5e9);
  // A quarter of the way along m (32: log2 16 = 4, 256 = 8), halfway
  // along n and k: 1 + 8 * 0.25 * 0.5 * 0.5.
  EXPECT_DOUBLE_EQ(cluster.gemmRate(32, 128, 128, "fp32"), 1.5e9);
  // Beyond the grid: the edge's value.
  EXPECT_DOUBLE_EQ(cluster.gemmRate(4096, 4096, 4096, "fp32"), 9e9);
  EXPECT_DOUBLE_EQ(cluster.gemmRate(1, 1, 1, "fp32"), 1e9);
  // A missing corner: not a grid, so the nearest sample.
  cluster.gemm.pop_back();
  EXPECT_DOUBLE_EQ(cluster.gemmRate(256, 512, 200, "fp32"), 1e9);
}

TEST_F(StepSimulationTest, GemmRatesComeFromTheNearestMeasuredShape) {
  // Two samples; a 60x30x17 product is nearest (in log2 m, n, k) to the
  // 64x32x16 one, whose rate then times it: 2 * 64 * 16 * 32 FLOPs at
  // 65.536e6 FLOP/s = 1 ms.
  cluster.peakFp32 = 1; // not used once samples exist
  cluster.gemm = {{64, 16, 32, "fp32", 65536e3}, {1024, 1024, 1024, "fp32", 1e12}};
  EXPECT_DOUBLE_EQ(cluster.gemmRate(60, 17, 30, "fp32"), 65536e3);
  EXPECT_DOUBLE_EQ(cluster.gemmRate(2000, 900, 1100, "fp32"), 1e12);
  // No bf16 samples: the peak's roofline.
  cluster.peakBf16 = 5e9;
  cluster.gemmEfficiency = 0.5;
  EXPECT_DOUBLE_EQ(cluster.gemmRate(64, 16, 32, "bf16"), 2.5e9);
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    func.func @train_step(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      return %c : tensor<64x16xf32>
    })mlir");
  ASSERT_TRUE(succeeded(p));
  EXPECT_NEAR(p->step, 1 * ms, 1e-9);
}

} // namespace
