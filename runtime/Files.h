//===- Files.h - whole-file reads of the runtime ----------------*- C++ -*-===//
//
// Reads a file's bytes at once: bundles' parameters, .npy tensors, token
// files and checkpoints. Part of the runtime's support code: no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_FILES_H
#define LOOM_RUNTIME_FILES_H

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace loom::rt {

/// Reads the whole of `path` into `bytes`; false when it cannot be opened or
/// is a directory (whose stream read would throw from inside libstdc++ and
/// end the process). A regular file is read with one read of its size into a
/// buffer allocated once (reading it through stream iterators, a character at a
/// time into a buffer that doubles, took about 4x as long for a 300 MB file and
/// could leave twice its size allocated); anything else (a pipe) is read as a
/// stream.
inline bool readWholeFile(const std::string &path, std::vector<char> &bytes) {
  struct stat info {};
  bool known = ::stat(path.c_str(), &info) == 0;
  if (known && S_ISDIR(info.st_mode))
    return false;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  if (known && S_ISREG(info.st_mode)) {
    bytes.resize(size_t(info.st_size));
    in.read(bytes.data(), std::streamsize(bytes.size()));
    // A file that shrank since stat keeps what could be read, as a stream
    // read would.
    bytes.resize(size_t(in.gcount()));
    return true;
  }
  bytes.assign(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
  return true;
}

} // namespace loom::rt

#endif // LOOM_RUNTIME_FILES_H
