#include "data/evidence.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace needle::data {

namespace {

struct Tok {
  std::string s;
  bool num = false;  // digits (possibly H:MM)
};

// Lowercase tokens; "a.m." -> "am"; digits and letters split ("7pm" -> 7 pm).
std::vector<Tok> Tokenize(const std::string& text) {
  std::string t = Lower(text);
  for (const char* from : {"a.m.", "p.m."}) {
    for (size_t i = 0; (i = t.find(from, i)) != std::string::npos;) t.replace(i, 4, from[0] == 'a' ? "am " : "pm ");
  }
  std::vector<Tok> out;
  size_t i = 0;
  while (i < t.size()) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (std::isdigit(c)) {
      size_t j = i;
      while (j < t.size() && (std::isdigit(static_cast<unsigned char>(t[j])) ||
                              (t[j] == ':' && j + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[j + 1])))))
        ++j;
      out.push_back({t.substr(i, j - i), true});
      i = j;
    } else if (std::isalpha(c) || c == '\'') {
      size_t j = i;
      while (j < t.size() && (std::isalpha(static_cast<unsigned char>(t[j])) || t[j] == '\'')) ++j;
      out.push_back({t.substr(i, j - i), false});
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

int WordValue(const std::string& w) {
  static const std::map<std::string, int> kW = {
      {"one", 1},  {"two", 2},   {"three", 3},  {"four", 4},    {"five", 5},   {"six", 6},    {"seven", 7},
      {"eight", 8}, {"nine", 9}, {"ten", 10},   {"eleven", 11}, {"twelve", 12}, {"thirteen", 13}, {"fourteen", 14},
      {"fifteen", 15}, {"sixteen", 16}, {"seventeen", 17}, {"eighteen", 18}, {"nineteen", 19}, {"twenty", 20}};
  auto it = kW.find(w);
  return it == kW.end() ? -1 : it->second;
}

int MonthOf(const std::string& w) {
  for (int m = 0; m < 12; ++m)
    if (w == Lower(kMonthNames[m]) || w == Lower(kMonthAbbrev[m]) || (m == 8 && w == "sept")) return m + 1;
  return 0;
}

int WeekdayOf(const std::string& w) {
  for (int d = 0; d < 7; ++d)
    if (w == Lower(kWeekdayNames[d])) return d;
  return -1;
}

std::string Hm(int h, int m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d:%02d", h, m);
  return buf;
}

void AddTimes(const std::vector<Tok>& tk, std::set<std::string>& out) {
  auto at = [&](size_t i) -> std::string { return i < tk.size() ? tk[i].s : ""; };
  auto daypart = [&](size_t i) -> int {  // +12 for pm forms, 0 am, -1 none
    const std::string a = at(i), b = at(i + 1), c = at(i + 2);
    if (a == "am") return 0;
    if (a == "pm") return 12;
    if (a == "in" && b == "the" && c == "morning") return 0;
    if (a == "in" && b == "the" && (c == "afternoon" || c == "evening")) return 12;
    if (a == "at" && b == "night") return 12;
    return -1;
  };
  for (size_t i = 0; i < tk.size(); ++i) {
    const std::string& s = tk[i].s;
    if (s == "noon" || s == "midday") out.insert("12:00");
    if (s == "midnight") out.insert("00:00");
    int h = -1, m = 0;
    if (tk[i].num) {
      const size_t colon = s.find(':');
      if (colon == std::string::npos) {
        if (s.size() <= 2) h = std::atoi(s.c_str());
      } else if (colon <= 2 && s.size() - colon == 3) {
        h = std::atoi(s.substr(0, colon).c_str()), m = std::atoi(s.substr(colon + 1).c_str());
      }
    } else if ((s == "half" || s == "quarter") && (at(i + 1) == "past" || at(i + 1) == "to")) {
      const std::string n = at(i + 2);
      const int hh = (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0]))) ? std::atoi(n.c_str()) : WordValue(n);
      if (hh >= 1 && hh <= 12) {
        const int mm = s == "half" ? 30 : at(i + 1) == "past" ? 15 : 45;
        const int base = at(i + 1) == "to" ? (hh + 11) % 12 : hh % 12;
        out.insert(Hm(base, mm));
        out.insert(Hm(base + 12, mm));
      }
      continue;
    }
    if (h < 0 || h > 24 || m > 59) continue;
    const int dp = daypart(i + 1);
    if (dp >= 0 && h >= 1 && h <= 12) {
      out.insert(Hm(h % 12 + dp, m));
    } else if (h <= 23) {
      out.insert(Hm(h, m));
    }
  }
}

void AddDates(const std::vector<Tok>& tk, const std::string& raw, std::optional<Date> today, std::set<std::string>& out) {
  // ISO dates anywhere.
  for (size_t i = 0; i + 10 <= raw.size(); ++i)
    if (auto d = ParseIsoDate(raw.substr(i, 10))) out.insert(IsoDate(*d));
  auto at = [&](size_t i) -> std::string { return i < tk.size() ? tk[i].s : ""; };
  auto year_at = [&](size_t i) -> int {
    const std::string y = at(i);
    return y.size() == 4 && std::isdigit(static_cast<unsigned char>(y[0])) ? std::atoi(y.c_str()) : 0;
  };
  auto add = [&](int y, int m, int d) {
    if (m >= 1 && m <= 12 && d >= 1 && d <= DaysInMonth(y, m)) out.insert(IsoDate(Date{y, m, d}));
  };
  auto add_md = [&](int m, int d, int year) {
    if (year) return add(year, m, d);
    if (!today) return;
    // Without a year: the first such day after the date fact (this year or next).
    for (int y : {today->y, today->y + 1}) {
      if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) continue;
      if (DaysFromCivil(Date{y, m, d}) > DaysFromCivil(*today)) {
        add(y, m, d);
        break;
      }
    }
  };
  for (size_t i = 0; i < tk.size(); ++i) {
    const int m = tk[i].num ? 0 : MonthOf(tk[i].s);
    if (m) {
      // "March 14", "March 14th, 2026", "Mar 14 2026"
      if (i + 1 < tk.size() && tk[i + 1].num && tk[i + 1].s.size() <= 2) {
        size_t j = i + 2;
        if (at(j) == "st" || at(j) == "nd" || at(j) == "rd" || at(j) == "th") ++j;
        add_md(m, std::atoi(tk[i + 1].s.c_str()), year_at(j));
      }
      // "14 March 2026", "the 14th of March"
      size_t k = i;
      if (k >= 1 && at(k - 1) == "of") --k;
      if (k >= 1 && (at(k - 1) == "st" || at(k - 1) == "nd" || at(k - 1) == "rd" || at(k - 1) == "th")) --k;
      if (k >= 1 && tk[k - 1].num && tk[k - 1].s.size() <= 2) add_md(m, std::atoi(tk[k - 1].s.c_str()), year_at(i + 1));
    }
    if (!today) continue;
    const std::string& s = tk[i].s;
    if (s == "today" || s == "tonight") out.insert(IsoDate(*today));
    if (s == "tomorrow") out.insert(IsoDate(AddDays(*today, 1)));
    if (s == "day" && at(i + 1) == "after" && at(i + 2) == "tomorrow") out.insert(IsoDate(AddDays(*today, 2)));
    const int wd = WeekdayOf(s);
    if (wd >= 0) {
      int ahead = (wd - Weekday(*today) + 7) % 7;
      if (ahead == 0) ahead = 7;
      out.insert(IsoDate(AddDays(*today, ahead)));
    }
    if (s == "in") {
      const std::string n = at(i + 1);
      int k = -1;
      if (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0]))) k = std::atoi(n.c_str());
      else if (n == "a" || n == "one") k = 1;
      else k = WordValue(n);
      if (k >= 0 && (at(i + 2) == "days" || at(i + 2) == "day")) out.insert(IsoDate(AddDays(*today, k)));
      if (k >= 0 && (at(i + 2) == "week" || at(i + 2) == "weeks")) out.insert(IsoDate(AddDays(*today, 7 * k)));
    }
  }
}

void AddNumbers(const std::string& text, std::vector<double>& out) {
  std::vector<double> base = ParseDigitNumbers(text);
  for (long long n : ParseNumberWords(text)) base.push_back(static_cast<double>(n));
  const std::string t = Lower(text);
  // "a minute", "an hour", "half an hour", "an hour and a half", "1 hour 30 minutes".
  for (const char* w : {"a minute", "an hour", "a second", "a meter", "a metre", "a week"})
    if (t.find(w) != std::string::npos) base.push_back(1);
  if (t.find("half an hour") != std::string::npos) base.insert(base.end(), {30, 0.5});
  if (t.find("an hour and a half") != std::string::npos) base.insert(base.end(), {90, 1.5});
  const std::vector<Tok> tk = Tokenize(text);
  for (size_t i = 0; i + 3 < tk.size(); ++i) {
    if (!tk[i].num || (tk[i + 1].s != "hours" && tk[i + 1].s != "hour")) continue;
    size_t j = i + 2;
    if (tk[j].s == "and") ++j;
    if (j + 1 < tk.size() && tk[j].num && (tk[j + 1].s == "minutes" || tk[j + 1].s == "minute"))
      base.push_back(std::atof(tk[i].s.c_str()) * 60 + std::atof(tk[j].s.c_str()));
  }
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
  const std::vector<Tok> tk = Tokenize(text);
  AddTimes(tk, ev.times);
  AddDates(tk, text, today, ev.dates);
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
