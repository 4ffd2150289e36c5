#include "data/schema_check.h"

#include <gtest/gtest.h>

namespace needle::data {
namespace {

const ojson kTools = ojson::parse(R"([
  {"name": "set_alarm", "parameters": {"type": "object", "properties": {
     "time": {"type": "string", "format": "time"},
     "label": {"type": "string", "maxLength": 10},
     "repeat": {"type": "string", "enum": ["once", "daily"]},
     "volume": {"type": "integer", "minimum": 0, "maximum": 100},
     "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": true},
     "when": {"type": "string", "format": "date-time"},
     "items": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"}}, "required": ["qty"]}}},
   "required": ["time"]}},
  {"name": "noop", "parameters": {"type": "object", "properties": {}}}
])");

std::vector<std::string> Check(const std::string& calls) { return ValidateCalls(ojson::parse(calls), kTools); }

TEST(SchemaCheck, AcceptsValidCalls) {
  EXPECT_TRUE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30"}}])").empty());
  EXPECT_TRUE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "repeat": "daily", "volume": 100,
      "tags": ["a", "b"], "when": "2025-03-14T07:30:00", "items": [{"qty": 2}]}}, {"name": "noop", "arguments": {}}])").empty());
  EXPECT_TRUE(Check("[]").empty());
  EXPECT_TRUE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "volume": 5.0}}])").empty());
}

TEST(SchemaCheck, RejectsEachViolation) {
  EXPECT_FALSE(Check(R"([{"name": "set_timer", "arguments": {}}])").empty());                          // undeclared tool
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {}}])").empty());                           // required missing
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "x": 1}}])").empty());    // undeclared key
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "7:30pm"}}])").empty());           // format
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "repeat": "Daily"}}])").empty());  // enum
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "volume": 101}}])").empty());      // range
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "volume": "5"}}])").empty());      // type
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "volume": 5.5}}])").empty());      // integer
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "label": "much too long"}}])").empty());
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "tags": ["a", "a"]}}])").empty());
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "tags": ["a", "b", "c"]}}])").empty());
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "items": [{}]}}])").empty());
  EXPECT_FALSE(Check(R"([{"name": "set_alarm", "arguments": {"time": "07:30", "when": "2025-03-14"}}])").empty());
  EXPECT_FALSE(Check(R"([{"name": "noop"}])").empty());                                                  // shape
}

TEST(SchemaCheck, Formats) {
  EXPECT_TRUE(IsFormat("date", "2024-02-29"));
  EXPECT_FALSE(IsFormat("date", "2025-02-29"));
  EXPECT_TRUE(IsFormat("time", "23:59"));
  EXPECT_TRUE(IsFormat("time", "23:59:10"));
  EXPECT_FALSE(IsFormat("time", "24:00"));
  EXPECT_TRUE(IsFormat("date-time", "2025-03-14T07:30:00Z"));
  EXPECT_TRUE(IsFormat("date-time", "2025-03-14T07:30:00+01:00"));
  EXPECT_TRUE(IsFormat("email", "a.b@c.io"));
  EXPECT_FALSE(IsFormat("email", "a b@c.io"));
  EXPECT_TRUE(IsFormat("uri", "https://x.io/a"));
  EXPECT_FALSE(IsFormat("uri", "not a uri"));
}

}  // namespace
}  // namespace needle::data
