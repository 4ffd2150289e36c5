#include "data/evidence.h"

#include <string_view>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "said/dates_times.h"
#include "said/numbers.h"
#include "said/quantities.h"

namespace needle::data {

namespace {

// The numbers the text says (said/numbers.h: digits as written, spelled
// words; said/quantities.h: "half an hour", "1 hour 30 minutes" in seconds
// or metres), each also in the common conversions (x/÷ 60, 3600, 100, 1000).
void AddNumbers(const std::string& text, std::vector<double>& out) {
  std::vector<double> base = said::WrittenNumbers(text);
  for (const said::SpelledNumberSpan& n : said::FindSpelledNumbers(text)) base.push_back(static_cast<double>(n.value));
  for (const said::Quantity& q : said::SpokenQuantities(text)) {
    base.push_back(q.base);
    if (q.dimension == said::Dimension::kDuration) base.insert(base.end(), {q.base / 60, q.base / 3600});
  }
  // "a minute", "an hour", "a week": one of the unit.
  const std::string t = Lower(text);
  for (const char* w : {"a minute", "an hour", "a second", "a meter", "a metre", "a week"})
    if (t.find(w) != std::string::npos) base.push_back(1);
  for (double x : base)
    for (double f : {1.0, 60.0, 3600.0, 100.0, 1000.0, 1 / 60.0, 1 / 3600.0, 0.01, 0.001}) out.push_back(x * f);
}

// Checks one argument value against its schema and the evidence.
void CheckValue(const ojson& v, const ojson& schema, const Evidence& ev, const std::string& path,
                std::vector<std::string>& out) {
  if (schema.is_object() && schema.contains("enum"))
    for (const auto& e : schema["enum"])
      if (e == v) return;
  if (schema.is_object() && schema.contains("const") && schema["const"] == v) return;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (ev.text.find(s) != std::string::npos) return;
    const std::string format = schema.is_object() ? schema.value("format", "") : "";
    if (ParseIsoDate(s) && ev.dates.count(s)) return;
    if (s.size() == 5 && s[2] == ':' && ev.times.count(s)) return;
    if (s.size() >= 16 && s[10] == 'T' && ev.dates.count(s.substr(0, 10)) && ev.times.count(s.substr(11, 5))) return;
    out.push_back(path + ": \"" + s + "\" is not in the input" + (format.empty() ? "" : " (format " + format + ")"));
    return;
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (ev.HasNumber(x)) return;
    if (schema.is_object()) {
      if (schema.contains("minimum") && schema["minimum"].get<double>() == x) return;
      if (schema.contains("maximum") && schema["maximum"].get<double>() == x) return;
    }
    out.push_back(path + ": " + v.dump() + " is not a number of the input");
    return;
  }
  if (v.is_array()) {
    const ojson items = schema.is_object() && schema.contains("items") ? schema["items"] : ojson::object();
    for (size_t i = 0; i < v.size(); ++i) CheckValue(v[i], items, ev, path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (v.is_object()) {
    const ojson props = schema.is_object() && schema.contains("properties") ? schema["properties"] : ojson::object();
    for (const auto& [k, x] : v.items()) CheckValue(x, props.contains(k) ? props[k] : ojson::object(), ev, path + "." + k, out);
  }
}

void CheckCalls(const ojson& calls, const ojson& tools, const Evidence& ev, const std::string& where,
                std::vector<std::string>& out) {
  for (const auto& c : calls) {
    if (!c.is_object() || !c.contains("name") || !c.contains("arguments")) continue;
    const std::string name = c["name"].is_string() ? c["name"].get<std::string>() : "";
    ojson props = ojson::object();
    for (const auto& t : tools)
      if (t.value("name", "") == name && t.contains("parameters") && t["parameters"].contains("properties"))
        props = t["parameters"]["properties"];
    for (const auto& [k, v] : c["arguments"].items())
      CheckValue(v, props.contains(k) ? props[k] : ojson::object(), ev, where + " " + name + "." + k, out);
  }
}

}  // namespace

Evidence Evidence::From(const std::string& text, std::optional<Date> today) {
  Evidence ev;
  ev.text = text;
  AddNumbers(text, ev.numbers);
  std::sort(ev.numbers.begin(), ev.numbers.end());
  // Dates and times as the agent reads them (one reader, said/dates_times.h).
  const said::CivilDate day = today ? said::CivilDate{today->y, today->m, today->d} : said::CivilDate{};
  const std::string values = said::SpokenDatesAndTimes(text, day, /*bare_hours=*/true);
  std::string_view rest = values;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    const std::string_view v = rest.substr(0, space);
    if (v.size() == 10) ev.dates.insert(std::string(v));
    if (v.size() == 5) ev.times.insert(std::string(v));
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  }
  return ev;
}

bool Evidence::HasNumber(double x) const {
  const double eps = 1e-9 * std::max(1.0, std::fabs(x));
  auto it = std::lower_bound(numbers.begin(), numbers.end(), x - eps);
  return it != numbers.end() && *it <= x + eps;
}

std::optional<Date> DateFact(const std::string& system) {
  for (const std::string& line : [&] {
         std::vector<std::string> lines;
         std::string cur;
         for (char c : system) {
           if (c == '\n') lines.push_back(cur), cur.clear();
           else cur += c;
         }
         lines.push_back(cur);
         return lines;
       }()) {
    if (!StartsWith(line, "date:")) continue;
    for (size_t i = 5; i + 10 <= line.size(); ++i)
      if (auto d = ParseIsoDate(line.substr(i, 10))) return d;
  }
  return std::nullopt;
}

std::vector<std::string> CheckEvidence(const ojson& ex) {
  std::vector<std::string> out;
  const std::string system = ex.contains("system") ? ex["system"].get<std::string>() : "";
  const std::optional<Date> today = DateFact(system);
  std::string seen = system + "\n" + ex.value("query", std::string());
  const ojson tools = ex.contains("tools") ? ex["tools"] : ojson::array();
  CheckCalls(ex.value("answers", ojson::array()), tools, Evidence::From(seen, today), "turn 0", out);
  if (ex.contains("turns")) {
    int k = 1;
    for (const auto& t : ex["turns"]) {
      if (t.contains("tool_result")) seen += "\n" + t["tool_result"].dump();
      if (t.contains("query")) seen += "\n" + t["query"].get<std::string>();
      CheckCalls(t.value("answers", ojson::array()), tools, Evidence::From(seen, today), "turn " + std::to_string(k++), out);
    }
  }
  return out;
}

}  // namespace needle::data
