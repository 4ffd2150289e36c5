#include "data/wordnet.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/error.h"  // Error

namespace needle::data {

namespace {

constexpr int kPosCount = 3;
constexpr const char* kPosFile[kPosCount] = {"noun", "verb", "adj"};

int PosIndex(WordPos p) { return static_cast<int>(p); }

// Lexicographer files (WordNet's lexnames) whose senses a device or app
// request may mean. Left out: feelings, body, animals, plants, natural
// phenomena, substances, competition and weather verbs — the first sense of
// "alarm" is a fear, of "play" a game, of "light" a radiation.
bool LexFileAllowed(int lexfile) {
  static const std::set<int> kAllowed = {
      0,  1,  2,                                           // adj.all, adj.pert, adv.all
      4,  6,  7,  9,  10, 11, 13, 14, 15, 17, 18, 21, 23, 28,  // noun: act artifact attribute cognition
                                                           // communication event food group location
                                                           // object person possession quantity time
      30, 31, 32, 34, 35, 36, 38, 39, 40, 41, 42};         // verb: change cognition communication consumption
                                                           // contact creation motion perception
                                                           // possession social stative
  return kAllowed.count(lexfile) > 0;
}

// Offensive, archaic or odd words never offered as replacements.
const std::set<std::string>& DenyList() {
  static const std::set<std::string> k = {
      "arse", "ass", "bastard", "bang", "bitch", "bloody", "boob", "bugger", "cock", "crap", "damn", "dick",
      "fag", "fuck", "hell", "hump", "jerk", "piss", "prick", "pussy", "retard", "screw", "shit", "slut", "tit",
      "whore", "bed", "lay", "knock up", "get laid",
      "shew", "hie", "ere", "thee", "thou", "whilst", "horologe", "bespeak", "brethren", "quest", "wend",
      "espy", "behold", "anon", "betwixt", "henceforth", "forsooth", "naught", "aught", "yon", "wherefore",
      "tabular array", "phrase", "salvage", "hesitate", "alteration", "tendency", "yrs", "hrs", "mins", "secs", "cerebrate", "cogitate", "drop dead", "kick the bucket", "croak", "snuff it"};
  return k;
}

// Hypernyms too general to say anything in a request.
const std::set<std::string>& GeneralWords() {
  static const std::set<std::string> k = {
      "entity", "physical entity", "abstraction", "abstract entity", "object", "physical object", "whole", "thing",
      "matter", "artifact", "artefact", "instrumentality", "instrumentation", "device", "act", "deed", "event",
      "activity", "action", "change", "alter", "modify", "move", "make", "create", "get", "have", "be", "do",
      "go", "cause", "communication", "group", "grouping", "measure", "quantity", "amount", "attribute", "state",
      "relation", "property", "psychological feature", "content", "unit", "part", "portion", "person", "individual",
      "someone", "somebody", "people", "system", "structure", "facility", "container", "covering", "location",
      "region", "area", "time", "period", "point", "information", "record", "writing", "text", "collection",
      "aggregation", "accumulation", "assemblage", "happening", "occurrence", "use", "utilize", "utilise", "employ",
      "take", "give", "put", "set", "place", "interact", "connect", "link", "touch", "perceive", "think",
      "evaluate", "judge", "transfer", "transmit", "convey", "express", "inform", "human action", "human activity",
      "magnitude", "fundamental quantity", "physical property", "social group", "organization", "organisation",
      "quality", "ordering", "dimension", "length", "interaction"};
  return k;
}

std::string Underscored(std::string_view lemma) {
  std::string s(lemma);
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

std::string Spaced(std::string_view lemma) {
  std::string s(lemma);
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

bool EndsWithS(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsVowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

std::string ReadFile(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::kIo, "wordnet: cannot read " + path +
                                    " (WordNet's dict files; Debian: apt-get install wordnet-base; "
                                    "generate-data --wordnet 0 turns the paraphrasing off)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class F>
void ForEachLine(const std::string& text, F&& f) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    f(std::string_view(text).substr(pos, end - pos), pos);
    pos = end + 1;
  }
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

// One synset as the filters need it.
struct Synset {
  int lexfile = -1;
  std::vector<std::string> lemmas;   // as written in data.* (underscores, case kept)
  std::vector<uint32_t> hypernyms;   // '@' pointers (instance hypernyms '@i' left out)
  bool usage_domain = false;         // a ';u' pointer: colloquialism, slang, archaism, ...
};

struct WordNet::Tables {
  std::string data[kPosCount];                                                    // data.* files, by offset
  std::unordered_map<std::string, std::vector<uint32_t>> index[kPosCount];       // lemma_ -> synset offsets by sense
  std::unordered_map<std::string, std::vector<int>> counts[kPosCount];           // lemma_ -> tag count by sense
  std::unordered_map<std::string, std::vector<std::string>> exc[kPosCount];      // inflected -> lemmas
  std::unordered_map<std::string, std::vector<std::string>> exc_rev[kPosCount];  // lemma -> inflected

  Synset Parse(int pos, uint32_t offset) const {
    Synset s;
    const std::string& d = data[pos];
    if (offset >= d.size()) return s;
    size_t end = d.find('\n', offset);
    if (end == std::string::npos) end = d.size();
    std::string_view line = std::string_view(d).substr(offset, end - offset);
    const size_t bar = line.find(" | ");
    if (bar != std::string_view::npos) line = line.substr(0, bar);
    const std::vector<std::string_view> f = Fields(line);
    if (f.size() < 4) return s;
    s.lexfile = std::atoi(std::string(f[1]).c_str());
    const size_t words = std::strtoul(std::string(f[3]).c_str(), nullptr, 16);
    size_t i = 4;
    for (size_t w = 0; w < words && i + 1 < f.size(); ++w, i += 2) {
      std::string lemma(f[i]);
      const size_t paren = lemma.find('(');  // adjective markers: "(a)", "(p)", "(ip)"
      if (paren != std::string::npos) lemma.resize(paren);
      s.lemmas.push_back(lemma);
    }
    if (i >= f.size()) return s;
    const size_t pointers = std::strtoul(std::string(f[i]).c_str(), nullptr, 10);
    ++i;
    for (size_t p = 0; p < pointers && i + 3 < f.size(); ++p, i += 4) {
      if (f[i] == "@") s.hypernyms.push_back(static_cast<uint32_t>(std::strtoul(std::string(f[i + 1]).c_str(), nullptr, 10)));
      if (f[i] == ";u") s.usage_domain = true;
    }
    return s;
  }

  // Depth of a synset below its root along the first hypernym (noun roots: "entity").
  int Depth(int pos, uint32_t offset) const {
    int depth = 0;
    for (Synset s = Parse(pos, offset); !s.hypernyms.empty() && depth < 32; s = Parse(pos, s.hypernyms[0])) ++depth;
    return depth;
  }

  int Count(int pos, const std::string& key, size_t sense) const {
    auto it = counts[pos].find(key);
    return it == counts[pos].end() || sense >= it->second.size() ? 0 : it->second[sense];
  }

  // The senses a request most likely means by the lemma: of the first two,
  // those in an allowed lexicographer file that carry a fair share of the
  // tagged uses (or the only sense).
  std::vector<uint32_t> Dominant(int pos, const std::string& key) const {
    std::vector<uint32_t> out;
    auto it = index[pos].find(key);
    if (it == index[pos].end()) return out;
    const std::vector<uint32_t>& offs = it->second;
    int total = 0;
    for (size_t s = 0; s < offs.size(); ++s) total += Count(pos, key, s);
    for (size_t s = 0; s < offs.size() && s < 2; ++s) {
      const Synset syn = Parse(pos, offs[s]);
      if (!LexFileAllowed(syn.lexfile) || syn.usage_domain) continue;
      const int c = Count(pos, key, s);
      const bool only = offs.size() == 1;
      const bool untagged_first = total == 0 && s == 0 && offs.size() <= 2;
      // The second sense only when it is used at least as often as the first.
      const bool dominant = s == 0 ? total >= 3 && c * 100 >= total * 35 : c >= Count(pos, key, 0) && c >= 3;
      if (only || untagged_first || dominant) out.push_back(offs[s]);
    }
    return out;
  }

  // A replacement lemma for synset `offset`: common, lowercase, one or two
  // words, and the synset among its own first two senses (so "get" is not
  // offered for "start", whose synset is get's 20th sense).
  bool Usable(int pos, const std::string& lemma_, uint32_t offset, int min_count = 1) const {
    if (lemma_.empty()) return false;
    // British -ise spellings where WordNet has the -ize one ("utilise").
    const size_t ise = lemma_.find("is");
    if (ise != std::string::npos && ise + 2 < lemma_.size() && (lemma_[ise + 2] == 'e' || lemma_[ise + 2] == 'a') &&
        index[pos].count(lemma_.substr(0, ise) + "iz" + lemma_.substr(ise + 2)))
      return false;
    int words = 1;
    for (char c : lemma_) {
      if (c == '_') ++words;
      else if (!(c >= 'a' && c <= 'z') && c != '-') return false;  // uppercase: a proper noun
    }
    if (words > 2 || DenyList().count(Spaced(lemma_))) return false;
    auto it = index[pos].find(lemma_);
    if (it == index[pos].end()) return false;
    const std::vector<uint32_t>& offs = it->second;
    for (size_t s = 0; s < offs.size() && s < 2; ++s)
      if (offs[s] == offset) return (offs.size() == 1 && min_count <= 1) || Count(pos, lemma_, s) >= min_count;
    return false;
  }
};

WordNet::WordNet(std::string dir) : dir_(std::move(dir)) {}
WordNet::~WordNet() = default;

void WordNet::Load() const {
  std::call_once(once_, [this] {
    auto t = std::make_unique<Tables>();
    for (int p = 0; p < kPosCount; ++p) {
      t->data[p] = ReadFile(dir_, std::string("data.") + kPosFile[p]);
      const std::string idx = ReadFile(dir_, std::string("index.") + kPosFile[p]);
      ForEachLine(idx, [&](std::string_view line, size_t) {
        if (line.empty() || line[0] == ' ') return;  // the licence header
        const std::vector<std::string_view> f = Fields(line);
        if (f.size() < 6) return;
        const size_t senses = std::strtoul(std::string(f[2]).c_str(), nullptr, 10);
        if (senses == 0 || senses > f.size()) return;
        std::vector<uint32_t>& offs = t->index[p][std::string(f[0])];
        for (size_t i = f.size() - senses; i < f.size(); ++i)
          offs.push_back(static_cast<uint32_t>(std::strtoul(std::string(f[i]).c_str(), nullptr, 10)));
      });
      const std::string exc = ReadFile(dir_, std::string(kPosFile[p]) + ".exc");
      ForEachLine(exc, [&](std::string_view line, size_t) {
        const std::vector<std::string_view> f = Fields(line);
        for (size_t i = 1; i < f.size(); ++i) {
          t->exc[p][std::string(f[0])].push_back(std::string(f[i]));
          t->exc_rev[p][std::string(f[i])].push_back(std::string(f[0]));
        }
      });
    }
    // cntlist.rev: "lemma%ss_type:lexfile:lexid:head:headid sense_number tag_count".
    const std::string cnt = ReadFile(dir_, "cntlist.rev");
    ForEachLine(cnt, [&](std::string_view line, size_t) {
      const std::vector<std::string_view> f = Fields(line);
      if (f.size() != 3) return;
      const size_t pct = f[0].find('%');
      if (pct == std::string_view::npos || pct + 1 >= f[0].size()) return;
      const char ss = f[0][pct + 1];
      const int p = ss == '1' ? 0 : ss == '2' ? 1 : (ss == '3' || ss == '5') ? 2 : -1;
      const long sense = std::strtol(std::string(f[1]).c_str(), nullptr, 10);
      if (p < 0 || sense < 1 || sense > 100) return;
      std::vector<int>& c = t->counts[p][std::string(f[0].substr(0, pct))];
      if (c.size() < static_cast<size_t>(sense)) c.resize(static_cast<size_t>(sense), 0);
      c[static_cast<size_t>(sense) - 1] += std::atoi(std::string(f[2]).c_str());
    });
    t_ = std::move(t);
  });
}

const WordNet::Tables& WordNet::T() const {
  Load();
  return *t_;
}

bool WordNet::Knows(std::string_view lemma, WordPos pos) const {
  return T().index[PosIndex(pos)].count(Underscored(lemma)) > 0;
}

std::vector<std::string> WordNet::Synonyms(std::string_view lemma, WordPos pos) const {
  const Tables& t = T();
  const int p = PosIndex(pos);
  const std::string key = Underscored(lemma);
  std::vector<std::string> out;
  for (uint32_t off : t.Dominant(p, key)) {
    for (const std::string& l : t.Parse(p, off).lemmas) {
      // Nouns: one word ("textual matter" for "text" is no one's way to say it).
      if (l == key || (pos == WordPos::kNoun && l.find('_') != std::string::npos) || !t.Usable(p, l, off, 2)) continue;
      const std::string s = Spaced(l);
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  }
  return out;
}

std::vector<std::string> WordNet::Hypernyms(std::string_view lemma, WordPos pos) const {
  const Tables& t = T();
  const int p = PosIndex(pos);
  const std::string key = Underscored(lemma);
  std::vector<std::string> out;
  // Verb hypernyms replace the action with a vaguer or another one ("run" ->
  // "hurry", "add" -> "increase"): nouns only.
  if (pos != WordPos::kNoun) return out;
  for (uint32_t off : t.Dominant(p, key)) {
    for (uint32_t h : t.Parse(p, off).hypernyms) {
      const Synset hs = t.Parse(p, h);
      // Nouns near the root ("abstraction", "communication") say nothing in a request.
      if (hs.usage_domain || !LexFileAllowed(hs.lexfile) || (pos == WordPos::kNoun && t.Depth(p, h) < 3)) continue;
      for (const std::string& l : hs.lemmas) {
        const std::string s = Spaced(l);
        // One common word: "gathering" for "meeting", not "written record" for "note".
        if (l == key || l.find('_') != std::string::npos || GeneralWords().count(s) || !t.Usable(p, l, h, 3)) continue;
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
      }
    }
  }
  return out;
}

std::optional<std::pair<std::string, Inflection>> WordNet::Lemmatize(std::string_view word_in, WordPos pos) const {
  const Tables& t = T();
  const int p = PosIndex(pos);
  const std::string word(word_in);
  auto known = [&](const std::string& w) { return !w.empty() && t.index[p].count(w) > 0; };
  // A plural that WordNet also lists on its own is read as the plural:
  // "devices" is a device, not "left to his own devices".
  if (pos == WordPos::kNoun && word.size() > 3 && word.back() == 's' && !EndsWithS(word, "ss") &&
      known(word.substr(0, word.size() - 1)))
    return std::make_pair(Spaced(word.substr(0, word.size() - 1)), Inflection::kPlural);
  if (known(word)) return std::make_pair(Spaced(word), Inflection::kBase);
  if (pos == WordPos::kAdj) return std::nullopt;
  if (auto it = t.exc[p].find(word); it != t.exc[p].end()) {
    for (const std::string& base : it->second) {
      if (!known(base)) continue;
      if (pos == WordPos::kNoun) return std::make_pair(Spaced(base), Inflection::kPlural);
      if (EndsWithS(word, "ing")) return std::make_pair(Spaced(base), Inflection::kIng);
      if (EndsWithS(word, "s")) return std::make_pair(Spaced(base), Inflection::kThird);
      return std::nullopt;  // a past form: the templates never need one
    }
  }
  struct Rule {
    const char* suffix;
    const char* ending;
    Inflection form;
  };
  static const Rule kNoun[] = {{"ches", "ch", Inflection::kPlural}, {"shes", "sh", Inflection::kPlural},
                               {"ses", "s", Inflection::kPlural},   {"xes", "x", Inflection::kPlural},
                               {"zes", "z", Inflection::kPlural},   {"ies", "y", Inflection::kPlural},
                               {"men", "man", Inflection::kPlural}, {"s", "", Inflection::kPlural}};
  static const Rule kVerb[] = {{"ies", "y", Inflection::kThird}, {"es", "", Inflection::kThird},
                               {"es", "e", Inflection::kThird},  {"s", "", Inflection::kThird},
                               {"ing", "", Inflection::kIng},    {"ing", "e", Inflection::kIng}};
  const bool noun = pos == WordPos::kNoun;
  for (const Rule& r : noun ? std::vector<Rule>(std::begin(kNoun), std::end(kNoun))
                            : std::vector<Rule>(std::begin(kVerb), std::end(kVerb))) {
    if (!EndsWithS(word, r.suffix) || word.size() <= std::string(r.suffix).size() + 1) continue;
    if (noun && EndsWithS(word, "ss")) break;  // "glass" is no plural
    const std::string base = word.substr(0, word.size() - std::string(r.suffix).size()) + r.ending;
    if (known(base)) return std::make_pair(Spaced(base), r.form);
  }
  // "stopping" -> "stop" (the .exc lists most doubled consonants; this catches the rest).
  if (!noun && EndsWithS(word, "ing") && word.size() > 5 && word[word.size() - 4] == word[word.size() - 5]) {
    const std::string base = word.substr(0, word.size() - 4);
    if (known(base)) return std::make_pair(Spaced(base), Inflection::kIng);
  }
  return std::nullopt;
}

std::string WordNet::Inflect(std::string_view lemma, WordPos pos, Inflection form) const {
  std::string s(lemma);
  if (form == Inflection::kBase || pos == WordPos::kAdj) return s;
  // The head: a verb's first word ("switch on"), a noun's last ("alarm clock").
  size_t begin = 0, end = s.size();
  if (pos == WordPos::kVerb) {
    const size_t sp = s.find(' ');
    if (sp != std::string::npos) end = sp;
  } else {
    const size_t sp = s.rfind(' ');
    if (sp != std::string::npos) begin = sp + 1;
  }
  const std::string w = s.substr(begin, end - begin);
  std::string out;
  if (form == Inflection::kPlural) {
    static const std::vector<std::pair<std::string, std::string>> kIrregular = {
        {"man", "men"}, {"woman", "women"}, {"child", "children"}, {"person", "people"},
        {"foot", "feet"}, {"tooth", "teeth"}, {"mouse", "mice"},   {"goose", "geese"}};
    for (const auto& [sg, pl] : kIrregular) {
      // "salesman", "chairwoman", but not "human" or "shaman".
      const bool compound = sg == "man" && w.size() > 3 && EndsWithS(w, sg) && w[w.size() - 4] != 'u' &&
                            w[w.size() - 4] != 'a';
      if (out.empty() && (w == sg || compound)) out = w.substr(0, w.size() - sg.size()) + pl;
    }
    if (!out.empty()) {
    } else if (EndsWithS(w, "s") || EndsWithS(w, "x") || EndsWithS(w, "z") || EndsWithS(w, "ch") || EndsWithS(w, "sh")) {
      out = w + "es";
    } else if (w.size() > 1 && w.back() == 'y' && !IsVowel(w[w.size() - 2])) {
      out = w.substr(0, w.size() - 1) + "ies";
    } else {
      out = w + "s";
    }
  } else {
    const Tables& t = T();
    auto it = t.exc_rev[PosIndex(pos)].find(w);
    if (it != t.exc_rev[PosIndex(pos)].end()) {
      for (const std::string& f : it->second) {
        if (form == Inflection::kIng && EndsWithS(f, "ing")) out = f;
        if (form == Inflection::kThird && EndsWithS(f, "s") && !EndsWithS(f, "ss")) out = f;
        if (!out.empty()) break;
      }
    }
    if (!out.empty()) {
    } else if (form == Inflection::kThird) {
      if (EndsWithS(w, "s") || EndsWithS(w, "x") || EndsWithS(w, "z") || EndsWithS(w, "ch") || EndsWithS(w, "sh") ||
          EndsWithS(w, "o"))
        out = w + "es";
      else if (w.size() > 1 && w.back() == 'y' && !IsVowel(w[w.size() - 2]))
        out = w.substr(0, w.size() - 1) + "ies";
      else
        out = w + "s";
    } else {
      if (EndsWithS(w, "ie")) out = w.substr(0, w.size() - 2) + "ying";
      else if (w.size() > 2 && w.back() == 'e' && !EndsWithS(w, "ee") && !EndsWithS(w, "ye") && !EndsWithS(w, "oe"))
        out = w.substr(0, w.size() - 1) + "ing";
      else
        out = w + "ing";
    }
  }
  return s.substr(0, begin) + out + s.substr(end);
}

}  // namespace needle::data
