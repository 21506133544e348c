//===- SessionCheckpoint.cpp - checkpoints of a session -------------------===//
//
// loom_session_save_checkpoint and loom_session_load_checkpoint: a session's
// parameters, optimizer state and run-time hyperparameters in the checkpoint
// format of loom-run train (Training.h), through the public C API only.
//
//===----------------------------------------------------------------------===//

#include "Status.h"
#include "Training.h"
#include "loom/runtime.h"

#include <cstring>
#include <map>
#include <string>

namespace {

using loom::rt::makeStatus;

/// The whole shape of tensor `index` (what checkpoints hold).
std::vector<int64_t> wholeShape(const loom_session_t *session, size_t index) {
  int32_t rank = 0;
  int64_t dims[LOOM_MAX_RANK];
  if (loom_status_t s =
          loom_session_tensor_whole_shape(session, index, &rank, dims)) {
    loom_status_free(s);
    return {};
  }
  return std::vector<int64_t>(dims, dims + rank);
}

bool saved(loom_tensor_kind_t kind) {
  return kind == LOOM_TENSOR_PARAMETER || kind == LOOM_TENSOR_STATE ||
         kind == LOOM_TENSOR_HYPERPARAMETER;
}

} // namespace

loom_status_t loom_session_save_checkpoint(loom_session_t *session,
                                           const char *path) {
  if (!session || !path)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "session and path must not be NULL");
  loom::train::Checkpoint ckpt;
  std::string message;
  // A collective when tensors are split: every rank takes part.
  if (!loom::train::gatherSession(session, ckpt, message))
    return makeStatus(LOOM_STATUS_UNAVAILABLE, message);
  if (loom_session_rank(session) != 0)
    return nullptr;
  if (!loom::train::writeCheckpoint(path, ckpt, message))
    return makeStatus(LOOM_STATUS_NOT_FOUND, message);
  return nullptr;
}

loom_status_t loom_session_load_checkpoint(loom_session_t *session,
                                           const char *path) {
  if (!session || !path)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                 "session and path must not be NULL");
  loom::train::Checkpoint ckpt;
  std::string message;
  if (!loom::train::readCheckpoint(path, ckpt, message))
    return makeStatus(LOOM_STATUS_NOT_FOUND, message);
  std::map<std::string, std::pair<size_t, loom_tensor_info_t>> wanted;
  for (size_t i = 0, e = loom_session_tensor_count(session); i < e; ++i) {
    loom_tensor_info_t info;
    if (loom_status_t s = loom_session_tensor_info(session, i, &info))
      return s;
    if (saved(info.kind) && info.kind != LOOM_TENSOR_HYPERPARAMETER)
      wanted[info.name] = {i, info};
  }
  // Everything is checked before anything is set.
  std::string mismatch;
  for (auto &[name, entry] : wanted) {
    auto it = ckpt.tensors.find(name);
    if (it == ckpt.tensors.end()) {
      mismatch = "it has no tensor \"" + name + "\"";
      break;
    }
    if (it->second.dtype != entry.second.dtype ||
        it->second.shape != wholeShape(session, entry.first)) {
      mismatch = "\"" + name + "\" has another dtype or shape there";
      break;
    }
  }
  for (auto &[name, array] : ckpt.tensors)
    if (mismatch.empty() && !wanted.count(name))
      mismatch = "it holds \"" + name + "\", which the bundle does not have";
  for (auto &[key, value] : ckpt.numbers) {
    double current = 0;
    if (key.rfind("hparam.", 0) == 0)
      if (loom_status_t s =
              loom_session_hyperparameter(session, key.c_str() + 7, &current))
        return s;
  }
  if (!mismatch.empty())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                 std::string("checkpoint ") + path +
                     " does not match the session: " + mismatch);
  for (auto &[name, entry] : wanted) {
    const loom::npy::Array &a = ckpt.tensors[name];
    if (loom_status_t s = loom_session_set_tensor_whole(
            session, entry.first, a.data.data(), a.data.size()))
      return s;
  }
  for (auto &[key, value] : ckpt.numbers)
    if (key.rfind("hparam.", 0) == 0)
      if (loom_status_t s =
              loom_session_set_hyperparameter(session, key.c_str() + 7, value))
        return s;
  return nullptr;
}
