// needle run / needle chat: the agent from the command line.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "args.h"
#include "base/error.h"
#include "commands.h"

namespace needle::cli {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A flag that is a file path, or inline text (JSON or facts).
std::string FileOrInline(const std::string& v) {
  if (!v.empty() && v[0] != '[' && v[0] != '{' && std::filesystem::is_regular_file(v)) return ReadText(v);
  return v;
}

nlohmann::ordered_json Facts(const std::string& v) {
  if (v.empty()) return nullptr;
  const std::string text = FileOrInline(v);
  const auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (!j.is_discarded() && j.is_object()) return j;
  return text;  // rendered "key: value" lines
}

std::vector<FlagSpec> SessionFlags() {
  return {{"model", "FILE", "model archive (default: $NEEDLE_MODEL, else the embedded default model)"},
          {"tools", "FILE|JSON", "tool schemas: a JSON array (or {\"tools\": [...]}), as a file or inline (required)"},
          {"system", "FILE|JSON|TEXT", "system facts: a JSON object (date, locale, device, battery, network, location, user, assistant) or key: value lines"},
          {"pin", "TEXT", "pin extra text in the sink block (custom sink), e.g. a user profile", true},
          {"max-new-tokens", "N", "call budget per turn (default 256)"},
          {"max-think-tokens", "N", "reasoning budget per turn (default 96)"},
          {"tool-score-bias", "B", "logit bonus per unit of retrieval similarity when naming a call (default 100; 0 off)"},
          {"refusal-score-penalty", "P", "logit penalty per unit of best tool score above the threshold for refusing (default 40; 0 off)"},
          {"refusal-score-threshold", "T", "best tool score above which refusing is penalised (default 0.6)"},
          {"unsaid-id-penalty", "P", "naming penalty (retrieval-score units) on a tool needing an identifier the conversation does not hold (default 0.6; 0 off)"},
          {"record-id-bias", "B", "logit bonus for the identifier of the result's record the request names, in identifier arguments (default inf: a rule; 0 off)"},
          {"any-case", "", "let copies change the case the conversation writes them in (by default a copy keeps it when it can)"},
          {"lexical-weight", "W", "weight of request/schema word overlap added to the retrieval similarity (default 1; 0 off)"},
          {"copy-bias", "B", "logit bonus for copying argument text from the conversation (default inf: a copy whenever one fits; 0 off)"},
          {"date-time-bias", "B", "logit bonus for the dates and times the conversation says, in date/time format strings (default inf: a rule; 0 off)"},
          {"quantity-bias", "B", "logit bonus for the quantities the conversation says (\"5 minutes\"), converted to a number argument's declared unit (default inf: a rule; 0 off)"},
          {"enum-word-bias", "B", "logit bonus for the enum values sharing the most words with the request (default 8; 0 off, inf always)"},
          {"keep-echoed-arguments", "", "keep optional arguments that are empty or repeat another argument's value (dropped by default)"},
          {"free-reasoning-names", "", "let the reasoning name any tool (by default its head is a declared tool's name or a refusal)"},
          {"reasoning-refusal-penalty", "P", "logit penalty on a reasoning that starts as a refusal (default 2)"},
          {"tool-index", "FILE", "persist tool embeddings for retrieval (more than 5 tools)"},
          {"threads", "K", "compute threads (default 1)"}};
}

std::unique_ptr<Session> MakeSession(const Args& args) {
  auto model = args.Has("model") ? Model::Open(args.Get("model")) : Model::Default();
  SessionOptions o;
  o.max_new_tokens = static_cast<uint32_t>(args.GetInt("max-new-tokens", o.max_new_tokens));
  o.max_think_tokens = static_cast<uint32_t>(args.GetInt("max-think-tokens", o.max_think_tokens));
  o.copy_bias = static_cast<float>(args.GetDouble("copy-bias", o.copy_bias));
  o.enum_word_bias = static_cast<float>(args.GetDouble("enum-word-bias", o.enum_word_bias));
  o.date_time_bias = static_cast<float>(args.GetDouble("date-time-bias", o.date_time_bias));
  o.quantity_bias = static_cast<float>(args.GetDouble("quantity-bias", o.quantity_bias));
  o.drop_echoed_arguments = !args.Has("keep-echoed-arguments");
  o.reasoning_names = !args.Has("free-reasoning-names");
  o.reasoning_refusal_penalty = static_cast<float>(args.GetDouble("reasoning-refusal-penalty", o.reasoning_refusal_penalty));
  o.tool_score_bias = static_cast<float>(args.GetDouble("tool-score-bias", o.tool_score_bias));
  o.lexical_weight = static_cast<float>(args.GetDouble("lexical-weight", o.lexical_weight));
  o.refusal_score_penalty = static_cast<float>(args.GetDouble("refusal-score-penalty", o.refusal_score_penalty));
  o.refusal_score_threshold = static_cast<float>(args.GetDouble("refusal-score-threshold", o.refusal_score_threshold));
  o.unsaid_id_penalty = static_cast<float>(args.GetDouble("unsaid-id-penalty", o.unsaid_id_penalty));
  o.record_id_bias = static_cast<float>(args.GetDouble("record-id-bias", o.record_id_bias));
  o.exact_case = !args.Has("any-case");
  o.threads = static_cast<uint32_t>(args.GetInt("threads", 1));
  o.tool_index_path = args.Get("tool-index");
  if (o.max_new_tokens < 1 || o.threads < 1) throw Error(ErrorCode::kInvalidArgument, "--max-new-tokens and --threads must be positive");
  auto s = std::make_unique<Session>(model, o);
  s->SetToolsJson(FileOrInline(args.Require("tools")));
  s->SetSystem(Facts(args.Get("system")));
  for (const std::string& p : args.GetAll("pin")) s->PinSpan(p);
  for (const std::string& w : s->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return s;
}

// Runs `cmd` with `input` on stdin; returns its stdout.
std::string Exec(const std::string& cmd, const std::string& input) {
  const std::string in_path = std::filesystem::temp_directory_path() / ("needle-call-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream f(in_path, std::ios::binary);
    f << input;
  }
  const std::string full = cmd + " < '" + in_path + "'";
  std::FILE* p = ::popen(full.c_str(), "r");
  if (!p) throw Error(ErrorCode::kIo, "cannot run '" + cmd + "'");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  std::filesystem::remove(in_path);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (rc != 0) return nlohmann::json{{"error", "tool command exited with status " + std::to_string(rc)}, {"output", out}}.dump();
  return out;
}

}  // namespace

int RunRun(int argc, char** argv) {
  auto flags = SessionFlags();
  Args args("run", "--tools TOOLS.json [--model FILE.cact] [--system FACTS] [--max-new-tokens N] QUERY",
            "Answers one request: prints the envelope of SPEC §10 (a grammar-constrained\n"
            "call, a refusal or an error) as JSON on stdout.",
            flags);
  if (!args.Parse(argc, argv)) return 0;
  if (args.positionals().size() != 1) throw Error(ErrorCode::kInvalidArgument, "run: give exactly one QUERY (quote it)");
  auto s = MakeSession(args);
  const Envelope e = s->Query(args.positionals()[0]);
  std::printf("%s\n", e.Dump().c_str());
  return e.success() ? 0 : 1;
}

int RunChat(int argc, char** argv) {
  auto flags = SessionFlags();
  flags.push_back({"exec", "CMD", "run each call through CMD (the call JSON on its stdin, its stdout is the result)"});
  flags.push_back({"max-steps", "N", "with --exec: at most N automatic tool rounds per request (default 8)"});
  Args args("chat", "--tools TOOLS.json [--model FILE.cact] [--system FACTS] [--exec CMD]",
            "An interactive multi-turn session on one bounded cache. Type a request; after a\n"
            "call, type the tool's result (JSON), or let --exec produce it. Commands: /reset\n"
            "(keep the tools, drop the conversation), /save FILE, /load FILE, /quit.",
            flags);
  if (!args.Parse(argc, argv)) return 0;
  auto s = MakeSession(args);
  const std::string exec = args.Get("exec");
  const bool tty = ::isatty(0);
  std::string line;
  EnvelopeType last = EnvelopeType::kRefuse;
  nlohmann::ordered_json pending_calls;
  const long long max_steps = args.GetInt("max-steps", 8);
  long long steps = 0;
  for (;;) {
    if (last == EnvelopeType::kCall && !exec.empty() && steps >= max_steps) {
      std::printf("(stopped after %lld tool rounds; type a result or a new request)\n", steps);
      last = EnvelopeType::kRefuse;  // the next line is a new request
    }
    if (last == EnvelopeType::kCall && !exec.empty()) {
      ++steps;
      // Each call through the command; one result per call (an array for several).
      nlohmann::ordered_json results = nlohmann::ordered_json::array();
      for (const auto& c : pending_calls) {
        const std::string out = Exec(exec, c.dump());
        const auto r = nlohmann::ordered_json::parse(out, nullptr, false);
        results.push_back(r.is_discarded() ? nlohmann::ordered_json(out) : r);
      }
      const std::string fed = (results.size() == 1 ? results[0] : results).dump();
      std::printf("result> %s\n", fed.c_str());
      const Envelope e = s->ToolResult(fed);
      std::printf("%s\n", e.Dump().c_str());
      std::fflush(stdout);
      last = e.type, pending_calls = e.function_calls;
      continue;
    }
    if (tty) std::printf(last == EnvelopeType::kCall ? "result> " : "you> "), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      s->Reset();
      last = EnvelopeType::kRefuse;
      std::printf("(conversation reset; tools kept)\n");
      continue;
    }
    if (line.rfind("/save ", 0) == 0 || line.rfind("/load ", 0) == 0) {
      try {
        if (line[1] == 's') {
          s->Save(line.substr(6));
        } else {
          s->Restore(line.substr(6));
          last = s->last_type();
        }
        std::printf("(ok)\n");
      } catch (const Error& e) {
        std::printf("(error: %s)\n", e.what());
      }
      continue;
    }
    steps = 0;
    const Envelope e = s->Complete(line);
    std::printf("%s\n", e.Dump().c_str());
    std::fflush(stdout);
    last = e.type, pending_calls = e.function_calls;
  }
  return 0;
}

}  // namespace needle::cli
