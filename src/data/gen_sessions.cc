// Multi-turn sessions: a lookup-then-act chain or a simple request, tool
// results fed back, a final [] "done", then later requests (follow-ups on the
// earlier result, new requests, off-topic ones).
#include <algorithm>
#include <cmath>

#include "data/generator_internal.h"  // Build
#include "data/words.h"               // Lower, SplitWords, CapitalizeFirst

namespace needle::data {

namespace {

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

ojson Build::ResultFor(const Request& rq, ojson* record) {
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

std::string Build::DoneReason(const ojson& result) {
  if (result.is_object() && result.contains("error")) return "the tool reported an error; nothing more to call";
  static const char* const kDone[] = {"done: the result completes the request", "result received; nothing left to call",
                                      "request complete"};
  return kDone[rng.Below(3)];
}

// Records returned by a lookup; `target` is the one the request means.
ojson Build::Records(const Chain& ch, const std::map<std::string, SlotValue>& vals, ojson& target) {
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
bool Build::ActCall(const Capability& act, const ToolSpec& T, const std::map<std::string, std::string>& mapping,
                    const ojson& record, const std::map<std::string, SlotValue>& vals,
                    const std::vector<SlotDef>& slot_defs, ojson& call, std::string& reason) {
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

Example Build::Session() {
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

}  // namespace needle::data
