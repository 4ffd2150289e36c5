// Refusals (the answer is []): off-topic requests, requests for another domain,
// near misses (a tool of the same group is declared), a value outside the
// declared enum, a required argument missing.
#include <algorithm>

#include "data/generator_internal.h"  // Build

namespace needle::data {

// A request for `cap` that is not declared (values drawn for a hidden spelling).
bool Build::HiddenRequest(const Capability& cap, Request& rq) {
  const ToolSpec* T = nullptr;
  if (!MakeRequest(cap, false, rq, &T)) return false;
  return true;
}

Example Build::RefuseOffTopic() {
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
Example Build::RefuseUnserved(bool near_miss) {
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

// The text of a refused request for `cap` whose tool `T` is declared (among
// distractors): styled, but no call is made (the answer is []).
std::string Build::RefusedQuery(const Capability& cap, const ToolSpec& T, const Template& t, Request& rq) {
  meta.templates.push_back(t.id);
  Declare(T);
  AddDistractors({&cap}, ToolCount());
  ShuffleDeclared();
  const Style st = DrawStyle();
  Finish(rq, st, false);
  return Assemble(Pieces(rq), st, t.command, t.pattern.is_question());
}

// The request asks for an enum value the declared tool does not offer.
Example Build::RefuseEnum() {
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
    const std::string q = RefusedQuery(cap, T, t, rq);
    std::string allowed;
    for (const auto& [id, d] : b->enum_map) allowed += (allowed.empty() ? "" : ", ") + d;
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
Example Build::RefuseMissing() {
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
    const std::string q = RefusedQuery(cap, T, t, rq);
    meta.kind = "refuse_missing", meta.domain = cap.domain, meta.caps = {cap.id};
    return {Output(q, ojson::array(), T.name() + " needs " + missing + "; the request does not give it"), meta};
  }
  Reset();
  return RefuseUnserved(false);
}

}  // namespace needle::data
