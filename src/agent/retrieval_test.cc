// Lexical retrieval scores: word splitting, schema terms, IDF-weighted shares.
#include "agent/retrieval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "base/error.h"

namespace needle {
namespace {

using nlohmann::ordered_json;
using Terms = std::vector<std::string>;

TEST(Lexical, TermsSplitNamesAndDropWhatSaysNothing) {
  EXPECT_EQ(LexicalTerms("setLights"), (Terms{"light"}));  // "set" is a function word here
  EXPECT_EQ(LexicalTerms("HTTPServer get_weather-forecast"), (Terms{"http", "server", "weather", "forecast"}));
  EXPECT_EQ(LexicalTerms("Turn the kitchen lights to 30 please"), (Terms{"turn", "kitchen", "light"}));
  EXPECT_EQ(LexicalTerms("zone2 mp3"), (Terms{"zone", "mp"}));
  EXPECT_EQ(LexicalTerms("switches dimming batteries recorded"), (Terms{"switch", "dimm", "battery", "~add"}));
  EXPECT_EQ(LexicalTerms("Lights LIGHTS light"), (Terms{"light"}));  // each term once
  EXPECT_TRUE(LexicalTerms("").empty());
  EXPECT_TRUE(LexicalTerms("  ,;!? 42 7 ").empty());
  // Bytes beyond ASCII stay in words (matched as they are, not split or dropped).
  EXPECT_EQ(LexicalTerms("café über"), (Terms{"café", "über"}));
}

// Sibling tools differ by their verb; the verbs naming one action are one term.
TEST(Lexical, VerbsOfOneActionAreOneTerm) {
  EXPECT_EQ(LexicalTerms("stop the timer"), LexicalTerms("end timer"));
  EXPECT_EQ(LexicalTerms("Halting stopwatch"), (Terms{"~stop", "stopwatch"}));
  EXPECT_EQ(LexicalTerms("release the object"), LexicalTerms("open object"));
  EXPECT_EQ(LexicalTerms("advance 90 cm"), (Terms{"~forward", "cm"}));
  EXPECT_EQ(LexicalTerms("list events"), LexicalTerms("show events"));
  EXPECT_NE(LexicalTerms("start timer"), LexicalTerms("stop timer"));
  // Ranked by them: "stop timing" names the stopwatch's end, not its start.
  const std::vector<std::vector<std::string>> tools = {ToolLexicalTerms(ordered_json::parse(R"({"name":"startStopwatch"})")),
                                                       ToolLexicalTerms(ordered_json::parse(R"({"name":"stopwatch.end"})"))};
  const std::vector<float> s = LexicalScores(LexicalTerms("stop timing, stopwatch"), tools);
  EXPECT_GT(s[1], s[0]);
}

TEST(Lexical, ToolTermsCoverTheWholeSchema) {
  const ordered_json tool = ordered_json::parse(R"({"name":"robotArm.grip","description":"Open or close the gripper",
    "parameters":{"type":"object","properties":{
      "mode":{"type":"string","enum":["SOFT","firmHold"]},
      "target":{"type":"object","properties":{"shelfLabel":{"type":"string","description":"Shelf tag"}}},
      "items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"}}}}}}})");
  const Terms t = ToolLexicalTerms(tool);
  for (const char* want : {"robot", "arm", "grip", "~open", "~close", "gripper", "mode", "soft", "firm", "hold", "target",
                           "shelf", "label", "tag", "item", "sku"}) {
    EXPECT_NE(std::find(t.begin(), t.end(), want), t.end()) << want;
  }
  EXPECT_TRUE(ToolLexicalTerms(ordered_json::array()).empty());
  EXPECT_EQ(ToolLexicalTerms(ordered_json::parse(R"({"name":"ping","parameters":7})")), (Terms{"ping"}));
}

TEST(Lexical, ScoresRankByTheQuerysDistinctiveWords) {
  const std::vector<Terms> tools = {
      ToolLexicalTerms(ordered_json::parse(R"({"name":"set_lights","description":"Turn room lights on or off"})")),
      ToolLexicalTerms(ordered_json::parse(R"({"name":"set_thermostat","description":"Set the room temperature"})")),
      ToolLexicalTerms(ordered_json::parse(R"({"name":"send_message","description":"Text a contact"})")),
  };
  const std::vector<float> s = LexicalScores(LexicalTerms("turn the kitchen lights off"), tools);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_GT(s[0], s[1]);
  EXPECT_GT(s[0], s[2]);
  for (float v : s) EXPECT_TRUE(v >= 0.0f && v <= 1.0f) << v;
  // Prefix matches of 4+ letters: "temp" finds "temperature", "tex" is too short for "text".
  const std::vector<float> t = LexicalScores(LexicalTerms("raise the temp"), tools);
  EXPECT_GT(t[1], 0.0f);
  EXPECT_EQ(t[0], 0.0f);
  EXPECT_EQ(LexicalScores(LexicalTerms("tex"), tools)[2], 0.0f);
  // A word every tool has ranks none above another; a word none has only dilutes.
  const std::vector<float> room = LexicalScores(LexicalTerms("room"), tools);
  EXPECT_EQ(room[0], room[1]);
  EXPECT_GT(LexicalScores(LexicalTerms("thermostat"), tools)[1],
            LexicalScores(LexicalTerms("thermostat banana"), tools)[1]);
  // Nothing to go on: all zero; no tools: no scores.
  EXPECT_EQ(LexicalScores({}, tools), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(LexicalScores(LexicalTerms("lights"), {}).empty());
}

// Derived forms whose stems differ in their last letters meet ("navigate" /
// "navigation"); words that only share a short start do not.
TEST(Lexical, DerivedFormsOfOneWordMeet) {
  const std::vector<Terms> tools = {
      ToolLexicalTerms(ordered_json::parse(R"({"name":"start_navigation","description":"Route to a destination"})")),
      ToolLexicalTerms(ordered_json::parse(R"({"name":"make_reservation","description":"Reserve a table"})")),
      ToolLexicalTerms(ordered_json::parse(R"({"name":"open_directory","description":"Browse a folder"})")),
  };
  EXPECT_GT(LexicalScores(LexicalTerms("navigate"), tools)[0], 0.0f);
  EXPECT_GT(LexicalScores(LexicalTerms("reservations"), tools)[1], 0.0f);
  EXPECT_GT(LexicalScores(LexicalTerms("subscribe"), {ToolLexicalTerms(ordered_json::parse(R"({"name":"add_subscription"})"))})[0], 0.0f);
  EXPECT_EQ(LexicalScores(LexicalTerms("directions"), tools)[2], 0.0f);  // "direct" is 6 of 9 letters
  EXPECT_EQ(LexicalScores(LexicalTerms("navy"), tools)[0], 0.0f);
}


TEST(Lexical, AnEnumValueSaidAsAWholePhrase) {
  const std::vector<nlohmann::json> units{"celsius", "fahrenheit"}, modes{"walking", "driving", "on", 3};
  EXPECT_EQ(SaidEnumValue("weather in Chicago in Fahrenheit please", units), 1);
  EXPECT_EQ(SaidEnumValue("celsius, please", units), 0);
  EXPECT_EQ(SaidEnumValue("fahrenheitish weather", units), -1);          // not a whole word
  EXPECT_EQ(SaidEnumValue("celsius or fahrenheit?", units), -1);         // several
  EXPECT_EQ(SaidEnumValue("turn it on, walking directions", modes), 0);  // "on" is too short to count
  EXPECT_EQ(SaidEnumValue("", units), -1);
}

TEST(Lexical, AnEnumValueTheToolDoesNotList) {
  const auto tools = nlohmann::ordered_json::parse(R"([
    {"name":"log_workout","parameters":{"type":"object","properties":{
      "type":{"type":"string","enum":["run","walk","cycling"]},"minutes":{"type":"integer"}},"required":["type"]}},
    {"name":"add_task","parameters":{"type":"object","properties":{
      "title":{"type":"string"},"priority":{"type":"string","enum":["priority_low","priority_high"]},
      "state":{"type":"string","enum":["state_on","state_off"]},"level":{"type":"string","enum":["1","2"]}}}}])");
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'yoga' -> type yoga", tools),
            "'yoga' is not an allowed type of log_workout (run, walk, cycling)");
  EXPECT_EQ(UnlistedEnumValue("log_workout: '30 minutes' -> minutes 30; 'Yoga.' -> type YOGA", tools),
            "'Yoga.' is not an allowed type of log_workout (run, walk, cycling)");
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'walk' -> type walk", tools), "");       // listed
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'cycle' -> type cycle", tools), "");     // a form of a listed value
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'jog' -> type run", tools), "");         // mapped onto a listed value
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'yoga' -> type", tools), "");            // no value planned
  EXPECT_EQ(UnlistedEnumValue("add_task: 'low' -> priority low", tools), "");        // a word of a listed value
  EXPECT_EQ(UnlistedEnumValue("add_task: 'on' -> state on", tools), "");             // a function word
  EXPECT_EQ(UnlistedEnumValue("add_task: 'yoga' -> title yoga", tools), "");         // not an enum key
  EXPECT_EQ(UnlistedEnumValue("add_task: '3' -> level 3", tools), "");               // a number
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'yoga' -> type yoga | add_task: 'x' -> title", tools), "");  // two calls
  EXPECT_EQ(UnlistedEnumValue("no declared tool handles this request", tools), "");
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'it's yoga' -> type it's yoga", tools),
            "'it's yoga' is not an allowed type of log_workout (run, walk, cycling)");  // an apostrophe inside
  EXPECT_EQ(UnlistedEnumValue("log_workout: 'yoga", tools), "");                      // cut short
}

TEST(Identifiers, ToolsRequiringAnIdentifierArgument) {
  auto tool = [](const char* props, const char* required) {
    return nlohmann::ordered_json::parse(std::string(R"({"name":"t","parameters":{"type":"object","properties":)") + props +
                                         R"(,"required":)" + required + "}}");
  };
  for (const char* key : {"id", "trackId", "place_id", "deviceID", "contact-id", "uid", "playerUid", "event.id"}) {
    const std::string props = std::string(R"({")") + key + R"(":{"type":"string"}})";
    EXPECT_TRUE(TakesAnIdentifier(tool(props.c_str(), (std::string(R"([")") + key + R"("])").c_str()))) << key;
  }
  for (const char* key : {"paid", "android", "idea", "trackid", "ids_note", "valid"}) {
    const std::string props = std::string(R"({")") + key + R"(":{"type":"string"}})";
    EXPECT_FALSE(TakesAnIdentifier(tool(props.c_str(), (std::string(R"([")") + key + R"("])").c_str()))) << key;
  }
  // Optional, not a string, or one of fixed values: not an identifier to look up.
  EXPECT_FALSE(TakesAnIdentifier(tool(R"({"track_id":{"type":"string"}})", "[]")));
  EXPECT_FALSE(TakesAnIdentifier(tool(R"({"track_id":{"type":"integer"}})", R"(["track_id"])")));
  EXPECT_FALSE(TakesAnIdentifier(tool(R"({"mode_id":{"type":"string","enum":["a","b"]}})", R"(["mode_id"])")));
  // A list of types (OpenAI's strict schemas: ["string", "null"]) is read, not
  // thrown on (found by session_tools_fuzz: SetTools failed with a JSON type error).
  EXPECT_TRUE(TakesAnIdentifier(tool(R"({"track_id":{"type":["string","null"]}})", R"(["track_id"])")));
  EXPECT_FALSE(TakesAnIdentifier(tool(R"({"track_id":{"type":["integer","null"]}})", R"(["track_id"])")));
  EXPECT_FALSE(TakesAnIdentifier(tool(R"({"track_id":{"type":[1,{}]}})", R"(["track_id"])")));
  EXPECT_FALSE(TakesAnIdentifier(tool(R"({"track_id":{"type":7}})", R"(["track_id"])")));
  EXPECT_FALSE(TakesAnIdentifier(nlohmann::ordered_json::parse(R"({"name":"t"})")));
  EXPECT_FALSE(TakesAnIdentifier(nlohmann::ordered_json::parse(R"({"name":"t","parameters":{"required":"id"}})")));
}

TEST(Identifiers, TextsThatHoldOne) {
  for (const char* t : {R"({"results":[{"id":"c_89094","name":"Ada"}]})", "play trk_224bb2", "track 7208409 please",
                        "tracking number 1Z755839FT13543863", "device dev-5195"}) {
    EXPECT_TRUE(SaysAnIdentifier(t)) << t;
  }
  for (const char* t : {"Can you play Volare?", "parking at level 2, spot Z25", "cancel my haircut on 25 october 2025",
                        "Rua Hillcrest 224", "", "identifier"}) {
    EXPECT_FALSE(SaysAnIdentifier(t)) << t;
  }
}

TEST(Identifiers, TheRecordTheRequestNames) {
  const auto terms = LexicalTerms("text Katerina Kowalski that I'm late");
  auto named = [&](const char* result) { return RecordNamedBy(ordered_json::parse(result), terms); };
  EXPECT_EQ(named(R"({"results":[{"id":"c_86215","name":"Ava Ricci"},{"id":"c_856","name":"Katerina Kowalski"}]})"), "c_856");
  // Other identifier keys, integer ids, nested arrays.
  EXPECT_EQ(named(R"({"contacts":[{"uid":7,"name":"Katerina Ricci"},{"uid":9,"name":"Katerina Kowalski"}]})"), "9");
  EXPECT_EQ(named(R"({"page":{"matches":[{"ref":"a1","name":"Bo"},{"contactId":"b2","name":"Kowalski, K."}]}})"), "b2");
  // The identifier itself is not a word of the record; a tie or no match says nothing.
  EXPECT_EQ(named(R"([{"id":"katerina","name":"Ava"},{"id":"x2","name":"Bo"}])"), "");
  EXPECT_EQ(named(R"([{"id":"a","name":"Katerina Ricci"},{"id":"b","name":"Katerina Moss"}])"), "");
  EXPECT_EQ(named(R"([{"name":"Katerina Kowalski"}])"), "");
  EXPECT_EQ(named(R"({"ok":true})"), "");
  EXPECT_EQ(RecordNamedBy(ordered_json::parse(R"([{"id":"a","name":"Katerina"}])"), {}), "");
}

}  // namespace
}  // namespace needle

namespace needle {
namespace {

// A damaged tool index loads what is sound and skips the rest, with no
// exception but the named kInvalidJson: keys that are not hex, numbers a
// float cannot hold, a dimension that is not an integer.
TEST(ToolIndex, DamagedEntriesAreSkipped) {
  const std::string path = ::testing::TempDir() + "/damaged-index.json";
  const std::string ok(16, 'a');
  std::ofstream(path) << R"({"format":"needle-tool-index","version":1,"dim":2,"entries":{)"
                      << R"("zzzzzzzzzzzzzzzz":[1,2],"00000000000000ff":[1e300,2],"0000000000000001":[1,"x"],)"
                      << '"' << ok << R"(":[0.5,-0.25]}})";
  ToolIndex index;
  index.Load(path, 2);
  EXPECT_EQ(index.size(), 1u);
  ASSERT_NE(index.Find(0xaaaaaaaaaaaaaaaaull), nullptr);
  EXPECT_EQ(*index.Find(0xaaaaaaaaaaaaaaaaull), (std::vector<float>{0.5f, -0.25f}));
  // A dimension of the wrong kind is another index: started over, not read.
  std::ofstream(path, std::ios::trunc) << R"({"format":"needle-tool-index","dim":1e30,"entries":{")" << ok << R"(":[1,2]}})";
  ToolIndex other;
  other.Load(path, 2);
  EXPECT_EQ(other.size(), 0u);
  EXPECT_TRUE(other.dirty());
  std::ofstream(path, std::ios::trunc) << R"({"format":5,"dim":2,"entries":{}})";
  try {
    ToolIndex bad;
    bad.Load(path, 2);
    ADD_FAILURE() << "loaded a file whose format is not the index's";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJson);
  }
  std::ofstream(path, std::ios::trunc) << "{not json";
  try {
    ToolIndex bad;
    bad.Load(path, 2);
    ADD_FAILURE() << "loaded a file that is not JSON";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJson);
  }
}

}  // namespace
}  // namespace needle
