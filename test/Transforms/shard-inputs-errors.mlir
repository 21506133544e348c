// RUN: not loom-opt %s --loom-shard-inputs="mesh=tp=2 zero=1" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2 tp-plan=auto" 2>&1 | FileCheck %s --check-prefix=TPAXIS
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2 tp-plan=some" 2>&1 | FileCheck %s --check-prefix=TPPLAN
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=2 shard=y=[{tp}]" 2>&1 | FileCheck %s --check-prefix=UNUSED
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=2 shard=x" 2>&1 | FileCheck %s --check-prefix=NOSPEC
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=2 shard=x=[{pp}]" 2>&1 | FileCheck %s --check-prefix=NOAXIS
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2,tp=3 shard=x=[{tp}]" 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=0" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp" 2>&1 | FileCheck %s --check-prefix=SYNTAX

// AXIS: error: ZeRO shards over the data axis, but the mesh has no axis "dp" (its axes: tp=2)
// TPAXIS: error: --tp-plan=auto splits over the mesh axis "tp", which the mesh has not (its axes: dp=2)
// TPPLAN: error: tp-plan must be none or auto, got "some"
// UNUSED: error: --shard "y=[{tp}]" matches no parameter or input (parameters: )
// NOSPEC: error: expected --shard NAME_GLOB=[{axes}, ...], e.g. 'h.*.fc1.weight=[{tp}, {}]', got "x"
// NOAXIS: error: --shard "x=[{pp}]" names mesh axis "pp", which the mesh does not have
// DIVIDE: error: --shard "x=[{tp}]": cannot split "x" 'tensor<4xf32>': mesh axis "tp" of size 3 does not divide dimension 0 (size 4)
// SIZE: error: mesh axis "dp" must have a positive size, got 0
// SYNTAX: error: expected a mesh like dp=4 or dp=2,tp=2, got "dp"
func.func @f(%x: tensor<4xf32> {loom.input = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// RUN: not loom-opt %s --loom-shard-inputs="mesh=dp=2" --loom-shard-inputs="mesh=dp=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: the module already has a symbol @mesh
