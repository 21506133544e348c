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

TEST_F(StepSimulationTest, AllReduceOverlapsTheWorkUntilItsWait) {
  // all-reduce of 4000 bytes over 2 ranks: 2 (2 - 1) x 0.5 ms latency +
  // 2 (2 - 1) / 2 x 4000 B / (4e6 B/s) = 1 ms + 1 ms = 2 ms. Timeline:
  // product [0, 1], all-reduce started at 1 ends at 3, product [1, 2], the
  // wait until 3: step 3 ms, of which 2 compute and 1 exposed.
  cluster.allReduce = loom::plan::Link{4e6, 0.5e-3};
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    loom.mesh @mesh = <dp = 2>
    func.func @train_step(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>,
                          %g: tensor<1000xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<1000xf32>) {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %s = loom.all_reduce_start sum %g on @mesh ["dp"] : tensor<1000xf32>
      %d = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      %w = loom.wait %s : tensor<1000xf32>
      return %c, %d, %w : tensor<64x16xf32>, tensor<64x16xf32>, tensor<1000xf32>
    })mlir");
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

TEST_F(StepSimulationTest, PipelineStagesWaitForTheirMessages) {
  // A message of 4096 B: 0.5 ms + 4096 B / (4.096e6 B/s) = 1.5 ms (the
  // copy out is free at this memory bandwidth). Stage 0: product [0, 1],
  // sends at 1 (arrives 2.5), then waits for stage 1's reply. Stage 1:
  // receives at 2.5, product [2.5, 3.5], replies at 3.5 (arrives 5).
  // Stage 0 receives at 5, product [5, 6]: step 6 ms, 2 of compute and 4
  // waiting.
  cluster.p2p = loom::plan::Link{4.096e6, 0.5e-3};
  cluster.memoryBandwidth = 1e18;
  FailureOr<loom::StepPrediction> p = predict(R"mlir(
    loom.mesh @mesh = <pp = 2>
    func.func @train_step_stage0(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>) -> tensor<64x16xf32> {
      %c = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      loom.send %c on @mesh ["pp"] offset 1 : tensor<64x16xf32>
      %r = loom.recv on @mesh ["pp"] offset 1 : tensor<64x16xf32>
      %d = loom.matmul %a, %b : (tensor<64x32xf32>, tensor<32x16xf32>) -> tensor<64x16xf32>
      return %d : tensor<64x16xf32>
    }
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
