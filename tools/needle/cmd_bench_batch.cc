// needle bench-batch: aggregate decode speed of N concurrent sessions, each
// decoded alone (one Forward per session per token) against all of them in
// one BatchDecoder step per token, interleaved round by round.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "base/error.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "io/cact_archive.h"
#include "model/fast_model.h"
#include "quant/cq_matvec.h"

namespace needle::cli {
namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<uint32_t> ParseCounts(const std::string& text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > 64) {
      throw Error(ErrorCode::kInvalidArgument, "bench-batch: --sessions takes counts 1-64 separated by commas, not '" + text + "'");
    }
    out.push_back(static_cast<uint32_t>(v));
  }
  if (out.empty()) throw Error(ErrorCode::kInvalidArgument, "bench-batch: --sessions is empty");
  return out;
}

}  // namespace

int RunBenchBatch(int argc, char** argv) {
  Args args("bench-batch", "--model FILE.cact [--sessions 1,2,4,8] [--steps N] [--rounds R] [--threads K] [--shared-sinks] [--json]",
            "Aggregate decode speed of N concurrent sessions (tokens of all sessions per\n"
            "second). Each session holds a 252-token sink block and a full window, as in a\n"
            "long conversation. 'alone' decodes the sessions one after another, one token\n"
            "each (N separate passes over the weights); 'batched' decodes one token of every\n"
            "session in one BatchDecoder step. The two alternate, round by round.",
            {{"model", "FILE", "the archive (required)"},
             {"sessions", "LIST", "session counts to measure (default 1,2,4,8)"},
             {"steps", "N", "tokens per session per round (default 32)"},
             {"rounds", "R", "alternating rounds of each variant (default 3; the median is reported)"},
             {"threads", "K", "threads (default 1)"},
             {"shared-sinks", "", "the sessions share one sink block (the same tools) instead of one each"},
             {"json", "", "end with one JSON object"}});
  if (!args.Parse(argc, argv)) return 0;
  const CactArchive archive = CactArchive::Open(args.Require("model"));
  const FastModel model(archive);
  const ModelConfig& c = model.config();
  const std::vector<uint32_t> counts = ParseCounts(args.Get("sessions", "1,2,4,8"));
  const long long steps = args.GetInt("steps", 32), rounds = args.GetInt("rounds", 3), threads = args.GetInt("threads", 1);
  if (steps < 1 || rounds < 1 || threads < 1 || threads > 256) {
    throw Error(ErrorCode::kInvalidArgument, "bench-batch: --steps, --rounds and --threads must be positive");
  }
  const bool json = args.Has("json"), shared_sinks = args.Has("shared-sinks");
  ThreadPool pool(static_cast<uint32_t>(threads));
  const uint32_t V = c.vocab_size, sinks = 252, window = model.window();
  const uint32_t max_n = *std::max_element(counts.begin(), counts.end());

  // Sessions with their sink block and a full window of random tokens (steady state).
  SplitMix64 rng(7);
  auto random_tokens = [&](size_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(14 + rng.Next() % (V - 14));
    return t;
  };
  std::vector<std::unique_ptr<DecoderState>> states;
  std::vector<std::vector<float>> logits(max_n, std::vector<float>(V));
  // --shared-sinks: one sink block (the same tools) read by every session,
  // as beam hypotheses read theirs (DecoderOptions::sinks_from).
  std::unique_ptr<DecoderState> owner;
  if (shared_sinks) {
    owner = model.NewState({.sink_length = sinks, .window = window, .max_chunk = 32});
    model.Forward(*owner, random_tokens(sinks), nullptr, false, &pool);
  }
  for (uint32_t i = 0; i < max_n; ++i) {
    if (owner) {
      states.push_back(model.NewState({.sink_length = sinks, .window = window, .max_chunk = 32, .sinks_from = owner.get()}));
      states[i]->CopyFrom(*owner, false);
      model.Forward(*states[i], random_tokens(window), logits[i].data(), false, &pool);
    } else {
      states.push_back(model.NewState({.sink_length = sinks, .window = window, .max_chunk = 32}));
      model.Forward(*states[i], random_tokens(sinks + window), logits[i].data(), false, &pool);
    }
  }
  BatchDecoder decoder(model, max_n);
  std::vector<float> batch_logits(size_t(max_n) * V);
  auto next_of = [&](const float* l) { return static_cast<int32_t>(std::max_element(l, l + V) - l); };

  nlohmann::json rows = nlohmann::json::array();
  double one_alone = 0;
  if (!json) {
    std::printf("model %s: %u layers, d %u, window %u, %u sink tokens (%s), %lld thread(s), kernels %s\n",
                args.Get("model").c_str(), c.num_layers, c.d_model, window, sinks, shared_sinks ? "one block shared" : "one block each",
                threads, CqKernelTarget());
    std::printf("%9s %14s %16s %9s %14s\n", "sessions", "alone tok/s", "batched tok/s", "ratio", "vs 1 session");
  }
  for (uint32_t n : counts) {
    std::vector<double> alone, batched;
    std::vector<DecoderState*> members;
    std::vector<int32_t> next(n);
    for (uint32_t i = 0; i < n; ++i) members.push_back(states[i].get());
    for (long long r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (long long s = 0; s < steps; ++s) {
        for (uint32_t i = 0; i < n; ++i) {
          const int32_t tok = next_of(logits[i].data());
          model.Forward(*states[i], std::span(&tok, 1), logits[i].data(), false, &pool);
        }
      }
      alone.push_back(double(n * steps) / Seconds(t0));
      t0 = std::chrono::steady_clock::now();
      for (long long s = 0; s < steps; ++s) {
        for (uint32_t i = 0; i < n; ++i) next[i] = next_of(s == 0 ? logits[i].data() : &batch_logits[size_t(i) * V]);
        decoder.Step(members, next, batch_logits.data(), &pool);
      }
      batched.push_back(double(n * steps) / Seconds(t0));
      for (uint32_t i = 0; i < n; ++i) std::copy_n(&batch_logits[size_t(i) * V], V, logits[i].data());
    }
    std::sort(alone.begin(), alone.end());
    std::sort(batched.begin(), batched.end());
    const double a = alone[alone.size() / 2], b = batched[batched.size() / 2];
    if (n == 1) one_alone = a;
    const double vs_one = one_alone > 0 ? b / one_alone : 0.0;
    rows.push_back({{"sessions", n}, {"alone_tps", a}, {"batched_tps", b}, {"batched_over_alone", b / a},
                    {"batched_over_one_session", one_alone > 0 ? nlohmann::json(vs_one) : nlohmann::json(nullptr)}});
    if (!json) {
      std::printf("%9u %14.0f %16.0f %8.2fx %13s\n", n, a, b, b / a,
                  one_alone > 0 ? (std::to_string(vs_one).substr(0, 4) + "x").c_str() : "-");
    }
  }
  if (json) {
    const nlohmann::json j = {{"threads", threads}, {"kernels", CqKernelTarget()}, {"sink_tokens", sinks}, {"shared_sinks", shared_sinks},
                              {"window", window},   {"steps", steps},             {"rounds", rounds},
                              {"rows", rows}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace needle::cli
