#include "data/stats.h"

#include <algorithm>
#include <cstdio>

namespace needle::data {

void DataStats::Add(const Example& ex) {
  ++n_;
  const ExampleMeta& m = ex.meta;
  refusals_ += m.refusal;
  const size_t nt = m.tools.size();
  tools_ += nt;
  tool_hist_[std::min<size_t>(nt, 8)]++;
  calls_ += m.calls;
  parallel_ += m.calls >= 2;
  if (m.kind == "session") ++sessions_, session_turns_ += m.turns;
  for (size_t i = 0; i < m.tools.size(); ++i) {
    names_.insert(m.tools[i]);
    origins_[m.origins[i]]++;
  }
  kinds_[m.kind]++;
  domains_[m.domain.empty() ? "(none: off-topic)" : m.domain]++;
  if (ex.json.contains("system")) {
    ++with_system_;
    with_date_ += ex.json["system"].get<std::string>().find("date:") != std::string::npos;
  }
  tokens_.push_back(RenderPromptText(ex.json).size() / 4);
  tool_tokens_.push_back(ex.json["tools"].dump().size() / 4);
}

namespace {

std::string Line(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

void Percentiles(std::vector<size_t> v, double& mean, size_t& p50, size_t& p95, size_t& max) {
  mean = 0, p50 = p95 = max = 0;
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  for (size_t x : v) mean += static_cast<double>(x);
  mean /= static_cast<double>(v.size());
  p50 = v[v.size() / 2], p95 = v[std::min(v.size() - 1, v.size() * 95 / 100)], max = v.back();
}

}  // namespace

std::string DataStats::Report() const {
  const double n = n_ ? static_cast<double>(n_) : 1.0;
  std::string r;
  r += Line("examples: %.0f\n", static_cast<double>(n_));
  r += Line("refusal share (first turn answers []): %.1f%%\n", 100.0 * refusals_ / n);
  r += Line("tools per example: mean %.2f;", tools_ / n);
  r += " histogram 1..8:";
  for (size_t i = 1; i <= 8; ++i) r += " " + std::to_string(tool_hist_[i]);
  r += "\n";
  r += Line("calls per example (first turn): mean %.2f; with 2+ calls: %.1f%%\n", calls_ / n, 100.0 * parallel_ / n);
  r += Line("sessions: %.1f%% of examples, %.2f turns on average\n", 100.0 * sessions_ / n,
            sessions_ ? static_cast<double>(session_turns_) / static_cast<double>(sessions_) : 0.0);
  r += Line("system facts: %.1f%% (with a date: %.1f%%)\n", 100.0 * with_system_ / n, 100.0 * with_date_ / n);
  double mean;
  size_t p50, p95, max;
  Percentiles(tokens_, mean, p50, p95, max);
  r += Line("approx tokens per example (chars/4, SPEC §8 rendering, all turns): mean %.0f, p50 %.0f, p95 %.0f, max %.0f\n",
            mean, static_cast<double>(p50), static_cast<double>(p95), static_cast<double>(max));
  Percentiles(tool_tokens_, mean, p50, p95, max);
  r += Line("approx tokens of the tools block (chars/4): mean %.0f, p50 %.0f, p95 %.0f, max %.0f\n", mean,
            static_cast<double>(p50), static_cast<double>(p95), static_cast<double>(max));
  r += "distinct tool names: " + std::to_string(names_.size()) + "  (declared tools by origin:";
  for (const auto& [k, v] : origins_) r += " " + k + " " + std::to_string(v);
  r += ")\n";
  r += "kinds:";
  for (const auto& [k, v] : kinds_) r += " " + k + " " + std::to_string(v);
  r += "\nper domain:";
  for (const auto& [k, v] : domains_) r += " " + k + " " + std::to_string(v);
  r += "\n";
  return r;
}

}  // namespace needle::data
