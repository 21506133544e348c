//===- gradcheck.cpp - gradients against finite differences --------------===//
//
//   gradcheck model.loom [--rtol R] [--atol A] [--step H]
//
// For every entry point `F_grad` of a bundle with a partner `F` (as
// `loom-opt --loom-differentiate` makes them), binds pseudo-random values in
// [0.2, 1.2) to F's floating-point inputs, computes the gradient with F_grad
// and compares every element with the central difference
// (F(x + h) - F(x - h)) / 2h computed from F alone. Prints one line per
// function and exits 1 if any element is off by more than atol + rtol * |fd|.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "loom/runtime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

struct Session {
  loom_session_t *s = nullptr;
  ~Session() { loom_session_destroy(s); }
};

bool ok(loom_status_t status) {
  if (!status)
    return true;
  std::fprintf(stderr, "gradcheck: %s\n", loom_status_message(status));
  loom_status_free(status);
  return false;
}

bool open(const std::string &bundle, const std::string &entry, Session &out) {
  loom_session_options_t options;
  loom_session_options_initialize(&options);
  options.entry_point = entry.c_str();
  return ok(loom_session_create(bundle.c_str(), &options, &out.s));
}

double valueAt(loom_session_t *s, size_t index, size_t i) {
  loom_tensor_info_t info;
  const void *data;
  size_t bytes;
  if (!ok(loom_session_tensor_info(s, index, &info)) ||
      !ok(loom_session_tensor_data(s, index, &data, &bytes)))
    std::exit(1);
  return loom::npy::elementAsDouble(static_cast<const char *>(data),
                                    info.dtype, i);
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle;
  double rtol = 1e-5, atol = 1e-7, h = 1e-6;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--rtol" && i + 1 < argc)
      rtol = std::atof(argv[++i]);
    else if (arg == "--atol" && i + 1 < argc)
      atol = std::atof(argv[++i]);
    else if (arg == "--step" && i + 1 < argc)
      h = std::atof(argv[++i]);
    else
      bundle = arg;
  }
  if (bundle.empty()) {
    std::fprintf(stderr, "usage: gradcheck model.loom [--rtol R] [--atol A] "
                         "[--step H]\n");
    return 1;
  }
  std::ifstream manifestFile(bundle + "/manifest.json");
  nlohmann::json manifest = nlohmann::json::parse(manifestFile, nullptr, false);
  if (manifest.is_discarded()) {
    std::fprintf(stderr, "gradcheck: cannot read %s/manifest.json\n",
                 bundle.c_str());
    return 1;
  }
  int failures = 0, checked = 0;
  for (const auto &entry : manifest["entry_points"]) {
    std::string gradName = entry.value("name", "");
    if (gradName.size() < 6 ||
        gradName.compare(gradName.size() - 5, 5, "_grad") != 0)
      continue;
    std::string name = gradName.substr(0, gradName.size() - 5);
    Session f, g;
    if (!open(bundle, name, f) || !open(bundle, gradName, g))
      return 1;
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::uniform_real_distribution<double> uniform(0.2, 1.2);

    // Random float64 inputs, bound to both sessions.
    std::vector<size_t> inputs;
    std::vector<std::vector<double>> values;
    size_t count = loom_session_tensor_count(f.s);
    for (size_t i = 0; i < count; ++i) {
      loom_tensor_info_t info;
      if (!ok(loom_session_tensor_info(f.s, i, &info)))
        return 1;
      if (info.kind != LOOM_TENSOR_INPUT)
        continue;
      if (info.dtype != LOOM_DTYPE_FLOAT64) {
        std::fprintf(stderr, "gradcheck: %s: input %s must be float64\n",
                     name.c_str(), info.name);
        return 1;
      }
      std::vector<double> v(info.bytes / sizeof(double));
      for (double &x : v)
        x = uniform(rng);
      if (!ok(loom_session_set_tensor(f.s, i, v.data(), info.bytes)) ||
          !ok(loom_session_set_tensor(g.s, i, v.data(), info.bytes)))
        return 1;
      inputs.push_back(i);
      values.push_back(std::move(v));
    }
    size_t output = count - 1; // F's single result comes last
    if (!ok(loom_session_run(g.s)))
      return 1;

    double worst = 0;
    size_t elements = 0;
    bool bad = false;
    for (size_t k = 0; k < inputs.size(); ++k) {
      // F_grad's results follow its inputs, one per float input, in order.
      size_t gradIndex = inputs.size() + k;
      std::vector<double> &v = values[k];
      for (size_t e = 0; e < v.size(); ++e) {
        double saved = v[e];
        auto evaluate = [&](double x) {
          v[e] = x;
          if (!ok(loom_session_set_tensor(f.s, inputs[k], v.data(),
                                          v.size() * sizeof(double))) ||
              !ok(loom_session_run(f.s)))
            std::exit(1);
          return valueAt(f.s, output, 0);
        };
        double fd = (evaluate(saved + h) - evaluate(saved - h)) / (2 * h);
        v[e] = saved;
        double ad = valueAt(g.s, gradIndex, e);
        double err = std::fabs(ad - fd);
        worst = std::max(worst, err / (atol + rtol * std::fabs(fd)));
        if (err > atol + rtol * std::fabs(fd) && !bad) {
          std::printf("%s: FAIL input #%zu element %zu: autodiff %.10g, finite "
                      "difference %.10g\n",
                      name.c_str(), k, e, ad, fd);
          bad = true;
        }
        ++elements;
      }
      if (!ok(loom_session_set_tensor(f.s, inputs[k], v.data(),
                                      v.size() * sizeof(double))))
        return 1;
    }
    ++checked;
    failures += bad;
    std::printf("%s: %s (%zu elements, worst error %.3g of the tolerance)\n",
                name.c_str(), bad ? "FAIL" : "ok", elements, worst);
  }
  std::printf("%d functions checked, %d failed\n", checked, failures);
  return failures || !checked ? 1 : 0;
}
