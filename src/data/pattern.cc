#include "data/pattern.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "base/error.h"  // Error
#include "data/words.h"  // SplitWords, Trim

namespace needle::data {

namespace {

using Node = Pattern::Node;
using Seq = Pattern::Seq;

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Seq ParseSeq(char close) {
    Seq seq;
    std::string text;
    auto flush = [&] {
      if (!text.empty()) {
        Node n;
        n.kind = Node::kText;
        n.text = text;
        seq.push_back(std::move(n));
        text.clear();
      }
    };
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\') {
        if (i_ + 1 >= s_.size()) Fail("a backslash at the end");
        text += s_[i_ + 1];
        i_ += 2;
      } else if (c == '(' || c == '[') {
        flush();
        ++i_;
        Node n;
        n.kind = c == '(' ? Node::kAlt : Node::kOpt;
        if (c == '(') {
          for (;;) {
            n.alts.push_back(ParseSeq('|'));
            if (i_ >= s_.size()) Fail("an unclosed '('");
            if (s_[i_++] == ')') break;
          }
        } else {
          n.alts.push_back(ParseSeq(']'));
          if (i_ >= s_.size() || s_[i_] != ']') Fail("an unclosed '['");
          ++i_;
        }
        seq.push_back(std::move(n));
      } else if (c == '{') {
        flush();
        const size_t end = s_.find('}', i_);
        if (end == std::string_view::npos) Fail("an unclosed '{'");
        std::string body(s_.substr(i_ + 1, end - i_ - 1));
        i_ = end + 1;
        Node n;
        const size_t eq = body.find('=');
        if (eq == std::string::npos) {
          n.kind = Node::kSlot;
          n.slot = body;
        } else {
          n.kind = Node::kAssign;
          n.slot = body.substr(0, eq);
          n.value = body.substr(eq + 1);
          if (const size_t colon = n.value.find(':'); colon != std::string::npos) {
            n.cue = n.value.substr(colon + 1);
            n.value = n.value.substr(0, colon);
          }
          if (n.value.empty()) Fail("an empty value in {" + body + "}");
        }
        if (n.slot.empty()) Fail("an empty slot name");
        for (char ch : n.slot)
          if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) Fail("a bad slot name '" + n.slot + "'");
        seq.push_back(std::move(n));
      } else if (c == ')' || c == ']' || c == '|') {
        if (c == close || (close == '|' && c == ')')) break;
        Fail(std::string("an unexpected '") + c + "'");
      } else if (c == '}') {
        Fail("an unexpected '}'");
      } else {
        text += c;
        ++i_;
      }
    }
    flush();
    return seq;
  }

  size_t pos() const { return i_; }
  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument,
                "template \"" + std::string(s_) + "\": " + what + " at offset " + std::to_string(i_));
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

// Fills mandatory/all sets bottom-up; returns the sequence's (mandatory, all).
void Analyse(Seq& seq, std::set<std::string>& mandatory, std::set<std::string>& all, std::set<std::string>& assigned) {
  for (Node& n : seq) {
    n.mandatory.clear(), n.all.clear();
    switch (n.kind) {
      case Node::kText: break;
      case Node::kSlot: n.mandatory = n.all = {n.slot}; break;
      case Node::kAssign:
        n.mandatory = n.all = {n.slot};
        assigned.insert(n.slot);
        break;
      case Node::kAlt: {
        bool first = true;
        for (Seq& alt : n.alts) {
          std::set<std::string> m, a;
          Analyse(alt, m, a, assigned);
          n.all.insert(a.begin(), a.end());
          if (first) {
            n.mandatory = m;
            first = false;
          } else {
            std::set<std::string> keep;
            std::set_intersection(n.mandatory.begin(), n.mandatory.end(), m.begin(), m.end(),
                                  std::inserter(keep, keep.end()));
            n.mandatory = keep;
          }
        }
        break;
      }
      case Node::kOpt: {
        std::set<std::string> m;
        Analyse(n.alts[0], m, n.all, assigned);
        n.mandatory.clear();  // an optional group guarantees nothing
        break;
      }
    }
    mandatory.insert(n.mandatory.begin(), n.mandatory.end());
    all.insert(n.all.begin(), n.all.end());
  }
}

std::set<std::string> SeqMandatory(const Seq& seq) {
  std::set<std::string> m;
  for (const Node& n : seq) m.insert(n.mandatory.begin(), n.mandatory.end());
  return m;
}

bool Subset(const std::set<std::string>& a, const std::set<std::string>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

std::string LastWords(const std::string& text, size_t n) {
  std::vector<std::string> w = SplitWords(text);
  while (!w.empty() && (w.back() == "," || w.back() == "-")) w.pop_back();
  std::string out;
  for (size_t i = w.size() > n ? w.size() - n : 0; i < w.size(); ++i) out += (out.empty() ? "" : " ") + w[i];
  return Trim(out);
}

void RenderSeq(const Seq& seq, Rng& rng, const std::set<std::string>& wanted, Rendered& out) {
  for (const Node& n : seq) {
    switch (n.kind) {
      case Node::kText: out.segments.push_back({n.text, ""}); break;
      case Node::kSlot:
        out.segments.push_back({"", n.slot});
        out.slots.insert(n.slot);
        break;
      case Node::kAssign: {
        std::string cue = n.cue;
        if (cue.empty()) {
          // The literal words just before the assignment.
          std::string before;
          for (auto it = out.segments.rbegin(); it != out.segments.rend() && it->slot.empty(); ++it)
            before = it->text + before;
          cue = LastWords(before, 3);
        }
        out.assigned[n.slot] = {n.value, cue};
        out.slots.insert(n.slot);
        break;
      }
      case Node::kAlt: {
        // Prefer alternatives whose slots are all wanted; among them, uniformly.
        std::vector<size_t> ok;
        for (size_t i = 0; i < n.alts.size(); ++i) {
          if (Subset(SeqMandatory(n.alts[i]), wanted)) ok.push_back(i);
        }
        const size_t pick = ok.empty() ? rng.Below(n.alts.size()) : ok[rng.Below(ok.size())];
        RenderSeq(n.alts[pick], rng, wanted, out);
        break;
      }
      case Node::kOpt: {
        const bool has_slots = !n.all.empty();
        bool render;
        if (has_slots) {
          // Rendered when every slot it must render is wanted and at least one is.
          const std::set<std::string> m = SeqMandatory(n.alts[0]);
          std::set<std::string> any;
          for (const auto& s : n.all)
            if (wanted.count(s)) any.insert(s);
          render = Subset(m, wanted) && !any.empty();
        } else {
          render = rng.Chance(0.5);
        }
        if (render) RenderSeq(n.alts[0], rng, wanted, out);
        break;
      }
    }
  }
}

}  // namespace

Pattern Pattern::Parse(std::string_view text) {
  Pattern p;
  p.text_ = std::string(text);
  Parser parser(text);
  p.nodes_ = parser.ParseSeq('\0');
  if (parser.pos() != text.size()) parser.Fail("unbalanced brackets");
  Analyse(p.nodes_, p.mandatory_, p.all_, p.assigned_);
  return p;
}

Rendered Pattern::Render(Rng& rng, const std::set<std::string>& wanted) const {
  Rendered out;
  RenderSeq(nodes_, rng, wanted, out);
  return out;
}

std::string JoinSegments(const std::vector<Segment>& segs, const std::map<std::string, std::string>& surface) {
  std::string out;
  for (const Segment& s : segs) {
    if (s.slot.empty()) {
      out += s.text;
    } else if (auto it = surface.find(s.slot); it != surface.end()) {
      out += it->second;
    }
  }
  return out;
}

}  // namespace needle::data
