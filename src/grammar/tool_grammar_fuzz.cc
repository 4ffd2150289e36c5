// libFuzzer target: tools JSON and its schemas through the grammar compiler,
// then bytes through the matcher. Input: the tools JSON, a NUL, then the
// bytes to feed. Any tools text is compiled or rejected with needle::Error;
// whatever the matcher accepts as a complete array of calls is valid JSON
// (the grammar's format guarantee), and the post-check runs on it without
// crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "grammar/matcher.h"
#include "grammar/tool_grammar.h"
#include "grammar/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view tools = input.substr(0, split);
  const std::string_view feed = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  std::shared_ptr<const needle::grammar::ToolGrammar> grammar;
  try {
    grammar = needle::grammar::ToolGrammar::Compile(tools);
  } catch (const needle::Error&) {
    return 0;
  }
  needle::grammar::GrammarMatcher m(grammar);
  std::string accepted;
  for (const char c : feed) {
    if (m.AcceptByte(static_cast<uint8_t>(c))) accepted.push_back(c);
    if (m.IsComplete() && !accepted.empty()) break;
  }
  if (m.IsComplete() && !accepted.empty()) {
    if (!nlohmann::json::accept(accepted)) std::abort();  // the grammar let through text that is not JSON
    (void)needle::grammar::ValidateCall(accepted, *grammar);
  }
  return 0;
}
