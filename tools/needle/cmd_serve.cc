// needle serve: the OpenAI-compatible server (src/server/server.h).
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <thread>

#include <pthread.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "agent/model.h"
#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "decoding_flags.h"
#ifdef NEEDLE_HAVE_HTTPLIB
#include "server/server.h"
#endif

namespace needle::cli {

int RunServe(int argc, char** argv) {
  std::vector<FlagSpec> flags = {
      {"model", "FILE", "model archive (default: $NEEDLE_MODEL, else the embedded default model)"},
      {"model-name", "NAME", "the model's id in /v1/models and responses (default: the file's name, or needle-mini)"},
      {"host", "ADDR", "address to listen on (default 127.0.0.1: this machine only)"},
      {"port", "N", "port (default 8080; 0: a free one, printed)"},
      {"parallel", "N", "sessions: requests served at once (default 2)"},
      {"no-batching", "", "decode each session alone (default: sessions decoding at the same time share one pass over the weights; answers are the same)"},
      {"no-shared-sinks", "", "each session holds its own sink block (default: sessions with the same tools, facts and pins read one; answers are the same)"},
      {"queue", "N", "requests that may wait for a session; more get 503 (default 16)"},
      {"timeout-ms", "MS", "longest wait for a session before 503 (default 60000)"},
      {"body-limit", "BYTES", "largest request body; more gets 413 (default 1048576)"},
      {"api-key", "KEY", "require \"Authorization: Bearer KEY\" on /v1/ (default: none; or $NEEDLE_API_KEY)"},
  };
  for (FlagSpec& f : DecodingFlags()) flags.push_back(std::move(f));
  Args args("serve", "[--model FILE.cact] [--host 127.0.0.1] [--port 8080] [--parallel 2] [--api-key KEY]",
            "Serves the model over HTTP: OpenAI-compatible POST /v1/chat/completions (tools,\n"
            "tool_choice, streaming), GET /v1/models, GET /health, and the native POST\n"
            "/v1/needle/complete (the SPEC envelope) and /v1/needle/extract. Stops gracefully\n"
            "on SIGTERM or SIGINT (requests in flight finish).",
            flags);
  if (!args.Parse(argc, argv)) return 0;
#ifndef NEEDLE_HAVE_HTTPLIB
  throw Error(ErrorCode::kUnsupported, "this build has no HTTP server: install libcpp-httplib-dev (scripts/setup) and rebuild");
#else
  auto model = args.Has("model") ? Model::Open(args.Get("model")) : Model::Default();
  server::ServerOptions o;
  ReadDecodingFlags(args, o.session);
  o.host = args.Get("host", o.host);
  o.port = int(args.GetInt("port", o.port));
  if (o.port < 0 || o.port > 65535) throw Error(ErrorCode::kInvalidArgument, "--port must be 0 to 65535");
  const long long parallel = args.GetInt("parallel", o.parallel), queue = args.GetInt("queue", o.queue);
  const long long timeout = args.GetInt("timeout-ms", o.timeout_ms), body = args.GetInt("body-limit", (long long)o.body_limit);
  if (parallel < 1 || parallel > 256) throw Error(ErrorCode::kInvalidArgument, "--parallel must be 1 to 256");
  if (queue < 0 || queue > 4096) throw Error(ErrorCode::kInvalidArgument, "--queue must be 0 to 4096");
  if (timeout < 1) throw Error(ErrorCode::kInvalidArgument, "--timeout-ms must be positive");
  if (body < 1024) throw Error(ErrorCode::kInvalidArgument, "--body-limit must be at least 1024 bytes");
  o.parallel = uint32_t(parallel), o.queue = uint32_t(queue), o.timeout_ms = uint32_t(timeout), o.body_limit = size_t(body);
  o.batch_decoding = !args.Has("no-batching");
  o.share_sinks = !args.Has("no-shared-sinks");
  o.api_key = args.Get("api-key");
  if (o.api_key.empty()) {
    if (const char* k = std::getenv("NEEDLE_API_KEY")) o.api_key = k;
  }
  std::string name = args.Get("model-name");
  if (name.empty()) {
    const std::string path = args.Get("model");
    name = path.empty() ? "needle-mini" : path.substr(path.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".cact") == 0) name.resize(name.size() - 5);
  }
  o.model_name = name;
  // Fine-tuning from the playground runs the needle CLI's commands: `needle`
  // beside this binary (needle-serve; `needle serve` runs it).
  o.model_path = args.Has("model") ? args.Get("model") : (std::getenv("NEEDLE_MODEL") ? std::getenv("NEEDLE_MODEL") : "");
  char self[4096];
  if (const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1); n > 0) {
    const std::string path(self, size_t(n));
    o.cli_path = path.substr(0, path.rfind('/') + 1) + "needle";
  }

#ifdef __GLIBC__
  // One malloc arena per HTTP thread would let memory spread over up to
  // parallel + queue + 2 arenas (server_bench, 8 clients: anonymous memory
  // 17 -> 29 MB over 2,000 requests with glibc's default, 15 -> 16 MB with
  // 2). Nothing allocates in the decode loop: sharing arenas costs no speed there.
  mallopt(M_ARENA_MAX, 2);
#endif
  // SIGTERM / SIGINT go to one waiting thread (blocked everywhere else,
  // before the server's threads exist), which stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  server::Server srv(model, o);
  const int port = srv.Bind();
  std::atomic<bool> signaled{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    signaled = true;
    std::fprintf(stderr, "needle serve: %s, stopping (requests in flight finish)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    srv.Stop();
  });
  std::fprintf(stderr, "needle serve: %s on http://%s:%d (%u sessions, queue %u%s)\n", o.model_name.c_str(), o.host.c_str(), port,
               o.parallel, o.queue, o.api_key.empty() ? "" : ", API key required");
  std::printf("listening on http://%s:%d\n", o.host.c_str(), port);
  std::fflush(stdout);
  srv.Run();
  // Run returned because of a signal (the waiter stopped it) or a failure; a
  // waiter still waiting is released with the signal it waits for.
  if (!signaled) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return 0;
#endif
}

}  // namespace needle::cli
