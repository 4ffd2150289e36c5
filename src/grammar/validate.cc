#include "grammar/validate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace needle::grammar {

using json = nlohmann::json;

const char* ViolationKindName(ViolationKind kind) {
  switch (kind) {
    case ViolationKind::kJson: return "json";
    case ViolationKind::kShape: return "shape";
    case ViolationKind::kName: return "name";
    case ViolationKind::kKey: return "key";
    case ViolationKind::kRequired: return "required";
    case ViolationKind::kType: return "type";
    case ViolationKind::kEnum: return "enum";
    case ViolationKind::kBound: return "bound";
    case ViolationKind::kMultipleOf: return "multiple_of";
    case ViolationKind::kLength: return "length";
    case ViolationKind::kPattern: return "pattern";
    case ViolationKind::kFormat: return "format";
    case ViolationKind::kItems: return "items";
    case ViolationKind::kUnique: return "unique";
  }
  return "unknown";
}

namespace {

using Result = std::optional<CallViolation>;

Result Fail(ViolationKind kind, const std::string& path, const std::string& what) {
  return CallViolation{kind, path, path + ": " + what};
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += IsUtf8Lead(uint8_t(c)) ? 1 : 0;
  return n;
}

const ByteDfa& FormatDfa(const std::string& format) {
  static const std::map<std::string, ByteDfa> dfas = [] {
    std::map<std::string, ByteDfa> m;
    for (const char* f : {"date", "time", "date-time", "email", "uri"}) m.emplace(f, CompileRegex(FormatPattern(f)));
    return m;
  }();
  return dfas.at(format);
}

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    case json::value_t::number_float: return "number";
    default: return "integer";
  }
}

bool IsIntegral(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

// Does `v` have a type the node admits (for picking a union alternative)?
bool TypeFits(const ToolGrammar& g, uint32_t id, const json& v) {
  const Node& n = g.nodes[id];
  switch (n.kind) {
    case NodeKind::kString: return v.is_string();
    case NodeKind::kNumber: return n.integer ? IsIntegral(v) : v.is_number();
    case NodeKind::kObject:
    case NodeKind::kAnyObject: return v.is_object();
    case NodeKind::kArray:
    case NodeKind::kAnyArray: return v.is_array();
    case NodeKind::kLiteral:
      for (const json& x : n.values)
        if (x.type() == v.type() || (x.is_number() && v.is_number())) return true;
      return false;
    default: return true;
  }
}

std::string Describe(const Node& n) {
  switch (n.kind) {
    case NodeKind::kString: return "string";
    case NodeKind::kNumber: return n.integer ? "integer" : "number";
    case NodeKind::kObject: return "object";
    case NodeKind::kArray: return "array";
    case NodeKind::kLiteral: {
      std::string s = "one of ";
      return s + json(n.values).dump();
    }
    default: return "value";
  }
}

Result Check(const ToolGrammar& g, uint32_t id, const json& v, const std::string& path) {
  const Node& n = g.nodes[id];
  switch (n.kind) {
    case NodeKind::kAnyArray:
    case NodeKind::kAnyObject:
      return std::nullopt;
    case NodeKind::kUnion: {
      if (id == g.any_value) return std::nullopt;
      for (uint32_t a : n.alts)
        if (TypeFits(g, a, v)) return Check(g, a, v, path);
      std::string want;
      for (uint32_t a : n.alts) want += (want.empty() ? "" : " or ") + Describe(g.nodes[a]);
      return Fail(ViolationKind::kType, path, "expected " + want + ", got " + TypeName(v));
    }
    case NodeKind::kLiteral: {
      for (const json& x : n.values)
        if (x == v) return std::nullopt;
      if (!TypeFits(g, id, v)) return Fail(ViolationKind::kType, path, "expected " + Describe(n) + ", got " + TypeName(v));
      return Fail(ViolationKind::kEnum, path, v.dump() + " is not " + Describe(n));
    }
    case NodeKind::kString: {
      if (!v.is_string()) return Fail(ViolationKind::kType, path, std::string("expected a string, got ") + TypeName(v));
      const std::string s = v.get<std::string>();
      const size_t len = CodePoints(s);
      if (len < n.min_len) return Fail(ViolationKind::kLength, path, "shorter than minLength " + std::to_string(n.min_len));
      if (len > n.max_len) return Fail(ViolationKind::kLength, path, "longer than maxLength " + std::to_string(n.max_len));
      if (!n.pattern.empty() && !n.dfa->Matches(s))
        return Fail(ViolationKind::kPattern, path, v.dump() + " does not match pattern " + json(n.pattern).dump());
      if (!n.format.empty() && (!FormatDfa(n.format).Matches(s) || !FormatSemanticsOk(n.format, s)))
        return Fail(ViolationKind::kFormat, path, v.dump() + " is not a valid " + n.format);
      return std::nullopt;
    }
    case NodeKind::kNumber: {
      if (!v.is_number() || (n.integer && !IsIntegral(v)))
        return Fail(ViolationKind::kType, path,
                    std::string("expected ") + (n.integer ? "an integer" : "a number") + ", got " + TypeName(v) +
                        (v.is_number() ? " " + v.dump() : ""));
      const double x = v.get<double>();
      if (n.has_min && x < n.minimum) return Fail(ViolationKind::kBound, path, v.dump() + " is below minimum " + json(n.minimum).dump());
      if (n.has_max && x > n.maximum) return Fail(ViolationKind::kBound, path, v.dump() + " is above maximum " + json(n.maximum).dump());
      if (n.has_xmin && x <= n.xminimum)
        return Fail(ViolationKind::kBound, path, v.dump() + " is not above exclusiveMinimum " + json(n.xminimum).dump());
      if (n.has_xmax && x >= n.xmaximum)
        return Fail(ViolationKind::kBound, path, v.dump() + " is not below exclusiveMaximum " + json(n.xmaximum).dump());
      if (n.has_multiple) {
        bool ok;
        const double m = n.multiple_of;
        if ((v.is_number_integer() || v.is_number_unsigned()) && std::floor(m) == m && m < 9.2e18) {
          const int64_t mi = int64_t(m);
          ok = v.is_number_unsigned() ? v.get<uint64_t>() % uint64_t(mi) == 0 : v.get<int64_t>() % mi == 0;
        } else {
          const double q = x / m;
          ok = std::fabs(q - std::round(q)) <= 1e-9 * std::max(1.0, std::fabs(q));
        }
        if (!ok) return Fail(ViolationKind::kMultipleOf, path, v.dump() + " is not a multiple of " + json(m).dump());
      }
      return std::nullopt;
    }
    case NodeKind::kArray: {
      if (!v.is_array()) return Fail(ViolationKind::kType, path, std::string("expected an array, got ") + TypeName(v));
      for (size_t i = 0; i < v.size(); ++i)
        if (Result r = Check(g, n.items, v[i], path + "[" + std::to_string(i) + "]")) return r;
      if (v.size() < n.min_items) return Fail(ViolationKind::kItems, path, "fewer than minItems " + std::to_string(n.min_items));
      if (v.size() > n.max_items) return Fail(ViolationKind::kItems, path, "more than maxItems " + std::to_string(n.max_items));
      if (n.unique_items)
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t j = 0; j < i; ++j)
            if (v[i] == v[j])
              return Fail(ViolationKind::kUnique, path, "items " + std::to_string(j) + " and " + std::to_string(i) + " are equal (uniqueItems)");
      return std::nullopt;
    }
    case NodeKind::kObject: {
      if (!v.is_object()) return Fail(ViolationKind::kType, path, std::string("expected an object, got ") + TypeName(v));
      for (const auto& [k, x] : v.items()) {
        const auto it = std::find(n.prop_names.begin(), n.prop_names.end(), k);
        const std::string sub = path + "." + k;
        if (it == n.prop_names.end()) return Fail(ViolationKind::kKey, sub, "is not a declared property");
        if (Result r = Check(g, n.prop_nodes[size_t(it - n.prop_names.begin())], x, sub)) return r;
      }
      for (size_t i = 0; i < n.prop_names.size(); ++i)
        if (((n.required >> i) & 1) && !v.contains(n.prop_names[i]))
          return Fail(ViolationKind::kRequired, path, "required key \"" + n.prop_names[i] + "\" is missing");
      return std::nullopt;
    }
    case NodeKind::kCalls:
    case NodeKind::kCall:
      break;
  }
  return std::nullopt;
}

}  // namespace

std::optional<CallViolation> ValidateCall(std::string_view calls_json, const ToolGrammar& g) {
  json calls;
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  try {
    calls = json::parse(calls_json, [&](int, json::parse_event_t ev, json& parsed) {
      if (ev == json::parse_event_t::object_start) keys.emplace_back();
      if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (ev == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
          duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    return Fail(ViolationKind::kJson, "calls", std::string("not valid JSON (") + e.what() + ")");
  }
  if (!duplicate.empty()) return Fail(ViolationKind::kJson, "calls", "duplicate key \"" + duplicate + "\"");
  if (!calls.is_array()) return Fail(ViolationKind::kShape, "calls", "expected an array of calls");
  for (size_t i = 0; i < calls.size(); ++i) {
    const json& c = calls[i];
    const std::string path = "[" + std::to_string(i) + "]";
    if (!c.is_object() || c.size() != 2 || !c.contains("name") || !c.contains("arguments"))
      return Fail(ViolationKind::kShape, path, "expected {\"name\": ..., \"arguments\": {...}}");
    if (!c["name"].is_string()) return Fail(ViolationKind::kShape, path + ".name", "expected a string");
    const std::string name = c["name"].get<std::string>();
    const int tool = g.FindTool(name);
    if (tool < 0) return Fail(ViolationKind::kName, path + ".name", "\"" + name + "\" is not a declared tool");
    if (!c["arguments"].is_object()) return Fail(ViolationKind::kShape, path + ".arguments", "expected an object");
    if (Result r = Check(g, g.tools()[size_t(tool)].args, c["arguments"], path + ".arguments")) return r;
  }
  return std::nullopt;
}

std::optional<CallViolation> ValidateCall(std::string_view calls_json, std::string_view tools_json) {
  return ValidateCall(calls_json, *ToolGrammar::Compile(tools_json));
}

}  // namespace needle::grammar
