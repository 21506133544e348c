// RUN: loom-opt %s --split-input-file --loom-byte-booleans | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-byte-booleans | loom-opt --split-input-file --loom-byte-booleans | FileCheck %s

// loom-byte-booleans loads and stores i1 values as bytes. The ops keep their
// attributes; i8 and f32 accesses and vectors of i1 (bit-packed in memory)
// are left as they are. Running it twice changes nothing more.
// CHECK-LABEL: llvm.func @bytes
// CHECK-SAME: (%[[P:.*]]: !llvm.ptr, %[[Q:.*]]: !llvm.ptr)
// CHECK: %[[B:.*]] = llvm.load %[[P]] {alignment = 1 : i64} : !llvm.ptr -> i8
// CHECK: %[[M:.*]] = llvm.trunc %[[B]] : i8 to i1
// CHECK: %[[X:.*]] = llvm.load %[[Q]] : !llvm.ptr -> f32
// CHECK: %[[S:.*]] = llvm.select %[[M]], %[[X]], %{{.*}} : i1, f32
// CHECK: %[[W:.*]] = llvm.zext %[[M]] : i1 to i8
// CHECK: llvm.store volatile %[[W]], %[[P]] {alignment = 1 : i64} : i8, !llvm.ptr
// CHECK: llvm.load %[[P]] : !llvm.ptr -> vector<16xi1>
// CHECK: llvm.load %[[P]] : !llvm.ptr -> i8
// CHECK-NOT: llvm.trunc
// CHECK: llvm.return %[[S]]
llvm.func @bytes(%p: !llvm.ptr, %q: !llvm.ptr) -> f32 {
  %zero = llvm.mlir.constant(0.0 : f32) : f32
  %m = llvm.load %p {alignment = 1 : i64} : !llvm.ptr -> i1
  %x = llvm.load %q : !llvm.ptr -> f32
  %s = llvm.select %m, %x, %zero : i1, f32
  llvm.store volatile %m, %p {alignment = 1 : i64} : i1, !llvm.ptr
  %v = llvm.load %p : !llvm.ptr -> vector<16xi1>
  %b = llvm.load %p : !llvm.ptr -> i8
  llvm.return %s : f32
}
