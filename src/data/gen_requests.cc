// The request's phrasing: a template that fits the tool, the typing style, and
// the assembly of the text around the values (wrappers, openers, closers,
// case, typos, punctuation).
#include <algorithm>

#include "data/generator_internal.h"  // Build
#include "data/names.h"               // HumanizeName
#include "data/words.h"               // Lower, TidySpaces, Typo

namespace needle::data {

namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == '|' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Marks the plural noun a template says after a count (see Build::Pieces).
constexpr char kCountNoun = '\x03';

// A date's "on " reads wrong after "for", "by", "due", ":" and the like.
bool LeadFits(const std::vector<Piece>& before) {
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

}  // namespace

// ---- templates ----------------------------------------------------------------------------
// `mentions_ok`: the text may mention slots the tool does not declare (passages do).
bool Build::Fits(const Template& t, const ToolSpec& T, bool mentions_ok) const {
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

const Template* Build::PickTemplate(const std::vector<Template>& list, const ToolSpec& T, bool commands_only,
                                    bool mentions_ok) {
  std::vector<const Template*> ok;
  for (const Template& t : list)
    if (t.split == split && (!commands_only || t.command) && Fits(t, T, mentions_ok)) ok.push_back(&t);
  return ok.empty() ? nullptr : ok[rng.Below(ok.size())];
}

// A rendered request for `cap` with a fresh tool spelling (declared or not).
bool Build::MakeRequest(const Capability& cap, bool commands_only, Request& rq, const ToolSpec** tool_out) {
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

Style Build::DrawStyle() {
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

std::vector<Piece> Build::Pieces(const Request& rq) const {
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
  // kCountNoun marks a plural the template put after a count ("for {n}
  // \x03passengers"): singular after one ("for 1 passenger").
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t at = out[i].text.find(kCountNoun);
    if (at == std::string::npos) continue;
    std::string& t = out[i].text;
    const std::string count = i > 0 ? Lower(Trim(out[i - 1].text)) : "";
    const size_t end = t.find_first_of(" ,.!?", at + 1);
    std::string noun = t.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    if ((count == "1" || count == "one") && noun.size() > 3 && noun.back() == 's') {
      noun = EndsWith(noun, "ies") ? noun.substr(0, noun.size() - 3) + "y" : noun.substr(0, noun.size() - 1);
    }
    t = t.substr(0, at) + noun + (end == std::string::npos ? "" : t.substr(end));
  }
  return out;
}

// Wraps a command ("could you ...?"), adds fillers, applies case, typos, punctuation.
std::string Build::Assemble(std::vector<Piece> body, const Style& st, bool command, bool question) {
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

// ---- generic phrasing (invented and user tools) -----------------------------------------------
// Where a binding's value goes in a template, its slots between `open` and
// `close`: a date-time's two slots said together ("tomorrow at 3pm", "on May
// 3 at 9:30"). The date brings its own "on"; the time comes second ("at 8
// April 15" would read as one number).
std::string Build::SlotsOf(const ParamBinding& b, const std::string& open, const std::string& close) const {
  const std::string one = open + b.slot + close;
  return b.slot2.empty() ? one : one + " at " + open + b.slot2 + close;
}

// A generic phrasing for tool T: an action phrase plus "with <param> <value>" parts.
Template Build::GenericTemplate(const ToolSpec& T, const std::vector<std::string>& actions, bool use_synonyms) {
  const std::vector<std::string> leads = Words("generic_leads"), forms = Words("generic_arg_forms");
  const std::string lead = leads.empty() ? "" : rng.Pick(leads);
  std::string text = Escape(rng.Pick(actions));
  int k = 0;
  std::vector<const ParamBinding*> ps;
  for (const ParamBinding& b : T.params)
    if (!b.slot.empty() && (b.required || rng.Chance(0.5))) ps.push_back(&b);
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
      else if (f.compare(i, 7, "{value}") == 0) part += SlotsOf(*b, "{", "}"), i += 6;
      else part += Escape(std::string(1, f[i]));
    }
    text += (k == 0 ? " " : (k + 1 == static_cast<int>(ps.size()) && rng.Chance(0.6) ? " and " : ", ")) + part;
    ++k;
  }
  return LedTemplate(lead, text, "generic");
}

Template Build::LedTemplate(const std::string& lead, const std::string& body, const char* id) const {
  const bool question = lead.find("can you") != std::string::npos || lead.find("could you") != std::string::npos;
  Template t;
  t.pattern = Pattern::Parse(Escape(lead) + body + (question ? "?" : ""));
  t.command = !question && lead.empty();
  t.split = split;
  t.id = id;
  return t;
}

Template Build::UserTemplate(const ToolSpec& T) {
  const Capability& c = *T.cap;
  // A third of the requests keep the "name value" forms (how some people
  // write to an API); the others are phrased from the description.
  if (c.does.empty() || rng.Chance(0.33)) return GenericTemplate(T, UserActions(c, T), false);
  std::vector<const ParamBinding*> ps;
  for (const ParamBinding& b : T.params)
    if (!b.slot.empty() && (b.required || rng.Chance(0.5))) ps.push_back(&b);
  // A date or time is said bare ("tomorrow at 3pm") only when it is the one
  // moment of the request; two (a start and an end) are said with their names.
  size_t moments = 0;
  for (const ParamBinding* b : ps) {
    const SlotDef* d = c.Slot(b->slot);
    moments += d && (d->kind == SlotKind::kDate || d->kind == SlotKind::kTime);
  }
  // The noun a parameter is named after ("restaurant", "city"), when no other
  // chosen parameter shares it: where the description says "a restaurant",
  // the request says the value.
  auto noun = [](const ParamBinding& b) {
    const std::vector<std::string> w = SplitIdentifier(b.name);
    return w.empty() ? std::string() : Lower(w.back());
  };
  std::string action = " " + Lower(c.does) + " ";
  std::vector<const ParamBinding*> rest;
  for (const ParamBinding* b : ps) {
    const std::string n = noun(*b);
    size_t same = 0;
    for (const ParamBinding* o : ps) same += noun(*o) == n;
    bool placed = false;
    for (const char* article : {" a ", " an ", " the ", " one ", " some "}) {
      const std::string want = std::string(article) + n + " ";
      const size_t at = action.find(want);
      if (n.size() > 2 && same == 1 && at != std::string::npos && b->slot2.empty()) {
        // "an amount of money" is said as the amount itself.
        size_t end = at + want.size();
        if (action.compare(end, 3, "of ") == 0) {
          const size_t word_end = action.find(' ', end + 3);
          if (word_end != std::string::npos) end = word_end + 1;
        }
        // "on a date": the date brings its own "on" ("on May 3", "tomorrow").
        const SlotDef* sd = c.Slot(b->slot);
        const size_t cut = sd && sd->kind == SlotKind::kDate && at >= 3 && action.compare(at - 3, 3, " on") == 0 ? at - 3 : at;
        action = action.substr(0, cut) + " \x01" + b->slot + "\x02 " + action.substr(end);
        placed = true;
        break;
      }
    }
    if (!placed) rest.push_back(b);
  }
  // "convert an amount from one currency to another" says from and to
  // already: with a from and a to parameter to say, that clause goes.
  auto starts = [&](const char* w) {
    for (const ParamBinding* b : rest) {
      const std::vector<std::string> n = SplitIdentifier(b->name);
      if (!n.empty() && Lower(n.front()) == w) return true;
    }
    return false;
  };
  if (starts("from") && starts("to")) {
    const size_t from = action.find(" from one ");
    const size_t another = from == std::string::npos ? from : action.find(" to another ", from);
    if (another != std::string::npos) action.erase(from, another + 11 - from);
  }
  rng.Shuffle(rest);
  // A from before its to ("from EUR to USD").
  std::stable_sort(rest.begin(), rest.end(), [](const ParamBinding* a, const ParamBinding* b) {
    auto rank = [](const ParamBinding* p) {
      const std::vector<std::string> n = SplitIdentifier(p->name);
      const std::string f = n.empty() ? "" : Lower(n.front());
      return f == "from" ? 0 : f == "to" ? 1 : 2;
    };
    return rank(a) < rank(b);
  });
  const std::vector<std::string> forms = Words("generic_arg_forms");
  std::vector<std::string> parts;
  for (const ParamBinding* b : rest) {
    const SlotDef* d = c.Slot(b->slot);
    const std::vector<std::string> w = SplitIdentifier(b->name);
    const std::string first = w.empty() ? "" : Lower(w.front());
    const std::string desc = Lower(d && T.schema["parameters"].contains("properties") &&
                                           T.schema["parameters"]["properties"].contains(b->name)
                                       ? T.schema["parameters"]["properties"][b->name].value("description", "")
                                       : "");
    const std::string v = SlotsOf(*b, "\x01", "\x02");
    const bool moment = d && (d->kind == SlotKind::kDate || d->kind == SlotKind::kTime);
    std::string part;
    if (first == "from" || first == "source" || first == "origin") part = "from " + v;
    else if (first == "to" || first == "target" || first == "destination") part = "to " + v;
    else if (moment && moments == 1 && !b->slot2.empty()) part = v;
    else if (moment && moments == 1 && d->kind == SlotKind::kTime) part = rng.Pick(std::vector<std::string>{"at " + v, "for " + v});
    else if (moment && moments == 1) part = rng.Pick(std::vector<std::string>{v, v, "for " + v});  // the date's own "on "
    else if (moment && (first == "start" || first == "begin" || first == "end" || first == "due" || first == "until"))
      part = rng.Pick(std::vector<std::string>{first == "start" || first == "begin" ? "starting " : first == "end" ? "ending " : first + " ",
                                               HumanizeName(b->name) + " "}) + v;
    else if (d && d->kind == SlotKind::kText && d->pool == "city") part = rng.Pick(std::vector<std::string>{"in " + v, "for " + v});
    else if (d && (d->kind == SlotKind::kInt || d->kind == SlotKind::kNumber) && StartsWith(desc, "number of "))
      part = rng.Pick(std::vector<std::string>{"for ", ""}) + v + " " + kCountNoun + desc.substr(10, desc.find_first_of(".,(", 10) - 10);
    else if (d && d->kind == SlotKind::kEnum && (first == "unit" || first == "units")) part = "in " + v;
    else {
      std::string f = forms.empty() ? "with {name} {value}" : rng.Pick(forms);
      if (StartsWith(f, "and ")) f = f.substr(4);
      const size_t nm = f.find("{name}");
      if (nm != std::string::npos) f.replace(nm, 6, HumanizeName(b->name));
      const size_t vl = f.find("{value}");
      if (vl != std::string::npos) f.replace(vl, 7, v);
      part = f;
    }
    parts.push_back(part);
  }
  std::string text = TidySpaces(action);
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool pair = i > 0 && StartsWith(parts[i - 1], "from ") && StartsWith(parts[i], "to ");
    text += (i == 0 || pair ? " " : (i + 1 == parts.size() && rng.Chance(0.6) ? " and " : ", ")) + parts[i];
  }
  const std::vector<std::string> leads = Words("generic_leads");
  const std::string lead = leads.empty() ? "" : rng.Pick(leads);
  // Escaped as template text, the value places as slots.
  std::string pattern;
  for (size_t i = 0; i < text.size();) {
    const size_t open = text.find('\x01', i);
    pattern += Escape(text.substr(i, open == std::string::npos ? std::string::npos : open - i));
    if (open == std::string::npos) break;
    const size_t close = text.find('\x02', open);
    pattern += "{" + text.substr(open + 1, close - open - 1) + "}";
    i = close + 1;
  }
  return LedTemplate(lead, pattern, "user_described");
}

std::vector<std::string> Build::UserActions(const Capability& c, const ToolSpec& T) const {
  std::vector<std::string> out;
  out.push_back(HumanizeName(T.name()));
  // Not when the description names a parameter by a stand-in ("search for
  // flights on a date"): the "name value" forms would say it twice.
  const std::string does = " " + Lower(c.does) + " ";
  for (const ParamBinding& b : T.params) {
    const std::vector<std::string> w = SplitIdentifier(b.name);
    if (w.empty() || b.slot.empty()) continue;
    for (const char* article : {" a ", " an ", " one ", " some "})
      if (does.find(article + Lower(w.back()) + " ") != std::string::npos) return out;
  }
  if (!c.does.empty()) out.push_back(c.does);
  return out;
}

}  // namespace needle::data
