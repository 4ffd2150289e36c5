// Compiling declared tools: malformed schemas are a clear Error naming the
// tool and the path; unsupported keywords are warnings, never a crash.
#include "grammar/tool_grammar.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/random.h"
#include "grammar/grammar_testing.h"
#include "grammar/matcher.h"
#include "grammar/validate.h"

namespace needle::grammar {
namespace {

using testing::CallText;
using testing::OnePropTools;
using testing::ValueRejectAt;

// The Error message for `tools`, or "" when it compiles.
std::string ErrorOf(std::string_view tools, ErrorCode* code = nullptr) {
  try {
    ToolGrammar::Compile(tools);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

std::vector<std::string> WarningsOf(std::string_view tools) { return ToolGrammar::Compile(tools)->warnings(); }

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Schema, MalformedSchemasNameToolAndPath) {
  struct Case {
    const char* schema;
    const char* expect;  // part of the message after "tool 't': parameters.properties.x"
  };
  const Case cases[] = {
      {R"({"type":"integer","minimum":"5"})", "x.minimum: expected a number"},
      {R"({"type":"integer","minimum":10,"maximum":5})", "x: no integer satisfies the bounds"},
      {R"({"type":"number","exclusiveMinimum":1,"maximum":1})", "x: no number satisfies the bounds"},
      {R"({"type":"integer","minimum":1.2,"maximum":1.8})", "x: no integer satisfies"},
      {R"({"type":"integer","multipleOf":0})", "x.multipleOf: must be greater than 0"},
      {R"({"type":"integer","minimum":1,"maximum":4,"multipleOf":5})", "x: no multiple of 5"},
      {R"({"enum":[]})", "x.enum: expected a non-empty array"},
      {R"({"enum":"a"})", "x.enum: expected a non-empty array"},
      {R"({"enum":["a"],"const":"b"})", "x.const: is not one of enum"},
      {R"({"type":"string","minLength":5,"maxLength":2})", "x: minLength is greater than maxLength"},
      {R"({"type":"string","maxLength":-1})", "x.maxLength: expected a non-negative integer"},
      {R"({"type":"string","minLength":1.5})", "x.minLength: expected a non-negative integer"},
      {R"({"type":"string","pattern":5})", "x.pattern: expected a string"},
      {R"({"type":"string","pattern":"[]"})", "x.pattern: pattern \"[]\" admits no string"},
      {R"({"type":"string","pattern":"a{5}","maxLength":3})", "x: pattern/format and minLength/maxLength admit no string"},
      {R"({"type":"string","format":7})", "x.format: expected a string"},
      {R"({"type":"array","minItems":3,"maxItems":1})", "x: minItems is greater than maxItems"},
      {R"({"type":"array","items":5})", "x.items: expected a schema object"},
      {R"({"type":"array","items":{"enum":["a","b"]},"uniqueItems":true,"minItems":3})", "uniqueItems exceeds"},
      {R"({"type":"array","uniqueItems":"yes"})", "x.uniqueItems: expected a boolean"},
      {R"({"type":"object","properties":{"a":{}},"required":["b"]})", "x.required: 'b' is not a declared property"},
      {R"({"type":"object","properties":[1]})", "x.properties: expected an object of schemas"},
      {R"({"type":"object","required":"a"})", "x.required: expected an array"},
      {R"({"type":"strng"})", "x.type: unknown type 'strng'"},
      {R"({"type":[]})", "x.type: expected a type name"},
      {R"({"type":5})", "x.type: expected a type name"},
      {R"({"type":"array","items":false,"minItems":1})", "x: items: false with minItems > 0 admits no array"},
      {"5", "x: expected a schema object"},
  };
  for (const Case& c : cases) {
    ErrorCode code = ErrorCode::kInternal;
    const std::string msg = ErrorOf(OnePropTools(c.schema), &code);
    EXPECT_TRUE(Contains(msg, "tool 't': parameters.properties.")) << c.schema << " -> " << msg;
    EXPECT_TRUE(Contains(msg, c.expect)) << c.schema << " -> " << msg;
    EXPECT_EQ(code, ErrorCode::kInvalidArgument) << c.schema;
  }
}

// Declarations JSON Schema would make unsatisfiable, as real tool sets write
// them: read for what they evidently mean, with a warning, so that one such
// parameter does not reject every other tool.
TEST(Schema, AnEnumThatContradictsItsTypeIsReadAsItsValues) {
  auto warned = [](const char* schema) {
    for (const std::string& w : WarningsOf(OnePropTools(schema)))
      if (Contains(w, "parameters.properties.x")) return true;
    return false;
  };
  // Strings that spell values of the declared type are admitted in that type; the rest as written.
  const char* integer = R"({"type":"integer","enum":["1","2","dontcare"]})";
  EXPECT_TRUE(warned(integer));
  EXPECT_EQ(ValueRejectAt(integer, "2"), -1);
  EXPECT_EQ(ValueRejectAt(integer, R"("dontcare")"), -1);
  EXPECT_NE(ValueRejectAt(integer, R"("2")"), -1);
  EXPECT_NE(ValueRejectAt(integer, "3"), -1);
  const char* boolean = R"({"type":"boolean","enum":["True","False","dontcare"]})";
  EXPECT_EQ(ValueRejectAt(boolean, "true"), -1);
  EXPECT_EQ(ValueRejectAt(boolean, "false"), -1);
  EXPECT_EQ(ValueRejectAt(boolean, R"("dontcare")"), -1);
  EXPECT_NE(ValueRejectAt(boolean, R"("True")"), -1);
  const char* string = R"({"type":"string","enum":[1,2]})";
  EXPECT_EQ(ValueRejectAt(string, R"("1")"), -1);
  EXPECT_NE(ValueRejectAt(string, "1"), -1);
  // Nothing spelled: the values as written ("01" is no spelled integer).
  const char* groups = R"({"type":"integer","enum":["Group A","01"]})";
  EXPECT_EQ(ValueRejectAt(groups, R"("Group A")"), -1);
  EXPECT_EQ(ValueRejectAt(groups, R"("01")"), -1);
  EXPECT_NE(ValueRejectAt(groups, "1"), -1);
  // An array's enum of scalars lists its items' values.
  const char* array = R"({"type":"array","items":{"type":"string"},"enum":["co2","noise"]})";
  EXPECT_TRUE(warned(array));
  EXPECT_EQ(ValueRejectAt(array, R"(["noise","co2"])"), -1);
  EXPECT_NE(ValueRejectAt(array, R"(["pm10"])"), -1);
  EXPECT_NE(ValueRejectAt(array, R"("co2")"), -1);
  const char* own = R"({"type":"array","items":{"enum":["a"]},"enum":["b"]})";
  EXPECT_EQ(ValueRejectAt(own, R"(["a"])"), -1);
  EXPECT_NE(ValueRejectAt(own, R"(["b"])"), -1);
  // A satisfiable declaration keeps JSON Schema's reading: only the values of the type.
  EXPECT_FALSE(warned(R"({"type":"integer","enum":[1,"dontcare"]})"));
  EXPECT_NE(ValueRejectAt(R"({"type":"integer","enum":[1,"dontcare"]})", R"("dontcare")"), -1);
  // The validator reads the declaration the same way.
  const std::string tools = OnePropTools(boolean);
  EXPECT_FALSE(ValidateCall(CallText("t", R"({"x":true})"), tools).has_value());
  EXPECT_TRUE(ValidateCall(CallText("t", R"({"x":"yes"})"), tools).has_value());
}

TEST(Schema, MalformedDeclarations) {
  ErrorCode code{};
  EXPECT_TRUE(Contains(ErrorOf(R"({"name":"t"})"), "tools: expected a JSON array"));
  EXPECT_TRUE(Contains(ErrorOf(R"([5])"), "tools[0]: expected an object"));
  EXPECT_TRUE(Contains(ErrorOf(R"([{"parameters":{}}])"), "tools[0].name: expected a non-empty string"));
  EXPECT_TRUE(Contains(ErrorOf(R"([{"name":""}])"), "tools[0].name"));
  EXPECT_TRUE(Contains(ErrorOf(R"([{"name":"a"},{"name":"a"}])"), "tools[1]: duplicate tool name 'a'"));
  EXPECT_TRUE(Contains(ErrorOf(R"([{"name":"a","parameters":[]}])"), "tool 'a': parameters: expected a JSON Schema object"));
  EXPECT_TRUE(Contains(ErrorOf(R"([{"name":"a","parameters":{"type":"string"}}])"), "tool 'a': parameters.type: must be \"object\""));
  EXPECT_TRUE(Contains(ErrorOf("[{", &code), "tools: not valid JSON"));
  EXPECT_EQ(code, ErrorCode::kInvalidJson);
}

TEST(Schema, LimitsAreUnsupportedErrors) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 20; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  ErrorCode code{};
  EXPECT_TRUE(Contains(ErrorOf(OnePropTools(deep), &code), "nested deeper than 16 levels"));
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  std::string many = R"({"type":"object","properties":{)";
  for (int i = 0; i < 65; ++i) many += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":{}";
  many += "}}";
  EXPECT_TRUE(Contains(ErrorOf(OnePropTools(many), &code), "more than 64 properties"));
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  // Every admitted value must be writable in 64 KiB, optional or not: a capped generation can always finish.
  EXPECT_TRUE(Contains(ErrorOf(OnePropTools(R"({"type":"string","minLength":1e300})", true), &code),
                       "parameters.properties.x: the shortest valid value takes 4294967297 bytes"));
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  const char* nested = R"({"type":"array","minItems":300,"items":{"type":"array","minItems":300,"items":{"type":"integer"}}})";
  EXPECT_TRUE(Contains(ErrorOf(OnePropTools(nested, true), &code), "x: the shortest valid value takes 180601 bytes"));
  EXPECT_EQ(ErrorOf(OnePropTools(R"({"type":"array","minItems":300,"items":{"type":"array","minItems":30}})")), "");
}

TEST(Schema, UnsupportedKeywordsAreWarningsNotErrors) {
  const char* tools = R"([{"name":"t","strict":true,"parameters":{"type":"object","$defs":{},"properties":{
      "a":{"$ref":"#/$defs/x"},
      "b":{"type":"string","oneOf":[{"maxLength":1}],"anyOf":[],"allOf":[],"not":{}},
      "c":{"type":"object","patternProperties":{"^x":{}},"additionalProperties":true,"minProperties":1},
      "d":{"type":"string","format":"hostname"},
      "e":{"type":"string","pattern":"(?=a)b"},
      "f":{"type":"string","pattern":"(a)\\1"},
      "g":{"type":"array","items":[{"type":"string"}]},
      "h":{"type":"string","description":"ok","title":"ok","default":"x","examples":["y"],"x-slot":"room"}}}}])";
  const std::vector<std::string> w = WarningsOf(tools);
  auto has = [&](const std::string& a, const std::string& b) {
    for (const std::string& s : w)
      if (Contains(s, a) && Contains(s, b)) return true;
    return false;
  };
  EXPECT_TRUE(has("tool 't'", "field 'strict'"));
  // ($defs, $ref, allOf and typed anyOf/oneOf branches are rewritten first: schema_compose_test.)
  EXPECT_FALSE(has("tool 't': parameters", "keyword '$defs'"));
  EXPECT_TRUE(has("parameters.properties.a", "reference '#/$defs/x' does not resolve"));
  EXPECT_TRUE(has("parameters.properties.b", "keyword 'oneOf'"));
  EXPECT_TRUE(has("parameters.properties.b", "keyword 'anyOf'"));
  EXPECT_FALSE(has("parameters.properties.b", "keyword 'allOf'"));  // allOf of nothing: no constraint
  EXPECT_TRUE(has("parameters.properties.b", "keyword 'not'"));
  EXPECT_TRUE(has("parameters.properties.c", "keyword 'patternProperties'"));
  EXPECT_TRUE(has("parameters.properties.c", "additionalProperties other than false"));
  EXPECT_TRUE(has("parameters.properties.c", "keyword 'minProperties'"));
  EXPECT_TRUE(has("parameters.properties.d.format", "format 'hostname' is not supported"));
  EXPECT_TRUE(has("parameters.properties.e.pattern", "lookaround"));
  EXPECT_TRUE(has("parameters.properties.f.pattern", "backreferences"));
  EXPECT_TRUE(has("parameters.properties.g.items", "tuples"));
  for (const std::string& s : w) EXPECT_FALSE(Contains(s, "properties.h")) << s;  // annotations are silent
  EXPECT_EQ(w.size(), 12u);
  // What was ignored no longer constrains: $ref is any value, the bad pattern is a plain string.
  auto g = ToolGrammar::Compile(std::string_view(tools));
  EXPECT_EQ(testing::RejectAt(*g, testing::CallText("t", R"({"a":[1,{"z":null}],"e":"zz","f":"q"})")), -1);
}

TEST(Schema, AdditionalPropertiesFalseIsImpliedAndSilent) {
  const char* s = R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false})";
  EXPECT_TRUE(WarningsOf(OnePropTools(s)).empty());
  EXPECT_EQ(ValueRejectAt(s, R"({"a":1})"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"({"b":1})"), 2);
}

TEST(Schema, TypeInferredFromKeywords) {
  EXPECT_EQ(ValueRejectAt(R"({"maxLength":2})", R"("ab")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"maxLength":2})", "1"), 0);
  EXPECT_EQ(ValueRejectAt(R"({"minimum":3})", "2"), 1);
  EXPECT_EQ(ValueRejectAt(R"({"properties":{"k":{"type":"boolean"}},"required":["k"]})", R"({"k":true})"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"items":{"type":"null"}})", "[null,null]"), -1);
}

TEST(Schema, BooleanPropertySchemas) {
  const char* s = R"({"type":"object","properties":{"yes":true,"no":false}})";
  EXPECT_EQ(ValueRejectAt(s, R"({"yes":[1]})"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"({"no":1})"), 2);
  EXPECT_TRUE(Contains(ErrorOf(OnePropTools(R"({"type":"object","properties":{"no":false},"required":["no"]})")),
                       "'no' is not a declared property"));
}

TEST(Schema, ToolsAndNames) {
  auto g = ToolGrammar::Compile(std::string_view(R"([{"name":"b"},{"name":"a\"q"},{"name":"é"}])"));
  ASSERT_EQ(g->tools().size(), 3u);
  EXPECT_EQ(g->FindTool("a\"q"), 1);
  EXPECT_EQ(g->FindTool("zz"), -1);
  // Names are written as JSON strings: the quote is escaped.
  EXPECT_EQ(testing::RejectAt(*g, R"([{"name":"a\"q","arguments":{}}])"), -1);
  EXPECT_EQ(testing::RejectAt(*g, R"([{"name":"é","arguments":{}}])"), -1);
}

// Random schemas built from the keywords with values of random types: the
// compiler answers with a grammar or a needle::Error, never a crash; and from
// every state a random byte walk reaches, the grammar can still finish, with
// a result that validates (except what is post-checked by design).
nlohmann::json RandomValue(SplitMix64& rng, int depth);

nlohmann::json RandomSchema(SplitMix64& rng, int depth) {
  static const char* keys[] = {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                               "multipleOf", "minLength", "maxLength", "pattern", "format", "items", "minItems",
                               "maxItems", "uniqueItems", "properties", "required", "additionalProperties", "anyOf"};
  static const char* types[] = {"string", "integer", "number", "boolean", "array", "object", "null"};
  static const char* patterns[] = {"[a-c]{1,3}", "x|yz*", "\\d+", "(a", "[]", ".{2}", "(?=a)"};
  static const char* formats[] = {"date", "time", "email", "uri", "date-time", "ipv4"};
  nlohmann::json s = nlohmann::json::object();
  const int n = int(rng.Next() % 4);
  for (int i = 0; i < n; ++i) {
    const std::string k = keys[rng.Next() % std::size(keys)];
    const uint64_t r = rng.Next() % 10;
    if (r < 6) {  // a plausible value for the keyword
      if (k == "type") s[k] = rng.Next() % 4 ? nlohmann::json(types[rng.Next() % 7]) : nlohmann::json({types[rng.Next() % 7], "null"});
      else if (k == "pattern") s[k] = patterns[rng.Next() % std::size(patterns)];
      else if (k == "format") s[k] = formats[rng.Next() % std::size(formats)];
      else if (k == "items" && depth < 4) s[k] = RandomSchema(rng, depth + 1);
      else if (k == "properties" && depth < 4) s[k] = {{"a", RandomSchema(rng, depth + 1)}, {"b", RandomSchema(rng, depth + 1)}};
      else if (k == "required") s[k] = rng.Next() % 2 ? nlohmann::json({"a"}) : nlohmann::json({"b", "c"});
      else if (k == "enum") s[k] = {RandomValue(rng, 2), RandomValue(rng, 2)};
      else if (k == "uniqueItems" || k == "additionalProperties") s[k] = bool(rng.Next() % 2);
      else s[k] = int(rng.Next() % 12) - 2 + (rng.Next() % 3 == 0 ? 0.5 : 0.0);
    } else {
      s[k] = RandomValue(rng, 2);  // anything at all
    }
  }
  return s;
}

nlohmann::json RandomValue(SplitMix64& rng, int depth) {
  switch (rng.Next() % (depth > 0 ? 8 : 6)) {
    case 0: return nullptr;
    case 1: return bool(rng.Next() % 2);
    case 2: return int64_t(rng.Next() % 2000) - 1000;
    case 3: return double(int64_t(rng.Next() % 2000) - 1000) / 8.0;
    case 4: return std::string("on") + std::string(rng.Next() % 3, 'e');
    case 5: return rng.Next() % 2 ? 1e300 : -0.0;
    case 6: return nlohmann::json::array({RandomValue(rng, depth - 1), RandomValue(rng, depth - 1)});
    default: return nlohmann::json{{"k", RandomValue(rng, depth - 1)}};
  }
}

TEST(Schema, HostileSchemasNeverCrashOrDeadEnd) {
  SplitMix64 rng(31337);
  int compiled = 0, errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    nlohmann::json tools = nlohmann::json::array();
    tools.push_back({{"name", "t"}, {"parameters", {{"type", "object"}, {"properties", {{"x", RandomSchema(rng, 0)}, {"y", RandomSchema(rng, 0)}}}}}});
    if (rng.Next() % 2) tools[0]["parameters"]["required"] = {"x"};
    std::shared_ptr<const ToolGrammar> g;
    try {
      g = ToolGrammar::Compile(tools);
    } catch (const Error& e) {
      ++errors;
      EXPECT_TRUE(Contains(e.what(), "tool 't'") || Contains(e.what(), "tools")) << e.what();
      continue;
    }
    ++compiled;
    GrammarMatcher m(g);
    ASSERT_TRUE(m.AcceptBytes(R"([{"name":"t","arguments":)"));
    std::string text = R"([{"name":"t","arguments":)";
    for (int step = 0; step < 60 && !m.IsComplete(); ++step) {
      // A random admitted byte, preferring printable ones.
      std::vector<uint8_t> ok;
      for (int b = 0; b < 256; ++b)
        if (m.CanAccept(std::string(1, char(b)))) ok.push_back(uint8_t(b));
      ASSERT_FALSE(ok.empty()) << "dead end: " << tools.dump() << " after " << text;
      const uint8_t b = ok[rng.Next() % ok.size()];
      ASSERT_TRUE(m.AcceptByte(b));
      text.push_back(char(b));
    }
    std::string tail;
    ASSERT_TRUE(m.CompletionBytes(&tail)) << tools.dump() << " after " << text;
    ASSERT_TRUE(m.AcceptBytes(tail));
    ASSERT_TRUE(m.IsComplete());
    text += tail;
    const auto v = ValidateCall(text, *g);
    if (v) {
      EXPECT_TRUE(v->kind == ViolationKind::kUnique || v->kind == ViolationKind::kFormat)
          << tools.dump() << "\n" << text << "\n" << v->message;
    }
  }
  EXPECT_GT(compiled, 300);
  EXPECT_GT(errors, 100);
}

}  // namespace
}  // namespace needle::grammar
