#include "data/schema_check.h"

#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include "data/words.h"  // ParseIsoDate

namespace needle::data {

namespace {

bool Digits(const std::string& s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// HH:MM or HH:MM:SS starting at `at`; returns the length consumed (0 = none).
size_t ClockAt(const std::string& s, size_t at) {
  if (!Digits(s, at, 2) || at + 5 > s.size() || s[at + 2] != ':' || !Digits(s, at + 3, 2)) return 0;
  const int h = std::stoi(s.substr(at, 2)), m = std::stoi(s.substr(at + 3, 2));
  if (h > 23 || m > 59) return 0;
  if (at + 8 <= s.size() && s[at + 5] == ':' && Digits(s, at + 6, 2)) return std::stoi(s.substr(at + 6, 2)) <= 59 ? 8 : 0;
  return 5;
}

size_t Utf8Length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string TypeOf(const ojson& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) return std::floor(v.get<double>()) == v.get<double>() ? "integer-valued number" : "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool HasType(const ojson& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer() || v.is_number_unsigned() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  if (t == "null") return v.is_null();
  return true;  // unknown types are ignored (SPEC §9: never a crash)
}

}  // namespace

bool IsFormat(const std::string& format, const std::string& s) {
  if (format == "date") return ParseIsoDate(s).has_value();
  if (format == "time") {
    const size_t n = ClockAt(s, 0);
    return n && n == s.size();
  }
  if (format == "date-time") {
    if (s.size() < 16 || !ParseIsoDate(s.substr(0, 10)) || (s[10] != 'T' && s[10] != ' ')) return false;
    const size_t n = ClockAt(s, 11);
    if (!n) return false;
    std::string rest = s.substr(11 + n);
    if (!rest.empty() && rest[0] == '.') {  // fractional seconds
      size_t i = 1;
      while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
      if (i == 1) return false;
      rest = rest.substr(i);
    }
    if (rest.empty() || rest == "Z") return true;
    return rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && ClockAt(rest, 1) == 5;
  }
  if (format == "email") {
    const size_t at = s.find('@');
    return at != std::string::npos && at > 0 && s.find('@', at + 1) == std::string::npos &&
           s.find('.', at) != std::string::npos && s.back() != '.' && s.find(' ') == std::string::npos;
  }
  if (format == "uri") {
    const size_t colon = s.find(':');
    if (colon == std::string::npos || colon == 0 || s.find(' ') != std::string::npos) return false;
    for (size_t i = 0; i < colon; ++i)
      if (!(std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '+' || s[i] == '-' || s[i] == '.')) return false;
    return std::isalpha(static_cast<unsigned char>(s[0])) != 0;
  }
  return true;  // unknown formats are not enforced
}

std::vector<std::string> ValidateValue(const ojson& v, const ojson& schema, const std::string& path) {
  std::vector<std::string> out;
  if (!schema.is_object()) return out;
  auto fail = [&](const std::string& what) { out.push_back(path + ": " + what); };
  if (schema.contains("type")) {
    const ojson& t = schema["type"];
    bool ok = false;
    if (t.is_string()) ok = HasType(v, t.get<std::string>());
    else if (t.is_array())
      for (const auto& x : t) ok = ok || (x.is_string() && HasType(v, x.get<std::string>()));
    else ok = true;
    if (!ok) {
      fail("expected type " + t.dump() + ", got " + TypeOf(v));
      return out;
    }
  }
  if (schema.contains("enum") && schema["enum"].is_array()) {
    bool found = false;
    for (const auto& e : schema["enum"]) found = found || e == v;
    if (!found) fail("value " + v.dump() + " is not in enum " + schema["enum"].dump());
  }
  if (schema.contains("const") && schema["const"] != v) fail("value " + v.dump() + " is not const " + schema["const"].dump());
  if (v.is_number()) {
    const double x = v.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>()) fail("below minimum " + schema["minimum"].dump());
    if (schema.contains("maximum") && x > schema["maximum"].get<double>()) fail("above maximum " + schema["maximum"].dump());
    if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number() && x <= schema["exclusiveMinimum"].get<double>())
      fail("not above exclusiveMinimum " + schema["exclusiveMinimum"].dump());
    if (schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_number() && x >= schema["exclusiveMaximum"].get<double>())
      fail("not below exclusiveMaximum " + schema["exclusiveMaximum"].dump());
    if (schema.contains("multipleOf") && schema["multipleOf"].is_number()) {
      const double m = schema["multipleOf"].get<double>();
      if (m > 0 && std::fabs(x / m - std::round(x / m)) > 1e-9) fail("not a multiple of " + schema["multipleOf"].dump());
    }
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    const size_t n = Utf8Length(s);
    if (schema.contains("minLength") && n < schema["minLength"].get<size_t>()) fail("shorter than minLength");
    if (schema.contains("maxLength") && n > schema["maxLength"].get<size_t>()) fail("longer than maxLength");
    if (schema.contains("format") && schema["format"].is_string() && !IsFormat(schema["format"].get<std::string>(), s))
      fail("\"" + s + "\" is not a valid " + schema["format"].get<std::string>());
    if (schema.contains("pattern") && schema["pattern"].is_string()) {
      try {
        if (!std::regex_search(s, std::regex(schema["pattern"].get<std::string>(), std::regex::ECMAScript)))
          fail("\"" + s + "\" does not match pattern " + schema["pattern"].get<std::string>());
      } catch (const std::regex_error&) {
        // An unsupported pattern is ignored, never a crash.
      }
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>()) fail("fewer than minItems");
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) fail("more than maxItems");
    if (schema.value("uniqueItems", false)) {
      std::set<std::string> seen;
      for (const auto& x : v)
        if (!seen.insert(x.dump()).second) fail("items are not unique");
    }
    if (schema.contains("items"))
      for (size_t i = 0; i < v.size(); ++i) {
        auto sub = ValidateValue(v[i], schema["items"], path + "[" + std::to_string(i) + "]");
        out.insert(out.end(), sub.begin(), sub.end());
      }
  }
  if (v.is_object()) {
    const ojson props = schema.contains("properties") ? schema["properties"] : ojson::object();
    for (const auto& [k, x] : v.items()) {
      if (!props.contains(k)) {
        fail("key \"" + k + "\" is not a declared property");
        continue;
      }
      auto sub = ValidateValue(x, props[k], path + "." + k);
      out.insert(out.end(), sub.begin(), sub.end());
    }
    if (schema.contains("required"))
      for (const auto& r : schema["required"])
        if (!v.contains(r.get<std::string>())) fail("missing required \"" + r.get<std::string>() + "\"");
  }
  return out;
}

std::vector<std::string> ValidateCalls(const ojson& calls, const ojson& tools) {
  std::vector<std::string> out;
  if (!calls.is_array()) return {"calls: not an array"};
  for (size_t i = 0; i < calls.size(); ++i) {
    const ojson& c = calls[i];
    const std::string where = "call " + std::to_string(i);
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("arguments") ||
        !c["arguments"].is_object() || c.size() != 2) {
      out.push_back(where + ": must be {\"name\": string, \"arguments\": object}");
      continue;
    }
    const std::string name = c["name"].get<std::string>();
    const ojson* tool = nullptr;
    for (const auto& t : tools)
      if (t.value("name", "") == name) tool = &t;
    if (!tool) {
      out.push_back(where + ": tool \"" + name + "\" is not declared");
      continue;
    }
    ojson params = tool->contains("parameters") ? (*tool)["parameters"] : ojson{{"type", "object"}};
    auto sub = ValidateValue(c["arguments"], params, where + " " + name);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

}  // namespace needle::data
