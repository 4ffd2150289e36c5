#include "text/stop_words.h"

#include <iterator>

namespace needle::text {
namespace {

struct StopWord {
  std::string_view word;
  uint8_t uses;
};

constexpr StopWord kStopWords[] = {
    {"a", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"all", kNoToolSignal},
    {"also", kNeverAValue},
    {"an", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"and", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"any", kNoToolSignal},
    {"are", kNoToolSignal | kNeverAValue},
    {"as", kNoToolSignal | kNeverAValue},
    {"at", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"be", kNoToolSignal | kNeverAValue},
    {"but", kNeverAValue},
    {"by", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"can", kNoToolSignal | kNeverAValue},
    {"could", kNoToolSignal | kNeverAValue},
    {"do", kNoToolSignal | kNeverAValue},
    {"for", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"from", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"get", kNoToolSignal},
    {"has", kNeverAValue},
    {"have", kNeverAValue},
    {"hey", kNoToolSignal | kNeverAValue},
    {"i", kNoToolSignal | kNeverAValue},
    {"i'm", kNoToolSignal | kNeverAValue},
    {"if", kNeverAValue},
    {"in", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"is", kNoToolSignal | kNeverAValue},
    {"it", kNoToolSignal | kNeverAValue},
    {"it's", kNoToolSignal | kNeverAValue},
    {"its", kNeverAValue},
    {"just", kNoToolSignal | kNeverAValue},
    {"me", kNoToolSignal | kSpanFiller},
    {"my", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"need", kNoToolSignal | kNeverAValue},
    {"now", kNoToolSignal},
    {"of", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"ok", kNoToolSignal | kNeverAValue},
    {"okay", kNoToolSignal | kNeverAValue},
    {"on", kNoToolSignal | kSpanFiller},
    {"or", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"our", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"please", kNoToolSignal | kNeverAValue},
    {"set", kNoToolSignal},
    {"so", kNoToolSignal | kNeverAValue},
    {"some", kNoToolSignal},
    {"thank", kNoToolSignal | kNeverAValue},
    {"thanks", kNoToolSignal | kNeverAValue},
    {"that", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"the", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"then", kNeverAValue},
    {"there", kNoToolSignal | kNeverAValue},
    {"this", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"to", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"up", kNoToolSignal},
    {"us", kNoToolSignal | kNeverAValue},
    {"want", kNoToolSignal | kNeverAValue},
    {"was", kNeverAValue},
    {"we", kNoToolSignal | kNeverAValue},
    {"were", kNeverAValue},
    {"what", kNoToolSignal | kNeverAValue},
    {"which", kNoToolSignal | kNeverAValue},
    {"will", kNoToolSignal | kNeverAValue},
    {"with", kNoToolSignal | kNeverAValue | kSpanFiller},
    {"would", kNoToolSignal | kNeverAValue},
    {"you", kNoToolSignal | kNeverAValue},
    {"your", kNoToolSignal | kNeverAValue | kSpanFiller},
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
