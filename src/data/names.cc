#include "data/names.h"

#include <algorithm>
#include <cctype>

#include "data/words.h"  // SplitIdentifier, JoinIdentifier

namespace needle::data {

namespace {

std::string InventedWordForName(Rng& rng) {
  static const char* const kSyl[] = {"zo", "ka", "vi", "ner", "lum", "tex", "qua", "mir", "dex", "sol", "bri",
                                     "fen", "or", "ix", "ta", "rel", "nov", "pix", "gal", "tor", "mo", "ly"};
  std::string w;
  const int n = static_cast<int>(rng.Range(2, 3));
  for (int i = 0; i < n; ++i) w += kSyl[rng.Below(std::size(kSyl))];
  return w;
}

std::vector<std::string> Allowed(const std::vector<std::string>& words, const std::string& what, Split split,
                                 bool keep_first) {
  const std::vector<Split> sp = StratifiedSplits(words, what, keep_first);
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); ++i)
    if (SplitAllows(split, sp[i])) out.push_back(words[i]);
  return out.empty() ? words : out;
}

std::vector<std::string> LexList(const Catalogue& cat, const std::string& key) {
  std::vector<std::string> out;
  if (cat.lexicon.contains(key))
    for (const auto& x : cat.lexicon[key]) out.push_back(x.get<std::string>());
  return out;
}

// Abbreviates some words ("temperature" -> "temp") with probability p each.
void Abbreviate(std::vector<std::string>& words, const Catalogue& cat, double p, Rng& rng) {
  if (!cat.lexicon.contains("abbreviations")) return;
  const auto& ab = cat.lexicon["abbreviations"];
  for (std::string& w : words) {
    if (ab.contains(w) && rng.Chance(p)) {
      const auto& alts = ab[w];
      w = alts[rng.Below(alts.size())].get<std::string>();
    }
  }
}

// A parameter name that states a unit ("minutes", "duration_sec", "cm") must
// state the unit the argument is written in.
bool UnitAgrees(const std::string& name, Rep rep) {
  static const std::vector<std::pair<Rep, std::vector<std::string>>> kUnits = {
      {Rep::kSeconds, {"seconds", "secs", "sec", "s", "ms"}},
      {Rep::kMinutes, {"minutes", "mins", "min"}},
      {Rep::kHours, {"hours", "hrs", "hour", "h"}},
      {Rep::kMeters, {"meters", "metres", "m"}},
      {Rep::kCentimeters, {"cm", "centimeters", "centimetres"}}};
  for (const std::string& w : SplitIdentifier(name)) {
    for (const auto& [r, words] : kUnits)
      if (std::find(words.begin(), words.end(), w) != words.end() && r != rep) return false;
  }
  return true;
}

CaseStyle DrawToolStyle(Rng& rng) {
  const size_t r = rng.Below(100);
  if (r < 46) return CaseStyle::kSnake;
  if (r < 74) return CaseStyle::kCamel;
  if (r < 82) return CaseStyle::kPascal;
  if (r < 88) return CaseStyle::kKebab;
  if (r < 95) return CaseStyle::kDot;
  if (r < 98) return CaseStyle::kFlat;
  return CaseStyle::kScreaming;
}

CaseStyle ParamStyleFor(CaseStyle tool, Rng& rng) {
  if (tool == CaseStyle::kCamel || tool == CaseStyle::kPascal) return rng.Chance(0.85) ? CaseStyle::kCamel : CaseStyle::kSnake;
  return rng.Chance(0.88) ? CaseStyle::kSnake : CaseStyle::kCamel;
}

std::string FillNumberPattern(const std::string& pattern, Rng& rng) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 3, "{n}") == 0) {
      out += std::to_string(rng.Chance(0.5) ? rng.Range(1, 40) : rng.Range(1, 999));
      i += 2;
    } else if (pattern.compare(i, 5, "{hex}") == 0) {
      static const char* const kHex = "0123456789abcdef";
      const int n = static_cast<int>(rng.Range(2, 4));
      for (int k = 0; k < n; ++k) out += kHex[rng.Below(16)];
      i += 4;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::string PrefixJoin(const std::string& prefix, const std::string& name, CaseStyle style, Rng& rng) {
  const std::vector<std::string> pw = SplitIdentifier(prefix);
  switch (style) {
    case CaseStyle::kCamel: return JoinIdentifier(pw, CaseStyle::kCamel) + CapitalizeFirst(name);
    case CaseStyle::kPascal: return JoinIdentifier(pw, CaseStyle::kPascal) + name;
    case CaseStyle::kKebab: return JoinIdentifier(pw, CaseStyle::kKebab) + "-" + name;
    case CaseStyle::kScreaming: return JoinIdentifier(pw, CaseStyle::kScreaming) + "_" + name;
    case CaseStyle::kDot: return JoinIdentifier(pw, CaseStyle::kFlat) + "." + name;
    default: return JoinIdentifier(pw, CaseStyle::kSnake) + (rng.Chance(0.8) ? "_" : ".") + name;
  }
}

std::string DrawToolName(const Capability& cap, const Catalogue& cat, Split split, Rng& rng, CaseStyle& style) {
  style = DrawToolStyle(rng);
  if (rng.Chance(0.04)) {
    const std::vector<std::string> opaque = Allowed(LexList(cat, "opaque_tool_names"), "opaque", split, false);
    if (!opaque.empty()) {
      style = CaseStyle::kSnake;
      return FillNumberPattern(rng.Pick(opaque), rng);
    }
  }
  const std::vector<std::string> verbs = Allowed(cap.verbs, "verb:" + cap.id, split, true);
  const std::vector<std::string> objects = Allowed(cap.objects, "object:" + cap.id, split, true);
  std::vector<std::string> vw = SplitIdentifier(rng.Pick(verbs)), ow = SplitIdentifier(rng.Pick(objects));
  std::vector<std::string> words;
  const size_t order = rng.Below(100);
  if (style == CaseStyle::kDot) {
    // Namespaced: object.verb or domain.object.verb.
    if (rng.Chance(0.3)) words.push_back(cap.group);
    std::vector<std::string> obj = ow;
    Abbreviate(obj, cat, 0.15, rng);
    std::string o = JoinIdentifier(obj, rng.Chance(0.5) ? CaseStyle::kSnake : CaseStyle::kCamel);
    std::string v = JoinIdentifier(vw, rng.Chance(0.5) ? CaseStyle::kSnake : CaseStyle::kCamel);
    std::string name = (words.empty() ? "" : words[0] + ".") + o + "." + v;
    return name;
  }
  if (order < 72) {
    words = vw;
    words.insert(words.end(), ow.begin(), ow.end());
  } else if (order < 92) {
    words = ow;
    words.insert(words.end(), vw.begin(), vw.end());
  } else {
    words = ow;  // object only ("alarm", "thermostat")
    if (words.size() < 2) words.insert(words.begin(), vw.begin(), vw.end());
  }
  Abbreviate(words, cat, 0.12, rng);
  std::string name = JoinIdentifier(words, style);
  if (rng.Chance(0.05)) {
    const std::vector<std::string> suf = Allowed(LexList(cat, "tool_suffixes"), "suffix", split, false);
    if (!suf.empty()) {
      const std::vector<std::string> sw = SplitIdentifier(rng.Pick(suf));
      std::vector<std::string> all = words;
      all.insert(all.end(), sw.begin(), sw.end());
      name = JoinIdentifier(all, style);
    }
  }
  if (rng.Chance(0.3)) {
    std::string prefix;
    if (rng.Chance(0.3)) {
      prefix = InventedWordForName(rng);
    } else {
      // Vendors of the capability's domain most of the time, any vendor sometimes.
      std::vector<std::string> pre;
      if (cat.lexicon.contains("domain_prefixes") && cat.lexicon["domain_prefixes"].contains(cap.domain) && rng.Chance(0.75))
        for (const auto& x : cat.lexicon["domain_prefixes"][cap.domain]) pre.push_back(x.get<std::string>());
      if (pre.empty()) pre = LexList(cat, "tool_prefixes");
      pre = Allowed(pre, "prefix", split, false);
      if (!pre.empty()) prefix = rng.Pick(pre);
    }
    if (!prefix.empty()) name = PrefixJoin(prefix, name, style, rng);
  }
  return name;
}

}  // namespace

Split NameBucket(const std::string& tool_name) { return BucketOf(tool_name, "toolname"); }

std::string HumanizeName(const std::string& id) {
  std::string out;
  for (const std::string& w : SplitIdentifier(id)) out += (out.empty() ? "" : " ") + w;
  return out;
}

void SynthesizeParams(ToolSpec& tool, const std::vector<SlotDef>& slots, const Catalogue& cat, Split split, Rng& rng,
                      CaseStyle tool_style, const std::vector<std::string>& object_words) {
  const CaseStyle pstyle = ParamStyleFor(tool_style, rng);
  const bool opaque_params = rng.Chance(0.02);
  ojson props = ojson::object();
  ojson required = ojson::array();
  std::set<std::string> used;
  std::vector<const SlotDef*> order;
  for (const SlotDef& s : slots) {
    if (s.kind == SlotKind::kRef && !s.required) continue;
    if (!s.required && !rng.Chance(0.75)) continue;
    order.push_back(&s);
  }
  if (rng.Chance(0.25)) rng.Shuffle(order);
  const ojson& hints = cat.lexicon.contains("param_hints") ? cat.lexicon["param_hints"] : ojson::object();
  const ojson& unit_names = cat.lexicon.contains("unit_name_suffixes") ? cat.lexicon["unit_name_suffixes"] : ojson::object();
  int k = 0;
  for (const SlotDef* s : order) {
    ParamBinding b;
    b.slot = s->id;
    b.required = s->required && !rng.Chance(0.08);
    // Representation.
    std::vector<std::string> reps = s->reps;
    std::string rep_name = rng.Pick(reps);
    static const std::map<std::string, Rep> kReps = {
        {"copy", Rep::kCopy},       {"int", Rep::kInt},         {"number", Rep::kNumber},
        {"time24", Rep::kTime24},   {"date", Rep::kDate},       {"seconds", Rep::kSeconds},
        {"minutes", Rep::kMinutes}, {"hours", Rep::kHours},     {"meters", Rep::kMeters},
        {"centimeters", Rep::kCentimeters}, {"enum", Rep::kEnum}, {"bool", Rep::kBool},
        {"list", Rep::kStringList}, {"items", Rep::kObjectList}};
    b.rep = kReps.count(rep_name) ? kReps.at(rep_name) : Rep::kCopy;
    // Name.
    std::string name;
    for (int attempt = 0; attempt < 20; ++attempt) {
      if (opaque_params) {
        name = (rng.Chance(0.5) ? "arg" : "p") + std::to_string(k + (rng.Chance(0.5) ? 0 : 1));
      } else {
        std::vector<std::string> candidates;
        for (const std::string& n : Allowed(s->names, "pname:" + s->id, split, true))
          if (UnitAgrees(n, b.rep)) candidates.push_back(n);
        if (candidates.empty()) candidates = {s->id};
        std::vector<std::string> words = SplitIdentifier(rng.Pick(candidates));
        Abbreviate(words, cat, 0.1, rng);
        if (rng.Chance(0.08) && !object_words.empty() && words.size() == 1) words.insert(words.begin(), object_words.back());
        const std::string rn = RepName(b.rep);
        if (unit_names.contains(rn) && rng.Chance(0.5)) {
          const auto& alts = unit_names[rn];
          const std::vector<std::string> uw = SplitIdentifier(alts[rng.Below(alts.size())].get<std::string>());
          bool has = false;
          for (const auto& w : words)
            for (const auto& u : uw) has = has || w == u;
          if (!has) words.insert(words.end(), uw.begin(), uw.end());
        }
        name = JoinIdentifier(words, pstyle);
      }
      if (!used.count(name)) break;
      name += std::to_string(attempt + 2);
      if (!used.count(name)) break;
    }
    used.insert(name);
    b.name = name;
    ojson prop = ojson::object();
    // Type and format.
    switch (b.rep) {
      case Rep::kCopy: prop["type"] = "string"; break;
      case Rep::kInt:
      case Rep::kSeconds:
      case Rep::kCentimeters: prop["type"] = "integer"; break;
      case Rep::kMinutes: prop["type"] = rng.Chance(0.8) ? "integer" : "number"; break;
      case Rep::kNumber:
      case Rep::kHours:
      case Rep::kMeters: prop["type"] = "number"; break;
      case Rep::kTime24: prop["type"] = "string", prop["format"] = "time"; break;
      case Rep::kDate: prop["type"] = "string", prop["format"] = "date"; break;
      case Rep::kDateTime: prop["type"] = "string", prop["format"] = "date-time"; break;
      case Rep::kEnum: prop["type"] = "string"; break;
      case Rep::kBool: prop["type"] = "boolean"; break;
      case Rep::kStringList: prop["type"] = "array", prop["items"] = ojson{{"type", "string"}}; break;
      case Rep::kObjectList: prop["type"] = "array"; break;
    }
    // Description (units and formats always stated somewhere: name, format or description).
    std::string desc = s->descriptions.empty() || rng.Chance(0.12) ? "" : rng.Pick(s->descriptions);
    const std::string rn = RepName(b.rep);
    bool name_has_unit = false;
    if (unit_names.contains(rn)) {
      for (const auto& u : unit_names[rn])
        for (const auto& w : SplitIdentifier(name)) name_has_unit = name_has_unit || w == SplitIdentifier(u.get<std::string>()).back();
    }
    const bool needs_unit = b.rep == Rep::kSeconds || b.rep == Rep::kMinutes || b.rep == Rep::kHours ||
                            b.rep == Rep::kMeters || b.rep == Rep::kCentimeters;
    if (hints.contains(rn) && (rng.Chance(0.5) || (needs_unit && !name_has_unit))) {
      const auto& hs = hints[rn];
      const std::string h = hs[rng.Below(hs.size())].get<std::string>();  // " in seconds", " (HH:MM)"
      if (desc.empty()) {
        desc = CapitalizeFirst(HumanizeName(s->id)) + h;
      } else {
        const bool dot = desc.back() == '.';
        if (dot) desc.pop_back();
        desc += h + (dot ? "." : "");
      }
    }
    if (desc.empty() && opaque_params) desc = CapitalizeFirst(HumanizeName(s->names[0]));
    if (b.rep == Rep::kEnum) {
      // Declared spellings of the values: one transform for the whole tool.
      std::vector<const EnumValue*> vals;
      for (const auto& v : s->values) vals.push_back(&v);
      if (s->subsettable && vals.size() >= 4 && rng.Chance(0.35)) {
        // Declare a subset (keeps the catalogue order); requests may then ask for a missing value.
        const size_t drop = vals.size() >= 5 && rng.Chance(0.5) ? 2 : 1;
        std::set<size_t> gone;
        while (gone.size() < drop) gone.insert(rng.Below(vals.size()));
        std::vector<const EnumValue*> keep;
        for (size_t i = 0; i < vals.size(); ++i)
          if (!gone.count(i)) keep.push_back(vals[i]);
        vals = keep;
      }
      const size_t t = rng.Below(100);
      std::map<std::string, std::string> m;
      std::set<std::string> seen;
      bool distinct = true;
      for (const EnumValue* v : vals) {
        std::string d = v->id;
        if (t < 45) d = v->id;
        else if (t < 60) d = Upper(v->id);
        else if (t < 72) d = CapitalizeFirst(v->id);
        else if (t < 94) d = v->alts.empty() ? v->id : v->alts[0];
        else d = Upper(s->id) + "_" + Upper(v->id);
        for (char& c : d)
          if (c == ' ') c = '_';
        distinct = distinct && seen.insert(d).second;
        m[v->id] = d;
      }
      if (!distinct)
        for (const EnumValue* v : vals) m[v->id] = v->id;
      ojson e = ojson::array();
      for (const EnumValue* v : vals) e.push_back(m[v->id]);
      prop["enum"] = e;
      b.enum_map = m;
      if (rng.Chance(0.15) && !desc.empty()) {
        std::string list;
        for (const EnumValue* v : vals) list += (list.empty() ? "" : ", ") + m[v->id];
        desc += " (one of " + list + ")";
      }
    }
    if (b.rep == Rep::kBool && (desc.empty() || rng.Chance(0.3))) {
      std::string other;
      for (const auto& v : s->values)
        if (v.id != s->bool_true && other.empty()) other = v.id;
      desc = (desc.empty() ? "" : desc + ": ") + "true = " + s->bool_true + ", false = " + other;
    }
    if ((b.rep == Rep::kInt || b.rep == Rep::kNumber) && s->has_range && rng.Chance(0.8)) {
      b.has_min = b.has_max = true;
      b.min = s->min, b.max = s->max;
      prop["minimum"] = b.rep == Rep::kInt ? ojson(static_cast<long long>(s->min)) : ojson(s->min);
      prop["maximum"] = b.rep == Rep::kInt ? ojson(static_cast<long long>(s->max)) : ojson(s->max);
    }
    if (b.rep == Rep::kObjectList) {
      // Item fields keep their catalogue names (records are extraction-only and rarely synthesised).
      ojson ip = ojson::object(), ireq = ojson::array();
      for (const SlotDef& f : s->fields) {
        ParamBinding fb;
        fb.slot = f.id;
        fb.name = JoinIdentifier(SplitIdentifier(f.names.empty() ? f.id : f.names[0]), pstyle);
        ojson fp = ojson::object();
        if (f.kind == SlotKind::kInt) fb.rep = Rep::kInt, fp["type"] = "integer";
        else if (f.kind == SlotKind::kNumber) fb.rep = Rep::kNumber, fp["type"] = "number";
        else if (f.kind == SlotKind::kDate) fb.rep = Rep::kDate, fp["type"] = "string", fp["format"] = "date";
        else fb.rep = Rep::kCopy, fp["type"] = "string";
        ip[fb.name] = fp;
        b.fields.push_back(fb);
      }
      prop["items"] = ojson{{"type", "object"}, {"properties", ip}};
    }
    if (!desc.empty()) {
      ojson p2 = ojson::object();
      p2["type"] = prop["type"];
      p2["description"] = desc;
      for (const auto& [kk, vv] : prop.items())
        if (kk != "type") p2[kk] = vv;
      prop = p2;
    }
    props[name] = prop;
    if (b.required) required.push_back(name);
    tool.params.push_back(b);
    ++k;
  }
  // Sometimes an optional parameter nobody asks for (never filled: nothing evidences it).
  if (cat.lexicon.contains("extra_params") && rng.Chance(0.22)) {
    const auto& extras = cat.lexicon["extra_params"];
    const ojson& x = extras[rng.Below(extras.size())];
    std::string n = JoinIdentifier(SplitIdentifier(x["name"].get<std::string>()), pstyle);
    if (!used.count(n)) {
      ParamBinding b;
      b.name = n;
      props[n] = CleanSchema(x["schema"]);
      tool.params.push_back(b);
    }
  }
  ojson params = ojson::object();
  params["type"] = "object";
  params["properties"] = props;
  if (!required.empty()) params["required"] = required;
  tool.schema["parameters"] = params;
}

ToolSpec SynthesizeSpelling(const Capability& cap, const Catalogue& cat, Split split, Rng& rng,
                            const std::set<std::string>& taken) {
  ToolSpec t;
  t.cap = &cap;
  t.origin = "synthetic";
  CaseStyle style = CaseStyle::kSnake;
  std::string name;
  for (int attempt = 0;; ++attempt) {
    name = DrawToolName(cap, cat, split, rng, style);
    const bool ok = NameBucket(name) == split && !cat.catalogue_names.count(name) && !taken.count(name);
    if (ok) break;
    if (attempt > 200) {  // practically unreachable; keep the split rule anyway
      for (int k = 2;; ++k) {
        const std::string alt = name + std::to_string(k);
        if (NameBucket(alt) == split && !cat.catalogue_names.count(alt) && !taken.count(alt)) {
          name = alt;
          break;
        }
      }
      break;
    }
  }
  t.schema = ojson::object();
  t.schema["name"] = name;
  const bool opaque = SplitIdentifier(name).size() <= 2 && std::any_of(name.begin(), name.end(), ::isdigit);
  // Description: a written one, a composed one, or (rarely, never for opaque names) none.
  const size_t r = rng.Below(100);
  std::string desc;
  if (r < 50 && !cap.descriptions.empty()) {
    desc = rng.Pick(cap.descriptions);
  } else if (r < 93 || opaque) {
    std::vector<std::string> pats = cat.Words("tool_description_patterns", split);
    if (pats.empty()) pats = {"{Does}."};
    std::string p = rng.Pick(pats);
    const std::string does = cap.does;
    for (size_t i; (i = p.find("{does}")) != std::string::npos;) p.replace(i, 6, does);
    for (size_t i; (i = p.find("{Does}")) != std::string::npos;) p.replace(i, 6, CapitalizeFirst(does));
    desc = p;
  }
  if (!desc.empty()) t.schema["description"] = desc;
  std::vector<std::string> object_words = SplitIdentifier(cap.objects[0]);
  SynthesizeParams(t, cap.slots, cat, split, rng, style, object_words);
  return t;
}

}  // namespace needle::data
