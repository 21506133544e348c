//===- GradientCoverageTest.cpp - which loom ops lack a gradient ----------===//
//
// Every op of the loom dialect either implements GradientOpInterface or is
// listed here with the reason it needs none: its results can never be
// floating-point (proven below by the verifier, which must accept the op
// with an integer or boolean result and reject it with a float one), or it
// never reaches autodiff (documented, with the pass that makes sure). A new
// op without a gradient, or a listed op that gained one, fails the test.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"
#include "loom/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace mlir;

namespace {

/// An op whose results are integers or booleans whatever its operands: a
/// function body using it with an integer result, and the same with a float
/// result, which the verifier must reject.
struct IntegerOnly {
  const char *valid;
  const char *floatResult;
};

const std::map<std::string, IntegerOnly> &integerOnlyOps() {
  static const std::map<std::string, IntegerOnly> ops = {
      {"loom.argmax",
       {"%r = loom.argmax %x {axis = 0 : i64} : (tensor<4xf32>) -> tensor<i64>",
        "%r = loom.argmax %x {axis = 0 : i64} : (tensor<4xf32>) -> tensor<f32>"}},
      {"loom.argmin",
       {"%r = loom.argmin %x {axis = 0 : i64} : (tensor<4xf32>) -> tensor<i64>",
        "%r = loom.argmin %x {axis = 0 : i64} : (tensor<4xf32>) -> tensor<f32>"}},
      {"loom.equal",
       {"%r = loom.equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>",
        "%r = loom.equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"}},
      {"loom.less",
       {"%r = loom.less %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>",
        "%r = loom.less %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"}},
      {"loom.less_equal",
       {"%r = loom.less_equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xi1>",
        "%r = loom.less_equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
      {"loom.greater",
       {"%r = loom.greater %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xi1>",
        "%r = loom.greater %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
      {"loom.greater_equal",
       {"%r = loom.greater_equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xi1>",
        "%r = loom.greater_equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
      {"loom.not",
       {"%r = loom.not %b : tensor<4xi1>", "%r = loom.not %x : tensor<4xf32>"}},
      {"loom.and",
       {"%r = loom.and %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>",
        "%r = loom.and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
      {"loom.or",
       {"%r = loom.or %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>",
        "%r = loom.or %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
      {"loom.xor",
       {"%r = loom.xor %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>",
        "%r = loom.xor %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
      {"loom.mod",
       {"%r = loom.mod %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>",
        "%r = loom.mod %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
        "tensor<4xf32>"}},
  };
  return ops;
}

/// Ops that never reach autodiff, and why. The README's training section
/// repeats this list.
const std::map<std::string, std::string> &documentedOps() {
  static const std::map<std::string, std::string> ops = {
      {"loom.lstm", "unrolled into its time steps (differentiable ops) by "
                    "loom-build-train-step before differentiation"},
      {"loom.gru", "unrolled like loom.lstm"},
      {"loom.moe", "expanded into its routing, dispatch, experts and combine "
                   "(differentiable ops) by loom-build-train-step and "
                   "loom-differentiate before differentiation"},
      {"loom.mesh", "a declaration without results"},
      {"loom.shard", "inserted by the sharding passes, after the training "
                     "step is built"},
      {"loom.all_reduce", "collectives are inserted by loom-partition after "
                          "differentiation"},
      {"loom.all_reduce_start", "as loom.all_reduce"},
      {"loom.wait", "as loom.all_reduce"},
      {"loom.all_gather", "as loom.all_reduce"},
      {"loom.reduce_scatter", "as loom.all_reduce"},
      {"loom.local_block", "as loom.all_reduce"},
      {"loom.all_to_all", "as loom.all_reduce"},
      {"loom.send", "as loom.all_reduce"},
      {"loom.recv", "as loom.all_reduce"},
      {"loom.pipeline_mark", "inserted by loom-pipeline after autodiff; "
                             "has no operands or results"},
      {"loom.optimization_barrier",
       "inserted by loom-remat into the training step, after autodiff"},
      {"loom.block_index", "inserted by loom-partition (a rank's block "
                           "number, an integer)"},
  };
  return ops;
}

class GradientCoverageTest : public ::testing::Test {
protected:
  GradientCoverageTest() {
    DialectRegistry registry;
    loom::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Whether `body` parses and verifies as a function of %x (f32), %b (i1)
  /// and %i (i64) vectors.
  bool verifies(StringRef body) {
    std::string source =
        ("func.func @f(%x: tensor<4xf32>, %b: tensor<4xi1>, "
         "%i: tensor<4xi64>) {\n  " +
         body + "\n  return\n}\n")
            .str();
    ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
      return success();
    });
    return static_cast<bool>(parseSourceString<ModuleOp>(source, &context));
  }

  MLIRContext context;
};

TEST_F(GradientCoverageTest, EveryOpHasAGradientOrAReason) {
  std::vector<std::string> withGradient, missing, stale;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "loom")
      continue;
    std::string op = name.getStringRef().str();
    bool listed = integerOnlyOps().count(op) || documentedOps().count(op);
    if (name.hasInterface<loom::GradientOpInterface>()) {
      withGradient.push_back(op);
      if (listed)
        stale.push_back(op);
    } else if (!listed) {
      missing.push_back(op);
    }
  }
  for (const std::string &op : missing)
    ADD_FAILURE() << op << " has no gradient and is not integer-only or "
                           "documented here";
  for (const std::string &op : stale)
    ADD_FAILURE() << op << " has a gradient now; remove it from the list";
  // The dialect's ops are all registered: the lists cannot be satisfied by
  // an empty registry.
  EXPECT_GT(withGradient.size(), 60u);
  std::string text;
  for (const std::string &op : withGradient)
    text += " " + op;
  std::printf("%zu ops with a gradient:%s\n", withGradient.size(),
              text.c_str());
}

TEST_F(GradientCoverageTest, IntegerOnlyOpsRejectFloatResults) {
  for (const auto &[op, snippets] : integerOnlyOps()) {
    EXPECT_TRUE(verifies(snippets.valid))
        << op << ": the integer form must verify: " << snippets.valid;
    EXPECT_FALSE(verifies(snippets.floatResult))
        << op << " accepted a float result: " << snippets.floatResult;
  }
}

TEST_F(GradientCoverageTest, ListedOpsExist) {
  for (const auto &[op, snippets] : integerOnlyOps())
    EXPECT_TRUE(RegisteredOperationName::lookup(op, &context)) << op;
  for (const auto &[op, reason] : documentedOps())
    EXPECT_TRUE(RegisteredOperationName::lookup(op, &context)) << op;
}

} // namespace
