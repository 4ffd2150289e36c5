// The WordNet reader against Debian's wordnet-base (scripts/setup installs it):
// known synonyms and hypernyms, the sense filters, inflection both ways, and
// the error a missing directory gives.
#include "data/wordnet.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "base/error.h"

namespace needle::data {
namespace {

const WordNet& Wn() {
  static const WordNet wn;  // /usr/share/wordnet
  return wn;
}

bool Has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(WordNet, SynonymsOfTheDominantSense) {
  EXPECT_TRUE(Has(Wn().Synonyms("buy", WordPos::kVerb), "purchase"));
  EXPECT_TRUE(Has(Wn().Synonyms("purchase", WordPos::kVerb), "buy"));
  EXPECT_TRUE(Has(Wn().Synonyms("turn on", WordPos::kVerb), "switch on"));  // a two-word lemma, with a space
  EXPECT_TRUE(Has(Wn().Synonyms("search", WordPos::kVerb), "seek"));
  // Never the word itself; the rare sense of "buy" ("bribe") is not offered.
  EXPECT_FALSE(Has(Wn().Synonyms("buy", WordPos::kVerb), "buy"));
  EXPECT_FALSE(Has(Wn().Synonyms("buy", WordPos::kVerb), "bribe"));
}

TEST(WordNet, SenseFiltersLeaveOutTheWrongMeanings) {
  // "alarm" is first a fear (noun.feeling), "light" first a radiation, "play"
  // first a competition: none of those senses is offered.
  for (const std::string& s : Wn().Synonyms("alarm", WordPos::kNoun)) EXPECT_NE(s, "dismay");
  for (const std::string& s : Wn().Synonyms("light", WordPos::kNoun)) EXPECT_NE(s, "visible radiation");
  // "start" shares a synset with "get", but that is get's 20th sense.
  EXPECT_FALSE(Has(Wn().Synonyms("start", WordPos::kVerb), "get"));
  // Lowercase (no proper nouns), at most two words, no underscores.
  for (const char* w : {"buy", "send", "schedule", "cancel", "search", "show", "create", "book"})
    for (const std::string& s : Wn().Synonyms(w, WordPos::kVerb)) {
      EXPECT_EQ(s.find('_'), std::string::npos) << s;
      EXPECT_LE(std::count(s.begin(), s.end(), ' '), 1) << s;
      for (char c : s) EXPECT_FALSE(c >= 'A' && c <= 'Z') << s;
    }
  EXPECT_TRUE(Wn().Synonyms("zzzz", WordPos::kNoun).empty());
}

TEST(WordNet, Hypernyms) {
  EXPECT_TRUE(Has(Wn().Hypernyms("reminder", WordPos::kNoun), "message"));
  EXPECT_TRUE(Has(Wn().Hypernyms("meeting", WordPos::kNoun), "gathering"));
  EXPECT_TRUE(Wn().Hypernyms("buy", WordPos::kVerb).empty());  // verbs: none (they change the action)
  // Too general to say anything: never offered.
  const std::pair<const char*, WordPos> words[] = {{"song", WordPos::kNoun},    {"door", WordPos::kNoun},
                                                   {"meeting", WordPos::kNoun}, {"timer", WordPos::kNoun},
                                                   {"buy", WordPos::kVerb},     {"send", WordPos::kVerb}};
  for (const auto& [w, pos] : words)
    for (const std::string& h : Wn().Hypernyms(w, pos)) {
      EXPECT_NE(h, "entity");
      EXPECT_NE(h, "get");
      EXPECT_NE(h, "move");
      EXPECT_NE(h, "device");
    }
}

TEST(WordNet, Lemmatize) {
  using P = std::pair<std::string, Inflection>;
  EXPECT_EQ(Wn().Lemmatize("lights", WordPos::kNoun), P("light", Inflection::kPlural));
  EXPECT_EQ(Wn().Lemmatize("children", WordPos::kNoun), P("child", Inflection::kPlural));
  EXPECT_EQ(Wn().Lemmatize("boxes", WordPos::kNoun), P("box", Inflection::kPlural));
  EXPECT_EQ(Wn().Lemmatize("cities", WordPos::kNoun), P("city", Inflection::kPlural));
  EXPECT_EQ(Wn().Lemmatize("alarm", WordPos::kNoun), P("alarm", Inflection::kBase));
  EXPECT_EQ(Wn().Lemmatize("buying", WordPos::kVerb), P("buy", Inflection::kIng));
  EXPECT_EQ(Wn().Lemmatize("making", WordPos::kVerb), P("make", Inflection::kIng));
  EXPECT_EQ(Wn().Lemmatize("stopping", WordPos::kVerb), P("stop", Inflection::kIng));
  EXPECT_EQ(Wn().Lemmatize("goes", WordPos::kVerb), P("go", Inflection::kThird));
  EXPECT_EQ(Wn().Lemmatize("sends", WordPos::kVerb), P("send", Inflection::kThird));
  EXPECT_FALSE(Wn().Lemmatize("went", WordPos::kVerb).has_value());  // past: no template needs it
  EXPECT_FALSE(Wn().Lemmatize("qwxz", WordPos::kNoun).has_value());
}

TEST(WordNet, Inflect) {
  EXPECT_EQ(Wn().Inflect("purchase", WordPos::kVerb, Inflection::kIng), "purchasing");
  EXPECT_EQ(Wn().Inflect("purchase", WordPos::kVerb, Inflection::kThird), "purchases");
  EXPECT_EQ(Wn().Inflect("stop", WordPos::kVerb, Inflection::kIng), "stopping");  // verb.exc
  EXPECT_EQ(Wn().Inflect("tie", WordPos::kVerb, Inflection::kIng), "tying");
  EXPECT_EQ(Wn().Inflect("see", WordPos::kVerb, Inflection::kIng), "seeing");
  EXPECT_EQ(Wn().Inflect("have", WordPos::kVerb, Inflection::kThird), "has");
  EXPECT_EQ(Wn().Inflect("go", WordPos::kVerb, Inflection::kThird), "goes");
  EXPECT_EQ(Wn().Inflect("carry", WordPos::kVerb, Inflection::kThird), "carries");
  EXPECT_EQ(Wn().Inflect("switch on", WordPos::kVerb, Inflection::kThird), "switches on");
  EXPECT_EQ(Wn().Inflect("look for", WordPos::kVerb, Inflection::kIng), "looking for");
  EXPECT_EQ(Wn().Inflect("alarm clock", WordPos::kNoun, Inflection::kPlural), "alarm clocks");
  EXPECT_EQ(Wn().Inflect("city", WordPos::kNoun, Inflection::kPlural), "cities");
  EXPECT_EQ(Wn().Inflect("day", WordPos::kNoun, Inflection::kPlural), "days");
  EXPECT_EQ(Wn().Inflect("box", WordPos::kNoun, Inflection::kPlural), "boxes");
  EXPECT_EQ(Wn().Inflect("salesman", WordPos::kNoun, Inflection::kPlural), "salesmen");
  EXPECT_EQ(Wn().Inflect("light", WordPos::kNoun, Inflection::kBase), "light");
}

TEST(WordNet, MissingDirectoryIsAnErrorOnlyWhenUsed) {
  const WordNet wn("/nonexistent/wordnet");  // constructing reads nothing
  EXPECT_EQ(wn.dir(), "/nonexistent/wordnet");
  try {
    wn.Load();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    const std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/wordnet"), std::string::npos) << m;
    EXPECT_NE(m.find("wordnet-base"), std::string::npos) << m;
  }
  EXPECT_THROW(wn.Synonyms("buy", WordPos::kVerb), Error);  // still an error the second time
}

}  // namespace
}  // namespace needle::data
