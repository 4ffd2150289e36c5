// Decontamination (issue J, item 1g): no request of an evaluation set is
// generated. The generator reads the requests of every file under the data
// directory's eval/ (the hand-written sets and the BFCL files measured on),
// normalised, and draws an example again when one of its requests is among
// them. Nothing else of those files reaches the generator.
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace needle::data {

using ojson = nlohmann::ordered_json;

// Lower-cased, runs of anything but letters and digits as one space: requests
// that differ only in case or punctuation are the same request.
std::string NormalizedRequest(const std::string& s);

// The normalised requests of every .json / .jsonl file under `eval_dir`
// (`query`, the `turns`' queries, BFCL's user messages; possible_answer/ is
// ground truth and skipped). A missing folder gives none; *files counts the
// files read.
std::set<std::string> EvaluationRequests(const std::string& eval_dir, size_t* files = nullptr);

// Whether the example's first request or a later turn's is in `requests`.
bool AsksAnyOf(const ojson& example, const std::set<std::string>& requests);

}  // namespace needle::data
