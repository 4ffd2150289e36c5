#include "bfcl.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace needle::cli::bfcl {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

[[noreturn]] void Bad(const std::string& what) { throw Error(ErrorCode::kInvalidArgument, "BFCL example: " + what); }

// JSON Schema types for BFCL's Python type names.
void ConvertTypes(ojson& node) {
  if (node.is_array()) {
    for (ojson& n : node) ConvertTypes(n);
    return;
  }
  if (!node.is_object()) return;
  if (node.contains("type") && node["type"].is_string()) {
    const std::string t = node["type"].get<std::string>();
    if (t == "dict") node["type"] = "object";
    else if (t == "float") node["type"] = "number";
    else if (t == "tuple") node["type"] = "array";
    else if (t == "any") node.erase("type");
  }
  if (node.contains("properties") && node["properties"].is_object()) {
    for (auto& [name, sub] : node["properties"].items()) ConvertTypes(sub);
  }
  if (node.contains("items")) ConvertTypes(node["items"]);
}

// Python's type of a JSON value, as BFCL's checker sees json.loads' result.
// kUnknown: no type (an undeclared or unknown type name, no acceptable value).
enum class PyType { kUnknown, kNull, kStr, kInt, kFloat, kBool, kList, kDict };

PyType TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::string: return PyType::kStr;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return PyType::kInt;
    case json::value_t::number_float: return PyType::kFloat;
    case json::value_t::boolean: return PyType::kBool;
    case json::value_t::array: return PyType::kList;
    case json::value_t::object: return PyType::kDict;
    default: return PyType::kNull;
  }
}

// BFCL's Python mapping of its type names ("any" is checked as a string).
PyType DeclaredType(const std::string& t) {
  if (t == "string" || t == "any") return PyType::kStr;
  if (t == "integer") return PyType::kInt;
  if (t == "float") return PyType::kFloat;
  if (t == "boolean") return PyType::kBool;
  if (t == "array" || t == "tuple") return PyType::kList;
  if (t == "dict") return PyType::kDict;
  return PyType::kUnknown;
}

bool IsOptionalMark(const json& v) { return v.is_string() && v.get<std::string>().empty(); }

// The type of the first acceptable value that is not the optional mark.
PyType AnswerType(const json& acceptable) {
  for (const json& a : acceptable) {
    if (!IsOptionalMark(a)) return TypeOf(a);
  }
  return PyType::kUnknown;
}

// Python's ==: numbers (and booleans) by value, containers element-wise.
bool PyEqual(const json& a, const json& b) {
  const bool an = a.is_number() || a.is_boolean(), bn = b.is_number() || b.is_boolean();
  if (an && bn) {
    auto num = [](const json& v) { return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>(); };
    return num(a) == num(b);
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!PyEqual(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key()) || !PyEqual(it.value(), b[it.key()])) return false;
    }
    return true;
  }
  return a == b;
}

bool PyIn(const json& v, const json& list) {
  for (const json& x : list) {
    if (PyEqual(v, x)) return true;
  }
  return false;
}

// Lower-cased, without spaces or ,./-_*^, single quotes as double: so that
// "April 1, 2024" and "april 1 2024" meet.
std::string Standardize(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view(" ,./-_*^").find(c) != std::string_view::npos) continue;
    out += c == '\'' ? '"' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

json StandardizeStrings(const json& v) { return v.is_string() ? json(Standardize(v.get<std::string>())) : v; }

json StandardizeList(const json& values) {
  json out = json::array();
  for (const json& v : values) out.push_back(StandardizeStrings(v));
  return out;
}

// A value the truth accepts, for display: the first acceptable one that is
// not "" (inside dicts, each key's likewise; keys only "" allows left out).
// Null when only "" is listed.
json ShownValue(const json& acceptable) {
  for (const json& a : acceptable) {
    if (IsOptionalMark(a)) continue;
    auto shown_dict = [](const json& d) {
      json out = json::object();
      for (auto it = d.begin(); it != d.end(); ++it) {
        if (!it.value().is_array()) continue;
        json v = ShownValue(it.value());
        if (!v.is_null() || !PyIn(json(""), it.value())) out[it.key()] = std::move(v);
      }
      return out;
    };
    if (a.is_object()) return shown_dict(a);
    if (a.is_array() && !a.empty() && a[0].is_object()) {
      json out = json::array();
      for (const json& d : a) out.push_back(d.is_object() ? shown_dict(d) : d);
      return out;
    }
    return a;
  }
  return nullptr;
}

bool Fail(std::string* why, const std::string& what) {
  if (why) *why = what;
  return false;
}

// One dict value against its acceptable dicts (keys free to leave out where "" is listed).
bool DictMatches(const json& value, const json& acceptable, std::string* why) {
  std::string last = "no acceptable dict";
  for (const json& a : acceptable) {
    if (IsOptionalMark(a) || !a.is_object()) continue;
    bool ok = true;
    for (auto it = value.begin(); it != value.end() && ok; ++it) {
      if (!a.contains(it.key()) || !a[it.key()].is_array()) {
        ok = false, last = "unexpected key '" + it.key() + "'";
      } else if (!PyIn(StandardizeStrings(it.value()), StandardizeList(a[it.key()]))) {
        ok = false, last = "key '" + it.key() + "' = " + it.value().dump() + " not acceptable";
      }
    }
    for (auto it = a.begin(); it != a.end() && ok; ++it) {
      const bool optional = it.value().is_array() && PyIn(json(""), it.value());
      if (!value.contains(it.key()) && !optional) ok = false, last = "missing key '" + it.key() + "'";
    }
    if (ok) return true;
  }
  return Fail(why, last);
}

// A list of dicts against acceptable lists of dicts, position by position.
bool DictListMatches(const json& value, const json& acceptable, std::string* why) {
  std::string last = "no acceptable list";
  for (const json& a : acceptable) {
    if (!a.is_array() || a.size() != value.size()) {
      last = "wrong number of dicts";
      continue;
    }
    bool ok = true;
    for (size_t i = 0; i < value.size() && ok; ++i) ok = DictMatches(value[i], json::array({a[i]}), &last);
    if (ok) return true;
  }
  return Fail(why, last);
}

bool ListMatches(const json& value, const json& acceptable) {
  const json v = StandardizeList(value);
  for (const json& a : acceptable) {
    if (a.is_array() && PyEqual(v, StandardizeList(a))) return true;
    if (IsOptionalMark(a) && v.empty()) return true;  // Python iterates "" as an empty list
  }
  return false;
}

// BFCL's type check: the declared type, or the type the acceptable values
// have (then the value is compared as it is: is_variable).
bool TypeMatches(const json& value, const json& acceptable, PyType declared, PyType nested, bool* is_variable) {
  const PyType answer = AnswerType(acceptable);
  *is_variable = answer != PyType::kUnknown && answer != declared;
  if (TypeOf(value) == declared) {
    if (nested == PyType::kUnknown) return true;
    for (const json& a : acceptable) {
      bool ok = true;
      if (a.is_array()) {
        const PyType item_answer = AnswerType(a);
        for (const json& item : value) ok = ok && (TypeOf(item) == nested || (item_answer != PyType::kUnknown && TypeOf(item) == item_answer));
      }
      if (ok) return true;
    }
  }
  if (answer != PyType::kUnknown && TypeOf(value) == answer) {
    *is_variable = true;
    return true;
  }
  return false;
}

const json* FindFunction(const json& functions, const std::string& name) {
  for (const json& f : functions) {
    if (f.value("name", "") == name) return &f;
  }
  return nullptr;
}

// One call against one truth entry {name: {param: [acceptable]}}.
bool CallMatches(const json& functions, const json& call, const json& truth_call, std::string* why) {
  if (!truth_call.is_object() || truth_call.size() != 1) return Fail(why, "malformed ground truth entry");
  const std::string name = truth_call.begin().key();
  const json& answer = truth_call.begin().value();
  if (call.value("name", "") != name) return Fail(why, "called " + call.value("name", "") + ", expected " + name);
  const json* f = FindFunction(functions, name);
  if (!f || !f->contains("parameters")) return Fail(why, "no function '" + name + "' among the example's functions");
  const json& params = (*f)["parameters"];
  const json props = params.value("properties", json::object());
  const json args = call.contains("arguments") && call["arguments"].is_object() ? call["arguments"] : json::object();
  for (const json& r : params.value("required", json::array())) {
    if (r.is_string() && !args.contains(r.get<std::string>())) return Fail(why, "missing required argument '" + r.get<std::string>() + "'");
  }
  for (auto it = args.begin(); it != args.end(); ++it) {
    const std::string& p = it.key();
    if (!props.contains(p) || !answer.contains(p)) return Fail(why, "unexpected argument '" + p + "'");
    const json& acceptable = answer[p];
    const std::string declared_name = props[p].value("type", "");
    const PyType declared = DeclaredType(declared_name);
    PyType nested = PyType::kUnknown;
    if (declared == PyType::kList && props[p].contains("items") && props[p]["items"].is_object()) {
      nested = DeclaredType(props[p]["items"].value("type", ""));
    }
    json value = it.value();
    if (declared_name == "float" && TypeOf(value) == PyType::kInt) value = value.get<double>();
    bool is_variable = false;
    if (!TypeMatches(value, acceptable, declared, nested, &is_variable)) {
      return Fail(why, "argument '" + p + "' = " + value.dump() + " is not of type " + declared_name);
    }
    if (!is_variable) {
      std::string sub;
      if (declared == PyType::kDict) {
        if (!DictMatches(value, acceptable, &sub)) return Fail(why, "argument '" + p + "': " + sub);
        continue;
      }
      if (declared == PyType::kList && nested == PyType::kDict) {
        if (!DictListMatches(value, acceptable, &sub)) return Fail(why, "argument '" + p + "': " + sub);
        continue;
      }
      if (declared == PyType::kStr) {
        if (!PyIn(StandardizeStrings(value), StandardizeList(acceptable))) return Fail(why, "argument '" + p + "' = " + value.dump() + " not acceptable");
        continue;
      }
      if (declared == PyType::kList) {
        if (!ListMatches(value, acceptable)) return Fail(why, "argument '" + p + "' = " + value.dump() + " not acceptable");
        continue;
      }
    }
    if (!PyIn(value, acceptable)) return Fail(why, "argument '" + p + "' = " + value.dump() + " not acceptable");
  }
  for (auto it = answer.begin(); it != answer.end(); ++it) {
    if (!args.contains(it.key()) && !PyIn(json(""), it.value())) return Fail(why, "argument '" + it.key() + "' left out");
  }
  return true;
}

}  // namespace

bool IsBfclLine(const ojson& line) { return line.is_object() && line.contains("question") && line.contains("function"); }

ojson ToolSchema(const ojson& function) {
  ojson tool = function;
  if (tool.contains("parameters")) ConvertTypes(tool["parameters"]);
  return tool;
}

std::string AnswerPathFor(const std::string& data_path) {
  const size_t slash = data_path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : data_path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? data_path : data_path.substr(slash + 1);
  return dir + "possible_answer/" + name;
}

bool ExpectsNoCall(const std::string& data_path) {
  const size_t slash = data_path.find_last_of('/');
  return data_path.find("irrelevance", slash == std::string::npos ? 0 : slash) != std::string::npos;
}

ojson ToExample(const ojson& line, const ojson& truth) {
  const std::string id = line.value("id", std::string("?"));
  if (!line.contains("question") || !line["question"].is_array() || line["question"].empty() || !line["question"][0].is_array()) {
    Bad(id + ": \"question\" must be a list of turns, each a list of messages");
  }
  if (line["question"].size() != 1) Bad(id + ": " + std::to_string(line["question"].size()) + " turns; only single-turn sets are supported");
  if (!line["function"].is_array()) Bad(id + ": \"function\" must be a list");
  std::string query, system;
  size_t assistant_messages = 0;
  for (const ojson& m : line["question"][0]) {
    const std::string role = m.value("role", ""), content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    if (role == "assistant") {
      ++assistant_messages;  // earlier replies in the turn: our prompt has no place for them
      continue;
    }
    if (role != "user" && role != "system") Bad(id + ": a message of role '" + role + "' (only system, user and assistant are read)");
    std::string& into = role == "user" ? query : system;
    if (!into.empty()) into += "\n";
    into += content;
  }
  if (query.empty()) Bad(id + ": no user message");
  ojson tools = ojson::array(), answers = ojson::array();
  for (const ojson& f : line["function"]) tools.push_back(ToolSchema(f));
  for (const ojson& t : truth) {
    if (!t.is_object() || t.size() != 1 || !t.begin().value().is_object()) Bad(id + ": malformed ground truth entry " + t.dump());
    const std::string name = t.begin().key();
    // Required arguments are shown even where the truth also lists "".
    std::vector<std::string> required;
    for (const ojson& f : line["function"]) {
      if (f.value("name", "") == name && f.contains("parameters") && f["parameters"].contains("required")) {
        for (const ojson& r : f["parameters"]["required"]) required.push_back(r.is_string() ? r.get<std::string>() : "");
      }
    }
    ojson args = ojson::object();
    for (auto it = t.begin().value().begin(); it != t.begin().value().end(); ++it) {
      if (!it.value().is_array() || it.value().empty()) Bad(id + ": ground truth of '" + it.key() + "' is not a list of values");
      const json acceptable = json::parse(it.value().dump());
      const bool may_leave_out = PyIn(json(""), acceptable) && std::find(required.begin(), required.end(), it.key()) == required.end();
      if (!may_leave_out) args[it.key()] = ojson::parse(ShownValue(acceptable).dump());
    }
    answers.push_back({{"name", name}, {"arguments", std::move(args)}});
  }
  ojson ex = {{"query", query}, {"tools", std::move(tools)}, {"answers", std::move(answers)}};
  if (!system.empty()) ex["system"] = system;
  ex["bfcl"] = {{"id", id}, {"functions", line["function"]}, {"truth", truth}};
  if (assistant_messages) ex["bfcl"]["assistant_messages_dropped"] = assistant_messages;
  return ex;
}

bool Matches(const json& functions, const json& calls, const json& truth, std::string* why) {
  if (!calls.is_array() || !truth.is_array()) return Fail(why, "calls and truth must be lists");
  if (calls.size() != truth.size()) {
    return Fail(why, std::to_string(calls.size()) + " calls, expected " + std::to_string(truth.size()));
  }
  std::vector<bool> used(calls.size(), false);
  for (const json& t : truth) {
    std::string last;
    bool found = false;
    for (size_t i = 0; i < calls.size() && !found; ++i) {
      if (!used[i] && CallMatches(functions, calls[i], t, &last)) used[i] = found = true;
    }
    if (!found) return Fail(why, last);
  }
  return true;
}

}  // namespace needle::cli::bfcl
