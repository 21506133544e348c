// RUN: loom-opt %s --split-input-file --loom-check-p2p --verify-diagnostics

// Two stages that both receive before they send wait for each other
// forever: the check names the stage, the operation and its peer.
loom.mesh @mesh = <pp = 2>
func.func @stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {loom.pipeline_stage = 0 : i64} {
  // expected-error @+1 {{the pipeline schedule deadlocks: stage 0 waits in 'loom.recv' of 'tensor<4xf32>' from stage 1, which waits in 'loom.recv' of 'tensor<4xf32>' from stage 0}}
  %g = loom.recv on @mesh ["pp"] offset 1 : tensor<4xf32>
  loom.send %a on @mesh ["pp"] offset 1 : tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func @stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {loom.pipeline_stage = 1 : i64} {
  %x = loom.recv on @mesh ["pp"] offset -1 : tensor<4xf32>
  loom.send %x on @mesh ["pp"] offset -1 : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// The same exchange with stage 0 sending first completes (sends do not
// block): no diagnostic.
loom.mesh @mesh = <pp = 2>
func.func @stage0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {loom.pipeline_stage = 0 : i64} {
  loom.send %a on @mesh ["pp"] offset 1 : tensor<4xf32>
  %g = loom.recv on @mesh ["pp"] offset 1 : tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func @stage1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {loom.pipeline_stage = 1 : i64} {
  %x = loom.recv on @mesh ["pp"] offset -1 : tensor<4xf32>
  loom.send %x on @mesh ["pp"] offset -1 : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// Messages between two stages arrive in the order they were sent: a
// receive that expects another type than the next message is an error.
loom.mesh @mesh = <pp = 2>
func.func @stage0(%a: tensor<4xf32>, %b: tensor<2xf32>) attributes {loom.pipeline_stage = 0 : i64} {
  loom.send %a on @mesh ["pp"] offset 1 : tensor<4xf32>
  loom.send %b on @mesh ["pp"] offset 1 : tensor<2xf32>
  return
}
func.func @stage1() -> tensor<2xf32> attributes {loom.pipeline_stage = 1 : i64} {
  // expected-error @+1 {{stage 1 receives 'tensor<2xf32>' from stage 0, whose next message to it is 'loom.send' of tensor<4xf32>}}
  %x = loom.recv on @mesh ["pp"] offset -1 : tensor<2xf32>
  %y = loom.recv on @mesh ["pp"] offset -1 : tensor<4xf32>
  return %x : tensor<2xf32>
}

// -----

// A message nobody receives.
loom.mesh @mesh = <pp = 2>
func.func @stage0(%a: tensor<4xf32>) attributes {loom.pipeline_stage = 0 : i64} {
  // expected-error @+1 {{stage 0 sends 1 message(s) that stage 1 never receives}}
  loom.send %a on @mesh ["pp"] offset 1 : tensor<4xf32>
  return
}
func.func @stage1() attributes {loom.pipeline_stage = 1 : i64} {
  return
}

// -----

// An offset that leaves the stages (the last stage sending on).
loom.mesh @mesh = <pp = 2>
func.func @stage0() attributes {loom.pipeline_stage = 0 : i64} {
  return
}
func.func @stage1(%a: tensor<4xf32>) attributes {loom.pipeline_stage = 1 : i64} {
  // expected-error @+1 {{'loom.send' op on stage 1 names stage 2 (offset 1), which is not another of the 2 stages}}
  loom.send %a on @mesh ["pp"] offset 1 : tensor<4xf32>
  return
}

// -----

// Stage numbers with a gap.
// expected-error @+1 {{no program for pipeline stage 1}}
module {
  func.func @stage0() attributes {loom.pipeline_stage = 0 : i64} {
    return
  }
  func.func @stage2() attributes {loom.pipeline_stage = 2 : i64} {
    return
  }
}
