#include "text/stop_words.h"

#include <iterator>

namespace needle::text {
namespace {

struct StopWord {
  std::string_view word;
  uint8_t uses;
};

constexpr StopWord kStopWords[] = {
    {"a", kNoToolSignal | kSpanFiller},
    {"all", kNoToolSignal},
    {"an", kNoToolSignal | kSpanFiller},
    {"and", kNoToolSignal | kSpanFiller},
    {"any", kNoToolSignal},
    {"are", kNoToolSignal},
    {"as", kNoToolSignal},
    {"at", kNoToolSignal | kSpanFiller},
    {"be", kNoToolSignal},
    {"by", kNoToolSignal | kSpanFiller},
    {"can", kNoToolSignal},
    {"could", kNoToolSignal},
    {"do", kNoToolSignal},
    {"for", kNoToolSignal | kSpanFiller},
    {"from", kNoToolSignal | kSpanFiller},
    {"get", kNoToolSignal},
    {"hey", kNoToolSignal},
    {"i", kNoToolSignal},
    {"i'm", kNoToolSignal},
    {"in", kNoToolSignal | kSpanFiller},
    {"is", kNoToolSignal},
    {"it", kNoToolSignal},
    {"it's", kNoToolSignal},
    {"just", kNoToolSignal},
    {"me", kNoToolSignal | kSpanFiller},
    {"my", kNoToolSignal | kSpanFiller},
    {"need", kNoToolSignal},
    {"now", kNoToolSignal},
    {"of", kNoToolSignal | kSpanFiller},
    {"ok", kNoToolSignal},
    {"okay", kNoToolSignal},
    {"on", kNoToolSignal | kSpanFiller},
    {"or", kNoToolSignal | kSpanFiller},
    {"our", kNoToolSignal | kSpanFiller},
    {"please", kNoToolSignal},
    {"set", kNoToolSignal},
    {"so", kNoToolSignal},
    {"some", kNoToolSignal},
    {"thank", kNoToolSignal},
    {"thanks", kNoToolSignal},
    {"that", kNoToolSignal | kSpanFiller},
    {"the", kNoToolSignal | kSpanFiller},
    {"there", kNoToolSignal},
    {"this", kNoToolSignal | kSpanFiller},
    {"to", kNoToolSignal | kSpanFiller},
    {"up", kNoToolSignal},
    {"us", kNoToolSignal},
    {"want", kNoToolSignal},
    {"we", kNoToolSignal},
    {"what", kNoToolSignal},
    {"which", kNoToolSignal},
    {"will", kNoToolSignal},
    {"with", kNoToolSignal | kSpanFiller},
    {"would", kNoToolSignal},
    {"you", kNoToolSignal},
    {"your", kNoToolSignal | kSpanFiller},
};

bool EqualFolded(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char c = a[i] >= 'A' && a[i] <= 'Z' ? char(a[i] - 'A' + 'a') : a[i];
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

bool IsStopWord(std::string_view word, StopWordUse use) {
  for (const StopWord& s : kStopWords) {
    if ((s.uses & use) && EqualFolded(word, s.word)) return true;
  }
  return false;
}

}  // namespace needle::text
