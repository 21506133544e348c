// RUN: loom-opt %s --split-input-file --loom-merge-fatbins --verify-diagnostics | FileCheck %s

// Two fatbins (16-byte headers: magic 0xBA55ED50, version 1, header size
// 16, then the entries' byte count, 8 each) become one object whose entries
// are both objects' in order, with the count summed (16).
// CHECK: gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_80">, "P\EDU\BA\01\00\10\00\10\00\00\00\00\00\00\00AAAAAAAABBBBBBBB">]
gpu.binary @kernels [
  #gpu.object<#nvvm.target<chip = "sm_80">, "P\ED\55\BA\01\00\10\00\08\00\00\00\00\00\00\00AAAAAAAA">,
  #gpu.object<#nvvm.target<chip = "sm_90">, "P\ED\55\BA\01\00\10\00\08\00\00\00\00\00\00\00BBBBBBBB">
]

// -----

// A cubin (format bin) is not a fatbin to merge.
// expected-error @+1 {{'gpu.binary' op has an object for #nvvm.target<chip = "sm_90"> that is not a fatbin; loom-merge-fatbins merges fatbins}}
gpu.binary @kernels [
  #gpu.object<#nvvm.target<chip = "sm_80">, "P\ED\55\BA\01\00\10\00\08\00\00\00\00\00\00\00AAAAAAAA">,
  #gpu.object<#nvvm.target<chip = "sm_90">, bin = "\7FELF">
]
