// The post-generation check of a calls array against the declared tools
// (SPEC §9: "numeric bounds the grammar cannot enforce byte by byte are
// checked after generation and reported as an error envelope, not silently
// passed"). It checks everything the grammar admits, by the same compiled
// schemas, so it is also the safety net for the decoder: uniqueItems, a 29
// February outside a leap year, bounds and multipleOf (exact in the grammar,
// rechecked here in doubles as a validator reads them), minLength where a
// large pattern automaton made it post-check only, duplicate keys, and any
// text that did not come through the grammar at all.
//
// Semantics follow JSON Schema with our documented choices: patterns match
// the whole string, object keys must be declared, integers may be written as
// integral floats (1.0) though the grammar only emits plain digits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "grammar/tool_grammar.h"  // ToolGrammar

namespace needle::grammar {

enum class ViolationKind {
  kJson,        // not JSON (or duplicate keys)
  kShape,       // not an array of {"name": string, "arguments": object}
  kName,        // undeclared tool
  kKey,         // undeclared argument key
  kRequired,    // a required key is missing
  kType,        // wrong JSON type
  kEnum,        // not one of enum / not const
  kBound,       // minimum / maximum / exclusiveMinimum / exclusiveMaximum
  kMultipleOf,  // multipleOf
  kLength,      // minLength / maxLength
  kPattern,     // pattern
  kFormat,      // format
  kItems,       // minItems / maxItems
  kUnique,      // uniqueItems
};
const char* ViolationKindName(ViolationKind kind);  // "bound", "unique", ...

struct CallViolation {
  ViolationKind kind;
  std::string path;     // e.g. "[0].arguments.brightness"
  std::string message;  // "[0].arguments.brightness: 120 is above maximum 100"
};

// The first violation in document order, or nullopt when the calls are valid.
std::optional<CallViolation> ValidateCall(std::string_view calls_json, const ToolGrammar& grammar);
// The same against a tools declaration (compiled first; throws Error for bad tools).
std::optional<CallViolation> ValidateCall(std::string_view calls_json, std::string_view tools_json);

}  // namespace needle::grammar
