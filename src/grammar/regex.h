// The regex subset of JSON Schema `pattern` (docs/grammar.md), compiled to a
// deterministic automaton over the UTF-8 bytes of the decoded string.
//
// Supported: literals (any UTF-8 character), escapes \. \\ \/ \- and every
// other escaped ASCII punctuation, \n \r \t \f \v \0 \xHH \uHHHH (surrogate
// pairs combine), `.` (any character but \n \r U+2028 U+2029), classes
// [a-z0-9_] and negated [^...] (with \d \w \s \D \W \S inside), \d \w \s and
// their negations (ASCII: \d = [0-9], \w = [A-Za-z0-9_], \s = [ \t\n\r\f\v]),
// groups ( ) (?: ) (?<name> ), alternation |, quantifiers ? * + {m} {m,}
// {m,n} (lazy forms `*?` admit the same strings and are accepted), and the
// anchors ^ at the start and $ at the end of a top-level alternative.
//
// The whole string must match: anchors are implied ("abc" admits exactly
// "abc"; write ".*abc.*" to search). This is stricter than JSON Schema's
// search semantics, so every string the grammar admits also satisfies the
// pattern as a validator reads it.
//
// Not supported (CompileRegex throws Error(kUnsupported) naming the construct,
// and the schema compiler turns that into a warning and ignores the pattern):
// backreferences, lookaround, \b \B, \p{..}, flags, anchors elsewhere, counts
// above 1000, automata above the state limit, malformed syntax.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace needle::grammar {

inline constexpr uint16_t kDfaDead = 0xFFFF;

// A deterministic automaton over bytes. State 0 is the start. Dead states are
// removed: from every state some accepting state can be reached, so a walk
// that never steps to kDfaDead can always finish.
struct ByteDfa {
  uint32_t num_states = 0;
  std::vector<uint16_t> next;      // [num_states * 256]: next state, or kDfaDead
  std::vector<uint8_t> accepting;  // [num_states]
  // Per state: the fewest code points (UTF-8 lead bytes) that reach an accepting state.
  std::vector<uint32_t> dist_to_accept;  // [num_states]

  uint16_t Step(uint32_t s, uint8_t b) const { return next[size_t(s) * 256 + b]; }
  bool Accepting(uint32_t s) const { return accepting[s] != 0; }
  // True when the whole of `s` is in the language.
  bool Matches(std::string_view s) const;
};

// A UTF-8 lead byte (counts as one code point); continuation bytes are 10xxxxxx.
inline bool IsUtf8Lead(uint8_t b) { return (b & 0xC0) != 0x80; }

// Throws Error(kUnsupported) for a construct outside the subset (or invalid
// syntax), Error(kInvalidArgument) when the pattern admits no string at all.
// `producible` (optional, 256 bits): bytes the content can contain at all;
// transitions on other bytes are dropped before dead states are removed.
ByteDfa CompileRegex(std::string_view pattern, uint32_t max_states = 2048, const uint64_t* producible = nullptr);

// Any sequence of well-formed UTF-8 characters (the automaton of a plain
// JSON string's decoded content). Its start state 0 is the only state
// between characters.
const ByteDfa& AnyStringDfa();

// The built-in pattern for a supported `format` (date, time, date-time,
// email, uri), or an empty view.
std::string_view FormatPattern(std::string_view format);

// Checks a format beyond its pattern: a real calendar date (leap years) for
// date and date-time. True for other formats.
bool FormatSemanticsOk(std::string_view format, std::string_view value);

}  // namespace needle::grammar
