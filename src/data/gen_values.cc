// The values of a request: drawn for the slots a rendered template names
// (paired slots share one pool item, facts fill what the text leaves out), then
// styled and written into the call with its reasoning.
#include "data/generator_internal.h"  // Build
#include "data/words.h"               // Lower

namespace needle::data {

// Renders `t` for tool `T` and draws the values. False when no rendering fits.
bool Build::RenderRequest(const Capability& cap, const ToolSpec& T, const Template& t, Request& out) {
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
    // Two slots of one pool say different values: "from LGW to LGW" tells
    // neither parameter from the other.
    for (auto it = out.values.begin(); it != out.values.end(); ++it) {
      const SlotDef* d = cap.Slot(it->first);
      if (!d || d->kind != SlotKind::kText || d->pool.empty() || !d->pair.empty() || it->second.assigned) continue;
      auto clashes = [&] {
        for (auto jt = out.values.begin(); jt != it; ++jt) {
          const SlotDef* e = cap.Slot(jt->first);
          if (e && e->pool == d->pool && Lower(jt->second.surface) == Lower(it->second.surface)) return true;
        }
        return false;
      };
      for (int tries = 0; tries < 8 && clashes(); ++tries) it->second = DrawValue(*d, T.ForSlot(it->first), ctx, rng);
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
void Build::Finish(Request& rq, const Style& st, bool make_call) {
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

}  // namespace needle::data
