//===- loom-opt.cpp - Loom's pass driver ----------------------------------===//
//
// mlir-opt with the loom dialect and passes: runs any pass or pipeline on
// loom IR, so everything loomc does can be reproduced step by step.
//
//===----------------------------------------------------------------------===//

#include "loom/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::loom::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::loom::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Loom optimizer driver\n", registry));
}
