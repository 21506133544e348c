//===- trajectory-compare.cpp - training losses against a reference -------===//
//
//   trajectory-compare METRICS.jsonl REF [--rtol R] [--group K] [--params DIR
//                      [--param-rtol P] [--skip NAME]...]
//
// Reads the "loss" of every step record of a `loom-run train --metrics`
// file and compares step i with element i of REF.losses.npy: each must
// satisfy |loss - ref| <= R * |ref| (default 1e-4), and the counts must
// agree. `--group K` first averages each K consecutive losses (the
// micro-batches of one step with gradient accumulation). With --params, every reference parameter REF.<name>.npy is also
// compared with DIR/<name>.npy (from `loom-run train --save-params DIR`):
// max|loom - ref| <= P * max|ref| (default 1e-4); --skip leaves a parameter
// out (the test says why). Exits 1 on any mismatch.
//
// REF may also be another run: a METRICS.jsonl whose losses are the
// reference, with --ref-params DIR holding its --save-params output (used to
// check that distributed runs equal one process). --align-end compares a
// shorter run (one resumed from a checkpoint) with the reference's last
// steps.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: trajectory-compare METRICS.jsonl REF [--rtol R] "
                 "[--group K] [--align-end] [--params DIR [--ref-params DIR] "
                 "[--param-rtol P] [--skip NAME]...]\n");
    return 2;
  }
  double rtol = 1e-4, paramRtol = 1e-4;
  int group = 1;
  bool alignEnd = false;
  std::string paramsDir, refParamsDir;
  std::vector<std::string> skip;
  for (int i = 3; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--align-end") {
      alignEnd = true;
      --i; // takes no value
      continue;
    }
    if (i + 1 == argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return 2;
    }
    if (flag == "--rtol")
      rtol = std::atof(argv[i + 1]);
    else if (flag == "--param-rtol")
      paramRtol = std::atof(argv[i + 1]);
    else if (flag == "--group")
      group = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--params")
      paramsDir = argv[i + 1];
    else if (flag == "--ref-params")
      refParamsDir = argv[i + 1];
    else if (flag == "--skip")
      skip.push_back(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  std::string prefix = argv[2];
  auto readLosses = [](const char *path, std::vector<double> &out) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", path);
      return false;
    }
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
      if (record.is_discarded()) {
        std::fprintf(stderr, "%s: not JSON lines\n", path);
        return false;
      }
      if (record.contains("loss"))
        out.push_back(record["loss"].get<double>());
    }
    return true;
  };
  std::vector<double> losses;
  if (!readLosses(argv[1], losses))
    return 2;
  if (group > 1) {
    std::vector<double> means;
    for (size_t i = 0; i + group <= losses.size(); i += group) {
      double sum = 0;
      for (int j = 0; j < group; ++j)
        sum += losses[i + j];
      means.push_back(sum / group);
    }
    if (losses.size() % group)
      means.push_back(NAN); // an incomplete group never matches
    losses = std::move(means);
  }
  std::vector<double> refLosses;
  std::string error;
  bool refIsRun = prefix.size() > 6 &&
                  prefix.compare(prefix.size() - 6, 6, ".jsonl") == 0;
  if (refIsRun) {
    if (!readLosses(prefix.c_str(), refLosses))
      return 2;
  } else {
    loom::npy::Array ref;
    if (!loom::npy::read(prefix + ".losses.npy", ref, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 2;
    }
    for (size_t i = 0; i < ref.numElements(); ++i)
      refLosses.push_back(
          loom::npy::elementAsDouble(ref.data.data(), ref.dtype, i));
  }
  if (alignEnd && refLosses.size() > losses.size())
    refLosses.erase(refLosses.begin(),
                    refLosses.end() - (std::ptrdiff_t)losses.size());
  if (refLosses.size() != losses.size()) {
    std::printf("mismatch: %zu steps in %s, %zu reference losses\n",
                losses.size(), argv[1], refLosses.size());
    return 1;
  }
  double worst = 0;
  bool ok = true;
  for (size_t i = 0; i < losses.size(); ++i) {
    double r = refLosses[i];
    double rel = std::fabs(losses[i] - r) / std::max(std::fabs(r), 1e-30);
    worst = std::max(worst, rel);
    ok &= rel <= rtol;
    std::printf("step %zu: loss %.9g reference %.9g relative error %.3g%s\n",
                i + 1, losses[i], r, rel, rel <= rtol ? "" : "  <-- too far");
  }
  std::printf("%s: %zu steps, worst relative error %.3g (tolerance %g)\n",
              ok ? "match" : "mismatch", losses.size(), worst, rtol);
  if (paramsDir.empty())
    return ok ? 0 : 1;

  namespace fs = std::filesystem;
  fs::path refDir = refIsRun ? fs::path(refParamsDir)
                             : fs::path(prefix).parent_path();
  std::string stem = refIsRun ? "" : fs::path(prefix).filename().string() + ".";
  int compared = 0;
  double worstParam = 0;
  for (const auto &entry : fs::directory_iterator(refDir.empty() ? "." : refDir)) {
    std::string file = entry.path().filename().string();
    if (file.rfind(stem, 0) != 0 || (!refIsRun && file == stem + "losses.npy") ||
        entry.path().extension() != ".npy")
      continue;
    std::string name = file.substr(stem.size(), file.size() - stem.size() - 4);
    if (std::find(skip.begin(), skip.end(), name) != skip.end())
      continue;
    loom::npy::Array expected, actual;
    if (!loom::npy::read(entry.path().string(), expected, error) ||
        !loom::npy::read(paramsDir + "/" + name + ".npy", actual, error)) {
      std::printf("mismatch: %s\n", error.c_str());
      ok = false;
      continue;
    }
    double maxRef = 0, maxDiff = 0;
    size_t n = expected.numElements();
    if (actual.shape != expected.shape) {
      std::printf("mismatch: parameter %s has another shape\n", name.c_str());
      ok = false;
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      double e = loom::npy::elementAsDouble(expected.data.data(),
                                            expected.dtype, i);
      double a = loom::npy::elementAsDouble(actual.data.data(), actual.dtype,
                                            i);
      maxRef = std::max(maxRef, std::fabs(e));
      maxDiff = std::max(maxDiff, std::fabs(a - e));
    }
    double rel = maxDiff / std::max(maxRef, 1e-30);
    worstParam = std::max(worstParam, rel);
    ++compared;
    if (rel > paramRtol) {
      std::printf("mismatch: parameter %s: relative error %.3g\n",
                  name.c_str(), rel);
      ok = false;
    }
  }
  std::printf("%s: %d final parameters, worst relative error %.3g "
              "(tolerance %g)\n",
              ok && compared ? "match" : "mismatch", compared, worstParam,
              paramRtol);
  return ok && compared ? 0 : 1;
}
