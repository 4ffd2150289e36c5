#include "data/prose.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/error.h"

namespace needle::data {
namespace {

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/prose_" + name; }

void Write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(Prose, WordNetGlossesNameTheirLemmas) {
  const std::string dir = TempPath("wordnet");
  std::filesystem::create_directories(dir);
  const std::string licence = "  1 This software and database is being provided to you, the LICENSEE, by  \n";
  Write(dir + "/data.noun", licence +
                                "07697537 13 n 02 hotdog 0 hot_dog 1 003 @ 07675627 n 0000 | a frankfurter served hot on a bun  \n"
                                "07697700 13 n 01 wiener 0 000 | \n");
  Write(dir + "/data.verb", licence + "01835496 38 v 01 travel 0 001 @ 01831531 v 0000 01 + 08 00 | change location; \"He travels "
                                      "a lot\"  \n");
  Write(dir + "/data.adj", licence + "00001740 00 a 01 able(p) 0 001 ! 00002098 a 0101 | having the necessary means  \n");
  Write(dir + "/data.adv", licence);
  const std::vector<std::string> texts = WordNetGlossTexts(dir);
  const std::vector<std::string> expected = {"hotdog, hot dog: a frankfurter served hot on a bun",
                                             "travel: change location; \"He travels a lot\"", "able: having the necessary means"};
  EXPECT_EQ(texts, expected);  // the licence lines and an empty gloss are skipped
  std::filesystem::remove(dir + "/data.adv");
  try {
    WordNetGlossTexts(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("data.adv"), std::string::npos) << e.what();
  }
}

TEST(Prose, PackageDescriptionsKeepTheirParagraphs) {
  const std::string path = TempPath("status");
  Write(path,
        "Package: zstd\nVersion: 1.5\nDescription: fast lossless compression algorithm\n"
        " Zstd is a fast lossless compression algorithm.\n .\n It targets real-time scenarios.\n\n"
        "Package: no-description\nVersion: 1\n\n"
        "Package: jq\nDescription-md5: 123\nDescription-en: lightweight and flexible command-line JSON processor.\n"
        " jq is like sed for JSON data\n");
  const std::vector<std::string> expected = {
      "zstd: fast lossless compression algorithm.\nZstd is a fast lossless compression algorithm.\nIt targets real-time scenarios.",
      "jq: lightweight and flexible command-line JSON processor.\njq is like sed for JSON data"};
  EXPECT_EQ(PackageDescriptionTexts(path), expected);
  EXPECT_THROW(PackageDescriptionTexts(TempPath("missing")), Error);
}

TEST(Prose, DrawsEachTextOnceARoundInASeededOrder) {
  const std::vector<std::string> texts = {"a", "b", "c", "b", "d"};
  const std::vector<std::string> first = DrawProse(texts, 4, 7);
  EXPECT_EQ(std::set<std::string>(first.begin(), first.end()), (std::set<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(DrawProse(texts, 4, 7), first);
  EXPECT_NE(DrawProse(texts, 4, 8), first);
  const std::vector<std::string> twice = DrawProse(texts, 8, 7);
  for (const char* t : {"a", "b", "c", "d"}) EXPECT_EQ(std::count(twice.begin(), twice.end(), t), 2) << t;
  EXPECT_TRUE(DrawProse({}, 3, 1).empty());
}

}  // namespace
}  // namespace needle::data
