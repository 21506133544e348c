//===- Train.cpp - loom-run train -----------------------------------------===//
//
//   loom-run train model.loom --data NAME=FILE.npy ... [--steps N|--epochs E]
//
// Runs a bundle's train_step over batches from a data loader, with progress
// lines, metrics, evaluation and early stopping, checkpoints and resume, and
// a loss plot at the end.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "LowPrecision.h"
#include "Plot.h"
#include "Pretrained.h"
#include "TensorBoard.h"
#include "Training.h"
#include "loom/runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>

using namespace llvm;
using namespace loom;

cl::SubCommand trainCommand("train",
                            "Train a bundle compiled with loomc --train");

static cl::OptionCategory trainCategory("loom-run train options");
static cl::opt<std::string> bundle(cl::Positional, cl::Required,
                                   cl::desc("<model.loom>"),
                                   cl::sub(trainCommand));
static cl::list<std::string>
    dataSpecs("data",
              cl::desc("Bind an input to a .npy array whose first dimension "
                       "indexes samples (repeatable)"),
              cl::value_desc("NAME=FILE.npy"), cl::sub(trainCommand),
              cl::cat(trainCategory));
static cl::opt<std::string>
    tokens("tokens",
           cl::desc("Flat binary token file; cut into sequences of the "
                    "--token-input's length + 1 (next-token prediction)"),
           cl::value_desc("FILE"), cl::sub(trainCommand),
           cl::cat(trainCategory));
static cl::opt<std::string> tokenDtype("token-dtype",
                                       cl::desc("uint16 (default), int32, or "
                                                "uint8 (the bytes of a text)"),
                                       cl::init("uint16"),
                                       cl::sub(trainCommand),
                                       cl::cat(trainCategory));
static cl::opt<std::string> tokenInput("token-input",
                                       cl::desc("Input that takes a sequence"),
                                       cl::sub(trainCommand),
                                       cl::cat(trainCategory));
static cl::opt<std::string>
    tokenTarget("token-target",
                cl::desc("Input that takes the sequence shifted by one"),
                cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Samples per step; must be the batch size the bundle "
                       "was compiled for (default: that size)"),
              cl::init(0), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<int64_t> steps("steps",
                              cl::desc("Steps to train (default: one epoch)"),
                              cl::init(0), cl::sub(trainCommand),
                              cl::cat(trainCategory));
static cl::opt<int64_t> epochs("epochs", cl::desc("Epochs to train"),
                               cl::init(0), cl::sub(trainCommand),
                               cl::cat(trainCategory));
static cl::opt<bool> noShuffle("no-shuffle",
                               cl::desc("Keep the samples in file order"),
                               cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the shuffling and the "
                                       "validation split (default 0)"),
                              cl::init(0), cl::sub(trainCommand),
                              cl::cat(trainCategory));
static cl::opt<double>
    valSplit("val-split",
             cl::desc("Fraction of the samples held out for evaluation"),
             cl::init(0.0), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<int64_t>
    evalEvery("eval-every",
              cl::desc("Evaluate on the held-out samples every K steps "
                       "(default: at the end only)"),
              cl::init(0), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<int64_t>
    patience("patience",
             cl::desc("Stop after this many evaluations without improvement "
                      "(default: never)"),
             cl::init(0), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<double>
    minDelta("min-delta",
             cl::desc("Smallest decrease of the validation loss that counts "
                      "as an improvement"),
             cl::init(0.0), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<std::string>
    metricsPath("metrics",
                cl::desc("Write one record per step (step, epoch, loss, lr, "
                         "with loss scaling loss_scale and skipped_steps, "
                         "samples_per_sec, step_ms: the train_step call) and "
                         "per evaluation (val_loss): JSON lines, or CSV "
                         "(without the loss scale) if the name ends in .csv"),
                cl::value_desc("FILE"), cl::sub(trainCommand),
                cl::cat(trainCategory));
static cl::opt<std::string>
    checkpointDir("checkpoint-dir",
                  cl::desc("Write DIR/last.ckpt (and DIR/best.ckpt, the best "
                           "evaluation so far)"),
                  cl::value_desc("DIR"), cl::sub(trainCommand),
                  cl::cat(trainCategory));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("Checkpoint every K steps (always at the end)"),
                    cl::init(0), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<std::string>
    resume("resume",
           cl::desc("Continue from a checkpoint: parameters, optimizer "
                    "state, data position"),
           cl::value_desc("FILE.ckpt"), cl::sub(trainCommand),
           cl::cat(trainCategory));
static cl::OptionCategory fineTuneCategory("Fine-tuning");
static cl::opt<std::string> initFrom(
    "init-from",
    cl::desc("Start from pretrained parameters, matched by name: a "
             ".safetensors file (a PyTorch or Hugging Face state dict; fp32, "
             "fp16 and bf16 are converted), a .npz archive (numpy.savez) or "
             "a Loom checkpoint. Optimizer state starts fresh and the step "
             "counter at 0. Missing, unexpected or mis-shaped tensors are an "
             "error that lists them, unless --init-partial"),
    cl::value_desc("FILE"), cl::sub(trainCommand), cl::cat(fineTuneCategory));
static cl::list<std::string> initMap(
    "init-map",
    cl::desc("Rename the file's tensors whose names start with OLD to start "
             "with NEW instead (repeatable; the first that matches applies), "
             "e.g. --init-map 'model.=' drops a prefix"),
    cl::value_desc("OLD=NEW"), cl::sub(trainCommand),
    cl::cat(fineTuneCategory));
static cl::opt<bool> initPartial(
    "init-partial",
    cl::desc("Load what matches and print what was skipped: parameters the "
             "file lacks keep the bundle's initial values"),
    cl::sub(trainCommand), cl::cat(fineTuneCategory));
static cl::list<std::string> freezeGlobs(
    "freeze",
    cl::desc("Check that the parameters matching GLOB are frozen in the "
             "bundle (compiled with loomc --freeze GLOB, which removes their "
             "gradients and optimizer state); a bundle that trains them is "
             "an error that says to recompile"),
    cl::value_desc("GLOB"), cl::sub(trainCommand), cl::cat(fineTuneCategory));

static cl::OptionCategory hyperCategory(
    "Hyperparameters (bundles compiled with loomc --runtime-hyperparams; "
    "default: the values given to loomc, or on --resume the checkpoint's)");
static cl::opt<double> hyperLr("lr", cl::desc("Learning rate"),
                               cl::sub(trainCommand), cl::cat(hyperCategory));
static cl::opt<double>
    hyperWeightDecay("weight-decay",
                     cl::desc("Weight decay (L2 for sgd and adam, decoupled "
                              "for adamw)"),
                     cl::sub(trainCommand), cl::cat(hyperCategory));
static cl::opt<double>
    hyperClipNorm("clip-grad-norm",
                  cl::desc("Global L2 norm to clip gradients to (0: off)"),
                  cl::sub(trainCommand), cl::cat(hyperCategory));
static cl::opt<double> hyperMomentum("momentum", cl::desc("SGD momentum"),
                                     cl::sub(trainCommand),
                                     cl::cat(hyperCategory));
static cl::opt<double> hyperBeta1("beta1", cl::desc("Adam beta1"),
                                  cl::sub(trainCommand),
                                  cl::cat(hyperCategory));
static cl::opt<double> hyperBeta2("beta2", cl::desc("Adam beta2"),
                                  cl::sub(trainCommand),
                                  cl::cat(hyperCategory));
static cl::opt<double> hyperEpsilon("adam-eps", cl::desc("Adam epsilon"),
                                    cl::sub(trainCommand),
                                    cl::cat(hyperCategory));
static cl::opt<double>
    hyperWarmup("warmup-steps",
                cl::desc("Linear warmup steps (warmup and cosine schedules)"),
                cl::sub(trainCommand), cl::cat(hyperCategory));
static cl::opt<double>
    hyperTotal("total-steps",
               cl::desc("Steps until the cosine schedule reaches --min-lr "
                        "(not the steps to train: --steps)"),
               cl::sub(trainCommand), cl::cat(hyperCategory));
static cl::opt<double>
    hyperMinLr("min-lr", cl::desc("Final learning rate of the cosine schedule"),
               cl::sub(trainCommand), cl::cat(hyperCategory));
/// The options and the bundle's names for them.
static const std::pair<cl::opt<double> *, const char *> hyperOptions[] = {
    {&hyperLr, "lr"},
    {&hyperWeightDecay, "weight_decay"},
    {&hyperClipNorm, "clip_norm"},
    {&hyperMomentum, "momentum"},
    {&hyperBeta1, "beta1"},
    {&hyperBeta2, "beta2"},
    {&hyperEpsilon, "epsilon"},
    {&hyperWarmup, "warmup_steps"},
    {&hyperTotal, "total_steps"},
    {&hyperMinLr, "min_lr"},
};

static cl::opt<std::string> tensorboardDir(
    "tensorboard",
    cl::desc("Write TensorBoard event files to DIR (rank 0): loss, lr, "
             "samples_per_sec, val_loss, and with loss scaling loss_scale "
             "and skipped_steps, by step; view with tensorboard --logdir DIR"),
    cl::value_desc("DIR"), cl::sub(trainCommand), cl::cat(trainCategory));
static cl::opt<std::string> plotPath("plot",
                                     cl::desc("Write the loss curves as PNG"),
                                     cl::value_desc("FILE.png"),
                                     cl::sub(trainCommand),
                                     cl::cat(trainCategory));
static cl::opt<int64_t> logEvery("log-every",
                                 cl::desc("Progress line every N steps "
                                          "(default: about 20 lines)"),
                                 cl::init(0), cl::sub(trainCommand),
                                 cl::cat(trainCategory));
static cl::opt<std::string>
    saveParams("save-params",
               cl::desc("Write the final parameters as DIR/<name>.npy"),
               cl::value_desc("DIR"), cl::sub(trainCommand),
               cl::cat(trainCategory));

static cl::opt<std::string> tracePath(
    "trace",
    cl::desc("Write every rank's timeline (each step, each pipeline action: "
             "a microbatch's forward or backward pass, the optimizer; the "
             "waits for messages and collectives) as one Chrome trace JSON "
             "file that Perfetto and chrome://tracing open, and print each "
             "rank's measured pipeline bubble: the share of its steps (the "
             "first left out) spent outside its actions"),
    cl::value_desc("FILE"), cl::sub(trainCommand), cl::cat(trainCategory));

static cl::opt<bool> memoryStats(
    "memory-stats",
    cl::desc("After training, print what rank 0 held: its parameters, "
             "optimizer state, inputs and outputs, and the most the compiled "
             "code's temporaries took at once during the training steps, "
             "next to the compiler's prediction (loomc --report)"),
    cl::sub(trainCommand), cl::cat(trainCategory));

static cl::OptionCategory distributedCategory("loom-run train: several ranks");
static cl::opt<unsigned>
    nprocs("nproc",
           cl::desc("Start this many local ranks of a bundle compiled with "
                    "loomc --mesh (each takes its slice of every batch); "
                    "under a torchrun-style launcher (WORLD_SIZE set) the "
                    "ranks are already there and this is not needed. Ranks "
                    "that outnumber the CPUs by a whole factor are pinned, "
                    "a pipeline stage's ranks on different CPUs "
                    "(LOOM_CPU_BIND=none: not pinned)"),
           cl::init(0), cl::sub(trainCommand), cl::cat(distributedCategory));
static cl::opt<unsigned>
    trainMasterPort("master-port",
                    cl::desc("With --nproc: rendezvous through a TCP store on "
                             "this port (default: a file store)"),
                    cl::init(0), cl::sub(trainCommand),
                    cl::cat(distributedCategory));
static cl::opt<unsigned>
    rankTimeout("timeout",
                cl::desc("With --nproc: seconds a rank waits for the others "
                         "(rendezvous, collectives) before failing, and that "
                         "the others get to stop after one fails (default "
                         "60)"),
                cl::init(60), cl::sub(trainCommand),
                cl::cat(distributedCategory));

namespace {

int fail(const Twine &message) {
  return reportError("loom-run", message);
}

struct SessionDeleter {
  void operator()(loom_session_t *s) const { loom_session_destroy(s); }
};
using Session = std::unique_ptr<loom_session_t, SessionDeleter>;

/// Returns an empty string on success, else the status message.
std::string take(loom_status_t status) {
  if (!status)
    return "";
  std::string message = loom_status_message(status);
  loom_status_free(status);
  return message.empty() ? "unknown runtime error" : message;
}

struct TensorInfo {
  size_t index;
  loom_tensor_info_t info;
};

/// Writes --trace: every rank its part, then rank 0 joins them into one
/// file and prints each rank's bubble: the share of its steps (after the
/// first) not spent in the actions the compiled program marks.
std::string writeTrace(loom_session_t *session, int rank, int world,
                       raw_ostream &log) {
  std::string part = world > 1 ? tracePath + ".rank" + std::to_string(rank)
                               : tracePath.getValue();
  if (std::string e = take(loom_trace_write(part.c_str(), rank)); !e.empty())
    return e;
  if (std::string e = take(loom_session_barrier(session)); !e.empty())
    return e;
  if (rank != 0)
    return "";
  json::Array events;
  for (int r = 0; r < world; ++r) {
    std::string path =
        world > 1 ? tracePath + ".rank" + std::to_string(r) : tracePath.getValue();
    auto buffer = MemoryBuffer::getFile(path);
    if (!buffer)
      return "cannot read " + path;
    Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
    if (!parsed)
      return path + ": " + toString(parsed.takeError());
    if (auto *object = parsed->getAsObject())
      if (auto *list = object->getArray("traceEvents"))
        for (json::Value &e : *list)
          events.push_back(std::move(e));
    if (world > 1)
      sys::fs::remove(path);
  }
  // Per rank: its steps and the time its actions took within them.
  std::map<int64_t, std::vector<std::pair<double, double>>> steps;
  std::map<int64_t, std::vector<std::pair<double, double>>> busy;
  for (const json::Value &v : events) {
    const json::Object *e = v.getAsObject();
    if (!e)
      continue;
    std::optional<int64_t> pid = e->getInteger("pid");
    std::optional<double> ts = e->getNumber("ts"), dur = e->getNumber("dur");
    std::optional<StringRef> cat = e->getString("cat");
    if (!pid || !ts || !dur || !cat)
      continue;
    if (*cat == "step")
      steps[*pid].push_back({*ts, *ts + *dur});
    else if (*cat == "compute")
      busy[*pid].push_back({*ts, *ts + *dur});
  }
  {
    std::error_code ec;
    raw_fd_ostream out(tracePath, ec);
    if (ec)
      return "cannot write " + tracePath + ": " + ec.message();
    out << formatv("{0:2}", json::Value(json::Object{
                                {"displayTimeUnit", "ms"},
                                {"traceEvents", std::move(events)}}))
        << "\n";
  }
  log << "wrote " << tracePath << " (Chrome trace: open it in Perfetto)\n";
  for (auto &[pid, spans] : steps) {
    if (busy[pid].empty() || spans.size() < 2)
      continue;
    double total = 0, inside = 0;
    for (size_t i = 1; i < spans.size(); ++i) {
      auto [begin, end] = spans[i];
      total += end - begin;
      for (auto [b, e] : busy[pid])
        if (b >= begin && e <= end)
          inside += e - b;
    }
    log << format("rank %lld: measured pipeline bubble %.3f (%.3f ms of "
                  "%.3f ms per step outside its actions, steps 2..%zu)\n",
                  (long long)pid, total > 0 ? 1.0 - inside / total : 0.0,
                  (total - inside) / 1e3 / (spans.size() - 1),
                  total / 1e3 / (spans.size() - 1), spans.size());
  }
  return "";
}

std::map<std::string, TensorInfo> tensorsOf(loom_session_t *session) {
  std::map<std::string, TensorInfo> result;
  for (size_t i = 0, e = loom_session_tensor_count(session); i < e; ++i) {
    loom_tensor_info_t info;
    if (take(loom_session_tensor_info(session, i, &info)).empty())
      result[info.name] = {i, info};
  }
  return result;
}

std::string shapeText(const int64_t *shape, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// Converts `array` to `dtype` when both are numeric and differ.
bool convert(npy::Array &array, loom_dtype_t dtype) {
  if (array.dtype == dtype)
    return true;
  auto isFloat = [](loom_dtype_t d) {
    return d == LOOM_DTYPE_FLOAT32 || d == LOOM_DTYPE_FLOAT64;
  };
  auto isInt = [](loom_dtype_t d) {
    return d == LOOM_DTYPE_INT64 || d == LOOM_DTYPE_INT32 ||
           d == LOOM_DTYPE_INT16 || d == LOOM_DTYPE_INT8;
  };
  if (!(isFloat(array.dtype) && isFloat(dtype)) &&
      !(isInt(array.dtype) && isInt(dtype)))
    return false;
  size_t n = array.numElements();
  std::vector<char> out(n * loom_dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) {
    double v = npy::elementAsDouble(array.data.data(), array.dtype, i);
    switch (dtype) {
    case LOOM_DTYPE_FLOAT32: {
      float f = (float)v;
      std::memcpy(&out[i * 4], &f, 4);
      break;
    }
    case LOOM_DTYPE_FLOAT64:
      std::memcpy(&out[i * 8], &v, 8);
      break;
    case LOOM_DTYPE_INT64: {
      int64_t x = (int64_t)v;
      std::memcpy(&out[i * 8], &x, 8);
      break;
    }
    case LOOM_DTYPE_INT32: {
      int32_t x = (int32_t)v;
      std::memcpy(&out[i * 4], &x, 4);
      break;
    }
    case LOOM_DTYPE_INT16: {
      int16_t x = (int16_t)v;
      std::memcpy(&out[i * 2], &x, 2);
      break;
    }
    default: {
      int8_t x = (int8_t)v;
      std::memcpy(&out[i], &x, 1);
      break;
    }
    }
  }
  array.dtype = dtype;
  array.data = std::move(out);
  return true;
}

double scalarOf(loom_session_t *session, size_t index) {
  loom_tensor_info_t info;
  const void *data;
  size_t bytes;
  if (!take(loom_session_tensor_info(session, index, &info)).empty() ||
      !take(loom_session_tensor_data(session, index, &data, &bytes)).empty())
    return NAN;
  return npy::elementAsDouble(static_cast<const char *>(data), info.dtype, 0);
}

/// Each rank's pipeline stage in the bundle's mesh (what the launcher
/// spreads over the CPUs when it pins ranks), or nothing when the bundle
/// has no pipeline or its mesh is not `nproc` ranks (each rank then reports
/// what is wrong with the bundle).
std::vector<int64_t> pipelineStages(StringRef dir, unsigned nproc) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> text =
      MemoryBuffer::getFile(dir + "/manifest.json");
  if (!text)
    return {};
  Expected<json::Value> manifest = json::parse((*text)->getBuffer());
  if (!manifest) {
    consumeError(manifest.takeError());
    return {};
  }
  const json::Object *root = manifest->getAsObject();
  const json::Array *mesh = root ? root->getArray("mesh") : nullptr;
  const json::Object *training = root ? root->getObject("training") : nullptr;
  std::optional<StringRef> axis =
      training ? training->getString("pipeline_axis") : std::nullopt;
  if (!mesh || !axis)
    return {};
  int64_t ranks = 1, stride = 1, stages = 0;
  for (const json::Value &entry : reverse(*mesh)) {
    const json::Object *a = entry.getAsObject();
    std::optional<int64_t> size = a ? a->getInteger("size") : std::nullopt;
    if (!size || *size < 1)
      return {};
    if (a->getString("name") == axis && !stages) // the last, as libloomrt
      stages = *size, stride = ranks;
    ranks *= *size;
  }
  if (!stages || ranks != int64_t(nproc))
    return {};
  std::vector<int64_t> out;
  for (int64_t r = 0; r < ranks; ++r)
    out.push_back((r / stride) % stages);
  return out;
}

std::string formatDuration(double seconds) {
  long s = (long)std::lround(std::max(seconds, 0.0));
  char text[32];
  std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
                s % 60);
  return text;
}

} // namespace

int runTrain(int argc, char **argv) {
  // Several ranks: start them, each running this command without --nproc.
  const char *worldSize = std::getenv("WORLD_SIZE");
  bool distributed = worldSize && std::atoi(worldSize) > 1;
  if (nprocs > 1 && !distributed) {
    std::vector<std::string> args =
        rankCommandLine(argc, argv, {"nproc", "master-port"});
    ::setenv("LOOM_TIMEOUT_SEC", std::to_string(rankTimeout.getValue()).c_str(),
             1);
    return launchRanks(nprocs, trainMasterPort, rankTimeout, args,
                       pipelineStages(bundle, nprocs));
  }

  // Sessions.
  auto open = [&](const char *entry, Session &out) -> std::string {
    loom_session_options_t options;
    loom_session_options_initialize(&options);
    options.entry_point = entry;
    options.distributed = distributed;
    loom_session_t *s = nullptr;
    std::string error = take(loom_session_create(bundle.c_str(), &options, &s));
    out.reset(s);
    return error;
  };
  Session train;
  if (std::string error = open("train_step", train); !error.empty()) {
    if (error.find("no entry point") != std::string::npos)
      return fail(bundle + " has no train_step; compile the model with "
                           "`loomc MODEL --train ... -o " + bundle + "`");
    return fail(error);
  }
  std::map<std::string, TensorInfo> tensors = tensorsOf(train.get());
  if (!tensors.count("loss"))
    return fail(bundle + ": train_step has no \"loss\" output");

  // Data.
  train::Dataset data;
  std::string error;
  auto inputInfo = [&](const std::string &name) -> const TensorInfo * {
    auto it = tensors.find(name);
    if (it == tensors.end() || it->second.info.kind != LOOM_TENSOR_INPUT)
      return nullptr;
    return &it->second;
  };
  auto inputNames = [&] {
    std::string names;
    for (auto &[name, t] : tensors)
      if (t.info.kind == LOOM_TENSOR_INPUT)
        names += (names.empty() ? "" : ", ") + name;
    return names;
  };
  auto addArray = [&](const std::string &name, npy::Array array,
                      const std::string &source) -> bool {
    const TensorInfo *input = inputInfo(name);
    if (!input) {
      fail("train_step has no input \"" + name + "\" (its inputs: " +
           inputNames() + ")");
      return false;
    }
    const loom_tensor_info_t &info = input->info;
    if (info.rank == 0) {
      fail("input \"" + name + "\" is a scalar with no batch dimension; "
           "loom-run train binds only batched inputs");
      return false;
    }
    bool sameSample = array.shape.size() == (size_t)info.rank;
    for (size_t d = 1; sameSample && d < array.shape.size(); ++d)
      sameSample = array.shape[d] == info.shape[d];
    if (!sameSample) {
      fail("input \"" + name + "\" takes samples of shape " +
           shapeText(info.shape + 1, info.rank - 1) + ", but " + source +
           " holds " + shapeText(array.shape.data(), array.shape.size()) +
           " (the first dimension indexes samples)");
      return false;
    }
    if (!convert(array, info.dtype)) {
      fail("input \"" + name + "\" is " + loom_dtype_name(info.dtype) +
           ", but " + source + " holds " + loom_dtype_name(array.dtype));
      return false;
    }
    if (!data.add(name, std::move(array), error)) {
      fail(error);
      return false;
    }
    return true;
  };
  for (const std::string &spec : dataSpecs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return fail("expected --data NAME=FILE.npy, got \"" + spec + "\"");
    npy::Array array;
    if (!npy::read(file.str(), array, error))
      return fail(error);
    if (!addArray(name.str(), std::move(array), file.str()))
      return 1;
  }
  if (!tokens.empty()) {
    const TensorInfo *input = inputInfo(tokenInput);
    if (tokenInput.empty() || tokenTarget.empty() || !input ||
        input->info.rank != 2)
      return fail("--tokens needs --token-input and --token-target naming "
                  "[batch, sequence] inputs of train_step (its inputs: " +
                  inputNames() + ")");
    npy::Array inputs, targets;
    if (!train::readTokens(tokens, tokenDtype, input->info.shape[1], inputs,
                           targets, error))
      return fail(error);
    if (!addArray(tokenInput, std::move(inputs), tokens) ||
        !addArray(tokenTarget, std::move(targets), tokens))
      return 1;
  }
  // With a mesh, each rank's inputs are one block of the global batch.
  int rank = loom_session_rank(train.get());
  int world = loom_session_world_size(train.get());
  int64_t compiledBatch = -1, shardIndex = 0, shardCount = 1;
  for (auto &[name, t] : tensors) {
    if (t.info.kind != LOOM_TENSOR_INPUT)
      continue;
    if (std::find(data.names.begin(), data.names.end(), name) ==
        data.names.end())
      return fail("input \"" + name + "\" has no data; bind it with --data " +
                  name + "=FILE.npy");
    if (t.info.rank == 0)
      return fail("input \"" + name + "\" has no batch dimension");
    int64_t index = 0, count = 1;
    if (std::string e = take(loom_session_tensor_shard(train.get(), t.index, 0,
                                                       &index, &count));
        !e.empty())
      return fail(e);
    int64_t global = t.info.shape[0] * count;
    if (compiledBatch >= 0 &&
        (global != compiledBatch || index != shardIndex || count != shardCount))
      return fail("the inputs of train_step disagree on the batch size");
    compiledBatch = global;
    shardIndex = index;
    shardCount = count;
  }
  // Inputs are replicated over the mesh axes that do not split the batch
  // (tensor parallelism): such ranks bind the same block.
  bool meshBundle = loom_session_mesh_devices(train.get()) > 1;
  if (world > 1 && !meshBundle)
    return fail(bundle + " was compiled for one device; compile it with "
                         "loomc --mesh dp=" + std::to_string(world) +
                " to train on " + std::to_string(world) + " ranks");
  // Only rank 0 prints, writes metrics, plots and checkpoints.
  bool leader = rank == 0;
  /// The whole shape of a tensor as checkpoints hold it (split over ranks
  /// or viewed in another shape by the bundle).
  auto wholeShapeOf = [&](loom_session_t *session, const TensorInfo &t) {
    int32_t rank = 0;
    int64_t dims[LOOM_MAX_RANK];
    std::vector<int64_t> shape;
    if (take(loom_session_tensor_whole_shape(session, t.index, &rank, dims))
            .empty())
      shape.assign(dims, dims + rank);
    return shape;
  };
  /// The whole value of a tensor: a collective when it is split.
  auto wholeOf = [&](loom_session_t *session, const TensorInfo &t,
                     npy::Array &out) -> std::string {
    out.dtype = t.info.dtype;
    out.shape = wholeShapeOf(session, t);
    size_t elements = 1;
    for (int64_t d : out.shape)
      elements *= (size_t)d;
    out.data.resize(elements * loom_dtype_size(t.info.dtype));
    return take(loom_session_tensor_gather(session, t.index, out.data.data(),
                                           out.data.size()));
  };
  raw_ostream &log = leader ? outs() : nulls();
  /// Sets the inputs of `session` from a loader's global batch.
  auto bind = [&](loom_session_t *session,
                  std::map<std::string, TensorInfo> &named,
                  const std::vector<std::vector<char>> &buffers) -> std::string {
    // Each rank takes its block of the global batch (split along the batch,
    // and along the sequence with sequence parallelism).
    for (size_t i = 0; i < data.names.size(); ++i)
      if (std::string e = take(loom_session_set_tensor_whole(
              session, named[data.names[i]].index, buffers[i].data(),
              buffers[i].size()));
          !e.empty())
        return e;
    return "";
  };
  if (batchSize && batchSize != compiledBatch)
    return fail("the bundle was compiled for batch size " +
                std::to_string(compiledBatch) + ", not " +
                std::to_string(batchSize) +
                "; recompile with loomc --input-shape to change it");
  int64_t batch = compiledBatch;

  // Split and loaders.
  if (valSplit < 0 || valSplit >= 1)
    return fail("--val-split must be in [0, 1)");
  std::vector<int64_t> order =
      noShuffle ? train::permutation(0, 0, 0) : std::vector<int64_t>();
  if (noShuffle) {
    order.resize(data.samples);
    for (int64_t i = 0; i < data.samples; ++i)
      order[i] = i;
  } else {
    order = train::permutation(data.samples, seed, ~0ull);
  }
  int64_t heldOut = (int64_t)std::floor(data.samples * valSplit);
  if (valSplit > 0 && heldOut < batch)
    return fail("--val-split " + std::to_string(valSplit) + " holds out " +
                std::to_string(heldOut) + " samples, fewer than one batch of " +
                std::to_string(batch));
  std::vector<int64_t> valSamples(order.end() - heldOut, order.end());
  std::vector<int64_t> trainSamples(order.begin(), order.end() - heldOut);
  train::DataLoader loader(data, trainSamples, batch, !noShuffle, seed);
  int64_t perEpoch = loader.batchesPerEpoch();
  if (perEpoch == 0)
    return fail("the training split holds " +
                std::to_string(trainSamples.size()) +
                " samples, fewer than one batch of " + std::to_string(batch));
  int64_t totalSteps = epochs > 0 ? epochs * perEpoch
                       : steps > 0 ? (int64_t)steps
                                   : perEpoch;

  // Resume.
  int64_t step = 0, badEvals = 0;
  double bestVal = std::numeric_limits<double>::infinity();
  std::vector<std::string> stateNames;
  for (auto &[name, t] : tensors)
    if (t.info.kind == LOOM_TENSOR_PARAMETER || t.info.kind == LOOM_TENSOR_STATE)
      stateNames.push_back(name);
  if (!initFrom.empty() && !resume.empty())
    return fail("--init-from starts a new run and --resume continues one; "
                "give one of them");
  if (!resume.empty()) {
    train::Checkpoint ckpt;
    if (!train::readCheckpoint(resume, ckpt, error))
      return fail(error);
    for (const std::string &name : stateNames) {
      const loom_tensor_info_t &info = tensors[name].info;
      auto it = ckpt.tensors.find(name);
      if (it == ckpt.tensors.end())
        return fail("checkpoint " + resume + " does not match " + bundle +
                    ": it has no tensor \"" + name + "\"");
      const npy::Array &a = it->second;
      std::vector<int64_t> whole = wholeShapeOf(train.get(), tensors[name]);
      if (a.dtype != info.dtype || a.shape != whole)
        return fail("checkpoint " + resume + " does not match " + bundle +
                    ": \"" + name + "\" is " + loom_dtype_name(a.dtype) + " " +
                    shapeText(a.shape.data(), a.shape.size()) +
                    " there but " + loom_dtype_name(info.dtype) + " " +
                    shapeText(whole.data(), whole.size()) + " in the bundle");
      // Checkpoints hold whole tensors; a split one takes its block.
      if (std::string e = take(loom_session_set_tensor_whole(
              train.get(), tensors[name].index, a.data.data(), a.data.size()));
          !e.empty())
        return fail(e);
    }
    if (ckpt.tensors.size() != stateNames.size())
      return fail("checkpoint " + resume + " does not match " + bundle +
                  ": it holds tensors the bundle does not have");
    auto number = [&](const char *key) { return ckpt.numbers[key]; };
    if (number("batch_size") != batch || number("samples") != data.samples ||
        number("seed") != (double)seed || number("shuffle") != !noShuffle ||
        number("heldout") != heldOut)
      return fail("checkpoint " + resume +
                  " was written with other data settings (samples, batch "
                  "size, seed, shuffling or validation split)");
    // The run goes on with its hyperparameters unless they are given again.
    for (auto &[key, value] : ckpt.numbers)
      if (StringRef(key).starts_with("hparam."))
        if (std::string e = take(loom_session_set_hyperparameter(
                train.get(), key.c_str() + 7, value));
            !e.empty())
          return fail("checkpoint " + resume + ": " + e);
    step = (int64_t)number("step");
    badEvals = (int64_t)number("bad_evals");
    bestVal = ckpt.numbers.count("best_val_loss") ? number("best_val_loss")
                                                  : bestVal;
    loader.seek({(int64_t)number("epoch"), (int64_t)number("batch")});
    log << "resumed from " << resume << " at step " << step << "\n";
  }

  // Run-time hyperparameters.
  std::vector<std::string> hyperNames;
  for (auto &[name, t] : tensors)
    if (t.info.kind == LOOM_TENSOR_HYPERPARAMETER)
      hyperNames.push_back(name.substr(7));
  auto shown = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  for (auto [option, name] : hyperOptions) {
    if (!option->getNumOccurrences())
      continue;
    if (hyperNames.empty())
      return fail(bundle + " has its hyperparameters compiled in; compile it "
                           "with loomc --runtime-hyperparams to set --" +
                  option->ArgStr.str() + " at run time");
    if (std::find(hyperNames.begin(), hyperNames.end(), name) ==
        hyperNames.end())
      return fail("--" + option->ArgStr.str() + " does not apply to " +
                  bundle + " (its optimizer and schedule take " +
                  join(hyperNames, ", ") + ")");
    if (std::string e = take(loom_session_set_hyperparameter(
            train.get(), name, option->getValue()));
        !e.empty())
      return fail(e);
  }
  std::map<std::string, double> hyper;
  for (const std::string &name : hyperNames)
    (void)take(loom_session_hyperparameter(train.get(), name.c_str(),
                                           &hyper[name]));
  if (!hyper.empty()) {
    auto value = [&](const char *name) {
      return hyper.count(name) ? hyper[name] : 0.0;
    };
    for (auto &[name, v] : hyper)
      if (v < 0)
        return fail("hyperparameter " + name + " must not be negative, got " +
                    shown(v));
    if (value("lr") <= 0)
      return fail("the learning rate must be positive");
    for (const char *beta : {"beta1", "beta2", "momentum"})
      if (value(beta) >= 1)
        return fail(std::string(beta) + " must be below 1, got " +
                    shown(value(beta)));
    for (const char *count : {"warmup_steps", "total_steps"})
      if (value(count) != std::floor(value(count)))
        return fail(std::string(count) + " must be a whole number of steps");
    if (hyper.count("total_steps") &&
        value("total_steps") <= value("warmup_steps"))
      return fail("the cosine schedule needs total_steps (" +
                  shown(value("total_steps")) +
                  ") greater than warmup_steps (" +
                  shown(value("warmup_steps")) + ")");
    std::string line;
    for (auto &[name, v] : hyper)
      line += (line.empty() ? "" : ", ") + name + " " + shown(v);
    log << "hyperparameters: " << line << "\n";
  }

  // Freezing is compiled in: a parameter the step updates is not frozen.
  for (const std::string &glob : freezeGlobs) {
    llvm::Expected<llvm::GlobPattern> pattern = llvm::GlobPattern::create(glob);
    if (!pattern)
      return fail("--freeze '" + glob + "': " + toString(pattern.takeError()));
    unsigned matched = 0;
    for (auto &[name, t] : tensors) {
      if (t.info.kind != LOOM_TENSOR_PARAMETER || !pattern->match(name))
        continue;
      ++matched;
      for (auto &[outName, out] : tensors)
        if (out.info.kind == LOOM_TENSOR_OUTPUT &&
            out.info.updates == (int64_t)t.index)
          return fail("parameter \"" + name + "\" is trained by " + bundle +
                      "; freezing removes its gradient at compile time: "
                      "recompile with loomc --freeze '" + glob + "'");
    }
    if (matched == 0)
      return fail("--freeze '" + glob + "' matches no parameter of " + bundle);
  }

  if (!initFrom.empty()) {
    run::Pretrained pretrained;
    if (!run::readPretrained(initFrom, pretrained, error))
      return fail(error);
    // Renamed as --init-map says.
    std::map<std::string, npy::Array> byName;
    for (auto &[name, a] : pretrained.tensors) {
      std::string renamed = name;
      for (const std::string &rule : initMap) {
        auto [from, to] = StringRef(rule).split('=');
        if (!StringRef(rule).contains('='))
          return fail("--init-map expects OLD=NEW, got '" + rule + "'");
        if (StringRef(name).starts_with(from)) {
          renamed = (to + StringRef(name).drop_front(from.size())).str();
          break;
        }
      }
      byName[renamed] = std::move(a);
    }
    std::vector<std::string> missing, misshaped, unexpected;
    std::vector<std::pair<std::string, npy::Array *>> loads;
    for (auto &[name, t] : tensors) {
      if (t.info.kind != LOOM_TENSOR_PARAMETER)
        continue;
      auto it = byName.find(name);
      if (it == byName.end()) {
        missing.push_back(name);
        continue;
      }
      std::vector<int64_t> whole = wholeShapeOf(train.get(), t);
      bool floats = it->second.dtype == LOOM_DTYPE_FLOAT32 ||
                    it->second.dtype == LOOM_DTYPE_FLOAT64 ||
                    it->second.dtype == LOOM_DTYPE_FLOAT16 ||
                    it->second.dtype == LOOM_DTYPE_BFLOAT16;
      bool floatParam = t.info.dtype == LOOM_DTYPE_FLOAT32 ||
                        t.info.dtype == LOOM_DTYPE_BFLOAT16 ||
                        t.info.dtype == LOOM_DTYPE_FLOAT16;
      if (it->second.shape != whole || !floats || !floatParam)
        misshaped.push_back(
            name + " (" + loom_dtype_name(it->second.dtype) + " " +
            shapeText(it->second.shape.data(), it->second.shape.size()) +
            " in the file, " + loom_dtype_name(t.info.dtype) + " " +
            shapeText(whole.data(), whole.size()) + " in the bundle)");
      else
        loads.push_back({name, &it->second});
    }
    for (auto &[name, a] : byName)
      if (!tensors.count(name) ||
          tensors[name].info.kind != LOOM_TENSOR_PARAMETER)
        unexpected.push_back(name);
    auto listed = [](const std::vector<std::string> &names) {
      std::string text;
      for (size_t i = 0; i < names.size() && i < 8; ++i)
        text += (i ? ", " : "") + names[i];
      if (names.size() > 8)
        text += ", ... (" + std::to_string(names.size()) + " in all)";
      return text;
    };
    std::string problems;
    if (!missing.empty())
      problems += "\n  parameters the file lacks: " + listed(missing);
    if (!unexpected.empty())
      problems += "\n  tensors of the file that are no parameter: " +
                  listed(unexpected);
    if (!misshaped.empty())
      problems += "\n  tensors of another shape or type: " + listed(misshaped);
    if (!problems.empty() && !initPartial)
      return fail(initFrom + " does not match " + bundle + ":" + problems +
                  "\n(--init-partial loads what matches)");
    for (auto &[name, a] : loads) {
      // Converted to the parameter's type: f32, or rounded once to bf16 or
      // fp16 (a bundle compiled with --precision=bf16-pure).
      size_t n = a->numElements();
      std::vector<float> values(n);
      for (size_t i = 0; i < n; ++i)
        values[i] = (float)npy::elementAsDouble(a->data.data(), a->dtype, i);
      loom_dtype_t dtype = tensors[name].info.dtype;
      std::vector<uint16_t> narrow;
      if (dtype != LOOM_DTYPE_FLOAT32)
        for (float v : values)
          narrow.push_back(dtype == LOOM_DTYPE_BFLOAT16
                               ? rt::fromFloat<rt::Bf16>(v).bits
                               : rt::fromFloat<rt::F16>(v).bits);
      const void *data = narrow.empty() ? (const void *)values.data()
                                        : (const void *)narrow.data();
      size_t bytes = narrow.empty() ? values.size() * sizeof(float)
                                    : narrow.size() * sizeof(uint16_t);
      if (std::string e = take(loom_session_set_tensor_whole(
              train.get(), tensors[name].index, data, bytes));
          !e.empty())
        return fail(e);
    }
    log << "initialized " << loads.size() << " of "
        << loads.size() + missing.size() + misshaped.size()
        << " parameters from " << initFrom << "\n";
    if (!problems.empty())
      log << "skipped (--init-partial):" << problems << "\n";
  }

  // Every rank takes part (split tensors are gathered); rank 0 writes.
  auto saveCheckpoint = [&](const std::string &file) -> bool {
    train::Checkpoint ckpt;
    if (!train::gatherSession(train.get(), ckpt, error)) {
      fail(error);
      return false;
    }
    if (!leader)
      return true;
    train::Position at = loader.position();
    for (auto [key, value] :
         {std::pair<const char *, double>{"step", (double)step},
          {"epoch", (double)at.epoch},
          {"batch", (double)at.batch},
          {"batch_size", (double)batch},
          {"samples", (double)data.samples},
          {"seed", (double)seed},
          {"shuffle", (double)!noShuffle},
          {"heldout", (double)heldOut},
          {"bad_evals", (double)badEvals}})
      ckpt.numbers[key] = value;
    if (std::isfinite(bestVal))
      ckpt.numbers["best_val_loss"] = bestVal;
    ckpt.strings["bundle"] = bundle;
    SmallString<256> path(checkpointDir);
    sys::path::append(path, file);
    if (!train::writeCheckpoint(std::string(path), ckpt, error)) {
      fail(error);
      return false;
    }
    return true;
  };
  if (!checkpointDir.empty() && leader)
    if (std::error_code ec = sys::fs::create_directories(checkpointDir))
      return fail("cannot create " + checkpointDir + ": " + ec.message());

  // Evaluation.
  Session eval;
  std::map<std::string, TensorInfo> evalTensors;
  auto openEval = [&]() -> std::string {
    std::string e = open("eval_step", eval);
    if (e.find("pipeline parallelism") != std::string::npos)
      return bundle + " is pipelined (loomc --mesh with a pp axis), and "
                      "evaluation is not pipelined yet: train it without "
                      "--val-split";
    return e;
  };
  // A bundle without an evaluation step fails before training, not after.
  if (valSplit > 0 && !eval)
    if (std::string e = openEval(); !e.empty())
      return fail(e);
  auto evaluate = [&](double &out) -> bool {
    if (!eval)
      if (std::string e = openEval(); !e.empty())
        return fail(e), false;
    if (evalTensors.empty())
      evalTensors = tensorsOf(eval.get());
    for (auto &[name, t] : evalTensors) {
      if (t.info.kind != LOOM_TENSOR_PARAMETER)
        continue;
      const void *ptr;
      size_t bytes;
      if (!take(loom_session_tensor_data(train.get(), tensors[name].index,
                                         &ptr, &bytes))
               .empty() ||
          !take(loom_session_set_tensor(eval.get(), t.index, ptr, bytes))
               .empty())
        return fail("cannot copy \"" + name + "\" to eval_step"), false;
    }
    train::DataLoader valLoader(data, valSamples, batch, false, seed, 1);
    double sum = 0;
    for (int64_t b = 0; b < valLoader.batchesPerEpoch(); ++b) {
      if (std::string e = bind(eval.get(), evalTensors, valLoader.next());
          !e.empty())
        return fail(e), false;
      if (std::string e = take(loom_session_run(eval.get())); !e.empty())
        return fail(e), false;
      sum += scalarOf(eval.get(), evalTensors["loss"].index);
    }
    out = sum / std::max<int64_t>(valLoader.batchesPerEpoch(), 1);
    return true;
  };

  // Metrics.
  std::ofstream metrics;
  bool csv = StringRef(metricsPath).ends_with(".csv");
  if (!metricsPath.empty() && leader) {
    metrics.open(metricsPath, resume.empty() ? std::ios::trunc : std::ios::app);
    if (!metrics)
      return fail("cannot write " + metricsPath);
    if (csv && resume.empty())
      metrics << "step,epoch,loss,lr,samples_per_sec,step_ms,val_loss\n";
  }
  // With dynamic loss scaling (loomc --precision=fp16): the step's scale and
  // the skipped steps so far, for the progress lines and the metrics.
  std::optional<size_t> scaleIndex, skippedIndex;
  if (tensors.count("loss_scale") &&
      tensors.count("loss_scale.skipped_steps")) {
    scaleIndex = tensors["loss_scale"].index;
    // The state after the step (the runtime swaps updates in).
    skippedIndex = tensors["loss_scale.skipped_steps"].index;
  }
  double scale = NAN, skipped = NAN;
  run::EventWriter events;
  if (!tensorboardDir.empty() && leader &&
      !events.open(tensorboardDir, error))
    return fail(error);
  auto record = [&](int64_t s, int64_t epoch, double loss, double lr,
                    double rate, double val, double stepMs) {
    if (events.isOpen()) {
      if (!std::isnan(val)) {
        events.scalar("val_loss", s, val);
      } else {
        events.scalar("loss", s, loss);
        events.scalar("lr", s, lr);
        events.scalar("samples_per_sec", s, rate);
        if (scaleIndex) {
          events.scalar("loss_scale", s, scale);
          events.scalar("skipped_steps", s, skipped);
        }
      }
    }
    if (!metrics.is_open())
      return;
    char line[384];
    auto field = [](const char *fmt, double v) {
      if (std::isnan(v))
        return std::string();
      char text[64];
      std::snprintf(text, sizeof(text), fmt, v);
      return std::string(text);
    };
    if (csv)
      std::snprintf(line, sizeof(line), "%lld,%lld,%s,%s,%s,%s,%s\n",
                    (long long)s, (long long)epoch,
                    field("%.9g", loss).c_str(), field("%.9g", lr).c_str(),
                    field("%.1f", rate).c_str(), field("%.3f", stepMs).c_str(),
                    field("%.9g", val).c_str());
    else if (std::isnan(val) && scaleIndex)
      std::snprintf(line, sizeof(line),
                    "{\"step\": %lld, \"epoch\": %lld, \"loss\": %.9g, \"lr\": "
                    "%.9g, \"loss_scale\": %.9g, \"skipped_steps\": %lld, "
                    "\"samples_per_sec\": %.1f, \"step_ms\": %.3f}\n",
                    (long long)s, (long long)epoch, loss, lr, scale,
                    (long long)skipped, rate, stepMs);
    else if (std::isnan(val))
      std::snprintf(line, sizeof(line),
                    "{\"step\": %lld, \"epoch\": %lld, \"loss\": %.9g, \"lr\": "
                    "%.9g, \"samples_per_sec\": %.1f, \"step_ms\": %.3f}\n",
                    (long long)s, (long long)epoch, loss, lr, rate, stepMs);
    else
      std::snprintf(line, sizeof(line),
                    "{\"step\": %lld, \"epoch\": %lld, \"val_loss\": %.9g}\n",
                    (long long)s, (long long)epoch, val);
    metrics << line;
    metrics.flush();
  };

  // The loop.
  size_t lossIndex = tensors["loss"].index;
  std::optional<size_t> lrIndex;
  if (tensors.count("lr"))
    lrIndex = tensors["lr"].index;
  int64_t every = logEvery > 0 ? (int64_t)logEvery
                               : std::max<int64_t>(1, (totalSteps - step) / 20);
  Curve trainCurve{{}, {31, 119, 180}}, valCurve{{}, {214, 39, 40}};
  int64_t tokensPerSample = tokens.empty() ? 0 : inputInfo(tokenInput)->info.shape[1];
  auto started = std::chrono::steady_clock::now();
  int64_t firstStep = step;
  bool stopped = false;
  log << "training " << bundle << ": " << trainSamples.size() << " samples ("
      << perEpoch << " batches of " << batch << " per epoch), " << heldOut
      << " held out, steps " << step + 1 << ".." << totalSteps;
  if (world > 1)
    log << ", " << world << " ranks of " << batch / shardCount
        << " samples each";
  log << "\n";
  // The temporaries' high-water mark counts from here: the training steps
  // (and evaluations between them).
  loom_memory_reset_peak();
  if (!tracePath.empty())
    loom_trace_enable(1);
  while (step < totalSteps && !stopped) {
    int64_t epoch = loader.position().epoch;
    if (std::string e = bind(train.get(), tensors, loader.next()); !e.empty())
      return fail(e);
    auto runStart = std::chrono::steady_clock::now();
    if (std::string e = take(loom_session_run(train.get())); !e.empty())
      return fail(e);
    double stepMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - runStart)
                        .count();
    ++step;
    double loss = scalarOf(train.get(), lossIndex);
    double lr = lrIndex ? scalarOf(train.get(), *lrIndex) : NAN;
    if (scaleIndex) {
      scale = scalarOf(train.get(), *scaleIndex);
      skipped = scalarOf(train.get(), *skippedIndex);
    }
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    double rate = (step - firstStep) * batch / std::max(elapsed, 1e-9);
    record(step, epoch, loss, lr, rate, NAN, stepMs);
    trainCurve.points.push_back({(double)step, loss});
    if (!std::isfinite(loss))
      return fail("the loss is " + std::to_string(loss) + " at step " +
                  std::to_string(step) +
                  "; lower the learning rate or clip gradients "
                  "(loomc --clip-grad-norm)");
    if (step % every == 0 || step == totalSteps || step == firstStep + 1) {
      double eta = elapsed / (step - firstStep) * (totalSteps - step);
      log << format("step %lld/%lld | epoch %lld | loss %.6f",
                    (long long)step, (long long)totalSteps, (long long)epoch,
                    loss);
      if (lrIndex)
        log << format(" | lr %.3g", lr);
      if (scaleIndex)
        log << format(" | loss scale %g (%lld skipped)", scale,
                      (long long)skipped);
      log << format(" | %.0f samples/s", rate);
      if (tokensPerSample)
        log << format(" | %.0f tokens/s", rate * tokensPerSample);
      log << " | ETA " << formatDuration(eta) << "\n";
      log.flush();
    }
    bool evalNow = heldOut > 0 &&
                   ((evalEvery > 0 && step % evalEvery == 0) ||
                    step == totalSteps);
    if (evalNow) {
      double val;
      if (!evaluate(val))
        return 1;
      record(step, epoch, NAN, NAN, NAN, val, NAN);
      valCurve.points.push_back({(double)step, val});
      bool improved = val < bestVal - minDelta;
      log << format("eval at step %lld: val_loss %.6f", (long long)step, val)
          << (improved ? " (best)" : "") << "\n";
      if (improved) {
        bestVal = val;
        badEvals = 0;
        if (!checkpointDir.empty() && !saveCheckpoint("best.ckpt"))
          return 1;
      } else if (patience > 0 && ++badEvals >= patience) {
        log << "early stopping: no improvement in " << badEvals
            << " evaluations (best val_loss " << format("%.6f", bestVal)
            << ")\n";
        stopped = true;
      }
    }
    if (!checkpointDir.empty() &&
        ((checkpointEvery > 0 && step % checkpointEvery == 0) ||
         step == totalSteps || stopped))
      if (!saveCheckpoint("last.ckpt"))
        return 1;
  }

  // Mixture-of-experts layers: how the last step's batch spread over the
  // experts (loom-build-train-step's `moe.<node>.expert_load` outputs).
  for (const auto &[name, tensor] : tensors) {
    StringRef layer(name);
    if (!leader || !layer.consume_front("moe.") ||
        !layer.consume_back(".expert_load") || tensor.info.rank != 2)
      continue;
    const void *data;
    size_t bytes;
    if (std::string e = take(
            loom_session_tensor_data(train.get(), tensor.index, &data, &bytes));
        !e.empty())
      return fail(e);
    int64_t experts = tensor.info.shape[1];
    auto at = [&](int64_t row, int64_t e) {
      return npy::elementAsDouble(static_cast<const char *>(data),
                                  tensor.info.dtype, row * experts + e);
    };
    double routed = 0, kept = 0, most = 0;
    std::string routedList, keptList;
    for (int64_t e = 0; e < experts; ++e) {
      routed += at(0, e);
      kept += at(1, e);
      most = std::max(most, at(1, e));
      routedList += " " + std::to_string((long long)at(0, e));
      keptList += " " + std::to_string((long long)at(1, e));
    }
    log << "expert load of '" << layer << "' on the last batch: routed"
        << routedList << ", processed" << keptList
        << format(" (%.0f of %.0f assignments dropped; busiest expert %.2fx "
                  "the mean)\n",
                  routed - kept, routed,
                  kept > 0 ? most * (double)experts / kept : 0.0);
  }

  if (!tracePath.empty()) {
    loom_trace_enable(0);
    if (std::string e = writeTrace(train.get(), rank, world, log); !e.empty())
      return fail(e);
  }

  if (memoryStats) {
    loom_memory_stats_t m;
    if (std::string e = take(loom_session_memory_stats(train.get(), &m));
        !e.empty())
      return fail(e);
    auto mib = [](size_t bytes) { return format("%.3f MiB", bytes / 1048576.0); };
    log << "memory of rank 0: parameters " << m.parameter_bytes
        << " B, optimizer state " << m.state_bytes << " B, inputs "
        << m.input_bytes << " B, outputs " << m.output_bytes << " B ("
        << mib(m.parameter_bytes + m.state_bytes + m.input_bytes +
               m.output_bytes)
        << ")\n";
    log << "temporaries of rank 0: peak " << m.temporary_peak_bytes << " B ("
        << mib(m.temporary_peak_bytes) << "), predicted "
        << m.predicted_temporary_peak_bytes << " B";
    if (m.predicted_temporary_peak_bytes)
      log << format(" (%+.1f%%)",
                    100.0 * ((double)m.temporary_peak_bytes /
                                 (double)m.predicted_temporary_peak_bytes -
                             1.0));
    log << "\n";
    // One record in the JSON metrics (CSV rows are steps only).
    if (metrics.is_open() && !csv) {
      metrics << formatv("{{\"step\": {0}, \"memory\": {{\"parameter_bytes\": "
                         "{1}, \"state_bytes\": {2}, \"input_bytes\": {3}, "
                         "\"output_bytes\": {4}, \"temporary_peak_bytes\": "
                         "{5}, \"predicted_temporary_peak_bytes\": {6}}}\n",
                         step, m.parameter_bytes, m.state_bytes, m.input_bytes,
                         m.output_bytes, m.temporary_peak_bytes,
                         m.predicted_temporary_peak_bytes)
                     .str();
      metrics.flush();
    }
  }
  if (!plotPath.empty() && leader) {
    std::vector<Curve> curves{trainCurve};
    if (!valCurve.points.empty())
      curves.push_back(valCurve);
    if (!writePlot(plotPath, curves, error))
      return fail(error);
    outs() << "wrote " << plotPath << " (training loss blue, validation red)\n";
  }
  if (!saveParams.empty()) {
    if (leader)
      if (std::error_code ec = sys::fs::create_directories(saveParams))
        return fail("cannot create " + saveParams + ": " + ec.message());
    for (auto &[name, t] : tensors) {
      if (t.info.kind != LOOM_TENSOR_PARAMETER)
        continue;
      npy::Array a;
      if (std::string e = wholeOf(train.get(), t, a); !e.empty())
        return fail(e);
      if (!leader)
        continue;
      std::string file = name;
      for (char &c : file)
        if (c == '/' || c == ':' || c == '\\')
          c = '_';
      SmallString<256> path(saveParams);
      sys::path::append(path, file + ".npy");
      if (!npy::write(std::string(path), a, error))
        return fail(error);
    }
  }
  return 0;
}
