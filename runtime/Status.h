//===- Status.h - libloomrt's status objects --------------------*- C++ -*-===//
//
// The object behind loom_status_t, shared by the files of libloomrt.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_STATUS_H
#define LOOM_RUNTIME_STATUS_H

#include "loom/runtime.h"

#include <new>
#include <string>

struct loom_status_s {
  loom_status_code_t code;
  std::string message;
};

namespace loom::rt {

/// A status the caller owns (NULL if even that cannot be allocated).
inline loom_status_t makeStatus(loom_status_code_t code, std::string message) {
  return new (std::nothrow) loom_status_s{code, std::move(message)};
}

} // namespace loom::rt

#endif // LOOM_RUNTIME_STATUS_H
