// End-to-end checks of the `needle` binary: outputs, exit codes, one-line errors.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/testing/temp_dir.h"
#include "text/tokenizer_testing.h"

namespace {

struct Result {
  int code;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string& TempDir() { return needle::testing::ProcessTempDir("needle-cli"); }

Result RunNeedle(const std::string& args) {
  const std::string out = TempDir() + "/stdout", err = TempDir() + "/stderr";
  const std::string cmd = std::string(NEEDLE_CLI) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

const std::string kTiny = std::string(NEEDLE_SOURCE_DIR) + "/src/io/testdata/tiny.json";

TEST(Cli, HelpOnEachSubcommand) {
  for (const char* cmd : {"random", "inspect", "tokenize", "tokenizer-train"}) {
    const Result r = RunNeedle(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: needle " + std::string(cmd)), std::string::npos) << r.out;
  }
  EXPECT_EQ(RunNeedle("--help").code, 0);
  EXPECT_EQ(RunNeedle("frobnicate").code, 2);
}

// run, chat and eval take the same decoding flags (one list, DecodingFlags):
// a setting measured with eval is one a user can pass to run.
TEST(Cli, RunChatAndEvalTakeTheSameDecodingFlags) {
  const Result eval = RunNeedle("eval --help");
  for (const char* flag : {"--copy-bias", "--tool-score-bias", "--refusal-score-penalty", "--unsaid-id-penalty", "--record-id-bias",
                           "--no-distinct-plan-spans", "--enum-word-bias", "--options", "--threads", "--reasoning-refusal-penalty", "--max-think-tokens"}) {
    for (const char* cmd : {"run", "chat"}) {
      const Result r = RunNeedle(std::string(cmd) + " --help");
      EXPECT_NE(r.out.find(flag), std::string::npos) << cmd << " lacks " << flag;
    }
    EXPECT_NE(eval.out.find(flag), std::string::npos) << "eval lacks " << flag;
  }
}

TEST(Cli, RandomThenInspect) {
  const std::string path = TempDir() + "/tiny.cact";
  Result r = RunNeedle("random --preset " + kTiny + " --bits 3 --seed 5 --out " + path);
  ASSERT_EQ(r.code, 0) << r.err;
  r = RunNeedle("inspect " + path + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["geometry"]["num_layers"], 2);
  EXPECT_EQ(j["kv"]["effective_window"], 32);
  EXPECT_EQ(j["tensors"][0]["bits"], 3);
  EXPECT_EQ(j["heads"].size(), 2u);
  uint64_t family_total = 0;
  for (auto& [k, v] : j["family_bytes"].items()) family_total += v.get<uint64_t>();
  EXPECT_LE(family_total, j["bytes"].get<uint64_t>());
  r = RunNeedle("inspect " + path);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("effective window 32"), std::string::npos) << r.out;
  // `needle random` seals the file with a payload checksum; --verify requires
  // one, and a flipped bit is named.
  EXPECT_TRUE(j["checksum"]["verified"].get<bool>()) << j["checksum"];
  r = RunNeedle("inspect --summary --verify " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("checksum:  0x"), std::string::npos) << r.out;
  std::string bytes = Slurp(path);
  bytes[bytes.size() / 2] ^= 0x01;
  const std::string flipped = TempDir() + "/flipped.cact";
  std::ofstream(flipped, std::ios::binary) << bytes;
  r = RunNeedle("inspect --summary " + flipped);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("payload checksum mismatch"), std::string::npos) << r.err;
}

// generate-data --prose: {"text"} lines from the package lists given (and
// WordNet's glosses, which the project's setup installs), each a named error when missing.
TEST(Cli, GenerateDataProseReadsEveryPackageList) {
  const std::string a = TempDir() + "/a.status", b = TempDir() + "/b.status", out = TempDir() + "/prose.jsonl";
  std::ofstream(a) << "Package: alpha-tool\nDescription: the alpha tool\n\n";
  std::ofstream(b) << "Package: beta-tool\nDescription: the beta tool\n";
  Result r = RunNeedle("generate-data --prose --num 300000 --seed 1 --packages " + a + " --packages " + b + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("and 2 package descriptions"), std::string::npos) << r.err;
  const std::string text = Slurp(out);
  EXPECT_NE(text.find(R"({"text":"alpha-tool: the alpha tool."})"), std::string::npos);
  EXPECT_NE(text.find(R"({"text":"beta-tool: the beta tool."})"), std::string::npos);
  r = RunNeedle("generate-data --prose --num 1 --packages " + TempDir() + "/missing --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("prose: cannot read"), std::string::npos) << r.err;
  r = RunNeedle("generate-data --prose --num 1 --mix single=1 --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--mix does not apply to --prose"), std::string::npos) << r.err;
}

TEST(Cli, GoldenArchivesInspect) {
  for (const char* g : {"b2", "b3", "b4", "mixed", "ternary"}) {
    const Result r = RunNeedle(std::string("inspect --summary ") + NEEDLE_GOLDEN_DIR + "/golden-" + g + ".cact");
    EXPECT_EQ(r.code, 0) << g << r.err;
    EXPECT_NE(r.out.find("5 layers"), std::string::npos);
    EXPECT_NE(r.out.find("checksum:  none"), std::string::npos) << r.out;  // the published layout: no trailer, still loads
  }
  const Result r = RunNeedle(std::string("inspect --summary --verify ") + NEEDLE_GOLDEN_DIR + "/golden-b2.cact");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("carries no payload checksum"), std::string::npos) << r.err;
}

TEST(Cli, BadFilesExitWithCode2AndOneLine) {
  const std::string good = TempDir() + "/good.cact";
  ASSERT_EQ(RunNeedle("random --preset " + kTiny + " --bits 2 --out " + good).code, 0);
  const std::string bytes = Slurp(good);
  struct Case {
    const char* name;
    std::string content;
    const char* expect;
  } cases[] = {
      {"truncated", bytes.substr(0, bytes.size() / 2), "runs past the end of the file"},
      {"flipped", "NOPE" + bytes.substr(4), "payload checksum mismatch"},  // the checksum is checked first
      {"wrongtag", "NOPE" + bytes.substr(4, bytes.size() - 4 - 32), "header.tag"},  // without the trailer: the structure
      {"empty", "", "smaller than the 120-byte header"},
  };
  for (const auto& c : cases) {
    const std::string path = TempDir() + "/" + c.name + ".cact";
    std::ofstream(path, std::ios::binary) << c.content;
    const Result r = RunNeedle("inspect " + path);
    EXPECT_EQ(r.code, 2) << c.name;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  const Result missing = RunNeedle("inspect " + TempDir() + "/does-not-exist.cact");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos);
}

TEST(Cli, BadFlagsExitWithCode2) {
  EXPECT_EQ(RunNeedle("random --preset needle2 --bits 9 --out /dev/null").code, 2);
  EXPECT_EQ(RunNeedle("random --preset nope --out /dev/null").code, 2);
  EXPECT_EQ(RunNeedle("random --preset needle2").code, 2);
  EXPECT_EQ(RunNeedle("random --preset needle2 --out x --frob 1").code, 2);
  const Result r = RunNeedle("random --preset " + kTiny + " --bits default=2,attn.qproj=4 --out /dev/null");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("attn.qproj"), std::string::npos);
}

TEST(Cli, Needle2AtTwoBitsFitsIn14MB) {
  const std::string path = TempDir() + "/n2.cact";
  ASSERT_EQ(RunNeedle("random --preset needle2 --bits 2 --out " + path).code, 0);
  const Result r = RunNeedle("inspect --json --summary " + path);
  ASSERT_EQ(r.code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["bytes"].get<uint64_t>(), 14000000u);
  EXPECT_EQ(j["geometry"]["num_layers"], 27);
  EXPECT_EQ(j["kv"]["budget_window"], 704);
  EXPECT_EQ(j["kv"]["effective_window"], 256);
  std::remove(path.c_str());
}

// ---- tokenize / tokenizer-train ------------------------------------------------

std::string JoinIds(const std::vector<int>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s;
}

// In a --lines file a newline is written as the two characters \n.
std::string EscapeNewlines(const std::string& text) {
  std::string s;
  for (char c : text) s += c == '\n' ? std::string("\\n") : std::string(1, c);
  return s;
}

TEST(Cli, TokenizeReproducesTheGoldenIds) {
  const auto golden = nlohmann::json::parse(std::ifstream(std::string(NEEDLE_GOLDEN_DIR) + "/tokenizer_ids.json"));
  const std::string archive = std::string(NEEDLE_GOLDEN_DIR) + "/golden-b3.cact";
  // One text as an argument (the first golden entry has no quotes or newlines).
  const std::string first = golden[0]["text"];
  Result r = RunNeedle("tokenize --model " + archive + " '" + first + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, JoinIds(golden[0]["ids"].get<std::vector<int>>()) + "\n");
  // Every entry through --lines, newlines escaped, the empty text as an empty line.
  const std::string lines = TempDir() + "/golden-lines.txt";
  std::string want;
  {
    std::ofstream f(lines, std::ios::binary);
    for (const auto& e : golden) {
      f << EscapeNewlines(e["text"].get<std::string>()) << "\n";
      want += JoinIds(e["ids"].get<std::vector<int>>()) + "\n";
    }
  }
  r = RunNeedle("tokenize --model " + archive + " --lines " + lines);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  // The SentencePiece file itself gives the same, and stdin works.
  r = RunNeedle("tokenize --model " + std::string(NEEDLE_GOLDEN_DIR) + "/tokenizer.model --lines - <" + lines);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
}

TEST(Cli, TokenizePieces) {
  const Result r = RunNeedle("tokenize --model " + std::string(NEEDLE_GOLDEN_DIR) + "/golden-b2.cact --pieces 'x<tools>y'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "\u2581 <0x78> <tools> y\n");  // x is not a piece of the golden vocabulary
}

TEST(Cli, TokenizeErrors) {
  const std::string archive = std::string(NEEDLE_GOLDEN_DIR) + "/golden-b2.cact";
  struct Case {
    std::string args;
    const char* expect;
  } cases[] = {
      {"tokenize 'text'", "--model is required"},
      {"tokenize --model " + archive, "exactly one TEXT"},
      {"tokenize --model " + archive + " a b", "exactly one TEXT"},
      {"tokenize --model " + archive + " --lines /dev/null text", "exclusive"},
      {"tokenize --model " + archive + " --lines " + TempDir() + "/no-such-file", "cannot open"},
      {"tokenize --model " + TempDir() + "/no-such.cact x", "cannot open"},
      {"tokenize --model " + std::string(NEEDLE_SOURCE_DIR) + "/CMakeLists.txt x", "header"},
      {"run --model " + archive + " --reasoning-beams 9 'hello'", "--reasoning-beams must be 1 to 8"},
      {"eval --model " + archive + " --data /dev/null --reasoning-beams 0", "--reasoning-beams must be 1 to 8, got 0"},
      {"run --model " + archive + " --max-new-tokens -5 'hello'", "--max-new-tokens must be 1 to 65536, got -5"},
      {"run --model " + archive + " --copy-bias lots 'hello'", "--copy-bias expects a number, got 'lots'"},
      {"run --model " + archive + " --options '{\"reasoning_beams\": 2, \"beams\": 1}' 'hello'", "unknown option 'beams'"},
      {"run --model " + archive + " --options '{\"reasoning_beams\": ' 'hello'", "--options: not a JSON object"},
  };
  for (const auto& c : cases) {
    const Result r = RunNeedle(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(Cli, TokenizerTrainThenEmbedThenTokenize) {
  const std::string corpus = TempDir() + "/corpus.txt", out = TempDir() + "/tok";
  std::ofstream(corpus, std::ios::binary) << needle::testing::TrainingCorpus(5, 3000);
  // Two input files: the corpus given twice, once as a trailing positional.
  Result r = RunNeedle("tokenizer-train --input " + corpus + " " + corpus + " --vocab 500 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("6000 lines"), std::string::npos) << r.err;
  const std::string model = out + "/tokenizer.model";
  // Embed it in an archive whose vocab is 500 too, and tokenize through both.
  auto config = nlohmann::json::parse(std::ifstream(kTiny));
  config["vocab_size"] = 500;
  const std::string config_path = TempDir() + "/tiny500.json", archive = TempDir() + "/tiny500.cact";
  std::ofstream(config_path) << config.dump();
  r = RunNeedle("random --preset " + config_path + " --tokenizer " + model + " --out " + archive);
  ASSERT_EQ(r.code, 0) << r.err;
  r = RunNeedle("inspect --json --summary " + archive);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["geometry"]["vocab"], 500);
  const std::string lines = TempDir() + "/train-lines.txt";
  std::ofstream(lines, std::ios::binary) << "set a timer for 25 minutes\n<tool_call>[]</tool_call>\\n\n\n \xFF\n";
  const Result from_archive = RunNeedle("tokenize --model " + archive + " --lines " + lines);
  const Result from_model = RunNeedle("tokenize --model " + model + " --lines " + lines);
  ASSERT_EQ(from_archive.code, 0) << from_archive.err;
  EXPECT_EQ(from_archive.out, from_model.out);
  EXPECT_EQ(std::count(from_archive.out.begin(), from_archive.out.end(), '\n'), 4) << from_archive.out;
  // Digits are split one per token: "25" is two tokens after the space.
  const Result digits = RunNeedle("tokenize --model " + model + " --pieces '25'");
  EXPECT_EQ(digits.out, "\u2581 2 5\n");
  std::remove(corpus.c_str());
}

TEST(Cli, TokenizerTrainErrors) {
  const std::string corpus = TempDir() + "/small-corpus.txt";
  std::ofstream(corpus) << "just a few words\nnot enough for a big vocabulary\n";
  struct Case {
    std::string args;
    const char* expect;
  } cases[] = {
      {"tokenizer-train --vocab 500 --out " + TempDir() + "/x", "--input is required"},
      {"tokenizer-train --input " + corpus + " --out " + TempDir() + "/x", "--vocab is required"},
      {"tokenizer-train --input " + corpus + " --vocab 100 --out " + TempDir() + "/x", "--vocab must be"},
      {"tokenizer-train --input " + TempDir() + "/missing.txt --vocab 500 --out " + TempDir() + "/x", "cannot open input"},
      {"tokenizer-train --input " + corpus + " --vocab 8192 --out " + TempDir() + "/x", "Vocabulary size too high"},
  };
  for (const auto& c : cases) {
    const Result r = RunNeedle(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(Cli, GenerateData) {
  const std::string a = TempDir() + "/gen-a.jsonl", b = TempDir() + "/gen-b.jsonl";
  Result r = RunNeedle("generate-data --num 60 --seed 3 --split test --out " + a + " --stats");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("refusal share"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("distinct tool names"), std::string::npos) << r.err;
  ASSERT_EQ(RunNeedle("generate-data --num 60 --seed 3 --split test --out " + b).code, 0);
  const std::string text = Slurp(a);
  EXPECT_EQ(text, Slurp(b));  // deterministic for a seed
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 60);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const auto j = nlohmann::json::parse(text.substr(start, end - start));
    EXPECT_TRUE(j.contains("query") && j.contains("tools") && j.contains("answers")) << j.dump();
  }
  // Stats alone go to stdout; errors are one line with exit code 2.
  r = RunNeedle("generate-data --num 20 --stats");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tools per example"), std::string::npos);
  for (const char* bad : {"generate-data --num 5 --split dev --out x.jsonl", "generate-data --seed 1 --out x.jsonl",
                          "generate-data --num 5", "generate-data --num 5 --out x.jsonl --tools /nonexistent.json"}) {
    r = RunNeedle(bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // A user's own tools.
  const std::string tools = TempDir() + "/user-tools.json";
  std::ofstream(tools) << R"([{"name": "feed_cat", "description": "Dispense cat food.",
      "parameters": {"type": "object", "properties": {"grams": {"type": "integer", "minimum": 5, "maximum": 80}}, "required": ["grams"]}}])";
  r = RunNeedle("generate-data --num 30 --tools " + tools + " --out " + a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(Slurp(a).find("feed_cat"), std::string::npos);
}

// --wordnet P: the default 0.5 paraphrases some requests and nothing else;
// --wordnet 0 needs no WordNet; --meta lists what was replaced.
TEST(Cli, GenerateDataWordNet) {
  const std::string off = TempDir() + "/wn-off.jsonl", on = TempDir() + "/wn-on.jsonl";
  Result r = RunNeedle("generate-data --num 200 --seed 3 --wordnet 0 --wordnet-dir /nonexistent --out " + off);
  ASSERT_EQ(r.code, 0) << r.err;
  r = RunNeedle("generate-data --num 200 --seed 3 --meta --out " + on);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string a = Slurp(off), b = Slurp(on);
  size_t sa = 0, sb = 0, changed = 0, listed = 0;
  for (size_t ea, eb; (ea = a.find('\n', sa)) != std::string::npos && (eb = b.find('\n', sb)) != std::string::npos;
       sa = ea + 1, sb = eb + 1) {
    auto x = nlohmann::json::parse(a.substr(sa, ea - sa)), y = nlohmann::json::parse(b.substr(sb, eb - sb));
    ASSERT_TRUE(y.contains("meta") && y["meta"].contains("paraphrases")) << y.dump();
    listed += !y["meta"]["paraphrases"].empty();
    y.erase("meta");
    changed += x != y;
    for (auto* e : {&x, &y}) {
      e->erase("query");
      if (e->contains("turns"))
        for (auto& t : (*e)["turns"]) t.erase("query");
    }
    EXPECT_EQ(x, y);  // tools, answers, reasoning, facts: as without paraphrasing
  }
  EXPECT_GT(changed, 10u);  // about 12% of the examples at the default 0.5
  EXPECT_EQ(changed, listed);
  r = RunNeedle("generate-data --num 5 --wordnet 0.5 --wordnet-dir /nonexistent --out " + on);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--wordnet 0"), std::string::npos) << r.err;
  r = RunNeedle("generate-data --num 5 --wordnet 2 --out " + on);
  EXPECT_EQ(r.code, 2) << r.err;
}

TEST(Cli, GenerateDataMix) {
  const std::string out = TempDir() + "/mix.jsonl";
  Result r = RunNeedle("generate-data --num 400 --seed 3 --wordnet 0 --meta --mix parallel=40,extraction=40 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = Slurp(out);
  size_t parallel = 0, lines = 0;
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1, ++lines)
    parallel += nlohmann::json::parse(text.substr(at, end - at))["meta"]["kind"] == "parallel";
  EXPECT_EQ(lines, 400u);
  EXPECT_GT(parallel, 60u);  // about 22% (40 of 176.7); 7% by default
  r = RunNeedle("generate-data --num 5 --mix parallel=3,sessions=2 --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown kind 'sessions'"), std::string::npos) << r.err;
  r = RunNeedle("generate-data --num 5 --long-sessions --mix parallel=3 --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--mix"), std::string::npos) << r.err;
}

}  // namespace

namespace {

const std::string kAgentConfig = std::string(NEEDLE_SOURCE_DIR) + "/testdata/agent_small_config.json";

std::string SmallAgentModel() {
  const std::string path = TempDir() + "/agent.cact";
  const Result r = RunNeedle("random --preset " + kAgentConfig + " --tokenizer bytes --seed 3 --out " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  return path;
}

TEST(Cli, RunPrintsAnEnvelope) {
  const std::string model = SmallAgentModel();
  const std::string tools = R"('[{"name":"set_timer","parameters":{"type":"object","properties":{"minutes":{"type":"integer","minimum":1,"maximum":90}},"required":["minutes"]}}]')";
  Result r = RunNeedle("run --model " + model + " --tools " + tools + " --max-new-tokens 40 --max-think-tokens 4 'a timer for 5 minutes'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto env = nlohmann::json::parse(r.out);
  EXPECT_TRUE(env["success"].get<bool>());
  for (const auto& c : env["function_calls"]) EXPECT_EQ(c["name"], "set_timer");
  // Malformed tools and a missing query: one line, exit 2.
  r = RunNeedle("run --model " + model + " --tools '[{\"name\": ' 'x'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("invalid_json"), std::string::npos) << r.err;
  EXPECT_EQ(RunNeedle("run --model " + model + " --tools '[]'").code, 2);
  EXPECT_EQ(RunNeedle("run --model " + TempDir() + "/missing.cact --tools '[]' q").code, 2);
}

// bench-batch measures batched decoding, with one sink block per session or
// one shared by all (--shared-sinks), and ends with its JSON figures.
TEST(Cli, BenchBatchPrintsItsFigures) {
  const std::string model = SmallAgentModel();
  for (const char* sharing : {"", " --shared-sinks"}) {
    const Result r = RunNeedle("bench-batch --model " + model + " --sessions 1,2 --steps 2 --rounds 1 --threads 2 --json" + sharing);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["shared_sinks"].get<bool>(), *sharing != 0);
    ASSERT_EQ(j["rows"].size(), 2u);
    for (const auto& row : j["rows"]) EXPECT_GT(row["batched_tps"].get<double>(), 0.0) << row;
  }
  EXPECT_EQ(RunNeedle("bench-batch --model " + model + " --sessions 0").code, 2);
}

// Bad requests get an error that names the problem (issue L): never a call
// on bytes that say nothing, never a silently different reading.
TEST(Cli, RunNamesBadRequests) {
  const std::string model = SmallAgentModel();
  const std::string tools = R"('[{"name":"set_timer","parameters":{"type":"object","properties":{"minutes":{"type":"integer"}},"required":["minutes"]}}]')";
  const std::string run = "run --model " + model + " --tools " + tools + " --max-think-tokens 4 ";
  Result r = RunNeedle(run + "--max-new-tokens -5 'a timer for 5 minutes'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--max-new-tokens"), std::string::npos) << r.err;
  r = RunNeedle(run + "--max-new-tokens 99999999999 'a timer for 5 minutes'");
  EXPECT_EQ(r.code, 2) << r.err;
  r = RunNeedle(run + R"(--system '{"date":' 'a timer for 5 minutes')");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("system facts: malformed JSON"), std::string::npos) << r.err;
  r = RunNeedle(run + R"(--system '["2026-11-30"]' 'a timer for 5 minutes')");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("expected a JSON object"), std::string::npos) << r.err;
  r = RunNeedle("run --model " + model + " --tools " + TempDir() + " 'a timer'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is a folder"), std::string::npos) << r.err;
  r = RunNeedle("run --model " + model + " --tools no-such-tools.json 'a timer'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("neither a file nor a JSON array"), std::string::npos) << r.err;
  r = RunNeedle(run + "\"$(printf 'timer \\377\\376')\"");  // bytes that are not UTF-8: an error envelope, exit 1
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const auto env = nlohmann::json::parse(r.out);
  EXPECT_EQ(env["type"], "error");
  EXPECT_EQ(env["error_code"], "invalid_argument");
  EXPECT_NE(env["error"].get<std::string>().find("not valid UTF-8 (byte 0xFF at offset 6)"), std::string::npos) << r.out;
  EXPECT_TRUE(env["function_calls"].empty());
}

TEST(Cli, ChatTranscript) {
  const std::string model = SmallAgentModel();
  const std::string tools = TempDir() + "/chat_tools.json";
  std::ofstream(tools) << R"([{"name":"lights","parameters":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}}])";
  const std::string input = TempDir() + "/chat_in.txt";
  std::ofstream(input) << "lights on\n{\"ok\":true}\n/reset\nlights off\n/quit\n";
  const Result r = RunNeedle("chat --model " + model + " --tools " + tools + " --max-new-tokens 30 --max-think-tokens 4 < " + input);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"type\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("conversation reset"), std::string::npos) << r.out;
}

TEST(Cli, EvalReportsEveryMetric) {
  const std::string model = SmallAgentModel();
  const std::string data = TempDir() + "/eval.jsonl";
  ASSERT_EQ(RunNeedle("generate-data --num 12 --seed 4 --split test --max-tools 3 --meta --out " + data).code, 0);
  const std::string preds = TempDir() + "/preds.jsonl", rollouts = TempDir() + "/rollouts.jsonl";
  const Result r = RunNeedle("eval --model " + model + " --data " + data + " --max-new-tokens 48 --max-think-tokens 4 --jobs 2 --json --out " +
                             preds + " --rollouts " + rollouts);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rep = nlohmann::json::parse(r.out);
  for (const char* k : {"exact_call", "tool_selection", "argument_precision", "argument_recall", "refusal_precision", "refusal_recall",
                        "schema_valid", "mean_confidence_right", "mean_confidence_wrong", "mean_decode_tps", "turns"}) {
    EXPECT_TRUE(rep.contains(k)) << k;
  }
  EXPECT_EQ(rep["schema_valid"].get<double>(), 100.0);  // the grammar: nonsense, but valid
  EXPECT_GE(rep["turns"].get<int>(), 12);
  // With generate-data --meta, the first turns by kind: they add up to the examples.
  ASSERT_TRUE(rep.contains("first_turns_by_kind")) << r.out;
  int by_kind = 0;
  for (const auto& [kind, n] : rep["first_turns_by_kind"].items()) {
    by_kind += n["first_turns"].get<int>();
    EXPECT_LE(n["exact"].get<int>(), n["first_turns"].get<int>()) << kind;
  }
  EXPECT_EQ(by_kind, 12);
  // One prediction per turn, one rollout per first turn.
  std::ifstream p(preds);
  int lines = 0;
  for (std::string l; std::getline(p, l);) ++lines;
  EXPECT_EQ(lines, rep["turns"].get<int>());
  // A rollout per turn that produced an envelope: the sink block, the earlier
  // turns as context (pool_from is where the scored turn begins), the turn.
  std::ifstream ro(rollouts);
  int rolls = 0, later = 0;
  for (std::string l; std::getline(ro, l);) {
    const auto roll = nlohmann::json::parse(l);
    ++rolls;
    const size_t sink = roll["sink"].get<size_t>(), from = roll["pool_from"].get<size_t>();
    EXPECT_LT(from, roll["ids"].size());
    // The decoder's call probability, the cap on the reported confidence.
    ASSERT_TRUE(roll.contains("call_p")) << l;
    EXPECT_GT(roll["call_p"].get<double>(), 0.0);
    EXPECT_LE(roll["call_p"].get<double>(), 1.0);
    if (roll["turn"].get<int>() == 0) {
      EXPECT_EQ(from, sink);
    } else {
      ++later;
      EXPECT_GT(from, sink);
    }
  }
  EXPECT_GE(rolls, 12);
  EXPECT_LE(rolls, rep["turns"].get<int>());
  EXPECT_GT(later, 0) << "the test split has sessions: their later turns are rollouts too";
}

// The long-session report pairs each case's turn 1 with its late turn: the
// pair counts must reproduce both turns' exact and tool-selection rates.
TEST(Cli, EvalLongSessionPairsEachCase) {
  const std::string data = TempDir() + "/long.jsonl";
  ASSERT_EQ(RunNeedle("generate-data --num 10 --seed 5 --split test --max-tools 4 --out " + data).code, 0);
  // The embedded default model, so some turns are right and some wrong.
  const Result r = RunNeedle("eval --data " + data + " --long-session 3 --jobs 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ls = nlohmann::json::parse(r.out)["long_session"];
  const auto& t1 = ls["turn_1"];
  const auto& tN = ls["turn_5"];
  const int n = t1["turns"].get<int>();
  ASSERT_GT(n, 0);
  EXPECT_EQ(tN["turns"].get<int>(), n);
  for (const auto& [metric, pair_key] : {std::pair{"exact_call", "paired_exact_call"}, std::pair{"tool_selection", "paired_tool_selection"}}) {
    const auto& p = ls[pair_key];
    const int both = p["both"], lost = p["lost"], gained = p["gained"], neither = p["neither"];
    EXPECT_EQ(p["pairs"].get<int>(), n) << metric;
    EXPECT_EQ(both + lost + gained + neither, n) << metric;
    EXPECT_NEAR(100.0 * (both + lost) / n, t1[metric].get<double>(), 0.051) << metric;
    EXPECT_NEAR(100.0 * (both + gained) / n, tN[metric].get<double>(), 0.051) << metric;
    EXPECT_NEAR(p["difference_points"].get<double>(), 100.0 * (gained - lost) / n, 0.051) << metric;
    EXPECT_LE(p["ci95_points"][0].get<double>(), p["difference_points"].get<double>()) << metric;
    EXPECT_GE(p["ci95_points"][1].get<double>(), p["difference_points"].get<double>()) << metric;
    EXPECT_GT(p["mcnemar_p"].get<double>(), 0.0) << metric;
    EXPECT_LE(p["mcnemar_p"].get<double>(), 1.0) << metric;
  }
}

}  // namespace
