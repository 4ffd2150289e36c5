// The phrase-template mini-language of the catalogue (docs/data-format.md):
//
//   text             literal words
//   {slot}           the slot's surface form, copied into the query
//   {slot=value}     sets the slot without words of its own (an enum value id,
//                    or max/min for a number: the schema's bound); the words
//                    before it (up to three) are its cue in the reasoning
//   {slot=value:cue} the same with an explicit cue
//   (a|b|c)          one alternative, drawn at random
//   [x]              optional: rendered when every slot inside is wanted
//                    (a slotless group: a coin flip)
//   \( \) \[ \] \{ \} \| \\   literal characters
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "data/rng.h"  // Rng

namespace needle::data {

// One piece of a rendered phrase: literal text, or the place of a slot's surface.
struct Segment {
  std::string text;  // literal text (when slot is empty)
  std::string slot;  // slot id whose surface goes here
};

struct Assignment {
  std::string value;  // enum value id, or "max" / "min"
  std::string cue;    // the words that imply it
};

struct Rendered {
  std::vector<Segment> segments;
  std::map<std::string, Assignment> assigned;  // slot -> value set by {slot=value}
  std::set<std::string> slots;                 // slots that appear (surface or assignment)
};

class Pattern {
 public:
  // Throws needle::Error (invalid_argument) naming the problem and the text.
  static Pattern Parse(std::string_view text);

  const std::string& text() const { return text_; }
  // Slots rendered whatever the random choices are.
  const std::set<std::string>& mandatory_slots() const { return mandatory_; }
  // Every slot that can appear.
  const std::set<std::string>& all_slots() const { return all_; }
  // Slots assigned by {slot=value} anywhere.
  const std::set<std::string>& assigned_slots() const { return assigned_; }
  bool is_question() const { return !text_.empty() && text_.back() == '?'; }

  // Draws one rendering, steering optional groups and alternatives towards
  // `wanted` (slots the caller wants present).
  Rendered Render(Rng& rng, const std::set<std::string>& wanted) const;

  struct Node;
  using Seq = std::vector<Node>;

 private:
  std::string text_;
  std::vector<Node> nodes_;
  std::set<std::string> mandatory_, all_, assigned_;
};

struct Pattern::Node {
  enum Kind { kText, kSlot, kAssign, kAlt, kOpt } kind = kText;
  std::string text;                 // kText
  std::string slot, value, cue;     // kSlot, kAssign
  std::vector<Seq> alts;            // kAlt: alternatives; kOpt: alts[0] is the body
  std::set<std::string> mandatory;  // filled by Parse
  std::set<std::string> all;
};

// Joins segments into text, taking surfaces from `surface` (slot -> text).
std::string JoinSegments(const std::vector<Segment>& segs, const std::map<std::string, std::string>& surface);

}  // namespace needle::data
