// A validator for the JSON Schema subset of SPEC §9 (type, enum, const,
// minimum/maximum and their exclusive forms, multipleOf, minLength/maxLength,
// pattern, format date|time|date-time|email|uri, items, minItems/maxItems,
// uniqueItems, properties, required) — the quality gate of the generated data
// and a reference for what the constrained decoder must admit. Object keys
// must be declared properties (as the grammar admits them).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace needle::data {

using ojson = nlohmann::ordered_json;

// Problems of `value` against `schema` (empty = valid); `path` names the value.
std::vector<std::string> ValidateValue(const ojson& value, const ojson& schema, const std::string& path);
// Problems of a calls array against the declared tools: each call an object
// {"name", "arguments"}, the name declared, argument keys declared, required
// keys present, every value valid.
std::vector<std::string> ValidateCalls(const ojson& calls, const ojson& tools);
// Format checks (our forms: time HH:MM[:SS], date-time YYYY-MM-DDTHH:MM[:SS][Z|+HH:MM]).
bool IsFormat(const std::string& format, const std::string& s);

}  // namespace needle::data
