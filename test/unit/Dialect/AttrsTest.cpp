//===- AttrsTest.cpp - mesh and sharding attributes -----------------------===//
//
// The queries later passes rely on: axis sizes, device counts and whether a
// sharding fits a tensor.
//
//===----------------------------------------------------------------------===//

#include "dialects/Loom/LoomOps.h"
#include "loom/InitAll.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::loom;

namespace {

class AttrsTest : public ::testing::Test {
protected:
  AttrsTest() : builder(&context) { context.loadDialect<LoomDialect>(); }

  MeshAttr mesh(ArrayRef<std::pair<StringRef, int64_t>> axes) {
    SmallVector<StringAttr> names;
    SmallVector<int64_t> sizes;
    for (auto [name, size] : axes) {
      names.push_back(builder.getStringAttr(name));
      sizes.push_back(size);
    }
    return MeshAttr::get(&context, names, sizes);
  }

  ShardingAttr sharding(ArrayRef<ArrayRef<StringRef>> dims) {
    SmallVector<Attribute> dimAttrs;
    for (ArrayRef<StringRef> axes : dims)
      dimAttrs.push_back(builder.getStrArrayAttr(axes));
    return ShardingAttr::get(&context, FlatSymbolRefAttr::get(&context, "m"),
                             builder.getArrayAttr(dimAttrs),
                             builder.getArrayAttr({}));
  }

  /// Runs verifyFor and returns the diagnostic text ("" when it fits).
  std::string check(ShardingAttr s, ArrayRef<int64_t> shape, MeshAttr m) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      message = d.str();
      return success();
    });
    auto type = RankedTensorType::get(shape, builder.getF32Type());
    LogicalResult result = s.verifyFor(
        type, m, [&] { return emitError(builder.getUnknownLoc()); });
    EXPECT_EQ(succeeded(result), message.empty());
    return message;
  }

  MLIRContext context;
  Builder builder;
};

TEST_F(AttrsTest, MeshQueries) {
  MeshAttr m = mesh({{"dp", 4}, {"tp", 2}});
  EXPECT_EQ(m.getNumDevices(), 8);
  EXPECT_EQ(m.getAxisSize("tp"), std::optional<int64_t>(2));
  EXPECT_EQ(m.getAxisSize("pp"), std::nullopt);
}

TEST_F(AttrsTest, ShardingFits) {
  MeshAttr m = mesh({{"dp", 4}, {"tp", 2}});
  EXPECT_EQ(check(sharding({{"dp"}, {"tp"}}), {8, 6}, m), "");
  // dp and tp together split dimension 0 eight ways.
  EXPECT_EQ(check(sharding({{"dp", "tp"}, {}}), {16, 3}, m), "");
}

TEST_F(AttrsTest, ShardingDoesNotDivide) {
  MeshAttr m = mesh({{"dp", 4}, {"tp", 3}});
  EXPECT_EQ(check(sharding({{}, {"tp"}}), {8, 1024}, m),
            "mesh axis \"tp\" of size 3 does not divide dimension 1 (size "
            "1024)");
}

TEST_F(AttrsTest, ShardingUnknownAxisAndRank) {
  MeshAttr m = mesh({{"dp", 2}});
  EXPECT_EQ(check(sharding({{"tp"}}), {4}, m),
            "mesh @m has no axis \"tp\"");
  EXPECT_EQ(check(sharding({{"dp"}}), {4, 4}, m),
            "sharding has 1 dimensions but the tensor has rank 2");
}

} // namespace
