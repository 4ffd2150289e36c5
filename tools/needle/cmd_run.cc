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
#include "text/prompt.h"
#include "commands.h"
#include "decoding_flags.h"

namespace needle::cli {
namespace {

nlohmann::ordered_json Facts(const std::string& v) { return ParseSystemFacts(FlagFileOrInline("system", v)); }

// --tools: a file, or the JSON inline; a word that is neither is named as such
// (not reported as malformed JSON).
std::string ToolsArg(const std::string& v) {
  const size_t start = v.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && (v[start] == '[' || v[start] == '{')) return v;
  std::error_code ec;
  if (!std::filesystem::exists(v, ec)) {
    throw Error(ErrorCode::kInvalidArgument, "--tools: '" + v + "' is neither a file nor a JSON array of tools");
  }
  return ReadFlagFile("tools", v);
}

std::vector<FlagSpec> SessionFlags() {
  std::vector<FlagSpec> flags = {{"model", "FILE", "model archive (default: $NEEDLE_MODEL, else the embedded default model)"},
          {"tools", "FILE|JSON", "tool schemas: a JSON array (or {\"tools\": [...]}), as a file or inline (required)"},
          {"system", "FILE|JSON|TEXT", "system facts: a JSON object (date, locale, device, battery, network, location, user, assistant) or key: value lines"},
          {"pin", "TEXT", "pin extra text in the sink block (custom sink), e.g. a user profile", true}};
  for (FlagSpec& f : DecodingFlags()) flags.push_back(std::move(f));
  return flags;
}

std::unique_ptr<Session> MakeSession(const Args& args) {
  auto model = args.Has("model") ? Model::Open(args.Get("model")) : Model::Default();
  SessionOptions o;
  ReadDecodingFlags(args, o);
  auto s = std::make_unique<Session>(model, o);
  s->SetToolsJson(ToolsArg(args.Require("tools")));
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
