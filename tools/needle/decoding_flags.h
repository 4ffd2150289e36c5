// The agent's decoding settings (SessionOptions) as command-line flags: one
// list for `needle run`, `needle chat` and `needle eval`, so the commands
// cannot drift apart.
#pragma once

#include <vector>

#include "agent/session.h"
#include "args.h"

namespace needle::cli {

// --max-new-tokens, --max-think-tokens and every decoding preference and rule.
std::vector<FlagSpec> DecodingFlags();
// Sets the options those flags name; the others keep their values (the defaults).
void ReadDecodingFlags(const Args& args, SessionOptions& o);

}  // namespace needle::cli
