// Schema composition (and contradictions real tool sets write) rewritten into
// the keywords the grammar compiles (tool_grammar.h), before anything reads a
// tool's schema: the grammar, the prompt, the call rules and retrieval then
// all see one plain schema.
//
// Tool sets written by code use composition: Pydantic and the OpenAI SDK
// emit `$defs` + `$ref` for nested models and `anyOf: [X, {"type": "null"}]`
// for optional fields; OpenAPI 3.0 descriptions say `nullable: true`; older
// generators wrap a reference in a one-element `allOf`. What is rewritten:
//   - `$ref` to a JSON pointer inside the tool's parameters ("#/$defs/Name",
//     "#/definitions/Name", "#/properties/a") is replaced by its target, the
//     reference's own annotations (description, ...) kept; `$defs` and
//     `definitions` are then dropped. A reference that recurses, leaves the
//     document or does not resolve admits any value there, with a warning.
//   - `allOf`: the parts' keywords joined into one schema (required lists and
//     properties merged); a keyword two parts give different values keeps the
//     first, with a warning.
//   - `anyOf` / `oneOf` whose branches each have one type, no two the same
//     (integer and number count as the same), become one schema with a type
//     array: each type keeps its own keywords, which do not act on the other
//     types. An enum in one branch beside only null branches gains null.
//     Branches that share a type or two enums stay as they are (the grammar
//     warns and ignores the keyword, as before).
//   - `nullable: true` adds "null" to the type (and to an enum).
//   - An enum none of whose values has the declared type (JSON Schema would
//     admit nothing; real tool sets write {"type": "boolean", "enum":
//     ["True", "False", "dontcare"]}) is read for what it means, with a
//     warning: an array's scalar enum lists its items' values; otherwise each
//     value in a declared type it spells exactly ("2" as 2, "True" as true, 7
//     as "7"), else as written, the type widened to what the enum holds.
// Errors: more than kMaxComposedNodes schema objects after inlining
// (references used many times in many places) is Error(kUnsupported).
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace needle::grammar {

inline constexpr size_t kMaxComposedNodes = 20000;

// Whether `v` is a value of JSON Schema type `t` (an integral float is an
// integer); unknown type names hold no value. For json and ordered_json alike.
template <class Json>
bool HasSchemaType(const Json& v, std::string_view t) {
  if (t == "string") return v.is_string();
  if (t == "integer")
    return v.is_number_integer() || v.is_number_unsigned() ||
           (v.is_number_float() && std::floor(v.template get<double>()) == v.template get<double>());
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  return false;
}

// The tools array with each tool's "parameters" rewritten as above; other
// fields and malformed entries are left for the compiler to judge. Warnings
// name the tool and path as the compiler's do.
nlohmann::ordered_json ComposeToolSchemas(const nlohmann::ordered_json& tools, std::vector<std::string>* warnings);

}  // namespace needle::grammar
