// Tool retrieval (SPEC §10): tool schemas embedded once by the contrastive
// head, queries embedded per turn, cosine similarity ranks the tools.
//
// What is embedded (the trainer's contrastive stage uses the same texts):
// a query is BOS + its text; a tool is BOS + its compact JSON (RenderToolsJson
// of that one tool, without the array brackets). Each is fed through the
// model on its own (no sinks) and pooled by the head's probes.
//
// The index persists embeddings keyed by a fingerprint of (tool JSON, model),
// so a changed schema or another model re-embeds only what changed. File:
// JSON {"format": "needle-tool-index", "version": 1, "dim": D,
//       "entries": {"<16 hex digits>": [D floats], ...}}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace needle {

std::string RetrievalToolText(std::string_view tool_json);  // the compact JSON of one tool

// Lexical evidence beside the learned embedding: the words a request shares
// with a tool's name, description, parameter names and descriptions and enum
// values. Words are split at case changes, digits-only words and common
// function words dropped, plurals and -ing/-ed endings stripped, lowercased,
// each kept once; verbs naming one action are one term ("stop", "end",
// "halt" -> "~stop"; "show", "list", "view" -> "~show"; "release", "open"
// -> "~open"; "advance", "ahead", "forward" -> "~forward"; ...). Why: a
// small head ranks tools it never saw no better than word overlap does
// (measured in docs/agent.md), and the two err on different requests.
std::vector<std::string> LexicalTerms(std::string_view text);

// The index of the one string value in `values` (an enum's; 3 bytes or more)
// that `request` says as a whole phrase, word-bounded and case aside
// ("weather in Chicago in fahrenheit", [celsius, fahrenheit] -> 1); -1 when
// none or several are said.
int SaidEnumValue(std::string_view request, const std::vector<nlohmann::json>& values);
// A request word the reasoning's plan gives an enum key verbatim although
// the key does not list it ("add a yoga workout" planned "log_workout:
// 'yoga' -> type yoga" when type is one of run, walk, swim): the request
// asks for a value the tool does not have, and the generator's answer to
// that is a refusal ("'yoga' is not an allowed type of log_workout (run,
// walk, swim)"), which this returns; "" when the plan is not one call's
// ("name: ..."), or each of its enum keys takes a listed value, a value
// other than its span (the model mapping a word onto a value: "'shut' ->
// action close"), a number, or a span sharing a word with a listed value
// (LexicalTerms: "'low' -> priority low" with priority_low, "'cycle'" with
// cycling).
std::string UnlistedEnumValue(std::string_view reasoning, const nlohmann::ordered_json& tools);
// The terms of one tool schema ({"name", "description", "parameters"}),
// nested properties and array items included.
std::vector<std::string> ToolLexicalTerms(const nlohmann::ordered_json& tool);
// Per tool: the catalogue-IDF-weighted share of the query's terms that the
// tool matches, in [0, 1]. A query term matches a tool term that equals it
// or, both at least 4 letters, is a prefix of it or has it as prefix
// ("light"/"lights", "temp"/"temperature"). A term no tool has weighs
// log(1 + 2(n + 1)), so the shares stay comparable across queries.
std::vector<float> LexicalScores(const std::vector<std::string>& query_terms,
                                 const std::vector<std::vector<std::string>>& tool_terms);

// Tools that act on a record by its identifier ("play_track(track_id)",
// "message(recipient_id)") are called after a lookup returned one, or when
// the user gives one; a request that says none ("play Volare") wants the
// lookup. TakesAnIdentifier: the tool requires a string argument (no enum)
// whose name ends in the word id or uid ("id", "trackId", "place_id",
// "deviceID"; not "paid", "android"). SaysAnIdentifier: the text holds a
// token that could be one — a run of letters, digits, '_' or '-' of at
// least 5 bytes with a digit in it ("c_89094", "trk_224bb2", "7208409",
// "1Z755839FT"; not "Z25", "2025", "Volare").
bool TakesAnIdentifier(const nlohmann::ordered_json& tool);
bool SaysAnIdentifier(std::string_view text);
// A key naming an identifier: its last word (after '_', '-', '.' or a
// lower-to-upper change) is id or uid.
bool NamesAnIdentifier(std::string_view key);
// The identifier of the record a lookup's result holds that the request
// names: among the objects of the result's arrays (depth 3 at most) that
// have an identifier ("id", "uid", "ref" or a key NamesAnIdentifier; a
// string or an integer), the one whose other string fields share the most
// of the request's words (LexicalScores over its LexicalTerms), when one
// scores above all the others; "" otherwise. "text Katerina Kowalski" and
// [{"id":"c_86215","name":"Ava Ricci"},{"id":"c_856","name":"Katerina
// Kowalski"}] -> "c_856".
std::string RecordNamedBy(const nlohmann::ordered_json& result, const std::vector<std::string>& request_terms);

uint64_t ToolFingerprint(std::string_view tool_json, uint64_t model_fingerprint);

class ToolIndex {
 public:
  // Reads the file if it exists (a missing file is an empty index; a corrupt
  // one is an Error(kInvalidJson) naming it).
  void Load(const std::string& path, uint32_t dim);
  void Save(const std::string& path) const;  // atomic replace

  const std::vector<float>* Find(uint64_t key) const;
  void Put(uint64_t key, std::vector<float> embedding);
  size_t size() const { return entries_.size(); }
  bool dirty() const { return dirty_; }

 private:
  uint32_t dim_ = 0;
  std::unordered_map<uint64_t, std::vector<float>> entries_;
  bool dirty_ = false;
};

}  // namespace needle
