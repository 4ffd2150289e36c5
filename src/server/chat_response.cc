#include "server/chat_response.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>

namespace needle::server {
namespace {

using OJson = nlohmann::ordered_json;
constexpr size_t kArgumentFragment = 24;  // bytes of arguments per streamed delta

std::string Arguments(const OJson& call) {
  return call.value("arguments", OJson::object()).dump(-1, ' ', false, OJson::error_handler_t::replace);
}

OJson Usage(const Envelope& env) {
  return {{"prompt_tokens", env.prefill_tokens},
          {"completion_tokens", env.decode_tokens},
          {"total_tokens", env.prefill_tokens + env.decode_tokens}};
}

OJson NeedleFields(const Envelope& env) {
  OJson n = {{"type", EnvelopeTypeName(env.type)},
             {"confidence", env.confidence ? OJson(*env.confidence) : OJson()},
             {"reasoning", env.reasoning},
             {"prefill_tps", env.prefill_tps},
             {"decode_tps", env.decode_tps},
             {"peak_ram_mb", env.peak_ram_mb}};
  if (!env.warnings.empty()) n["warnings"] = env.warnings;
  n["tokens"] = {{"sink", env.sink_tokens}, {"window_used", env.window_tokens}, {"window", env.window_capacity}};
  return n;
}

const char* FinishReason(const Envelope& env) { return env.function_calls.empty() ? "stop" : "tool_calls"; }

std::string Event(const OJson& chunk) {
  return "data: " + chunk.dump(-1, ' ', false, OJson::error_handler_t::replace) + "\n\n";
}

}  // namespace

std::string NewId(const char* prefix) {
  // A random start (ids differ across restarts) and a counter (never repeat within one).
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  static uint64_t counter = 0;
  uint64_t hi, lo;
  {
    std::lock_guard<std::mutex> lock(mu);
    hi = rng();
    lo = ++counter;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix, static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo & 0xffffffffu));
  return buf;
}

CompletionMeta NewCompletionMeta(const std::string& model, size_t calls) {
  CompletionMeta m;
  m.id = NewId("chatcmpl-");
  m.model = model;
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (size_t i = 0; i < calls; ++i) m.call_ids.push_back(NewId("call_"));
  return m;
}

nlohmann::ordered_json CompletionJson(const Envelope& env, const CompletionMeta& meta) {
  OJson message = {{"role", "assistant"}, {"content", env.function_calls.empty() ? OJson("") : OJson()}};
  if (!env.function_calls.empty()) {
    OJson calls = OJson::array();
    for (size_t i = 0; i < env.function_calls.size(); ++i) {
      const OJson& c = env.function_calls[i];
      calls.push_back({{"id", meta.call_ids.at(i)},
                       {"type", "function"},
                       {"function", {{"name", c.value("name", "")}, {"arguments", Arguments(c)}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  message["refusal"] = nullptr;
  return {{"id", meta.id},
          {"object", "chat.completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", OJson::array({{{"index", 0}, {"message", std::move(message)}, {"logprobs", nullptr},
                                     {"finish_reason", FinishReason(env)}}})},
          {"usage", Usage(env)},
          {"needle", NeedleFields(env)}};
}

std::vector<std::string> CompletionEvents(const Envelope& env, const CompletionMeta& meta, bool include_usage) {
  auto chunk = [&](OJson delta, const OJson& finish) {
    return OJson{{"id", meta.id},
                 {"object", "chat.completion.chunk"},
                 {"created", meta.created},
                 {"model", meta.model},
                 {"choices", OJson::array({{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr},
                                            {"finish_reason", finish}}})}};
  };
  std::vector<std::string> events;
  const bool calls = !env.function_calls.empty();
  events.push_back(Event(chunk({{"role", "assistant"}, {"content", calls ? OJson() : OJson("")}}, nullptr)));
  for (size_t i = 0; i < env.function_calls.size(); ++i) {
    const OJson& c = env.function_calls[i];
    OJson head = {{"index", i}, {"id", meta.call_ids.at(i)}, {"type", "function"},
                  {"function", {{"name", c.value("name", "")}, {"arguments", ""}}}};
    events.push_back(Event(chunk({{"tool_calls", OJson::array({std::move(head)})}}, nullptr)));
    const std::string args = Arguments(c);
    for (size_t at = 0; at < args.size();) {
      size_t end = std::min(args.size(), at + kArgumentFragment);
      while (end < args.size() && end > at + 1 && (uint8_t(args[end]) & 0xC0) == 0x80) --end;  // whole characters
      OJson part = {{"index", i}, {"function", {{"arguments", args.substr(at, end - at)}}}};
      events.push_back(Event(chunk({{"tool_calls", OJson::array({std::move(part)})}}, nullptr)));
      at = end;
    }
  }
  OJson last = chunk(OJson::object(), FinishReason(env));
  last["needle"] = NeedleFields(env);
  events.push_back(Event(last));
  if (include_usage) {
    OJson usage = chunk(OJson::object(), nullptr);
    usage["choices"] = OJson::array();
    usage["usage"] = Usage(env);
    events.push_back(Event(usage));
  }
  events.push_back("data: [DONE]\n\n");
  return events;
}

}  // namespace needle::server
