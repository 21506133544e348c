//===- Pretrained.h - tensors to start fine-tuning from ---------*- C++ -*-===//
//
// `loom-run train --init-from FILE` reads named tensors from a
// `.safetensors` file (PyTorch and Hugging Face state dicts), a `.npz`
// archive (numpy.savez) or a Loom checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_RUN_PRETRAINED_H
#define LOOM_TOOLS_LOOM_RUN_PRETRAINED_H

#include "Npy.h"

#include <map>
#include <string>

namespace loom::run {

struct Pretrained {
  std::map<std::string, npy::Array> tensors;
  /// Tensors of the file that are not parameters (a Loom checkpoint's
  /// optimizer state), which loading skips without a word.
  std::map<std::string, bool> state;
};

/// Reads `path` by its extension: `.safetensors`, `.npz`, else a Loom
/// checkpoint. On failure returns false and sets `error`, which names the
/// file and the problem.
bool readPretrained(const std::string &path, Pretrained &out,
                    std::string &error);

} // namespace loom::run

#endif // LOOM_TOOLS_LOOM_RUN_PRETRAINED_H
