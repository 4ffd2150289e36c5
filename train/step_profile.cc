#include "train/step_profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <torch/csrc/autograd/profiler_legacy.h>

#include "base/error.h"
#include "io/cact_layout.h"
#include "text/tokenizer.h"
#include "train/batch.h"

namespace needle::train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// The families san.cc and trainer.cc name (OpFamily).
const std::vector<std::string> kFamilies = {"embedding",        "mask_and_rope", "mhc_lanes", "sinkhorn",   "engram",
                                            "attention_projections", "attention_scores", "hadamard_mlp", "final_norm", "loss"};

constexpr const char* kBackwardNode = "autograd::engine::evaluate_function: ";

// Keys each query may see under the packing mask (SPEC §4), summed over the
// batch's real tokens: same example, causal, within the window or a sink.
double VisibleKeys(const PackedRows& p, int64_t window) {
  double total = 0;
  for (uint32_t r = 0; r < p.rows; ++r) {
    const size_t base = size_t(r) * p.length;
    for (uint32_t q = 0; q < p.length; ++q) {
      if (p.seg[base + q] == 0) continue;
      for (uint32_t k = 0; k <= q; ++k) {
        const size_t at = base + k;
        if (p.seg[at] != p.seg[base + q]) continue;
        if (window <= 0 || p.sink[at] || p.pos[base + q] - p.pos[at] < window) total += 1;
      }
    }
  }
  return total;
}

double RealTokens(const PackedRows& p) {
  return double(std::count_if(p.seg.begin(), p.seg.end(), [](int64_t s) { return s != 0; }));
}

std::vector<std::vector<ProfileEvent>> FromLegacy(const torch::autograd::profiler::thread_event_lists& lists) {
  using torch::autograd::profiler::EventKind;
  std::vector<std::vector<ProfileEvent>> out;
  for (const auto& list : lists) {
    std::vector<ProfileEvent> events;
    for (const auto& e : list) {
      if (e.kind() != EventKind::PushRange && e.kind() != EventKind::PopRange) continue;
      ProfileEvent p;
      p.push = e.kind() == EventKind::PushRange;
      if (p.push) p.name = e.name();
      p.us = e.cpuUs();
      p.seq = e.sequenceNr();
      p.id = e.handle();
      events.push_back(std::move(p));
    }
    out.push_back(std::move(events));
  }
  return out;
}

}  // namespace

FamilyTimes AttributeToFamilies(const std::vector<std::vector<ProfileEvent>>& threads, const std::vector<std::string>& families) {
  struct Open {
    const ProfileEvent* push;
    double children_us = 0;
    std::string family;  // the family its self time goes to
    bool backward = false;
  };
  FamilyTimes out;
  std::map<int64_t, std::string> family_of_seq;  // forward op -> family (for its backward node)
  const std::string unscoped = "unscoped";
  // Forward events first (they name the sequence numbers), in every thread.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& events : threads) {
      std::vector<Open> stack;
      for (const ProfileEvent& e : events) {
        if (e.push) {
          Open o{&e, 0, "", false};
          const bool is_family = std::find(families.begin(), families.end(), e.name) != families.end();
          // A backward node's range carries its forward op's sequence number
          // (inside "evaluate_function: ..."): it names the family of its subtree.
          const bool in_backward = e.name.rfind(kBackwardNode, 0) == 0 || (!stack.empty() && stack.back().backward);
          o.backward = in_backward;
          const auto f = in_backward && e.seq >= 0 ? family_of_seq.find(e.seq) : family_of_seq.end();
          if (f != family_of_seq.end()) {
            o.family = f->second;
          } else if (is_family && !in_backward) {
            o.family = e.name;
          } else {
            o.family = stack.empty() ? unscoped : stack.back().family;
          }
          // Ops that create no autograd node record the next node's number too:
          // the last forward op with a number is the one whose node has it.
          if (pass == 0 && !o.backward && e.seq >= 0) family_of_seq[e.seq] = o.family;
          stack.push_back(std::move(o));
          continue;
        }
        // A pop closes the innermost open range with its id.
        auto it = std::find_if(stack.rbegin(), stack.rend(), [&](const Open& o) { return o.push->id == e.id; });
        if (it == stack.rend()) continue;
        const size_t at = size_t(stack.rend() - it) - 1;
        while (stack.size() > at + 1) stack.pop_back();  // unclosed inner ranges: dropped
        const Open o = stack.back();
        stack.pop_back();
        const double dur = e.us - o.push->us;
        if (!stack.empty()) stack.back().children_us += dur;
        if (pass == 1) {
          (o.backward ? out.backward_ms : out.forward_ms)[o.family] += (dur - o.children_us) / 1000.0;
          out.op_ms[o.push->name] += (dur - o.children_us) / 1000.0;
        }
      }
    }
  }
  return out;
}

double ForwardFlopsPerToken(const ModelConfig& c, double visible_keys, double target_fraction) {
  const double d = c.d_model, H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim(), n = c.mhc_lanes, m = c.hada_n();
  double layer = 2 * (d * H * hd * 2 + d * G * hd * 2 + H * hd * d);  // q, gate; k, v; out
  layer += 2 * visible_keys * H * (2 * hd) + 2 * visible_keys * H * hd;  // scores over [window | sink] halves, then values
  layer += 2 * 2 * m * m;                                              // the Hadamard MLP as two dense products
  layer += 2 * (n * d) * (2 * n + n * n) + 2 * n * n * d;              // mHC projections and the lane mix
  double total = c.num_layers * layer;
  total += double(c.engram_layers.size()) * 2 * 2 * d * d;             // engram key and value projections
  total += target_fraction * 2 * d * c.vocab_size;                     // the tied vocab projection at targets
  return total;
}

double MatmulPeakFlops(int64_t threads) {
  torch::NoGradGuard no_grad;
  const int previous = torch::get_num_threads();
  torch::set_num_threads(static_cast<int>(threads));
  const int64_t n = 1024;
  const auto a = torch::randn({n, n}), b = torch::randn({n, n});
  auto c = torch::mm(a, b);
  double best = 1e9;
  for (int rep = 0; rep < 8; ++rep) {
    const auto t0 = Clock::now();
    c = torch::mm(a, b);
    best = std::min(best, Seconds(t0, Clock::now()));
  }
  torch::set_num_threads(previous);
  return 2.0 * n * n * n / best;
}

nlohmann::json RunTrainBench(const BenchOptions& o) {
  const TrainOptions& t = o.train;
  const TokenizerModel tok_model = LoadTokenizerModel(t.tokenizer);
  const Tokenizer tok(tok_model);
  const PromptEncoder enc(tok);
  std::vector<EncodedPrompt> examples = LoadExamples(t.data, enc, t.max_len, nullptr);
  if (examples.empty()) throw Error(ErrorCode::kInvalidArgument, "train-bench: no examples in " + t.data);
  if (int64_t(examples.size()) > o.examples) examples.resize(size_t(o.examples));
  ModelConfig config = t.config;
  config.kv_window = static_cast<uint32_t>(t.window);
  config.Validate();

  // The batches, as the trainer forms them: examples in order, batch_tokens each.
  const int64_t needed = o.warmup_steps + o.steps + (o.profile ? 1 : 0);
  std::vector<std::vector<EncodedPrompt>> batches;
  for (size_t at = 0; int64_t(batches.size()) < needed;) {
    std::vector<EncodedPrompt> batch;
    size_t tokens = 0;
    while (tokens < size_t(t.batch_tokens)) {
      batch.push_back(examples[at++ % examples.size()]);
      tokens += batch.back().ids.size();
    }
    batches.push_back(std::move(batch));
  }
  auto pack = [&](const std::vector<EncodedPrompt>& batch) {
    std::vector<const EncodedPrompt*> ptrs;
    for (const auto& e : batch) ptrs.push_back(&e);
    return PackExamples(batch, RowLength(ptrs, t.max_len), config, static_cast<uint32_t>(t.window));
  };

  nlohmann::json report = {{"config", ConfigToJson(config)},
                           {"parameters_m", config.ParameterCount() / 1e6},
                           {"batch_tokens", t.batch_tokens},
                           {"window", t.window},
                           {"examples", examples.size()},
                           {"steps", o.steps},
                           {"runs", nlohmann::json::array()}};
  for (const int64_t threads : o.threads)
  for (const std::string& matmul : o.matmul) {
    torch::set_num_threads(static_cast<int>(threads));
    torch::manual_seed(t.seed);
    const std::vector<HeadSpec> heads = {DefaultHeadSpec(HeadKind::kContrastive, config), DefaultHeadSpec(HeadKind::kConfidence, config)};
    San model(config, heads, t.seed);
    if (t.mtp_weight > 0) model->EnableMtp(t.seed + 1);
    model->set_matmul_type(MatmulType(matmul, torch::kCPU));
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(t.lr).weight_decay(t.weight_decay).betas({0.9, 0.95}));
    StepPhases phases;
    double pack_s = 0, row_tokens = 0, real_tokens = 0, targets = 0, visible = 0, loss = 0;
    for (int64_t s = 0; s < o.warmup_steps + o.steps; ++s) {
      const auto t0 = Clock::now();
      const PackedRows rows = pack(batches[size_t(s)]);
      const TrainBatch b = TrainBatch::From(rows, config);
      const auto t1 = Clock::now();
      const bool timed = s >= o.warmup_steps;
      loss = TrainStep(model, opt, b, t, timed ? &phases : nullptr).loss;
      if (!timed) continue;
      pack_s += Seconds(t0, t1);
      row_tokens += double(rows.rows) * rows.length;
      const double real = RealTokens(rows);
      real_tokens += real;
      targets += double(rows.target_tokens);
      visible += VisibleKeys(rows, t.window);
    }
    const double total_s = pack_s + phases.forward + phases.backward + phases.optimizer;
    const double per_step_ms = 1000.0 / double(o.steps);
    const double flops = 3 * ForwardFlopsPerToken(config, visible / real_tokens, targets / real_tokens) * real_tokens;
    const double peak = MatmulPeakFlops(threads);
    nlohmann::json run = {
        {"threads", threads},
        {"matmul", matmul},
        {"matmul_type", MatmulType(matmul, torch::kCPU) == torch::kBFloat16 ? "bf16" : "fp32"},
        {"tokens_per_s", row_tokens / total_s},  // as `needle train` counts them: rows x length, padding included
        {"real_tokens_per_s", real_tokens / total_s},
        {"padding", 1.0 - real_tokens / row_tokens},
        {"mean_visible_keys", visible / real_tokens},
        {"step_ms", total_s * per_step_ms},
        {"phase_ms",
         {{"pack", pack_s * per_step_ms},
          {"forward", phases.forward * per_step_ms},
          {"backward", phases.backward * per_step_ms},
          {"optimizer", phases.optimizer * per_step_ms}}},
        {"model_gflop_per_step", flops / double(o.steps) / 1e9},
        {"achieved_gflop_s", flops / total_s / 1e9},
        {"matmul_peak_gflop_s", peak / 1e9},
        {"mfu", flops / total_s / peak},
        {"last_loss", loss}};
    if (o.profile) {
      namespace prof = torch::autograd::profiler;
      const PackedRows rows = pack(batches.back());
      const TrainBatch b = TrainBatch::From(rows, config);
      prof::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
      const auto t0 = Clock::now();
      StepPhases one;
      TrainStep(model, opt, b, t, &one);
      const double wall_ms = Seconds(t0, Clock::now()) * 1000.0;
      const FamilyTimes f = AttributeToFamilies(FromLegacy(prof::disableProfilerLegacy()), kFamilies);
      nlohmann::json by = nlohmann::json::object();
      double attributed = 0;
      for (const std::string& name : kFamilies) {
        const double fw = f.forward_ms.count(name) ? f.forward_ms.at(name) : 0, bw = f.backward_ms.count(name) ? f.backward_ms.at(name) : 0;
        by[name] = {{"forward_ms", fw}, {"backward_ms", bw}};
        attributed += fw + bw;
      }
      const double fw_u = f.forward_ms.count("unscoped") ? f.forward_ms.at("unscoped") : 0;
      const double bw_u = f.backward_ms.count("unscoped") ? f.backward_ms.at("unscoped") : 0;
      by["unscoped"] = {{"forward_ms", fw_u}, {"backward_ms", bw_u}};
      // The ops with the most self time, for finding what a family spends it on.
      std::vector<std::pair<double, std::string>> ops;
      for (const auto& [name, ms] : f.op_ms) ops.push_back({ms, name});
      std::sort(ops.rbegin(), ops.rend());
      nlohmann::json top = nlohmann::json::array();
      for (size_t i = 0; i < ops.size() && i < 20; ++i) top.push_back({{"op", ops[i].second}, {"self_ms", ops[i].first}});
      run["profiled_step"] = {{"wall_ms", wall_ms},
                              {"top_ops", top},
                              {"optimizer_ms", one.optimizer * 1000.0},
                              {"attributed_ms", attributed},
                              {"by_family", by}};
    }
    report["runs"].push_back(run);
  }
  return report;
}

}  // namespace needle::train
