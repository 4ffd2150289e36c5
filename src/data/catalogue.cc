#include "data/catalogue.h"
#include "data/decontaminate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "base/error.h"  // Error
#include "base/install_paths.h"  // InstalledShareFile
#include "data/rng.h"    // StableHash
#include "data/words.h"  // Lower

#ifndef NEEDLE_DATA_DIR
#define NEEDLE_DATA_DIR "data"
#endif

namespace needle::data {

namespace fs = std::filesystem;

const char* SplitName(Split s) {
  switch (s) {
    case Split::kTrain: return "train";
    case Split::kVal: return "val";
    case Split::kTest: return "test";
  }
  return "train";
}

Split ParseSplit(const std::string& name) {
  if (name == "train") return Split::kTrain;
  if (name == "val") return Split::kVal;
  if (name == "test") return Split::kTest;
  throw Error(ErrorCode::kInvalidArgument, "split must be train, val or test, got '" + name + "'");
}

Split BucketOf(const std::string& key, const std::string& what) {
  const uint64_t b = StableHash(key, StableHash(what)) % 100;
  return b < 15 ? Split::kTest : b < 25 ? Split::kVal : Split::kTrain;
}

std::vector<Split> StratifiedSplits(const std::vector<std::string>& keys, const std::string& what, bool keep_first) {
  const size_t n = keys.size();
  std::vector<Split> out(n, Split::kTrain);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (keep_first && !order.empty()) order.erase(order.begin());
  const size_t m = order.size();
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const uint64_t ha = StableHash(keys[a], StableHash(what)), hb = StableHash(keys[b], StableHash(what));
    return ha != hb ? ha < hb : a < b;
  });
  const size_t n_test = m >= 3 ? std::max<size_t>(1, static_cast<size_t>(std::lround(0.15 * m))) : 0;
  const size_t n_val = m >= 5 ? std::max<size_t>(1, static_cast<size_t>(std::lround(0.10 * m))) : 0;
  for (size_t i = 0; i < n_test && i < m; ++i) out[order[i]] = Split::kTest;
  for (size_t i = n_test; i < n_test + n_val && i < m; ++i) out[order[i]] = Split::kVal;
  return out;
}

const char* SlotKindName(SlotKind k) {
  switch (k) {
    case SlotKind::kText: return "text";
    case SlotKind::kInt: return "int";
    case SlotKind::kNumber: return "number";
    case SlotKind::kDuration: return "duration";
    case SlotKind::kDistance: return "distance";
    case SlotKind::kTime: return "time";
    case SlotKind::kDate: return "date";
    case SlotKind::kEnum: return "enum";
    case SlotKind::kList: return "list";
    case SlotKind::kRef: return "ref";
    case SlotKind::kItems: return "items";
  }
  return "text";
}

const char* RepName(Rep r) {
  switch (r) {
    case Rep::kCopy: return "copy";
    case Rep::kInt: return "int";
    case Rep::kNumber: return "number";
    case Rep::kTime24: return "time24";
    case Rep::kDate: return "date";
    case Rep::kDateTime: return "datetime";
    case Rep::kSeconds: return "seconds";
    case Rep::kMinutes: return "minutes";
    case Rep::kHours: return "hours";
    case Rep::kMeters: return "meters";
    case Rep::kCentimeters: return "centimeters";
    case Rep::kEnum: return "enum";
    case Rep::kBool: return "bool";
    case Rep::kStringList: return "list";
    case Rep::kObjectList: return "items";
  }
  return "copy";
}

namespace {

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, where + ": " + what);
}

ojson ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return ojson::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidJson, path + ": " + e.what());
  }
}

std::vector<std::string> Strings(const ojson& j, const std::string& key, const std::string& where) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) Fail(where, "'" + key + "' must be an array of strings");
  for (const auto& x : j[key]) {
    if (!x.is_string()) Fail(where, "'" + key + "' must be an array of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

std::string Str(const ojson& j, const std::string& key, const std::string& where, bool required = true) {
  if (!j.contains(key)) {
    if (required) Fail(where, "missing '" + key + "'");
    return "";
  }
  if (!j[key].is_string()) Fail(where, "'" + key + "' must be a string");
  return j[key].get<std::string>();
}

SlotKind ParseKind(const std::string& k, const std::string& where) {
  static const std::map<std::string, SlotKind> kKinds = {
      {"text", SlotKind::kText},     {"int", SlotKind::kInt},   {"number", SlotKind::kNumber},
      {"duration", SlotKind::kDuration}, {"distance", SlotKind::kDistance}, {"time", SlotKind::kTime},
      {"date", SlotKind::kDate},     {"enum", SlotKind::kEnum}, {"list", SlotKind::kList},
      {"ref", SlotKind::kRef},       {"items", SlotKind::kItems}};
  auto it = kKinds.find(k);
  if (it == kKinds.end()) Fail(where, "unknown slot kind '" + k + "'");
  return it->second;
}

std::vector<std::string> DefaultReps(const SlotDef& s) {
  switch (s.kind) {
    case SlotKind::kText:
    case SlotKind::kRef: return {"copy"};
    case SlotKind::kList: return {"list", "list", "copy"};
    case SlotKind::kInt: return {"int"};
    case SlotKind::kNumber: return {"number"};
    case SlotKind::kDuration: return {"seconds", "minutes", "seconds", "copy"};
    case SlotKind::kDistance: return {"meters", "centimeters", "copy"};
    case SlotKind::kTime: return {"time24", "time24", "copy"};
    case SlotKind::kDate: return {"date", "date", "copy"};
    case SlotKind::kEnum:
      if (!s.bool_true.empty()) return {"enum", "enum", "bool"};
      return {"enum"};
    case SlotKind::kItems: return {"items"};
  }
  return {"copy"};
}

Template MakeTemplate(const std::string& text, const std::string& id, bool command, const std::string& where) {
  Template t;
  t.pattern = Pattern::Parse(text);
  t.id = id;
  t.command = command;
  (void)where;
  return t;
}

// Every slot a template names must exist; assignments must be valid values.
void CheckTemplateSlots(const Template& t, const std::vector<SlotDef>& slots, const std::string& where) {
  for (const std::string& s : t.pattern.all_slots()) {
    auto it = std::find_if(slots.begin(), slots.end(), [&](const SlotDef& d) { return d.id == s; });
    if (it == slots.end()) Fail(where, "template \"" + t.pattern.text() + "\" names unknown slot '" + s + "'");
  }
}

void CheckAssignments(const Pattern& p, const std::string& text, const std::vector<SlotDef>& slots,
                      const std::string& where);

}  // namespace

SlotDef ParseSlot(const std::string& id, const ojson& j, const std::string& where_in) {
  const std::string where = where_in + " slot '" + id + "'";
  if (!j.is_object()) Fail(where, "must be an object");
  SlotDef s;
  s.id = id;
  s.kind = ParseKind(Str(j, "kind", where), where);
  s.pool = Str(j, "pool", where, false);
  s.required = j.value("required", false);
  if (j.contains("min") || j.contains("max")) {
    if (!j.contains("min") || !j.contains("max") || !j["min"].is_number() || !j["max"].is_number())
      Fail(where, "min and max must both be numbers");
    s.min = j["min"].get<double>(), s.max = j["max"].get<double>(), s.has_range = true;
    if (s.min > s.max) Fail(where, "min > max");
  }
  s.decimals = j.value("decimals", 0);
  s.step = j.value("step", 1);
  if (s.step < 1) Fail(where, "step must be >= 1");
  s.forms = Strings(j, "forms", where);
  s.names = Strings(j, "names", where);
  s.descriptions = Strings(j, "descriptions", where);
  s.reps = Strings(j, "reps", where);
  s.bool_true = Str(j, "bool_true", where, false);
  s.subsettable = j.value("subsettable", false);
  s.list_min = j.value("list_min", 1);
  s.list_max = j.value("list_max", 3);
  s.lowercase_ok = j.value("lowercase_ok", true);
  s.fact = Str(j, "fact", where, false);
  s.pair = Str(j, "pair", where, false);
  s.part = j.value("part", 0);
  s.absolute = j.value("absolute", false);
  if (s.names.empty()) s.names = {id};
  if (s.kind == SlotKind::kEnum) {
    if (!j.contains("values") || !j["values"].is_object() || j["values"].empty())
      Fail(where, "an enum slot needs a non-empty 'values' object");
    for (const auto& [vid, vj] : j["values"].items()) {
      EnumValue v;
      v.id = vid;
      if (vj.is_array()) {
        v.surfaces = Strings(j["values"], vid, where);
      } else if (vj.is_object()) {
        v.surfaces = Strings(vj, "say", where);
        v.alts = Strings(vj, "alts", where);
      } else {
        Fail(where, "enum value '" + vid + "' must be a list of surfaces or {say, alts}");
      }
      if (v.surfaces.empty()) v.surfaces = {vid};
      s.values.push_back(std::move(v));
    }
    if (!s.bool_true.empty() &&
        std::none_of(s.values.begin(), s.values.end(), [&](const EnumValue& v) { return v.id == s.bool_true; }))
      Fail(where, "bool_true '" + s.bool_true + "' is not one of the values");
  }
  if ((s.kind == SlotKind::kText || s.kind == SlotKind::kList || s.kind == SlotKind::kRef) && s.pool.empty())
    Fail(where, "a " + std::string(SlotKindName(s.kind)) + " slot needs a 'pool'");
  if ((s.kind == SlotKind::kInt || s.kind == SlotKind::kNumber) && !s.has_range)
    Fail(where, "a number slot needs min and max");
  if (s.kind == SlotKind::kItems) {
    if (!j.contains("fields") || !j["fields"].is_object()) Fail(where, "an items slot needs 'fields'");
    for (const auto& [fid, fj] : j["fields"].items()) s.fields.push_back(ParseSlot(fid, fj, where));
    for (const std::string& l : Strings(j, "lines", where)) {
      Template t = MakeTemplate(l, id, false, where);
      CheckTemplateSlots(t, s.fields, where);
      s.lines.push_back(t.pattern);
    }
    if (s.lines.empty()) Fail(where, "an items slot needs 'lines'");
  }
  if (s.forms.empty()) {
    if (s.kind == SlotKind::kInt || s.kind == SlotKind::kNumber) s.forms = {"{n}"};
  }
  if (s.reps.empty()) s.reps = DefaultReps(s);
  return s;
}

namespace {

void CheckAssignments(const Pattern& p, const std::string& text, const std::vector<SlotDef>& slots,
                      const std::string& where) {
  // Re-render a few times is not needed: walk the assignments via a parse of {x=y}.
  size_t i = 0;
  while ((i = text.find('{', i)) != std::string::npos) {
    if (i > 0 && text[i - 1] == '\\') {
      ++i;
      continue;
    }
    const size_t end = text.find('}', i);
    const std::string body = text.substr(i + 1, end - i - 1);
    i = end;
    const size_t eq = body.find('=');
    if (eq == std::string::npos) continue;
    const std::string slot = body.substr(0, eq);
    std::string value = body.substr(eq + 1);
    value = value.substr(0, value.find(':'));
    auto it = std::find_if(slots.begin(), slots.end(), [&](const SlotDef& d) { return d.id == slot; });
    if (it == slots.end()) continue;  // reported by CheckTemplateSlots
    if (it->kind == SlotKind::kEnum) {
      if (std::none_of(it->values.begin(), it->values.end(), [&](const EnumValue& v) { return v.id == value; }))
        Fail(where, "template \"" + text + "\" assigns unknown value '" + value + "' to '" + slot + "'");
    } else if (it->kind == SlotKind::kInt || it->kind == SlotKind::kNumber) {
      if (value != "max" && value != "min")
        Fail(where, "template \"" + text + "\": a number slot can only be assigned max or min");
    } else {
      Fail(where, "template \"" + text + "\": only enum and number slots can be assigned");
    }
  }
  (void)p;
}

// Binds one declared property to a slot; `slots` are the slots it may name.
ParamBinding BindProperty(const std::string& pname, const ojson& prop, const std::vector<SlotDef>& slots,
                          bool required, const std::string& where_in) {
  const std::string where = where_in + " property '" + pname + "'";
  if (!prop.is_object()) Fail(where, "must be an object");
  ParamBinding b;
  b.name = pname;
  b.required = required;
  if (prop.contains("minimum")) b.has_min = true, b.min = prop["minimum"].get<double>();
  if (prop.contains("maximum")) b.has_max = true, b.max = prop["maximum"].get<double>();
  if (!prop.contains("x-slot")) {
    if (required) Fail(where, "is required but has no x-slot, so it could never be filled");
    return b;
  }
  std::string slot = Str(prop, "x-slot", where);
  if (const size_t comma = slot.find(','); comma != std::string::npos) {
    b.slot2 = slot.substr(comma + 1);
    slot = slot.substr(0, comma);
  }
  b.slot = slot;
  auto find = [&](const std::string& id) -> const SlotDef* {
    for (const auto& s : slots)
      if (s.id == id) return &s;
    Fail(where, "x-slot names unknown slot '" + id + "'");
  };
  const SlotDef& s = *find(slot);
  const std::string type = prop.contains("type") && prop["type"].is_string() ? prop["type"].get<std::string>() : "";
  const std::string format = prop.contains("format") ? prop["format"].get<std::string>() : "";
  const std::string unit = prop.contains("x-unit") ? prop["x-unit"].get<std::string>() : "";
  if (!b.slot2.empty()) {
    if (s.kind != SlotKind::kDate || find(b.slot2)->kind != SlotKind::kTime || type != "string" ||
        format != "date-time")
      Fail(where, "a two-slot property must be x-slot \"date,time\" with type string, format date-time");
    b.rep = Rep::kDateTime;
    return b;
  }
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) Fail(where, std::string("a ") + SlotKindName(s.kind) + " slot needs " + what);
  };
  switch (s.kind) {
    case SlotKind::kText:
    case SlotKind::kRef:
      need(type == "string", "type string");
      b.rep = Rep::kCopy;
      break;
    case SlotKind::kList:
      if (type == "array") {
        b.rep = Rep::kStringList;
      } else {
        need(type == "string", "type array or string");
        b.rep = Rep::kCopy;
      }
      break;
    case SlotKind::kInt:
      need(type == "integer" || type == "number", "type integer or number");
      b.rep = type == "integer" ? Rep::kInt : Rep::kNumber;
      break;
    case SlotKind::kNumber:
      need(type == "number", "type number");
      b.rep = Rep::kNumber;
      break;
    case SlotKind::kDuration:
      if (type == "string") {
        b.rep = Rep::kCopy;
      } else {
        need((type == "integer" || type == "number") && (unit == "s" || unit == "min" || unit == "h"),
             "type integer/number with x-unit s|min|h, or type string");
        b.rep = unit == "s" ? Rep::kSeconds : unit == "min" ? Rep::kMinutes : Rep::kHours;
      }
      break;
    case SlotKind::kDistance:
      if (type == "string") {
        b.rep = Rep::kCopy;
      } else {
        need((type == "integer" || type == "number") && (unit == "m" || unit == "cm"),
             "type integer/number with x-unit m|cm, or type string");
        b.rep = unit == "m" ? Rep::kMeters : Rep::kCentimeters;
      }
      break;
    case SlotKind::kTime:
      need(type == "string", "type string");
      b.rep = format == "time" ? Rep::kTime24 : Rep::kCopy;
      break;
    case SlotKind::kDate:
      need(type == "string", "type string");
      b.rep = format == "date" ? Rep::kDate : Rep::kCopy;
      break;
    case SlotKind::kEnum: {
      if (type == "boolean") {
        need(!s.bool_true.empty(), "bool_true for a boolean property");
        b.rep = Rep::kBool;
        break;
      }
      need(type == "string", "type string or boolean");
      if (!prop.contains("enum")) {
        b.rep = Rep::kCopy;
        break;
      }
      b.rep = Rep::kEnum;
      std::map<std::string, std::string> xmap;  // semantic -> declared
      if (prop.contains("x-map"))
        for (const auto& [k, v] : prop["x-map"].items()) xmap[k] = v.get<std::string>();
      for (const auto& dv : prop["enum"]) {
        if (!dv.is_string()) Fail(where, "enum values must be strings");
        const std::string d = dv.get<std::string>();
        std::string sem;
        for (const auto& [k, v] : xmap)
          if (v == d) sem = k;
        if (sem.empty()) {
          for (const EnumValue& v : s.values) {
            bool match = Lower(v.id) == Lower(d);
            for (const auto& a : v.alts) match = match || Lower(a) == Lower(d);
            for (const auto& a : v.surfaces) match = match || Lower(a) == Lower(d);
            if (match) sem = v.id;
          }
        }
        if (sem.empty()) Fail(where, "enum value '" + d + "' maps to no value of slot '" + s.id + "' (add x-map)");
        if (b.enum_map.count(sem)) Fail(where, "two enum values map to '" + sem + "'");
        b.enum_map[sem] = d;
      }
      break;
    }
    case SlotKind::kItems: {
      need(type == "array" && prop.contains("items") && prop["items"].contains("properties"),
           "type array with items.properties");
      b.rep = Rep::kObjectList;
      const ojson& ip = prop["items"];
      std::set<std::string> req;
      for (const std::string& r : Strings(ip, "required", where)) req.insert(r);
      for (const auto& [fname, fprop] : ip["properties"].items())
        b.fields.push_back(BindProperty(fname, fprop, s.fields, req.count(fname) > 0, where));
      break;
    }
  }
  return b;
}

}  // namespace

ojson CleanSchema(const ojson& j) {
  if (j.is_object()) {
    ojson out = ojson::object();
    for (const auto& [k, v] : j.items())
      if (k.rfind("x-", 0) != 0) out[k] = CleanSchema(v);
    return out;
  }
  if (j.is_array()) {
    ojson out = ojson::array();
    for (const auto& v : j) out.push_back(CleanSchema(v));
    return out;
  }
  return j;
}

ToolSpec BindSpelling(const ojson& tool, const Capability& cap, const std::string& where_in) {
  if (!tool.is_object()) Fail(where_in, "a spelling must be an object");
  const std::string name = Str(tool, "name", where_in);
  const std::string where = where_in + " spelling '" + name + "'";
  if (!tool.contains("parameters") || !tool["parameters"].is_object()) Fail(where, "needs a 'parameters' object");
  const ojson& params = tool["parameters"];
  if (params.value("type", "") != "object") Fail(where, "parameters.type must be \"object\"");
  ToolSpec t;
  t.cap = &cap;
  t.origin = "catalogue";
  t.schema = ojson::object();
  t.schema["name"] = name;
  if (tool.contains("description")) t.schema["description"] = tool["description"];
  t.schema["parameters"] = CleanSchema(params);
  std::set<std::string> req;
  for (const std::string& r : Strings(params, "required", where)) req.insert(r);
  if (params.contains("properties")) {
    for (const auto& [pname, prop] : params["properties"].items())
      t.params.push_back(BindProperty(pname, prop, cap.slots, req.count(pname) > 0, where));
  }
  for (const std::string& r : req)
    if (!t.ForName(r)) Fail(where, "required '" + r + "' is not a property");
  return t;
}

const ParamBinding* ToolSpec::ForSlot(const std::string& slot) const {
  for (const auto& p : params)
    if (p.slot == slot || (!p.slot2.empty() && p.slot2 == slot)) return &p;
  return nullptr;
}

const ParamBinding* ToolSpec::ForName(const std::string& n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

std::set<std::string> ToolSpec::RequiredSlots() const {
  std::set<std::string> out;
  for (const auto& p : params) {
    if (!p.required || p.slot.empty()) continue;
    out.insert(p.slot);
    if (!p.slot2.empty()) out.insert(p.slot2);
  }
  return out;
}

const SlotDef* Capability::Slot(const std::string& id) const {
  for (const auto& s : slots)
    if (s.id == id) return &s;
  return nullptr;
}

const Capability* Catalogue::Find(const std::string& id) const {
  auto it = cap_index.find(id);
  return it == cap_index.end() ? nullptr : &caps[it->second];
}

std::vector<std::string> Catalogue::Words(const std::string& key, Split split) const {
  std::vector<std::string> all;
  if (!lexicon.contains(key)) return all;
  for (const auto& x : lexicon[key]) all.push_back(x.get<std::string>());
  const std::vector<Split> sp = StratifiedSplits(all, "lex:" + key);
  std::vector<std::string> out;
  for (size_t i = 0; i < all.size(); ++i)
    if (SplitAllows(split, sp[i])) out.push_back(all[i]);
  return out;
}

std::string DefaultDataDir() {
  if (const char* env = std::getenv("NEEDLE_DATA_DIR"); env && *env) return env;
  if (std::string installed = InstalledShareFile("data"); !installed.empty()) return installed;
  return NEEDLE_DATA_DIR;
}

namespace {

std::vector<std::string> JsonFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) throw Error(ErrorCode::kIo, "no directory " + dir);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Template> ParseTemplates(const ojson& j, const std::string& key, const std::string& cap_id,
                                     bool command, const std::vector<SlotDef>& slots, const std::string& where,
                                     size_t& counter) {
  std::vector<Template> out;
  for (const std::string& text : Strings(j, key, where)) {
    Template t = MakeTemplate(text, cap_id + "#" + std::to_string(counter++), command, where);
    CheckTemplateSlots(t, slots, where);
    CheckAssignments(t.pattern, text, slots, where);
    out.push_back(std::move(t));
  }
  return out;
}

void AssignTemplateSplits(std::vector<Template>& ts, const std::string& what) {
  std::vector<std::string> keys;
  for (const auto& t : ts) keys.push_back(t.pattern.text());
  const std::vector<Split> sp = StratifiedSplits(keys, what);
  for (size_t i = 0; i < ts.size(); ++i) ts[i].split = sp[i];
}

void LoadCapability(Catalogue& cat, const ojson& j, const std::string& domain, const std::string& file) {
  Capability c;
  c.id = Str(j, "id", file);
  const std::string where = file + " capability '" + c.id + "'";
  c.domain = domain;
  c.group = Str(j, "group", where);
  c.does = Str(j, "does", where);
  c.verbs = Strings(j, "verbs", where);
  c.objects = Strings(j, "objects", where);
  c.descriptions = Strings(j, "descriptions", where);
  c.overlaps = Strings(j, "overlaps", where);
  c.session_role = Str(j, "session_role", where, false);
  c.test_only = j.value("split", "") == "test";
  c.open_ended = j.value("open_ended", false);
  if (j.contains("result")) c.result = j["result"];
  if (c.verbs.empty() || c.objects.empty()) Fail(where, "needs 'verbs' and 'objects' (name synthesis)");
  if (!j.contains("slots") || !j["slots"].is_object()) Fail(where, "needs a 'slots' object");
  for (const auto& [sid, sj] : j["slots"].items()) c.slots.push_back(ParseSlot(sid, sj, where));
  size_t counter = 0;
  std::vector<Template> commands = ParseTemplates(j, "commands", c.id, true, c.slots, where, counter);
  std::vector<Template> phrases = ParseTemplates(j, "phrases", c.id, false, c.slots, where, counter);
  c.templates = commands;
  c.templates.insert(c.templates.end(), phrases.begin(), phrases.end());
  AssignTemplateSplits(c.templates, "tmpl:" + c.id);
  c.vague = ParseTemplates(j, "vague", c.id, true, c.slots, where, counter);
  AssignTemplateSplits(c.vague, "vague:" + c.id);
  c.passages = ParseTemplates(j, "passages", c.id, false, c.slots, where, counter);
  AssignTemplateSplits(c.passages, "passage:" + c.id);
  if (c.templates.empty() && c.passages.empty() && c.session_role.empty())
    Fail(where, "needs 'commands', 'phrases' or 'passages'");
  if (cat.cap_index.count(c.id)) Fail(where, "duplicate capability id");
  cat.cap_index[c.id] = cat.caps.size();
  cat.caps.push_back(std::move(c));
  // Spellings bind to the capability at its final address (caps is reserved up front).
  Capability& cap = cat.caps.back();
  if (!j.contains("spellings") || !j["spellings"].is_array() || j["spellings"].empty())
    Fail(where, "needs at least one spelling");
  std::vector<std::string> names;
  for (const auto& sj : j["spellings"]) {
    cap.spellings.push_back(BindSpelling(sj, cap, where));
    names.push_back(cap.spellings.back().name());
  }
  // Spellings held out: one for test when there are two or more, one for val from four.
  cap.spelling_split.assign(names.size(), Split::kTrain);
  std::vector<size_t> order(names.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return StableHash(names[a], 17) < StableHash(names[b], 17);
  });
  if (names.size() >= 2) cap.spelling_split[order[0]] = Split::kTest;
  if (names.size() >= 4) cap.spelling_split[order[1]] = Split::kVal;
  // Required parameters must be fillable by some template or passage of the capability.
  for (const ToolSpec& t : cap.spellings) {
    for (const std::string& r : t.RequiredSlots()) {
      bool ok = !cap.session_role.empty();
      for (const auto& tp : cap.templates) ok = ok || tp.pattern.all_slots().count(r);
      for (const auto& tp : cap.passages) ok = ok || tp.pattern.all_slots().count(r);
      if (!ok) Fail(where, "spelling '" + t.name() + "' requires slot '" + r + "' that no template renders");
    }
  }
}

}  // namespace

Catalogue Catalogue::Load(const std::string& dir) {
  Catalogue cat;
  cat.dir = dir;
  cat.caps.reserve(1024);  // ToolSpec::cap points into this vector
  cat.held_out_requests = EvaluationRequests(dir + "/eval");
  // Pools first (capabilities name them).
  for (const std::string& f : JsonFiles(dir + "/pools")) {
    const ojson j = ReadJsonFile(f);
    if (!j.is_object()) Fail(f, "must be an object of pool -> [values]");
    for (const auto& [name, items] : j.items()) {
      if (cat.pools.count(name)) Fail(f, "pool '" + name + "' defined twice");
      Pool p;
      p.items = Strings(j, name, f);
      if (p.items.empty()) Fail(f, "pool '" + name + "' is empty");
      for (const auto& it : p.items)
        p.split.push_back(p.items.size() < 12 ? Split::kTrain : BucketOf(it, "pool:" + name));
      cat.pools[name] = std::move(p);
    }
  }
  cat.lexicon = ReadJsonFile(dir + "/lexicon.json");
  if (cat.lexicon.contains("invented_params"))
    for (const auto& [id, sj] : cat.lexicon["invented_params"].items())
      cat.invented_params.push_back(ParseSlot(id, sj, dir + "/lexicon.json invented_params"));
  for (const std::string& f : JsonFiles(dir + "/capabilities")) {
    const ojson j = ReadJsonFile(f);
    const std::string domain = Str(j, "domain", f);
    if (!j.contains("capabilities") || !j["capabilities"].is_array()) Fail(f, "needs a 'capabilities' array");
    for (const auto& cj : j["capabilities"]) LoadCapability(cat, cj, domain, f);
  }
  if (cat.caps.size() > 1024) Fail(dir, "more than 1024 capabilities");
  // Pools named anywhere must exist (placeholders inside pool items are checked on use).
  auto check_pool = [&](const SlotDef& s, const std::string& where) {
    if (!s.pool.empty() && !cat.pools.count(s.pool)) Fail(where, "slot '" + s.id + "' names unknown pool '" + s.pool + "'");
    for (const auto& f : s.fields)
      if (!f.pool.empty() && !cat.pools.count(f.pool)) Fail(where, "field '" + f.id + "' names unknown pool '" + f.pool + "'");
  };
  for (const auto& c : cat.caps) {
    for (const auto& s : c.slots) check_pool(s, "capability '" + c.id + "'");
    for (const auto& o : c.overlaps)
      if (!cat.cap_index.count(o)) Fail("capability '" + c.id + "'", "overlaps unknown capability '" + o + "'");
    for (const auto& t : c.spellings) {
      if (!cat.catalogue_names.insert(t.name()).second)
        Fail("capability '" + c.id + "'", "tool name '" + t.name() + "' is used by two spellings");
    }
  }
  for (const auto& s : cat.invented_params) check_pool(s, "lexicon invented_params");
  cat.api_tools = LoadApiSchemas(dir + "/schemas", cat.catalogue_names);
  // Sessions: lookup-then-act chains and follow-ups.
  const std::string sf = dir + "/sessions.json";
  if (fs::exists(sf)) {
    const ojson j = ReadJsonFile(sf);
    size_t counter = 0;
    for (const auto& cj : j.value("chains", ojson::array())) {
      Chain ch;
      ch.id = Str(cj, "id", sf);
      const std::string where = sf + " chain '" + ch.id + "'";
      ch.records = Str(cj, "records", where);
      ch.lookup = Str(cj, "lookup", where);
      ch.act = Str(cj, "act", where);
      if (!cat.Find(ch.lookup) || !cat.Find(ch.act)) Fail(where, "names an unknown capability");
      for (const auto& [k, v] : cj["lookup_args"].items()) ch.lookup_args[k] = v.get<std::string>();
      for (const auto& [k, v] : cj["act_args"].items()) ch.act_args[k] = v.get<std::string>();
      for (const auto& [sid, sj] : cj["slots"].items()) ch.slots.push_back(ParseSlot(sid, sj, where));
      for (const auto& s : ch.slots) check_pool(s, where);
      ch.templates = ParseTemplates(cj, "templates", "chain:" + ch.id, true, ch.slots, where, counter);
      ch.avoid = Strings(cj, "avoid", where);
      for (const std::string& a : ch.avoid)
        if (!cat.Find(a)) Fail(where, "avoid names an unknown capability '" + a + "'");
      AssignTemplateSplits(ch.templates, "chain:" + ch.id);
      cat.chains.push_back(std::move(ch));
    }
    for (const auto& fj : j.value("followups", ojson::array())) {
      FollowUp f;
      f.id = Str(fj, "id", sf);
      const std::string where = sf + " followup '" + f.id + "'";
      f.act = Str(fj, "act", where);
      const Capability* act = cat.Find(f.act);
      if (!act) Fail(where, "names an unknown capability");
      f.after = Strings(fj, "after", where);
      for (const auto& [k, v] : fj["args"].items()) f.args[k] = v.get<std::string>();
      std::vector<SlotDef> fslots = act->slots;  // follow-up templates may name the act's slots
      fslots.push_back(ParseSlot("first", ojson{{"kind", "text"}, {"pool", "first_name"}}, where));
      f.templates = ParseTemplates(fj, "templates", "followup:" + f.id, true, fslots, where, counter);
      AssignTemplateSplits(f.templates, "followup:" + f.id);
      cat.followups.push_back(std::move(f));
    }
  }
  return cat;
}

}  // namespace needle::data
