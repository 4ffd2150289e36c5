// Tools to declare: catalogue spellings or synthesised ones, distractors beside
// the target, invented capabilities with random names, and the user's own
// schemas (--tools).
#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "base/error.h"               // Error
#include "data/generator_internal.h"  // Build
#include "data/names.h"               // SynthesizeSpelling, SynthesizeParams, NameBucket, HumanizeName
#include "data/words.h"               // Lower, SplitIdentifier, JoinIdentifier
#include "grammar/schema_compose.h"   // ComposeToolSchemas

namespace needle::data {

namespace {

constexpr int kMaxTools = 8;

int DrawToolCount(Rng& rng, int max_tools) {
  static const std::vector<double> kW = {12, 14, 18, 18, 16, 10, 7, 5};
  const std::vector<double> w(kW.begin(), kW.begin() + std::clamp(max_tools, 1, kMaxTools));
  return static_cast<int>(rng.Weighted(w)) + 1;
}

}  // namespace

bool Overlapping(const Capability& a, const Capability& b) {
  return &a == &b || std::count(a.overlaps.begin(), a.overlaps.end(), b.id) ||
         std::count(b.overlaps.begin(), b.overlaps.end(), a.id);
}

// Tools to declare: 1..max_tools, weighted towards 3-5.
int Build::ToolCount() { return DrawToolCount(rng, g.opt_.max_tools); }

const ToolSpec& Build::MakeSpelling(const Capability& cap, double catalogue_p) {
  std::vector<size_t> cands;
  for (size_t i = 0; i < cap.spellings.size(); ++i)
    if (cap.spelling_split[i] == split && !names.count(cap.spellings[i].name())) cands.push_back(i);
  if (!cands.empty() && rng.Chance(catalogue_p)) {
    store.push_back(cap.spellings[cands[rng.Below(cands.size())]]);
  } else {
    store.push_back(SynthesizeSpelling(cap, cat, split, rng, names));
  }
  return store.back();
}

const ToolSpec& Build::Declare(const ToolSpec& t) {
  names.insert(t.name());
  declared.push_back(&t);
  return t;
}

bool Build::IsDeclaredCap(const Capability* c) const {
  for (const ToolSpec* t : declared)
    if (t->cap == c) return true;
  return false;
}

const ToolSpec* Build::DeclaredFor(const Capability* c) const {
  for (const ToolSpec* t : declared)
    if (t->cap == c) return t;
  return nullptr;
}

// Adds distractors up to `total` tools: similar ones first (same group, then domain).
void Build::AddDistractors(const std::vector<const Capability*>& primary, int total,
                           const std::vector<const Capability*>& avoid) {
  auto allowed = [&](const Capability* c) {
    if (IsDeclaredCap(c) || c->domain == "extraction" || !c->session_role.empty()) return false;
    if (no_open_ended && c->open_ended) return false;
    for (const Capability* p : primary)
      if (Overlapping(*p, *c)) return false;
    for (const Capability* p : avoid)
      if (Overlapping(*p, *c)) return false;
    return true;
  };
  for (int guard = 0; static_cast<int>(declared.size()) < total && guard < 60; ++guard) {
    const Capability* anchor = primary.empty() ? nullptr : primary[rng.Below(primary.size())];
    const size_t r = rng.Below(100);
    const std::vector<const Capability*>* list = &g.pool_;
    if (anchor && r < 45 && g.by_group_.count(anchor->group)) list = &g.by_group_.at(anchor->group);
    else if (anchor && r < 75 && g.by_domain_.count(anchor->domain)) list = &g.by_domain_.at(anchor->domain);
    if (list->empty()) continue;
    const Capability* c = (*list)[rng.Below(list->size())];
    if (!allowed(c)) continue;
    Declare(MakeSpelling(*c));
  }
}

ojson Build::ToolsJson() {
  ojson a = ojson::array();
  for (const ToolSpec* t : declared) {
    a.push_back(t->schema);
    meta.tools.push_back(t->name());
    meta.origins.push_back(t->origin);
  }
  return a;
}

// ---- invented capabilities (random names, generic phrasing) --------------------------------
Capability& Build::Invent(const std::string& verb_in, const std::string& object_in) {
  Capability c;
  std::vector<std::string> verbs = Words("invented_verbs"), objects = Words("invented_objects");
  std::string verb = verb_in, object = object_in;
  if (verb.empty()) verb = verbs.empty() || rng.Chance(0.15) ? InventedWord(rng, 2, 2) : rng.Pick(verbs);
  if (object.empty()) {
    object = objects.empty() || rng.Chance(0.3) ? InventedWord(rng) : rng.Pick(objects);
    if (rng.Chance(0.25)) object = InventedWord(rng, 1, 2) + " " + object;
  }
  c.id = "invented:" + verb + "_" + object;
  c.domain = "invented";
  c.group = "invented";
  c.does = verb + " the " + object;
  c.verbs = {verb};
  c.objects = {object};
  // 1-4 parameters of distinct kinds.
  std::vector<const SlotDef*> kinds;
  for (const SlotDef& s : cat.invented_params) kinds.push_back(&s);
  rng.Shuffle(kinds);
  const size_t n = std::min<size_t>(kinds.size(), 1 + rng.Weighted({30, 35, 25, 10}));
  bool any_required = false;
  for (size_t i = 0; i < n; ++i) {
    SlotDef s = *kinds[i];
    s.required = rng.Chance(0.6);
    any_required = any_required || s.required;
    if (s.kind == SlotKind::kEnum && rng.Chance(0.35)) {
      // Values nobody has seen.
      s.values.clear();
      const int k = static_cast<int>(rng.Range(2, 4));
      std::set<std::string> seen;
      while (static_cast<int>(s.values.size()) < k) {
        const std::string w = InventedWord(rng, 1, 2);
        if (!seen.insert(w).second) continue;
        s.values.push_back(EnumValue{w, {w}, {}});
      }
      s.bool_true.clear();
      s.reps = {"enum"};
    }
    c.slots.push_back(s);
  }
  if (!any_required) c.slots[0].required = true;
  owned.push_back(std::move(c));
  return owned.back();
}

// Tool for an invented capability: name from its words, parameters synthesised.
const ToolSpec& Build::InventedTool(Capability& c) {
  ToolSpec t;
  t.cap = &c;
  t.origin = "invented";
  std::vector<std::string> words = SplitIdentifier(c.verbs[0]);
  for (const auto& w : SplitWords(c.objects[0])) words.push_back(w);
  static const CaseStyle kStyles[] = {CaseStyle::kSnake, CaseStyle::kCamel, CaseStyle::kSnake,
                                      CaseStyle::kPascal, CaseStyle::kKebab, CaseStyle::kCamel};
  CaseStyle style = kStyles[rng.Below(std::size(kStyles))];
  std::string name;
  for (int attempt = 0; attempt < 100; ++attempt) {
    name = JoinIdentifier(words, style);
    if (rng.Chance(0.3)) name = JoinIdentifier({InventedWord(rng, 1, 2)}, CaseStyle::kSnake) + "_" + name;
    if (rng.Chance(0.05)) name = "tool_" + std::to_string(rng.Range(1, 99));
    if (NameBucket(name) == split && !names.count(name) && !cat.catalogue_names.count(name)) break;
    style = kStyles[rng.Below(std::size(kStyles))];
  }
  t.schema = ojson::object();
  t.schema["name"] = name;
  std::vector<std::string> pats = Words("tool_description_patterns");
  std::string d = pats.empty() ? "{Does}." : rng.Pick(pats);
  for (size_t i; (i = d.find("{does}")) != std::string::npos;) d.replace(i, 6, c.does);
  for (size_t i; (i = d.find("{Does}")) != std::string::npos;) d.replace(i, 6, CapitalizeFirst(c.does));
  t.schema["description"] = d;
  SynthesizeParams(t, c.slots, cat, split, rng, style, SplitWords(c.objects[0]));
  store.push_back(std::move(t));
  return store.back();
}

// ---- user tools (--tools) ---------------------------------------------------------------------
namespace {

// Imperative phrase of a sentence ("Turns on the porch light" -> "turn on the
// porch light"), or "".
std::string ImperativeOf(const std::string& s) {
  std::vector<std::string> w = SplitWords(s);
  if (w.empty() || w.size() > 12) return "";
  std::string v = Lower(w[0]);
  // Already imperative ("Get the current weather for a city"): a verb then a
  // determiner or particle; "Weather forecast for a city" is not a request.
  static const std::set<std::string> kAfterVerb = {"a",   "an",  "the", "my",  "your", "one", "some", "all",  "any", "current",
                                                   "new", "up",  "down", "on", "off",  "out", "to",   "for",  "from", "in", "into"};
  static const std::set<std::string> kNotVerbs = {"the", "a", "an", "this", "that", "it", "one", "all", "any", "each"};
  if (w.size() > 1 && !kNotVerbs.count(v) && kAfterVerb.count(Lower(w[1])) && v.back() != 's') {
    // taken as it is
  } else if (v.size() > 3 && v.back() == 's' && v != "this" && v != "does") {
    if (EndsWith(v, "ies")) v = v.substr(0, v.size() - 3) + "y";
    else if (EndsWith(v, "sses") || EndsWith(v, "shes") || EndsWith(v, "ches") || EndsWith(v, "xes") || EndsWith(v, "zes"))
      v = v.substr(0, v.size() - 2);
    else v.pop_back();
  } else {
    return "";
  }
  std::string out = v;
  for (size_t i = 1; i < w.size(); ++i) out += " " + w[i];
  if (out.find(" or ") != std::string::npos) return "";  // "turn the light on or off" is not one request
  for (char c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '-' || c == '\'')) return "";
  return out;
}

// Imperative phrase from a description's first sentence, or from its first
// clause when the sentence is long or holds formulas ("Calculate the Euclidean
// norm, sqrt(sum(squares)), of ..." -> "calculate the Euclidean norm").
std::string Imperative(const std::string& description) {
  const std::string sentence = description.substr(0, description.find_first_of(".\n"));
  std::string out = ImperativeOf(sentence);
  const std::string clause = sentence.substr(0, sentence.find_first_of(",;:("));
  if (out.empty() && clause.size() < sentence.size() && SplitWords(clause).size() >= 3) out = ImperativeOf(clause);
  return out;
}

// Whether `w` occurs in `text` as a whole word.
bool WholeWord(const std::string& text, const std::string& w) {
  for (size_t at = text.find(w); at != std::string::npos; at = text.find(w, at + 1)) {
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    const size_t end = at + w.size();
    const bool right = end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
  }
  return false;
}

// The example a description gives of an identifier ("e.g. AAPL", "such as
// SKU-1234"): a token with a capital, a digit or punctuation, else "" (words
// such as "e.g. the user's name" are not a shape).
std::string ExampleShape(const std::string& desc) {
  for (const char* cue : {"e.g. ", "e.g., ", "eg. ", "for example ", "for example, ", "such as "}) {
    const size_t at = desc.find(cue);
    if (at == std::string::npos) continue;
    size_t b = at + std::string(cue).size();
    while (b < desc.size() && (desc[b] == '\'' || desc[b] == '"' || desc[b] == '`')) ++b;
    size_t e = b;
    while (e < desc.size() && !std::isspace(static_cast<unsigned char>(desc[e])) && desc[e] != ',' && desc[e] != ')' &&
           desc[e] != '\'' && desc[e] != '"' && desc[e] != '`' && desc[e] != ';')
      ++e;
    std::string token = desc.substr(b, e - b);
    while (!token.empty() && (token.back() == '.' || token.back() == ':')) token.pop_back();
    bool alnum = false, marked = false;
    for (char c : token) {
      alnum = alnum || std::isalnum(static_cast<unsigned char>(c));
      marked = marked || std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
               !std::isalnum(static_cast<unsigned char>(c));
    }
    if (alnum && marked && token.size() <= 24) return token;
  }
  return "";
}

// What moment a string property holds, from its format, name and description:
// "date-time" ("Start time, ISO 8601", "Date and time of the meeting",
// "timestamp"), "date" ("YYYY-MM-DD", "departure_date", "Due date"), "time"
// ("Time in HH:MM", "Start time"), or "" for none.
std::string MomentKind(const std::string& pname, const ojson& prop) {
  const std::string format = prop.contains("format") && prop["format"].is_string() ? prop["format"].get<std::string>() : "";
  if (format == "date-time" || format == "date" || format == "time") return format;
  const std::string desc = Lower(prop.contains("description") && prop["description"].is_string()
                                     ? prop["description"].get<std::string>()
                                     : "");
  std::vector<std::string> name_words = SplitIdentifier(pname);
  for (std::string& w : name_words) w = Lower(w);
  std::set<std::string> desc_words;
  std::string word;
  for (char c : desc + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) word += c;
    else if (!word.empty()) desc_words.insert(word), word.clear();
  }
  auto named = [&](const char* w) { return std::find(name_words.begin(), name_words.end(), w) != name_words.end(); };
  auto says = [&](const char* w) { return desc_words.count(w) > 0; };
  auto has = [&](const char* t) { return desc.find(t) != std::string::npos; };
  if (has("yyyy-mm-ddthh") || has("date-time") || has("datetime") || has("date and time") || says("timestamp") ||
      named("timestamp") || named("datetime"))
    return "date-time";
  const bool iso = has("iso 8601") || has("iso-8601") || has("iso8601");
  const bool zone = has("time zone") || has("timezone") || named("zone") || named("tz");
  const bool date = named("date") || named("day") || says("date") || has("yyyy-mm-dd");
  const bool time = !zone && (named("time") || has("hh:mm") || says("time"));
  if (date && time) return "date-time";
  if (time) return iso ? "date-time" : "time";  // an ISO 8601 "start time" is an instant
  if (date) return "date";
  return "";
}

// Slot for a user's property, from its type, format, enum and name.
SlotDef UserSlot(const std::string& pname, const ojson& prop, const Catalogue& cat, const std::string& where) {
  SlotDef s;
  s.id = "u_" + std::to_string(StableHash(pname) % 100000);
  s.names = {pname};
  const std::string type = prop.contains("type") && prop["type"].is_string() ? prop["type"].get<std::string>() : "string";
  const std::string format = prop.value("format", "");
  const std::string lname = Lower(pname) + " " + Lower(prop.value("description", ""));
  auto has = [&](std::initializer_list<const char*> ws) {
    for (const char* w : ws)
      if (lname.find(w) != std::string::npos) return true;
    return false;
  };
  if (prop.contains("enum")) {
    s.kind = SlotKind::kEnum;
    for (const auto& v : prop["enum"]) {
      if (!v.is_string()) throw Error(ErrorCode::kInvalidArgument, where + ": only string enums are supported");
      const std::string d = v.get<std::string>();
      std::string say = Lower(d);
      for (char& c : say)
        if (c == '_' || c == '-') c = ' ';
      s.values.push_back(EnumValue{d, {say}, {}});
    }
    return s;
  }
  if (type == "boolean") {
    s.kind = SlotKind::kEnum;
    s.values = {EnumValue{"true", {"on", "yes", "true", "enabled"}, {}}, EnumValue{"false", {"off", "no", "false", "disabled"}, {}}};
    s.bool_true = "true";
    return s;
  }
  if (type == "integer" || type == "number") {
    s.kind = type == "integer" ? SlotKind::kInt : SlotKind::kNumber;
    // Counts of people or things ("Number of guests", party_size) are small
    // when the schema gives no bounds; other numbers range wider.
    const bool count = has({"number of", "count", "size", "guests", "people", "persons", "quantity", "seats", "tickets", "rooms"});
    // Without bounds, the everyday range of what the description measures
    // (a room in Celsius, a percentage, a rating); else 1-100, or 1-12 for counts.
    static const std::vector<std::tuple<std::vector<const char*>, double, double>> kRanges = {
        {{"celsius", "\u00b0c"}, 10, 30},     {{"fahrenheit", "\u00b0f"}, 50, 86}, {{"percent", "percentage", "%"}, 0, 100},
        {{"latitude"}, -90, 90},             {{"longitude"}, -180, 180},       {{"rating", "stars"}, 1, 5},
        {{"kelvin"}, 2700, 6500}};
    std::vector<std::string> pwords = SplitIdentifier(pname);
    for (std::string& w : pwords) w = Lower(w);
    auto name_has = [&](const char* w) { return std::find(pwords.begin(), pwords.end(), w) != pwords.end(); };
    double lo = 1, hi = count ? 12 : 100;
    // A year or an age by the parameter's name ("years" and "per year" are counts).
    if (!pwords.empty() && pwords.back() == "year" && !name_has("per")) {
      lo = 1950, hi = 2030;
    } else if (name_has("age")) {
      lo = 1, hi = 99;
    } else {
      for (const auto& [cues, a, b] : kRanges) {
        bool hit = false;
        for (const char* w : cues) hit = hit || (std::string(w).size() <= 2 ? lname.find(w) != std::string::npos : WholeWord(lname, w));
        if (hit) {
          lo = a, hi = b;
          break;
        }
      }
    }
    s.min = prop.contains("minimum") ? prop["minimum"].get<double>() : (prop.contains("exclusiveMinimum") ? prop["exclusiveMinimum"].get<double>() + 1 : lo);
    s.max = prop.contains("maximum") ? prop["maximum"].get<double>() : (prop.contains("exclusiveMaximum") ? prop["exclusiveMaximum"].get<double>() - 1 : std::max(s.min + 1, s.min + (hi - lo)));
    s.has_range = true;
    s.decimals = type == "number" ? 1 : 0;
    s.forms = {"{n}", "{n}", "{w}"};
    return s;
  }
  if (type == "array") {
    s.kind = SlotKind::kList;
    s.pool = "generic_text";
    if (has({"tag", "label", "keyword"})) s.pool = "tag";
    else if (has({"name", "people", "attendee", "recipient", "member", "participant"})) s.pool = "person";
    else if (has({"email"})) s.pool = "email_address";
    s.list_max = 3;
    return s;
  }
  if (type != "string") throw Error(ErrorCode::kInvalidArgument, where + ": type '" + type + "' is not supported");
  // Dates and times by format, else by what the name or description says
  // (date-times are two slots: OwnTool).
  const std::string moment = MomentKind(pname, prop);
  if (moment == "date") return s.kind = SlotKind::kDate, s;
  if (moment == "time") return s.kind = SlotKind::kTime, s;
  const std::vector<std::string> name_words = SplitIdentifier(pname);
  auto named = [&](const char* w) { return std::find(name_words.begin(), name_words.end(), w) != name_words.end(); };
  s.kind = SlotKind::kText;
  // An entity id such as light.kitchen: the description's example ("e.g. light.kitchen")
  // names the entity's domain, whose pool spells ids the same way.
  if (named("entity")) {
    const std::string desc = prop.value("description", "");
    const size_t eg = desc.find("e.g. ");
    if (eg != std::string::npos) {
      const std::string domain = desc.substr(eg + 5, desc.find('.', eg + 5) - (eg + 5));
      if (cat.pools.count("entity_" + domain)) return s.pool = "entity_" + domain, s;
    }
  }
  static const std::vector<std::pair<std::vector<const char*>, const char*>> kHints = {
      {{"email"}, "email_address"},
      {{"phone", "number to call"}, "phone_number"},
      {{"url", "link", "website"}, "url"},
      {{"city", "town"}, "city"},
      {{"address", "destination", "location", "place"}, "place_name"},
      {{"language"}, "language"},
      {{"currency"}, "currency"},
      {{"color", "colour"}, "color"},
      {{"room", "zone", "area"}, "room"},
      {{"song", "track"}, "song"},
      {{"artist", "band"}, "artist"},
      {{"app"}, "app"},
      {{"contact", "recipient", "person", "name", "user", "assignee", "owner"}, "person"},
      {{"message", "body", "text", "content", "note", "comment"}, "message_body"},
      {{"title", "subject", "summary"}, "event_title"},
      {{"query", "search", "keyword", "term"}, "search_query"},
      {{"id", "code", "number", "sku", "ref"}, "code"},
  };
  s.pool = "generic_text";
  if (format == "email") s.pool = "email_address";
  else if (format == "uri") s.pool = "url";
  else {
    for (const auto& [words, pool] : kHints) {
      bool hit = false;
      for (const char* w : words) {
        // Whole-word match on the parameter name first.
        for (const std::string& pw : SplitIdentifier(pname)) hit = hit || pw == w;
      }
      if (hit && cat.pools.count(pool)) {
        s.pool = pool;
        break;
      }
    }
    // A code the description asks for ("ISO code of the currency", "IATA airport code").
    if (has({"currency"}) && has({"iso", "code", "3-letter", "three-letter"}) && cat.pools.count("currency_code")) s.pool = "currency_code";
    else if (has({"airport"}) && has({"iata", "code"}) && cat.pools.count("airport_code")) s.pool = "airport_code";
  }
  // An identifier the description shows ("Ticker symbol, e.g. AAPL"): values of its shape.
  if (s.pool == "generic_text" || s.pool == "code") s.shape = ExampleShape(prop.value("description", ""));
  return s;
}

}  // namespace

void Generator::SetUserTools(const ojson& tools_in) {
  const ojson& listed = tools_in.is_object() && tools_in.contains("tools") ? tools_in["tools"] : tools_in;
  if (!listed.is_array() || listed.empty())
    throw Error(ErrorCode::kInvalidArgument, "--tools: expected a non-empty JSON array of tool schemas");
  // $ref, allOf, anyOf and nullable read as the engine reads them (its session warns of the rest).
  std::vector<std::string> composition_warnings;
  const ojson tools = grammar::ComposeToolSchemas(listed, &composition_warnings);
  std::set<std::string> seen;
  for (size_t i = 0; i < tools.size(); ++i)
    user_tools_.push_back(OwnTool(tools[i], "--tools: tool " + std::to_string(i), "user", "user", seen));
}

ToolSpec Generator::OwnTool(const ojson& t, const std::string& where, const std::string& origin,
                            const std::string& domain, std::set<std::string>& seen) {
  {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      throw Error(ErrorCode::kInvalidArgument, where + ": needs a string 'name'");
    const std::string name = t["name"].get<std::string>();
    if (!seen.insert(name).second) throw Error(ErrorCode::kInvalidArgument, where + ": duplicate name '" + name + "'");
    const ojson params = t.contains("parameters") ? t["parameters"] : ojson{{"type", "object"}, {"properties", ojson::object()}};
    if (!params.is_object() || params.value("type", "object") != "object")
      throw Error(ErrorCode::kInvalidArgument, where + " '" + name + "': parameters must be a JSON Schema object");
    user_caps_.emplace_back();
    Capability& c = user_caps_.back();
    c.id = origin + ":" + name;
    c.domain = domain;
    c.group = origin;
    c.verbs = {HumanizeName(name)};
    c.objects = {HumanizeName(name)};
    const std::string desc = t.value("description", "");
    c.does = Imperative(desc);
    std::set<std::string> req;
    if (params.contains("required"))
      for (const auto& r : params["required"]) req.insert(r.get<std::string>());
    ToolSpec spec;
    spec.cap = &c;
    spec.origin = origin;
    spec.schema = ojson::object();
    spec.schema["name"] = name;
    if (t.contains("description")) spec.schema["description"] = t["description"];
    spec.schema["parameters"] = params;
    if (params.contains("properties")) {
      for (const auto& [pname, prop] : params["properties"].items()) {
        const std::string pw = where + " '" + name + "' property '" + pname + "'";
        const std::string type = prop.contains("type") && prop["type"].is_string() ? prop["type"].get<std::string>() : "string";
        // Nested objects and arrays of enum values have no phrasing here:
        // declared, never filled.
        const bool nested = type == "object" || (type == "array" && prop.contains("items") &&
                                                 (prop["items"].value("type", "string") != "string" || prop["items"].contains("enum")));
        if (!nested && type == "string" && !prop.contains("enum") && MomentKind(pname, prop) == "date-time") {
          // A date-time is a date slot and a time slot said together ("tomorrow at 3pm").
          SlotDef day, clock;
          day.id = "p" + std::to_string(c.slots.size());
          day.kind = SlotKind::kDate;
          clock.id = "p" + std::to_string(c.slots.size() + 1);
          clock.kind = SlotKind::kTime;
          day.names = clock.names = {pname};
          day.required = clock.required = req.count(pname) > 0;
          c.slots.push_back(day);
          c.slots.push_back(clock);
          ParamBinding b;
          b.name = pname;
          b.slot = day.id;
          b.slot2 = clock.id;
          b.rep = Rep::kDateTime;
          b.required = day.required;
          spec.params.push_back(b);
          continue;
        }
        if (nested) {
          if (req.count(pname))
            throw Error(ErrorCode::kInvalidArgument, pw + ": required nested objects and enum arrays are not supported");
          ParamBinding b;
          b.name = pname;
          spec.params.push_back(b);  // never filled
          continue;
        }
        SlotDef s = UserSlot(pname, prop, cat_, pw);
        s.id = "p" + std::to_string(c.slots.size());
        s.required = req.count(pname) > 0;
        c.slots.push_back(s);
        ParamBinding b;
        b.name = pname;
        b.slot = s.id;
        b.required = s.required;
        if (prop.contains("minimum")) b.has_min = true, b.min = prop["minimum"].get<double>();
        if (prop.contains("maximum")) b.has_max = true, b.max = prop["maximum"].get<double>();
        switch (s.kind) {
          case SlotKind::kEnum:
            if (type == "boolean") {
              b.rep = Rep::kBool;
            } else {
              b.rep = Rep::kEnum;
              for (const auto& v : s.values) b.enum_map[v.id] = v.id;
            }
            break;
          case SlotKind::kInt: b.rep = Rep::kInt; break;
          case SlotKind::kNumber: b.rep = Rep::kNumber; break;
          case SlotKind::kList: b.rep = Rep::kStringList; break;
          case SlotKind::kDate: b.rep = Rep::kDate; break;
          case SlotKind::kTime: b.rep = Rep::kTime24; break;
          default: b.rep = Rep::kCopy; break;
        }
        spec.params.push_back(b);
      }
    }
    return spec;
  }
}

void Generator::SetApiTools() {
  std::set<std::string> seen;
  for (const ApiTool& a : cat_.api_tools) {
    // Targets only from this split's tools; val and test may declare train's as distractors.
    const bool target = a.split == opt_.split;
    if (!target && a.split != Split::kTrain) continue;
    api_tools_.push_back(OwnTool(a.schema, cat_.dir + "/schemas/" + a.source + ".json", "api", a.source, seen));
    if (target) api_targets_.push_back(api_tools_.size() - 1);
  }
}

}  // namespace needle::data
