// `needle serve`: an OpenAI-compatible HTTP server over a pool of sessions
// on one mapped model (cpp-httplib).
//
//   POST /v1/chat/completions   OpenAI chat completions: tools, tool_choice
//                               (auto, none, required, a named function: each
//                               enforced by the grammar), parallel_tool_calls,
//                               max_tokens, stream (server-sent events)
//   GET  /v1/models, /health
//   POST /v1/needle/complete    one turn as the SPEC envelope
//   POST /v1/needle/extract     a record read from text by a JSON Schema
//   GET  /                      the playground; with POST/GET /v1/needle/finetune
//                               (a LoRA job in the background) and
//                               POST /v1/needle/model (serve its result)
//
// Errors are OpenAI-shaped JSON: 400 for a malformed request (naming the
// field), 401 without the API key, 413 over the body limit, 503 with
// Retry-After when the queue is full or the wait passes the deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "agent/model.h"
#include "agent/session_options.h"

namespace needle::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0: a free port (Bind returns it)
  uint32_t parallel = 2;           // sessions: requests served at once
  bool batch_decoding = true;      // sessions decoding at the same time share passes over the weights
  bool share_sinks = true;         // sessions with the same setup read one sink block (agent/sink_blocks.h)
  uint32_t queue = 16;             // requests that may wait for a session
  uint32_t timeout_ms = 60000;     // longest wait for a session
  size_t body_limit = 1 << 20;     // bytes
  std::string api_key;             // "" none; else "Authorization: Bearer KEY" on /v1/
  std::string model_name = "needle";
  SessionOptions session;          // every session's options (a request may narrow its turn's)
  // Fine-tuning from the playground: the served model's file ("" : the
  // embedded one), the needle CLI that runs the trainer ("" : unavailable),
  // and where jobs write ("" : /tmp/needle-serve-PID).
  std::string model_path, cli_path, work_dir;
};

class Server {
 public:
  Server(std::shared_ptr<const Model> model, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the address; returns the port. Throws Error naming the address.
  int Bind();
  // Serves until Stop(); returns when the last request in flight is done.
  void Run();
  // Graceful: waiting requests get 503, the listener closes, requests in
  // flight finish. Safe from any thread, twice.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace needle::server
