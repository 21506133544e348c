//===- CostModel.cpp - step time and memory of one parallel plan -----------===//
//
// Predicts one plan: the time of a training step on the slowest pipeline
// stage and the bytes a device holds at its peak. See Planner.h for what the
// model counts; the comments below say where each term comes from.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Planner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

using namespace mlir::loom::plan;
using llvm::Expected;
using llvm::StringRef;

double Cluster::peakFor(StringRef precision) const {
  if (precision == "fp32")
    return peakFp32;
  if (precision == "fp16")
    return peakFp16;
  if (precision == "bf16" || precision == "bf16-pure")
    return peakBf16;
  return 0;
}

double Cluster::computeSpeed(int64_t busy) const {
  if (!timeShared() || busy < 1)
    return 1;
  auto share = [&](int64_t devices) {
    return std::min(
        1.0, double(coresPerNode) /
                 double(devices * std::max<int64_t>(1, threadsPerDevice)));
  };
  return share(std::min(busy, devicesPerNode)) / share(measuredBusy());
}

std::vector<int64_t> mlir::loom::plan::pinRanks(llvm::ArrayRef<int64_t> phases,
                                                int64_t cpus, int64_t threads) {
  int64_t ranks = phases.size();
  if (threads != 1 || cpus < 2 || ranks <= cpus || ranks % cpus)
    return {};
  // (index within the phase, phase modulo the CPUs, phase, rank), in that
  // order.
  std::map<int64_t, int64_t> seen;
  std::vector<std::array<int64_t, 4>> order;
  for (auto [rank, phase] : llvm::enumerate(phases))
    order.push_back({seen[phase]++, phase % cpus, phase, int64_t(rank)});
  llvm::sort(order);
  std::vector<int64_t> cpuOf(ranks);
  int64_t perCpu = ranks / cpus;
  for (auto [position, key] : llvm::enumerate(order))
    cpuOf[key[3]] = int64_t(position) / perCpu;
  return cpuOf;
}

std::optional<double> MeasuredCollective::timeFor(double bytes) const {
  if (times.empty())
    return std::nullopt;
  if (bytes <= times.front().first || times.size() == 1)
    return times.front().second;
  auto above = std::lower_bound(
      times.begin(), times.end(), bytes,
      [](const std::pair<double, double> &p, double b) { return p.first < b; });
  if (above == times.end()) {
    const auto &last = times.back(), &prev = times[times.size() - 2];
    double slope = (last.second - prev.second) / (last.first - prev.first);
    if (!(slope > 0))
      slope = bandwidth > 0 ? 1 / bandwidth : 0;
    return last.second + (bytes - last.first) * slope;
  }
  const auto &hi = *above, &lo = *(above - 1);
  double w = (bytes - lo.first) / (hi.first - lo.first);
  return lo.second + w * (hi.second - lo.second);
}

double Cluster::gemmRate(double m, double n, double k,
                         StringRef precision) const {
  // bf16-pure computes its products as mixed bf16 does.
  StringRef kind = precision == "bf16-pure" ? StringRef("bf16") : precision;
  std::vector<const GemmSample *> own;
  for (const GemmSample &s : gemm)
    if (s.precision == kind)
      own.push_back(&s);
  if (own.empty())
    return peakFor(precision) * gemmEfficiency;

  // The grid's values along m, n and k.
  auto key = [](const GemmSample &s) {
    return std::array<int64_t, 3>{s.m, s.n, s.k};
  };
  std::array<std::vector<int64_t>, 3> axes;
  std::map<std::array<int64_t, 3>, double> rate;
  for (const GemmSample *s : own) {
    std::array<int64_t, 3> at = key(*s);
    for (int d = 0; d < 3; ++d)
      axes[d].push_back(at[d]);
    rate[at] = s->flops;
  }
  size_t corners = 1;
  for (std::vector<int64_t> &axis : axes) {
    std::sort(axis.begin(), axis.end());
    axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
    corners *= axis.size();
  }

  // Samples on a full grid (what loom-run calibrate writes): interpolate
  // between the two grid values around each of m, n and k, linearly in
  // their logarithms, holding the edge value outside the grid. A shape
  // between samples gets a rate between theirs instead of the nearest
  // one's, so one sample's noise weighs only on the shapes around it.
  if (corners == own.size() && rate.size() == own.size()) {
    std::array<size_t, 3> lo, hi;
    std::array<double, 3> weight; // of hi
    std::array<double, 3> x = {m, n, k};
    for (int d = 0; d < 3; ++d) {
      const std::vector<int64_t> &axis = axes[d];
      auto above = std::upper_bound(axis.begin(), axis.end(), x[d]);
      if (above == axis.begin() || above == axis.end()) {
        lo[d] = hi[d] = above == axis.begin() ? 0 : axis.size() - 1;
        weight[d] = 0;
        continue;
      }
      hi[d] = above - axis.begin();
      lo[d] = hi[d] - 1;
      weight[d] = std::log2(x[d] / double(axis[lo[d]])) /
                  std::log2(double(axis[hi[d]]) / double(axis[lo[d]]));
    }
    double out = 0;
    for (int corner = 0; corner < 8; ++corner) {
      std::array<int64_t, 3> at;
      double w = 1;
      for (int d = 0; d < 3; ++d) {
        bool upper = corner >> d & 1;
        at[d] = axes[d][upper ? hi[d] : lo[d]];
        w *= upper ? weight[d] : 1 - weight[d];
      }
      if (w > 0)
        out += w * rate[at];
    }
    return out;
  }

  // Otherwise the sample nearest in the logarithms of m, n and k.
  const GemmSample *nearest = nullptr;
  double best = 0;
  for (const GemmSample *s : own) {
    double d = 0;
    for (auto [a, b] : {std::pair<double, double>{m, double(s->m)},
                        {n, double(s->n)},
                        {k, double(s->k)}}) {
      double r = std::log2(std::max(a, 1.0) / b);
      d += r * r;
    }
    if (!nearest || d < best)
      nearest = s, best = d;
  }
  return nearest->flops;
}

double Transformer::parameters() const {
  double h = hidden, f = ffnWidth();
  double attention = 4 * h * h + 4 * h;
  double mlp = 2 * h * f + f + h;
  double norms = 4 * h;
  double total = 0;
  for (int64_t l = 0; l < layers; ++l) {
    bool moe = experts > 0 && (l % moeEvery) == moeEvery - 1;
    total += attention + norms + (moe ? experts * mlp + h * experts : mlp);
  }
  total += double(vocab) * h + double(seq) * h + 2 * h;
  if (!tiedEmbedding)
    total += double(vocab) * h;
  return total;
}

/// Forward FLOPs per token of one layer's matrix products (attention's
/// included), for a layer whose MLP runs `mlpCopies` times per token.
static double layerFlopsPerToken(const Transformer &m, double mlpCopies) {
  double h = m.hidden, f = m.ffnWidth(), s = m.seq;
  return 2 * 4 * h * h + 2 * 2 * h * f * mlpCopies + 4 * s * h;
}

double Transformer::modelFlops(int64_t batch) const {
  double tokens = double(batch) * seq;
  double forward = 0;
  for (int64_t l = 0; l < layers; ++l) {
    bool moe = experts > 0 && (l % moeEvery) == moeEvery - 1;
    forward += layerFlopsPerToken(*this, moe ? topK : 1) +
               (moe ? 2.0 * hidden * experts : 0);
  }
  forward += 2.0 * hidden * vocab;
  return 3 * tokens * forward;
}

std::string Plan::mesh() const {
  std::string out;
  auto add = [&](StringRef axis, int64_t size) {
    if (size == 1)
      return;
    if (!out.empty())
      out += ",";
    out += (axis + "=" + llvm::Twine(size)).str();
  };
  add("dp", dp);
  add("ep", ep);
  add("pp", pp);
  add("tp", tp);
  return out.empty() ? "(one device)" : out;
}

std::string Plan::flags() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (pp > 1) {
    os << "--microbatches=" << microbatches
       << " --pipeline-schedule=" << schedule;
    if (virtualStages > 1)
      os << " --virtual-stages=" << virtualStages;
  } else if (microbatches > 1) {
    os << "--grad-accumulation=" << microbatches;
  }
  if (tp > 1)
    os << " --tp-plan=auto";
  if (sequenceParallel)
    os << " --sequence-parallel";
  if (zero)
    os << " --zero=" << zero;
  if (precision != "fp32")
    os << " --precision=" << precision;
  if (remat != "none")
    os << " --remat=" << remat;
  if (gradReduceDtype != "fp32")
    os << " --grad-reduce-dtype=" << gradReduceDtype;
  std::string result = llvm::StringRef(out).ltrim().str();
  return result;
}

namespace {

/// The times and bytes that make up one stage's work on one microbatch.
struct Pass {
  double time = 0;
  double flops = 0;
  void add(const Pass &o, double times = 1) {
    time += o.time * times;
    flops += o.flops * times;
  }
};

struct Model {
  const Transformer &m;
  const Cluster &c;
  const Plan &p;
  double peak;        // FLOP/s of products in the plan's precision
  double act;         // bytes per activation element
  double tokens;      // tokens per microbatch
  double t;           // tensor-parallel size
  double seqShards;   // tp with sequence parallelism, else 1

  /// One matrix product, m x k by k x n, `count` times (a batched GEMM).
  Pass gemm(double rows, double inner, double cols, double count = 1) const {
    double flops = 2 * rows * inner * cols * count;
    double bytes = (rows * inner + inner * cols + rows * cols) * act * count;
    double time = std::max(flops / (peak * c.gemmEfficiency),
                           bytes / (c.memoryBandwidth * c.memoryEfficiency));
    return {time + c.kernelOverhead, flops};
  }

  /// Memory-bound kernels moving `elements` values of `bytes` each.
  Pass stream(double elements, double kernels, double bytes = 0) const {
    double b = bytes ? bytes : act;
    return {elements * b / (c.memoryBandwidth * c.memoryEfficiency) +
                kernels * c.kernelOverhead,
            0};
  }

  /// The link a group of `size` ranks, `stride` apart, communicates over:
  /// the node's when the group fits in one, the network's otherwise.
  const Link &link(int64_t size, int64_t stride) const {
    return size * stride <= c.devicesPerNode ? c.intraNode : c.interNode;
  }
  double bandwidth(const Link &l) const { return l.bandwidth * c.linkEfficiency; }

  /// Ring all-reduce of `bytes` over `size` ranks.
  double allReduce(double bytes, int64_t size, int64_t stride) const {
    if (size <= 1)
      return 0;
    const Link &l = link(size, stride);
    double g = size;
    return 2 * (g - 1) / g * bytes / bandwidth(l) + 2 * (g - 1) * l.latency;
  }
  /// Ring all-gather (or reduce-scatter) whose full result is `bytes`.
  double allGather(double bytes, int64_t size, int64_t stride) const {
    if (size <= 1)
      return 0;
    const Link &l = link(size, stride);
    double g = size;
    return (g - 1) / g * bytes / bandwidth(l) + (g - 1) * l.latency;
  }
  /// Pairwise all-to-all where every rank holds `bytes`.
  double allToAll(double bytes, int64_t size, int64_t stride) const {
    return allGather(bytes, size, stride);
  }

  // Rank order: tp innermost (within a node first), then ep, dp, pp.
  int64_t tpStride() const { return 1; }
  int64_t epStride() const { return p.tp; }
  int64_t dpStride() const { return p.tp * p.ep; }
  int64_t ppStride() const { return p.tp * p.ep * p.dp; }

  bool isMoe(int64_t layer) const {
    return m.experts > 0 && (layer % m.moeEvery) == m.moeEvery - 1;
  }

  /// Forward products of one layer on one device.
  Pass layerGemms(bool moe) const {
    double h = m.hidden, f = m.ffnWidth(), s = m.seq;
    double headDim = h / m.heads, heads = m.heads / t;
    double b = p.microbatch;
    Pass out;
    out.add(gemm(tokens, h, 3 * h / t));
    out.add(gemm(s, headDim, s, b * heads));
    out.add(gemm(s, s, headDim, b * heads));
    out.add(gemm(tokens, h / t, h));
    // Expert MLPs: every device runs its experts on the tokens routed to
    // them; balanced routing gives each device top-k times its tokens.
    double copies = moe ? m.topK : 1;
    out.add(gemm(tokens * copies, h, f / t));
    out.add(gemm(tokens * copies, f / t, h));
    if (moe)
      out.add(gemm(tokens, h, m.experts));
    return out;
  }

  /// Attention's score products alone (what selective remat recomputes).
  Pass attentionCoreGemms() const {
    double h = m.hidden, s = m.seq, headDim = h / m.heads,
           heads = m.heads / t, b = p.microbatch;
    Pass out;
    out.add(gemm(s, headDim, s, b * heads));
    out.add(gemm(s, s, headDim, b * heads));
    return out;
  }

  /// Elementwise traffic of attention's softmax and dropout.
  Pass attentionCoreStream() const {
    double scores = p.microbatch * (m.heads / t) * double(m.seq) * m.seq;
    return stream(4.5 * scores, 3);
  }

  /// Forward memory-bound kernels of one layer: two norms, two
  /// bias-dropout-residual blocks (on the sequence shard with sequence
  /// parallelism, on every token without), the MLP's activation and
  /// attention's head transposes (split by tp), softmax and dropout.
  Pass layerStream(bool moe) const {
    double h = m.hidden, f = m.ffnWidth();
    double copies = moe ? m.topK : 1;
    double rows = tokens / seqShards * h;
    Pass out = stream(2 * rows + 2 * rows + 3.5 * rows + 3.5 * rows, 6);
    out.add(stream(2 * tokens * copies * f / t + 6 * tokens * h / t, 4));
    out.add(attentionCoreStream());
    return out;
  }

  /// Tensor-parallel collectives of one layer's forward: two all-reduces of
  /// the hidden state (or, with sequence parallelism, two all-gathers and
  /// two reduce-scatters of the same volume).
  double layerTpComm() const {
    double bytes = tokens * m.hidden * act;
    if (p.sequenceParallel)
      return 2 * (allGather(bytes, p.tp, tpStride()) +
                  allGather(bytes, p.tp, tpStride()));
    return 2 * allReduce(bytes, p.tp, tpStride());
  }

  /// Expert parallelism's dispatch and combine in one MoE layer's forward.
  double layerEpComm() const {
    double bytes = tokens * m.topK * m.hidden * act;
    return 2 * allToAll(bytes, p.ep, epStride());
  }

  /// Parameters one device holds of `layerCount` layers starting at
  /// `first`, plus the embedding or head when the stage has them.
  double stageParameters(int64_t first, int64_t layerCount, bool embedding,
                         bool head) const {
    double h = m.hidden, f = m.ffnWidth();
    double total = 0;
    for (int64_t l = first; l < first + layerCount && l < m.layers; ++l) {
      total += (4 * h * h) / t + 4 * h + 4 * h;
      if (isMoe(l))
        total += (m.experts / double(p.ep)) * ((2 * h * f + f) / t + h) +
                 h * m.experts;
      else
        total += (2 * h * f + f) / t + h;
    }
    if (embedding)
      total += double(m.vocab) * h / t + double(m.seq) * h;
    if (head) {
      total += 2 * h;
      if (!m.tiedEmbedding || !embedding)
        total += double(m.vocab) * h / t;
    }
    return total;
  }

  /// Activation bytes of one layer and microbatch kept for the backward
  /// pass (Korthikanti et al., 2022, eqs. 1-6, for 16-bit activations and
  /// 1-byte dropout masks; fp32 doubles them).
  double layerActivations(bool moe) const {
    double s = m.seq, b = p.microbatch, h = m.hidden, a = m.heads;
    double sbh = s * b * h;
    double scale = act / 2;
    double mlpCopies = moe ? m.topK : 1;
    // The 34 sbh split as the paper does: 10 before the products of
    // attention and MLP inputs are split, 24 that tp splits; 19 of the 34
    // belong to the MLP (its input, two 4h tensors, a mask).
    double attentionCore = 5 * a * s / h;
    double perSbh;
    if (p.remat == "full")
      return 2 * sbh / seqShards * scale;
    double replicated = p.sequenceParallel ? 10 / t : 10;
    double split = 24 / t + (mlpCopies - 1) * 19 / t;
    perSbh = replicated + split;
    if (p.remat != "selective")
      perSbh += attentionCore / t;
    return sbh * perSbh * scale;
  }
};

} // namespace

Expected<Estimate> mlir::loom::plan::estimate(const Transformer &m,
                                              const Cluster &c,
                                              const Plan &p) {
  auto fail = [](const llvm::Twine &why) -> Expected<Estimate> {
    return llvm::createStringError(why);
  };
  if (p.dp < 1 || p.tp < 1 || p.pp < 1 || p.ep < 1 || p.microbatch < 1 ||
      p.microbatches < 1)
    return fail("every mesh axis, the microbatch size and count must be at "
                "least 1");
  if (p.devices() > c.devices())
    return fail(llvm::formatv("the plan needs {0} devices; the cluster has {1}",
                              p.devices(), c.devices()));
  if (p.tp > c.devicesPerNode)
    return fail(llvm::formatv("tp={0} spans nodes of {1} devices", p.tp,
                              c.devicesPerNode));
  if (m.heads % p.tp || m.ffnWidth() % p.tp || m.vocab % p.tp)
    return fail(llvm::formatv(
        "tp={0} does not divide the heads ({1}), the MLP width ({2}) or the "
        "vocabulary ({3})",
        p.tp, m.heads, m.ffnWidth(), m.vocab));
  if (p.sequenceParallel && (p.tp == 1 || m.seq % p.tp))
    return fail(llvm::formatv("sequence parallelism needs tp > 1 dividing the "
                              "sequence length ({0})",
                              m.seq));
  if (p.ep > 1 && (m.experts == 0 || m.experts % p.ep))
    return fail(llvm::formatv("ep={0} does not divide the experts ({1})", p.ep,
                              m.experts));
  if (p.pp > m.layers)
    return fail(llvm::formatv("pp={0} exceeds the layers ({1})", p.pp,
                              m.layers));
  if (p.zero < 0 || p.zero > 3)
    return fail("the ZeRO stage must be 0-3");
  if (p.zero > 1 && p.pp > 1)
    return fail("ZeRO-2 and -3 split the gradients that pipeline microbatches "
                "accumulate: use ZeRO-1 with pp");
  if (p.ep > 1 && p.pp > 1)
    return fail("expert parallelism does not compose with pipeline "
                "parallelism");
  StringRef schedule = p.schedule;
  if (schedule != "gpipe" && schedule != "1f1b" &&
      schedule != "interleaved-1f1b" && schedule != "zero-bubble")
    return fail("unknown pipeline schedule '" + p.schedule + "'");
  int64_t v = schedule == "interleaved-1f1b" ? p.virtualStages : 1;
  if (v < 1 || (v > 1 && schedule != "interleaved-1f1b"))
    return fail("virtual stages need the interleaved-1f1b schedule");
  if (schedule == "interleaved-1f1b" &&
      (p.pp == 1 || p.microbatches % p.pp || p.pp * v > m.layers))
    return fail("the interleaved schedule needs pp > 1, microbatches a "
                "multiple of pp and at least pp x virtual stages layers");
  if (p.remat != "none" && p.remat != "selective" && p.remat != "full")
    return fail("unknown remat '" + p.remat + "' (none, selective, full)");
  double peak = c.peakFor(p.precision);
  if (peak <= 0)
    return fail(llvm::formatv("{0} has no {1} peak in the cluster profile",
                              c.device, p.precision));
  bool lowPrecision = p.precision != "fp32";
  if (p.gradReduceDtype != "fp32" &&
      (p.gradReduceDtype != "bf16" && p.gradReduceDtype != "fp16"))
    return fail("gradients reduce in fp32, bf16 or fp16");

  Model model{m, c, p, peak, lowPrecision ? 2.0 : 4.0,
              double(p.microbatch) * m.seq, double(p.tp),
              p.sequenceParallel ? double(p.tp) : 1.0};

  // Layers of the slowest stage: Loom and Megatron-LM split them evenly;
  // the last stage also runs the head and the loss, the first the
  // embedding.
  int64_t perStage = (m.layers + p.pp - 1) / p.pp;
  int64_t lastFirst = std::min<int64_t>(m.layers, (p.pp - 1) * perStage);
  int64_t lastLayers = m.layers - lastFirst;

  auto stagePasses = [&](int64_t first, int64_t count, bool head,
                         Pass &forward, Pass &backward, Pass &recompute,
                         double &tpComm, double &epComm) {
    for (int64_t l = first; l < first + count; ++l) {
      bool moe = model.isMoe(l);
      Pass gemms = model.layerGemms(moe);
      Pass streams = model.layerStream(moe);
      double comm = model.layerTpComm();
      double ep = moe ? model.layerEpComm() : 0;
      forward.add(gemms);
      forward.add(streams);
      forward.time += comm + ep;
      // The backward pass: two products per forward product (the gradients
      // of both operands) and about twice the elementwise traffic.
      backward.add(gemms, 2);
      backward.add(streams, 2);
      backward.time += comm + ep;
      tpComm += 2 * comm;
      epComm += 2 * ep;
      if (p.remat == "full") {
        recompute.add(gemms);
        recompute.add(streams);
        recompute.time += comm + ep;
        tpComm += comm;
        epComm += ep;
      } else if (p.remat == "selective") {
        recompute.add(model.attentionCoreGemms());
        recompute.add(model.attentionCoreStream());
      }
    }
    if (head) {
      double h = m.hidden;
      Pass logits = model.gemm(model.tokens, h, double(m.vocab) / p.tp);
      // Final norm, and the loss over fp32 logits (softmax, its gradient).
      Pass loss = model.stream(4 * model.tokens * double(m.vocab) / p.tp, 4,
                               4);
      loss.add(model.stream(2 * model.tokens * h, 1));
      forward.add(logits);
      forward.add(loss);
      backward.add(logits, 2);
      backward.add(loss);
    }
  };

  // The first stage (or the only one) and the last one; the slower sets
  // the pace.
  Pass fFirst, bFirst, rFirst, fLast, bLast, rLast;
  double tpFirst = 0, epFirst = 0, tpLast = 0, epLast = 0;
  stagePasses(0, std::min<int64_t>(perStage, m.layers), p.pp == 1, fFirst,
              bFirst, rFirst, tpFirst, epFirst);
  if (p.pp > 1)
    stagePasses(lastFirst, lastLayers, true, fLast, bLast, rLast, tpLast,
                epLast);
  bool lastSlower = p.pp > 1 && fLast.time + bLast.time + rLast.time >
                                    fFirst.time + bFirst.time + rFirst.time;
  const Pass &f = lastSlower ? fLast : fFirst;
  const Pass &bw = lastSlower ? bLast : bFirst;
  const Pass &r = lastSlower ? rLast : rFirst;
  double tpComm = lastSlower ? tpLast : tpFirst;
  double epComm = lastSlower ? epLast : epFirst;

  // Pipeline transfers: the hidden state forward and its gradient back,
  // once per microbatch and model chunk. With tp, each tensor-parallel rank
  // sends its 1/tp of it over its own link and the receivers gather the
  // rest within the node (Megatron-LM's scatter-gather; with sequence
  // parallelism the state is split already).
  double p2p = 0;
  if (p.pp > 1) {
    double bytes = model.tokens * m.hidden * model.act;
    const Link &l = model.link(p.pp, model.ppStride());
    double gather =
        p.sequenceParallel ? 0 : model.allGather(bytes, p.tp, model.tpStride());
    p2p = v * (bytes / p.tp / model.bandwidth(l) + l.latency + gather);
  }
  double F = f.time + p2p;
  double B = bw.time + r.time + p2p;
  double mb = p.microbatches;
  double pipeline;
  double pp1 = p.pp - 1;
  if (p.pp == 1)
    pipeline = mb * (F + B);
  else if (schedule == "interleaved-1f1b")
    pipeline = (mb + pp1 / v) * (F + B);
  else if (schedule == "zero-bubble")
    // ZB-H1: weight gradients (half the backward) fill the cool-down.
    pipeline = mb * (F + B) + pp1 * (F + B - B / 2 - B / 2);
  else
    pipeline = (mb + pp1) * (F + B);

  Estimate e;
  e.compute = mb * (f.time + bw.time);
  e.recompute = mb * r.time;
  e.tpComm = mb * tpComm;
  e.epComm = mb * epComm;
  e.ppComm = mb * 2 * p2p;
  e.bubble = pipeline - mb * (F + B);

  // Parameters this device holds (the larger of the first and last stage).
  double firstParams = model.stageParameters(0, perStage, true, p.pp == 1);
  double lastParams =
      p.pp > 1 ? model.stageParameters(lastFirst, lastLayers, false, true) : 0;
  double params = std::max(firstParams, lastParams);
  // Dense parameters are reduced over dp x ep, experts over dp; count all
  // over dp x ep (experts are a small share of what crosses the network
  // when ep > 1, and exactly right when ep = 1).
  int64_t dataRanks = p.dp * p.ep;
  double paramBytes = p.precision == "bf16-pure" ? 2 : 4;
  double gradBytes = p.gradReduceDtype == "fp32" ? paramBytes : 2;
  double gradTotal = params * gradBytes;
  double reduce = 0, gather = 0;
  int64_t dpStride = model.epStride();
  if (p.zero >= 2)
    reduce = model.allGather(gradTotal, dataRanks, dpStride);
  else
    reduce = model.allReduce(gradTotal, dataRanks, dpStride);
  if (p.zero == 1 || p.zero == 2)
    gather = model.allGather(params * paramBytes, dataRanks, dpStride);
  if (p.zero == 3)
    // Parameters gathered before the forward and again before the backward
    // of every microbatch.
    gather = mb * 2 * model.allGather(params * paramBytes, dataRanks, dpStride);
  double exposedReduce =
      p.overlapGradReduce ? std::max(0.0, reduce - bw.time) : reduce;
  // Tied embeddings on different stages: their gradients are summed across
  // the first and last stage.
  double tied = 0;
  if (p.pp > 1 && m.tiedEmbedding) {
    const Link &l = model.link(p.pp, model.ppStride());
    tied = 2 * double(m.vocab) * m.hidden / p.tp * gradBytes /
               model.bandwidth(l) +
           2 * l.latency;
  }
  e.dpComm = exposedReduce + gather + tied;
  // AdamW reads parameters, gradients and both moments and writes
  // parameters and moments: 7 values of 4 bytes (bf16-pure: 2-byte
  // parameters and gradients) per parameter this device updates.
  double updated = p.zero >= 1 ? params / dataRanks : params;
  double updateBytes = 3 * paramBytes + 4 * 4;
  e.optimizer = updated * updateBytes /
                    (c.memoryBandwidth * c.memoryEfficiency) +
                4 * c.kernelOverhead;
  e.step = pipeline + e.dpComm + e.optimizer;

  // Memory per stage: parameters, gradients, the AdamW moments (split by
  // ZeRO), the activations the schedule keeps, workspace; the fuller of
  // the first and last stage is the device's peak.
  double inFlight;
  if (p.pp == 1)
    inFlight = 1;
  else if (schedule == "gpipe")
    inFlight = mb;
  else if (schedule == "interleaved-1f1b")
    inFlight = std::min<double>(mb, p.pp) * (1 + pp1 / (p.pp * v));
  else
    inFlight = std::min<double>(mb, p.pp);
  Plan whole = p;
  whole.remat = "none";
  Model unrecomputed{m, c, whole, model.peak, model.act, model.tokens,
                     model.t, model.seqShards};
  auto stageMemory = [&](double stageParams, int64_t first, int64_t count,
                         double microbatchesAlive, bool head) {
    Estimate s;
    double zeroParams = p.zero >= 3 ? stageParams / dataRanks : stageParams;
    double zeroGrads = p.zero >= 2 ? stageParams / dataRanks : stageParams;
    double zeroState = p.zero >= 1 ? stageParams / dataRanks : stageParams;
    s.parameters = zeroParams * paramBytes;
    // Gradients accumulate in the parameters' type whatever they travel in.
    s.gradients = zeroGrads * paramBytes;
    s.optimizerState = zeroState * 8;
    double perMicrobatch = 0;
    for (int64_t l = first; l < first + count; ++l)
      perMicrobatch += model.layerActivations(model.isMoe(l));
    s.activations = microbatchesAlive * perMicrobatch;
    // With full remat, one layer's whole activations while it is
    // recomputed.
    if (p.remat == "full" && count > 0)
      s.activations += unrecomputed.layerActivations(model.isMoe(first));
    // Workspace: the 16-bit weights mixed precision casts once per step,
    // ZeRO-3's gathered layer, the head's fp32 logits and their gradient,
    // and what the device reserves.
    s.workspace = c.reservedBytes;
    if (lowPrecision && p.precision != "bf16-pure")
      s.workspace += 2 * stageParams;
    if (p.zero == 3)
      s.workspace += 2 * model.stageParameters(0, 1, false, false) * paramBytes;
    if (head)
      s.workspace += 2 * model.tokens * double(m.vocab) / p.tp * 4;
    s.memory = s.parameters + s.gradients + s.optimizerState + s.activations +
               s.workspace;
    return s;
  };
  Estimate mem = stageMemory(firstParams, 0, std::min<int64_t>(perStage, m.layers),
                             inFlight, p.pp == 1);
  if (p.pp > 1) {
    Estimate last = stageMemory(lastParams, lastFirst, lastLayers, 1, true);
    if (last.memory > mem.memory)
      mem = last;
  }
  e.parameters = mem.parameters;
  e.gradients = mem.gradients;
  e.optimizerState = mem.optimizerState;
  e.activations = mem.activations;
  e.workspace = mem.workspace;
  e.memory = mem.memory;
  e.available = c.memoryBytes * (1 - c.memoryMargin);

  int64_t batch = p.globalBatch();
  e.modelFlops = m.modelFlops(batch);
  double recomputeFlops = 0;
  for (int64_t l = 0; l < m.layers; ++l) {
    double tokens = double(batch) * m.seq;
    if (p.remat == "full")
      recomputeFlops +=
          tokens * layerFlopsPerToken(m, model.isMoe(l) ? m.topK : 1);
    else if (p.remat == "selective")
      recomputeFlops += tokens * 4.0 * m.seq * m.hidden;
  }
  e.hardwareFlops = e.modelFlops + recomputeFlops;
  double devices = p.devices();
  e.mfu = e.modelFlops / (e.step * devices * peak);
  e.hardwareFlopsPerDevice = e.hardwareFlops / (e.step * devices);
  return e;
}
