// RUN: not loom-opt %s --loom-shard-inputs="mesh=tp=2" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=0" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp" 2>&1 | FileCheck %s --check-prefix=SYNTAX

// AXIS: error: the mesh has no data axis "dp" (its axes: tp=2)
// SIZE: error: mesh axis "dp" must have a positive size, got 0
// SYNTAX: error: expected a mesh like dp=4 or dp=2,tp=2, got "dp"
func.func @f(%x: tensor<4xf32> {loom.input = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2" --loom-shard-inputs="mesh=dp=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: the module already has a symbol @mesh
