#include "hardware/fit_family.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace parasim {

FitContext::FitContext(const std::vector<Measurements>& ms, const ClusterSpec& c)
    : measurements(ms), cluster(c) {
  cluster.gpu.sustained_factor = 1.0;
}

std::vector<double> SolveRelative(const std::vector<std::vector<double>>& a,
                                  const std::vector<double>& y, const std::vector<double>& t) {
  const Eigen::Index n = static_cast<Eigen::Index>(y.size());
  const Eigen::Index k = static_cast<Eigen::Index>(a.empty() ? 0 : a[0].size());
  Eigen::MatrixXd m(n, k);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < k; ++j) m(i, j) = a[i][j] / t[i];
    b(i) = y[i] / t[i];
  }
  const Eigen::VectorXd x = m.colPivHouseholderQr().solve(b);
  return std::vector<double>(x.data(), x.data() + x.size());
}

FamilyFit Quality(std::string family, const std::vector<double>& measured,
                  const std::vector<double>& predicted, const std::vector<std::string>& names) {
  FamilyFit f;
  f.family = std::move(family);
  f.points = static_cast<int>(measured.size());
  if (measured.empty()) return f;
  double mean = 0;
  for (double x : measured) mean += x;
  mean /= static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0, sum_abs = 0;
  std::vector<std::pair<std::string, double>> errors;
  for (size_t i = 0; i < measured.size(); ++i) {
    ss_res += (measured[i] - predicted[i]) * (measured[i] - predicted[i]);
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
    const double e = predicted[i] / measured[i] - 1;
    sum_abs += std::abs(e);
    if (std::abs(e) >= std::abs(f.worst_error)) {
      f.worst_error = e;
      f.worst = names[i];
    }
    errors.emplace_back(names[i], e);
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : std::numeric_limits<double>::quiet_NaN();
  f.mape = sum_abs / static_cast<double>(measured.size());
  std::stable_sort(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
    return std::abs(a.second) > std::abs(b.second);
  });
  errors.resize(std::min<size_t>(3, errors.size()));
  f.disagree = std::move(errors);
  return f;
}

double Bounded(double raw, double lo, double hi, std::string_view what,
               std::vector<std::string>* at_bound) {
  if (raw >= lo && raw <= hi) return raw;
  const double kept = std::isnan(raw) ? hi : std::clamp(raw, lo, hi);
  at_bound->push_back(fmt::format("{} {:.4g} fitted, kept at its bound {:g}", what, raw, kept));
  return kept;
}

std::vector<std::string> FitRefusals(const FitResult& r) {
  std::vector<std::string> out;
  for (const FamilyFit& f : r.families) {
    if (!f.written) continue;
    std::string family = f.family;
    family.erase(0, family.find_first_not_of(' '));
    std::string points;
    for (const auto& [name, e] : f.disagree) {
      points += fmt::format("{}{} ({:+.1f}%)", points.empty() ? "" : "; ", name, 100 * e);
    }
    for (const std::string& b : f.at_bound) {
      out.push_back(
          fmt::format("{}: {}: the data do not fit the model there (points furthest "
                      "from it: {})",
                      family, b, points.empty() ? "none" : points));
    }
    if (const std::string poor = PoorFit(f.r2, f.worst_error, f.points); !poor.empty()) {
      out.push_back(fmt::format("{}: {} (furthest from it: {})", family, poor, points));
    }
  }
  return out;
}

std::string PoorFit(double r2, double worst_error, int points) {
  if (points < 3) return "";
  if (std::isnan(r2)) {
    if (std::abs(worst_error) <= kMaxFlatError) return "";
    return fmt::format(
        "the {} measured values are all equal (R^2 undefined) and the fit misses "
        "one by {:+.1f}%, more than {:g}%",
        points, 100 * worst_error, 100 * kMaxFlatError);
  }
  if (r2 >= kMinProfileR2) return "";
  return fmt::format("R^2 {:.3f} is below {:g}: the fit explains too little of the {} points", r2,
                     kMinProfileR2, points);
}

}  // namespace parasim
