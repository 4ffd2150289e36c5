#include "data/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/error.h"               // Error
#include "data/decontaminate.h"        // AsksAnyOf
#include "data/gen_wordnet.h"         // ParaphraseRequests
#include "data/generator_internal.h"  // Build
#include "data/names.h"               // HumanizeName
#include "data/words.h"               // Trim, CapitalizeFirst, kWeekdayNames

namespace needle::data {

namespace {

bool HasDateSlot(const Capability& c) {
  for (const SlotDef& s : c.slots)
    if (s.kind == SlotKind::kDate || !s.fact.empty()) return true;
  return false;
}

}  // namespace

Build::Build(const Generator& gen, uint64_t index, int draw)
    : g(gen), cat(gen.cat_), split(gen.opt_.split),
      rng(StableHash(std::to_string(gen.opt_.seed) + "/" + SplitName(gen.opt_.split) + "/" + std::to_string(index) +
                     (draw ? "#" + std::to_string(draw) : ""))) {
  ctx.cat = &cat;
  ctx.split = split;
}

std::vector<std::string> Build::Words(const std::string& key) const { return cat.Words(key, split); }

std::string Build::Fact(const std::string& key) const {
  for (const auto& [k, v] : facts)
    if (k == key) return v;
  return "";
}

bool Build::FactFill(const SlotDef& s) const { return !s.fact.empty() && !Fact(s.fact).empty(); }

// ---- system facts (SPEC §10 keys, in that order) -----------------------------------
void Build::DrawFacts(double p) {
  if (!rng.Chance(p)) return;
  const bool date = rng.Chance(0.75);
  std::vector<std::pair<std::string, std::string>> f;
  if (date) {
    Date d{static_cast<int>(rng.Range(2024, 2027)), static_cast<int>(rng.Range(1, 12)), 1};
    d.d = static_cast<int>(rng.Range(1, DaysInMonth(d.y, d.m)));
    ctx.today = d;
    std::string v = IsoDate(d);
    const size_t style = rng.Below(3);
    if (style == 0) v += " (" + std::string(kWeekdayNames[Weekday(d)]) + ")";
    else if (style == 1) v = std::string(kWeekdayNames[Weekday(d)]) + " " + v;
    f.push_back({"date", v});
  }
  auto maybe = [&](const char* key, const char* pool, double q) {
    if (rng.Chance(q)) f.push_back({key, ExpandPool(cat, pool, split, rng)});
  };
  maybe("locale", "locale", 0.35);
  maybe("device", "device_model", 0.35);
  if (rng.Chance(0.3)) f.push_back({"battery", std::to_string(rng.Range(3, 100)) + "%"});
  maybe("network", "network", 0.3);
  maybe("location", "city", 0.4);
  maybe("user", "first_name", 0.3);
  maybe("assistant", "assistant_name", 0.2);
  facts = f;
}

std::string Build::SystemText() const {
  std::string s;
  for (const auto& [k, v] : facts) s += (s.empty() ? "" : "\n") + k + ": " + v;
  return s;
}

ojson Build::Output(const std::string& query, const ojson& answers, const std::string& reasoning) {
  ojson o = ojson::object();
  o["query"] = query;
  o["tools"] = ToolsJson();
  o["answers"] = answers;
  o["reasoning"] = reasoning;
  const std::string sys = SystemText();
  if (!sys.empty()) o["system"] = sys;
  meta.calls = static_cast<int>(answers.size());
  meta.refusal = answers.empty();
  return o;
}

void Build::ShuffleDeclared() { rng.Shuffle(declared); }

// Forgets the tools and templates of a failed attempt (facts stay).
void Build::Reset() {
  declared.clear();
  names.clear();
  meta.templates.clear();
  meta.caps.clear();
}

// ---- kinds --------------------------------------------------------------------------------
const Capability* Build::PickTarget(bool commands_only) {
  for (int i = 0; i < 50; ++i) {
    const Capability* c = g.targets_[rng.Weighted(g.target_weights_)];
    if (!commands_only) return c;
    for (const Template& t : c->templates)
      if (t.split == split && t.command) return c;
  }
  return g.targets_[0];
}

Example Build::Single() {
  const Capability& first = *PickTarget();
  DrawFacts(HasDateSlot(first) ? 0.7 : 0.3);
  for (int attempt = 0; attempt < 20; ++attempt) {
    Reset();
    const Capability& cap = attempt == 0 ? first : *PickTarget();
    Request rq;
    const ToolSpec* T = nullptr;
    if (!MakeRequest(cap, false, rq, &T)) continue;
    Declare(*T);
    AddDistractors({&cap}, ToolCount());
    ShuffleDeclared();
    const Style st = DrawStyle();
    Finish(rq, st);
    const std::string q = Assemble(Pieces(rq), st, rq.tmpl->command, rq.tmpl->pattern.is_question());
    meta.kind = "single", meta.domain = cap.domain, meta.caps = {cap.id};
    return {Output(q, ojson::array({rq.call}), rq.reason), meta};
  }
  throw Error(ErrorCode::kInternal, "generate-data: no capability renders in this split");
}

Example Build::Parallel() {
  DrawFacts(0.3);
  for (int attempt = 0; attempt < 20; ++attempt) {
    Reset();
    const Capability& a = *PickTarget(true);
    const bool same = rng.Chance(0.35);
    const Capability* bp = &a;
    if (!same) {
      for (int i = 0; i < 20 && (bp == &a || Overlapping(a, *bp)); ++i) bp = PickTarget(true);
      if (bp == &a) continue;
    }
    const Capability& b = *bp;
    Request r1, r2;
    const ToolSpec *T1 = nullptr, *T2 = nullptr;
    if (!MakeRequest(a, true, r1, &T1)) continue;
    if (same) {
      const Template* t = PickTemplate(a.templates, *T1, true);
      if (!t || !RenderRequest(a, *T1, *t, r2)) continue;
      meta.templates.push_back(t->id);
      T2 = T1;
    } else {
      if (!MakeRequest(b, true, r2, &T2)) continue;
    }
    Declare(*T1);
    if (T2 != T1) {
      if (names.count(T2->name())) continue;
      Declare(*T2);
    }
    AddDistractors({&a, &b}, std::max<int>(static_cast<int>(declared.size()), ToolCount()));
    const Style st = DrawStyle();
    Finish(r1, st), Finish(r2, st);
    if (r1.call == r2.call) continue;
    ShuffleDeclared();
    std::vector<Piece> body = Pieces(r1);
    const std::vector<std::string> joiners = Words("joiners");
    body.push_back({joiners.empty() ? " and " : rng.Pick(joiners), false});
    std::vector<Piece> second = Pieces(r2);
    if (!body.back().text.empty() && Trim(body.back().text).size() > 0 && Trim(body.back().text).back() == '.' &&
        !second.empty() && !second[0].protect && !st.lower)
      second[0].text = CapitalizeFirst(second[0].text);
    body.insert(body.end(), second.begin(), second.end());
    const std::string q = Assemble(body, st, true, false);
    meta.kind = "parallel", meta.domain = a.domain, meta.caps = {a.id, b.id};
    return {Output(q, ojson::array({r1.call, r2.call}), r1.reason + " | " + r2.reason), meta};
  }
  Reset();
  return Single();
}

Example Build::Extraction() {
  if (g.extraction_.empty()) return Single();
  for (int attempt = 0; attempt < 20; ++attempt) {
    Reset();
    const Capability& cap = *g.extraction_[rng.Below(g.extraction_.size())];
    const ToolSpec& T = MakeSpelling(cap, 0.65);
    const bool refuse = rng.Chance(0.06);
    const Capability* src = &cap;
    if (refuse) {
      // A passage of another record kind: nothing to extract with this schema.
      src = g.extraction_[rng.Below(g.extraction_.size())];
      if (src == &cap || Overlapping(cap, *src)) continue;
    }
    const ToolSpec& S = refuse ? MakeSpelling(*src, 1.0) : T;
    const Template* t = PickTemplate(src->passages, S, false, true);
    if (!t) continue;
    Request rq;
    if (!RenderRequest(*src, S, *t, rq)) continue;
    meta.templates.push_back(t->id);
    Declare(T);
    Style st;
    st.sentence = false, st.end = "";
    Finish(rq, st, !refuse);
    std::string passage;
    for (const Piece& p : Pieces(rq)) passage += p.text;
    passage = Trim(passage);
    std::string q = passage;
    if (rng.Chance(0.6)) {
      const std::vector<std::string> ins = Words("extraction_instructions");
      if (!ins.empty()) {
        std::string i = rng.Pick(ins);
        const std::string obj = HumanizeName(cap.objects[0]);
        const bool vowel = !obj.empty() && std::string("aeiou").find(obj[0]) != std::string::npos;
        for (size_t k; (k = i.find("a {object}")) != std::string::npos;) i.replace(k, 10, (vowel ? "an " : "a ") + obj);
        for (size_t k; (k = i.find("{object}")) != std::string::npos;) i.replace(k, 8, obj);
        q = i + (rng.Chance(0.5) ? "\n" : "\n\n") + passage;
      }
    }
    meta.kind = refuse ? "refuse_extraction" : "extraction", meta.domain = cap.domain, meta.caps = {cap.id};
    if (refuse)
      return {Output(q, ojson::array(), "the text is not a " + HumanizeName(cap.objects[0]) + "; nothing to extract"), meta};
    return {Output(q, ojson::array({rq.call}), rq.reason), meta};
  }
  Reset();
  return Single();
}

std::vector<std::string> Build::ActionPhrases(const Capability& c) const {
  const std::string v = c.verbs[0], o = c.objects[0];
  return {v + " the " + o, v + " " + o, v + " the " + o, v + " my " + o};
}

Example Build::Invented() {
  DrawFacts(0.2);
  const bool refuse = rng.Chance(0.12);
  Capability& target = Invent();
  const int total = std::max(2, ToolCount());
  // Siblings share the verb or the object: names that differ in one word.
  std::vector<Capability*> sibs;
  std::set<std::string> ids = {target.id};
  for (int i = 0, guard = 0; i < total - 1 + (refuse ? 1 : 0) && guard < 40; ++guard) {
    const bool same_verb = rng.Chance(0.5);
    Capability& s = same_verb ? Invent(target.verbs[0], "") : Invent("", target.objects[0]);
    if (!ids.insert(s.id).second) continue;  // never the target itself, never twice
    sibs.push_back(&s);
    ++i;
  }
  if (refuse) {
    for (Capability* s : sibs) Declare(InventedTool(*s));
  } else {
    Declare(InventedTool(target));
    for (size_t i = 0; i + 1 < static_cast<size_t>(total) && i < sibs.size(); ++i) Declare(InventedTool(*sibs[i]));
  }
  // The request: phrased for the target (declared or not).
  const ToolSpec& T = refuse ? InventedTool(target) : *declared[0];
  for (int attempt = 0; attempt < 10; ++attempt) {
    target.templates.clear();
    target.templates.push_back(GenericTemplate(T, ActionPhrases(target), true));
    Request rq;
    if (!RenderRequest(target, T, target.templates[0], rq)) continue;
    ShuffleDeclared();
    const Style st = DrawStyle();
    Finish(rq, st, !refuse);
    const std::string q = Assemble(Pieces(rq), st, target.templates[0].command, target.templates[0].pattern.is_question());
    meta.kind = refuse ? "refuse_invented" : "invented", meta.domain = "invented", meta.caps = {target.id};
    if (refuse) return {Output(q, ojson::array(), "no declared tool can " + target.does), meta};
    return {Output(q, ojson::array({rq.call}), rq.reason), meta};
  }
  Reset();
  return Single();
}

// ---- user tools (--tools) ---------------------------------------------------------------------
// A call whose from_X and to_X arguments are equal.
static bool SameFromAndTo(const ojson& call) {
  if (!call.contains("arguments")) return false;
  const ojson& a = call["arguments"];
  for (const auto& [k, v] : a.items()) {
    if (k.rfind("from", 0) != 0) continue;
    std::string to = "to" + k.substr(4);
    if (a.contains(to) && a[to] == v) return true;
  }
  return false;
}

Example Build::User() {
  std::vector<size_t> all(g.user_tools_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return OwnTools(g.user_tools_, all, "user");
}

// A request for one of the vendored API schemas (data/schemas), phrased the
// way --tools phrases a user's own; the other declared tools are API tools
// too, from the same source more often than not (similar tools side by side).
Example Build::Api() { return OwnTools(g.api_tools_, g.api_targets_, "api"); }

Example Build::OwnTools(const std::vector<ToolSpec>& tools, const std::vector<size_t>& targets, const std::string& kind) {
  const bool api = kind == "api";
  DrawFacts(0.3);
  const size_t r = rng.Below(100);
  const int total = std::min<int>(static_cast<int>(tools.size()), std::max(1, ToolCount() - 1));
  std::vector<size_t> idx(tools.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  rng.Shuffle(idx);
  if (api) {
    // Every tool alike (a source of 4 tools must not weigh as much as one of 80); the
    // target first, then the others, same-source tools ahead 60% of the time.
    const size_t target = targets[rng.Below(targets.size())];
    const bool same_source = rng.Chance(0.6);
    std::stable_partition(idx.begin(), idx.end(), [&](size_t i) {
      return i == target;
    });
    if (same_source)
      std::stable_partition(idx.begin() + 1, idx.end(), [&](size_t i) { return tools[i].cap->domain == tools[target].cap->domain; });
  }
  if (r < 12) {
    // Off-topic or a catalogue request none of the declared tools serves.
    for (int i = 0; i < total; ++i) Declare(tools[idx[i]]);
    // The user's tools may all be declared in their app, so none may serve the
    // request; for API tools the declared ones are what counts.
    std::vector<const ToolSpec*> clash_with;
    if (api) clash_with = declared;
    else for (const ToolSpec& t : tools) clash_with.push_back(&t);
    std::string q0;
    std::string reason = "no declared tool handles this request";
    if (rng.Chance(0.5) || g.targets_.empty()) {
      q0 = ExpandPool(cat, "offtopic", split, rng);
    } else {
      for (int attempt = 0; attempt < 30 && q0.empty(); ++attempt) {
        const Capability& cap = *PickTarget();
        // Skip catalogue capabilities whose words appear in the user's tools.
        bool clash = false;
        for (const ToolSpec* t : clash_with) {
          const std::string text = Lower(t->schema.dump());
          for (const std::string& w : SplitIdentifier(cap.objects[0])) clash = clash || (w.size() > 3 && text.find(w) != std::string::npos);
        }
        if (clash) continue;
        Request rq;
        if (!HiddenRequest(cap, rq)) continue;
        Style st0;
        Finish(rq, st0, false);
        for (const Piece& p : Pieces(rq)) q0 += p.text;
        reason = "no declared tool can " + cap.does;
      }
      if (q0.empty()) q0 = ExpandPool(cat, "offtopic", split, rng);
    }
    meta.templates.clear();
    ShuffleDeclared();
    const Style st = DrawStyle();
    const std::string q = Assemble({{TidySpaces(q0), false}}, st, false, q0.back() == '?');
    meta.kind = "refuse_" + kind, meta.domain = api ? "api" : "user";
    return {Output(q, ojson::array(), reason), meta};
  }
  const ToolSpec& T = tools[idx[0]];
  const Capability& cap = *T.cap;
  Declare(T);
  for (int i = 1; i < total; ++i) Declare(tools[idx[i]]);
  ShuffleDeclared();
  for (int attempt = 0; attempt < 10; ++attempt) {
    owned.push_back(cap);  // a private copy holds this example's template
    Capability& local = owned.back();
    ToolSpec LT = T;
    LT.cap = &local;
    store.push_back(LT);
    const ToolSpec& LTr = store.back();
    local.templates = {UserTemplate(LTr)};
    Request rq;
    if (!RenderRequest(local, LTr, local.templates[0], rq)) continue;
    const Style st = DrawStyle();
    Finish(rq, st);
    if (SameFromAndTo(rq.call)) continue;  // "from GBP to GBP" is no request
    const std::string q = Assemble(Pieces(rq), st, local.templates[0].command, local.templates[0].pattern.is_question());
    meta.kind = kind, meta.domain = T.cap->domain, meta.caps = {T.name()};
    return {Output(q, ojson::array({rq.call}), rq.reason), meta};
  }
  throw Error(ErrorCode::kInvalidArgument, (api ? "data/schemas: " : "--tools: ") + std::string("cannot phrase a request for tool '") + T.name() + "'");
}

Generator::Generator(const Catalogue& cat, GeneratorOptions opt) : cat_(cat), opt_(opt) {
  for (const Capability& c : cat_.caps) {
    if (c.test_only && opt_.split != Split::kTest) continue;
    pool_.push_back(&c);
    if (c.domain != "extraction" && c.session_role.empty()) {
      by_group_[c.group].push_back(&c);
      by_domain_[c.domain].push_back(&c);
    }
    bool has_template = false, has_passage = false;
    for (const Template& t : c.templates) has_template = has_template || t.split == opt_.split;
    for (const Template& t : c.passages) has_passage = has_passage || t.split == opt_.split;
    if (has_template && c.session_role.empty() && c.domain != "extraction") targets_.push_back(&c);
    if (has_passage) extraction_.push_back(&c);
  }
  if (targets_.empty()) throw Error(ErrorCode::kInvalidArgument, "generate-data: the catalogue has no templates for this split");
  std::map<std::string, size_t> per_domain;
  for (const Capability* c : targets_) per_domain[c->domain]++;
  for (const Capability* c : targets_) {
    bool dated = false;
    for (const SlotDef& s : c->slots) dated = dated || s.kind == SlotKind::kDate;
    target_weights_.push_back((dated ? 2.0 : 1.0) / std::sqrt(static_cast<double>(per_domain[c->domain])));
  }
  SetApiTools();
  for (const KindWeight& k : kKindMix) {
    const auto it = opt_.kind_mix.find(k.name);
    kind_weights_.push_back(it != opt_.kind_mix.end() ? it->second : k.weight);
  }
  if (api_targets_.empty()) kind_weights_.back() = 0.0;  // no API schemas in this catalogue
  for (const auto& [name, w] : opt_.kind_mix) {
    bool known = false;
    for (const KindWeight& k : kKindMix) known = known || name == k.name;
    if (!known) throw Error(ErrorCode::kInvalidArgument, "generate-data: unknown kind '" + name + "' in the mix");
  }
  double total = 0;
  for (double w : kind_weights_) total += w;
  if (!(total > 0)) throw Error(ErrorCode::kInvalidArgument, "generate-data: --mix leaves every kind at weight 0");
  if (opt_.wordnet < 0 || opt_.wordnet > 1)
    throw Error(ErrorCode::kInvalidArgument, "generate-data: --wordnet must be a share in [0, 1]");
  if (opt_.wordnet > 0) {
    auto wn = std::make_shared<WordNet>(opt_.wordnet_dir);
    wn->Load();  // a missing directory is an error now, not at the first paraphrase
    wordnet_ = wn;
  }
}

Example Generator::Generate(uint64_t index) const {
  // Decontamination: an example that asks an evaluation request is drawn again.
  for (int draw = 0; draw < 16; ++draw) {
    Example ex = Draw(index, draw);
    if (!AsksAnyOf(ex.json, cat_.held_out_requests)) return ex;
  }
  throw Error(ErrorCode::kInternal, "generate-data: example " + std::to_string(index) + " asked an evaluation request in 16 draws");
}

Example Generator::Draw(uint64_t index, int draw) const {
  Build b(*this, index, draw);
  Example ex = DrawKind(b);
  // Last, so that without it (or when the coin says no) nothing else changes.
  // Extraction passages are documents, not requests: left as written.
  if (wordnet_ && ex.meta.kind.find("extraction") == std::string::npos && b.rng.Chance(opt_.wordnet))
    ex.meta.paraphrases = ParaphraseRequests(ex.json, *wordnet_, b.rng);
  return ex;
}

const KindWeight kKindMix[11] = {
    {"single", 47},
    {"parallel", 7},
    {"refuse_offtopic", 2.8},
    {"refuse_offdomain", 2.8},  // a tool of another domain
    {"refuse_nearmiss", 3.4},   // a near miss in the same group
    {"refuse_enum", 1.4},       // a value outside the enum
    {"refuse_missing", 1.3},    // a required argument missing
    {"extraction", 8},
    {"session", 11},
    {"invented", 7},
    {"api", 12},  // real API schemas (data/schemas), ~11.5%
};

std::map<std::string, double> ParseKindMix(const std::string& text) {
  std::map<std::string, double> mix;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    bool known = false;
    for (const KindWeight& k : kKindMix) known = known || name == k.name;
    if (!known) {
      std::string names;
      for (const KindWeight& k : kKindMix) names += std::string(names.empty() ? "" : ", ") + k.name;
      throw Error(ErrorCode::kInvalidArgument, "generate-data: --mix: unknown kind '" + name + "' (kinds: " + names + ")");
    }
    double w = -1;
    char* end = nullptr;
    if (eq != std::string::npos && eq + 1 < item.size()) w = std::strtod(item.c_str() + eq + 1, &end);
    if (w < 0 || !std::isfinite(w) || end == nullptr || *end != '\0')
      throw Error(ErrorCode::kInvalidArgument, "generate-data: --mix: '" + item + "' is not KIND=WEIGHT with a weight >= 0");
    if (!mix.emplace(name, w).second)
      throw Error(ErrorCode::kInvalidArgument, "generate-data: --mix: kind '" + name + "' given twice");
  }
  return mix;
}

Example Generator::DrawKind(Build& b) const {
  if (!user_tools_.empty()) return b.User();
  if (opt_.long_sessions) return b.Session();
  switch (b.rng.Weighted(kind_weights_)) {
    case 0: return b.Single();
    case 1: return b.Parallel();
    case 2: return b.RefuseOffTopic();
    case 3: return b.RefuseUnserved(false);
    case 4: return b.RefuseUnserved(true);
    case 5: return b.RefuseEnum();
    case 6: return b.RefuseMissing();
    case 7: return b.Extraction();
    case 8: return b.Session();
    case 9: return b.Invented();
    default: return b.Api();
  }
}

std::string RenderPromptText(const ojson& ex) {
  std::string s = "<s>";
  if (ex.contains("system")) s += "<|im_start|>system\n" + ex["system"].get<std::string>() + "<|im_end|>\n";
  s += "<|im_start|>user\n<tools>" + ex["tools"].dump() + "</tools>\n" + ex["query"].get<std::string>() +
       "<|im_end|>\n<|im_start|>assistant\n";
  s += "<think>" + ex.value("reasoning", std::string()) + "</think>\n<tool_call>" + ex["answers"].dump() +
       "</tool_call><|im_end|></s>";
  if (ex.contains("turns")) {
    for (const auto& t : ex["turns"]) {
      if (t.contains("tool_result"))
        s += "<|im_start|>tool\n<tool_result>" + t["tool_result"].dump() + "</tool_result><|im_end|>\n";
      else
        s += "<|im_start|>user\n" + t["query"].get<std::string>() + "<|im_end|>\n";
      s += "<|im_start|>assistant\n<think>" + t.value("reasoning", std::string()) + "</think>\n<tool_call>" +
           t["answers"].dump() + "</tool_call><|im_end|>";
    }
  }
  return s;
}

}  // namespace needle::data
