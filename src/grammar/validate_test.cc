// ValidateCall: the first violation, with its kind and path.
#include "grammar/validate.h"

#include <gtest/gtest.h>

#include "grammar/grammar_testing.h"

namespace needle::grammar {
namespace {

using testing::CallText;

const char* kTools = R"([{"name":"lights","parameters":{"type":"object","properties":{
    "room":{"type":"string","maxLength":10},
    "level":{"type":"integer","minimum":0,"maximum":100,"multipleOf":10},
    "ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
    "mode":{"enum":["on","off"]},
    "when":{"type":"string","format":"date"},
    "code":{"type":"string","pattern":"[A-Z]{2}\\d"},
    "tags":{"type":"array","items":{"type":"string"},"maxItems":2,"uniqueItems":true},
    "opt":{"type":["integer","null"]}},
    "required":["mode"]}},
  {"name":"noop"}])";

std::optional<CallViolation> V(std::string_view args, std::string_view name = "lights") {
  return ValidateCall(CallText(name, args), kTools);
}

TEST(Validate, ValidCalls) {
  EXPECT_FALSE(V(R"({"mode":"on"})"));
  EXPECT_FALSE(V(R"({"mode":"off","room":"kitchen","level":30,"ratio":0.5,"when":"2024-02-29","code":"AB1","tags":["a","b"],"opt":null})"));
  EXPECT_FALSE(V(R"({"mode":"on","level":30.0})"));  // an integral float is an integer
  EXPECT_FALSE(V(R"({"mode":"on","opt":3})"));
  EXPECT_FALSE(ValidateCall("[]", kTools));
  EXPECT_FALSE(ValidateCall(R"([ {"name": "noop", "arguments": {}} ])", kTools));  // whitespace is fine here
}

struct Bad {
  const char* args;
  ViolationKind kind;
  const char* path;
};

TEST(Validate, EachViolationKind) {
  const Bad cases[] = {
      {R"({})", ViolationKind::kRequired, "[0].arguments"},
      {R"({"mode":"dim"})", ViolationKind::kEnum, "[0].arguments.mode"},
      {R"({"mode":1})", ViolationKind::kType, "[0].arguments.mode"},
      {R"({"mode":"on","x":1})", ViolationKind::kKey, "[0].arguments.x"},
      {R"({"mode":"on","room":"a very long room"})", ViolationKind::kLength, "[0].arguments.room"},
      {R"({"mode":"on","room":5})", ViolationKind::kType, "[0].arguments.room"},
      {R"({"mode":"on","level":110})", ViolationKind::kBound, "[0].arguments.level"},
      {R"({"mode":"on","level":-10})", ViolationKind::kBound, "[0].arguments.level"},
      {R"({"mode":"on","level":35})", ViolationKind::kMultipleOf, "[0].arguments.level"},
      {R"({"mode":"on","level":3.5})", ViolationKind::kType, "[0].arguments.level"},
      {R"({"mode":"on","ratio":1})", ViolationKind::kBound, "[0].arguments.ratio"},
      {R"({"mode":"on","ratio":0})", ViolationKind::kBound, "[0].arguments.ratio"},
      {R"({"mode":"on","when":"2023-02-29"})", ViolationKind::kFormat, "[0].arguments.when"},
      {R"({"mode":"on","when":"tomorrow"})", ViolationKind::kFormat, "[0].arguments.when"},
      {R"({"mode":"on","code":"AB12"})", ViolationKind::kPattern, "[0].arguments.code"},
      {R"({"mode":"on","tags":["a","a"]})", ViolationKind::kUnique, "[0].arguments.tags"},
      {R"({"mode":"on","tags":["a","b","c"]})", ViolationKind::kItems, "[0].arguments.tags"},
      {R"({"mode":"on","tags":["a",1]})", ViolationKind::kType, "[0].arguments.tags[1]"},
      {R"({"mode":"on","opt":"x"})", ViolationKind::kType, "[0].arguments.opt"},
  };
  for (const Bad& c : cases) {
    const auto v = V(c.args);
    ASSERT_TRUE(v.has_value()) << c.args;
    EXPECT_EQ(v->kind, c.kind) << c.args << " -> " << v->message;
    EXPECT_EQ(v->path, c.path) << c.args << " -> " << v->message;
    EXPECT_EQ(v->message.rfind(c.path, 0), 0u) << v->message;
  }
}

TEST(Validate, ShapeNameAndJson) {
  auto kind = [](std::string_view calls) { return ValidateCall(calls, kTools)->kind; };
  EXPECT_EQ(kind("[{"), ViolationKind::kJson);
  EXPECT_EQ(kind("[] x"), ViolationKind::kJson);
  EXPECT_EQ(kind(R"([{"name":"noop","name":"noop","arguments":{}}])"), ViolationKind::kJson);  // duplicate key
  EXPECT_EQ(kind(R"([{"name":"lights","arguments":{"mode":"on","mode":"off"}}])"), ViolationKind::kJson);
  EXPECT_EQ(kind(R"({"name":"noop","arguments":{}})"), ViolationKind::kShape);
  EXPECT_EQ(kind(R"([{"name":"noop"}])"), ViolationKind::kShape);
  EXPECT_EQ(kind(R"([{"name":"noop","arguments":{},"x":1}])"), ViolationKind::kShape);
  EXPECT_EQ(kind(R"([{"name":"noop","arguments":[]}])"), ViolationKind::kShape);
  EXPECT_EQ(kind(R"([{"name":5,"arguments":{}}])"), ViolationKind::kShape);
  EXPECT_EQ(kind(R"([{"name":"nope","arguments":{}}])"), ViolationKind::kName);
  const auto v = ValidateCall(R"([{"name":"noop","arguments":{}},{"name":"lights","arguments":{}}])", kTools);
  EXPECT_EQ(v->path, "[1].arguments");  // the first violation, in document order
  EXPECT_STREQ(ViolationKindName(ViolationKind::kBound), "bound");
}

}  // namespace
}  // namespace needle::grammar
