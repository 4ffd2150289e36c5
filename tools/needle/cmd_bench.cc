// needle bench: one long simulated session on the fast path — the tools pinned
// as sinks, then N turns of user message / generated call / tool result — with
// per-turn speed, resident memory and cache bytes.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "base/error.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "io/cact_archive.h"
#include "kv/budget.h"
#include "model/fast_model.h"
#include "progress.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

namespace needle::cli {
namespace {

// A realistic five-tool set (compact JSON, SPEC §8).
const char* kDefaultTools =
    R"([{"name":"send_message","description":"Send a text message to a contact","parameters":{"type":"object","properties":{"recipient":{"type":"string","description":"Contact name or number"},"body":{"type":"string","description":"Message text"}},"required":["recipient","body"]}},)"
    R"({"name":"set_alarm","description":"Set an alarm","parameters":{"type":"object","properties":{"time":{"type":"string","description":"Time as HH:MM"},"label":{"type":"string"}},"required":["time"]}},)"
    R"({"name":"set_lights","description":"Turn lights on or off or dim them","parameters":{"type":"object","properties":{"room":{"type":"string"},"state":{"type":"string","enum":["on","off"]},"brightness":{"type":"integer","minimum":0,"maximum":100}},"required":["room"]}},)"
    R"({"name":"get_weather","description":"Current weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}},)"
    R"({"name":"play_music","description":"Play a song, artist or playlist","parameters":{"type":"object","properties":{"query":{"type":"string"},"shuffle":{"type":"boolean"}},"required":["query"]}}])";

const char* kUserMessages[] = {
    "dim the kitchen lights to 30 percent please",     "what's the weather like in Lagos right now?",
    "text Maria that I'll be ten minutes late",        "wake me up at 6:45 tomorrow, label it gym",
    "play some Miles Davis on shuffle",                "turn off the bedroom lights",
};
const char* kToolResults[] = {R"({"ok":true})", R"({"city":"Lagos","temp_c":27,"sky":"clear"})",
                              R"({"status":"sent","id":4211})"};

struct Clock {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double Seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

double StatusMb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string k = key;
  while (std::getline(in, line)) {
    if (line.rfind(k, 0) == 0) return std::strtod(line.c_str() + k.size(), nullptr) / 1024.0;
  }
  return 0.0;
}


}  // namespace

int RunBench(int argc, char** argv) {
  Args args("bench", "--model FILE.cact [--turns N] [--tools TOOLS.json] [--threads K] [--json]",
            "Simulates one long session on the fast path: the tool definitions pinned as KV\n"
            "sinks, then N turns of a user message (~20 tokens), ~30 generated tokens and a\n"
            "tool result (~15 tokens). Prints per-turn prefill/decode tok/s, resident memory\n"
            "and cache bytes; a progress bar goes to stderr.",
            {{"model", "FILE", "the archive (required)"},
             {"turns", "N", "turns to simulate (default 100)"},
             {"tools", "FILE", "tools JSON array to pin as sinks (default: a built-in 5-tool set)"},
             {"threads", "K", "threads for the matrix products (default 1)"},
             {"gen", "N", "tokens generated per turn (default 30)"},
             {"synthetic", "", "use token ids of the target lengths instead of encoded text"},
             {"fp32", "", "run the fp32 path (no int8 rounding) instead of the int8 fast path"},
             {"window", "W", "override the archive's window (testing)"},
             {"every", "N", "print every N-th turn (default: about 20 lines)"},
             {"block-runs", "N", "after the session, prefill the sink block N more times, each into a fresh state: "
                                 "warm prefill speed of one block (default 5; 0: skip)"},
             {"profile", "", "time each stage of the forward pass (prefill and decode apart) and the token choice"},
             {"json", "", "end with one JSON object"}});
  if (!args.Parse(argc, argv)) return 0;
  const CactArchive archive = CactArchive::Open(args.Require("model"));
  const FastModel model(archive);
  const ModelConfig& c = model.config();
  const long long turns = args.GetInt("turns", 100);
  const long long threads = args.GetInt("threads", 1);
  const long long gen = args.GetInt("gen", 30);
  if (turns < 1 || threads < 1 || threads > 256 || gen < 1) throw Error(ErrorCode::kInvalidArgument, "bench: --turns, --threads and --gen must be positive");
  const bool json = args.Has("json");
  const long long block_runs = args.GetInt("block-runs", 5);
  if (block_runs < 0) throw Error(ErrorCode::kInvalidArgument, "bench: --block-runs must be 0 or more");

  // Token streams: real text through the archive's tokenizer, unless it is the
  // byte-level fallback vocabulary (which would make every message ~5x longer).
  const Tokenizer tok(archive.tokenizer());
  const bool synthetic = args.Has("synthetic") || archive.tokenizer().pieces.size() <= 271;
  const std::string tools = args.Has("tools") ? ReadFlagFile("tools", args.Get("tools")) : kDefaultTools;
  if (args.Has("tools")) {
    try {
      const nlohmann::json parsed = nlohmann::json::parse(tools);
      if (!parsed.is_array()) throw Error(ErrorCode::kInvalidJson, "bench: --tools must hold a JSON array of tool schemas");
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorCode::kInvalidJson, "bench: --tools: " + std::string(e.what()));
    }
  }
  SplitMix64 rng(1);
  auto synth = [&](size_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(14 + rng.Next() % (c.vocab_size - 14));
    return t;
  };
  auto encode = [&](const std::string& text, size_t synthetic_len, std::initializer_list<int32_t> prefix = {}) {
    std::vector<int32_t> ids(prefix);
    std::vector<int32_t> body;
    if (synthetic) {
      body = synth(synthetic_len);
    } else {
      tok.EncodeContinuation(text, body);  // prompt segments carry no dummy prefix (text/prompt.h)
    }
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
  };
  const std::vector<int32_t> sink = encode(SinkText("", tools), 300, {static_cast<int32_t>(kBosId)});
  if (synthetic && !json) std::fprintf(stderr, "bench: synthetic token streams (the archive has no trained tokenizer)\n");

  DecoderOptions opt;
  opt.sink_length = static_cast<uint32_t>(sink.size());
  opt.window = static_cast<uint32_t>(args.GetInt("window", 0));
  opt.fp32 = args.Has("fp32");
  ThreadPool pool(static_cast<uint32_t>(threads));
  auto st = model.NewState(opt);
  // --profile: stage times of prefill and of decode, and the token choice (argmax).
  const bool profile = args.Has("profile");
  ForwardProfile sink_profile, prefill_profile, decode_profile;
  double choice_seconds = 0;
  if (profile) st->AttachProfile(&sink_profile);
  std::vector<float> logits(c.vocab_size);
  const uint64_t cache_bytes = st->cache().bytes();

  Clock total;
  model.Forward(*st, sink, logits.data(), false, &pool);
  const double sink_seconds = total.Seconds();

  // Decode speed of the first and the last 10 turns (a ring): the bench keeps
  // nothing per turn, so its own memory stays flat however long it runs.
  constexpr size_t kEdgeTurns = 10;
  std::array<double, kEdgeTurns> first_decode{}, last_decode{};
  size_t nt = 0;
  double rss_after_fill = -1, anon_after_fill = -1;
  double prefill_tokens = 0, prefill_seconds = 0, decode_tokens = 0, decode_seconds = 0;
  const long long every = args.GetInt("every", std::max<long long>(1, turns / 20));
  if (!json) {
    std::printf("model %s: %u layers, d %u, window %u, sinks %zu tokens, cache %.2f MB, %lld thread(s), kernels %s%s\n",
                args.Get("model").c_str(), c.num_layers, c.d_model, st->window(), sink.size(), cache_bytes / 1e6,
                threads, CqKernelTarget(), opt.fp32 ? ", fp32 path" : "");
    std::printf("%6s %10s %12s %12s %10s %12s\n", "turn", "tokens", "prefill t/s", "decode t/s", "rss MB", "cache MB");
  }
  ProgressLine progress("bench", size_t(turns));
  const Clock run_clock;
  for (long long turn = 0; turn < turns; ++turn) {
    const std::string user = kUserMessages[turn % std::size(kUserMessages)];
    const std::vector<int32_t> user_ids = encode(turn == 0 ? FirstQueryText(user) : UserTurnText(user), 20);
    if (profile) st->AttachProfile(&prefill_profile);
    Clock c1;
    model.Forward(*st, user_ids, logits.data(), false, &pool);
    const double t_user = c1.Seconds();
    if (profile) st->AttachProfile(&decode_profile);
    Clock c2;
    for (long long g = 0; g < gen; ++g) {
      const Clock choice;
      const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (profile) choice_seconds += choice.Seconds();
      model.Forward(*st, std::span(&next, 1), logits.data(), false, &pool);
    }
    const double t_gen = c2.Seconds();
    if (profile) st->AttachProfile(&prefill_profile);
    const std::vector<int32_t> result_ids = encode(ToolResultTurnText(kToolResults[turn % std::size(kToolResults)]), 15);
    Clock c3;
    model.Forward(*st, result_ids, logits.data(), false, &pool);
    const double t_result = c3.Seconds();

    const double ptoks = double(user_ids.size() + result_ids.size()), pt = t_user + t_result;
    prefill_tokens += ptoks, prefill_seconds += pt, decode_tokens += double(gen), decode_seconds += t_gen;
    const double rss = StatusMb("VmRSS:");
    if (rss_after_fill < 0 && st->cache().tokens() >= int64_t(sink.size()) + st->window()) {
      rss_after_fill = rss;
      anon_after_fill = StatusMb("RssAnon:");
    }
    const double decode_tps = double(gen) / t_gen;
    if (nt < kEdgeTurns) first_decode[nt] = decode_tps;
    last_decode[nt % kEdgeTurns] = decode_tps;
    ++nt;
    if (!json && ((turn + 1) % every == 0 || turn == 0 || turn + 1 == turns)) {
      std::printf("%6lld %10lld %12.0f %12.0f %10.1f %12.2f\n", turn + 1, (long long)st->cache().tokens(), ptoks / pt,
                  double(gen) / t_gen, rss, st->cache().bytes() / 1e6);
    }
    progress.Update(size_t(turn + 1), run_clock.Seconds(), "turns");
  }
  progress.Finish();
  auto mean = [&](const std::array<double, kEdgeTurns>& a) {
    const size_t n = std::min(nt, kEdgeTurns);
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += a[i];
    return n ? s / double(n) : 0.0;
  };
  nlohmann::json j = {{"turns", turns},
                      {"threads", threads},
                      {"kernels", CqKernelTarget()},
                      {"fp32", opt.fp32},
                      {"synthetic_tokens", synthetic},
                      {"sink_tokens", sink.size()},
                      {"window", st->window()},
                      {"tokens", st->cache().tokens()},
                      {"cache_bytes", cache_bytes},
                      {"state_bytes", st->bytes()},
                      {"sink_prefill_tps", double(sink.size()) / sink_seconds},
                      {"prefill_tps", prefill_tokens / prefill_seconds},
                      {"decode_tps", decode_tokens / decode_seconds},
                      {"decode_tps_first", mean(first_decode)},
                      {"decode_tps_last", mean(last_decode)},
                      {"peak_rss_mb", StatusMb("VmHWM:")},
                      {"rss_mb_after_fill", rss_after_fill},
                      {"rss_mb_end", StatusMb("VmRSS:")},
                      {"rss_anon_mb_after_fill", anon_after_fill},  // the heap and stacks, without the mapped weights
                      {"rss_anon_mb_end", StatusMb("RssAnon:")},
                      {"seconds", total.Seconds()}};
  // Warm prefill of the block alone (llama-bench's pp figure): the median of
  // the runs. After the session's memory figures are taken and its state is
  // gone, so they are the session's alone.
  st.reset();
  std::vector<double> block_tps;
  for (long long r = 0; r <= block_runs && block_runs > 0; ++r) {
    auto warm = model.NewState(opt);
    Clock clock;
    model.Forward(*warm, sink, nullptr, false, &pool);
    if (r > 0) block_tps.push_back(double(sink.size()) / clock.Seconds());  // run 0: a fresh state's first touch
  }
  std::sort(block_tps.begin(), block_tps.end());
  const double block_median = block_tps.empty() ? 0.0 : block_tps[block_tps.size() / 2];
  const double block_best = block_tps.empty() ? 0.0 : block_tps.back();
  j["block_prefill_tps"] = block_median;  // warm, median of --block-runs
  j["block_prefill_tps_best"] = block_best;
  if (profile) {
    // Seconds per stage, and each stage's share of the timed total.
    auto stages = [](const ForwardProfile& p) {
      nlohmann::json o = nlohmann::json::object();
      const double total = p.Total();
      for (size_t i = 0; i < size_t(ForwardStage::kCount); ++i) {
        o[kForwardStageNames[i]] = {{"seconds", p.seconds[i]}, {"share", total > 0 ? p.seconds[i] / total : 0.0}};
      }
      return o;
    };
    j["profile"] = {{"sinks", stages(sink_profile)},
                    {"sink_seconds", sink_seconds},
                    {"prefill", stages(prefill_profile)},
                    {"decode", stages(decode_profile)},
                    {"prefill_seconds", prefill_seconds},
                    {"decode_seconds", decode_seconds},
                    {"decode_token_choice_seconds", choice_seconds}};
    if (!json) {
      std::printf("\n%-15s %10s %7s %10s %7s %10s %7s\n", "stage", "sinks ms", "share", "turns ms", "share", "decode ms", "share");
      for (size_t i = 0; i < size_t(ForwardStage::kCount); ++i) {
        std::printf("%-15s", kForwardStageNames[i]);
        for (const ForwardProfile* p : {&sink_profile, &prefill_profile, &decode_profile}) {
          std::printf(" %10.1f %6.1f%%", p->seconds[i] * 1e3, 100 * p->seconds[i] / std::max(p->Total(), 1e-12));
        }
        std::printf("\n");
      }
      std::printf("%-15s %12s %8s %12.1f\n", "token choice", "", "", choice_seconds * 1e3);
    }
  }
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    if (!block_tps.empty()) {
      std::printf("\nsink block of %zu tokens, warm: prefill %.0f tok/s (median of %zu runs, best %.0f)", sink.size(),
                  block_median, block_tps.size(), block_best);
    }
    std::printf("\nprefill %.0f tok/s, decode %.0f tok/s (first 10 turns %.0f, last 10 %.0f), peak RSS %.1f MB, "
                "RSS after the window filled %.1f MB, at the end %.1f MB (anonymous: %.2f, %.2f MB)\n",
                j["prefill_tps"].get<double>(), j["decode_tps"].get<double>(), j["decode_tps_first"].get<double>(),
                j["decode_tps_last"].get<double>(), j["peak_rss_mb"].get<double>(), rss_after_fill,
                j["rss_mb_end"].get<double>(), anon_after_fill, j["rss_anon_mb_end"].get<double>());
  }
  return 0;
}

}  // namespace needle::cli
