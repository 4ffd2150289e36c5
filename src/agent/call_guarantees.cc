#include "agent/call_guarantees.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace needle {
namespace {

using Json = nlohmann::ordered_json;

void TrimIn(Json& v, bool* changed) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
    const std::string t = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    if (t != s) v = t, *changed = true;
  } else if (v.is_object() || v.is_array()) {
    for (auto& x : v) TrimIn(x, changed);
  }
}

// The argument nodes of a call's tool (nullptr: not a declared tool's call).
const grammar::Node* ArgsNode(const Json& call, const grammar::ToolGrammar& g) {
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string() || !call.contains("arguments")) return nullptr;
  const int t = g.FindTool(call["name"].get_ref<const std::string&>());
  if (t < 0) return nullptr;
  const grammar::Node& n = g.nodes[g.tools()[size_t(t)].args];
  return n.kind == grammar::NodeKind::kObject ? &n : nullptr;
}

bool InBounds(const grammar::Node& n, double x) {
  if (n.has_min && x < n.minimum) return false;
  if (n.has_max && x > n.maximum) return false;
  if (n.has_xmin && x <= n.xminimum) return false;
  if (n.has_xmax && x >= n.xmaximum) return false;
  if (n.integer && x != std::floor(x)) return false;
  return true;
}

bool Said(const std::vector<double>& said, double x) { return std::find(said.begin(), said.end(), x) != said.end(); }

// Each direct number argument of each call: f(node, key, value).
template <typename F>
void ForEachNumberArgument(Json& calls, const grammar::ToolGrammar& g, F f) {
  for (auto& call : calls) {
    const grammar::Node* args = ArgsNode(call, g);
    if (!args || !call["arguments"].is_object()) continue;
    for (size_t i = 0; i < args->prop_names.size(); ++i) {
      const grammar::Node& n = g.nodes[args->prop_nodes[i]];
      auto it = call["arguments"].find(args->prop_names[i]);
      if (n.kind != grammar::NodeKind::kNumber || it == call["arguments"].end() || !it->is_number()) continue;
      f(n, args->prop_names[i], *it);
    }
  }
}

std::string Digits(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", std::fabs(x));
  std::string d;
  for (const char* p = buf; *p && *p != 'e'; ++p)
    if (*p >= '0' && *p <= '9') d += *p;
  return d;
}

std::string Number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  return buf;
}

// How often `needle` occurs in `text`, ASCII case aside.
size_t CountFolded(std::string_view text, std::string_view needle) {
  if (needle.empty() || needle.size() > text.size()) return 0;
  size_t n = 0;
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    bool eq = true;
    for (size_t k = 0; k < needle.size() && eq; ++k) {
      eq = std::tolower(static_cast<unsigned char>(text[i + k])) == std::tolower(static_cast<unsigned char>(needle[k]));
    }
    n += eq;
  }
  return n;
}

void DropRepeatsIn(Json& v, std::string_view request, size_t* dropped) {
  if (v.is_object()) {
    for (auto& x : v) DropRepeatsIn(x, request, dropped);
    return;
  }
  if (!v.is_array()) return;
  for (auto& x : v) DropRepeatsIn(x, request, dropped);
  Json kept = Json::array();
  for (const auto& item : v) {
    const size_t before = size_t(std::count(kept.begin(), kept.end(), item));
    if (before > 0) {
      // Said as often as it would now appear? ("two 5s and a 3": [5, 5, 3] stays.)
      const std::string text = item.is_string() ? item.get<std::string>() : item.is_number() ? Number(item.get<double>()) : "";
      if (text.empty() || CountFolded(request, text) <= before) {
        ++*dropped;
        continue;
      }
    }
    kept.push_back(item);
  }
  if (kept.size() != v.size()) v = std::move(kept);
}

}  // namespace

void TrimStringValues(Envelope& env) {
  bool changed = false;
  for (auto& call : env.function_calls) {
    if (call.is_object() && call.contains("arguments")) TrimIn(call["arguments"], &changed);
  }
}

std::string NonFiniteNumber(const Envelope& env) {
  std::string bad;
  auto walk = [&](auto&& self, const Json& v, const std::string& path) -> void {
    if (v.is_number_float() && !std::isfinite(v.get<double>()) && bad.empty()) bad = "the call's " + path + " is not a finite number";
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) self(self, it.value(), path + "." + it.key());
    } else if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) self(self, v[i], path + "[" + std::to_string(i) + "]");
    }
  };
  for (const auto& call : env.function_calls) {
    if (call.is_object() && call.contains("arguments")) walk(walk, call["arguments"], call.value("name", std::string("call")));
  }
  return bad;
}

void KeepWrittenSigns(Envelope& env, const grammar::ToolGrammar& g, const std::vector<double>& said) {
  ForEachNumberArgument(env.function_calls, g, [&](const grammar::Node& n, const std::string& key, Json& value) {
    const double x = value.get<double>();
    if (x == 0.0 || Said(said, x) || !Said(said, -x) || !InBounds(n, -x)) return;
    if (value.is_number_float()) {
      value = -x;
    } else {
      value = -value.get<int64_t>();
    }
    env.warnings.push_back("argument " + key + ": the sign the request writes (" + Number(-x) + ") kept");
  });
}

std::string ClampedStatedNumber(const Envelope& env, const grammar::ToolGrammar& g, const std::vector<double>& said) {
  std::string why;
  Json calls = env.function_calls;
  // Numbers the calls hold: a stated number another argument took is not a cut one.
  std::vector<double> held;
  ForEachNumberArgument(calls, g, [&](const grammar::Node&, const std::string&, Json& value) { held.push_back(value.get<double>()); });
  ForEachNumberArgument(calls, g, [&](const grammar::Node& n, const std::string& key, Json& value) {
    const double x = value.get<double>();
    if (!why.empty() || Said(said, x) || !(n.has_min || n.has_max || n.has_xmin || n.has_xmax)) return;
    const std::string digits = Digits(x);
    for (double s : said) {
      if (InBounds(n, s) || (s < 0) != (x < 0) || Said(held, s)) continue;
      const bool above = (n.has_max && s > n.maximum) || (n.has_xmax && s >= n.xmaximum);
      const double bound = above ? (n.has_max ? n.maximum : n.xmaximum) : (n.has_min ? n.minimum : n.xminimum);
      const std::string sd = Digits(s);
      const bool cut = sd.size() > digits.size() && sd.compare(0, digits.size(), digits) == 0;
      if (!cut && x != bound) continue;
      why = "the request says " + Number(s) + ", " + (above ? "above the maximum " : "below the minimum ") + Number(bound) + " of " + key;
      return;
    }
  });
  return why;
}

std::string PlannedNumberOutOfBounds(std::string_view reasoning, const Envelope& env, const grammar::ToolGrammar& g,
                                     const std::vector<double>& said) {
  // The plan's items "tool: 'span' -> key value; ... | tool: ...".
  struct Item {
    std::string tool, key, value;
  };
  std::vector<Item> items;
  std::string tool, item;
  auto close_item = [&] {
    const size_t arrow = item.rfind("->");  // spans before it may hold an arrow
    if (arrow != std::string::npos) {
      std::string rest = item.substr(arrow + 2);
      const size_t b = rest.find_first_not_of(' ');
      rest = b == std::string::npos ? "" : rest.substr(b);
      const size_t space = rest.find(' ');
      if (space != std::string::npos) items.push_back({tool, rest.substr(0, space), rest.substr(space + 1)});
    }
    item.clear();
  };
  bool named = false;
  PlanSpanReader spans;
  for (char c : reasoning) {
    if (spans.Outside(c)) {
      if (c == ':' && !named) {
        tool = item, named = true, item.clear();
        while (!tool.empty() && tool.front() == ' ') tool.erase(0, 1);
        continue;
      }
      if (c == ';' || c == '|') {
        close_item();
        if (c == '|') named = false, tool.clear();
        continue;
      }
    }
    item += c;
  }
  close_item();
  for (const Item& it : items) {
    char* end = nullptr;
    const double planned = std::strtod(it.value.c_str(), &end);
    if (it.value.empty() || end != it.value.c_str() + it.value.size() || !std::isfinite(planned) || !Said(said, planned)) continue;
    bool carried = false, declared = false;
    const grammar::Node* node = nullptr;
    for (const auto& call : env.function_calls) {
      if (!call.is_object() || call.value("name", std::string()) != it.tool) continue;
      const grammar::Node* args = ArgsNode(call, g);
      if (!args) continue;
      for (size_t i = 0; i < args->prop_names.size(); ++i) {
        if (args->prop_names[i] != it.key || g.nodes[args->prop_nodes[i]].kind != grammar::NodeKind::kNumber) continue;
        declared = true, node = &g.nodes[args->prop_nodes[i]];
        const auto v = call["arguments"].find(it.key);
        carried = carried || (v != call["arguments"].end() && v->is_number() && v->get<double>() == planned);
      }
    }
    if (!declared || carried || InBounds(*node, planned)) continue;
    const grammar::Node& n = *node;
    const bool above = (n.has_max && planned > n.maximum) || (n.has_xmax && planned >= n.xmaximum);
    const bool below = (n.has_min && planned < n.minimum) || (n.has_xmin && planned <= n.xminimum);
    if (!above && !below) continue;  // only a bound is reported (an integer's fraction is the model's to round)
    const double bound = above ? (n.has_max ? n.maximum : n.xmaximum) : (n.has_min ? n.minimum : n.xminimum);
    return "the request says " + Number(planned) + ", " + (above ? "above the maximum " : "below the minimum ") + Number(bound) +
           " of " + it.key;
  }
  return "";
}

void DropRepeatedArrayItems(Envelope& env, std::string_view request) {
  size_t dropped = 0;
  for (auto& call : env.function_calls) {
    if (call.is_object() && call.contains("arguments")) DropRepeatsIn(call["arguments"], request, &dropped);
  }
  if (dropped > 0) env.warnings.push_back("dropped " + std::to_string(dropped) + " repeated array item(s)");
}

}  // namespace needle
