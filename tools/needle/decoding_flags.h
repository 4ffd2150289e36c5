// The session's options (agent/session_options.h, one table) as command-line
// flags: one list for `needle run`, `needle chat` and `needle eval`, made
// from the table, so the commands, the C ABI and the docs cannot drift apart.
#pragma once

#include <string>
#include <vector>

#include "agent/session_options.h"
#include "args.h"

namespace needle::cli {

// --options FILE|JSON, then one flag per option: --name-with-dashes VALUE, or
// for a boolean --name (off by default) / --no-name (on by default); the help
// is the table's, with its default.
std::vector<FlagSpec> DecodingFlags();
// Sets the options --options and the flags name (the flags after --options);
// the others keep their values. Throws Error naming the flag.
void ReadDecodingFlags(const Args& args, SessionOptions& o);
// An option's flag name: "max_new_tokens" -> "max-new-tokens".
std::string FlagName(std::string_view option);

}  // namespace needle::cli
