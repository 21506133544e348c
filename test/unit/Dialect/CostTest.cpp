//===- CostTest.cpp - the cost interface against hand-counted values ------===//
//
// Each expected number is worked out by hand in the comment above it, from
// the op's definition, not from Loom's code.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"
#include "loom/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class CostTest : public ::testing::Test {
protected:
  CostTest() {
    DialectRegistry registry;
    loom::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `body` (the ops of a function whose arguments are given by
  /// `args`) and returns the cost interface of the first loom op.
  loom::CostOpInterface firstOp(StringRef args, StringRef body) {
    std::string source = ("func.func @f(" + args + ") {\n" + body +
                          "\n  return\n}\n")
                             .str();
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    loom::CostOpInterface found;
    if (module)
      module->walk([&](loom::CostOpInterface op) {
        if (!found)
          found = op;
      });
    EXPECT_TRUE(found);
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(CostTest, Matmul) {
  // [8,16] x [16,4]: 8*4 outputs, each 16 multiply-adds -> 2*8*4*16 FLOPs.
  // Reads 8*16 + 16*4 floats (768 bytes), writes 8*4 floats (128 bytes).
  auto op = firstOp("%a: tensor<8x16xf32>, %b: tensor<16x4xf32>",
                    "%0 = loom.matmul %a, %b : (tensor<8x16xf32>, "
                    "tensor<16x4xf32>) -> tensor<8x4xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 1024);
  EXPECT_EQ(op.getBytesRead(), 768);
  EXPECT_EQ(op.getBytesWritten(), 128);
}

TEST_F(CostTest, BatchedTransposedMatmul) {
  // lhs [2,3,5,7] transposed: M = 7, K = 5; result [2,3,7,4] = 168 outputs,
  // each 5 multiply-adds -> 1680 FLOPs.
  auto op = firstOp("%a: tensor<2x3x5x7xf32>, %b: tensor<5x4xf32>",
                    "%0 = loom.matmul %a, %b {transpose_lhs} : "
                    "(tensor<2x3x5x7xf32>, tensor<5x4xf32>) -> "
                    "tensor<2x3x7x4xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 1680);
}

TEST_F(CostTest, ConvWithBias) {
  // 3x3 conv, 3 -> 16 channels, pad 1, on 8x8: 16*8*8 = 1024 outputs, each
  // 3*3*3 = 27 multiply-adds plus one bias add -> 2*27*1024 + 1024 = 56320.
  auto op = firstOp(
      "%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>",
      "%0 = loom.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = "
      "array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : "
      "(tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> "
      "tensor<1x16x8x8xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 56320);
  // Reads 192 + 432 + 16 floats, writes 1024 floats.
  EXPECT_EQ(op.getBytesRead(), (192 + 432 + 16) * 4);
  EXPECT_EQ(op.getBytesWritten(), 1024 * 4);
}

TEST_F(CostTest, GroupedConv) {
  // 2 groups of 2 input channels; 8 filters of 2x3x3 on 6x6, no pad: 4x4
  // outputs per filter = 128 outputs, each 18 multiply-adds -> 4608 FLOPs.
  auto op = firstOp(
      "%x: tensor<1x4x6x6xf32>, %w: tensor<8x2x3x3xf32>",
      "%0 = loom.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: "
      "0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : "
      "(tensor<1x4x6x6xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 4608);
}

TEST_F(CostTest, MaxPool) {
  // 2x2 windows, stride 2, on 4x4: 4 outputs, each compares 4 values.
  auto op = firstOp("%x: tensor<1x1x4x4xf32>",
                    "%0 = loom.max_pool %x {kernel_shape = array<i64: 2, 2>, "
                    "strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, "
                    "0>, dilations = array<i64: 1, 1>} : "
                    "(tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 16);
}

TEST_F(CostTest, Lstm) {
  // seq 5, batch 2, input 3, hidden 4, one direction: per step the gate
  // products are 2*2*16*(3+4) = 448 FLOPs and the pointwise work is
  // 17*4*2 = 136 -> 5 * 584 = 2920.
  auto op = firstOp(
      "%x: tensor<5x2x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>",
      "%y, %h, %c = loom.lstm forward %x, %w, %r {hidden_size = 4 : i64} : "
      "(tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>) -> "
      "(tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 2920);
}

TEST_F(CostTest, ElementwiseAndMovement) {
  // add: one FLOP per output element (12); reads 2*12 floats.
  auto add = firstOp("%a: tensor<3x4xf32>, %b: tensor<3x4xf32>",
                     "%0 = loom.add %a, %b : (tensor<3x4xf32>, "
                     "tensor<3x4xf32>) -> tensor<3x4xf32>");
  ASSERT_TRUE(add);
  EXPECT_EQ(add.getFlops(), 12);
  EXPECT_EQ(add.getBytesRead(), 96);
  // reshape only changes metadata: no FLOPs, no traffic.
  auto reshape = firstOp("%a: tensor<3x4xf32>",
                         "%0 = loom.reshape %a : tensor<3x4xf32> -> "
                         "tensor<12xf32>");
  ASSERT_TRUE(reshape);
  EXPECT_EQ(reshape.getFlops(), 0);
  EXPECT_EQ(reshape.getBytesRead(), 0);
  // transpose moves data but computes nothing; bf16 is 2 bytes.
  auto transpose = firstOp("%a: tensor<3x4xbf16>",
                           "%0 = loom.transpose %a {perm = array<i64: 1, 0>} "
                           ": tensor<3x4xbf16> -> tensor<4x3xbf16>");
  ASSERT_TRUE(transpose);
  EXPECT_EQ(transpose.getFlops(), 0);
  EXPECT_EQ(transpose.getBytesWritten(), 24);
}

TEST_F(CostTest, Reductions) {
  // reduce_sum of 3x4 over axis 1: 12 additions (one per input element).
  auto op = firstOp("%a: tensor<3x4xf32>",
                    "%0 = loom.reduce_sum %a {axes = array<i64: 1>} : "
                    "(tensor<3x4xf32>) -> tensor<3xf32>");
  ASSERT_TRUE(op);
  EXPECT_EQ(op.getFlops(), 12);
}

} // namespace
