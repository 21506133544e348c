//===- loom-run.cpp - runs Loom bundles -----------------------------------===//
//
//   loom-run infer model.loom --input NAME=FILE.npy ... --output-dir DIR
//   loom-run train model.loom --data NAME=FILE.npy ... (see Train.cpp)
//   loom-run launch --nproc N -- COMMAND ... (see Launch.cpp)
//   loom-run calibrate --nproc N -o cluster.json (see Calibrate.cpp)
//
// `infer` binds .npy files to a bundle's inputs through libloomrt's C API,
// runs the entry point and writes every output as DIR/<output name>.npy.
// `--num-threads N`, for every command, sizes libloomrt's thread pool (it sets
// LOOM_NUM_THREADS before a bundle is loaded).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "Npy.h"
#include "loom/runtime.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

using namespace llvm;

static cl::opt<unsigned> threads(
    "num-threads",
    cl::desc("Threads per process for the generated loops and GEMMs "
             "(default: LOOM_NUM_THREADS if set, else every CPU this process "
             "may use; with --nproc, an equal share of them per rank)"),
    cl::init(0), cl::sub(cl::SubCommand::getAll()));

static cl::SubCommand inferCommand("infer",
                                   "Run a bundle's entry point on .npy inputs");
static cl::opt<std::string> bundlePath(cl::Positional, cl::Required,
                                       cl::desc("<model.loom>"),
                                       cl::sub(inferCommand));
static cl::list<std::string>
    inputs("input",
           cl::desc("Bind an input (or parameter) to a .npy file; in a "
                    "distributed run \"{rank}\" in FILE becomes the rank"),
           cl::value_desc("NAME=FILE.npy"), cl::sub(inferCommand));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Where outputs are written "
                                               "(default: .; in a distributed "
                                               "run, DIR/rank<N>)"),
                                      cl::value_desc("DIR"), cl::init("."),
                                      cl::sub(inferCommand));
static cl::opt<unsigned> repeat("repeat",
                               cl::desc("Run the entry point N times and "
                                        "print the latency (default 1)"),
                               cl::value_desc("N"), cl::init(1),
                               cl::sub(inferCommand));
static cl::opt<unsigned> warmup("warmup",
                               cl::desc("Untimed runs before the timed ones"),
                               cl::value_desc("N"), cl::init(0),
                               cl::sub(inferCommand));
static cl::opt<std::string> entryPoint("entry",
                                       cl::desc("Entry point (default: the "
                                                "bundle's first)"),
                                       cl::sub(inferCommand));

static int fail(const Twine &message) {
  return reportError("loom-run", message);
}

static std::string describe(loom_dtype_t dtype, const int64_t *shape,
                            size_t rank) {
  std::string text = std::string(loom_dtype_name(dtype)) + " [";
  for (size_t i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Runs `call`; on a non-NULL status prints it and returns false.
static bool check(loom_status_t status) {
  if (!status)
    return true;
  fail(loom_status_message(status));
  loom_status_free(status);
  return false;
}

static int runInfer() {
  loom_session_options_t options;
  loom_session_options_initialize(&options);
  if (!entryPoint.empty())
    options.entry_point = entryPoint.c_str();
  // Started as one of several ranks (loom-run launch, torchrun): join them.
  if (const char *world = std::getenv("WORLD_SIZE"))
    options.distributed = std::atoi(world) > 1;
  loom_session_t *session = nullptr;
  if (!check(loom_session_create(bundlePath.c_str(), &options, &session)))
    return 1;
  struct Destroy {
    loom_session_t *s;
    ~Destroy() { loom_session_destroy(s); }
  } destroy{session};
  int rank = loom_session_rank(session);
  bool distributed = loom_session_world_size(session) > 1;

  for (const std::string &spec : inputs) {
    auto [name, rawFile] = StringRef(spec).split('=');
    // Each rank may read its own file: "{rank}" becomes the rank.
    std::string file = rawFile.str();
    for (size_t at; (at = file.find("{rank}")) != std::string::npos;)
      file.replace(at, 6, std::to_string(rank));
    if (name.empty() || file.empty())
      return fail("expected --input NAME=FILE.npy, got \"" + spec + "\"");
    size_t index;
    if (!check(loom_session_find_tensor(session, name.str().c_str(), &index)))
      return 1;
    loom_tensor_info_t info;
    if (!check(loom_session_tensor_info(session, index, &info)))
      return 1;
    loom::npy::Array array;
    std::string error;
    if (!loom::npy::read(file, array, error))
      return fail(error);
    bool sameShape = array.shape.size() == (size_t)info.rank;
    for (size_t d = 0; sameShape && d < array.shape.size(); ++d)
      sameShape = array.shape[d] == info.shape[d];
    if (array.dtype != info.dtype || !sameShape)
      return fail("input \"" + name + "\" expects " +
                  describe(info.dtype, info.shape, info.rank) + ", but " +
                  file + " holds " +
                  describe(array.dtype, array.shape.data(), array.shape.size()));
    if (!check(loom_session_set_tensor(session, index, array.data.data(),
                                       array.data.size())))
      return 1;
  }
  for (unsigned i = 0; i < warmup; ++i)
    if (!check(loom_session_run(session)))
      return 1;
  std::vector<double> millis;
  for (unsigned i = 0; i < std::max(1u, (unsigned)repeat); ++i) {
    auto start = std::chrono::steady_clock::now();
    if (!check(loom_session_run(session)))
      return 1;
    millis.push_back(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count());
  }
  if (repeat > 1) {
    double sum = 0;
    for (double m : millis)
      sum += m;
    std::sort(millis.begin(), millis.end());
    outs() << "timing: " << millis.size() << " runs, min "
           << format("%.4f", millis.front()) << " ms, median "
           << format("%.4f", millis[millis.size() / 2]) << " ms, mean "
           << format("%.4f", sum / millis.size()) << " ms\n";
  }

  SmallString<256> outDir(outputDir);
  if (distributed)
    sys::path::append(outDir, "rank" + std::to_string(rank));
  if (std::error_code ec = sys::fs::create_directories(outDir))
    return fail("cannot create " + outDir + ": " + ec.message());
  for (size_t i = 0, e = loom_session_tensor_count(session); i < e; ++i) {
    loom_tensor_info_t info;
    if (!check(loom_session_tensor_info(session, i, &info)))
      return 1;
    if (info.kind != LOOM_TENSOR_OUTPUT)
      continue;
    const void *data;
    size_t bytes;
    if (!check(loom_session_tensor_data(session, i, &data, &bytes)))
      return 1;
    loom::npy::Array array;
    array.dtype = info.dtype;
    array.shape.assign(info.shape, info.shape + info.rank);
    array.data.assign(static_cast<const char *>(data),
                      static_cast<const char *>(data) + bytes);
    // ONNX names may hold '/' or ':'; file names may not.
    std::string fileName = info.name;
    for (char &c : fileName)
      if (c == '/' || c == ':' || c == '\\')
        c = '_';
    SmallString<256> path(outDir);
    sys::path::append(path, fileName + ".npy");
    std::string error;
    if (!loom::npy::write(std::string(path), array, error))
      return fail(error);
    outs() << "wrote " << path << " ("
           << describe(info.dtype, info.shape, info.rank) << ")\n";
  }
  return 0;
}

extern cl::SubCommand trainCommand;
int runTrain(int argc, char **argv);
extern cl::SubCommand calibrateCommand;
int runCalibrate(int argc, char **argv);
extern cl::SubCommand launchCommand;
int runLaunch();

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "loom-run: runs models compiled by loomc\n");
  // Read by libloomrt when it first runs a parallel loop.
  if (threads > 0)
    ::setenv("LOOM_NUM_THREADS", std::to_string(threads).c_str(), 1);
  if (inferCommand)
    return runInfer();
  if (trainCommand)
    return runTrain(argc, argv);
  if (launchCommand)
    return runLaunch();
  if (calibrateCommand)
    return runCalibrate(argc, argv);
  return fail("expected a command: infer, train, launch or calibrate (see "
              "loom-run --help)");
}
