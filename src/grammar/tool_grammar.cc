#include "grammar/tool_grammar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"      // Error
#include "grammar/number.h"  // number prefix viability
#include "grammar/schema_compose.h"

namespace needle::grammar {

using json = nlohmann::json;

namespace {

constexpr uint32_t kMaxProperties = 64;
constexpr size_t kMaxAliveBits = size_t(1) << 22;  // exact pattern x length tables up to 512 KiB
constexpr uint64_t kMaxShortestValue = 65536;  // a schema whose shortest value is longer is refused

const std::set<std::string>& SupportedKeywords() {
  static const std::set<std::string> k = {
      "type",      "enum",      "const",   "minimum", "maximum",  "exclusiveMinimum", "exclusiveMaximum",
      "multipleOf", "minLength", "maxLength", "pattern", "format",  "items",            "minItems",
      "maxItems",  "uniqueItems", "properties", "required", "additionalProperties"};
  return k;
}

// Annotations: no effect on validity, ignored silently.
bool IsAnnotation(const std::string& k) {
  static const std::set<std::string> a = {"title",    "description", "default",  "examples",  "example", "$schema",
                                          "$id",      "$comment",    "deprecated", "readOnly", "writeOnly"};
  return a.count(k) || k.rfind("x-", 0) == 0;
}

std::string Quote(const std::string& s) { return json(s).dump(); }

void SetBit(uint64_t* bits, uint8_t b) { bits[b >> 6] |= uint64_t(1) << (b & 63); }

// A JSON number as an exact decimal: value = (neg ? -1 : 1) * digits * 10^exp10,
// digits without leading or trailing zeros ("" is zero).
struct Decimal {
  bool neg = false;
  std::string digits;
  int exp10 = 0;
};

Decimal ToDecimal(const json& v) {
  std::string text;
  if (v.is_number_unsigned() || v.is_number_integer()) {
    text = v.dump();
  } else {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v.get<double>());  // shortest round-trip form
    text.assign(buf, r.ptr);
  }
  Decimal d;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') d.neg = true, ++i;
  int frac_digits = 0;
  bool in_frac = false;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      in_frac = true;
      continue;
    }
    d.digits.push_back(text[i]);
    if (in_frac) ++frac_digits;
  }
  int exp = 0;
  if (i < text.size()) exp = std::atoi(text.c_str() + i + 1);
  d.exp10 = exp - frac_digits;
  const size_t nz = d.digits.find_first_not_of('0');
  d.digits = nz == std::string::npos ? "" : d.digits.substr(nz);
  while (!d.digits.empty() && d.digits.back() == '0') d.digits.pop_back(), ++d.exp10;
  if (d.digits.empty()) d.neg = false;
  return d;
}

constexpr int kBigDigits = 37;  // |values| beyond 10^37 saturate (every bound is clamped far below)

Int128 ParseDigits(std::string_view s) {
  Int128 x = 0;
  for (char c : s) x = x * 10 + (c - '0');
  return x;
}

// floor (up = false) or ceil (up = true) of d * 10^scale, saturated at +-10^37.
Int128 Scaled(const Decimal& d, int scale, bool up) {
  if (d.digits.empty()) return 0;
  const int e = d.exp10 + scale;
  const Int128 big = Pow10(kBigDigits);
  Int128 ipart = 0;
  bool rem = false;
  if (e >= 0) {
    if (int(d.digits.size()) + e > kBigDigits) return d.neg ? -big : big;
    ipart = ParseDigits(d.digits) * Pow10(e);
  } else {
    const int cut = int(d.digits.size()) + e;
    if (cut > kBigDigits) return d.neg ? -big : big;
    ipart = cut > 0 ? ParseDigits(std::string_view(d.digits).substr(0, size_t(cut))) : 0;
    rem = true;  // digits has no trailing zeros, so the cut-off part is non-zero
  }
  if (!d.neg) return ipart + ((up && rem) ? 1 : 0);
  return -(ipart + ((!up && rem) ? 1 : 0));
}

std::string Int128ToString(Int128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  std::string s;
  while (v != 0) {
    int digit = int(v % 10);
    s.push_back(char('0' + (digit < 0 ? -digit : digit)));
    v /= 10;
  }
  if (neg) s.push_back('-');
  std::reverse(s.begin(), s.end());
  return s;
}

}  // namespace

class SchemaCompiler {
 public:
  explicit SchemaCompiler(ToolGrammar& g) : g_(g) {}

  void Run(const json& tools) {
    BuildShared();
    if (!tools.is_array())
      throw Error(ErrorCode::kInvalidArgument, "tools: expected a JSON array of {\"name\", \"parameters\"} objects");
    std::set<std::string> names;
    for (size_t i = 0; i < tools.size(); ++i) {
      const json& t = tools[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) throw Error(ErrorCode::kInvalidArgument, where + ": expected an object {\"name\", \"parameters\"}");
      if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty())
        throw Error(ErrorCode::kInvalidArgument, where + ".name: expected a non-empty string");
      const std::string name = t["name"].get<std::string>();
      const std::string tool = "tool '" + name + "'";
      if (!names.insert(name).second) throw Error(ErrorCode::kInvalidArgument, where + ": duplicate tool name '" + name + "'");
      for (const auto& [k, v] : t.items())
        if (k != "name" && k != "description" && k != "parameters" && !IsAnnotation(k))
          Warn(tool, "field '" + k + "' is not part of a tool declaration; ignored");
      const std::string path = tool + ": parameters";
      const uint32_t first_node = uint32_t(g_.nodes.size());
      uint32_t args;
      if (!t.contains("parameters") || t["parameters"].is_null()) {
        args = ObjectNode(json::object(), path, 1);
      } else {
        const json& p = t["parameters"];
        if (!p.is_object()) throw Error(ErrorCode::kInvalidArgument, path + ": expected a JSON Schema object");
        if (p.contains("type") && p["type"] != "object")
          throw Error(ErrorCode::kInvalidArgument, path + ".type: must be \"object\"");
        WarnUnsupported(p, path);
        args = ObjectNode(p, path, 1);
      }
      // Every value the schema admits must be writable: a capped generation can always finish.
      for (uint32_t id = first_node; id < g_.nodes.size(); ++id) {
        const uint64_t shortest = MinBytes(id);
        if (shortest > kMaxShortestValue)
          throw Error(ErrorCode::kUnsupported,
                      g_.nodes[id].path + ": the shortest valid value takes " +
                          (shortest >= kSaturated ? std::string("billions of") : std::to_string(shortest)) +
                          " bytes (minLength/minItems too large; limit " + std::to_string(kMaxShortestValue) + ")");
      }
      g_.tools_.push_back({name, args});
    }
    BuildCalls();
    uint32_t deepest = 0;
    for (const Tool& t : g_.tools_) deepest = std::max(deepest, FrameDepth(t.args));
    g_.max_frame_depth = 2 + deepest;
  }

 private:
  [[noreturn]] void Fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument, path + ": " + what);
  }
  void Warn(const std::string& path, const std::string& what) { g_.warnings_.push_back(path + ": " + what); }

  uint32_t AddNode(Node n) {
    g_.nodes.push_back(std::move(n));
    return uint32_t(g_.nodes.size() - 1);
  }

  // ---- tries ----------------------------------------------------------------
  struct Entry {
    std::string bytes;
    int32_t value;
  };
  // `entries` sorted by bytes, unique. Returns the root.
  uint32_t BuildTrie(const std::vector<Entry>& entries) { return BuildTrieRange(entries, 0, entries.size(), 0); }
  uint32_t BuildTrieRange(const std::vector<Entry>& e, size_t lo, size_t hi, size_t depth) {
    const uint32_t id = uint32_t(g_.tries.size());
    g_.tries.emplace_back();
    TrieNode node;
    node.rank_lo = uint32_t(lo);
    node.rank_hi = uint32_t(hi);
    for (size_t i = lo; i < hi; ++i)
      if (e[i].value >= 0 && e[i].value < 64) node.mask |= uint64_t(1) << e[i].value;
    size_t i = lo;
    if (i < hi && e[i].bytes.size() == depth) node.value = e[i].value, ++i;
    std::vector<TrieEdge> edges;
    while (i < hi) {
      const uint8_t b = uint8_t(e[i].bytes[depth]);
      size_t j = i;
      while (j < hi && uint8_t(e[j].bytes[depth]) == b) ++j;
      edges.push_back({b, BuildTrieRange(e, i, j, depth + 1)});
      i = j;
    }
    node.edge_begin = uint32_t(g_.trie_edges.size());
    node.edge_count = uint32_t(edges.size());
    g_.trie_edges.insert(g_.trie_edges.end(), edges.begin(), edges.end());
    g_.tries[id] = node;
    return id;
  }

  // ---- shared nodes: any value, the calls array --------------------------------
  void BuildShared() {
    Node str;
    str.kind = NodeKind::kString;
    str.path = "any string";
    str.dfa = &AnyStringDfa();
    SetBit(str.first_bytes, '"');
    g_.any_key_string = AddNode(str);
    const uint32_t any_string = AddNode(str);

    Node num;
    num.kind = NodeKind::kNumber;
    num.path = "any number";
    ConfigureNumber(num, false);
    FinishNumber(num);
    const uint32_t any_number = AddNode(num);

    const uint32_t any_literal = LiteralNode({json(true), json(false), json(nullptr)}, "any literal");

    Node any;
    any.kind = NodeKind::kUnion;
    any.path = "any value";
    g_.any_value = AddNode(any);

    Node arr;
    arr.kind = NodeKind::kAnyArray;
    arr.path = "any array";
    arr.items = g_.any_value;
    SetBit(arr.first_bytes, '[');
    const uint32_t any_array = AddNode(arr);

    Node obj;
    obj.kind = NodeKind::kAnyObject;
    obj.path = "any object";
    SetBit(obj.first_bytes, '{');
    const uint32_t any_object = AddNode(obj);

    Node& u = g_.nodes[g_.any_value];
    u.alts = {any_string, any_number, any_literal, any_array, any_object};
    for (uint32_t a : u.alts)
      for (int w = 0; w < 4; ++w) u.first_bytes[w] |= g_.nodes[a].first_bytes[w];
  }

  void BuildCalls() {
    Node root;
    root.kind = NodeKind::kCalls;
    root.path = "calls";
    SetBit(root.first_bytes, '[');
    g_.root = AddNode(root);
    Node call;
    call.kind = NodeKind::kCall;
    call.path = "call";
    SetBit(call.first_bytes, '{');
    g_.call = AddNode(call);
    std::vector<Entry> entries;
    for (size_t i = 0; i < g_.tools_.size(); ++i) entries.push_back({Quote(g_.tools_[i].name), int32_t(i)});
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.bytes < b.bytes; });
    g_.tool_of_rank.clear();
    for (const Entry& e : entries) g_.tool_of_rank.push_back(uint32_t(e.value));
    g_.name_trie = BuildTrie(entries);
  }

  // Bytes of the shortest value a node admits (a lower bound for patterns), saturated.
  static constexpr uint64_t kSaturated = uint64_t(1) << 40;
  static uint64_t Add(uint64_t a, uint64_t b) { return std::min(kSaturated, a + b); }
  static uint64_t Mul(uint64_t a, uint64_t b) { return (a && b > kSaturated / a) ? kSaturated : std::min(kSaturated, a * b); }
  uint64_t MinBytes(uint32_t id) {
    const Node& n = g_.nodes[id];
    switch (n.kind) {
      case NodeKind::kString:
        return Add(2, std::max<uint64_t>(n.min_len, n.dfa->dist_to_accept[0]));
      case NodeKind::kNumber:
        return 1;
      case NodeKind::kLiteral: {
        uint64_t best = kSaturated;
        for (const json& v : n.values) best = std::min<uint64_t>(best, v.dump().size());
        return best;
      }
      case NodeKind::kArray: {
        if (n.min_items == 0) return 2;
        return Add(2, Add(Mul(n.min_items, MinBytes(n.items)), n.min_items - 1));
      }
      case NodeKind::kObject: {
        uint64_t total = 2;
        for (size_t i = 0; i < n.prop_nodes.size(); ++i)
          if ((n.required >> i) & 1) total = Add(total, Add(Quote(n.prop_names[i]).size() + 2, MinBytes(n.prop_nodes[i])));
        return total;
      }
      case NodeKind::kUnion: {
        if (id == g_.any_value) return 1;
        uint64_t best = kSaturated;
        for (uint32_t a : n.alts) best = std::min(best, MinBytes(a));
        return best;
      }
      default:
        return 2;
    }
  }

  uint32_t FrameDepth(uint32_t id) {
    const Node& n = g_.nodes[id];
    uint32_t child = 0;
    switch (n.kind) {
      case NodeKind::kObject:
        for (uint32_t p : n.prop_nodes) child = std::max(child, FrameDepth(p));
        return 1 + child;
      case NodeKind::kArray:
        return 1 + FrameDepth(n.items);
      case NodeKind::kUnion:
        if (id == g_.any_value) return 1;  // dynamic: bounded by the frame stack
        for (uint32_t a : n.alts) child = std::max(child, FrameDepth(a));
        return child;
      default:
        return 1;
    }
  }

  // ---- schemas ---------------------------------------------------------------
  void WarnUnsupported(const json& schema, const std::string& path) {
    for (const auto& [k, v] : schema.items()) {
      if (SupportedKeywords().count(k) || IsAnnotation(k)) continue;
      Warn(path, "keyword '" + k + "' is not supported; ignored");
    }
    if (schema.contains("additionalProperties") && schema["additionalProperties"] != false)
      Warn(path, "additionalProperties other than false is not supported; only declared properties are admitted");
  }

  std::optional<uint32_t> NonNegInt(const json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return std::nullopt;
    const json& v = s[key];
    if (!v.is_number()) Fail(path + "." + key, "expected a non-negative integer");
    const double d = v.get<double>();
    if (!(d >= 0) || std::floor(d) != d) Fail(path + "." + key, "expected a non-negative integer, got " + v.dump());
    return uint32_t(std::min(d, 4294967295.0));
  }

  uint32_t CompileSchema(const json& schema, const std::string& path, uint32_t depth) {
    if (depth > ToolGrammar::kMaxSchemaDepth)
      throw Error(ErrorCode::kUnsupported,
                  path + ": schema nested deeper than " + std::to_string(ToolGrammar::kMaxSchemaDepth) + " levels");
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return g_.any_value;
      Fail(path, "schema false admits no value");
    }
    if (!schema.is_object()) Fail(path, "expected a schema object");
    WarnUnsupported(schema, path);

    std::vector<std::string> types;
    if (schema.contains("type")) {
      const json& t = schema["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const json& x : t) {
          if (!x.is_string()) Fail(path + ".type", "expected a type name or an array of type names");
          types.push_back(x.get<std::string>());
        }
      } else {
        Fail(path + ".type", "expected a type name or a non-empty array of type names");
      }
      static const std::set<std::string> known = {"string", "integer", "number", "boolean", "array", "object", "null"};
      for (const std::string& x : types)
        if (!known.count(x)) Fail(path + ".type", "unknown type '" + x + "'");
      std::sort(types.begin(), types.end());
      types.erase(std::unique(types.begin(), types.end()), types.end());
      if (std::count(types.begin(), types.end(), "number") && std::count(types.begin(), types.end(), "integer"))
        types.erase(std::find(types.begin(), types.end(), "integer"));
    }

    // enum / const: the admitted values, serialized.
    if (schema.contains("enum") || schema.contains("const")) {
      std::vector<json> values;
      if (schema.contains("enum")) {
        const json& e = schema["enum"];
        if (!e.is_array() || e.empty()) Fail(path + ".enum", "expected a non-empty array");
        for (const json& v : e) values.push_back(v);
      }
      if (schema.contains("const")) {
        const json& c = schema["const"];
        if (schema.contains("enum")) {
          if (std::find(values.begin(), values.end(), c) == values.end()) Fail(path + ".const", "is not one of enum");
        }
        values = {c};
      }
      if (!types.empty()) {
        std::vector<json> kept;
        for (const json& v : values)
          for (const std::string& t : types)
            if (HasSchemaType(v, t)) {
              kept.push_back(v);
              break;
            }
        if (kept.empty()) Fail(path, "no enum/const value has the declared type");  // (schema_compose reads real tool sets' contradictions first)
        values = std::move(kept);
      }
      return LiteralNode(values, path);
    }

    if (types.empty()) {
      // No type: infer it from the keywords when they belong to exactly one type.
      static const std::vector<std::pair<std::string, std::vector<const char*>>> groups = {
          {"string", {"minLength", "maxLength", "pattern", "format"}},
          {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
          {"array", {"items", "minItems", "maxItems", "uniqueItems"}},
          {"object", {"properties", "required"}}};
      for (const auto& [t, keys] : groups)
        for (const char* k : keys)
          if (schema.contains(k)) {
            types.push_back(t);
            break;
          }
      if (types.size() > 1) {
        Warn(path, "keywords of several types without 'type'; any value is admitted");
        return g_.any_value;
      }
      if (types.empty()) return g_.any_value;
    }

    if (types.size() == 1) return TypedNode(types[0], schema, path, depth);
    Node u;
    u.kind = NodeKind::kUnion;
    u.path = path;
    for (const std::string& t : types) {
      const uint32_t a = TypedNode(t, schema, path, depth);
      const Node& an = g_.nodes[a];
      for (int w = 0; w < 4; ++w) {
        if (u.first_bytes[w] & an.first_bytes[w]) Fail(path + ".type", "overlapping types");  // cannot happen
        u.first_bytes[w] |= an.first_bytes[w];
      }
      u.alts.push_back(a);
    }
    return AddNode(std::move(u));
  }

  uint32_t LiteralNode(const std::vector<json>& values, const std::string& path) {
    Node n;
    n.kind = NodeKind::kLiteral;
    n.path = path;
    std::vector<Entry> entries;
    for (const json& v : values) {
      if (std::find(n.values.begin(), n.values.end(), v) != n.values.end()) continue;
      n.values.push_back(v);
      entries.push_back({v.dump(), int32_t(n.values.size() - 1)});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.bytes < b.bytes; });
    entries.erase(std::unique(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.bytes == b.bytes; }),
                  entries.end());
    for (const Entry& e : entries) {
      SetBit(n.first_bytes, uint8_t(e.bytes[0]));
      n.value_of_rank.push_back(uint32_t(e.value));
    }
    n.literal_trie = BuildTrie(entries);
    return AddNode(std::move(n));
  }

  uint32_t TypedNode(const std::string& type, const json& s, const std::string& path, uint32_t depth) {
    if (type == "string") return StringNode(s, path);
    if (type == "integer" || type == "number") return NumberNode(s, path, type == "integer");
    if (type == "boolean") return LiteralNode({json(true), json(false)}, path);
    if (type == "null") return LiteralNode({json(nullptr)}, path);
    if (type == "array") return ArrayNode(s, path, depth);
    return ObjectNode(s, path, depth);
  }

  uint32_t StringNode(const json& s, const std::string& path) {
    Node n;
    n.kind = NodeKind::kString;
    n.path = path;
    SetBit(n.first_bytes, '"');
    n.min_len = NonNegInt(s, "minLength", path).value_or(0);
    n.max_len = NonNegInt(s, "maxLength", path).value_or(UINT32_MAX);
    if (n.min_len > n.max_len) Fail(path, "minLength is greater than maxLength");
    // Bytes the decoded content can hold: raw (>= 0x20) or the short escapes.
    uint64_t producible[4] = {};
    for (int b = 0x20; b < 256; ++b) SetBit(producible, uint8_t(b));
    for (uint8_t b : {'\b', '\f', '\n', '\r', '\t'}) SetBit(producible, b);
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) Fail(path + ".pattern", "expected a string");
      n.pattern = s["pattern"].get<std::string>();
      try {
        g_.dfas_.push_back(std::make_unique<ByteDfa>(CompileRegex(n.pattern, 2048, producible)));
        n.dfa = g_.dfas_.back().get();
        n.generic_string = false;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported) Fail(path + ".pattern", e.what());
        Warn(path + ".pattern", std::string(e.what()) + "; pattern ignored");
        n.pattern.clear();
      }
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) Fail(path + ".format", "expected a string");
      n.format = s["format"].get<std::string>();
      const std::string_view fp = FormatPattern(n.format);
      if (fp.empty()) {
        Warn(path + ".format", "format '" + n.format + "' is not supported; ignored");
        n.format.clear();
      } else if (n.generic_string) {
        auto it = format_dfas_.find(n.format);
        if (it == format_dfas_.end()) {
          g_.dfas_.push_back(std::make_unique<ByteDfa>(CompileRegex(fp, 2048, producible)));
          it = format_dfas_.emplace(n.format, g_.dfas_.back().get()).first;
        }
        n.dfa = it->second;
        n.generic_string = false;
      }
      // With both pattern and format, the grammar follows the pattern; the format is checked after generation.
    }
    if (n.generic_string) {
      n.dfa = &AnyStringDfa();
      return AddNode(std::move(n));
    }
    const ByteDfa& d = *n.dfa;
    if (n.min_len > 0 || n.max_len != UINT32_MAX) {
      n.len_cap = n.max_len != UINT32_MAX ? n.max_len : n.min_len;
      const size_t bits = size_t(d.num_states) * (size_t(n.len_cap) + 1);
      if (bits <= kMaxAliveBits) {
        BuildAliveTable(n, producible);
        if (!((n.alive[0] >> 0) & 1)) Fail(path, "pattern/format and minLength/maxLength admit no string");
      } else {
        if (uint64_t(d.dist_to_accept[0]) > n.max_len) Fail(path, "pattern/format and maxLength admit no string");
        if (n.min_len > 0) {
          n.min_len_exact = false;
          Warn(path, "minLength with this pattern is checked after generation only (automaton too large)");
        }
      }
    }
    return AddNode(std::move(n));
  }

  // alive[s][c]: from DFA state s with c code points so far, an accepted string
  // with min_len <= length <= max_len can still be reached.
  void BuildAliveTable(Node& n, const uint64_t* producible) {
    const ByteDfa& d = *n.dfa;
    const uint32_t cap = n.len_cap;
    const bool unbounded = n.max_len == UINT32_MAX;
    const size_t width = size_t(cap) + 1;
    n.alive.assign((size_t(d.num_states) * width + 63) / 64, 0);
    auto get = [&](uint32_t s, uint32_t c) {
      const size_t i = size_t(s) * width + c;
      return (n.alive[i >> 6] >> (i & 63)) & 1;
    };
    auto set = [&](uint32_t s, uint32_t c) {
      const size_t i = size_t(s) * width + c;
      n.alive[i >> 6] |= uint64_t(1) << (i & 63);
    };
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> succ(d.num_states);
    for (uint32_t s = 0; s < d.num_states; ++s) {
      std::set<std::pair<uint32_t, uint32_t>> uniq;
      for (int b = 0; b < 256; ++b) {
        if (!((producible[b >> 6] >> (b & 63)) & 1)) continue;
        const uint16_t t = d.Step(s, uint8_t(b));
        if (t != kDfaDead) uniq.insert({t, IsUtf8Lead(uint8_t(b)) ? 1u : 0u});
      }
      succ[s].assign(uniq.begin(), uniq.end());
    }
    for (int64_t c = cap; c >= 0; --c) {
      for (uint32_t s = 0; s < d.num_states; ++s)
        if (d.Accepting(s) && uint32_t(c) >= n.min_len) set(s, uint32_t(c));
      for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t s = 0; s < d.num_states; ++s) {
          if (get(s, uint32_t(c))) continue;
          for (auto [t, cost] : succ[s]) {
            uint64_t c2 = uint64_t(c) + cost;
            if (c2 > cap) {
              if (!unbounded) continue;
              c2 = cap;
            }
            if (get(t, uint32_t(c2))) {
              set(s, uint32_t(c));
              changed = true;
              break;
            }
          }
        }
      }
    }
  }

  void ConfigureNumber(Node& n, bool integer) {
    n.integer = integer;
    n.scale_digits = integer ? 0 : 15;
    n.max_int_digits = integer ? 18 : 15;
    n.max_frac_digits = integer ? 0 : 15;
    const Int128 max_x = Pow10(n.max_int_digits + n.scale_digits) - 1;
    n.lo = -max_x;
    n.hi = max_x;
  }

  void FinishNumber(Node& n) {
    const Int128 max_x = Pow10(n.max_int_digits + n.scale_digits) - 1;
    n.bounded = n.lo != -max_x || n.hi != max_x || n.mult != 0;
    n.allow_exponent = !n.integer && !n.bounded;
    for (uint64_t d = 0; d <= 9; ++d) {
      if (NumberIntPrefixViable(n, false, d, 1)) SetBit(n.first_bytes, uint8_t('0' + d));
      if ((d > 0 || !n.integer) && NumberIntPrefixViable(n, true, d, 1)) SetBit(n.first_bytes, '-');
    }
  }

  uint32_t NumberNode(const json& s, const std::string& path, bool integer) {
    Node n;
    n.kind = NodeKind::kNumber;
    n.path = path;
    ConfigureNumber(n, integer);
    const int scale = n.scale_digits;
    auto number = [&](const char* key) -> const json& {
      const json& v = s[key];
      if (!v.is_number()) Fail(path + "." + key, "expected a number");
      return v;
    };
    // Draft-4 boolean exclusiveMinimum/exclusiveMaximum modify minimum/maximum.
    bool xmin_flag = false, xmax_flag = false;
    if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean()) xmin_flag = s["exclusiveMinimum"].get<bool>();
    if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean()) xmax_flag = s["exclusiveMaximum"].get<bool>();
    if (s.contains("minimum")) {
      const json& v = number("minimum");
      const Decimal d = ToDecimal(v);
      if (xmin_flag) {
        n.has_xmin = true, n.xminimum = v.get<double>();
        n.lo = std::max(n.lo, Scaled(d, scale, false) + 1);
      } else {
        n.has_min = true, n.minimum = v.get<double>();
        n.lo = std::max(n.lo, Scaled(d, scale, true));
      }
    }
    if (s.contains("maximum")) {
      const json& v = number("maximum");
      const Decimal d = ToDecimal(v);
      if (xmax_flag) {
        n.has_xmax = true, n.xmaximum = v.get<double>();
        n.hi = std::min(n.hi, Scaled(d, scale, true) - 1);
      } else {
        n.has_max = true, n.maximum = v.get<double>();
        n.hi = std::min(n.hi, Scaled(d, scale, false));
      }
    }
    if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean()) {
      const json& v = number("exclusiveMinimum");
      n.has_xmin = true, n.xminimum = v.get<double>();
      n.lo = std::max(n.lo, Scaled(ToDecimal(v), scale, false) + 1);
    }
    if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean()) {
      const json& v = number("exclusiveMaximum");
      n.has_xmax = true, n.xmaximum = v.get<double>();
      n.hi = std::min(n.hi, Scaled(ToDecimal(v), scale, true) - 1);
    }
    if (n.lo > n.hi) Fail(path, "no " + std::string(integer ? "integer" : "number") + " satisfies the bounds (minimum/maximum)");
    if (s.contains("multipleOf")) {
      const json& v = number("multipleOf");
      if (!(v.get<double>() > 0)) Fail(path + ".multipleOf", "must be greater than 0");
      n.has_multiple = true;
      n.multiple_of = v.get<double>();
      const Decimal d = ToDecimal(v);
      if (d.exp10 + scale >= 0 && int(d.digits.size()) + d.exp10 + scale <= 30) {
        n.mult = Scaled(d, scale, false);  // exact: an integer number of units
      } else if (integer && d.exp10 < 0 && -d.exp10 <= 30 && d.digits.size() <= 30) {
        // m = p / 10^q: an integer x is a multiple of m iff x is a multiple of p / gcd(p, 10^q).
        const Int128 p = ParseDigits(d.digits);
        Int128 a = p, b = Pow10(-d.exp10);
        while (b != 0) {
          const Int128 t = a % b;
          a = b;
          b = t;
        }
        n.mult = p / a;
      }
      if (n.mult != 0 && FloorDiv(n.hi, n.mult) * n.mult < n.lo)
        Fail(path, "no multiple of " + v.dump() + " lies within the bounds");
    }
    FinishNumber(n);
    if (n.first_bytes[0] == 0 && n.first_bytes[1] == 0)  // cannot happen after the checks above
      Fail(path, "no number can be written within the bounds (" + Int128ToString(n.lo) + ".." + Int128ToString(n.hi) + ")");
    return AddNode(std::move(n));
  }

  uint32_t ArrayNode(const json& s, const std::string& path, uint32_t depth) {
    Node n;
    n.kind = NodeKind::kArray;
    n.path = path;
    SetBit(n.first_bytes, '[');
    n.min_items = NonNegInt(s, "minItems", path).value_or(0);
    n.max_items = NonNegInt(s, "maxItems", path).value_or(UINT32_MAX);
    if (n.min_items > n.max_items) Fail(path, "minItems is greater than maxItems");
    if (s.contains("uniqueItems")) {
      if (!s["uniqueItems"].is_boolean()) Fail(path + ".uniqueItems", "expected a boolean");
      n.unique_items = s["uniqueItems"].get<bool>();
    }
    n.items = g_.any_value;
    if (s.contains("items")) {
      const json& it = s["items"];
      if (it.is_array()) {
        Warn(path + ".items", "array-form items (tuples) are not supported; items may be any value");
      } else if (it.is_boolean() && !it.get<bool>()) {
        n.max_items = 0;
        if (n.min_items > 0) Fail(path, "items: false with minItems > 0 admits no array");
      } else if (it.is_object() || it.is_boolean()) {
        n.items = CompileSchema(it, path + ".items", depth + 1);
      } else {
        Fail(path + ".items", "expected a schema object");
      }
    }
    const Node& items = g_.nodes[n.items];
    if (n.unique_items && items.kind == NodeKind::kLiteral && n.min_items > items.values.size())
      Fail(path, "minItems " + std::to_string(n.min_items) + " with uniqueItems exceeds the " +
                     std::to_string(items.values.size()) + " admitted item values");
    return AddNode(std::move(n));
  }

  uint32_t ObjectNode(const json& s, const std::string& path, uint32_t depth) {
    Node n;
    n.kind = NodeKind::kObject;
    n.path = path;
    SetBit(n.first_bytes, '{');
    struct Prop {
      std::string quoted, name;
      const json* schema;
    };
    std::vector<Prop> props;
    std::set<std::string> excluded;
    if (s.contains("properties")) {
      const json& p = s["properties"];
      if (!p.is_object()) Fail(path + ".properties", "expected an object of schemas");
      for (const auto& [k, v] : p.items()) {
        if (v.is_boolean() && !v.get<bool>()) {
          excluded.insert(k);
          continue;
        }
        props.push_back({Quote(k), k, &v});
      }
    }
    if (props.size() > kMaxProperties)
      throw Error(ErrorCode::kUnsupported, path + ": more than " + std::to_string(kMaxProperties) + " properties in one object");
    std::sort(props.begin(), props.end(), [](const Prop& a, const Prop& b) { return a.quoted < b.quoted; });
    std::vector<Entry> entries;
    for (size_t i = 0; i < props.size(); ++i) {
      n.prop_names.push_back(props[i].name);
      entries.push_back({props[i].quoted, int32_t(i)});
      n.all_props |= uint64_t(1) << i;
    }
    if (s.contains("required")) {
      const json& r = s["required"];
      if (!r.is_array()) Fail(path + ".required", "expected an array of property names");
      for (const json& k : r) {
        if (!k.is_string()) Fail(path + ".required", "expected an array of property names");
        const std::string key = k.get<std::string>();
        const auto it = std::find(n.prop_names.begin(), n.prop_names.end(), key);
        if (it == n.prop_names.end())
          Fail(path + ".required", "'" + key + "' is not a declared property (only declared properties are admitted)");
        n.required |= uint64_t(1) << (it - n.prop_names.begin());
      }
    }
    n.key_trie = BuildTrie(entries);
    for (size_t i = 0; i < props.size(); ++i)
      n.prop_nodes.push_back(CompileSchema(*props[i].schema, path + ".properties." + n.prop_names[i], depth + 1));
    return AddNode(std::move(n));
  }

  ToolGrammar& g_;
  std::map<std::string, const ByteDfa*> format_dfas_;
};

std::shared_ptr<const ToolGrammar> ToolGrammar::Compile(const json& tools, const GrammarOptions& options) {
  auto g = std::make_shared<ToolGrammar>();
  g->options_ = options;
  // Composition ($ref, allOf, anyOf, nullable) first; already composed tools pass unchanged.
  const nlohmann::ordered_json composed = ComposeToolSchemas(nlohmann::ordered_json(tools), &g->warnings_);
  SchemaCompiler(*g).Run(json(composed));
  return g;
}

std::shared_ptr<const ToolGrammar> ToolGrammar::Compile(std::string_view tools_json, const GrammarOptions& options) {
  json tools;
  try {
    tools = json::parse(tools_json);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kInvalidJson, std::string("tools: not valid JSON: ") + e.what());
  }
  return Compile(tools, options);
}

int ToolGrammar::FindTool(std::string_view name) const {
  for (size_t i = 0; i < tools_.size(); ++i)
    if (tools_[i].name == name) return int(i);
  return -1;
}

}  // namespace needle::grammar
