// A turn's envelope as OpenAI's chat completion: the message with its
// tool_calls (each with a fresh, unique id), finish_reason, usage, and our
// envelope's extra fields under "needle" (confidence, type, reasoning,
// warnings, speeds); or as the server-sent events of a streamed one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/envelope.h"

namespace needle::server {

struct CompletionMeta {
  std::string id;     // "chatcmpl-..."
  std::string model;  // the served model's name
  int64_t created = 0;
  std::vector<std::string> call_ids;  // one per call of the envelope
};

// "chatcmpl-" or "call_" and 24 random hex digits (a process-wide generator;
// ids never repeat within a run).
std::string NewId(const char* prefix);
CompletionMeta NewCompletionMeta(const std::string& model, size_t calls);

nlohmann::ordered_json CompletionJson(const Envelope& env, const CompletionMeta& meta);

// The events of a streamed completion, each "data: {...}\n\n", ending with
// "data: [DONE]\n\n": the role; per call its id, type and name once, then
// its arguments in fragments, keyed by index; the finish_reason; the usage
// when asked for.
std::vector<std::string> CompletionEvents(const Envelope& env, const CompletionMeta& meta, bool include_usage);

}  // namespace needle::server
