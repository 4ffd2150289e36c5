// General English text for a language stage before the tool-calling data
// (issue J 2: "a short general-English stage ... kept only if the fresh blind
// set gains"). Read offline from what Debian installs under open licences:
//   - WordNet 3.0's glosses (wordnet-base, /usr/share/wordnet/data.*; the
//     WordNet licence, free to use and redistribute with its notice): one text
//     per synset, "lemma, other lemma: definition; \"example\"";
//   - package descriptions in Debian's control format (/var/lib/dpkg/status,
//     or `apt-cache dumpavail` saved to a file): "name: synopsis. long
//     description", the paragraphs joined.
// Nothing here is vendored: the texts are read where the system keeps them.
// `needle generate-data --prose` writes them as {"text": ...} lines, which
// the trainer reads as plain text with every token a target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace needle::data {

// Every synset with a gloss in data.noun, data.verb, data.adj and data.adv
// under `dir`, in file order. Throws Error(kIo) naming a missing file.
std::vector<std::string> WordNetGlossTexts(const std::string& dir);

// Every stanza with a Description (or Description-en) in a file of Debian's
// control format, in file order; stanzas without one are skipped. Throws
// Error(kIo) when the file cannot be read.
std::vector<std::string> PackageDescriptionTexts(const std::string& path);

// `count` texts drawn from `texts` (each once while they last, then again),
// in an order fixed by `seed`, duplicates of the same text dropped first.
std::vector<std::string> DrawProse(std::vector<std::string> texts, uint64_t count, uint64_t seed);

}  // namespace needle::data
