#include "data/generator.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/error.h"   // Error
#include "data/names.h"   // SynthesizeSpelling, SynthesizeParams, NameBucket
#include "data/values.h"  // DrawValue, AnswerValue
#include "data/words.h"   // Lower, TidySpaces, Typo

namespace needle::data {

namespace {

constexpr int kMaxTools = 8;

// A piece of the request text; protected pieces are values that answers copy.
struct Piece {
  std::string text;
  bool protect = false;
};

struct Style {
  bool lower = false;     // typed all lowercase (values too, where the slot allows)
  bool sentence = true;   // first letter capitalised
  int typos = 0;          // typos in non-value words
  std::string end;        // final punctuation for non-questions
};

struct Request {
  const Capability* cap = nullptr;
  const ToolSpec* tool = nullptr;  // the tool whose schema shapes the values (declared or hidden)
  const Template* tmpl = nullptr;
  Rendered r;
  std::map<std::string, SlotValue> values;
  ojson call;
  std::string reason;
};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == '|' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

int DrawToolCount(Rng& rng, int max_tools) {
  static const std::vector<double> kW = {12, 14, 18, 18, 16, 10, 7, 5};
  const std::vector<double> w(kW.begin(), kW.begin() + std::clamp(max_tools, 1, kMaxTools));
  return static_cast<int>(rng.Weighted(w)) + 1;
}

bool Overlapping(const Capability& a, const Capability& b) {
  return &a == &b || std::count(a.overlaps.begin(), a.overlaps.end(), b.id) ||
         std::count(b.overlaps.begin(), b.overlaps.end(), a.id);
}

// Fills "$..." placeholders of a result template.
ojson FillResult(const ojson& t, const std::map<std::string, SlotValue>& vals, const ValueContext& ctx, Rng& rng) {
  if (t.is_object()) {
    ojson o = ojson::object();
    for (const auto& [k, v] : t.items()) o[k] = FillResult(v, vals, ctx, rng);
    return o;
  }
  if (t.is_array()) {
    ojson a = ojson::array();
    for (const auto& v : t) a.push_back(FillResult(v, vals, ctx, rng));
    return a;
  }
  if (!t.is_string()) return t;
  const std::string s = t.get<std::string>();
  if (s.empty() || s[0] != '$') return s;
  auto args = [&](size_t from) {
    std::vector<std::string> out;
    std::string cur;
    for (size_t i = from; i < s.size(); ++i) {
      if (s[i] == ':' || s[i] == '|') out.push_back(cur), cur.clear();
      else cur += s[i];
    }
    out.push_back(cur);
    return out;
  };
  if (StartsWith(s, "$slot:")) {
    auto it = vals.find(s.substr(6));
    return it == vals.end() ? ojson(nullptr) : ojson(it->second.surface);
  }
  if (StartsWith(s, "$int:")) {
    const auto a = args(5);
    return rng.Range(std::atoll(a[0].c_str()), std::atoll(a[1].c_str()));
  }
  if (StartsWith(s, "$num:")) {
    const auto a = args(5);
    const double lo = std::atof(a[0].c_str()), hi = std::atof(a[1].c_str());
    return std::round((lo + (hi - lo) * rng.Uniform()) * 10.0) / 10.0;
  }
  if (StartsWith(s, "$pick:")) return rng.Pick(args(6));
  if (StartsWith(s, "$id:")) return s.substr(4) + std::to_string(rng.Range(1000, 99999));
  if (StartsWith(s, "$pool:")) return ExpandPool(*ctx.cat, s.substr(6), ctx.split, rng);
  if (s == "$bool") return rng.Chance(0.5);
  if (s == "$time") return Time24(static_cast<int>(rng.Range(6, 22)), static_cast<int>(rng.Range(0, 11)) * 5);
  if (s == "$date") return IsoDate(AddDays(ctx.today.value_or(Date{2025, 6, 1}), rng.Range(0, 20)));
  return s;
}

}  // namespace

// Everything one example needs while it is built.
struct Build {
  const Generator& g;
  const Catalogue& cat;
  Split split;
  Rng rng;
  ValueContext ctx;
  std::deque<Capability> owned;     // invented capabilities
  std::deque<ToolSpec> store;       // every tool made (stable addresses)
  std::vector<const ToolSpec*> declared;
  std::set<std::string> names;
  ExampleMeta meta;
  std::vector<std::pair<std::string, std::string>> facts;
  bool no_open_ended = false;  // off-topic requests: a web search could serve almost anything

  Build(const Generator& gen, uint64_t index)
      : g(gen), cat(gen.cat_), split(gen.opt_.split),
        rng(StableHash(std::to_string(gen.opt_.seed) + "/" + SplitName(gen.opt_.split) + "/" + std::to_string(index))) {
    ctx.cat = &cat;
    ctx.split = split;
  }

  std::vector<std::string> Words(const std::string& key) const { return cat.Words(key, split); }

  // Tools to declare: 1..max_tools, weighted towards 3-5.
  int ToolCount() { return DrawToolCount(rng, g.opt_.max_tools); }

  std::string Fact(const std::string& key) const {
    for (const auto& [k, v] : facts)
      if (k == key) return v;
    return "";
  }

  // ---- system facts (SPEC §10 keys, in that order) -----------------------------------
  void DrawFacts(double p) {
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

  std::string SystemText() const {
    std::string s;
    for (const auto& [k, v] : facts) s += (s.empty() ? "" : "\n") + k + ": " + v;
    return s;
  }

  // ---- tools ----------------------------------------------------------------------------------
  const ToolSpec& MakeSpelling(const Capability& cap, double catalogue_p = 0.42) {
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

  const ToolSpec& Declare(const ToolSpec& t) {
    names.insert(t.name());
    declared.push_back(&t);
    return t;
  }

  bool IsDeclaredCap(const Capability* c) const {
    for (const ToolSpec* t : declared)
      if (t->cap == c) return true;
    return false;
  }

  // Adds distractors up to `total` tools: similar ones first (same group, then domain).
  void AddDistractors(const std::vector<const Capability*>& primary, int total,
                      const std::vector<const Capability*>& avoid = {}) {
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

  ojson ToolsJson() {
    ojson a = ojson::array();
    for (const ToolSpec* t : declared) {
      a.push_back(t->schema);
      meta.tools.push_back(t->name());
      meta.origins.push_back(t->origin);
    }
    return a;
  }

  // ---- templates ----------------------------------------------------------------------------
  bool FactFill(const SlotDef& s) const { return !s.fact.empty() && !Fact(s.fact).empty(); }

  // `mentions_ok`: the text may mention slots the tool does not declare (passages do).
  bool Fits(const Template& t, const ToolSpec& T, bool mentions_ok = false) const {
    const Capability& cap = *T.cap;
    for (const std::string& s : t.pattern.mandatory_slots())
      if (!mentions_ok && !T.Declares(s)) return false;
    for (const std::string& s : T.RequiredSlots()) {
      if (t.pattern.all_slots().count(s)) continue;
      const SlotDef* d = cap.Slot(s);
      if (!d || !FactFill(*d)) return false;
    }
    for (const std::string& s : t.pattern.assigned_slots()) {
      const ParamBinding* b = T.ForSlot(s);
      if (b && b->rep == Rep::kCopy) return false;
    }
    return true;
  }

  const Template* PickTemplate(const std::vector<Template>& list, const ToolSpec& T, bool commands_only,
                               bool mentions_ok = false) {
    std::vector<const Template*> ok;
    for (const Template& t : list)
      if (t.split == split && (!commands_only || t.command) && Fits(t, T, mentions_ok)) ok.push_back(&t);
    return ok.empty() ? nullptr : ok[rng.Below(ok.size())];
  }

  // Renders `t` for tool `T` and draws the values. False when no rendering fits.
  bool RenderRequest(const Capability& cap, const ToolSpec& T, const Template& t, Request& out) {
    out = Request();
    out.cap = &cap, out.tool = &T, out.tmpl = &t;
    const std::set<std::string> required = T.RequiredSlots();
    for (int attempt = 0; attempt < 12; ++attempt) {
      std::set<std::string> wanted = required;
      for (const SlotDef& s : cap.slots) {
        if (T.Declares(s.id) ? rng.Chance(0.55) : rng.Chance(0.06)) wanted.insert(s.id);
      }
      // A date-time parameter needs both of its slots.
      for (const ParamBinding& b : T.params)
        if (!b.slot2.empty() && (wanted.count(b.slot) || wanted.count(b.slot2))) wanted.insert(b.slot), wanted.insert(b.slot2);
      Rendered r = t.pattern.Render(rng, wanted);
      bool ok = true;
      for (const std::string& s : required) {
        if (r.slots.count(s)) continue;
        const SlotDef* d = cap.Slot(s);
        ok = ok && d && FactFill(*d);
      }
      for (const ParamBinding& b : T.params) {
        if (b.slot2.empty()) continue;
        if (r.slots.count(b.slot) != r.slots.count(b.slot2)) ok = false;  // half a date-time
      }
      for (const auto& [slot, a] : r.assigned) {
        const ParamBinding* b = T.ForSlot(slot);
        const SlotDef* d = cap.Slot(slot);
        if (!b || !d) continue;
        if (b->rep == Rep::kEnum && !b->enum_map.count(a.value)) ok = false;
        if (b->rep == Rep::kCopy) ok = false;
        if (b->rep == Rep::kBool) {
          std::string opposite;
          for (const auto& v : d->values)
            if (v.id != d->bool_true && opposite.empty()) opposite = v.id;
          if (a.value != d->bool_true && a.value != opposite) ok = false;
        }
        if (a.value == "max" && !b->has_max) ok = false;
        if (a.value == "min" && !b->has_min) ok = false;
      }
      if (!ok) continue;
      out.r = std::move(r);
      for (const std::string& s : out.r.slots) {
        const SlotDef* d = cap.Slot(s);
        if (!d) continue;
        if (auto it = out.r.assigned.find(s); it != out.r.assigned.end()) {
          out.values[s] = AssignedValue(*d, it->second.value, it->second.cue);
        } else {
          out.values[s] = DrawValue(*d, T.ForSlot(s), ctx, rng);
        }
      }
      // Paired slots (from/to units, currencies, languages) share one pool item "a|b".
      std::map<std::string, std::vector<std::string>> pairs;
      for (auto& [id, v] : out.values) {
        const SlotDef* d = cap.Slot(id);
        if (!d || d->pair.empty() || v.assigned) continue;
        auto it = pairs.find(d->pair);
        if (it == pairs.end()) {
          std::vector<std::string> parts;
          std::string item = ExpandPool(cat, d->pool, split, rng), cur;
          for (char c : item) {
            if (c == '|') parts.push_back(cur), cur.clear();
            else cur += c;
          }
          parts.push_back(cur);
          it = pairs.emplace(d->pair, parts).first;
        }
        if (d->part >= 0 && static_cast<size_t>(d->part) < it->second.size()) v.surface = it->second[d->part];
      }
      for (const std::string& s : required) {
        if (out.values.count(s)) continue;
        const SlotDef* d = cap.Slot(s);
        SlotValue v;
        v.slot = s;
        v.surface = Fact(d->fact);
        v.fact = d->fact;
        out.values[s] = v;
      }
      return true;
    }
    return false;
  }

  // Applies the style to the values and builds the call and its reasoning.
  void Finish(Request& rq, const Style& st, bool make_call = true) {
    if (st.lower) {
      for (auto& [id, v] : rq.values) {
        const SlotDef* d = rq.cap->Slot(id);
        if (!d || !d->lowercase_ok || !v.fact.empty()) continue;
        if (v.raw.empty()) v.raw = v.surface;
        v.surface = Lower(v.surface);
        for (auto& it : v.items) it = Lower(it);
      }
    }
    if (!make_call) return;
    const ToolSpec& T = *rq.tool;
    ojson args = ojson::object();
    std::string reason;
    for (const ParamBinding& b : T.params) {
      if (b.slot.empty()) continue;
      auto it = rq.values.find(b.slot);
      if (it == rq.values.end()) continue;
      const SlotValue* time = nullptr;
      if (!b.slot2.empty()) {
        auto jt = rq.values.find(b.slot2);
        if (jt == rq.values.end()) continue;
        time = &jt->second;
      }
      const SlotDef& d = *rq.cap->Slot(b.slot);
      const ojson a = AnswerValue(it->second, d, b, time, ctx);
      args[b.name] = a;
      reason += (reason.empty() ? "" : "; ") + ReasonFragment(it->second, b, a, time);
    }
    rq.call = ojson::object();
    rq.call["name"] = T.name();
    rq.call["arguments"] = args;
    rq.reason = T.name() + ": " + (reason.empty() ? "no arguments needed" : reason);
  }

  Style DrawStyle() {
    Style st;
    const size_t r = rng.Below(100);
    st.lower = r < 24;
    st.sentence = !st.lower && r < 97;
    const size_t t = rng.Below(100);
    st.typos = t < 9 ? 1 : t < 12 ? 2 : 0;
    const size_t e = rng.Below(100);
    st.end = e < 35 ? "." : e < 90 ? "" : "!";
    return st;
  }

  // A date's "on " reads wrong after "for", "by", "due", ":" and the like.
  static bool LeadFits(const std::vector<Piece>& before) {
    std::string prev;
    for (auto it = before.rbegin(); it != before.rend() && prev.size() < 24; ++it) prev = it->text + prev;
    const std::string t = Trim(prev);
    if (t.empty()) return true;
    const char last = t.back();
    if (last == ':' || last == '=' || last == '(' || last == ',' || last == '-') return false;
    const std::vector<std::string> w = SplitWords(Lower(t));
    static const std::set<std::string> kNo = {"for", "on", "by", "until", "due", "from", "before", "after", "of",
                                              "to", "is", "be", "as", "at", "til", "till", "than", "since"};
    return w.empty() || !kNo.count(w.back());
  }

  std::vector<Piece> Pieces(const Request& rq) const {
    std::vector<Piece> out;
    for (const Segment& s : rq.r.segments) {
      if (s.slot.empty()) {
        out.push_back({s.text, false});
        continue;
      }
      auto it = rq.values.find(s.slot);
      if (it == rq.values.end() || it->second.assigned) continue;
      if (!it->second.lead.empty() && LeadFits(out)) out.push_back({it->second.lead, false});
      out.push_back({it->second.surface, true});
    }
    return out;
  }

  // Wraps a command ("could you ...?"), adds fillers, applies case, typos, punctuation.
  std::string Assemble(std::vector<Piece> body, const Style& st, bool command, bool question) {
    std::vector<Piece> pieces;
    bool is_question = question;
    if (command && rng.Chance(0.38)) {
      const std::vector<std::string> wraps = Words("command_wrappers");
      if (!wraps.empty()) {
        const std::string w = rng.Pick(wraps);
        const size_t at = w.find("{c}");
        if (at != std::string::npos) {
          pieces.push_back({w.substr(0, at), false});
          pieces.insert(pieces.end(), body.begin(), body.end());
          pieces.push_back({w.substr(at + 3), false});
          is_question = !w.empty() && w.back() == '?';
          body.clear();
        }
      }
    }
    if (!body.empty()) pieces = body;
    if (rng.Chance(0.12)) {
      const std::vector<std::string> op = Words("openers");
      if (!op.empty()) pieces.insert(pieces.begin(), Piece{rng.Pick(op), false});
    }
    std::string closer;
    if (rng.Chance(0.1)) {
      const std::vector<std::string> cl = Words("closers");
      if (!cl.empty()) closer = rng.Pick(cl);
    }
    // Case.
    for (Piece& p : pieces)
      if (!p.protect && st.lower) p.text = Lower(p.text);
    // Typos in words that are not values.
    for (int k = 0; k < st.typos; ++k) {
      std::vector<std::pair<size_t, size_t>> spots;  // piece, word index
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (pieces[i].protect) continue;
        const std::vector<std::string> w = SplitWords(pieces[i].text);
        for (size_t j = 0; j < w.size(); ++j)
          if (w[j].size() >= 4) spots.push_back({i, j});
      }
      if (spots.empty()) break;
      const auto [pi, wi] = spots[rng.Below(spots.size())];
      std::string& text = pieces[pi].text;
      // Replace the wi-th word keeping the piece's spacing.
      size_t pos = 0, count = 0;
      while (pos < text.size()) {
        while (pos < text.size() && text[pos] == ' ') ++pos;
        size_t end = pos;
        while (end < text.size() && text[end] != ' ') ++end;
        if (end > pos && count++ == wi) {
          text = text.substr(0, pos) + Typo(text.substr(pos, end - pos), rng) + text.substr(end);
          break;
        }
        pos = end;
      }
    }
    std::string q;
    for (const Piece& p : pieces) q += p.text;
    std::string tidy = TidySpaces(q);
    bool kept = true;
    for (const Piece& p : pieces)
      if (p.protect && tidy.find(p.text) == std::string::npos) kept = false;
    q = kept ? tidy : Trim(q);
    // Sentence case when the request starts with words, not a value.
    size_t first = 0;
    while (first < pieces.size() && Trim(pieces[first].text).empty()) ++first;
    if (st.sentence && first < pieces.size() && !pieces[first].protect) q = CapitalizeFirst(q);
    if (!closer.empty() && st.lower) closer = Lower(closer);
    const bool ended = !q.empty() && (q.back() == '?' || q.back() == '.' || q.back() == '!');
    if (is_question) return q;
    if (ended) return q + closer;
    return q + closer + st.end;
  }

  ojson Output(const std::string& query, const ojson& answers, const std::string& reasoning) {
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

  void ShuffleDeclared() { rng.Shuffle(declared); }

  // Forgets the tools and templates of a failed attempt (facts stay).
  void Reset() {
    declared.clear();
    names.clear();
    meta.templates.clear();
    meta.caps.clear();
  }

  // ---- kinds --------------------------------------------------------------------------------
  const Capability* PickTarget(bool commands_only = false) {
    for (int i = 0; i < 50; ++i) {
      const Capability* c = g.targets_[rng.Weighted(g.target_weights_)];
      if (!commands_only) return c;
      for (const Template& t : c->templates)
        if (t.split == split && t.command) return c;
    }
    return g.targets_[0];
  }

  // A rendered request for `cap` with a fresh tool spelling (declared or not).
  bool MakeRequest(const Capability& cap, bool commands_only, Request& rq, const ToolSpec** tool_out) {
    for (int attempt = 0; attempt < 6; ++attempt) {
      const ToolSpec& T = MakeSpelling(cap);
      const Template* t = PickTemplate(cap.templates, T, commands_only);
      if (!t) continue;
      if (!RenderRequest(cap, T, *t, rq)) continue;
      *tool_out = &T;
      meta.templates.push_back(t->id);
      return true;
    }
    return false;
  }

  static bool HasDateSlot(const Capability& c) {
    for (const SlotDef& s : c.slots)
      if (s.kind == SlotKind::kDate || !s.fact.empty()) return true;
    return false;
  }

  Example Single() {
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

  Example Parallel() {
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

  // A request for `cap` that is not declared (values drawn for a hidden spelling).
  bool HiddenRequest(const Capability& cap, Request& rq) {
    const ToolSpec* T = nullptr;
    if (!MakeRequest(cap, false, rq, &T)) return false;
    return true;
  }

  Example RefuseOffTopic() {
    DrawFacts(0.3);
    const std::string q0 = ExpandPool(cat, "offtopic", split, rng);
    no_open_ended = true;
    const Capability* anchor_p = PickTarget();
    for (int i = 0; i < 20 && anchor_p->open_ended; ++i) anchor_p = PickTarget();
    const Capability& anchor = *anchor_p;
    Declare(MakeSpelling(anchor));
    AddDistractors({&anchor}, ToolCount());
    ShuffleDeclared();
    const Style st = DrawStyle();
    std::vector<Piece> body = {{q0, false}};
    const std::string q = Assemble(body, st, false, q0.back() == '?');
    meta.kind = "refuse_offtopic", meta.domain = "";
    return {Output(q, ojson::array(), "no declared tool handles this request"), meta};
  }

  // Near miss (a tool of the same group is declared) or another domain entirely.
  Example RefuseUnserved(bool near_miss) {
    DrawFacts(0.3);
    no_open_ended = true;  // a web search could answer many requests
    for (int attempt = 0; attempt < 30; ++attempt) {
      Reset();
      const Capability& cap = *PickTarget();
      std::vector<const Capability*> siblings;
      if (near_miss) {
        for (const Capability* c : g.by_group_.count(cap.group) ? g.by_group_.at(cap.group) : std::vector<const Capability*>{})
          if (!Overlapping(cap, *c) && c->session_role.empty() && !c->open_ended) siblings.push_back(c);
        if (siblings.empty()) continue;
      }
      Request rq;
      if (!HiddenRequest(cap, rq)) continue;
      std::string reason = "no declared tool can " + cap.does;
      if (near_miss) {
        rng.Shuffle(siblings);
        const size_t n = std::min<size_t>(siblings.size(), 1 + rng.Below(2));
        for (size_t i = 0; i < n; ++i) Declare(MakeSpelling(*siblings[i]));
        reason = declared[0]->name() + " can " + siblings[0]->does + ", not " + cap.does + "; no declared tool fits";
        AddDistractors({siblings[0]}, std::max<int>(static_cast<int>(declared.size()), ToolCount()), {&cap});
      } else {
        // Tools from other groups only.
        for (int guard = 0; guard < 80 && declared.size() < static_cast<size_t>(ToolCount()); ++guard) {
          const Capability* c = g.pool_[rng.Below(g.pool_.size())];
          if (c->group == cap.group || Overlapping(cap, *c) || IsDeclaredCap(c) || c->domain == "extraction" ||
              !c->session_role.empty() || c->open_ended)
            continue;
          Declare(MakeSpelling(*c));
        }
        if (declared.empty()) continue;
      }
      ShuffleDeclared();
      const Style st = DrawStyle();
      Finish(rq, st, false);
      const std::string q = Assemble(Pieces(rq), st, rq.tmpl->command, rq.tmpl->pattern.is_question());
      meta.kind = near_miss ? "refuse_nearmiss" : "refuse_offdomain", meta.domain = cap.domain, meta.caps = {cap.id};
      return {Output(q, ojson::array(), reason), meta};
    }
    Reset();
    return RefuseOffTopic();
  }

  // The request asks for an enum value the declared tool does not offer.
  Example RefuseEnum() {
    DrawFacts(0.25);
    for (int attempt = 0; attempt < 60; ++attempt) {
      Reset();
      const Capability& cap = *PickTarget();
      const SlotDef* es = nullptr;
      for (const SlotDef& s : cap.slots)
        if (s.kind == SlotKind::kEnum && s.subsettable) es = &s;
      if (!es) continue;
      const ToolSpec& T = MakeSpelling(cap, 0.3);
      const ParamBinding* b = T.ForSlot(es->id);
      if (!b || b->rep != Rep::kEnum || b->enum_map.size() == es->values.size()) continue;
      if (b->enum_map.count("other")) continue;  // a catch-all value could take the request
      std::vector<const Template*> ok;
      for (const Template& t : cap.templates)
        if (t.split == split && Fits(t, T) && t.pattern.mandatory_slots().count(es->id) &&
            !t.pattern.assigned_slots().count(es->id))
          ok.push_back(&t);
      if (ok.empty()) continue;
      const Template& t = *ok[rng.Below(ok.size())];
      Request rq;
      if (!RenderRequest(cap, T, t, rq)) continue;
      const std::optional<SlotValue> bad = DrawUndeclaredEnum(*es, *b, rng);
      if (!bad) continue;
      rq.values[es->id] = *bad;
      meta.templates.push_back(t.id);
      Declare(T);
      AddDistractors({&cap}, ToolCount());
      ShuffleDeclared();
      const Style st = DrawStyle();
      Finish(rq, st, false);
      std::string allowed;
      for (const auto& [id, d] : b->enum_map) allowed += (allowed.empty() ? "" : ", ") + d;
      const std::string q = Assemble(Pieces(rq), st, t.command, t.pattern.is_question());
      meta.kind = "refuse_enum", meta.domain = cap.domain, meta.caps = {cap.id};
      return {Output(q, ojson::array(),
                     "'" + rq.values[es->id].surface + "' is not an allowed " + b->name + " of " + T.name() + " (" +
                         allowed + ")"),
              meta};
    }
    Reset();
    return RefuseUnserved(true);
  }

  // A required argument is missing: policy is [] (no value may be invented; docs/data-format.md).
  Example RefuseMissing() {
    DrawFacts(0.25);
    for (int attempt = 0; attempt < 60; ++attempt) {
      Reset();
      const Capability& cap = *PickTarget();
      std::vector<const Template*> vs;
      for (const Template& t : cap.vague)
        if (t.split == split) vs.push_back(&t);
      if (vs.empty()) continue;
      const ToolSpec& T = MakeSpelling(cap);
      const Template& t = *vs[rng.Below(vs.size())];
      std::string missing;
      for (const ParamBinding& b : T.params) {
        if (!b.required || b.slot.empty() || t.pattern.all_slots().count(b.slot)) continue;
        const SlotDef* d = cap.Slot(b.slot);
        if (d && FactFill(*d)) continue;
        if (missing.empty()) missing = b.name;
      }
      if (missing.empty()) continue;
      Request rq;
      rq.cap = &cap, rq.tool = &T, rq.tmpl = &t;
      rq.r = t.pattern.Render(rng, {});
      for (const std::string& s : rq.r.slots)
        if (const SlotDef* d = cap.Slot(s)) rq.values[s] = DrawValue(*d, T.ForSlot(s), ctx, rng);
      meta.templates.push_back(t.id);
      Declare(T);
      AddDistractors({&cap}, ToolCount());
      ShuffleDeclared();
      const Style st = DrawStyle();
      Finish(rq, st, false);
      const std::string q = Assemble(Pieces(rq), st, t.command, t.pattern.is_question());
      meta.kind = "refuse_missing", meta.domain = cap.domain, meta.caps = {cap.id};
      return {Output(q, ojson::array(), T.name() + " needs " + missing + "; the request does not give it"), meta};
    }
    Reset();
    return RefuseUnserved(false);
  }

  Example Extraction() {
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

  // ---- invented capabilities (random names, generic phrasing) --------------------------------
  Capability& Invent(const std::string& verb_in = "", const std::string& object_in = "") {
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
  const ToolSpec& InventedTool(Capability& c) {
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

  // A generic phrasing for tool T: an action phrase plus "with <param> <value>" parts.
  Template GenericTemplate(const ToolSpec& T, const std::vector<std::string>& actions, bool use_synonyms) {
    const std::vector<std::string> leads = Words("generic_leads"), forms = Words("generic_arg_forms");
    const std::string lead = leads.empty() ? "" : rng.Pick(leads);
    std::string text = Escape(lead) + Escape(rng.Pick(actions));
    int k = 0;
    std::vector<const ParamBinding*> ps;
    for (const ParamBinding& b : T.params)
      if (!b.slot.empty() && b.slot2.empty() && (b.required || rng.Chance(0.5))) ps.push_back(&b);
    rng.Shuffle(ps);
    const std::vector<std::string> object_words = SplitWords(Lower(T.cap->objects[0]));
    for (const ParamBinding* b : ps) {
      std::string pname = HumanizeName(b->name);
      const SlotDef* d = T.cap->Slot(b->slot);
      if (use_synonyms && d && !d->names.empty() && rng.Chance(0.3)) pname = HumanizeName(rng.Pick(d->names));
      // "greenhouseRecursive" on the greenhouse tool reads as "recursive".
      std::vector<std::string> pw = SplitWords(pname);
      if (pw.size() > 1 && !object_words.empty() && pw[0] == object_words.back() && rng.Chance(0.7)) {
        pw.erase(pw.begin());
        pname.clear();
        for (const auto& w : pw) pname += (pname.empty() ? "" : " ") + w;
      }
      std::string f = forms.empty() ? "with {name} {value}" : rng.Pick(forms);
      for (int tries = 0; tries < 5 && k > 0 && StartsWith(f, "and "); ++tries) f = rng.Pick(forms);
      if (k > 0 && StartsWith(f, "and ")) f = f.substr(4);
      std::string part;
      for (size_t i = 0; i < f.size(); ++i) {
        if (f.compare(i, 6, "{name}") == 0) part += Escape(pname), i += 5;
        else if (f.compare(i, 7, "{value}") == 0) part += "{" + b->slot + "}", i += 6;
        else part += Escape(std::string(1, f[i]));
      }
      text += (k == 0 ? " " : (k + 1 == static_cast<int>(ps.size()) && rng.Chance(0.6) ? " and " : ", ")) + part;
      ++k;
    }
    const bool question = lead.find("can you") != std::string::npos || lead.find("could you") != std::string::npos;
    if (question) text += "?";
    Template t;
    t.pattern = Pattern::Parse(text);
    t.command = !question && lead.empty();
    t.split = split;
    t.id = "generic";
    return t;
  }

  std::vector<std::string> ActionPhrases(const Capability& c) const {
    const std::string v = c.verbs[0], o = c.objects[0];
    return {v + " the " + o, v + " " + o, v + " the " + o, v + " my " + o};
  }

  Example Invented() {
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

  // ---- sessions -----------------------------------------------------------------------------
  struct Turn {
    ojson json;  // {"query"| "tool_result", "answers", "reasoning"}
  };

  ojson ResultFor(const Request& rq, ojson* record) {
    if (rng.Chance(0.07)) {
      const std::vector<std::string> errs = Words("tool_errors");
      return ojson{{"error", errs.empty() ? "unavailable" : rng.Pick(errs)}};
    }
    ojson r;
    if (!rq.cap->result.is_null()) {
      r = FillResult(rq.cap->result, rq.values, ctx, rng);
    } else {
      static const char* const kOk[] = {"ok", "done", "success"};
      const size_t s = rng.Below(4);
      if (s == 0) r = ojson{{"status", kOk[rng.Below(3)]}};
      else if (s == 1) r = ojson{{"ok", true}};
      else if (s == 2) r = ojson{{"success", true}};
      else r = ojson{{"result", "ok"}};
    }
    if (record) *record = r;
    return r;
  }

  std::string DoneReason(const ojson& result) {
    if (result.is_object() && result.contains("error")) return "the tool reported an error; nothing more to call";
    static const char* const kDone[] = {"done: the result completes the request", "result received; nothing left to call",
                                        "request complete"};
    return kDone[rng.Below(3)];
  }

  // Records returned by a lookup; `target` is the one the request means.
  ojson Records(const Chain& ch, const std::map<std::string, SlotValue>& vals, ojson& target) {
    // Records come from a database: their own capitalisation, not the request's typing.
    auto surface = [&](const char* slot) {
      auto it = vals.find(slot);
      return it == vals.end() ? std::string() : (it->second.raw.empty() ? it->second.surface : it->second.raw);
    };
    const int n = static_cast<int>(rng.Range(1, 3));
    const size_t at = rng.Below(n);
    static const char* const kIdKeys[] = {"id", "id", "uid", "ref"};
    const std::string idk = kIdKeys[rng.Below(4)];
    auto make_id = [&](const char* prefix) {
      switch (rng.Below(3)) {
        case 0: return std::string(prefix) + std::to_string(rng.Range(100, 99999));
        case 1: return std::to_string(rng.Range(10000, 9999999));
        default: return ExpandText(cat, std::string(prefix) + "{hex:6}", split, rng);
      }
    };
    ojson list = ojson::array();
    std::set<std::string> seen;
    for (int i = 0; i < n; ++i) {
      ojson rec = ojson::object();
      const bool is_target = static_cast<size_t>(i) == at;
      if (ch.records == "contacts") {
        std::string name = surface("person");
        if (name.empty()) name = ExpandPool(cat, "first_name", split, rng);
        if (is_target) {
          if (SplitWords(name).size() == 1) name = CapitalizeFirst(name) + " " + ExpandPool(cat, "last_name", split, rng);
        } else {
          do name = ExpandPool(cat, "first_name", split, rng) + " " + ExpandPool(cat, "last_name", split, rng);
          while (!surface("person").empty() &&
                 Lower(name).find(Lower(SplitWords(surface("person"))[0])) != std::string::npos);
        }
        rec[idk] = make_id("c_");
        rec["name"] = name;
        if (rng.Chance(0.6)) rec["phone"] = ExpandPool(cat, "phone_number", split, rng);
      } else if (ch.records == "places") {
        std::string name = is_target ? surface("place") : ExpandPool(cat, "place_name", split, rng);
        if (!is_target && Lower(name) == Lower(surface("place"))) name += " Annex";
        rec[idk] = make_id("p_");
        rec["name"] = name;
        rec["address"] = ExpandPool(cat, "street_address", split, rng);
        if (rng.Chance(0.5)) rec["distance_km"] = std::round(rng.Uniform() * 120) / 10.0;
      } else if (ch.records == "tracks") {
        std::string title = is_target ? surface("song") : ExpandPool(cat, "song", split, rng);
        if (!is_target && Lower(title) == Lower(surface("song"))) title += " (Live)";
        rec[idk] = make_id("trk_");
        rec["title"] = title;
        rec["artist"] = is_target && !surface("artist").empty() ? surface("artist") : ExpandPool(cat, "artist", split, rng);
      } else if (ch.records == "devices") {
        std::string name = is_target ? surface("device") : ExpandPool(cat, "device_name", split, rng);
        if (!is_target && Lower(name) == Lower(surface("device"))) name = "second " + name;
        rec[idk] = make_id("dev_");
        rec["name"] = name;
        if (!surface("room").empty()) rec["room"] = surface("room");
      } else {  // events
        std::string title = is_target ? surface("event") : ExpandPool(cat, "event_title", split, rng);
        if (!is_target && Lower(title) == Lower(surface("event"))) title += " (follow-up)";
        rec[idk] = make_id("evt_");
        rec["title"] = title;
        rec["start"] = Time24(static_cast<int>(rng.Range(7, 20)), static_cast<int>(rng.Range(0, 3)) * 15);
      }
      if (is_target) target = rec, target["@id"] = rec[idk];
      list.push_back(rec);
    }
    static const std::map<std::string, std::vector<std::string>> kListKeys = {
        {"contacts", {"results", "contacts", "matches"}}, {"places", {"results", "places"}},
        {"tracks", {"results", "tracks", "items"}},       {"devices", {"devices", "results"}},
        {"events", {"events", "results"}}};
    const auto& keys = kListKeys.at(kListKeys.count(ch.records) ? ch.records : "events");
    return ojson{{keys[rng.Below(keys.size())], list}};
  }

  // Arguments of an act from earlier records ("@field") and the request's values.
  bool ActCall(const Capability& act, const ToolSpec& T, const std::map<std::string, std::string>& mapping,
               const ojson& record, const std::map<std::string, SlotValue>& vals, const std::vector<SlotDef>& slot_defs,
               ojson& call, std::string& reason) {
    ojson args = ojson::object();
    std::string why;
    for (const ParamBinding& b : T.params) {
      if (b.slot.empty()) continue;
      auto m = mapping.find(b.slot);
      std::string src = m == mapping.end() ? b.slot : m->second;
      if (StartsWith(src, "@")) {
        const std::string field = src.substr(1);
        const std::string key = field == "id" ? "@id" : field;
        if (!record.contains(key)) {
          if (b.required) return false;
          continue;
        }
        const ojson v = record[key];
        args[b.name] = v.is_string() ? v : ojson(v.dump());
        why += (why.empty() ? "" : "; ") + std::string("'") + args[b.name].get<std::string>() + "' from the result -> " + b.name;
        continue;
      }
      auto it = vals.find(src);
      if (it == vals.end()) {
        if (b.required) return false;
        continue;
      }
      const SlotDef* d = nullptr;
      for (const SlotDef& s : slot_defs)
        if (s.id == src) d = &s;
      if (!d) d = act.Slot(b.slot);
      const ojson a = AnswerValue(it->second, *d, b, nullptr, ctx);
      args[b.name] = a;
      why += (why.empty() ? "" : "; ") + ReasonFragment(it->second, b, a, nullptr);
    }
    call = ojson{{"name", T.name()}, {"arguments", args}};
    reason = T.name() + ": " + (why.empty() ? "no arguments needed" : why);
    return true;
  }

  const ToolSpec* DeclaredFor(const Capability* c) const {
    for (const ToolSpec* t : declared)
      if (t->cap == c) return t;
    return nullptr;
  }

  Example Session() {
    DrawFacts(0.4);
    std::vector<const Chain*> chains;
    for (const Chain& c : cat.chains) {
      const Capability *l = cat.Find(c.lookup), *a = cat.Find(c.act);
      bool has_t = false;
      for (const Template& t : c.templates) has_t = has_t || t.split == split;
      if (has_t && (split == Split::kTest || (!l->test_only && !a->test_only))) chains.push_back(&c);
    }
    const size_t first = rng.Below(100);
    const bool use_chain = !chains.empty() && first < 50;
    const Chain* ch = use_chain ? chains[rng.Below(chains.size())] : nullptr;
    // Tools: the chain's two, or one to three targets, then distractors.
    std::vector<const Capability*> primary;
    if (ch) {
      primary = {cat.Find(ch->lookup), cat.Find(ch->act)};
      for (const FollowUp& f : cat.followups)
        if (std::count(f.after.begin(), f.after.end(), ch->id) && rng.Chance(0.6) &&
            static_cast<int>(primary.size()) < g.opt_.max_tools - 1)
          primary.push_back(cat.Find(f.act));
    }
    // Capabilities that would serve the chain's request directly are never declared beside it.
    std::vector<const Capability*> avoid;
    if (ch)
      for (const std::string& a : ch->avoid) avoid.push_back(cat.Find(a));
    const int extra = static_cast<int>(rng.Range(1, 2));
    for (int i = 0; i < extra; ++i) {
      const Capability* c = PickTarget();
      bool clash = false;
      for (const Capability* p : primary) clash = clash || Overlapping(*p, *c);
      for (const Capability* p : avoid) clash = clash || Overlapping(*p, *c);
      if (!clash && static_cast<int>(primary.size()) < g.opt_.max_tools - 1) primary.push_back(c);
    }
    for (const Capability* c : primary) Declare(MakeSpelling(*c));
    // Undo follow-ups need their act declared too.
    for (const FollowUp& f : cat.followups) {
      for (const std::string& a : f.after) {
        if (!StartsWith(a, "create:")) continue;
        const Capability* made = cat.Find(a.substr(7));
        const Capability* act = cat.Find(f.act);
        if (made && act && IsDeclaredCap(made) && !IsDeclaredCap(act) && rng.Chance(0.7) &&
            static_cast<int>(declared.size()) < g.opt_.max_tools)
          Declare(MakeSpelling(*act));
      }
    }
    AddDistractors(primary, std::min(std::min(6, g.opt_.max_tools), std::max<int>(static_cast<int>(declared.size()) + 1, ToolCount())), avoid);
    ShuffleDeclared();

    std::vector<ojson> turns;  // turns after the first
    ojson first_turn;
    ojson last_record;  // target record or created object, for follow-ups
    std::string last_after;  // chain id or "create:<cap>"
    std::vector<ojson> all;
    auto push = [&](ojson t) { all.push_back(std::move(t)); };
    const Style st = DrawStyle();

    auto simple_episode = [&](bool with_result) -> bool {
      std::vector<const ToolSpec*> cands;
      for (const ToolSpec* t : declared)
        if (t->cap->session_role.empty() && t->cap->domain != "extraction") cands.push_back(t);
      rng.Shuffle(cands);
      for (const ToolSpec* T : cands) {
        const Template* t = PickTemplate(T->cap->templates, *T, false);
        if (!t) continue;
        Request rq;
        if (!RenderRequest(*T->cap, *T, *t, rq)) continue;
        meta.templates.push_back(t->id);
        meta.caps.push_back(T->cap->id);
        Finish(rq, st);
        const std::string q = Assemble(Pieces(rq), st, t->command, t->pattern.is_question());
        push(ojson{{"query", q}, {"answers", ojson::array({rq.call})}, {"reasoning", rq.reason}});
        if (with_result) {
          ojson rec;
          const ojson res = ResultFor(rq, &rec);
          push(ojson{{"tool_result", res}, {"answers", ojson::array()}, {"reasoning", DoneReason(res)}});
          if (!res.contains("error")) {
            last_record = rec;
            if (rec.is_object() && rec.contains("id")) last_record["@id"] = rec["id"];
            last_after = "create:" + T->cap->id;
          }
        }
        return true;
      }
      return false;
    };

    bool ok = false;
    if (ch) {
      const Capability& lookup = *cat.Find(ch->lookup);
      const Capability& act = *cat.Find(ch->act);
      const ToolSpec* TL = DeclaredFor(&lookup);
      const ToolSpec* TA = DeclaredFor(&act);
      std::vector<const Template*> ts;
      for (const Template& t : ch->templates)
        if (t.split == split) ts.push_back(&t);
      const Template& t = *ts[rng.Below(ts.size())];
      // Values of the chain's slots; a hidden capability lets RenderRequest do the work.
      Capability hidden;
      hidden.id = "chain:" + ch->id;
      hidden.slots = ch->slots;
      ToolSpec HT;
      HT.cap = &hidden;
      for (const SlotDef& s : ch->slots) {
        ParamBinding b;
        b.slot = s.id, b.name = s.id;
        // Representation as the lookup or act declares it (so dates resolve as their schema asks).
        for (const auto& [ls, cs] : ch->lookup_args)
          if (cs == s.id && TL->ForSlot(ls)) b.rep = TL->ForSlot(ls)->rep, b.enum_map = TL->ForSlot(ls)->enum_map;
        for (const auto& [as, cs] : ch->act_args)
          if (cs == s.id && TA->ForSlot(as)) b.rep = TA->ForSlot(as)->rep, b.enum_map = TA->ForSlot(as)->enum_map;
        b.required = true;
        HT.params.push_back(b);
      }
      Request rq;
      // Chain templates render every slot they name; optional ones stay optional.
      for (ParamBinding& b : HT.params) b.required = t.pattern.mandatory_slots().count(b.slot) > 0;
      if (RenderRequest(hidden, HT, t, rq)) {
        meta.templates.push_back(t.id);
        meta.caps = {lookup.id, act.id};
        Finish(rq, st, false);
        const std::string q = Assemble(Pieces(rq), st, t.command, t.pattern.is_question());
        // Turn 1: the lookup.
        ojson call1, record;
        std::string reason1;
        if (ActCall(lookup, *TL, ch->lookup_args, ojson::object(), rq.values, ch->slots, call1, reason1)) {
          push(ojson{{"query", q}, {"answers", ojson::array({call1})}, {"reasoning", reason1}});
          const ojson res = Records(*ch, rq.values, record);
          ojson call2;
          std::string reason2;
          if (ActCall(act, *TA, ch->act_args, record, rq.values, ch->slots, call2, reason2)) {
            push(ojson{{"tool_result", res}, {"answers", ojson::array({call2})}, {"reasoning", reason2}});
            Request fake;
            fake.cap = &act;
            const ojson res2 = ResultFor(fake, nullptr);
            push(ojson{{"tool_result", res2}, {"answers", ojson::array()}, {"reasoning", DoneReason(res2)}});
            last_record = record;
            last_after = ch->id;
            ok = true;
          }
        }
      }
      if (!ok) all.clear();
    }
    if (!ok) {
      meta.templates.clear();
      meta.caps.clear();
      ok = simple_episode(true);
    }
    if (!ok) {
      Reset();
      return Single();
    }
    // Later requests in the same session.
    const int more = g.opt_.long_sessions ? static_cast<int>(rng.Range(6, 14)) : static_cast<int>(rng.Weighted({35, 40, 25}));
    for (int e = 0; e < more; ++e) {
      const size_t r = rng.Below(100);
      bool done = false;
      if (r < 45 && !last_after.empty()) {
        std::vector<const FollowUp*> fs;
        for (const FollowUp& f : cat.followups)
          if (std::count(f.after.begin(), f.after.end(), last_after) && IsDeclaredCap(cat.Find(f.act))) {
            for (const Template& t : f.templates)
              if (t.split == split) {
                fs.push_back(&f);
                break;
              }
          }
        if (!fs.empty()) {
          const FollowUp& f = *fs[rng.Below(fs.size())];
          const Capability& act = *cat.Find(f.act);
          const ToolSpec& TA = *DeclaredFor(&act);
          std::vector<const Template*> ts;
          for (const Template& t : f.templates)
            if (t.split == split) ts.push_back(&t);
          const Template& t = *ts[rng.Below(ts.size())];
          Capability hidden = act;
          hidden.slots.push_back(ParseSlot("first", ojson{{"kind", "text"}, {"pool", "first_name"}}, "followup"));
          ToolSpec HT = TA;
          HT.cap = &hidden;
          for (ParamBinding& b : HT.params) b.required = false;
          Request rq;
          if (RenderRequest(hidden, HT, t, rq)) {
            if (rq.values.count("first") && last_record.contains("name")) {
              rq.values["first"].surface = SplitWords(last_record["name"].get<std::string>())[0];
            }
            Finish(rq, st, false);
            ojson call;
            std::string reason;
            if (ActCall(act, TA, f.args, last_record, rq.values, act.slots, call, reason)) {
              meta.templates.push_back(t.id);
              const std::string q = Assemble(Pieces(rq), st, t.command, t.pattern.is_question());
              push(ojson{{"query", q}, {"answers", ojson::array({call})}, {"reasoning", reason}});
              Request fake;
              fake.cap = &act;
              const ojson res = ResultFor(fake, nullptr);
              push(ojson{{"tool_result", res}, {"answers", ojson::array()}, {"reasoning", DoneReason(res)}});
              last_after.clear();
              done = true;
            }
          }
        }
      }
      if (!done && r < 80) done = simple_episode(true);
      bool open_declared = false;
      for (const ToolSpec* t : declared) open_declared = open_declared || t->cap->open_ended;
      if (!done && open_declared) done = simple_episode(true);
      if (!done) {
        const std::string q0 = ExpandPool(cat, "offtopic", split, rng);
        const std::string q = Assemble({{q0, false}}, st, false, q0.back() == '?');
        push(ojson{{"query", q}, {"answers", ojson::array()}, {"reasoning", "no declared tool handles this request"}});
      }
    }
    ojson out = Output(all[0]["query"].get<std::string>(), all[0]["answers"], all[0]["reasoning"].get<std::string>());
    ojson rest = ojson::array();
    for (size_t i = 1; i < all.size(); ++i) rest.push_back(all[i]);
    out["turns"] = rest;
    meta.kind = "session";
    meta.turns = static_cast<int>(all.size());
    meta.domain = meta.caps.empty() ? "" : cat.Find(meta.caps[0]) ? cat.Find(meta.caps[0])->domain : "";
    return {out, meta};
  }

  // ---- user tools (--tools) ---------------------------------------------------------------------
  Example User() {
    const auto& tools = g.user_tools_;
    DrawFacts(0.3);
    const size_t r = rng.Below(100);
    const int total = std::min<int>(static_cast<int>(tools.size()), std::max(1, ToolCount() - 1));
    std::vector<size_t> idx(tools.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    rng.Shuffle(idx);
    if (r < 12) {
      // Off-topic or a catalogue request none of the user's tools serves.
      for (int i = 0; i < total; ++i) Declare(tools[idx[i]]);
      std::string q0;
      std::string reason = "no declared tool handles this request";
      if (rng.Chance(0.5) || g.targets_.empty()) {
        q0 = ExpandPool(cat, "offtopic", split, rng);
      } else {
        for (int attempt = 0; attempt < 30 && q0.empty(); ++attempt) {
          const Capability& cap = *PickTarget();
          // Skip catalogue capabilities whose words appear in the user's tools.
          bool clash = false;
          for (const ToolSpec& t : tools) {
            const std::string text = Lower(t.schema.dump());
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
      meta.kind = "refuse_user", meta.domain = "user";
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
      local.templates = {GenericTemplate(LTr, UserActions(local, LTr), false)};
      Request rq;
      if (!RenderRequest(local, LTr, local.templates[0], rq)) continue;
      const Style st = DrawStyle();
      Finish(rq, st);
      const std::string q = Assemble(Pieces(rq), st, local.templates[0].command, local.templates[0].pattern.is_question());
      meta.kind = "user", meta.domain = "user", meta.caps = {T.name()};
      return {Output(q, ojson::array({rq.call}), rq.reason), meta};
    }
    throw Error(ErrorCode::kInvalidArgument, "--tools: cannot phrase a request for tool '" + T.name() + "'");
  }

  std::vector<std::string> UserActions(const Capability& c, const ToolSpec& T) const {
    std::vector<std::string> out;
    out.push_back(HumanizeName(T.name()));
    if (!c.does.empty()) out.push_back(c.does);
    return out;
  }
};

namespace {

// Imperative phrase from a description: "Turns on the porch light." -> "turn on the porch light".
std::string Imperative(const std::string& description) {
  std::string s = description.substr(0, description.find_first_of(".\n"));
  std::vector<std::string> w = SplitWords(s);
  if (w.empty() || w.size() > 12) return "";
  std::string v = Lower(w[0]);
  if (v.size() > 3 && v.back() == 's' && v != "this" && v != "does") {
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
    s.min = prop.contains("minimum") ? prop["minimum"].get<double>() : (prop.contains("exclusiveMinimum") ? prop["exclusiveMinimum"].get<double>() + 1 : 1);
    s.max = prop.contains("maximum") ? prop["maximum"].get<double>() : (prop.contains("exclusiveMaximum") ? prop["exclusiveMaximum"].get<double>() - 1 : s.min + 99);
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
  if (format == "date") return s.kind = SlotKind::kDate, s;
  if (format == "time") return s.kind = SlotKind::kTime, s;
  s.kind = SlotKind::kText;
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
  }
  return s;
}

}  // namespace

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
}

void Generator::SetUserTools(const ojson& tools_in) {
  const ojson& tools = tools_in.is_object() && tools_in.contains("tools") ? tools_in["tools"] : tools_in;
  if (!tools.is_array() || tools.empty())
    throw Error(ErrorCode::kInvalidArgument, "--tools: expected a non-empty JSON array of tool schemas");
  std::set<std::string> seen;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string where = "--tools: tool " + std::to_string(i);
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      throw Error(ErrorCode::kInvalidArgument, where + ": needs a string 'name'");
    const std::string name = t["name"].get<std::string>();
    if (!seen.insert(name).second) throw Error(ErrorCode::kInvalidArgument, where + ": duplicate name '" + name + "'");
    const ojson params = t.contains("parameters") ? t["parameters"] : ojson{{"type", "object"}, {"properties", ojson::object()}};
    if (!params.is_object() || params.value("type", "object") != "object")
      throw Error(ErrorCode::kInvalidArgument, where + " '" + name + "': parameters must be a JSON Schema object");
    user_caps_.emplace_back();
    Capability& c = user_caps_.back();
    c.id = "user:" + name;
    c.domain = "user";
    c.group = "user";
    c.verbs = {HumanizeName(name)};
    c.objects = {HumanizeName(name)};
    const std::string desc = t.value("description", "");
    c.does = Imperative(desc);
    std::set<std::string> req;
    if (params.contains("required"))
      for (const auto& r : params["required"]) req.insert(r.get<std::string>());
    ToolSpec spec;
    spec.cap = &c;
    spec.origin = "user";
    spec.schema = ojson::object();
    spec.schema["name"] = name;
    if (t.contains("description")) spec.schema["description"] = t["description"];
    spec.schema["parameters"] = params;
    if (params.contains("properties")) {
      for (const auto& [pname, prop] : params["properties"].items()) {
        const std::string pw = where + " '" + name + "' property '" + pname + "'";
        const std::string type = prop.contains("type") && prop["type"].is_string() ? prop["type"].get<std::string>() : "string";
        if (type == "object" || (type == "array" && prop.contains("items") && prop["items"].value("type", "string") != "string")) {
          if (req.count(pname)) throw Error(ErrorCode::kInvalidArgument, pw + ": required nested objects are not supported");
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
    user_tools_.push_back(spec);
  }
}

Example Generator::Generate(uint64_t index) const {
  Build b(*this, index);
  if (!user_tools_.empty()) return b.User();
  if (opt_.long_sessions) return b.Session();
  // Mixture (see docs/data-format.md): about 13% refusals overall.
  static const std::vector<double> kWeights = {
      47,   // single
      7,    // parallel
      2.8,  // refuse: off-topic
      2.8,  // refuse: another domain
      3.4,  // refuse: near miss
      1.4,  // refuse: value outside the enum
      1.3,  // refuse: required argument missing
      8,    // extraction
      11,   // session
      7,    // invented capabilities
  };
  switch (b.rng.Weighted(kWeights)) {
    case 0: return b.Single();
    case 1: return b.Parallel();
    case 2: return b.RefuseOffTopic();
    case 3: return b.RefuseUnserved(false);
    case 4: return b.RefuseUnserved(true);
    case 5: return b.RefuseEnum();
    case 6: return b.RefuseMissing();
    case 7: return b.Extraction();
    case 8: return b.Session();
    default: return b.Invented();
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
