// Procedural tool-calling examples (SPEC §12 JSONL, with the `turns`
// extension of docs/data-format.md). Every example is a pure function of
// (catalogue, seed, split, index): the same inputs give the same bytes.
//
// Kinds: single calls; parallel calls (two in one request, sometimes the same
// tool twice); refusals (off-topic, another domain, a near miss in the same
// group, a value outside the declared enum, a required argument missing);
// extraction of records from passages; multi-turn sessions (tool results fed
// back, lookup-then-act chains, a final [] "done", later requests); invented
// capabilities with random names (to learn reading, not remembering); real
// API schemas (data/schemas) taken as they are; and, with user tools,
// examples for the user's own schemas.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "data/catalogue.h"  // Catalogue, Capability, ToolSpec, Split
#include "data/wordnet.h"    // WordNet

namespace needle::data {

struct ExampleMeta {
  std::string kind;                    // single, parallel, refuse_*, extraction, session, invented, api, user, ...
  std::string domain;                  // domain of the (first) target; "" for off-topic
  std::vector<std::string> caps;       // target capabilities
  std::vector<std::string> templates;  // ids of the catalogue/session templates used
  std::vector<std::string> tools;      // declared tool names
  std::vector<std::string> origins;    // per tool: catalogue | synthetic | invented | user | api
  bool refusal = false;                // the first turn's answer is []
  int calls = 0;                       // calls in the first turn
  int turns = 1;
  std::vector<std::string> paraphrases;  // WordNet replacements in the requests ("buy -> purchase")
};

struct Example {
  ojson json;  // the JSONL object
  ExampleMeta meta;
};

struct GeneratorOptions {
  uint64_t seed = 0;
  Split split = Split::kTrain;
  int max_tools = 8;  // 2..8: tools declared per example (SPEC §10 retrieval puts 5 in context)
  // Every example a session with 6-14 later requests instead of 1-3, so the
  // measured turns come after more history than the 256-token window holds
  // (what a long-running assistant sees).
  bool long_sessions = false;
  // Share of examples whose requests get WordNet synonyms or hypernyms for
  // some template words (gen_wordnet.h); 0 leaves the output as it was
  // without it, byte for byte. >0 needs WordNet's files in wordnet_dir.
  double wordnet = 0;
  std::string wordnet_dir = WordNet::kDefaultDir;
  // Weights of the catalogue's kinds by name, replacing the defaults of
  // kKindMix for the kinds named (ParseKindMix reads "parallel=14,...").
  std::map<std::string, double> kind_mix = {};
};

// The catalogue's kinds as drawn, with their default weights (about 13%
// refusals overall; docs/data-format.md). `api` is 0 when data/schemas is empty.
struct KindWeight {
  const char* name;
  double weight;
};
extern const KindWeight kKindMix[11];

// "parallel=14,extraction=16": kind names of kKindMix, weights >= 0. Throws
// Error naming an unknown kind, a bad weight or a kind given twice.
std::map<std::string, double> ParseKindMix(const std::string& text);

struct Build;  // one example while it is built (generator_internal.h)

class Generator {
 public:
  Generator(const Catalogue& cat, GeneratorOptions opt);
  // Switches to examples for the user's own schemas (an array of
  // {name, description?, parameters}); throws Error naming a bad schema.
  void SetUserTools(const ojson& tools);
  Example Generate(uint64_t index) const;

  const Catalogue& catalogue() const { return cat_; }
  Split split() const { return opt_.split; }

  // Capabilities usable in this split (test-only ones only in test).
  const std::vector<const Capability*>& targets() const { return targets_; }

 private:
  friend struct Build;
  Example Draw(uint64_t index, int draw) const;  // one draw of Generate's
  Example DrawKind(Build& b) const;             // the example of Draw, before paraphrasing
  // One capability and tool for a schema the generator does not synthesise
  // (the user's --tools, the catalogue's API schemas); throws Error at `where`.
  ToolSpec OwnTool(const ojson& tool, const std::string& where, const std::string& origin,
                   const std::string& domain, std::set<std::string>& seen);
  void SetApiTools();  // the catalogue's API schemas this split may declare
  const Catalogue& cat_;
  GeneratorOptions opt_;
  std::vector<const Capability*> targets_;     // with a template in this split
  std::vector<double> target_weights_;         // domain-balanced (1/sqrt of the domain's size), dates x2
  std::vector<double> kind_weights_;           // kKindMix's order, opt_.kind_mix applied
  std::vector<const Capability*> extraction_;  // record schemas with a passage in this split
  std::vector<const Capability*> pool_;        // may be declared (as distractors too)
  std::map<std::string, std::vector<const Capability*>> by_group_, by_domain_;
  std::deque<Capability> user_caps_;           // one capability per user or API tool
  std::vector<ToolSpec> user_tools_;
  std::vector<ToolSpec> api_tools_;            // declarable in this split (its own and, in val/test, train's)
  std::vector<size_t> api_targets_;            // those owned by this split: requests are made for them
  std::shared_ptr<const WordNet> wordnet_;     // loaded when opt_.wordnet > 0
};

// Renders one example in the SPEC §8 prompt format (for token estimates):
// system, user turn with tools, assistant target, and the session turns.
std::string RenderPromptText(const ojson& example);

}  // namespace needle::data
