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

namespace {

struct Result {
  int code;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string TempDir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/needle-cli-XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  return dir;
}

Result RunNeedle(const std::string& args) {
  const std::string out = TempDir() + "/stdout", err = TempDir() + "/stderr";
  const std::string cmd = std::string(NEEDLE_CLI) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

const std::string kTiny = std::string(NEEDLE_SOURCE_DIR) + "/src/io/testdata/tiny.json";

TEST(Cli, HelpOnEachSubcommand) {
  for (const char* cmd : {"random", "inspect"}) {
    const Result r = RunNeedle(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: needle " + std::string(cmd)), std::string::npos) << r.out;
  }
  EXPECT_EQ(RunNeedle("--help").code, 0);
  EXPECT_EQ(RunNeedle("frobnicate").code, 2);
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
}

TEST(Cli, GoldenArchivesInspect) {
  for (const char* g : {"b2", "b3", "b4", "mixed", "ternary"}) {
    const Result r = RunNeedle(std::string("inspect --summary ") + NEEDLE_GOLDEN_DIR + "/golden-" + g + ".cact");
    EXPECT_EQ(r.code, 0) << g << r.err;
    EXPECT_NE(r.out.find("5 layers"), std::string::npos);
  }
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
      {"wrongtag", "NOPE" + bytes.substr(4), "header.tag"},
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

}  // namespace
