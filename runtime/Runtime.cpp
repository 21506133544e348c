//===- Runtime.cpp - libloomrt: bundles, buffers, runs --------------------===//
//
// Implements include/loom/runtime.h. A session reads the bundle's manifest,
// maps its shared library with dlopen, owns one 64-byte aligned buffer per
// tensor (parameters start from params.bin), and calls the entry point with
// one memref descriptor per tensor. No exception leaves this file.
//
// A bundle for a device (manifest "target": "cuda") runs on a device engine
// (libloomrt_cuda.so, opened with the bundle: CudaEngine.h): each tensor has
// a device buffer too, which the descriptors point at. The host buffer is
// its mirror at the API's boundary: what the caller writes is copied to the
// device before the next run, and what a run computes is copied back when
// the caller reads it, so parameters and optimizer state stay on the device
// from step to step. "cuda-emulated" bundles (loomc --target=cuda-emulated)
// run the same way on libloomrt_cuda_emulated.so, whose "device" memory is
// host memory: the CPU's check of this bookkeeping.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"
#include "Allocator.h"
#include "Collectives.h"
#include "Files.h"
#include "Status.h"
#include "Trace.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using loom::rt::makeStatus;

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, AlignedFree>;

struct Tensor {
  std::string name;
  loom_tensor_kind_t kind;
  loom_dtype_t dtype;
  std::vector<int64_t> shape;
  size_t bytes = 0;
  Buffer data;
  bool set = false;
  /// For integer inputs used as indices: the values allowed, [lo, hi), and
  /// an extra allowed value (a loss's ignore index).
  bool checkRange = false;
  int64_t rangeLo = 0, rangeHi = 0;
  bool hasIgnore = false;
  int64_t ignore = 0;
  std::string rangeMeaning;
  /// Index of the parameter or state this output replaces, or -1.
  int64_t updates = -1;
  std::string updatesName;
  /// Where a parameter's initial (whole) value lies in the parameters file.
  int64_t initOffset = -1, initBytes = -1;
  /// Mesh axes (indices into the session's mesh) splitting each dimension,
  /// major to minor; empty when replicated.
  std::vector<std::vector<size_t>> sharding;
  /// The whole shape as the model names it, when the bundle views the
  /// tensor in another shape (same row-major data); empty otherwise.
  std::vector<int64_t> logicalShape;
  /// The memref descriptor: allocated and aligned pointers, offset, sizes,
  /// strides (all 8-byte words).
  std::vector<int64_t> descriptor;
  /// With pipeline parallelism: the stage whose ranks hold the tensor, or
  /// -1 when every stage has its own (the step counter). A remote tensor
  /// is another stage's parameter or state: known by name and shape so that
  /// checkpoints and saved parameters stay whole, but not held here.
  int64_t owner = -1;
  bool remote = false;
  /// On a device engine: the device buffer, and which copy is behind (the
  /// device's after the caller wrote the host's, the host's after a run).
  void *device = nullptr;
  bool deviceStale = false;
  mutable bool hostStale = false;
};

/// A device engine's functions (CudaEngine.h), from the library opened for
/// the bundle's target.
struct DeviceEngine {
  void *(*alloc)(uint64_t) = nullptr;
  void (*free)(void *) = nullptr;
  int (*copy)(void *, const void *, size_t) = nullptr;
  size_t (*takeError)(char *, size_t) = nullptr;
  void (*memoryStats)(size_t *, size_t *, size_t *) = nullptr;
  void (*resetPeak)() = nullptr;

  /// The engine's first error since the last call ("" if none).
  std::string error() const {
    char buffer[1024];
    return takeError(buffer, sizeof buffer) ? std::string(buffer)
                                            : std::string();
  }
};

/// The engines this process opened, by target.
std::map<std::string, DeviceEngine> engines;
std::mutex enginesMutex;

/// The engine of `target` ("cuda": libloomrt_cuda.so; "cuda-emulated":
/// libloomrt_cuda_emulated.so), opened once per process from libloomrt's
/// own directory with its symbols global (the bundle's code calls them);
/// null with `error` set when it cannot be opened.
const DeviceEngine *deviceEngine(const std::string &target,
                                 std::string &error) {
  std::lock_guard<std::mutex> lock(enginesMutex);
  auto found = engines.find(target);
  if (found != engines.end())
    return &found->second;
  std::string name =
      target == "cuda" ? "libloomrt_cuda.so" : "libloomrt_cuda_emulated.so";
  std::string path = name;
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&deviceEngine), &self) &&
      self.dli_fname) {
    std::string dir = self.dli_fname;
    size_t slash = dir.rfind('/');
    if (slash != std::string::npos)
      path = dir.substr(0, slash + 1) + name;
  }
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library) {
    const char *why = dlerror();
    error =
        "the bundle is for " + target + " and needs " + name +
        (target == "cuda" ? " (libloomrt built with the CUDA toolkit)" : "") +
        ": " + (why ? why : "cannot be loaded");
    return nullptr;
  }
  DeviceEngine engine;
  auto bind = [&](auto &fn, const char *symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(library, symbol));
    return fn != nullptr;
  };
  if (!bind(engine.alloc, "loomCudaAlloc") ||
      !bind(engine.free, "loomCudaFree") ||
      !bind(engine.copy, "loomCudaCopy") ||
      !bind(engine.takeError, "loomCudaTakeError") ||
      !bind(engine.memoryStats, "loomCudaMemoryStats") ||
      !bind(engine.resetPeak, "loomCudaResetPeak")) {
    error = path + " is not a Loom device engine";
    return nullptr;
  }
  return &engines.emplace(target, engine).first->second;
}

} // namespace

void loom::rt::resetDevicePeaks() {
  std::lock_guard<std::mutex> lock(enginesMutex);
  for (auto &entry : engines)
    entry.second.resetPeak();
}

namespace {

bool parseDtype(const std::string &name, loom_dtype_t &out) {
  static const std::pair<const char *, loom_dtype_t> table[] = {
      {"float32", LOOM_DTYPE_FLOAT32}, {"float64", LOOM_DTYPE_FLOAT64},
      {"float16", LOOM_DTYPE_FLOAT16}, {"bfloat16", LOOM_DTYPE_BFLOAT16},
      {"int64", LOOM_DTYPE_INT64},     {"int32", LOOM_DTYPE_INT32},
      {"int16", LOOM_DTYPE_INT16},     {"int8", LOOM_DTYPE_INT8},
      {"bool", LOOM_DTYPE_BOOL}};
  for (const auto &[n, d] : table)
    if (name == n) {
      out = d;
      return true;
    }
  return false;
}

} // namespace

struct loom_session_t;

namespace {

/// The block of a split tensor that one rank holds: per dimension, its
/// index and the number of blocks.
struct BlockPlace {
  std::vector<int64_t> index, count;
};

BlockPlace blockPlace(const loom_session_t &session, const Tensor &t,
                      int64_t rank);

/// How many blocks the whole tensor has.
size_t blockCount(const BlockPlace &place) {
  size_t blocks = 1;
  for (int64_t c : place.count)
    blocks *= (size_t)c;
  return blocks;
}

/// The tensor's shape before splitting (the block's shape times the blocks).
std::vector<int64_t> globalShape(const Tensor &t, const BlockPlace &place) {
  std::vector<int64_t> shape = t.shape;
  for (size_t d = 0; d < shape.size(); ++d)
    shape[d] *= place.count[d];
  return shape;
}

/// Copies between a whole row-major tensor of `whole` shape and the block
/// at `place` (of `block` shape): into the whole tensor when `intoWhole`.
void copyBlock(char *wholeData, char *blockData,
               const std::vector<int64_t> &whole,
               const std::vector<int64_t> &block, const BlockPlace &place,
               size_t elementSize, bool intoWhole) {
  size_t rank = whole.size();
  if (rank == 0) {
    if (intoWhole)
      std::memcpy(wholeData, blockData, elementSize);
    else
      std::memcpy(blockData, wholeData, elementSize);
    return;
  }
  // Runs of the innermost dimension are contiguous in both.
  size_t run = (size_t)block[rank - 1] * elementSize;
  int64_t runs = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    runs *= block[d];
  std::vector<int64_t> at(rank, 0);
  for (int64_t r = 0; r < runs; ++r) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset = offset * whole[d] + place.index[d] * block[d] + at[d];
    char *w = wholeData + (size_t)offset * elementSize;
    char *b = blockData + (size_t)r * run;
    if (intoWhole)
      std::memcpy(w, b, run);
    else
      std::memcpy(b, w, run);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++at[d] < block[d])
        break;
      at[d] = 0;
    }
  }
}

} // namespace

struct loom_session_t {
  void *library = nullptr;
  void (*entry)(void **) = nullptr;
  std::vector<Tensor> tensors;
  std::vector<void *> descriptors;
  /// The distributed run this session joined, if any; shared by every
  /// session of the process (one process is one rank).
  std::shared_ptr<loom::comm::Communicator> communicator;
  /// The device mesh the bundle was partitioned for (empty: one device).
  std::vector<std::pair<std::string, int64_t>> mesh;
  /// The compiler's prediction of the entry point's temporaries (0: none).
  size_t predictedTemporaryPeak = 0;
  /// Pipeline parallelism: the mesh axis of the stages (an index into
  /// `mesh`; -1 without).
  int64_t pipelineAxis = -1;
  /// The device engine of a bundle for a device; null on the CPU.
  const DeviceEngine *engine = nullptr;

  /// Brings the host copy of `t` up to date after a run on a device.
  loom_status_t syncToHost(const Tensor &t) const {
    if (!engine || !t.hostStale)
      return nullptr;
    if (!engine->copy(t.data.get(), t.device, t.bytes))
      return loom::rt::makeStatus(LOOM_STATUS_INTERNAL,
                                  "copying \"" + t.name +
                                      "\" from the device: " + engine->error());
    t.hostStale = false;
    return nullptr;
  }

  /// Notes that the caller wrote the host copy of `t`.
  void hostWritten(Tensor &t) {
    if (engine) {
      t.deviceStale = true;
      t.hostStale = false;
    }
  }

  ~loom_session_t() {
    if (library)
      dlclose(library);
    if (engine)
      for (Tensor &t : tensors)
        engine->free(t.device);
  }
};

extern "C" {

loom_status_code_t loom_status_code(loom_status_t status) {
  return status ? status->code : LOOM_STATUS_OK;
}

const char *loom_status_message(loom_status_t status) {
  return status ? status->message.c_str() : "";
}

void loom_status_free(loom_status_t status) { delete status; }

size_t loom_dtype_size(loom_dtype_t dtype) {
  switch (dtype) {
  case LOOM_DTYPE_FLOAT64:
  case LOOM_DTYPE_INT64:
    return 8;
  case LOOM_DTYPE_FLOAT32:
  case LOOM_DTYPE_INT32:
    return 4;
  case LOOM_DTYPE_FLOAT16:
  case LOOM_DTYPE_BFLOAT16:
  case LOOM_DTYPE_INT16:
    return 2;
  case LOOM_DTYPE_INT8:
  case LOOM_DTYPE_BOOL:
    return 1;
  }
  return 0;
}

const char *loom_dtype_name(loom_dtype_t dtype) {
  switch (dtype) {
  case LOOM_DTYPE_FLOAT32:
    return "float32";
  case LOOM_DTYPE_FLOAT64:
    return "float64";
  case LOOM_DTYPE_FLOAT16:
    return "float16";
  case LOOM_DTYPE_BFLOAT16:
    return "bfloat16";
  case LOOM_DTYPE_INT64:
    return "int64";
  case LOOM_DTYPE_INT32:
    return "int32";
  case LOOM_DTYPE_INT16:
    return "int16";
  case LOOM_DTYPE_INT8:
    return "int8";
  case LOOM_DTYPE_BOOL:
    return "bool";
  }
  return "unknown";
}

void loom_session_options_initialize(loom_session_options_t *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

static loom_status_t createSession(const std::string &dir,
                                   const loom_session_options_t &options,
                                   std::unique_ptr<loom_session_t> &session) {
  auto bad = [&](const std::string &what) {
    return makeStatus(LOOM_STATUS_BAD_BUNDLE,
                      "bundle " + dir + ": " + what);
  };
  std::ifstream manifestFile(dir + "/manifest.json");
  if (!manifestFile)
    return makeStatus(LOOM_STATUS_NOT_FOUND,
                      "cannot read " + dir +
                          "/manifest.json (is this a bundle directory "
                          "written by loomc -o model.loom?)");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(manifestFile);
  } catch (const std::exception &e) {
    return bad(std::string("manifest.json is not valid JSON: ") + e.what());
  }
  if (!manifest.is_object() || manifest.value("format", "") != "loom-bundle")
    return bad("manifest.json is not a Loom bundle manifest");
  if (manifest.value("format_version", 0) != 1)
    return bad("format version " +
               std::to_string(manifest.value("format_version", 0)) +
               " is not supported (this runtime reads version 1)");
  const auto &entries = manifest["entry_points"];
  if (!entries.is_array() || entries.empty())
    return bad("manifest lists no entry points");

  // Parameters file.
  std::vector<char> params;
  {
    std::string path = dir + "/" + manifest.value("parameters_file", "params.bin");
    if (!loom::rt::readWholeFile(path, params))
      return bad("cannot read " + path);
  }

  if (manifest.contains("mesh")) {
    const auto &axes = manifest["mesh"];
    if (!axes.is_array())
      return bad("\"mesh\" must be a list of axes");
    for (const auto &axis : axes) {
      std::string name = axis.value("name", "");
      int64_t size = axis.value("size", (int64_t)0);
      if (name.empty() || size <= 0)
        return bad("the mesh has an axis without a name or positive size");
      session->mesh.emplace_back(name, size);
    }
  }

  // Callers built against a header without `distributed` pass a smaller
  // struct.
  bool distributed =
      options.struct_size >= offsetof(loom_session_options_t, distributed) +
                                 sizeof(options.distributed) &&
      options.distributed;
  if (distributed) {
    // Every session of this process shares the rank's communicator.
    static std::weak_ptr<loom::comm::Communicator> processCommunicator;
    session->communicator = processCommunicator.lock();
    if (!session->communicator) {
      try {
        session->communicator =
            loom::comm::connectGloo(loom::comm::rendezvousFromEnvironment());
      } catch (const loom::comm::Error &e) {
        return makeStatus(LOOM_STATUS_UNAVAILABLE,
                          std::string("joining the distributed run: ") +
                              e.what());
      }
      processCommunicator = session->communicator;
    }
  }

  // With pipeline parallelism the training step is one program per stage:
  // this rank runs the one of its coordinate on the pipeline axis.
  std::string wanted = options.entry_point ? options.entry_point : "";
  int64_t stages = 0, myStage = 0;
  std::string stagePrefix;
  if (manifest.contains("training") && manifest["training"].is_object()) {
    const auto &training = manifest["training"];
    std::string axis = training.value("pipeline_axis", "");
    stages = training.value("pipeline_stages", (int64_t)0);
    std::string trainEntry = training.value("train_entry", "train_step");
    for (size_t a = 0; a < session->mesh.size(); ++a)
      if (session->mesh[a].first == axis)
        session->pipelineAxis = (int64_t)a;
    if (stages > 0 && session->pipelineAxis < 0)
      return bad("the pipeline axis \"" + axis + "\" is not in the mesh");
    if (session->pipelineAxis >= 0 && (wanted.empty() || wanted == trainEntry)) {
      int64_t rank = session->communicator ? session->communicator->rank() : 0;
      int64_t stride = 1;
      for (size_t a = session->pipelineAxis + 1; a < session->mesh.size(); ++a)
        stride *= session->mesh[a].second;
      myStage = (rank / stride) % session->mesh[session->pipelineAxis].second;
      stagePrefix = trainEntry + "_stage";
      wanted = stagePrefix + std::to_string(myStage);
    } else if (session->pipelineAxis >= 0) {
      return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                        "bundle has no entry point \"" + wanted +
                            "\" (with pipeline parallelism it has only "
                            "the training step, \"" + trainEntry + "\")");
    }
  }
  const nlohmann::json *entry = &entries[0];
  if (!wanted.empty()) {
    entry = nullptr;
    for (const auto &e : entries)
      if (e.value("name", "") == wanted)
        entry = &e;
    if (!entry)
      return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                        "bundle has no entry point \"" + wanted + "\"");
  }

  for (const auto &arg : (*entry)["arguments"]) {
    Tensor t;
    t.name = arg.value("name", "");
    std::string kind = arg.value("kind", "");
    t.kind = kind == "input"       ? LOOM_TENSOR_INPUT
             : kind == "parameter" ? LOOM_TENSOR_PARAMETER
             : kind == "output"    ? LOOM_TENSOR_OUTPUT
             : kind == "state"     ? LOOM_TENSOR_STATE
             : kind == "hyperparameter" ? LOOM_TENSOR_HYPERPARAMETER
                                   : (loom_tensor_kind_t)-1;
    if (t.name.empty() || (int)t.kind < 0)
      return bad("an argument has no name or an unknown kind \"" + kind + "\"");
    if (!parseDtype(arg.value("dtype", ""), t.dtype))
      return bad("tensor \"" + t.name + "\" has an unknown dtype");
    size_t count = 1;
    if (!arg["shape"].is_array() || arg["shape"].size() > LOOM_MAX_RANK)
      return bad("tensor \"" + t.name + "\" has no valid shape");
    for (const auto &d : arg["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return bad("tensor \"" + t.name + "\" has a negative dimension");
      t.shape.push_back(d.get<int64_t>());
      count *= t.shape.back();
    }
    t.bytes = count * loom_dtype_size(t.dtype);
    size_t allocation = ((t.bytes + 63) / 64) * 64;
    t.data.reset(static_cast<char *>(
        std::aligned_alloc(64, allocation ? allocation : 64)));
    if (!t.data)
      return makeStatus(LOOM_STATUS_RESOURCE_EXHAUSTED,
                        "cannot allocate " + std::to_string(t.bytes) +
                            " bytes for \"" + t.name + "\"");
    std::memset(t.data.get(), 0, t.bytes);
    if (t.kind == LOOM_TENSOR_PARAMETER) {
      // Loaded once the rank is known: a split parameter (ZeRO-3) takes its
      // block of the whole value the file holds.
      t.initOffset = arg.value("offset", (int64_t)-1);
      t.initBytes = arg.value("bytes", (int64_t)-1);
      t.set = true;
    }
    if (t.kind == LOOM_TENSOR_STATE) {
      if (arg.value("init", "") != "zeros")
        return bad("state \"" + t.name + "\" has no known initial value");
      t.set = true;
    }
    if (t.kind == LOOM_TENSOR_HYPERPARAMETER) {
      if (t.dtype != LOOM_DTYPE_FLOAT64 || count != 1 ||
          !arg.contains("default") || !arg["default"].is_number())
        return bad("hyperparameter \"" + t.name +
                   "\" is not a float64 scalar with a default");
      double value = arg["default"].get<double>();
      std::memcpy(t.data.get(), &value, sizeof value);
      t.set = true;
    }
    if (t.kind == LOOM_TENSOR_OUTPUT && arg.contains("updates"))
      t.updatesName = arg.value("updates", "");
    if (arg.contains("logical_shape")) {
      const auto &dims = arg["logical_shape"];
      if (!dims.is_array() || dims.size() > LOOM_MAX_RANK)
        return bad("tensor \"" + t.name + "\" has an invalid logical_shape");
      for (const auto &d : dims) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
          return bad("tensor \"" + t.name + "\" has an invalid logical_shape");
        t.logicalShape.push_back(d.get<int64_t>());
      }
    }
    if (arg.contains("sharding")) {
      const auto &dims = arg["sharding"];
      if (!dims.is_array() || dims.size() != t.shape.size())
        return bad("tensor \"" + t.name + "\" has a sharding of the wrong rank");
      for (const auto &axes : dims) {
        std::vector<size_t> indices;
        for (const auto &axis : axes) {
          auto it = std::find_if(
              session->mesh.begin(), session->mesh.end(),
              [&](const auto &a) { return axis.is_string() && a.first == axis; });
          if (it == session->mesh.end())
            return bad("tensor \"" + t.name +
                       "\" is split over an axis the mesh does not have");
          indices.push_back(it - session->mesh.begin());
        }
        t.sharding.push_back(std::move(indices));
      }
    }
    if (!t.logicalShape.empty()) {
      // A view of the same data: as many elements as the whole tensor.
      int64_t logical = 1, whole = 1;
      for (int64_t d : t.logicalShape)
        logical *= d;
      for (size_t d = 0; d < t.shape.size(); ++d) {
        whole *= t.shape[d];
        if (d < t.sharding.size())
          for (size_t axis : t.sharding[d])
            whole *= session->mesh[axis].second;
      }
      if (logical != whole)
        return bad("tensor \"" + t.name + "\" has a logical_shape of " +
                   std::to_string(logical) + " elements for " +
                   std::to_string(whole));
    }
    if (arg.contains("index_range")) {
      const auto &range = arg["index_range"];
      if (!range.is_array() || range.size() != 2 ||
          !range[0].is_number_integer() || !range[1].is_number_integer())
        return bad("tensor \"" + t.name + "\" has an invalid index_range");
      t.checkRange = true;
      t.rangeLo = range[0].get<int64_t>();
      t.rangeHi = range[1].get<int64_t>();
      t.rangeMeaning = arg.value("index_meaning", "");
      if (arg.contains("ignore_index") &&
          arg["ignore_index"].is_number_integer()) {
        t.hasIgnore = true;
        t.ignore = arg["ignore_index"].get<int64_t>();
      }
    }
    // Row-major descriptor.
    int64_t rank = t.shape.size();
    t.descriptor.assign(3 + 2 * rank, 0);
    t.descriptor[0] = t.descriptor[1] = (int64_t)(intptr_t)t.data.get();
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      t.descriptor[3 + d] = t.shape[d];
      t.descriptor[3 + rank + d] = stride;
      stride *= t.shape[d];
    }
    session->tensors.push_back(std::move(t));
  }
  for (Tensor &t : session->tensors) {
    session->descriptors.push_back(t.descriptor.data());
    if (t.updatesName.empty())
      continue;
    for (size_t i = 0; i < session->tensors.size(); ++i) {
      const Tensor &target = session->tensors[i];
      if (target.name == t.updatesName &&
          (target.kind == LOOM_TENSOR_PARAMETER ||
           target.kind == LOOM_TENSOR_STATE))
        t.updates = (int64_t)i;
    }
    for (const Tensor &other : session->tensors)
      if (&other != &t && other.updates >= 0 && other.updates == t.updates)
        return bad("two outputs update \"" + t.updatesName + "\"");
    if (t.updates < 0 ||
        session->tensors[t.updates].dtype != t.dtype ||
        session->tensors[t.updates].shape != t.shape)
      return bad("output \"" + t.name + "\" updates \"" + t.updatesName +
                 "\", which is not a parameter or state of its type");
  }

  if (!stagePrefix.empty()) {
    // Which stage holds each parameter and state tensor: names every stage
    // has (the step counter) are each rank's own; the others belong to one
    // stage, and those of other stages are known here as remote tensors.
    std::map<std::string, std::set<int64_t>> holders;
    std::map<std::string, const nlohmann::json *> remoteArgs;
    for (int64_t k = 0; k < stages; ++k) {
      const nlohmann::json *program = nullptr;
      for (const auto &e : entries)
        if (e.value("name", "") == stagePrefix + std::to_string(k))
          program = &e;
      if (!program)
        return bad("the manifest has no program for pipeline stage " +
                   std::to_string(k));
      for (const auto &arg : (*program)["arguments"]) {
        std::string kind = arg.value("kind", "");
        if (kind != "parameter" && kind != "state")
          continue;
        std::string name = arg.value("name", "");
        holders[name].insert(k);
        if (k != myStage)
          remoteArgs.emplace(name, &arg);
      }
    }
    // A tensor several (not all) stages hold is gathered from the first.
    for (Tensor &t : session->tensors)
      if (holders.count(t.name) && holders[t.name].size() < (size_t)stages)
        t.owner = *holders[t.name].begin();
    for (const auto &[name, arg] : remoteArgs) {
      if (holders[name].count(myStage))
        continue;
      Tensor t;
      t.name = name;
      t.remote = true;
      t.owner = *holders[name].begin();
      t.kind = arg->value("kind", "") == "parameter" ? LOOM_TENSOR_PARAMETER
                                                     : LOOM_TENSOR_STATE;
      if (!parseDtype(arg->value("dtype", ""), t.dtype) ||
          !(*arg)["shape"].is_array())
        return bad("tensor \"" + name + "\" has no valid dtype or shape");
      size_t count = 1;
      for (const auto &d : (*arg)["shape"]) {
        t.shape.push_back(d.get<int64_t>());
        count *= (size_t)t.shape.back();
      }
      t.bytes = count * loom_dtype_size(t.dtype);
      if (arg->contains("sharding"))
        for (const auto &axes : (*arg)["sharding"]) {
          std::vector<size_t> indices;
          for (const auto &axis : axes)
            for (size_t a = 0; a < session->mesh.size(); ++a)
              if (axis.is_string() && session->mesh[a].first == axis)
                indices.push_back(a);
          t.sharding.push_back(std::move(indices));
        }
      t.set = true;
      session->tensors.push_back(std::move(t));
    }
  }

  // A device's bundle calls its engine (and loads its kernels as the
  // library is mapped).
  std::string target = "cpu";
  if (manifest.contains("target") && manifest["target"].is_object())
    target = manifest["target"].value("kind", "cpu");
  if (target == "cuda" || target == "cuda-emulated") {
    std::string problem;
    session->engine = deviceEngine(target, problem);
    if (!session->engine)
      return makeStatus(LOOM_STATUS_UNAVAILABLE, problem);
  } else if (target != "cpu") {
    return bad("target \"" + target +
               "\" is not one this runtime runs (cpu, cuda, cuda-emulated)");
  }
  std::string library = dir + "/" + manifest.value("library", "model.so");
  session->library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!session->library) {
    const char *why = dlerror();
    return bad("cannot load " + library + ": " + (why ? why : "unknown error"));
  }
  if (session->engine) {
    std::string problem = session->engine->error();
    if (!problem.empty())
      return makeStatus(LOOM_STATUS_UNAVAILABLE,
                        "loading " + library + "'s kernels: " + problem);
  }
  std::string symbol = entry->value("symbol", "");
  if (entry->contains("temporary_peak_bytes") &&
      (*entry)["temporary_peak_bytes"].is_number_unsigned())
    session->predictedTemporaryPeak =
        (*entry)["temporary_peak_bytes"].get<size_t>();
  session->entry =
      reinterpret_cast<void (*)(void **)>(dlsym(session->library, symbol.c_str()));
  if (!session->entry)
    return bad("library has no entry point symbol \"" + symbol + "\"");

  int64_t devices = 1;
  std::string meshText;
  for (const auto &[name, size] : session->mesh) {
    devices *= size;
    meshText += (meshText.empty() ? "" : ",") + name + "=" + std::to_string(size);
  }
  int worldSize = session->communicator ? session->communicator->size() : 1;
  if (session->mesh.empty() || devices == worldSize) {
    for (size_t i = 0; i < session->tensors.size(); ++i) {
      Tensor &t = session->tensors[i];
      if (t.kind != LOOM_TENSOR_PARAMETER || t.remote)
        continue;
      BlockPlace place = blockPlace(*session, t, loom_session_rank(session.get()));
      int64_t count = (int64_t)blockCount(place);
      if (t.initBytes != (int64_t)t.bytes * count || t.initOffset < 0 ||
          (size_t)(t.initOffset + t.initBytes) > params.size())
        return bad("parameter \"" + t.name + "\" (" +
                   std::to_string(t.bytes * count) +
                   " bytes) does not fit in the parameters file of " +
                   std::to_string(params.size()) + " bytes");
      // A split parameter takes its block of the whole value.
      copyBlock(params.data() + t.initOffset, t.data.get(),
                globalShape(t, place), t.shape, place,
                loom_dtype_size(t.dtype), /*intoWhole=*/false);
    }
  }
  if (!session->mesh.empty() && devices != worldSize)
    return makeStatus(
        LOOM_STATUS_INVALID_ARGUMENT,
        "the bundle is the program of one rank of " + std::to_string(devices) +
            " (mesh " + meshText + "), but " +
            (session->communicator
                 ? "the run has " + std::to_string(worldSize) + " ranks"
                 : std::string("the session is not part of a distributed "
                               "run (start it with loom-run train --nproc " +
                               std::to_string(devices) +
                               ", or set loom_session_options_t."
                               "distributed under a launcher)")));
  // On a device, every tensor held here gets its device buffer, copied from
  // the host before the first run.
  if (session->engine)
    for (Tensor &t : session->tensors) {
      if (t.remote)
        continue;
      t.device = session->engine->alloc(t.bytes ? t.bytes : 1);
      if (!t.device)
        return makeStatus(LOOM_STATUS_RESOURCE_EXHAUSTED,
                          "cannot allocate " + std::to_string(t.bytes) +
                              " device bytes for \"" + t.name +
                              "\": " + session->engine->error());
      t.descriptor[0] = t.descriptor[1] = (int64_t)(intptr_t)t.device;
      t.deviceStale = true;
    }
  return nullptr;
}

loom_status_t loom_session_create(const char *bundle_path,
                                  const loom_session_options_t *options,
                                  loom_session_t **out_session) {
  if (!bundle_path || !out_session)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "bundle_path and out_session must not be NULL");
  *out_session = nullptr;
  loom_session_options_t defaults;
  loom_session_options_initialize(&defaults);
  try {
    auto session = std::make_unique<loom_session_t>();
    if (loom_status_t status =
            createSession(bundle_path, options ? *options : defaults, session))
      return status;
    *out_session = session.release();
    return nullptr;
  } catch (const std::bad_alloc &) {
    return makeStatus(LOOM_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception &e) {
    return makeStatus(LOOM_STATUS_BAD_BUNDLE,
                      std::string("bundle ") + bundle_path + ": " + e.what());
  }
}

void loom_session_destroy(loom_session_t *session) { delete session; }

int loom_session_rank(const loom_session_t *session) {
  return session && session->communicator ? session->communicator->rank() : 0;
}

int loom_session_world_size(const loom_session_t *session) {
  return session && session->communicator ? session->communicator->size() : 1;
}

} // extern "C"

namespace {
BlockPlace blockPlace(const loom_session_t &session, const Tensor &t,
                      int64_t rank) {
  BlockPlace place{std::vector<int64_t>(t.shape.size(), 0),
                   std::vector<int64_t>(t.shape.size(), 1)};
  if (t.sharding.empty())
    return place;
  // The rank's coordinate on every mesh axis (row-major, last axis fastest),
  // then the block index over each dimension's axes, major first.
  std::vector<int64_t> coords(session.mesh.size());
  for (size_t a = session.mesh.size(); a-- > 0;) {
    coords[a] = rank % session.mesh[a].second;
    rank /= session.mesh[a].second;
  }
  for (size_t d = 0; d < t.sharding.size(); ++d)
    for (size_t axis : t.sharding[d]) {
      place.index[d] = place.index[d] * session.mesh[axis].second + coords[axis];
      place.count[d] *= session.mesh[axis].second;
    }
  return place;
}
} // namespace

namespace {
/// The whole value of a tensor one pipeline stage holds: every rank of that
/// stage broadcasts its block in turn (a collective of the whole run).
loom_status_t gatherFromStage(loom_session_t &session, const Tensor &t,
                              void *out) {
  loom::comm::Communicator &c = *session.communicator;
  size_t axis = (size_t)session.pipelineAxis;
  int64_t stride = 1;
  for (size_t a = axis + 1; a < session.mesh.size(); ++a)
    stride *= session.mesh[a].second;
  std::vector<float> words((t.bytes + 3) / 4);
  BlockPlace mine = blockPlace(session, t, c.rank());
  std::vector<int64_t> whole = globalShape(t, mine);
  for (int r = 0; r < c.size(); ++r) {
    if ((r / stride) % session.mesh[axis].second != t.owner)
      continue;
    if (r == c.rank())
      std::memcpy(words.data(), t.data.get(), t.bytes);
    try {
      c.broadcast(words.data(), words.size(), r);
    } catch (const loom::comm::Error &e) {
      return makeStatus(LOOM_STATUS_UNAVAILABLE, e.what());
    }
    copyBlock(static_cast<char *>(out), reinterpret_cast<char *>(words.data()),
              whole, t.shape, blockPlace(session, t, r),
              loom_dtype_size(t.dtype), /*intoWhole=*/true);
  }
  return nullptr;
}
} // namespace

extern "C" {

loom_status_t loom_session_memory_stats(const loom_session_t *session,
                                        loom_memory_stats_t *out_stats) {
  if (!session || !out_stats)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "session and out_stats must not be NULL");
  *out_stats = loom_memory_stats_t{};
  for (const Tensor &t : session->tensors) {
    if (t.remote)
      continue;
    switch (t.kind) {
    case LOOM_TENSOR_PARAMETER: out_stats->parameter_bytes += t.bytes; break;
    case LOOM_TENSOR_STATE: out_stats->state_bytes += t.bytes; break;
    case LOOM_TENSOR_INPUT:
    case LOOM_TENSOR_HYPERPARAMETER: out_stats->input_bytes += t.bytes; break;
    case LOOM_TENSOR_OUTPUT: out_stats->output_bytes += t.bytes; break;
    }
  }
  loom::rt::temporaryBytes(&out_stats->temporary_bytes,
                           &out_stats->temporary_peak_bytes);
  if (session->engine) {
    // The steps' device temporaries (none in cuda-emulated bundles, whose
    // temporaries are the CPU allocator's).
    size_t live, peak, reserved;
    session->engine->memoryStats(&live, &peak, &reserved);
    out_stats->temporary_bytes += live;
    out_stats->temporary_peak_bytes += peak;
  }
  out_stats->predicted_temporary_peak_bytes = session->predictedTemporaryPeak;
  return nullptr;
}

int64_t loom_session_mesh_devices(const loom_session_t *session) {
  int64_t devices = 1;
  if (session)
    for (const auto &axis : session->mesh)
      devices *= axis.second;
  return devices;
}

loom_status_t loom_session_tensor_gather(loom_session_t *session,
                                         size_t index, void *out,
                                         size_t bytes) {
  if (!session || !out || index >= session->tensors.size())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  const Tensor &t = session->tensors[index];
  BlockPlace mine = blockPlace(*session, t, loom_session_rank(session));
  size_t blocks = blockCount(mine);
  if (bytes != t.bytes * blocks)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "\"" + t.name + "\" has " +
                          std::to_string(t.bytes * blocks) + " bytes, not " +
                          std::to_string(bytes));
  if (loom_status_t status = session->syncToHost(t))
    return status;
  if (t.owner >= 0 && session->communicator)
    return gatherFromStage(*session, t, out);
  if (blocks == 1) {
    std::memcpy(out, t.data.get(), t.bytes);
    return nullptr;
  }
  if (!session->communicator || t.bytes % 4 != 0)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "gathering \"" + t.name +
                          "\" needs a distributed run and a block of whole "
                          "4-byte words");
  // Every rank contributes its block; each is copied to where it lies (a
  // block held by several ranks, replicated over some axes, lands once per
  // holder, always with the same value). The collective moves raw words.
  int world = session->communicator->size();
  std::vector<float> all((size_t)world * t.bytes / 4);
  try {
    session->communicator->allGather(
        static_cast<const float *>((const void *)t.data.get()), all.data(),
        t.bytes / 4);
  } catch (const loom::comm::Error &e) {
    return makeStatus(LOOM_STATUS_UNAVAILABLE, e.what());
  }
  std::vector<int64_t> whole = globalShape(t, mine);
  for (int r = 0; r < world; ++r)
    copyBlock(static_cast<char *>(out),
              reinterpret_cast<char *>(all.data()) + (size_t)r * t.bytes,
              whole, t.shape, blockPlace(*session, t, r),
              loom_dtype_size(t.dtype), /*intoWhole=*/true);
  return nullptr;
}

loom_status_t loom_session_tensor_whole_shape(const loom_session_t *session,
                                              size_t index, int32_t *out_rank,
                                              int64_t *out_shape) {
  if (!session || !out_rank || !out_shape ||
      index >= session->tensors.size())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  const Tensor &t = session->tensors[index];
  std::vector<int64_t> shape =
      !t.logicalShape.empty()
          ? t.logicalShape
          : globalShape(t, blockPlace(*session, t, loom_session_rank(session)));
  *out_rank = (int32_t)shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    out_shape[d] = shape[d];
  return nullptr;
}

loom_status_t loom_session_set_tensor_whole(loom_session_t *session,
                                            size_t index, const void *data,
                                            size_t bytes) {
  if (!session || index >= session->tensors.size() || (!data && bytes))
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  const Tensor &t = session->tensors[index];
  BlockPlace place = blockPlace(*session, t, loom_session_rank(session));
  size_t blocks = blockCount(place);
  if (blocks == 1)
    return loom_session_set_tensor(session, index, data, bytes);
  if (bytes != t.bytes * blocks)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "\"" + t.name + "\" holds " +
                          std::to_string(t.bytes * blocks) +
                          " bytes whole, got " + std::to_string(bytes));
  std::vector<char> block(t.bytes);
  copyBlock(const_cast<char *>(static_cast<const char *>(data)), block.data(),
            globalShape(t, place), t.shape, place, loom_dtype_size(t.dtype),
            /*intoWhole=*/false);
  return loom_session_set_tensor(session, index, block.data(), block.size());
}

loom_status_t loom_session_tensor_shard(const loom_session_t *session,
                                        size_t index, int32_t dim,
                                        int64_t *out_index,
                                        int64_t *out_count) {
  if (!session || !out_index || !out_count ||
      index >= session->tensors.size())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  const Tensor &t = session->tensors[index];
  if (dim < 0 || (size_t)dim >= t.shape.size())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "tensor \"" + t.name + "\" has no dimension " +
                          std::to_string(dim));
  BlockPlace place = blockPlace(*session, t, loom_session_rank(session));
  *out_index = place.index[dim];
  *out_count = place.count[dim];
  return nullptr;
}

size_t loom_session_tensor_count(const loom_session_t *session) {
  return session ? session->tensors.size() : 0;
}

loom_status_t loom_session_tensor_info(const loom_session_t *session,
                                       size_t index,
                                       loom_tensor_info_t *out_info) {
  if (!session || !out_info || index >= session->tensors.size())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  const Tensor &t = session->tensors[index];
  out_info->name = t.name.c_str();
  out_info->kind = t.kind;
  out_info->dtype = t.dtype;
  out_info->rank = (int32_t)t.shape.size();
  for (size_t d = 0; d < t.shape.size(); ++d)
    out_info->shape[d] = t.shape[d];
  out_info->bytes = t.bytes;
  out_info->updates = t.updates;
  return nullptr;
}

loom_status_t loom_session_find_tensor(const loom_session_t *session,
                                       const char *name, size_t *out_index) {
  if (!session || !name || !out_index)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "session, name and out_index must not be NULL");
  for (size_t i = 0; i < session->tensors.size(); ++i)
    if (session->tensors[i].name == name) {
      *out_index = i;
      return nullptr;
    }
  std::string known;
  for (const Tensor &t : session->tensors)
    known += (known.empty() ? "" : ", ") + t.name;
  return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                    std::string("no tensor \"") + name + "\" (the bundle has " +
                        known + ")");
}

loom_status_t loom_session_set_tensor(loom_session_t *session, size_t index,
                                      const void *data, size_t bytes) {
  if (!session || index >= session->tensors.size() || (!data && bytes))
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  Tensor &t = session->tensors[index];
  if (t.kind == LOOM_TENSOR_OUTPUT)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "\"" + t.name + "\" is an output and cannot be set");
  // Another pipeline stage's tensor: its own ranks set it.
  if (t.remote && bytes == t.bytes)
    return nullptr;
  if (bytes != t.bytes)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "\"" + t.name + "\" holds " + std::to_string(t.bytes) +
                          " bytes, got " + std::to_string(bytes));
  if (t.checkRange) {
    // Indices outside the table would make the compiled code read out of
    // bounds: refuse them here.
    size_t width = loom_dtype_size(t.dtype);
    for (size_t i = 0; width && i < bytes / width; ++i) {
      const char *p = static_cast<const char *>(data) + i * width;
      int64_t v = 0;
      switch (t.dtype) {
      case LOOM_DTYPE_INT64: { int64_t x; std::memcpy(&x, p, 8); v = x; break; }
      case LOOM_DTYPE_INT32: { int32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case LOOM_DTYPE_INT16: { int16_t x; std::memcpy(&x, p, 2); v = x; break; }
      case LOOM_DTYPE_INT8: { int8_t x; std::memcpy(&x, p, 1); v = x; break; }
      default: continue;
      }
      if ((v < t.rangeLo || v >= t.rangeHi) && !(t.hasIgnore && v == t.ignore))
        return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                          "\"" + t.name + "\" holds " + std::to_string(v) +
                              " at element " + std::to_string(i) +
                              ", outside [" + std::to_string(t.rangeLo) +
                              ", " + std::to_string(t.rangeHi) + ")" +
                              (t.rangeMeaning.empty()
                                   ? std::string()
                                   : " (the " + t.rangeMeaning + ")"));
    }
  }
  if (bytes)
    std::memcpy(t.data.get(), data, bytes);
  t.set = true;
  session->hostWritten(t);
  return nullptr;
}

/// The hyperparameter tensor `name` ("lr", stored as "hparam.lr").
static loom_status_t findHyperparameter(const loom_session_t *session,
                                        const char *name, size_t &index) {
  if (!session || !name)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "session and name must not be NULL");
  std::string wanted = std::string("hparam.") + name, known;
  for (size_t i = 0; i < session->tensors.size(); ++i) {
    const Tensor &t = session->tensors[i];
    if (t.kind != LOOM_TENSOR_HYPERPARAMETER)
      continue;
    if (t.name == wanted) {
      index = i;
      return nullptr;
    }
    known += (known.empty() ? "" : ", ") + t.name.substr(7);
  }
  if (known.empty())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      std::string("the bundle has no run-time hyperparameter "
                                  "\"") +
                          name +
                          "\": its hyperparameters are compiled in (compile "
                          "it with loomc --runtime-hyperparams)");
  return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                    std::string("the bundle has no run-time hyperparameter \"") +
                        name + "\" (it has " + known + ")");
}

loom_status_t loom_session_set_hyperparameter(loom_session_t *session,
                                              const char *name, double value) {
  size_t index = 0;
  if (loom_status_t status = findHyperparameter(session, name, index))
    return status;
  if (!std::isfinite(value))
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      std::string("hyperparameter \"") + name +
                          "\" must be finite");
  return loom_session_set_tensor(session, index, &value, sizeof value);
}

loom_status_t loom_session_hyperparameter(const loom_session_t *session,
                                          const char *name, double *out_value) {
  size_t index = 0;
  if (loom_status_t status = findHyperparameter(session, name, index))
    return status;
  if (!out_value)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, "out_value is NULL");
  if (loom_status_t status = session->syncToHost(session->tensors[index]))
    return status;
  std::memcpy(out_value, session->tensors[index].data.get(), sizeof(double));
  return nullptr;
}

loom_status_t loom_session_run(loom_session_t *session) {
  if (!session)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, "session is NULL");
  for (const Tensor &t : session->tensors)
    if (t.kind == LOOM_TENSOR_INPUT && !t.set)
      return makeStatus(LOOM_STATUS_FAILED_PRECONDITION,
                        "input \"" + t.name + "\" was not set");
  loom::rt::currentCommunicator = session->communicator.get();
  loom::rt::currentMesh.clear();
  for (const auto &axis : session->mesh)
    loom::rt::currentMesh.push_back(axis.second);
  loom::rt::collectiveError.clear();
  if (const DeviceEngine *engine = session->engine)
    for (Tensor &t : session->tensors) {
      if (!t.deviceStale)
        continue;
      if (!engine->copy(t.device, t.data.get(), t.bytes))
        return makeStatus(LOOM_STATUS_INTERNAL,
                          "copying \"" + t.name +
                              "\" to the device: " + engine->error());
      t.deviceStale = false;
    }
  loom::rt::deviceCopy = session->engine ? session->engine->copy : nullptr;
  int64_t started = loom::rt::trace::enabled() ? loom::rt::trace::now() : 0;
  session->entry(session->descriptors.data());
  loom::rt::finishPointToPoint();
  if (started)
    loom::rt::trace::record("step", "step", started, loom::rt::trace::now());
  loom::rt::currentCommunicator = nullptr;
  loom::rt::deviceCopy = nullptr;
  if (!loom::rt::collectiveError.empty()) {
    std::string problem = session->engine ? session->engine->error() : "";
    return makeStatus(LOOM_STATUS_UNAVAILABLE,
                      loom::rt::collectiveError +
                          (problem.empty() ? "" : ": " + problem));
  }
  if (session->engine) {
    std::string problem = session->engine->error();
    if (!problem.empty())
      return makeStatus(LOOM_STATUS_INTERNAL,
                        "running the step on the device: " + problem);
    // What the step wrote is the device's until the caller reads it.
    for (Tensor &t : session->tensors)
      if (t.kind == LOOM_TENSOR_OUTPUT)
        t.hostStale = true;
  }
  for (Tensor &t : session->tensors) {
    if (t.updates < 0)
      continue;
    Tensor &target = session->tensors[t.updates];
    std::swap(t.data, target.data);
    std::swap(t.device, target.device);
    std::swap(t.hostStale, target.hostStale);
    for (Tensor *x : {&t, &target})
      x->descriptor[0] = x->descriptor[1] =
          (int64_t)(intptr_t)(x->device ? x->device : x->data.get());
  }
  return nullptr;
}

loom_status_t loom_trace_write(const char *path, int process) {
  if (!path)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, "path must not be NULL");
  std::string problem;
  if (!loom::rt::trace::writeJson(path, process, problem))
    return makeStatus(LOOM_STATUS_NOT_FOUND, problem);
  return nullptr;
}

loom_status_t loom_session_barrier(loom_session_t *session) {
  if (!session)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT, "session is NULL");
  if (!session->communicator)
    return nullptr;
  try {
    session->communicator->barrier();
  } catch (const loom::comm::Error &e) {
    return makeStatus(LOOM_STATUS_UNAVAILABLE, e.what());
  }
  return nullptr;
}

loom_status_t loom_session_tensor_data(const loom_session_t *session,
                                       size_t index, const void **out_data,
                                       size_t *out_bytes) {
  if (!session || !out_data || !out_bytes ||
      index >= session->tensors.size())
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "no tensor #" + std::to_string(index));
  if (session->tensors[index].remote)
    return makeStatus(LOOM_STATUS_INVALID_ARGUMENT,
                      "\"" + session->tensors[index].name +
                          "\" is held by the ranks of another pipeline stage");
  if (loom_status_t status = session->syncToHost(session->tensors[index]))
    return status;
  *out_data = session->tensors[index].data.get();
  *out_bytes = session->tensors[index].bytes;
  return nullptr;
}

} // extern "C"
