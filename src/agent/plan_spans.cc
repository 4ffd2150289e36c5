// The quoted spans of the reasoning's plan ("name: 'span' -> key"):
// ReasoningSpan follows the open one in the copy source, RepeatedSpanCheck
// keeps a new span from repeating an earlier one of the same call's plan.
#include <algorithm>

#include "agent/rules/rule_text.h"  // EqualFolded
#include "agent/session.h"
#include "text/stop_words.h"

namespace needle {

void ReasoningSpan::Feed(const grammar::CopySource& source, std::string_view bytes) {
  for (char c : bytes) {
    if (!open) {
      if (c == '\'' && prev == ' ') {
        open = true, nonempty = false, state = grammar::CopySource::kRoot;
      } else if (prev == '\'' && nonempty && grammar::CopySource::IsWordByte(uint8_t(c))) {
        open = true, state = source.Step(source.Step(state, uint8_t('\'')), uint8_t(c));  // an apostrophe
      }
    } else if (c == '\'') {
      open = false;
    } else {
      state = source.Step(state, uint8_t(c));
      nonempty = true;
    }
    prev = c;
  }
}

namespace {

using rules::EqualFolded;

// Up to kMax words of `text` (runs of word bytes); false when it has more.
struct SpanWords {
  static constexpr size_t kMax = 24;
  std::string_view at[kMax];
  size_t n = 0;
  bool Split(std::string_view text) {
    n = 0;
    for (size_t i = 0; i < text.size();) {
      if (!grammar::CopySource::IsWordByte(uint8_t(text[i]))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && grammar::CopySource::IsWordByte(uint8_t(text[j]))) ++j;
      if (n == kMax) return false;
      at[n++] = text.substr(i, j - i);
      i = j;
    }
    return true;
  }
  // Are a's words a contiguous run of b's?
  static bool Inside(const SpanWords& a, const SpanWords& b) {
    if (a.n == 0 || a.n > b.n) return false;
    for (size_t s = 0; s + a.n <= b.n; ++s) {
      size_t k = 0;
      while (k < a.n && EqualFolded(a.at[k], b.at[s + k])) ++k;
      if (k == a.n) return true;
    }
    return false;
  }
};

// Words a span may share with another without saying the same thing ("the
// workbench" after "the small wrench"). (A word still being written counts
// as what it is so far: "th" is content, "the" is not.)
bool IsFunctionWord(std::string_view w) { return text::IsStopWord(w, text::kSpanFiller); }

}  // namespace

bool RepeatedSpanCheck::ReadSpans(std::string_view segment, bool current, bool* open_at_end) {
  // The spans as ReasoningSpan reads them: open at a quote after a space,
  // closed at the next quote unless a word byte follows it (an apostrophe).
  const size_t first = spans_;
  size_t start = 0;
  bool open = false;
  char prev = ' ';
  for (size_t i = 0; i < segment.size(); ++i) {
    const char c = segment[i];
    if (!open) {
      if (c == '\'' && prev == ' ') {
        open = true, start = i + 1;
      } else if (prev == '\'' && spans_ > first && closed_[spans_ - 1].data() + closed_[spans_ - 1].size() == segment.data() + i - 1 &&
                 grammar::CopySource::IsWordByte(uint8_t(c))) {
        open = true, start = size_t(closed_[--spans_].data() - segment.data());  // an apostrophe: the span goes on
      }
    } else if (c == '\'') {
      open = false;
      if (spans_ == kMaxSpans) return false;
      closed_[spans_++] = segment.substr(start, i - start);
    }
    prev = c;
  }
  if (current) {
    open_ = open ? segment.substr(start) : std::string_view();
    *open_at_end = open;
  }
  return true;
}

namespace {

// The tool a plan segment names ("name: ..." or " name: ...").
std::string_view SegmentTool(std::string_view segment) {
  while (!segment.empty() && segment[0] == ' ') segment.remove_prefix(1);
  const size_t colon = segment.find(": ");
  return colon == std::string_view::npos ? std::string_view() : segment.substr(0, colon);
}

}  // namespace

bool RepeatedSpanCheck::Read(std::string_view written) {
  // The current call's segment, and the earlier segments that plan the same
  // tool: a second call of it says other values ("setPace: 'slow' -> pace
  // SLOW | setPace: 'slow' -> pace SLOW" is one call planned twice).
  const size_t bar = written.rfind(" |");
  const std::string_view segment = bar == std::string_view::npos ? written : written.substr(bar + 2);
  const std::string_view tool = SegmentTool(segment);
  spans_ = 0;
  bool open = false;
  for (size_t from = 0; from <= written.size();) {
    size_t end = written.find(" |", from);
    if (end == std::string_view::npos) end = written.size();
    const std::string_view part = written.substr(from, end - from);
    const bool current = end == written.size();
    if (current || (!tool.empty() && SegmentTool(part) == tool)) {
      if (!ReadSpans(part, current, &open)) return false;
    }
    from = end + 2;
  }
  open_now_ = open;
  // An open span so far off every earlier one stays off them until it closes.
  // (Function words alone, "the", may still go on along one.)
  SpanWords words;
  bool content = false;
  if (open && words.Split(open_)) {
    for (size_t k = 0; k < words.n && !content; ++k) content = !IsFunctionWord(words.at[k]);
  }
  runs_along_ = open && spans_ > 0 && (!content || Repeats("", false));
  return spans_ > 0;
}

bool RepeatedSpanCheck::TokenRepeats(std::string_view bytes, char prev) const {
  size_t from = 0;
  if (!open_now_) {
    // A token that opens a span (a quote after a space) starts a new one.
    size_t q = 0;
    for (; q < bytes.size(); ++q)
      if (bytes[q] == '\'' && (q == 0 ? prev : bytes[q - 1]) == ' ') break;
    if (q == bytes.size()) return false;
    from = q + 1;
  }
  const std::string_view rest = bytes.substr(from);
  const size_t q = rest.find('\'');
  const bool closes = q != std::string_view::npos && !(q + 1 < rest.size() && grammar::CopySource::IsWordByte(uint8_t(rest[q + 1])));
  return Repeats(closes ? rest.substr(0, q) : rest, closes, !open_now_);
}

bool RepeatedSpanCheck::Repeats(std::string_view more, bool closes, bool fresh) const {
  const std::string_view open = fresh ? std::string_view() : open_;
  char text[256];  // the open span and `more` (a bounded copy: no allocation)
  if (open.size() + more.size() > sizeof(text)) return false;
  if (!open.empty()) std::memcpy(text, open.data(), open.size());  // (an empty view's data() may be null)
  if (!more.empty()) std::memcpy(text + open.size(), more.data(), more.size());
  const std::string_view span_text(text, open.size() + more.size());
  SpanWords span, earlier;
  if (!span.Split(span_text) || span.n == 0) return false;
  // The last word may go on unless the span closes or a non-word byte ends it.
  const bool partial = !closes && grammar::CopySource::IsWordByte(uint8_t(span_text.back()));
  bool content = false;
  for (size_t k = 0; k < span.n && !content; ++k) content = !IsFunctionWord(span.at[k]);
  for (size_t e = 0; e < spans_; ++e) {
    if (!earlier.Split(closed_[e]) || earlier.n == 0) continue;
    // The span so far runs along the earlier one's words (its last word a
    // prefix of theirs while it may go on) ...
    for (size_t at = 0; content && at + span.n <= earlier.n; ++at) {
      size_t k = 0;
      for (; k < span.n; ++k) {
        const std::string_view w = span.at[k], v = earlier.at[at + k];
        if (!(partial && k + 1 == span.n ? w.size() <= v.size() && EqualFolded(w, v.substr(0, w.size())) : EqualFolded(w, v))) break;
      }
      if (k == span.n) return true;
    }
    // ... or, closed, holds them.
    if (closes && SpanWords::Inside(earlier, span)) {
      for (size_t k = 0; k < earlier.n; ++k)
        if (!IsFunctionWord(earlier.at[k])) return true;
    }
  }
  return false;
}

}  // namespace needle
