#include "data/gen_wordnet.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "data/words.h"  // Lower, CapitalizeFirst

namespace needle::data {

namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Words never replaced: function words, the wrappers' and openers' words, and
// verbs too light to carry a sense ("set", "get", "make").
const std::set<std::string>& StopWords() {
  static const std::set<std::string> k = {
      "the", "and", "for", "with", "from", "into", "onto", "that", "this", "these", "those", "what", "which",
      "when", "where", "who", "whom", "whose", "why", "how", "can", "could", "would", "should", "will", "shall",
      "may", "might", "must", "you", "your", "yours", "our", "ours", "their", "them", "they", "his", "her", "its",
      "mine", "are", "was", "were", "been", "being", "have", "has", "had", "does", "did", "doing", "done", "not",
      "please", "pls", "plz", "thanks", "thank", "hey", "okay", "yes", "want", "wanna", "need", "like", "let",
      "lets", "just", "also", "then", "now", "right", "away", "some", "any", "all", "every", "each", "about",
      "after", "before", "until", "till", "than", "there", "here", "again", "too", "very", "really", "quick",
      "quickly", "kindly", "maybe", "mind", "help", "able", "get", "got", "set", "make", "made", "put", "take",
      "give", "let", "say", "tell", "ask", "know", "think", "try", "use", "see", "look", "come", "going", "gonna",
      "one", "ones", "thing", "things", "something", "anything", "everything", "way", "bit", "lot", "time",
      "today", "tomorrow", "tonight", "morning", "evening", "afternoon", "night", "week", "month", "year", "day",
      "minute", "minutes", "hour", "hours", "second", "seconds", "question", "hello", "assistant", "wondering",
      "possible", "sure", "well", "still", "only", "even", "much", "many", "more", "most", "less", "other",
      "another", "same", "such", "own", "being", "over", "under", "down", "off", "out", "back", "through"};
  return k;
}

// Words after which the next word is a verb in base form ("to book", "please cancel").
const std::set<std::string>& VerbCues() {
  static const std::set<std::string> k = {"to",  "please", "pls", "plz", "you", "can",   "could", "would", "will",
                                          "i'll", "we'll",  "i",   "we",  "and", "then", "also",  "just",  "me",
                                          "lets", "let's",  "now", "quickly", "help", "am", "is", "are",
                                          "be", "keep"};
  return k;
}

// Words after which the next word is a noun ("the alarm", "my reminders");
// not "that", which as often starts a clause ("a car that starts at ...").
const std::set<std::string>& NounCues() {
  static const std::set<std::string> k = {"the", "a", "an", "my", "your", "our", "their", "his", "her", "its",
                                          "this", "these", "those", "some", "any", "all", "every",
                                          "each", "new", "next", "last", "another", "other", "no", "of"};
  return k;
}

const std::set<std::string>& Prepositions() {
  static const std::set<std::string> k = {"for", "to", "in", "on", "at", "of", "with", "from", "by", "into",
                                          "about", "as", "like", "saying", "called", "named", "that", "and", "or"};
  return k;
}

const std::set<std::string>& Particles() {
  static const std::set<std::string> k = {"on", "off", "up", "down", "out", "in", "back", "over", "away", "about"};
  return k;
}

struct Token {
  size_t begin = 0, end = 0;  // byte range in the text
  std::string lower;
  bool protect = false;       // overlaps a value
  bool clause_start = false;  // first word, or after . , ; : ! ? ( or a newline
  bool word = true;           // letters (and inner apostrophes) only
  bool capital = false;       // starts with an uppercase letter
};

std::vector<Token> Tokenize(const std::string& text, const std::vector<bool>& masked) {
  // Spaces and punctuation end a word; a dot between letters does not ("light.kitchen").
  auto space = [&](size_t k) { return text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r'; };
  auto punct = [&](size_t k) {
    const char ch = text[k];
    if (ch == '.') return !(k > 0 && k + 1 < text.size() && IsLetter(text[k - 1]) && IsLetter(text[k + 1]));
    return std::string(",;:!?()\"").find(ch) != std::string::npos;
  };
  std::vector<Token> out;
  bool boundary = true;
  for (size_t i = 0; i < text.size();) {
    if (space(i)) {
      boundary = boundary || text[i] == '\n';
      ++i;
      continue;
    }
    if (punct(i)) {
      boundary = true;
      ++i;
      continue;
    }
    Token t;
    t.begin = i;
    while (i < text.size() && !space(i) && !punct(i)) ++i;
    t.end = i;
    t.lower = Lower(text.substr(t.begin, t.end - t.begin));
    t.capital = text[t.begin] >= 'A' && text[t.begin] <= 'Z';
    for (size_t k = t.begin; k < t.end; ++k) {
      t.protect = t.protect || masked[k];
      const bool inner_apostrophe = text[k] == '\'' && k > t.begin && k + 1 < t.end;
      if (!IsLetter(text[k]) && !inner_apostrophe) t.word = false;
    }
    t.clause_start = boundary;
    boundary = false;
    out.push_back(t);
  }
  return out;
}

// Case-insensitive marks of every occurrence of every protected string.
std::vector<bool> Mask(const std::string& text, const std::vector<std::string>& protect) {
  std::vector<bool> masked(text.size(), false);
  const std::string low = Lower(text);
  for (const std::string& p : protect) {
    const std::string lp = Lower(p);
    if (lp.empty()) continue;
    for (size_t at = low.find(lp); at != std::string::npos; at = low.find(lp, at + 1))
      std::fill(masked.begin() + static_cast<long>(at), masked.begin() + static_cast<long>(at + lp.size()), true);
  }
  return masked;
}

// A replaceable word (or two-word unit such as "turn on" or "alarm clock").
struct Candidate {
  size_t first = 0, last = 0;  // token range, inclusive
  WordPos pos = WordPos::kNoun;
  std::string lemma;
  Inflection form = Inflection::kBase;
  std::vector<std::string> synonyms, hypernyms;
};

bool Allowed(const std::string& alt, const std::set<std::string>& forbidden, const std::string& lemma) {
  if (alt.size() < 3) return false;  // "m" for metres
  for (const std::string& w : SplitWords(alt)) {
    if (forbidden.count(w)) return false;
    for (const std::string& l : SplitWords(lemma))
      if (w == l) return false;  // "switch on" for "turn on" is fine, "on" alone is not new
  }
  return true;
}

std::optional<Candidate> Analyse(const std::vector<Token>& toks, size_t i, const std::set<std::string>& forbidden,
                                 const WordNet& wn) {
  const Token& t = toks[i];
  if (!t.word || t.protect || t.lower.size() < 3 || StopWords().count(t.lower)) return std::nullopt;
  // A capital inside a clause is a name ("Sunrise Bakery"), even when no answer copies it.
  if (!t.clause_start && t.capital) return std::nullopt;
  const std::string prev = i > 0 && !t.clause_start ? toks[i - 1].lower : "";
  const bool prev_number = i > 0 && !t.clause_start && !toks[i - 1].lower.empty() &&
                           std::isdigit(static_cast<unsigned char>(toks[i - 1].lower[0]));
  const Token* next = i + 1 < toks.size() && !toks[i + 1].clause_start && toks[i + 1].word && !toks[i + 1].protect
                          ? &toks[i + 1]
                          : nullptr;
  // Part of speech from the word before: crude, but a wrong guess finds no
  // lemma or no dominant sense far more often than a wrong replacement.
  std::optional<WordPos> pos;
  const auto as_verb = wn.Lemmatize(t.lower, WordPos::kVerb);
  const auto as_noun = wn.Lemmatize(t.lower, WordPos::kNoun);
  // Adjectives are left alone ("It's chilly", "the monthly payment"): WordNet
  // also lists them as nouns (a chili pepper, a magazine).
  if (wn.Knows(t.lower, WordPos::kAdj)) return std::nullopt;
  const bool next_word = i + 1 < toks.size() && !toks[i + 1].clause_start;
  const std::string after = next_word ? toks[i + 1].lower : "";
  if (NounCues().count(prev) || prev_number) pos = WordPos::kNoun;
  else if ((t.clause_start || VerbCues().count(prev)) && as_verb && as_verb->second != Inflection::kThird)
    pos = WordPos::kVerb;
  else if (!t.clause_start && as_noun && !as_verb)
    pos = WordPos::kNoun;
  if (!pos) return std::nullopt;
  // An imperative has an object: "listen, ..." is an opener, "forecast for
  // Oslo" a noun, "search for" a phrasal verb (unless WordNet lists it whole).
  if (*pos == WordPos::kVerb && (!next_word || Prepositions().count(after)) &&
      !(next_word && wn.Knows(as_verb->first + " " + after, WordPos::kVerb)))
    return std::nullopt;
  // A noun before another noun modifies it ("price history", "alarm time"):
  // only whole compounds WordNet lists are replaced.
  const bool before_noun = next_word && toks[i + 1].word && after.size() >= 3 && !StopWords().count(after) &&
                           !Prepositions().count(after) && wn.Lemmatize(after, WordPos::kNoun).has_value();
  const auto base = *pos == WordPos::kVerb ? as_verb : as_noun;
  if (!base) return std::nullopt;
  Candidate c;
  c.first = c.last = i;
  c.pos = *pos;
  c.lemma = base->first;
  c.form = base->second;
  // Two-word lemmas: "turn on", "alarm clock".
  if (next) {
    if (c.pos == WordPos::kVerb && wn.Knows(c.lemma + " " + next->lower, WordPos::kVerb)) {
      c.lemma += " " + next->lower, c.last = i + 1;
    } else if (c.pos == WordPos::kNoun && c.form == Inflection::kBase) {
      const auto head = wn.Lemmatize(next->lower, WordPos::kNoun);
      if (head && wn.Knows(c.lemma + " " + head->first, WordPos::kNoun))
        c.lemma += " " + head->first, c.form = head->second, c.last = i + 1;
    }
  }
  if (c.pos == WordPos::kNoun && c.last == i && before_noun) return std::nullopt;
  // A verb with a particle that WordNet does not list ("check in") means
  // something the verb alone does not.
  if (c.pos == WordPos::kVerb && c.last == i && i + 1 < toks.size() && !toks[i + 1].clause_start &&
      Particles().count(toks[i + 1].lower))
    return std::nullopt;
  // A plural of a lemma that is one already ("words" for "lyrics") reads as "wordses".
  auto plural_of_plural = [&](const std::string& s) { return c.form == Inflection::kPlural && s.back() == 's'; };
  for (const std::string& s : wn.Synonyms(c.lemma, c.pos)) {
    if (plural_of_plural(s)) continue;
    const std::string f = wn.Inflect(s, c.pos, c.form);
    if (Allowed(f, forbidden, c.lemma)) c.synonyms.push_back(f);
  }
  for (const std::string& s : wn.Hypernyms(c.lemma, c.pos)) {
    if (plural_of_plural(s)) continue;
    const std::string f = wn.Inflect(s, c.pos, c.form);
    if (Allowed(f, forbidden, c.lemma)) c.hypernyms.push_back(f);
  }
  if (c.synonyms.empty() && c.hypernyms.empty()) return std::nullopt;
  return c;
}

bool StartsWithVowelSound(const std::string& w) {
  return !w.empty() && std::string("aeiou").find(static_cast<char>(std::tolower(static_cast<unsigned char>(w[0])))) !=
                           std::string::npos;
}

// Protected strings of an example: the spans its reasoning quotes, and every
// value of its answers and tool results.
void CollectValues(const ojson& v, std::vector<std::string>& out) {
  if (v.is_string()) out.push_back(v.get<std::string>());
  else if (v.is_number() || v.is_boolean()) out.push_back(v.dump());
  else if (v.is_array() || v.is_object())
    for (const auto& x : v) CollectValues(x, out);
}

void CollectQuoted(const std::string& reasoning, std::vector<std::string>& out) {
  // Spans may hold apostrophes ('I'm late'): every quote-to-quote substring is
  // kept; those that are not spans only protect a little more than needed.
  std::vector<size_t> q;
  for (size_t i = 0; i < reasoning.size(); ++i)
    if (reasoning[i] == '\'') q.push_back(i);
  for (size_t a = 0; a < q.size(); ++a) {
    for (size_t b = a + 1; b < q.size() && b < a + 8; ++b) {
      std::string s = reasoning.substr(q[a] + 1, q[b] - q[a] - 1);
      if (s.size() >= 3 && s.compare(s.size() - 3, 3, "...") == 0) s.resize(s.size() - 3);  // ShortSpan's cut
      if (!s.empty() && s.size() < 400) out.push_back(s);
    }
  }
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '\n') out.emplace_back();
    else out.back() += c;
  }
  return out;
}

void AddWords(const std::string& text, std::set<std::string>& out) {
  std::string cur;
  for (char c : text + " ") {
    if (IsLetter(c)) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      if (!cur.empty()) out.insert(cur);
      cur.clear();
    }
  }
}

}  // namespace

std::string ParaphraseText(const std::string& text, const std::vector<std::string>& protect,
                           const std::set<std::string>& forbidden, const WordNet& wn, Rng& rng,
                           std::vector<Paraphrase>* made) {
  const std::vector<bool> masked = Mask(text, protect);
  const std::vector<Token> toks = Tokenize(text, masked);
  std::vector<Candidate> cands;
  for (size_t i = 0; i < toks.size(); ++i) {
    if (!cands.empty() && cands.back().last >= i) continue;
    if (auto c = Analyse(toks, i, forbidden, wn)) cands.push_back(*c);
  }
  if (cands.empty()) return text;
  const size_t r = rng.Below(10);
  const size_t want = std::min(cands.size(), static_cast<size_t>(r < 6 ? 1 : r < 9 ? 2 : 3));
  std::vector<size_t> order(cands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.Shuffle(order);
  order.resize(want);
  std::sort(order.begin(), order.end());
  // Rebuild left to right: each chosen unit replaced, the article before it agreed.
  std::string out;
  size_t at = 0;
  for (size_t k : order) {
    const Candidate& c = cands[k];
    const bool hyper = !c.hypernyms.empty() && (c.synonyms.empty() || rng.Chance(0.2));
    std::string alt = hyper ? rng.Pick(c.hypernyms) : rng.Pick(c.synonyms);
    const size_t begin = toks[c.first].begin, end = toks[c.last].end;
    const std::string from = text.substr(begin, end - begin);
    if (IsLetter(from[0]) && from[0] >= 'A' && from[0] <= 'Z') alt = CapitalizeFirst(alt);
    std::string before = text.substr(at, begin - at);
    // "a alarm" -> "an alarm": the article just before, when it is plain text.
    if (c.first > 0 && !toks[c.first].clause_start && !toks[c.first - 1].protect && toks[c.first - 1].begin >= at) {
      const Token& art = toks[c.first - 1];
      const std::string a = art.lower;
      if (a == "a" || a == "an") {
        std::string want_art = StartsWithVowelSound(alt) ? "an" : "a";
        if (text[art.begin] == 'A') want_art[0] = 'A';
        before = text.substr(at, art.begin - at) + want_art + text.substr(art.end, begin - art.end);
      }
    }
    out += before + alt;
    at = end;
    if (made) made->push_back({from, alt, hyper});
  }
  out += text.substr(at);
  // The values are all still there (they were masked; this guards the masking).
  for (const std::string& p : protect) {
    const std::string lp = Lower(p);
    if (!lp.empty() && Lower(text).find(lp) != std::string::npos && Lower(out).find(lp) == std::string::npos) {
      if (made) made->resize(made->size() - want);
      return text;
    }
  }
  return out;
}

std::vector<std::string> ParaphraseRequests(ojson& example, const WordNet& wn, Rng& rng) {
  std::vector<std::string> protect;
  std::set<std::string> called;
  auto take_turn = [&](const ojson& t) {
    if (t.contains("reasoning") && t["reasoning"].is_string()) CollectQuoted(t["reasoning"].get<std::string>(), protect);
    if (t.contains("answers"))
      for (const ojson& a : t["answers"]) {
        if (a.contains("arguments")) CollectValues(a["arguments"], protect);
        if (a.contains("name") && a["name"].is_string()) called.insert(a["name"].get<std::string>());
      }
    if (t.contains("tool_result")) CollectValues(t["tool_result"], protect);
  };
  take_turn(example);
  if (example.contains("turns"))
    for (const ojson& t : example["turns"]) take_turn(t);
  if (example.contains("system") && example["system"].is_string()) {  // "key: value" lines
    for (const std::string& line : SplitLines(example["system"].get<std::string>())) {
      const size_t colon = line.find(": ");
      if (colon != std::string::npos) protect.push_back(line.substr(colon + 2));
    }
  }
  // Words of the tools the requests must not lean toward.
  std::set<std::string> forbidden;
  if (example.contains("tools"))
    for (const ojson& tool : example["tools"]) {
      if (called.count(tool.value("name", std::string()))) continue;
      for (const std::string& w : SplitIdentifier(tool.value("name", std::string()))) AddWords(w, forbidden);
      AddWords(tool.dump(), forbidden);  // description, parameter names and their descriptions
    }
  std::vector<std::string> out;
  auto paraphrase = [&](ojson& holder) {
    if (!holder.contains("query") || !holder["query"].is_string()) return;
    std::vector<Paraphrase> made;
    holder["query"] = ParaphraseText(holder["query"].get<std::string>(), protect, forbidden, wn, rng, &made);
    for (const Paraphrase& p : made) out.push_back(p.from + " -> " + p.to + (p.hypernym ? " (hypernym)" : ""));
  };
  paraphrase(example);
  if (example.contains("turns"))
    for (ojson& t : example["turns"]) paraphrase(t);
  return out;
}

}  // namespace needle::data
