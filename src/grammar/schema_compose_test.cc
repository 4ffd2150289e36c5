// Schema composition as code writes it (Pydantic, the OpenAI SDK, OpenAPI):
// rewritten into plain schemas the grammar enforces byte by byte.
#include "grammar/schema_compose.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "grammar/grammar_testing.h"
#include "grammar/tool_grammar.h"

namespace needle::grammar {
namespace {

using nlohmann::ordered_json;
using testing::CallText;
using testing::RejectAt;

std::string OneTool(const std::string& parameters) {
  return R"([{"name":"t","parameters":)" + parameters + "}]";
}

bool Admits(const std::string& tools, const std::string& args) { return RejectAt(tools, CallText("t", args)) == -1; }

bool Warned(const std::string& tools, const std::string& part) {
  const auto grammar = ToolGrammar::Compile(std::string_view(tools));
  for (const std::string& w : grammar->warnings())
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// What Pydantic v2 writes for a nested model and an optional field.
const char* kPydantic = R"({
  "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"},
                        "zip": {"anyOf": [{"type": "string", "pattern": "^[0-9]{5}$"}, {"type": "null"}], "default": null}},
                        "required": ["city"], "title": "Address"}},
  "type": "object",
  "properties": {"home": {"$ref": "#/$defs/Address", "description": "where they live"},
                 "age": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": null},
                 "unit": {"anyOf": [{"type": "string", "enum": ["C", "F"]}, {"type": "null"}]}},
  "required": ["home"]})";

TEST(SchemaCompose, ReferencesAndOptionalFieldsAreEnforced) {
  const std::string tools = OneTool(kPydantic);
  EXPECT_TRUE(ToolGrammar::Compile(std::string_view(tools))->warnings().empty());
  EXPECT_TRUE(Admits(tools, R"({"home":{"city":"Porto"}})"));
  EXPECT_TRUE(Admits(tools, R"({"home":{"city":"Porto","zip":"40100"},"age":31,"unit":"C"})"));
  EXPECT_TRUE(Admits(tools, R"({"home":{"city":"Porto","zip":null},"age":null,"unit":null})"));
  EXPECT_FALSE(Admits(tools, R"({"home":{"town":"Porto"}})"));        // the referenced object's keys
  EXPECT_FALSE(Admits(tools, R"({"home":{"city":"Porto","zip":"4010"}})"));  // the branch's pattern
  EXPECT_FALSE(Admits(tools, R"({"home":{"city":"Porto"},"age":-1})"));      // the branch's minimum
  EXPECT_FALSE(Admits(tools, R"({"home":{"city":"Porto"},"age":"31"})"));
  EXPECT_FALSE(Admits(tools, R"({"home":{"city":"Porto"},"unit":"K"})"));    // the enum, null added
  // The rewritten schema: no references left, the reference's description kept.
  std::vector<std::string> warnings;
  const ordered_json composed = ComposeToolSchemas(ordered_json::parse(tools), &warnings);
  const ordered_json& home = composed[0]["parameters"]["properties"]["home"];
  EXPECT_EQ(home["description"], "where they live");
  EXPECT_EQ(home["properties"]["city"]["type"], "string");
  EXPECT_FALSE(composed[0]["parameters"].contains("$defs"));
  EXPECT_EQ(composed[0]["parameters"]["properties"]["age"]["type"], ordered_json::array({"integer", "null"}));
  // Composing again changes nothing.
  EXPECT_EQ(ComposeToolSchemas(composed, &warnings), composed);
  EXPECT_TRUE(warnings.empty());
}

TEST(SchemaCompose, AllOfNullableAndDefinitions) {
  const std::string tools = OneTool(R"({"type":"object","definitions":{"Id":{"type":"integer","minimum":1}},
      "properties":{"id":{"allOf":[{"$ref":"#/definitions/Id"}],"description":"the record"},
                    "note":{"type":"string","nullable":true},
                    "both":{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                     {"properties":{"b":{"type":"string"}},"required":["b"]}]}}})");
  EXPECT_TRUE(Admits(tools, R"({"id":3,"note":null,"both":{"a":1,"b":"x"}})"));
  EXPECT_FALSE(Admits(tools, R"({"id":0})"));
  EXPECT_FALSE(Admits(tools, R"({"both":{"a":1}})"));  // both parts' required keys
  EXPECT_FALSE(Warned(tools, "not supported"));
}

TEST(SchemaCompose, WhatCannotBeRewrittenAdmitsAnyValueWithAWarning) {
  // A recursive model: any value below the second visit.
  const std::string tree = OneTool(R"({"type":"object","$defs":{"Node":{"type":"object",
      "properties":{"value":{"type":"integer"},"child":{"$ref":"#/$defs/Node"}}}},
      "properties":{"root":{"$ref":"#/$defs/Node"}}})");
  EXPECT_TRUE(Warned(tree, "reference '#/$defs/Node' recurses"));
  EXPECT_TRUE(Admits(tree, R"({"root":{"value":1,"child":{"value":2,"child":{"anything":true}}}})"));
  EXPECT_FALSE(Admits(tree, R"({"root":{"value":"one"}})"));
  // Outside the document, or nowhere.
  EXPECT_TRUE(Warned(OneTool(R"({"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}})"),
                     "points outside the tool's parameters"));
  EXPECT_TRUE(Warned(OneTool(R"({"type":"object","properties":{"x":{"$ref":"#/$defs/Missing"}}})"), "does not resolve"));
  // Branches of one type stay as they were: the grammar ignores anyOf, with its warning.
  const std::string same = OneTool(R"({"type":"object","properties":{"x":{"anyOf":[{"type":"string","format":"date"},{"type":"string","maxLength":3}]}}})");
  EXPECT_TRUE(Warned(same, "keyword 'anyOf' is not supported"));
  EXPECT_TRUE(Warned(OneTool(R"({"type":"object","properties":{"x":{"anyOf":[{"type":"integer"},{"type":"number"}]}}})"),
                     "keyword 'anyOf' is not supported"));
}

TEST(SchemaCompose, ReferencesUsedEverywhereAreBounded) {
  // Each level refers to the next twice: 2^30 schemas once inlined.
  std::string defs;
  for (int i = 0; i < 30; ++i)
    defs += (i ? "," : "") + std::string("\"L") + std::to_string(i) + R"(":{"type":"object","properties":{"a":{"$ref":"#/$defs/L)" +
            std::to_string(i + 1) + R"("},"b":{"$ref":"#/$defs/L)" + std::to_string(i + 1) + "\"}}}";
  defs += R"(,"L30":{"type":"integer"})";
  const std::string tools = OneTool(R"({"type":"object","$defs":{)" + defs + R"(},"properties":{"x":{"$ref":"#/$defs/L0"}}})");
  try {
    ToolGrammar::Compile(std::string_view(tools));
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("once its references are inlined"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace needle::grammar
