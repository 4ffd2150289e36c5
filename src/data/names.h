// Synthesised tool spellings: for a capability, a fresh tool name drawn from
// a large space (verb and object synonyms, vendor/app prefixes, abbreviations,
// snake/camel/Pascal/kebab/dotted case, occasionally an opaque id such as
// `tool_17` with a good description), fresh parameter names and descriptions,
// a representation per argument (units, formats, booleans) and re-spelled enum
// values. The split owns part of the name space: a synthesised tool name is
// used only in the split its hash bucket names (strict), and never equals a
// catalogue spelling.
#pragma once

#include <set>
#include <string>

#include "data/catalogue.h"  // Catalogue, Capability, ToolSpec
#include "data/rng.h"        // Rng
#include "data/words.h"      // CaseStyle

namespace needle::data {

// The split a synthesised tool name belongs to (15% test, 10% val, 75% train).
Split NameBucket(const std::string& tool_name);

// A new spelling of `cap`. `taken` holds the tool names already in the example.
ToolSpec SynthesizeSpelling(const Capability& cap, const Catalogue& cat, Split split, Rng& rng,
                            const std::set<std::string>& taken);

// Builds the parameters schema and bindings for the given slots with the
// synthesis rules (used for invented capabilities too).
void SynthesizeParams(ToolSpec& tool, const std::vector<SlotDef>& slots, const Catalogue& cat, Split split, Rng& rng,
                      CaseStyle tool_style, const std::vector<std::string>& object_words);

// Humanised words of an identifier: "maxSpeedKmh" -> "max speed kmh".
std::string HumanizeName(const std::string& id);

}  // namespace needle::data
