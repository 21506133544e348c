//===- Planner.h - cost model and search of the auto-parallel planner -*- C++ -*-===//
//
// The planner chooses how a training step is split over a cluster: the mesh
// (dp x tp x pp, and ep for mixture-of-experts layers), the ZeRO stage, the
// microbatch size and count, the pipeline schedule, the precision and what to
// recompute. It predicts, for every candidate, the step time and the memory
// per device from a cost model of the model's layers and the cluster's
// devices and links, drops the candidates that do not fit, and ranks the
// rest.
//
// The cost model knows a layer as the operations the compiler emits for it:
// the matrix products (timed by a roofline of the device's GEMM throughput
// and memory bandwidth, plus a launch overhead), the memory-bound operations
// (norms, softmax, activations, dropout, residuals: bytes over the bandwidth
// elementwise kernels reach), the collectives the partitioner inserts for
// tensor, sequence and expert parallelism (ring and pairwise formulas over
// the link the group spans), the pipeline's point-to-point transfers and
// bubble, the data-parallel gradient reduction (exposed or overlapped with
// the backward pass) and the optimizer update. Memory follows the layout of
// Loom's training step: fp32 master parameters, gradients and Adam moments
// (split by ZeRO), and the activations the schedule keeps alive
// (Korthikanti et al., 2022, for a transformer layer's bytes).
//
// Nothing here depends on MLIR: the planner works from a description of the
// model (a transformer's shape for --plan-simulate) and of the cluster
// (cluster.json), both read with LLVM's JSON support.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_PLANNER_H
#define LOOM_PLANNER_PLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::loom::plan {

/// A link between devices: bandwidth in bytes per second in each direction
/// per device, and the latency of one message in seconds.
struct Link {
  double bandwidth = 0;
  double latency = 0;
};

/// A collective measured on the cluster itself (`loom-run calibrate`): the
/// fit of its formula (the Link) and the times measured at each size over
/// a group of `ranks`.
struct MeasuredCollective : Link {
  MeasuredCollective() = default;
  /// A fit alone.
  MeasuredCollective(const Link &fit) : Link(fit) {}

  int64_t ranks = 0;
  /// (bytes, seconds) by increasing bytes; empty when only the fit is known.
  std::vector<std::pair<double, double>> times;
  /// Seconds for `bytes` from the measured times: linear between the two
  /// sizes around `bytes`, the smallest size's time below them and the
  /// slope of the two largest above (the fit's bandwidth where that slope
  /// is not positive). std::nullopt without times.
  std::optional<double> timeFor(double bytes) const;
};

/// A measured matrix product: m x k by k x n in `precision` ("fp32" or
/// "bf16") reached `flops` FLOP/s (`loom-run calibrate`).
struct GemmSample {
  int64_t m = 0, n = 0, k = 0;
  std::string precision;
  double flops = 0;
};

/// The devices of a cluster (all alike), how many sit in a node and how the
/// nodes are connected. Read from cluster.json (see `parseCluster`).
struct Cluster {
  std::string name;
  /// Where the figures come from (a datasheet, `loom-run calibrate`).
  std::string source;
  std::string device;
  /// Peak dense FLOP/s per precision ("fp32", "tf32", "bf16", "fp16").
  double peakFp32 = 0, peakTf32 = 0, peakBf16 = 0, peakFp16 = 0;
  /// Device memory and its bandwidth (bytes, bytes per second).
  double memoryBytes = 0;
  double memoryBandwidth = 0;
  /// The fraction of the peak large matrix products reach, and the fraction
  /// of the memory bandwidth elementwise kernels reach.
  double gemmEfficiency = 0.8;
  double memoryEfficiency = 0.7;
  /// Fixed cost of one kernel (launch and tail), seconds.
  double kernelOverhead = 5e-6;
  /// Memory a device keeps for itself (library workspaces, communicator
  /// buffers, fragmentation): bytes and a fraction of memoryBytes.
  double reservedBytes = 0;
  double memoryMargin = 0.05;
  int64_t devicesPerNode = 1;
  int64_t nodes = 1;
  /// CPU cores a node's devices time-share (0: each device has its own
  /// processor), and the threads a device computes with. When the devices of
  /// a node want more threads than it has cores, the device's figures are
  /// those of a device with cores of its own (`loom-run calibrate --nproc N`
  /// on fewer than N cores measures the ranks in turns), and the step
  /// simulation shares the cores among the devices computing at each
  /// moment (processor sharing, see `computeSpeed`), or, where `loom-run`
  /// pins the ranks (pinRanks), each core among the ranks pinned to it.
  int64_t coresPerNode = 0;
  int64_t threadsPerDevice = 1;
  /// Between devices of one node, and from a device to one of another node.
  Link intraNode, interNode;
  /// The fraction of a link's bandwidth collectives reach.
  double linkEfficiency = 0.8;

  /// Collectives measured within a node (`loom-run calibrate`), used
  /// instead of the link's figures when present: all-reduce, all-gather and
  /// point-to-point messages (their times by size for groups of the
  /// measured size, else their fits).
  std::optional<MeasuredCollective> allReduce, allGather, p2p;
  /// A started all-reduce (a gradient bucket the backward pass computes
  /// over), measured back to back: while the rank computes, its cores are
  /// awake, and the started all-reduce runs as on an idle link. The
  /// synchronous ones above are measured after the ranks computed, as a
  /// step issues them. Without it, `allReduce` times started ones too.
  std::optional<MeasuredCollective> allReduceStarted;
  /// Measured GEMM rates by shape (empty: the peak times gemmEfficiency
  /// for every shape).
  std::vector<GemmSample> gemm;

  int64_t devices() const { return devicesPerNode * nodes; }
  /// How fast a device of a node computes when `busy` of the node's devices
  /// compute, relative to the profile's figures (measured with
  /// measuredBusy() devices computing): min(1, cores / (busy x threads))
  /// over the same for measuredBusy(); 1 without coresPerNode or with cores
  /// enough for every device.
  double computeSpeed(int64_t busy) const;
  /// How many of a node's devices computed at once when the device's
  /// figures were measured: every one, or on a time-shared node as many as
  /// have cores of their own (at least one: `loom-run calibrate` measures
  /// such ranks in turns of this size).
  int64_t measuredBusy() const {
    if (!timeShared())
      return devicesPerNode;
    return std::max<int64_t>(1, coresPerNode /
                                    std::max<int64_t>(1, threadsPerDevice));
  }
  /// Whether computeSpeed can differ from 1.
  bool timeShared() const {
    return coresPerNode > 0 && devicesPerNode * threadsPerDevice > coresPerNode;
  }
  /// The FLOP/s a product of m x k by k x n in `precision` reaches, from
  /// the profile's samples of that precision: interpolated between the
  /// grid's neighbours (linearly in log m, log n, log k; the edge's value
  /// outside) when the samples fill a grid, as calibrate's do, else the
  /// sample nearest in shape (by the logarithms). Without samples, the
  /// roofline of peakFor(precision) x gemmEfficiency; 0 when the device has
  /// none.
  double gemmRate(double m, double n, double k,
                  llvm::StringRef precision) const;
  /// Peak FLOP/s of matrix products in `precision` ("fp32", "bf16",
  /// "bf16-pure", "fp16"); 0 when the device has none.
  double peakFor(llvm::StringRef precision) const;
};

/// The CPU each of a node's ranks is pinned to, as an index into the node's
/// `cpus` CPUs, or nothing (an empty vector) when its ranks are not pinned.
/// `phases[r]` groups the ranks that compute at the same time: the ranks of
/// one pipeline stage, a turn of `loom-run calibrate`. Ranks are pinned when
/// each computes with one thread and they outnumber the CPUs (two or more)
/// by a whole factor, so that every CPU holds as many. Ordered by their
/// index within their phase, then by phase modulo the CPUs, then by phase,
/// they are cut into `cpus` equal runs: the ranks of a phase land on
/// different CPUs while there are CPUs enough (a dp=2 x pp=2 mesh on 2 CPUs:
/// each CPU runs one rank of each stage, not both ranks of one stage), and
/// neighbouring phases too (pp=4: stages 0 and 2 on one CPU, 1 and 3 on the
/// other, as neighbouring stages overlap in a pipeline's warm-up and
/// cool-down). `loom-run` pins its ranks so unless told not to
/// (LOOM_CPU_BIND=none), and the step simulation assumes it: it shares each
/// CPU among the ranks pinned to it.
std::vector<int64_t> pinRanks(llvm::ArrayRef<int64_t> phases, int64_t cpus,
                              int64_t threads);

/// A decoder-only transformer described by its shape (GPT-style: learned
/// positions, pre-norm layers with a 4h MLP unless `ffn` says otherwise),
/// optionally with mixture-of-experts MLPs.
struct Transformer {
  std::string name;
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  /// MLP width (0: 4 x hidden).
  int64_t ffn = 0;
  /// Experts per MoE layer (0: dense MLPs), experts per token, and every
  /// how many layers an MLP is an MoE layer.
  int64_t experts = 0, topK = 1, moeEvery = 1;
  bool tiedEmbedding = true;

  int64_t ffnWidth() const { return ffn ? ffn : 4 * hidden; }
  /// Number of parameters (embeddings, positions, layers, final norm).
  double parameters() const;
  /// Model FLOPs of one training step over `batch` sequences: forward and
  /// backward, matrix products only, no recomputation (what MFU counts).
  double modelFlops(int64_t batch) const;
};

/// One way to run the step. The product dp * tp * pp is the device count;
/// ep splits the experts and, like dp, the batch (ep divides dp * ep
/// ranks' worth of data: the batch is split over dp * ep).
struct Plan {
  int64_t dp = 1, tp = 1, pp = 1, ep = 1;
  int64_t zero = 0;
  /// Sequences per microbatch, and microbatches per step and data rank.
  int64_t microbatch = 1;
  int64_t microbatches = 1;
  /// "gpipe", "1f1b", "interleaved-1f1b" (with virtualStages), "zero-bubble".
  std::string schedule = "1f1b";
  int64_t virtualStages = 1;
  /// "fp32", "bf16", "fp16" (mixed) or "bf16-pure".
  std::string precision = "bf16";
  /// "none", "selective" (attention's softmax and dropout) or "full".
  std::string remat = "none";
  bool sequenceParallel = false;
  /// Gradient reduction overlapped with the backward pass, and the type it
  /// travels in ("fp32" or the 16-bit precision).
  bool overlapGradReduce = true;
  std::string gradReduceDtype = "fp32";

  int64_t devices() const { return dp * tp * pp * ep; }
  /// The global batch this plan processes per step.
  int64_t globalBatch() const { return dp * ep * microbatches * microbatch; }
  /// Mesh syntax for loomc (`dp=2,tp=2`), axes of size 1 left out.
  std::string mesh() const;
  /// Everything else as loomc flags.
  std::string flags() const;
};

/// What a plan costs per step and per device.
struct Estimate {
  /// Step time and its parts (seconds, on the slowest pipeline stage).
  double step = 0;
  double compute = 0, recompute = 0, tpComm = 0, epComm = 0, ppComm = 0,
         bubble = 0, dpComm = 0, optimizer = 0;
  /// Bytes per device at the peak, and its parts.
  double memory = 0;
  double parameters = 0, gradients = 0, optimizerState = 0, activations = 0,
         workspace = 0;
  /// Memory the device offers the step (after the reserve and margin).
  double available = 0;
  /// FLOPs of the step as the model counts them (no recompute) and as the
  /// devices execute them (with it).
  double modelFlops = 0, hardwareFlops = 0;
  /// Model FLOPs over (step x devices x peak).
  double mfu = 0;
  /// FLOP/s each device executes (with recompute: Megatron-LM's figure).
  double hardwareFlopsPerDevice = 0;
  bool fits() const { return memory <= available; }
};

/// Predicts `plan` on `cluster` for `model`. Returns an error naming the
/// problem when the plan cannot run the model (a split that does not
/// divide, an unknown schedule, a precision the device lacks).
llvm::Expected<Estimate> estimate(const Transformer &model,
                                  const Cluster &cluster, const Plan &plan);

/// What the search may vary and what it must keep.
struct SearchSpace {
  int64_t globalBatch = 0;
  /// Fixed when set; searched otherwise.
  std::optional<int64_t> dp, tp, pp, ep, microbatch, zero;
  /// Schedules to consider (empty: all).
  std::vector<std::string> schedules;
  std::optional<std::string> precision, remat;
  std::optional<bool> sequenceParallel, overlapGradReduce;
  std::optional<std::string> gradReduceDtype;
  /// Devices to plan for (0: the whole cluster).
  int64_t devices = 0;
};

struct Ranked {
  Plan plan;
  Estimate estimate;
};

/// The outcome of a search: feasible plans, fastest first, and a count of
/// those that lost and why.
struct SearchResult {
  /// What was planned for: devices and sequences per step.
  int64_t devices = 0, globalBatch = 0;
  std::vector<Ranked> plans;
  int64_t considered = 0, invalid = 0, outOfMemory = 0;
  /// The smallest memory any candidate needed (when none fits).
  std::optional<Ranked> leastMemory;
};

llvm::Expected<SearchResult> search(const Transformer &model,
                                    const Cluster &cluster,
                                    const SearchSpace &space);

/// Reads cluster.json: {"name", "device": {...}, "devices_per_node",
/// "nodes", "intra_node": {...}, "inter_node": {...}, ...}. Errors name the
/// field and what was expected.
llvm::Expected<Cluster> parseCluster(const llvm::json::Value &json);
llvm::Expected<Cluster> loadCluster(llvm::StringRef path);
/// `c` in cluster.json's format: what parseCluster reads back.
llvm::json::Value clusterToJson(const Cluster &c);

/// Reads a model description: {"name", "layers", "hidden", "heads",
/// "seq_len", "vocab", optional "ffn", "experts", "top_k", "moe_every"}.
llvm::Expected<Transformer> parseTransformer(const llvm::json::Value &json);
llvm::Expected<Transformer> loadTransformer(llvm::StringRef path);

/// Fills `space` from a JSON object of fixed choices ({"tp": 8, "pp": 4,
/// "remat": "full", ...}); unknown keys are errors.
llvm::Error parseConstraints(const llvm::json::Object &json,
                             SearchSpace &space);

/// Prints the top `count` plans as a table, then why the others lost.
void printPlans(llvm::raw_ostream &os, const Transformer &model,
                const Cluster &cluster, const SearchResult &result,
                int64_t count);

/// The plans and their estimates as JSON (for scripts and tests).
llvm::json::Value plansToJson(const SearchResult &result, int64_t count);

/// What `loomc --plan-simulate` asks for.
/// What a planning command asks for, whatever describes the model
/// (`--plan-simulate`'s shape, or an ONNX model with `--plan`).
struct PlanRequest {
  std::string clusterPath;
  /// Fixed choices, `key=value,...` with parseConstraints' keys
  /// (`tp=8,pp=4,remat=full`).
  std::string fix;
  int64_t globalBatch = 0;
  /// Devices to plan for (0: the whole cluster).
  int64_t devices = 0;
  /// Plans to print.
  int64_t top = 10;
  /// Also write the plans as JSON here (empty: no file).
  std::string jsonPath;
};

struct SimulateOptions : PlanRequest {
  /// The transformer's description.
  std::string modelPath;
};

/// Reads the model and cluster, searches, prints the table to `os` (and the
/// JSON file). Fails when the inputs are wrong or no plan fits, with the
/// reason.
llvm::Error simulate(const SimulateOptions &options, llvm::raw_ostream &os);

/// Parses `key=value,...` into a JSON object: integers, true/false and
/// strings.
llvm::Expected<llvm::json::Object> parseFixList(llvm::StringRef text);

} // namespace mlir::loom::plan

#endif // LOOM_PLANNER_PLANNER_H
