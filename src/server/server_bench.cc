// The latency of a chat completion through the server (HTTP over loopback,
// the default model, one session): for a tool set the server saw last
// (its prefilled sinks are reused) against a tool set it never saw (the
// tools are prefilled first). A benchmark, not a test: compare the two as a
// ratio in one run.
//   build/bin/server_bench --benchmark_format=json
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "agent/model.h"
#include "server/server.h"
#include "server/testing/running_server.h"

namespace {

using nlohmann::json;

// Four tools of a smart home (~250 tokens of sinks); `salt` makes the set new.
json Tools(int salt) {
  auto fn = [&](const char* name, const char* description, json properties, json required) {
    return json{{"type", "function"},
                {"function", {{"name", name}, {"description", std::string(description) + (salt ? " (set " + std::to_string(salt) + ")" : "")},
                              {"parameters", {{"type", "object"}, {"properties", properties}, {"required", required}}}}}};
  };
  return json::array({
      fn("set_lights", "Turn the lights of a room on or off, or dim them", {{"room", {{"type", "string"}}}, {"brightness", {{"type", "integer"}, {"minimum", 0}, {"maximum", 100}}}}, {"room"}),
      fn("set_thermostat", "Set the target temperature of the heating", {{"temperature", {{"type", "number"}, {"minimum", 10}, {"maximum", 30}}}}, {"temperature"}),
      fn("set_timer", "Start a countdown timer", {{"minutes", {{"type", "integer"}, {"minimum", 1}}}, {"label", {{"type", "string"}}}}, {"minutes"}),
      fn("send_message", "Send a text message to a contact", {{"recipient", {{"type", "string"}}}, {"body", {{"type", "string"}}}}, {"recipient", "body"}),
  });
}

// One session, greedy reasoning: the latency of one request at a time.
struct Running : needle::server::testing::RunningServer {
  Running() : RunningServer(Options()) {}
  static needle::server::ServerOptions Options() {
    needle::server::ServerOptions o;
    o.parallel = 1;
    o.session.reasoning_beams = 1;
    return o;
  }
};

void Complete(benchmark::State& state, bool new_tools) {
  static Running running;
  httplib::Client client("127.0.0.1", running.port);
  int salt = 0;
  uint64_t prompt_tokens = 0, n = 0;
  const json warm = {{"messages", {{{"role", "user"}, {"content", "dim the kitchen lights to 30 percent"}}}}, {"tools", Tools(0)}};
  client.Post("/v1/chat/completions", warm.dump(), "application/json");  // the repeated set, seen once
  for (auto _ : state) {
    const json body = {{"messages", {{{"role", "user"}, {"content", "dim the kitchen lights to 30 percent"}}}},
                       {"tools", Tools(new_tools ? ++salt : 0)}};
    auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
    if (!res || res->status != 200) {
      state.SkipWithError("request failed");
      break;
    }
    prompt_tokens += json::parse(res->body)["usage"]["prompt_tokens"].get<uint64_t>();
    ++n;
  }
  state.counters["prompt_tokens"] = n ? double(prompt_tokens) / double(n) : 0.0;
}

// Load: 8 clients at once against 2 sessions and a queue of 16, each
// iteration one request per client, tool sets rotating among 3 (so setups
// are both reused and replaced). Reports requests/s, the non-200 answers
// (none expected: the queue holds every waiting client) and the process's
// anonymous memory after the first round and at the end (flat: nothing is
// kept per request). Run it as needle serve runs: MALLOC_ARENA_MAX=2.
double AnonMb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0.0;
  char line[256];
  double kb = 0.0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "RssAnon: %lf kB", &kb) == 1) break;
  std::fclose(f);
  return kb / 1024.0;
}

void BM_EightClients(benchmark::State& state) {
  needle::server::ServerOptions o;
  o.port = 0;
  o.parallel = 2;
  o.queue = 16;
  o.session.reasoning_beams = 1;
  needle::server::Server server(needle::Model::Default(), o);
  const int port = server.Bind();
  std::thread serving([&] { server.Run(); });
  std::atomic<uint64_t> failed{0}, served{0};
  double anon_warm = 0.0;  // after the first round: sessions, grammars and threads exist
  for (auto _ : state) {
    std::vector<std::thread> clients;
    for (int c = 0; c < 8; ++c) {
      clients.emplace_back([&, c] {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(60, 0);
        const json body = {{"messages", {{{"role", "user"}, {"content", "dim the kitchen lights to 30 percent"}}}}, {"tools", Tools(c % 3)}};
        auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
        (res && res->status == 200 ? served : failed)++;
      });
    }
    for (auto& t : clients) t.join();
    if (anon_warm == 0.0) anon_warm = AnonMb();
  }
  state.counters["requests_per_s"] = benchmark::Counter(double(served + failed), benchmark::Counter::kIsRate);
  state.counters["failed"] = double(failed);
  state.counters["anon_mb_after_first_round"] = anon_warm;
  state.counters["anon_mb_end"] = AnonMb();
  server.Stop();
  serving.join();
}

void BM_RepeatedToolSet(benchmark::State& state) { Complete(state, false); }
void BM_NewToolSet(benchmark::State& state) { Complete(state, true); }
BENCHMARK(BM_RepeatedToolSet)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NewToolSet)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EightClients)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(250);

}  // namespace
