// An OpenAI chat-completions request read into what a Needle session does
// with it: the tools, the system facts and pinned text, the turns to replay
// (a stateless client sends the whole conversation each time) and the turn
// to generate, and what the caller asks of the call (tool_choice,
// parallel_tool_calls, max_tokens, stream). Everything the request gets
// wrong is an ApiError naming the field, never a guess.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace needle::server {

// An error the client sees as OpenAI's {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "invalid_request_error")
      : std::runtime_error(std::move(message)), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;
  nlohmann::ordered_json ToJson() const;
};

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

// One turn: the user's request or the results of the previous calls (JSON
// text), and, for a replayed turn, the assistant's calls ([] for an answer
// without one).
struct ChatTurn {
  bool tool_result = false;
  std::string text;
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
};

struct ChatRequest {
  std::string model;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // [{"name", "description", "parameters"}]
  nlohmann::ordered_json facts;                                     // system facts (SPEC §10 keys); null: none
  std::vector<std::string> pins;                                    // system text that is not facts
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string named_tool;  // kNamed
  bool parallel_tool_calls = true;
  uint32_t max_tokens = 0;  // 0: the session's option
  bool stream = false, include_usage = false;
  bool needle_cache = false;  // our extension: the response lists the sink and window tokens (the playground)
  std::vector<ChatTurn> history;  // replayed, oldest first
  ChatTurn last;                  // generated
};

// Reads a /v1/chat/completions body. Throws ApiError (400) naming the field.
ChatRequest ParseChatRequest(std::string_view body);

// OpenAI's tools ([{"type": "function", "function": {...}}]) as declarations;
// bare declarations are taken too. Unsupported schema keywords are an
// ApiError naming the tool and keyword (the grammar would ignore them).
nlohmann::ordered_json ParseTools(const nlohmann::json& tools, const std::string& param = "tools");

// Whether system text is facts ("key: value" lines of SPEC §10's keys, or a
// JSON object of them): then the facts, else null (the text is pinned).
nlohmann::ordered_json SystemFactsOf(std::string_view text);

// A JSON body, or ApiError 400 "malformed JSON".
nlohmann::json ParseBody(std::string_view body);

}  // namespace needle::server
