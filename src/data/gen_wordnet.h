// Lexical variety for generated requests (generate-data --wordnet P): some of
// a request's template verbs and nouns are replaced by a WordNet synonym or
// hypernym ("buy two tickets" -> "purchase two tickets"), so that the words of
// a request differ from the words of the tool that serves it.
//
// It runs on a finished example, after everything else is drawn, and changes
// only the text of its requests (`query`, and the `query` of later turns):
//   - never a value: every span the reasoning quotes ('span' -> param), every
//     argument value and every tool-result value stays as it is, byte for byte;
//   - never toward another tool: a replacement word that any declared tool
//     other than the called ones uses (name, description, parameters) is not
//     offered, so a synonym cannot point at a sibling ("adjust_valve" next to
//     "calibrate_valve") or make a refused request servable;
//   - answers, reasoning, tools and facts are untouched.
// Deterministic: its only randomness is the Rng it is given.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "data/catalogue.h"  // ojson
#include "data/rng.h"        // Rng
#include "data/wordnet.h"    // WordNet

namespace needle::data {

struct Paraphrase {
  std::string from, to;  // the text replaced and its replacement ("lights", "light sources")
  bool hypernym = false;
};

// Replaces up to a few template words of `text`; `protect` lists strings that
// must stay (values), `forbidden` words a replacement may not contain. Appends
// what it did to `made`.
std::string ParaphraseText(const std::string& text, const std::vector<std::string>& protect,
                           const std::set<std::string>& forbidden, const WordNet& wn, Rng& rng,
                           std::vector<Paraphrase>* made);

// Paraphrases every request of an example (SPEC §12 line with `turns`);
// returns the replacements made ("from -> to", as generate-data --meta lists them).
std::vector<std::string> ParaphraseRequests(ojson& example, const WordNet& wn, Rng& rng);

}  // namespace needle::data
