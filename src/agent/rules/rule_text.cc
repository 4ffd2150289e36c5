#include "agent/rules/rule_text.h"

#include "grammar/copy_source.h"  // CopySource::Fold

namespace needle::rules {

bool EqualFolded(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (grammar::CopySource::Fold(uint8_t(a[i])) != grammar::CopySource::Fold(uint8_t(b[i]))) return false;
  }
  return true;
}

int32_t OpenFreeString(const grammar::GrammarMatcher& matcher, bool* opened) {
  const int32_t node = matcher.OpenString(opened);
  if (node < 0) return -1;
  const grammar::Node& n = matcher.grammar().nodes[size_t(node)];
  return n.format.empty() && n.pattern.empty() && n.values.empty() ? node : -1;
}

bool ArgumentValuesSoFar(std::string_view calls, std::vector<std::pair<std::string_view, std::string_view>>& values,
                         std::string_view* content, std::string_view* key) {
  values.clear();
  *key = {};
  int depth = 0;
  bool in_string = false, escaped = false, value_string = false, after_colon = false;
  size_t start = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const char c = calls[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (value_string) {
          values.emplace_back(*key, calls.substr(start, i - start));
        } else if (depth == 3) {
          *key = calls.substr(start, i - start);
        }
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true, start = i + 1, value_string = after_colon && depth == 3; break;
      case '{': case '[':
        if (++depth == 2) values.clear();  // the next call
        after_colon = false;
        break;
      case '}': case ']': --depth, after_colon = false; break;
      case ':': after_colon = true; break;
      case ',': after_colon = false; break;
      default: break;
    }
  }
  if (in_string) {
    *content = calls.substr(start);
    return value_string && !escaped;
  }
  *content = {};
  return after_colon && depth == 3;
}

}  // namespace needle::rules
