// Load and abuse of `needle serve` over loopback (issue L, item 5), the
// default model. A benchmark program, not a CI test: it takes a minute and
// prints its figures as counters (--benchmark_format=json).
//
//   BM_HundredClients: 100 clients at once against 2 sessions and a queue of
//   16, each with a tool set of its own and tool_choice naming its own tool.
//   Every answer is a 200 or a 503 (queue full); a 200 whose call names
//   another client's tool would be a leak between sessions (`leaks`, must
//   be 0); `slowest_ms` bounds a client's wait.
//   BM_MalformedHttp: bodies longer than announced, shorter and stalled,
//   absurd lengths, huge headers, garbage; after each the server must still
//   answer /health (`health_ok` of `attacks`).
//   MALLOC_ARENA_MAX=2 build/bin/server_load_bench
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/model.h"
#include "server/server.h"
#include "server/testing/running_server.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

using Running = needle::server::testing::RunningServer;

json ClientBody(int c) {
  const std::string name = "tool_" + std::to_string(c);
  json mine = {{"type", "function"},
               {"function", {{"name", name}, {"description", "Record reading number " + std::to_string(c)},
                             {"parameters", {{"type", "object"}, {"properties", {{"value", {{"type", "integer"}}}}}, {"required", {"value"}}}}}}};
  json shared = {{"type", "function"},
                 {"function", {{"name", "get_weather"}, {"description", "Get the weather for a city"},
                               {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}}}};
  return {{"tools", {mine, shared}},
          {"tool_choice", {{"type", "function"}, {"function", {{"name", name}}}}},
          {"messages", {{{"role", "user"}, {"content", "record reading " + std::to_string(c) + " as " + std::to_string(c * 7)}}}}};
}

void BM_HundredClients(benchmark::State& state) {
  needle::server::ServerOptions o;
  o.parallel = 2;
  o.queue = std::getenv("NEEDLE_LOAD_QUEUE") ? uint32_t(std::atoi(std::getenv("NEEDLE_LOAD_QUEUE"))) : 16;
  o.timeout_ms = 30000;
  o.session.reasoning_beams = 1;
  Running running(o);
  std::atomic<uint64_t> ok{0}, busy{0}, errors{0}, leaks{0};
  std::atomic<int64_t> slowest_ms{0};
  for (auto _ : state) {
    std::vector<std::thread> clients;
    const int n_clients = std::getenv("NEEDLE_LOAD_CLIENTS") ? std::atoi(std::getenv("NEEDLE_LOAD_CLIENTS")) : 100;
    for (int c = 0; c < n_clients; ++c) {
      clients.emplace_back([&, c] {
        httplib::Client client("127.0.0.1", running.port);
        client.set_read_timeout(120, 0);
        const auto t0 = Clock::now();
        auto res = client.Post("/v1/chat/completions", ClientBody(c).dump(), "application/json");
        const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        int64_t seen = slowest_ms.load();
        while (ms > seen && !slowest_ms.compare_exchange_weak(seen, ms)) {
        }
        if (!res) {
          if (std::getenv("NEEDLE_LOAD_VERBOSE")) std::fprintf(stderr, "client %d: %s\n", c, httplib::to_string(res.error()).c_str());
          return void(++errors);
        }
        if (res->status == 503) return void(++busy);
        if (res->status != 200) {
          if (std::getenv("NEEDLE_LOAD_VERBOSE")) std::fprintf(stderr, "client %d: HTTP %d %s\n", c, res->status, res->body.substr(0, 200).c_str());
          return void(++errors);
        }
        ++ok;
        const json r = json::parse(res->body, nullptr, false);
        for (const json& call : r["choices"][0]["message"].value("tool_calls", json::array())) {
          if (call["function"]["name"] != "tool_" + std::to_string(c)) ++leaks;
        }
      });
    }
    for (auto& t : clients) t.join();
  }
  state.counters["ok"] = double(ok);
  state.counters["busy_503"] = double(busy);
  state.counters["errors"] = double(errors);
  state.counters["leaks"] = double(leaks);
  state.counters["slowest_ms"] = double(slowest_ms);
}

// Sends raw bytes on a fresh connection, waits `stall_ms`, reads what comes back.
std::string Raw(int port, const std::string& bytes, int stall_ms = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return (::close(fd), "no connection");
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (size_t at = 0; at < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;
    at += size_t(n);
  }
  if (stall_ms) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, size_t(n));
  ::close(fd);
  return got;
}

void BM_MalformedHttp(benchmark::State& state) {
  needle::server::ServerOptions o;
  o.body_limit = 1 << 16;
  Running running(o);
  const std::string post = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  const std::vector<std::pair<std::string, int>> attacks = {
      {post + "Content-Length: 100000000\r\n\r\n{}", 0},                 // over the limit
      {post + "Content-Length: 5\r\n\r\n{\"messages\": []}", 0},          // longer than announced
      {post + "Content-Length: 500\r\n\r\n{\"messa", 6000},               // shorter, then stalled past the read timeout
      {post + "Content-Length: -5\r\n\r\n{}", 0},
      {post + "Content-Length: abc\r\n\r\n{}", 0},
      {post + "X-Huge: " + std::string(200000, 'a') + "\r\nContent-Length: 2\r\n\r\n{}", 0},
      {std::string("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11), 0},  // a TLS hello
      {"GET /health HTTP/1.1\r\n" + std::string(100, '\n'), 0},
  };
  uint64_t health_ok = 0, count = 0;
  for (auto _ : state) {
    for (const auto& [bytes, stall] : attacks) {
      // A stalled body must not stop other clients meanwhile.
      std::thread attacker([&, b = bytes, s = stall] { Raw(running.port, b, s); });
      httplib::Client client("127.0.0.1", running.port);
      auto res = client.Get("/health");
      attacker.join();
      auto after = client.Get("/health");
      health_ok += (res && res->status == 200 && after && after->status == 200);
      ++count;
    }
  }
  state.counters["attacks"] = double(count);
  state.counters["health_ok"] = double(health_ok);
}

BENCHMARK(BM_HundredClients)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_MalformedHttp)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
