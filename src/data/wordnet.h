// A small reader of Princeton WordNet 3.0's dict files (Debian's wordnet-base,
// /usr/share/wordnet): index.{noun,verb,adj}, data.*, cntlist.rev and the
// *.exc inflection lists. The generator uses it to paraphrase requests
// (gen_wordnet.cc), so it answers one question well: which everyday words can
// stand for this word in a request? Only the dominant senses count (the sense
// counts of cntlist.rev), and only common single or two-word lemmas come back:
// no proper nouns, no rare senses of the replacement either, no slang,
// archaic or offensive words (usage-domain pointers, a deny list).
//
// Nothing is read until the first question (or Load()); a directory without
// the files is an Error(kIo) naming it then, never before.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace needle::data {

enum class WordPos { kNoun, kVerb, kAdj };

// How a surface word relates to its lemma; the forms the request templates use.
enum class Inflection {
  kBase,    // "buy", "light"
  kPlural,  // nouns: "lights", "children"
  kThird,   // verbs, 3rd person singular: "buys", "goes"
  kIng,     // verbs: "buying", "stopping"
};

class WordNet {
 public:
  static constexpr const char* kDefaultDir = "/usr/share/wordnet";

  explicit WordNet(std::string dir = kDefaultDir);
  ~WordNet();
  WordNet(const WordNet&) = delete;
  WordNet& operator=(const WordNet&) = delete;

  // Reads the files (once; later calls return at once). Throws Error(kIo)
  // naming the directory and the missing file. Thread-safe.
  void Load() const;
  const std::string& dir() const { return dir_; }

  // Lemmas are lowercase with spaces ("switch on"), as the text writes them.
  bool Knows(std::string_view lemma, WordPos pos) const;
  // Other lemmas of the word's dominant senses (at most the first two), in
  // sense order, filtered as the header says; nouns single words only.
  std::vector<std::string> Synonyms(std::string_view lemma, WordPos pos) const;
  // Single-word lemmas of the direct hypernyms of a noun's same senses
  // ("meeting" -> "gathering"), filtered alike, without the very general
  // ones ("entity", "device"). Verbs have none here: a verb's hypernym
  // changes the action ("run" -> "hurry").
  std::vector<std::string> Hypernyms(std::string_view lemma, WordPos pos) const;

  // The lemma and form of a surface word ("lights" -> light, kPlural;
  // "went" -> go has no form the templates use: nullopt). Lowercase input.
  std::optional<std::pair<std::string, Inflection>> Lemmatize(std::string_view word, WordPos pos) const;
  // The inverse: regular rules, irregular forms from the .exc lists; a
  // multiword lemma inflects its head ("switch on" -> "switching on",
  // "alarm clock" -> "alarm clocks").
  std::string Inflect(std::string_view lemma, WordPos pos, Inflection form) const;

 private:
  struct Tables;
  const Tables& T() const;
  std::string dir_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<Tables> t_;
};

}  // namespace needle::data
