// The vendored API schemas (data/schemas, issue J item 1a): the extract loads
// and is valid, the loader names the file, tool and field of a mistake, and
// the generator draws its share of examples from them with valid calls.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/testing/temp_dir.h"
#include "data/catalogue.h"
#include "data/evidence.h"
#include "data/generator.h"
#include "data/schema_check.h"
#include "data/testing/catalogue_fixture.h"

namespace needle::data {
namespace {

namespace fs = std::filesystem;

const Catalogue& Cat() { return testing::SourceCatalogue(); }

bool IsApi(const Example& e) { return e.meta.kind == "api" || e.meta.kind == "refuse_api"; }

TEST(ApiSchemas, VendoredExtractLoadsAndEverySchemaIsValid) {
  const auto& tools = Cat().api_tools;
  EXPECT_GE(tools.size(), 100u);
  EXPECT_LE(tools.size(), 400u);  // a curated extract, not a dump
  std::map<std::string, size_t> per_source;
  std::map<Split, size_t> per_split;
  for (const ApiTool& t : tools) {
    EXPECT_NO_THROW(CheckApiTool(t.schema, t.source));
    per_source[t.source]++;
    per_split[t.split]++;
    EXPECT_EQ(t.split, BucketOf(t.schema["name"].get<std::string>(), "api"));
  }
  EXPECT_GE(per_source["home_assistant"], 40u);
  EXPECT_GE(per_source["schema_org"], 40u);
  EXPECT_GE(per_source["openapi"], 1u);
  // Some tools are held out whole for test (and val), as test-only capabilities are.
  EXPECT_GE(per_split[Split::kTest], 10u);
  EXPECT_GE(per_split[Split::kVal], 5u);
  for (const auto& e : fs::directory_iterator(std::string(NEEDLE_SOURCE_DIR) + "/data/schemas"))
    EXPECT_LE(fs::file_size(e.path()), 300u * 1024) << e.path();
}

// Writes `text` as schemas/bad.json in a fresh directory and returns the loader's error.
std::string LoadError(const std::string& text, const std::set<std::string>& taken = {}) {
  const fs::path dir = fs::path(needle::testing::ProcessTempDir("api-schemas")) / "schemas";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "bad.json") << text;
  try {
    LoadApiSchemas(dir.string(), taken);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ApiSchemas, LoaderNamesTheFileToolAndFieldOfAMistake) {
  const std::string good = R"({"name": "fine", "description": "Turn a fan on.", "parameters": {"type": "object",
      "properties": {"speed": {"type": "integer", "description": "Speed.", "minimum": 1, "maximum": 3}}}})";
  auto file = [&](const std::string& second) {
    return R"({"source": "test", "license": "CC0", "tools": [)" + good + "," + second + "]}";
  };
  EXPECT_EQ(LoadError(file(R"({"name": "other", "description": "Fine too.", "parameters": {"type": "object",
      "properties": {"on": {"type": "boolean", "description": "On."}}}})")), "");
  std::string e = LoadError(file(R"({"name": "nested", "description": "Has an object.", "parameters": {"type": "object",
      "properties": {"where": {"type": "object", "description": "Nested."}}}})"));
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("tools[1] 'nested'"), std::string::npos) << e;
  EXPECT_NE(e.find("parameters.properties.where.type"), std::string::npos) << e;
  e = LoadError(file(R"({"name": "fine", "description": "Twice.", "parameters": {"type": "object",
      "properties": {"on": {"type": "boolean", "description": "On."}}}})"));
  EXPECT_NE(e.find("used by two API tools"), std::string::npos) << e;
  e = LoadError(file(R"({"name": "enum", "description": "Bad enum.", "parameters": {"type": "object",
      "properties": {"mode": {"type": "string", "enum": [], "description": "Mode."}}, "required": ["mode"]}})"));
  EXPECT_NE(e.find("properties.mode.enum"), std::string::npos) << e;
  e = LoadError(file(R"({"name": "req", "description": "Bad required.", "parameters": {"type": "object",
      "properties": {"a": {"type": "string", "description": "A."}}, "required": ["b"]}})"));
  EXPECT_NE(e.find("parameters.required"), std::string::npos) << e;
  e = LoadError(R"({"license": "CC0", "tools": []})");
  EXPECT_NE(e.find("source"), std::string::npos) << e;
  e = LoadError(file(R"({"name": "taken", "description": "Clashes.", "parameters": {"type": "object",
      "properties": {"a": {"type": "string", "description": "A."}}}})"), {"taken"});
  EXPECT_NE(e.find("catalogue spelling"), std::string::npos) << e;
}

TEST(ApiSchemas, ExamplesAtTheirShareWithValidCallsFromTheirSplit) {
  std::map<std::string, Split> split_of;
  for (const ApiTool& t : Cat().api_tools) split_of[t.schema["name"].get<std::string>()] = t.split;
  for (const Split split : {Split::kTrain, Split::kTest}) {
    const std::vector<Example> set = testing::GenerateExamples(split, 3000, 11);
    size_t api = 0, refusals = 0, calls = 0;
    std::set<std::string> sources;
    for (const Example& e : set) {
      if (!IsApi(e)) continue;
      ++api;
      refusals += e.json["answers"].empty();
      for (const std::string& o : e.meta.origins) EXPECT_EQ(o, "api");
      const auto problems = ValidateCalls(e.json["answers"], e.json["tools"]);
      EXPECT_TRUE(problems.empty()) << problems[0] << "\n" << e.json.dump();
      const auto evidence = CheckEvidence(e.json);
      EXPECT_TRUE(evidence.empty()) << evidence[0] << "\n" << e.json.dump();
      for (const auto& c : e.json["answers"]) {
        ++calls;
        const std::string name = c["name"].get<std::string>();
        ASSERT_TRUE(split_of.count(name)) << name;
        EXPECT_EQ(split_of[name], split) << name << " is called outside its split";
        sources.insert(e.meta.domain);
        // A Home Assistant entity id names the service's domain (light.turn_on acts on light.*).
        if (c["arguments"].contains("entity_id")) {
          const std::string domain = name.substr(0, name.find('.'));
          EXPECT_EQ(c["arguments"]["entity_id"].get<std::string>().rfind(domain + ".", 0), 0u) << c.dump();
        }
      }
      for (const auto& t : e.json["tools"]) {
        const std::string name = t["name"].get<std::string>();
        if (split == Split::kTrain) {
          EXPECT_EQ(split_of[name], Split::kTrain) << name << " is held out";
        }
      }
    }
    const double share = static_cast<double>(api) / static_cast<double>(set.size());
    EXPECT_GE(share, 0.09) << SplitName(split);
    EXPECT_LE(share, 0.15) << SplitName(split);
    EXPECT_GE(refusals, api / 20) << SplitName(split);
    EXPECT_LE(refusals, api / 5) << SplitName(split);
    EXPECT_GE(calls, api / 2);
    EXPECT_TRUE(sources.count("home_assistant")) << SplitName(split);
    EXPECT_TRUE(sources.count("schema_org")) << SplitName(split);
  }
}

TEST(ApiSchemas, ExamplesAreAPureFunctionOfSeedSplitAndIndex) {
  Generator a(Cat(), GeneratorOptions{5, Split::kTrain});
  Generator b(Cat(), GeneratorOptions{5, Split::kTrain});
  size_t api = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    const Example x = a.Generate(i);
    const Example y = b.Generate(i);
    EXPECT_EQ(x.json.dump(), y.json.dump()) << i;
    api += IsApi(x);
  }
  EXPECT_GE(api, 20u);
  // Out of order gives the same bytes too.
  EXPECT_EQ(a.Generate(123).json.dump(), b.Generate(123).json.dump());
}

}  // namespace
}  // namespace needle::data
