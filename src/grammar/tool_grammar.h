// Declared tools (SPEC §8: a JSON array of {"name", "description"?,
// "parameters": JSON Schema object}) compiled into the byte-level grammar of
// the text between <tool_call> and </tool_call> (SPEC §9):
//
//   calls     := "[]" | "[" call ("," call)* "]"          compact, no whitespace
//   call      := "{\"name\":" NAME ",\"arguments\":" ARGS "}"
//
// Key order is fixed: "name" then "arguments" (as in the training data).
// NAME is one of the declared names (a matcher may restrict it to a subset,
// e.g. the tools retrieval picked); ARGS is that tool's `parameters` object:
// only declared keys (additionalProperties: false is implied), each at most
// once, in any order, every `required` key before the closing brace, each
// value matching its schema. Everything is compact JSON as nlohmann/json and
// Python's json.dumps(separators=(",", ":"), ensure_ascii=False) write it.
//
// The supported keywords, the regex subset, the formats and what is checked
// only after generation are listed in docs/grammar.md. Unsupported keywords
// are ignored with a warning (warnings()); a malformed schema (a keyword of
// the wrong type, minimum > maximum, an empty enum, a required key that is
// not declared, ...) is an Error naming the tool and the path.
//
// A ToolGrammar is immutable after Compile and may be shared between
// threads and matchers (grammar/matcher.h walks it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/regex.h"  // ByteDfa

namespace needle::grammar {

struct GrammarOptions {
  // Calls per array (the closing ']' is forced after this many); 0 = no limit.
  uint32_t max_calls = 16;
};

enum class NodeKind : uint8_t {
  kCalls,      // the root array of calls
  kCall,       // one {"name":..,"arguments":..}
  kObject,     // declared properties
  kArray,      // items, minItems, maxItems
  kString,     // DFA over decoded bytes + code point counts
  kNumber,     // integer or number, exact scaled-integer bounds
  kLiteral,    // enum / const / boolean / null: a trie of serialized values
  kUnion,      // a type array, or any JSON value: the first byte picks the alternative
  kAnyArray,   // array of any values
  kAnyObject,  // object with any keys and values
};

// A byte trie (enum values, property keys, tool names), in ToolGrammar::tries.
struct TrieNode {
  int32_t value = -1;       // index of the string ending here, or -1
  uint32_t edge_begin = 0;  // into ToolGrammar::trie_edges, sorted by byte
  uint32_t edge_count = 0;
  uint32_t rank_lo = 0, rank_hi = 0;  // strings below this node: [rank_lo, rank_hi) in sorted order
  uint64_t mask = 0;                  // key tries: bit i = property i is below this node
};
struct TrieEdge {
  uint8_t byte;
  uint32_t child;
};

// Scaled-integer numbers: a value x is the integer X = x * 10^scale_digits
// (scale 0 for integers, 15 for numbers), so bounds and multipleOf are exact.
using Int128 = __int128;

struct Node {
  NodeKind kind = NodeKind::kUnion;
  std::string path;              // "tool 'x': parameters.properties.y" (messages)
  uint64_t first_bytes[4] = {};  // bytes that may start a value of this node

  // kObject: properties sorted by their serialized key bytes.
  std::vector<std::string> prop_names;
  std::vector<uint32_t> prop_nodes;
  uint32_t key_trie = 0;  // root in tries; serialized keys with quotes: "\"room\""
  uint64_t required = 0, all_props = 0;

  // kArray
  uint32_t items = 0;
  uint32_t min_items = 0, max_items = UINT32_MAX;
  bool unique_items = false;

  // kString: bytes of the decoded content run through `dfa`; min_len/max_len
  // count code points. `alive` (when not empty) is the exact table
  // [state * (len_cap + 1) + min(count, len_cap)] of "some accepted
  // string can still be reached with its length in range"; otherwise the
  // rule is count + dfa.dist_to_accept[state] <= max_len.
  const ByteDfa* dfa = nullptr;
  bool generic_string = true;  // no pattern/format: any UTF-8, \uXXXX escapes admitted
  uint32_t min_len = 0, max_len = UINT32_MAX;
  bool min_len_exact = true;  // false: minLength is checked after generation only
  uint32_t len_cap = 0;
  std::vector<uint64_t> alive;
  std::string pattern, format;  // as declared (post-check and messages)

  // kNumber
  bool integer = false;
  bool bounded = false;         // any of lo/hi/mult differ from the defaults
  bool allow_exponent = false;  // only for unbounded numbers
  uint8_t scale_digits = 0;     // 0 or 15
  uint8_t max_int_digits = 18;  // 18 for integers, 15 for numbers
  uint8_t max_frac_digits = 0;  // 15 for numbers
  Int128 lo = 0, hi = 0;        // inclusive, in scaled units
  Int128 mult = 0;              // 0: no byte-level multipleOf
  // As declared, for the post-check (exact double comparisons).
  bool has_min = false, has_max = false, has_xmin = false, has_xmax = false, has_multiple = false;
  double minimum = 0, maximum = 0, xminimum = 0, xmaximum = 0, multiple_of = 0;

  // kLiteral
  uint32_t literal_trie = 0;
  std::vector<nlohmann::json> values;
  std::vector<uint32_t> value_of_rank;  // literal_trie rank (sorted serialized bytes) -> index into values

  // kUnion: alternatives with disjoint first bytes.
  std::vector<uint32_t> alts;

  bool StartsWith(uint8_t b) const { return (first_bytes[b >> 6] >> (b & 63)) & 1; }
};

struct Tool {
  std::string name;
  uint32_t args = 0;  // kObject node of its parameters
};

class ToolGrammar {
 public:
  // `tools`: the declared array (or a JSON text of it). Throws
  // Error(kInvalidArgument) for a malformed declaration or schema, naming the
  // tool and path; Error(kUnsupported) for a schema nested too deeply (more
  // than kMaxSchemaDepth levels) or an object with more than 64 properties;
  // Error(kInvalidJson) for text that does not parse.
  static std::shared_ptr<const ToolGrammar> Compile(const nlohmann::json& tools, const GrammarOptions& options = {});
  static std::shared_ptr<const ToolGrammar> Compile(std::string_view tools_json, const GrammarOptions& options = {});

  static constexpr uint32_t kMaxSchemaDepth = 16;

  // One line per ignored keyword or pattern, e.g.
  // "tool 'x': parameters.properties.y: keyword 'anyOf' is not supported; ignored".
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::vector<Tool>& tools() const { return tools_; }
  // Index into tools() or -1.
  int FindTool(std::string_view name) const;
  const GrammarOptions& options() const { return options_; }

  // ---- the compiled graph (read by the matcher and the validator) ----
  std::vector<Node> nodes;
  std::vector<TrieNode> tries;
  std::vector<TrieEdge> trie_edges;
  uint32_t root = 0;          // kCalls
  uint32_t call = 0;          // kCall
  uint32_t name_trie = 0;     // serialized names with quotes; value = tool index
  std::vector<uint32_t> tool_of_rank;  // name trie rank -> tool index
  uint32_t any_key_string = 0;  // generic string node used for kAnyObject keys
  uint32_t any_value = 0;       // any JSON value: a kUnion of string, number, literal, array, object
  uint32_t max_frame_depth = 0;  // deepest frame stack the declared schemas need

  // The child of trie node `t` on byte `b`, or -1.
  int32_t TrieChild(uint32_t t, uint8_t b) const {
    const TrieNode& n = tries[t];
    for (uint32_t i = n.edge_begin, e = n.edge_begin + n.edge_count; i < e; ++i) {
      if (trie_edges[i].byte == b) return int32_t(trie_edges[i].child);
      if (trie_edges[i].byte > b) break;
    }
    return -1;
  }

 private:
  friend class SchemaCompiler;
  std::vector<std::string> warnings_;
  std::vector<Tool> tools_;
  GrammarOptions options_;
  std::vector<std::unique_ptr<ByteDfa>> dfas_;  // owned automata (nodes point into them)
};

}  // namespace needle::grammar
