// The one list of English function words, each tagged with the uses it
// serves (a word may serve several):
//   kNoToolSignal  says nothing about which tool a request means (retrieval's
//                  lexical score skips it: "get", "set", "please");
//   kSpanFiller    two plan spans may share it without saying the same thing
//                  ("the workbench" after "the small wrench").
// Lower-case ASCII; lookups fold ASCII case.
#pragma once

#include <cstdint>
#include <string_view>

namespace needle::text {

enum StopWordUse : uint8_t { kNoToolSignal = 1, kSpanFiller = 4 };

// Whether `word` is in the list with `use` (case folded).
bool IsStopWord(std::string_view word, StopWordUse use);

}  // namespace needle::text
