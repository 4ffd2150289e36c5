#include "grammar/schema_compose.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "base/error.h"  // Error

namespace needle::grammar {
namespace {

using ojson = nlohmann::ordered_json;

bool IsAnnotationKey(const std::string& k) {
  static const std::set<std::string> a = {"title",      "description", "default",  "examples", "example",
                                          "$comment",   "deprecated",  "readOnly", "writeOnly"};
  return a.count(k) || k.rfind("x-", 0) == 0;
}

// Two type names that admit the same values (integer is a kind of number).
bool TypesOverlap(const std::string& a, const std::string& b) {
  auto numeric = [](const std::string& t) { return t == "integer" || t == "number"; };
  return a == b || (numeric(a) && numeric(b));
}

// The value of type t that v spells exactly, if any: a string of digits as an
// integer or number, "true"/"True" and "false"/"False" as booleans, a number
// or boolean as its JSON text for a string.
std::optional<ojson> SpelledAs(const ojson& v, const std::string& t) {
  if (t == "string" && (v.is_number() || v.is_boolean())) return ojson(v.dump());
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  if (t == "boolean") {
    if (s == "true" || s == "True") return ojson(true);
    if (s == "false" || s == "False") return ojson(false);
    return std::nullopt;
  }
  if (t != "integer" && t != "number") return std::nullopt;
  const ojson parsed = ojson::parse(s, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_number() || parsed.dump() != s) return std::nullopt;  // "01", "1e3", " 2" are not spelled numbers
  return HasSchemaType(parsed, t) ? std::optional<ojson>(parsed) : std::nullopt;
}

const char* TypeOfValue(const ojson& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_null()) return "null";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return v.is_number_integer() || v.is_number_unsigned() ? "integer" : "number";
}

class Composer {
 public:
  Composer(const ojson& root, std::string tool, std::vector<std::string>* warnings)
      : root_(root), tool_(std::move(tool)), warnings_(warnings) {}

  ojson Run() { return Rewrite(root_, "parameters"); }

 private:
  void Warn(const std::string& path, const std::string& what) { warnings_->push_back(tool_ + ": " + path + ": " + what); }

  ojson Rewrite(const ojson& in, const std::string& path) {
    if (!in.is_object()) return in;
    if (++nodes_ > kMaxComposedNodes)
      throw Error(ErrorCode::kUnsupported, tool_ + ": " + path + ": more than " + std::to_string(kMaxComposedNodes) +
                                               " schemas once its references are inlined");
    ojson s = in;
    s.erase("$defs");
    s.erase("definitions");
    if (s.contains("$ref")) {
      ojson target = Resolve(s["$ref"], path);
      s.erase("$ref");
      // The reference's own keywords describe this use: its annotations win.
      JoinInto(target, Rewrite(s, path), path, /*annotations_win=*/true);
      return target;
    }
    if (s.contains("properties") && s["properties"].is_object())
      for (auto& [k, v] : s["properties"].items()) v = Rewrite(v, path + ".properties." + k);
    if (s.contains("items") && s["items"].is_object()) s["items"] = Rewrite(s["items"], path + ".items");
    if (s.contains("additionalProperties") && s["additionalProperties"].is_object())
      s["additionalProperties"] = Rewrite(s["additionalProperties"], path + ".additionalProperties");
    if (s.contains("allOf") && s["allOf"].is_array() &&
        std::all_of(s["allOf"].begin(), s["allOf"].end(), [](const ojson& p) { return p.is_object(); })) {
      const ojson parts = s["allOf"];
      s.erase("allOf");
      for (size_t i = 0; i < parts.size(); ++i)
        JoinInto(s, Rewrite(parts[i], path + ".allOf[" + std::to_string(i) + "]"), path, /*annotations_win=*/false);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key) || !s[key].is_array()) continue;
      ojson branches = ojson::array();
      for (size_t i = 0; i < s[key].size(); ++i)
        branches.push_back(Rewrite(s[key][i], path + "." + key + "[" + std::to_string(i) + "]"));
      s[key] = std::move(branches);
      if (std::optional<ojson> merged = MergeAlternatives(s, key)) s = std::move(*merged);
    }
    if (s.contains("nullable")) {
      if (s["nullable"] == true) AddNull(s);
      s.erase("nullable");
    }
    ReadContradictoryEnum(s, path);
    return s;
  }

  // An enum none of whose values has the declared type admits nothing as
  // JSON Schema reads it, yet real tool sets write them ({"type": "boolean",
  // "enum": ["True", "False", "dontcare"]}, an array whose enum lists its
  // items). Rejecting the tool set for one of them loses every other tool,
  // so the declaration is read for what it evidently means, with a warning:
  // an array's scalar enum lists its items' values; otherwise each value is
  // taken in a declared type it spells exactly ("2" as 2, "True" as true, 7
  // as "7"), else as written, and the type widened to what the enum holds.
  void ReadContradictoryEnum(ojson& s, const std::string& path) {
    if (!s.contains("type") || s.contains("enum") == s.contains("const")) return;  // (both: the compiler judges)
    std::vector<std::string> types;
    const ojson& declared = s["type"];
    if (declared.is_string()) types.push_back(declared.get<std::string>());
    for (const ojson& t : declared.is_array() ? declared : ojson::array()) {
      if (!t.is_string()) return;
      types.push_back(t.get<std::string>());
    }
    const ojson values = s.contains("enum") ? s["enum"] : ojson::array({s["const"]});
    if (types.empty() || !values.is_array() || values.empty()) return;
    for (const ojson& v : values)
      for (const std::string& t : types)
        if (HasSchemaType(v, t)) return;  // satisfiable: JSON Schema's reading stands
    const bool array_values = std::any_of(values.begin(), values.end(), [](const ojson& v) { return v.is_array(); });
    if (std::count(types.begin(), types.end(), "array") && !array_values) {
      s.erase("enum");
      s.erase("const");
      if (s.contains("items") && (!s["items"].is_object() || s["items"].contains("enum") || s["items"].contains("const"))) {
        Warn(path, "enum values are not arrays and the items say which values they take; the array's enum is ignored");
      } else {
        Warn(path, "enum values are not arrays; read as the values of the array's items");
        if (!s.contains("items")) s["items"] = ojson::object();
        s["items"]["enum"] = values;
      }
      return;
    }
    ojson admitted = ojson::array();
    for (const ojson& v : values) {
      ojson written = v;
      for (const std::string& t : types)
        if (std::optional<ojson> spelled = SpelledAs(v, t)) {
          written = std::move(*spelled);
          break;
        }
      if (std::find(admitted.begin(), admitted.end(), written) == admitted.end()) admitted.push_back(std::move(written));
      const std::string t = TypeOfValue(admitted.back());
      if (std::none_of(types.begin(), types.end(), [&](const std::string& u) { return u == t || (u == "number" && t == "integer"); }))
        types.push_back(t);
    }
    Warn(path, "no enum value has the declared type; each is read in that type where it spells one, else as written");
    s.erase("const");
    s["enum"] = std::move(admitted);
    s["type"] = types.size() == 1 ? ojson(types[0]) : ojson(types);
  }

  // The rewritten target of a reference, or {} (any value) with a warning.
  ojson Resolve(const ojson& ref, const std::string& path) {
    if (!ref.is_string()) {
      Warn(path + ".$ref", "expected a string; any value is admitted");
      return ojson::object();
    }
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') {
      Warn(path, "reference '" + r + "' points outside the tool's parameters; any value is admitted");
      return ojson::object();
    }
    if (std::find(refs_.begin(), refs_.end(), r) != refs_.end()) {
      Warn(path, "reference '" + r + "' recurses; any value is admitted from here down");
      return ojson::object();
    }
    const ojson* target = nullptr;
    try {
      const ojson::json_pointer pointer(r.substr(1));
      if (root_.contains(pointer)) target = &root_.at(pointer);
    } catch (const nlohmann::json::exception&) {
    }
    if (!target) {
      Warn(path, "reference '" + r + "' does not resolve; any value is admitted");
      return ojson::object();
    }
    refs_.push_back(r);
    ojson out = Rewrite(*target, path);
    refs_.pop_back();
    return out;
  }

  // src's keywords into dst: required lists and properties merged; a keyword
  // both give differently keeps dst's (a warning unless an annotation), or
  // src's annotation when annotations_win.
  void JoinInto(ojson& dst, const ojson& src, const std::string& path, bool annotations_win) {
    if (!dst.is_object()) dst = ojson::object();
    if (!src.is_object()) return;
    for (const auto& [k, v] : src.items()) {
      if (!dst.contains(k)) {
        dst[k] = v;
      } else if (dst[k] == v) {
      } else if (IsAnnotationKey(k)) {
        if (annotations_win) dst[k] = v;
      } else if (k == "required" && dst[k].is_array() && v.is_array()) {
        for (const ojson& r : v)
          if (std::find(dst[k].begin(), dst[k].end(), r) == dst[k].end()) dst[k].push_back(r);
      } else if (k == "properties" && dst[k].is_object() && v.is_object()) {
        for (const auto& [name, schema] : v.items()) {
          if (!dst[k].contains(name)) dst[k][name] = schema;
          else if (dst[k][name] != schema) Warn(path + ".properties." + name, "declared twice differently; the first is kept");
        }
      } else {
        Warn(path, "keyword '" + k + "' is given two different values; the first is kept");
      }
    }
  }

  // anyOf / oneOf as one schema with a type array, when each branch has one
  // type of its own (see the header); nullopt leaves the keyword as it was.
  static std::optional<ojson> MergeAlternatives(const ojson& s, const char* key) {
    const ojson& branches = s[key];
    ojson out = s;
    out.erase(key);
    if (branches.empty()) return std::nullopt;
    std::vector<std::string> types;
    const ojson* enum_branch = nullptr;
    bool has_null = false;
    for (const ojson& b : branches) {
      if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) return std::nullopt;
      const std::string t = b["type"].get<std::string>();
      for (const std::string& u : types)
        if (TypesOverlap(t, u)) return std::nullopt;
      types.push_back(t);
      has_null = has_null || t == "null";
      if (b.contains("enum") || b.contains("const")) {
        if (enum_branch) return std::nullopt;
        enum_branch = &b;
      }
      for (const auto& [k, v] : b.items()) {
        if (k == "type" || k == "enum" || k == "const") continue;
        if (IsAnnotationKey(k)) {
          if (!out.contains(k)) out[k] = v;
        } else if (out.contains(k) && out[k] != v) {
          return std::nullopt;  // the outer schema or another branch says otherwise
        } else {
          out[k] = v;
        }
      }
    }
    if (enum_branch) {
      for (const ojson& b : branches)
        if (&b != enum_branch && b["type"] != "null") return std::nullopt;
      ojson values = enum_branch->contains("enum") ? (*enum_branch)["enum"] : ojson::array({(*enum_branch)["const"]});
      if (!values.is_array()) return std::nullopt;
      if (has_null && std::find(values.begin(), values.end(), nullptr) == values.end()) values.push_back(nullptr);
      if (out.contains("enum")) return std::nullopt;
      out["enum"] = std::move(values);
    }
    if (out.contains("type")) {  // an outer type must admit every branch's
      const ojson& outer = out["type"];
      for (const std::string& t : types) {
        const bool listed = outer.is_string() ? outer == t : outer.is_array() && std::find(outer.begin(), outer.end(), t) != outer.end();
        if (!listed) return std::nullopt;
      }
    }
    out["type"] = types.size() == 1 ? ojson(types[0]) : ojson(types);
    return out;
  }

  static void AddNull(ojson& s) {
    if (s.contains("type")) {
      ojson& t = s["type"];
      if (t.is_string() && t != "null") t = ojson::array({t, "null"});
      else if (t.is_array() && std::find(t.begin(), t.end(), "null") == t.end()) t.push_back("null");
    }
    if (s.contains("enum") && s["enum"].is_array() && std::find(s["enum"].begin(), s["enum"].end(), nullptr) == s["enum"].end())
      s["enum"].push_back(nullptr);
  }

  const ojson& root_;
  const std::string tool_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> refs_;  // references being inlined, outermost first
  size_t nodes_ = 0;
};

}  // namespace

nlohmann::ordered_json ComposeToolSchemas(const nlohmann::ordered_json& tools, std::vector<std::string>* warnings) {
  if (!tools.is_array()) return tools;
  ojson out = tools;
  for (ojson& t : out) {
    if (!t.is_object() || !t.contains("parameters") || !t["parameters"].is_object()) continue;
    const std::string name = t.contains("name") && t["name"].is_string() ? t["name"].get<std::string>() : "";
    const ojson parameters = t["parameters"];
    t["parameters"] = Composer(parameters, "tool '" + name + "'", warnings).Run();
  }
  return out;
}

}  // namespace needle::grammar
