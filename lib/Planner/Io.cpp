//===- Io.cpp - cluster and model descriptions, plan tables ---------------===//
//
// Reads cluster.json and model descriptions (every key checked: a typo is an
// error naming it, not a silently ignored figure) and prints the planner's
// results as a table or JSON.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Planner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir::loom::plan;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

namespace {

/// Reads the fields of one JSON object, with errors that name the field by
/// its path.
class Reader {
public:
  /// `known` lists every field the object may have; an unknown one (a
  /// misspelt figure) is an error before anything is read.
  Reader(const json::Object &object, StringRef where,
         std::initializer_list<StringRef> known)
      : object(object), where(where.str()) {
    for (StringRef k : known)
      this->known.insert(k);
  }

  void allow(std::initializer_list<StringRef> more) {
    for (StringRef k : more)
      known.insert(k);
  }

  Error unknownFields() const {
    for (const auto &kv : object)
      if (!known.contains(StringRef(kv.first)))
        return fail(kv.first, "is not a known field");
    return Error::success();
  }

  Error number(StringRef key, double &out, bool required, double scale = 1) {
    const json::Value *v = object.get(key);
    if (!v)
      return required ? fail(key, "is missing") : Error::success();
    std::optional<double> d = v->getAsNumber();
    if (!d || *d < 0)
      return fail(key, "must be a non-negative number");
    out = *d * scale;
    return Error::success();
  }

  Error integer(StringRef key, int64_t &out, bool required) {
    const json::Value *v = object.get(key);
    if (!v)
      return required ? fail(key, "is missing") : Error::success();
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < 0)
      return fail(key, "must be a non-negative integer");
    out = *i;
    return Error::success();
  }

  Error string(StringRef key, std::string &out, bool required) {
    const json::Value *v = object.get(key);
    if (!v)
      return required ? fail(key, "is missing") : Error::success();
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      return fail(key, "must be a string");
    out = s->str();
    return Error::success();
  }

  Error boolean(StringRef key, bool &out) {
    const json::Value *v = object.get(key);
    if (!v)
      return Error::success();
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return fail(key, "must be true or false");
    out = *b;
    return Error::success();
  }

  Expected<const json::Object *> object_(StringRef key) {
    const json::Value *v = object.get(key);
    if (!v)
      return fail(key, "is missing");
    const json::Object *o = v->getAsObject();
    if (!o)
      return fail(key, "must be an object");
    return o;
  }

  std::string path(StringRef key) const {
    return where.empty() ? key.str() : where + "." + key.str();
  }

private:
  Error fail(StringRef key, const llvm::Twine &what) const {
    return llvm::createStringError(llvm::Twine("\"") + path(key) + "\" " +
                                   what);
  }

  const json::Object &object;
  std::string where;
  llvm::StringSet<> known;
};

Error readLink(Reader &parent, StringRef key, Link &link,
               std::initializer_list<StringRef> more = {}) {
  Expected<const json::Object *> o = parent.object_(key);
  if (!o)
    return o.takeError();
  Reader r(**o, parent.path(key), {"bandwidth_gbs", "latency_us", "note"});
  r.allow(more);
  if (Error e = r.unknownFields())
    return e;
  if (Error e = r.number("bandwidth_gbs", link.bandwidth, true, 1e9))
    return e;
  return r.number("latency_us", link.latency, true, 1e-6);
}

/// A measured collective: its fit (bandwidth_gbs, latency_us) and,
/// optionally, the group size it was measured over (ranks) and its times
/// by size (times: [{"bytes", "us"}], by increasing bytes).
Error readMeasured(Reader &parent, StringRef key, MeasuredCollective &out) {
  if (Error e = readLink(parent, key, out, {"ranks", "times"}))
    return e;
  Expected<const json::Object *> o = parent.object_(key);
  if (!o)
    return o.takeError();
  std::string where = parent.path(key);
  Reader r(**o, where, {});
  if (Error e = r.integer("ranks", out.ranks, false))
    return e;
  const json::Value *times = (*o)->get("times");
  if (!times)
    return Error::success();
  const json::Array *rows = times->getAsArray();
  if (!rows || !out.ranks)
    return llvm::createStringError(
        "\"" + where +
        ".times\" must be an array of {\"bytes\", \"us\"} "
        "next to \"ranks\"");
  for (auto [index, row] : llvm::enumerate(*rows)) {
    std::string at = where + ".times[" + std::to_string(index) + "]";
    const json::Object *point = row.getAsObject();
    if (!point)
      return llvm::createStringError("\"" + at + "\" must be an object");
    Reader p(*point, at, {"bytes", "us"});
    double bytes = 0, seconds = 0;
    if (Error e = p.unknownFields())
      return e;
    if (Error e = p.number("bytes", bytes, true))
      return e;
    if (Error e = p.number("us", seconds, true, 1e-6))
      return e;
    if (!out.times.empty() && bytes <= out.times.back().first)
      return llvm::createStringError("\"" + at +
                                     "\" must come after a smaller size");
    out.times.push_back({bytes, seconds});
  }
  return Error::success();
}

Expected<json::Value> readJsonFile(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError("cannot read " + path + ": " +
                                   buffer.getError().message());
  Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return llvm::createStringError(path + ": " +
                                   llvm::toString(value.takeError()));
  return value;
}

} // namespace

Expected<Cluster> mlir::loom::plan::parseCluster(const json::Value &value) {
  const json::Object *root = value.getAsObject();
  if (!root)
    return llvm::createStringError("a cluster description is a JSON object");
  Cluster c;
  Reader r(*root, "",
           {"name", "device", "devices_per_node", "nodes", "intra_node",
            "inter_node", "link_efficiency", "memory_margin", "source",
            "collectives", "cores_per_node", "note"});
  if (Error e = r.unknownFields())
    return std::move(e);
  if (Error e = r.string("name", c.name, true))
    return std::move(e);
  if (Error e = r.string("source", c.source, false))
    return std::move(e);
  Expected<const json::Object *> deviceObject = r.object_("device");
  if (!deviceObject)
    return deviceObject.takeError();
  Reader d(**deviceObject, "device",
           {"name", "memory_gib", "memory_bandwidth_gbs", "peak_tflops",
            "gemm_efficiency", "memory_efficiency", "kernel_overhead_us",
            "reserved_gib", "gemm", "threads", "note"});
  if (Error e = d.unknownFields())
    return std::move(e);
  if (Error e = d.string("name", c.device, true))
    return std::move(e);
  if (Error e = d.number("memory_gib", c.memoryBytes, true, 1024.0 * 1024 * 1024))
    return std::move(e);
  if (Error e = d.number("memory_bandwidth_gbs", c.memoryBandwidth, true, 1e9))
    return std::move(e);
  Expected<const json::Object *> peaks = d.object_("peak_tflops");
  if (!peaks)
    return peaks.takeError();
  Reader pk(**peaks, "device.peak_tflops", {"fp32", "tf32", "bf16", "fp16"});
  if (Error e = pk.unknownFields())
    return std::move(e);
  for (auto [key, field] :
       {std::pair<StringRef, double *>{"fp32", &c.peakFp32},
        {"tf32", &c.peakTf32},
        {"bf16", &c.peakBf16},
        {"fp16", &c.peakFp16}})
    if (Error e = pk.number(key, *field, key == "fp32", 1e12))
      return std::move(e);
  if (Error e = d.number("gemm_efficiency", c.gemmEfficiency, false))
    return std::move(e);
  if (Error e = d.number("memory_efficiency", c.memoryEfficiency, false))
    return std::move(e);
  if (Error e = d.number("kernel_overhead_us", c.kernelOverhead, false, 1e-6))
    return std::move(e);
  if (Error e = d.number("reserved_gib", c.reservedBytes, false,
                         1024.0 * 1024 * 1024))
    return std::move(e);
  if (Error e = d.integer("threads", c.threadsPerDevice, false))
    return std::move(e);
  if (const json::Value *table = (*deviceObject)->get("gemm")) {
    const json::Array *rows = table->getAsArray();
    if (!rows)
      return llvm::createStringError(
          "\"device.gemm\" must be an array of {\"m\", \"n\", \"k\", "
          "\"precision\", \"gflops\"}");
    for (auto [index, row] : llvm::enumerate(*rows)) {
      std::string where = "device.gemm[" + std::to_string(index) + "]";
      const json::Object *o = row.getAsObject();
      if (!o)
        return llvm::createStringError("\"" + where + "\" must be an object");
      Reader g(*o, where, {"m", "n", "k", "precision", "gflops"});
      GemmSample sample;
      if (Error e = g.unknownFields())
        return std::move(e);
      for (auto [key, field] : {std::pair<StringRef, int64_t *>{"m", &sample.m},
                                {"n", &sample.n},
                                {"k", &sample.k}})
        if (Error e = g.integer(key, *field, true))
          return std::move(e);
      if (Error e = g.string("precision", sample.precision, true))
        return std::move(e);
      if (Error e = g.number("gflops", sample.flops, true, 1e9))
        return std::move(e);
      if (sample.precision != "fp32" && sample.precision != "bf16" &&
          sample.precision != "fp16" && sample.precision != "tf32")
        return llvm::createStringError(
            "\"" + where + ".precision\" must be fp32, tf32, bf16 or fp16");
      if (!sample.m || !sample.n || !sample.k || !(sample.flops > 0))
        return llvm::createStringError("\"" + where +
                                       "\" needs positive m, n, k and gflops");
      c.gemm.push_back(std::move(sample));
    }
  }
  if (Error e = r.integer("devices_per_node", c.devicesPerNode, true))
    return std::move(e);
  if (Error e = r.integer("nodes", c.nodes, true))
    return std::move(e);
  if (Error e = r.integer("cores_per_node", c.coresPerNode, false))
    return std::move(e);
  if (Error e = readLink(r, "intra_node", c.intraNode))
    return std::move(e);
  if (Error e = readLink(r, "inter_node", c.interNode))
    return std::move(e);
  if (root->get("collectives")) {
    Expected<const json::Object *> measured = r.object_("collectives");
    if (!measured)
      return measured.takeError();
    Reader m(**measured, "collectives",
             {"all_reduce", "all_reduce_started", "all_gather", "p2p"});
    if (Error e = m.unknownFields())
      return std::move(e);
    for (auto [key, field] :
         {std::pair<StringRef, std::optional<MeasuredCollective> *>{
              "all_reduce", &c.allReduce},
          {"all_reduce_started", &c.allReduceStarted},
          {"all_gather", &c.allGather},
          {"p2p", &c.p2p}}) {
      if (!(*measured)->get(key))
        continue;
      MeasuredCollective link;
      if (Error e = readMeasured(m, key, link))
        return std::move(e);
      if (!(link.bandwidth > 0))
        return llvm::createStringError("\"collectives." + key +
                                       ".bandwidth_gbs\" must be positive");
      *field = link;
    }
  }
  if (Error e = r.number("link_efficiency", c.linkEfficiency, false))
    return std::move(e);
  if (Error e = r.number("memory_margin", c.memoryMargin, false))
    return std::move(e);

  auto positive = [](double v, StringRef what) -> Error {
    if (v > 0)
      return Error::success();
    return llvm::createStringError(what + " must be positive");
  };
  for (auto [v, what] :
       {std::pair<double, StringRef>{c.memoryBytes, "\"device.memory_gib\""},
        {c.memoryBandwidth, "\"device.memory_bandwidth_gbs\""},
        {c.peakFp32, "\"device.peak_tflops.fp32\""},
        {double(c.devicesPerNode), "\"devices_per_node\""},
        {double(c.threadsPerDevice), "\"device.threads\""},
        {double(c.nodes), "\"nodes\""},
        {c.intraNode.bandwidth, "\"intra_node.bandwidth_gbs\""},
        {c.interNode.bandwidth, "\"inter_node.bandwidth_gbs\""}})
    if (Error e = positive(v, what))
      return std::move(e);
  for (auto [v, what] :
       {std::pair<double, StringRef>{c.gemmEfficiency,
                                     "\"device.gemm_efficiency\""},
        {c.memoryEfficiency, "\"device.memory_efficiency\""},
        {c.linkEfficiency, "\"link_efficiency\""}})
    if (v <= 0 || v > 1)
      return llvm::createStringError(what + " must be in (0, 1]");
  if (c.memoryMargin >= 1)
    return llvm::createStringError("\"memory_margin\" must be below 1");
  if (root->get("cores_per_node") && c.coresPerNode < 1)
    return llvm::createStringError("\"cores_per_node\" must be positive");
  return c;
}

json::Value mlir::loom::plan::clusterToJson(const Cluster &c) {
  auto link = [](const Link &l) {
    return json::Object{{"bandwidth_gbs", l.bandwidth / 1e9},
                        {"latency_us", l.latency * 1e6}};
  };
  json::Object peaks{{"fp32", c.peakFp32 / 1e12}};
  for (auto [key, value] : {std::pair<StringRef, double>{"tf32", c.peakTf32},
                            {"bf16", c.peakBf16},
                            {"fp16", c.peakFp16}})
    if (value > 0)
      peaks[key] = value / 1e12;
  const double gib = 1024.0 * 1024 * 1024;
  json::Object device{{"name", c.device},
                      {"memory_gib", c.memoryBytes / gib},
                      {"memory_bandwidth_gbs", c.memoryBandwidth / 1e9},
                      {"peak_tflops", std::move(peaks)},
                      {"gemm_efficiency", c.gemmEfficiency},
                      {"memory_efficiency", c.memoryEfficiency},
                      {"kernel_overhead_us", c.kernelOverhead * 1e6},
                      {"reserved_gib", c.reservedBytes / gib}};
  if (c.threadsPerDevice != 1)
    device["threads"] = c.threadsPerDevice;
  if (!c.gemm.empty()) {
    json::Array table;
    for (const GemmSample &g : c.gemm)
      table.push_back(json::Object{{"m", g.m},
                                   {"n", g.n},
                                   {"k", g.k},
                                   {"precision", g.precision},
                                   {"gflops", g.flops / 1e9}});
    device["gemm"] = std::move(table);
  }
  json::Object root{{"name", c.name},
                    {"device", std::move(device)},
                    {"devices_per_node", c.devicesPerNode},
                    {"nodes", c.nodes},
                    {"intra_node", link(c.intraNode)},
                    {"inter_node", link(c.interNode)},
                    {"link_efficiency", c.linkEfficiency},
                    {"memory_margin", c.memoryMargin}};
  if (!c.source.empty())
    root["source"] = c.source;
  if (c.coresPerNode > 0)
    root["cores_per_node"] = c.coresPerNode;
  json::Object measured;
  for (auto [key, field] :
       {std::pair<StringRef, const std::optional<MeasuredCollective> *>{
            "all_reduce", &c.allReduce},
        {"all_reduce_started", &c.allReduceStarted},
        {"all_gather", &c.allGather},
        {"p2p", &c.p2p}}) {
    if (!*field)
      continue;
    json::Object o = link(**field);
    if ((*field)->ranks) {
      o["ranks"] = (*field)->ranks;
      json::Array times;
      for (auto [bytes, seconds] : (*field)->times)
        times.push_back(json::Object{{"bytes", bytes}, {"us", seconds * 1e6}});
      o["times"] = std::move(times);
    }
    measured[key] = std::move(o);
  }
  if (!measured.empty())
    root["collectives"] = std::move(measured);
  return root;
}

Expected<Cluster> mlir::loom::plan::loadCluster(StringRef path) {
  Expected<json::Value> value = readJsonFile(path);
  if (!value)
    return value.takeError();
  Expected<Cluster> c = parseCluster(*value);
  if (!c)
    return llvm::createStringError(path + ": " + llvm::toString(c.takeError()));
  return c;
}

Expected<Transformer>
mlir::loom::plan::parseTransformer(const json::Value &value) {
  const json::Object *root = value.getAsObject();
  if (!root)
    return llvm::createStringError("a model description is a JSON object");
  Transformer m;
  Reader r(*root, "",
           {"name", "layers", "hidden", "heads", "seq_len", "vocab", "ffn",
            "experts", "top_k", "moe_every", "tied_embedding", "note"});
  if (Error e = r.unknownFields())
    return std::move(e);
  if (Error e = r.string("name", m.name, false))
    return std::move(e);
  for (auto [key, field] : {std::pair<StringRef, int64_t *>{"layers", &m.layers},
                            {"hidden", &m.hidden},
                            {"heads", &m.heads},
                            {"seq_len", &m.seq},
                            {"vocab", &m.vocab}})
    if (Error e = r.integer(key, *field, true))
      return std::move(e);
  for (auto [key, field] : {std::pair<StringRef, int64_t *>{"ffn", &m.ffn},
                            {"experts", &m.experts},
                            {"top_k", &m.topK},
                            {"moe_every", &m.moeEvery}})
    if (Error e = r.integer(key, *field, false))
      return std::move(e);
  if (Error e = r.boolean("tied_embedding", m.tiedEmbedding))
    return std::move(e);
  for (auto [v, what] : {std::pair<int64_t, StringRef>{m.layers, "layers"},
                         {m.hidden, "hidden"},
                         {m.heads, "heads"},
                         {m.seq, "seq_len"},
                         {m.vocab, "vocab"},
                         {m.topK, "top_k"},
                         {m.moeEvery, "moe_every"}})
    if (v < 1)
      return llvm::createStringError("\"" + what + "\" must be at least 1");
  if (m.hidden % m.heads)
    return llvm::createStringError(
        llvm::formatv("the heads ({0}) must divide the hidden size ({1})",
                      m.heads, m.hidden));
  if (m.experts && m.topK > m.experts)
    return llvm::createStringError(
        llvm::formatv("top_k ({0}) exceeds the experts ({1})", m.topK,
                      m.experts));
  return m;
}

Expected<Transformer> mlir::loom::plan::loadTransformer(StringRef path) {
  Expected<json::Value> value = readJsonFile(path);
  if (!value)
    return value.takeError();
  Expected<Transformer> m = parseTransformer(*value);
  if (!m)
    return llvm::createStringError(path + ": " + llvm::toString(m.takeError()));
  return m;
}

Error mlir::loom::plan::parseConstraints(const json::Object &object,
                                         SearchSpace &space) {
  Reader r(object, "",
           {"dp", "tp", "pp", "ep", "microbatch", "zero", "precision", "remat",
            "grad_reduce_dtype", "schedule", "sequence_parallel",
            "overlap_grad_reduce", "global_batch", "devices", "note"});
  if (Error e = r.unknownFields())
    return e;
  auto optInt = [&](StringRef key, std::optional<int64_t> &out) -> Error {
    if (!object.get(key))
      return Error::success();
    int64_t v = 0;
    if (Error e = r.integer(key, v, true))
      return e;
    out = v;
    return Error::success();
  };
  auto optString = [&](StringRef key,
                       std::optional<std::string> &out) -> Error {
    if (!object.get(key))
      return Error::success();
    std::string v;
    if (Error e = r.string(key, v, true))
      return e;
    out = v;
    return Error::success();
  };
  auto optBool = [&](StringRef key, std::optional<bool> &out) -> Error {
    if (!object.get(key))
      return Error::success();
    bool v = false;
    if (Error e = r.boolean(key, v))
      return e;
    out = v;
    return Error::success();
  };
  for (auto [key, field] :
       {std::pair<StringRef, std::optional<int64_t> *>{"dp", &space.dp},
        {"tp", &space.tp},
        {"pp", &space.pp},
        {"ep", &space.ep},
        {"microbatch", &space.microbatch},
        {"zero", &space.zero}})
    if (Error e = optInt(key, *field))
      return e;
  for (auto [key, field] :
       {std::pair<StringRef, std::optional<std::string> *>{"precision",
                                                           &space.precision},
        {"remat", &space.remat},
        {"grad_reduce_dtype", &space.gradReduceDtype}})
    if (Error e = optString(key, *field))
      return e;
  auto oneOf = [](const std::optional<std::string> &value, StringRef key,
                  std::initializer_list<StringRef> allowed) -> Error {
    if (!value || llvm::is_contained(allowed, StringRef(*value)))
      return Error::success();
    return llvm::createStringError("\"" + key + "\": unknown value '" +
                                   *value + "' (" +
                                   llvm::join(allowed, ", ") + ")");
  };
  if (Error e = oneOf(space.precision, "precision",
                      {"fp32", "bf16", "fp16", "bf16-pure"}))
    return e;
  if (Error e = oneOf(space.remat, "remat", {"none", "selective", "full"}))
    return e;
  if (Error e = oneOf(space.gradReduceDtype, "grad_reduce_dtype",
                      {"fp32", "bf16", "fp16"}))
    return e;
  if (space.zero && *space.zero > 3)
    return llvm::createStringError("\"zero\": the ZeRO stage is 0-3");
  // One schedule, or several separated by '|'.
  std::optional<std::string> schedules;
  if (Error e = optString("schedule", schedules))
    return e;
  if (schedules) {
    llvm::SmallVector<StringRef> names;
    StringRef(*schedules).split(names, '|', -1, /*KeepEmpty=*/false);
    for (StringRef name : names) {
      if (name != "gpipe" && name != "1f1b" && name != "interleaved-1f1b" &&
          name != "zero-bubble")
        return llvm::createStringError(
            "\"schedule\": unknown schedule '" + name +
            "' (gpipe, 1f1b, interleaved-1f1b, zero-bubble)");
      space.schedules.push_back(name.str());
    }
  }
  if (Error e = optBool("sequence_parallel", space.sequenceParallel))
    return e;
  if (Error e = optBool("overlap_grad_reduce", space.overlapGradReduce))
    return e;
  if (object.get("global_batch")) {
    if (Error e = r.integer("global_batch", space.globalBatch, true))
      return e;
  }
  if (object.get("devices")) {
    if (Error e = r.integer("devices", space.devices, true))
      return e;
  }
  return Error::success();
}

static std::string bytes(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return llvm::formatv("{0:F1} {1}", b, units[u]).str();
}

static std::string seconds(double s) {
  if (s >= 1)
    return llvm::formatv("{0:F3} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:F2} ms", s * 1e3).str();
  return llvm::formatv("{0:F1} us", s * 1e6).str();
}

void mlir::loom::plan::printPlans(llvm::raw_ostream &os, const Transformer &m,
                                  const Cluster &c, const SearchResult &result,
                                  int64_t count) {
  int64_t devices = result.devices ? result.devices : c.devices();
  os << llvm::formatv("loom planner: {0} ({1:F2}B parameters), global batch "
                      "{2}, on {3} of {4} ({5} nodes of {6} {7})\n",
                      m.name.empty() ? "model" : m.name, m.parameters() / 1e9,
                      result.globalBatch, devices, c.name, c.nodes,
                      c.devicesPerNode, c.device);
  os << llvm::formatv("{0} plans considered: {1} valid and fitting, {2} out "
                      "of memory, {3} invalid for this model or cluster\n",
                      result.considered, result.plans.size(),
                      result.outOfMemory, result.invalid);
  if (result.plans.empty()) {
    if (result.leastMemory)
      os << llvm::formatv("no plan fits: the smallest needs {0} per device "
                          "({1} {2}); the device offers {3}\n",
                          bytes(result.leastMemory->estimate.memory),
                          result.leastMemory->plan.mesh(),
                          result.leastMemory->plan.flags(),
                          bytes(result.leastMemory->estimate.available));
    return;
  }
  os << llvm::formatv("{0,-4} {1,10} {2,6} {3,11} {4,10} {5,9} {6,9} "
                      "{7,9}  {8,-20} {9}\n",
                      "rank", "step", "MFU", "TFLOP/s/dev", "memory",
                      "bubble", "comm", "recompute", "mesh", "flags");
  int64_t shown = std::min<int64_t>(count, result.plans.size());
  for (int64_t i = 0; i < shown; ++i) {
    const Ranked &r = result.plans[i];
    const Estimate &e = r.estimate;
    double comm = e.tpComm + e.epComm + e.ppComm + e.dpComm;
    os << llvm::formatv("{0,-4} {1,10} {2,5:F1}% {3,11:F1} {4,10} {5,9} "
                        "{6,9} {7,9}  {8,-20} {9}\n",
                        i + 1, seconds(e.step), e.mfu * 100,
                        e.hardwareFlopsPerDevice / 1e12, bytes(e.memory),
                        seconds(e.bubble), seconds(comm), seconds(e.recompute),
                        r.plan.mesh(), r.plan.flags());
  }
  const Ranked &best = result.plans.front();
  const Estimate &e = best.estimate;
  os << llvm::formatv(
      "best: {0} {1}\n  step {2}: compute {3}, recompute {4}, tensor-parallel "
      "{5}, expert all-to-all {6}, pipeline transfers {7}, bubble {8}, "
      "exposed gradient reduction {9}, optimizer {10}\n  memory {11} of "
      "{12}: parameters {13}, gradients {14}, optimizer state {15}, "
      "activations {16}, workspace {17}\n",
      best.plan.mesh(), best.plan.flags(), seconds(e.step), seconds(e.compute),
      seconds(e.recompute), seconds(e.tpComm), seconds(e.epComm),
      seconds(e.ppComm), seconds(e.bubble), seconds(e.dpComm),
      seconds(e.optimizer), bytes(e.memory), bytes(e.available),
      bytes(e.parameters), bytes(e.gradients), bytes(e.optimizerState),
      bytes(e.activations), bytes(e.workspace));
  if (result.plans.size() > 1) {
    const Estimate &second = result.plans[1].estimate;
    os << llvm::formatv("the others lost on step time: the runner-up is "
                        "{0:F1}% slower\n",
                        (second.step / e.step - 1) * 100);
  }
}

json::Value mlir::loom::plan::plansToJson(const SearchResult &result,
                                          int64_t count) {
  json::Array plans;
  int64_t shown = std::min<int64_t>(count, result.plans.size());
  for (int64_t i = 0; i < shown; ++i) {
    const Plan &p = result.plans[i].plan;
    const Estimate &e = result.plans[i].estimate;
    plans.push_back(json::Object{
        {"mesh", p.mesh()},
        {"flags", p.flags()},
        {"dp", p.dp},
        {"tp", p.tp},
        {"pp", p.pp},
        {"ep", p.ep},
        {"zero", p.zero},
        {"microbatch", p.microbatch},
        {"microbatches", p.microbatches},
        {"schedule", p.schedule},
        {"virtual_stages", p.virtualStages},
        {"precision", p.precision},
        {"remat", p.remat},
        {"sequence_parallel", p.sequenceParallel},
        {"step_s", e.step},
        {"mfu", e.mfu},
        {"hardware_tflops_per_device", e.hardwareFlopsPerDevice / 1e12},
        {"memory_bytes", e.memory},
        {"available_bytes", e.available},
        {"parameters_bytes", e.parameters},
        {"gradients_bytes", e.gradients},
        {"optimizer_bytes", e.optimizerState},
        {"activations_bytes", e.activations},
        {"workspace_bytes", e.workspace},
        {"compute_s", e.compute},
        {"recompute_s", e.recompute},
        {"tp_comm_s", e.tpComm},
        {"ep_comm_s", e.epComm},
        {"pp_comm_s", e.ppComm},
        {"bubble_s", e.bubble},
        {"dp_comm_s", e.dpComm},
        {"optimizer_s", e.optimizer},
    });
  }
  return json::Object{{"considered", result.considered},
                      {"fitting", int64_t(result.plans.size())},
                      {"out_of_memory", result.outOfMemory},
                      {"invalid", result.invalid},
                      {"plans", std::move(plans)}};
}
