#include "train/heads.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/random.h"
#include "io/cact_archive.h"
#include "io/cact_checksum.h"  // WithChecksum
#include "kv/budget.h"
#include "model/export.h"
#include "text/tokenizer.h"
#include "train/batch.h"
#include "train/build.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

constexpr size_t kMaxEmbedTokens = 512;

// Each sequence in a row of its own (heads pool one sequence at a time).
TrainBatch OnePerRow(const std::vector<EncodedPrompt>& seqs, const ModelConfig& c, int64_t window, torch::Tensor* visible) {
  uint32_t len = 1;
  for (const auto& s : seqs) len = std::max<uint32_t>(len, static_cast<uint32_t>(s.ids.size()));
  PackedRows all;
  all.length = len;
  for (const auto& s : seqs) {
    PackedRows r = PackExamples({s}, len, c, static_cast<uint32_t>(window));
    all.rows += r.rows;
    auto cat = [](auto& dst, const auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
    cat(all.tokens, r.tokens), cat(all.seg, r.seg), cat(all.sink, r.sink), cat(all.pos, r.pos), cat(all.sink_qpos, r.sink_qpos);
    cat(all.targets, r.targets), cat(all.engram_idx, r.engram_idx), cat(all.engram_ok, r.engram_ok), cat(all.tap_ok, r.tap_ok);
  }
  TrainBatch b = TrainBatch::From(all, c);
  *visible = b.seg > 0;
  return b;
}

EncodedPrompt EmbedPrompt(const Tokenizer& tok, const std::string& text) {
  EncodedPrompt p;
  p.ids.push_back(tok.bos_id());
  std::vector<int32_t> body = tok.Encode(text);
  if (body.size() > kMaxEmbedTokens) body.resize(kMaxEmbedTokens);
  p.ids.insert(p.ids.end(), body.begin(), body.end());
  p.target.assign(p.ids.size(), 0);
  p.sink_length = 0;
  return p;
}

size_t HeadIndex(const San& m, HeadKind kind) {
  for (size_t i = 0; i < m->heads.size(); ++i) {
    if (m->heads[i].spec.kind == kind) return i;
  }
  throw Error(ErrorCode::kInvalidArgument, std::string("train-heads: the base has no ") +
                                               (kind == HeadKind::kContrastive ? "contrastive" : "confidence") + " head");
}

std::vector<ojson> ReadJsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, "cannot open '" + path + "'");
  std::vector<ojson> out;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    auto j = ojson::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Error(ErrorCode::kInvalidJson, path + ":" + std::to_string(lineno) + ": not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

struct RetrievalCase {
  std::string query;
  std::vector<std::string> tools;
  size_t correct = 0;
};

// The tool an example calls first, by index into its tools; -1 if none.
int CalledTool(const ojson& ex) {
  if (!ex.contains("answers") || !ex["answers"].is_array() || ex["answers"].empty()) return -1;
  const std::string name = ex["answers"][0].value("name", "");
  for (size_t i = 0; i < ex["tools"].size(); ++i) {
    if (ex["tools"][i].value("name", "") == name) return static_cast<int>(i);
  }
  return -1;
}

// A request none of its declared tools serves: no call, and tools to refuse.
bool ServesNoTool(const ojson& ex) {
  return ex.contains("answers") && ex["answers"].is_array() && ex["answers"].empty() && ex.contains("tools") &&
         ex["tools"].is_array() && !ex["tools"].empty();
}

}  // namespace

double ExpectedCalibrationError(const float* p, const float* label, size_t n) {
  double conf[10] = {}, acc[10] = {};
  size_t cnt[10] = {};
  for (size_t i = 0; i < n; ++i) {
    const int b = std::clamp(static_cast<int>(p[i] * 10), 0, 9);
    conf[b] += p[i], acc[b] += label[i], ++cnt[b];
  }
  double ece = 0;
  for (int b = 0; b < 10; ++b) {
    if (cnt[b]) ece += std::fabs(conf[b] - acc[b]) / double(n);
  }
  return ece;
}

HeadsResult TrainHeads(const HeadsOptions& o) {
  torch::set_num_threads(static_cast<int>(o.threads));
  torch::manual_seed(o.seed);
  BaseModel base = LoadBase(o.base);
  San& model = base.model;
  const ModelConfig& c = base.config;
  const TokenizerModel tok_model = o.tokenizer.empty() ? (base.tokenizer ? *base.tokenizer : throw Error(ErrorCode::kInvalidArgument,
                                                                                                         "train-heads: give --tokenizer (the base has none embedded)"))
                                                       : LoadTokenizerModel(o.tokenizer);
  const Tokenizer tok(tok_model);
  const int64_t window = effective_window(c);
  // A base without a confidence head (`needle build` leaves it out after LoRA
  // or a re-quantization) gets a fresh one to calibrate on the rollouts.
  if (!o.rollouts.empty() &&
      std::none_of(model->heads.begin(), model->heads.end(), [](const auto& h) { return h.spec.kind == HeadKind::kConfidence; })) {
    std::vector<HeadSpec> specs;
    for (const auto& h : model->heads) specs.push_back(h.spec);
    specs.push_back(DefaultHeadSpec(HeadKind::kConfidence, c));
    San fresh(c, specs, o.seed);
    torch::NoGradGuard ng;
    const auto have = model->named_parameters();
    for (auto& p : fresh->named_parameters()) {
      if (const torch::Tensor* t = have.find(p.key())) p.value().copy_(*t);
    }
    model = fresh;
  }
  for (auto& p : model->parameters()) p.set_requires_grad(false);  // the body is frozen
  HeadsResult res;
  SplitMix64 rng(o.seed * 2654435761u + 17);

  // ---- contrastive
  if (!o.data.empty() || !o.val.empty()) {
    const size_t hi = HeadIndex(model, HeadKind::kContrastive);
    auto& head = model->heads[hi];
    auto embed = [&](const std::vector<std::string>& texts) {
      std::vector<EncodedPrompt> seqs;
      for (const auto& t : texts) seqs.push_back(EmbedPrompt(tok, t));
      torch::Tensor visible;
      const TrainBatch b = OnePerRow(seqs, c, window, &visible);
      torch::Tensor cells;
      {
        torch::NoGradGuard ng;
        cells = model->Cells(b, window);
      }
      return torch::nn::functional::normalize(model->HeadOutput(hi, cells, visible),
                                              torch::nn::functional::NormalizeFuncOptions().dim(1));
    };
    std::vector<RetrievalCase> cases;     // requests that call a tool, among 2 or more
    std::vector<RetrievalCase> no_tool;   // requests no declared tool serves
    if (!o.val.empty()) {
      for (const auto& ex : ReadJsonl(o.val)) {
        if (!ex.contains("tools") || !ex["tools"].is_array() || ex["tools"].empty()) continue;
        const int k = CalledTool(ex);
        const bool refusal = ServesNoTool(ex);
        if (refusal ? no_tool.size() >= 200 : (k < 0 || ex["tools"].size() < 2 || cases.size() >= 200)) continue;
        RetrievalCase rc{ex["query"].get<std::string>(), {}, refusal ? 0 : size_t(k)};
        for (const auto& t : ex["tools"]) rc.tools.push_back(t.dump());
        (refusal ? no_tool : cases).push_back(std::move(rc));
        if (cases.size() >= 200 && no_tool.size() >= 200) break;
      }
    }
    // The best declared tool's cosine for each case (what the engine refuses by).
    auto best_cosine = [&](const RetrievalCase& rc, torch::Tensor* sims_out) {
      const auto q = embed({rc.query});
      const auto t = embed(rc.tools);
      const auto sims = torch::matmul(t, q.t()).squeeze(1);
      if (sims_out) *sims_out = sims;
      return sims.max().item<double>();
    };
    auto score = [&](double* top1, double* top5, double* auroc, double* refusals_below, double* calls_above) {
      if (cases.empty()) return;
      torch::NoGradGuard ng;
      size_t hits1 = 0, hits5 = 0, big = 0, above = 0;
      std::vector<double> call_best, refusal_best;
      for (const auto& rc : cases) {
        torch::Tensor sims;
        call_best.push_back(best_cosine(rc, &sims));
        above += call_best.back() > o.no_tool_cosine;
        const auto order = std::get<1>(sims.sort(0, true));
        hits1 += order[0].item<int64_t>() == int64_t(rc.correct);
        if (rc.tools.size() > 5) {
          ++big;
          for (int r = 0; r < 5; ++r) hits5 += order[r].item<int64_t>() == int64_t(rc.correct);
        }
      }
      *top1 = 100.0 * hits1 / cases.size();
      *top5 = big ? 100.0 * hits5 / big : -1;
      *calls_above = 100.0 * above / cases.size();
      if (no_tool.empty()) return;
      size_t below = 0;
      for (const auto& rc : no_tool) {
        refusal_best.push_back(best_cosine(rc, nullptr));
        below += refusal_best.back() < o.no_tool_cosine;
      }
      *refusals_below = 100.0 * below / no_tool.size();
      double wins = 0;  // P(a call's best > a refusal's best), ties half
      for (double c : call_best) {
        for (double r : refusal_best) wins += c > r ? 1.0 : c == r ? 0.5 : 0.0;
      }
      *auroc = wins / (double(call_best.size()) * double(refusal_best.size()));
    };
    score(&res.top1_before, &res.top5_before, &res.no_tool_auroc_before, &res.refusals_below_before, &res.calls_above_before);
    if (!o.data.empty()) {
      struct Pair {
        std::string query, tool;
        std::vector<std::string> others;  // the example's other tools (hard negatives)
      };
      std::vector<Pair> pairs;
      std::vector<Pair> refusals;  // tool empty: a request its tools (others) do not serve
      for (const auto& ex : ReadJsonl(o.data)) {
        const int k = CalledTool(ex);
        if (k < 0) {
          if (o.refusals_per_step > 0 && ServesNoTool(ex)) {
            Pair r{ex["query"].get<std::string>(), "", {}};
            for (const auto& t : ex["tools"]) r.others.push_back(t.dump());
            refusals.push_back(std::move(r));
          }
          continue;
        }
        Pair p{ex["query"].get<std::string>(), ex["tools"][k].dump(), {}};
        for (size_t j = 0; j < ex["tools"].size(); ++j) {
          if (int(j) != k) p.others.push_back(ex["tools"][j].dump());
        }
        pairs.push_back(std::move(p));
      }
      if (pairs.size() < 2) throw Error(ErrorCode::kInvalidArgument, "train-heads: fewer than 2 (query, tool) pairs in " + o.data);
      if (o.refusals_per_step > 0 && refusals.empty()) {
        throw Error(ErrorCode::kInvalidArgument, "train-heads: --refusals needs examples with no call (\"answers\": []) in " + o.data);
      }
      for (size_t i = pairs.size(); i > 1; --i) std::swap(pairs[i - 1], pairs[rng.Next() % i]);
      for (size_t i = refusals.size(); i > 1; --i) std::swap(refusals[i - 1], refusals[rng.Next() % i]);
      size_t refusal_at = 0;
      for (auto* p : {&head.probes, &head.proj, &head.bias}) p->set_requires_grad(true);
      auto log_temp = torch::full({1}, std::log(0.07), torch::requires_grad());
      torch::optim::AdamW opt({head.probes, head.proj, head.bias, log_temp}, torch::optim::AdamWOptions(o.lr).weight_decay(0.0));
      size_t at = 0;
      for (int64_t step = 0; step < o.contrastive_steps; ++step) {
        std::vector<std::string> qs, ts;
        std::vector<const Pair*> batch;
        std::set<std::string> seen;  // one pair per tool text: no false negatives in the batch
        while (int64_t(qs.size()) < o.pairs_per_step && seen.size() < pairs.size()) {
          const Pair& p = pairs[at++ % pairs.size()];
          if (!seen.insert(p.tool).second) continue;
          qs.push_back(p.query), ts.push_back(p.tool), batch.push_back(&p);
        }
        // Hard negatives after the positives: candidates for every query,
        // never a positive of the batch (a tool text is a positive at most once).
        const int64_t positives = int64_t(ts.size());
        for (const Pair* p : batch) {
          std::vector<size_t> pick(p->others.size());
          for (size_t j = 0; j < pick.size(); ++j) pick[j] = j;
          for (size_t j = pick.size(); j > 1; --j) std::swap(pick[j - 1], pick[rng.Next() % j]);
          int64_t added = 0;
          for (size_t j : pick) {
            if (added >= o.hard_negatives) break;
            if (!seen.insert(p->others[j]).second) continue;
            ts.push_back(p->others[j]);
            ++added;
          }
        }
        // Requests no tool serves: their own tools join the candidates (a
        // tool text at most once), and their label is the "no tool" column.
        const int64_t queries = int64_t(qs.size());
        for (int64_t r = 0; r < o.refusals_per_step; ++r) {
          const Pair& p = refusals[refusal_at++ % refusals.size()];
          qs.push_back(p.query);
          for (const std::string& t : p.others) {
            if (seen.insert(t).second) ts.push_back(t);
          }
        }
        const auto qe = embed(qs), te = embed(ts);
        const auto sim = torch::matmul(qe, te.t()) / log_temp.exp();  // [queries + refusals, positives + negatives]
        const auto labels = torch::arange(queries, torch::kInt64);
        // Query rows: with refusals, a "no tool" column at the fixed cosine,
        // the refusals' label (and what every called tool must beat).
        torch::Tensor rows = sim, row_labels = labels;
        if (o.refusals_per_step > 0) {
          rows = torch::cat({sim, torch::full({int64_t(qs.size()), 1}, o.no_tool_cosine) / log_temp.exp()}, 1);
          row_labels = torch::cat({labels, torch::full({int64_t(qs.size()) - queries}, int64_t(ts.size()), torch::kInt64)});
        }
        const auto loss = 0.5 * (torch::nn::functional::cross_entropy(rows, row_labels) +
                                 torch::nn::functional::cross_entropy(sim.narrow(1, 0, positives).t(), labels));
        for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(
            WarmupCosine(o.lr, 0.1, std::min<int64_t>(20, o.contrastive_steps / 10), o.contrastive_steps, step));
        opt.zero_grad();
        loss.backward();
        opt.step();
        std::fprintf(stderr, "\rcontrastive %lld/%lld  loss %.4f  temp %.3f   ", (long long)step + 1, (long long)o.contrastive_steps,
                     loss.item<double>(), log_temp.exp().item<double>());
      }
      std::fprintf(stderr, "\n");
      for (auto* p : {&head.probes, &head.proj, &head.bias}) p->set_requires_grad(false);
      score(&res.top1_after, &res.top5_after, &res.no_tool_auroc_after, &res.refusals_below_after, &res.calls_above_after);
    }
  }

  // ---- confidence
  if (!o.rollouts.empty()) {
    const size_t hi = HeadIndex(model, HeadKind::kConfidence);
    auto& head = model->heads[hi];
    std::vector<EncodedPrompt> seqs;
    std::vector<uint32_t> pool_from;
    std::vector<float> labels, caps;
    for (const auto& r : ReadJsonl(o.rollouts)) {
      if (!r.contains("ids") || !r.contains("exact") || !r.contains("sink")) {
        throw Error(ErrorCode::kInvalidJson, o.rollouts + ": a rollout needs ids, sink and exact (needle eval --rollouts)");
      }
      EncodedPrompt p;
      p.ids = r["ids"].get<std::vector<int32_t>>();
      for (int32_t id : p.ids) {
        if (id < 0 || uint32_t(id) >= c.vocab_size) throw Error(ErrorCode::kInvalidArgument, o.rollouts + ": token id outside the vocabulary");
      }
      p.target.assign(p.ids.size(), 0);
      p.sink_length = r["sink"].get<uint32_t>();
      // Earlier turns between the sinks and pool_from are context, not scored
      // (the engine's head pools the sink block and the turn only).
      const uint32_t from = r.contains("pool_from") ? r["pool_from"].get<uint32_t>() : p.sink_length;
      if (from < p.sink_length || from >= p.ids.size()) {
        throw Error(ErrorCode::kInvalidArgument, o.rollouts + ": a rollout needs sink <= pool_from < the number of ids");
      }
      pool_from.push_back(from);
      seqs.push_back(std::move(p));
      labels.push_back(r["exact"].get<bool>() ? 1.0f : 0.0f);
      // No call_p (older rollouts): no cap, the head alone.
      const double cap = r.contains("call_p") && r["call_p"].is_number() ? r["call_p"].get<double>() : 1.0;
      if (!(cap >= 0.0 && cap <= 1.0)) throw Error(ErrorCode::kInvalidArgument, o.rollouts + ": call_p must be a probability in [0, 1]");
      caps.push_back(float(cap));
    }
    if (seqs.size() < 10) throw Error(ErrorCode::kInvalidArgument, "train-heads: need at least 10 rollouts, got " + std::to_string(seqs.size()));
    res.rollouts = int64_t(seqs.size());
    for (float l : labels) res.positives += l > 0.5f;
    std::vector<size_t> order(seqs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Next() % i]);
    const size_t n_hold = std::max<size_t>(1, size_t(double(order.size()) * o.holdout));
    const std::vector<size_t> hold(order.begin(), order.begin() + n_hold), fit(order.begin() + n_hold, order.end());
    // Cells once per batch (the body is frozen): [B, T, L+1, d] each.
    struct Cached {
      torch::Tensor cells, visible, labels, caps;
    };
    auto cache = [&](const std::vector<size_t>& idx) {
      std::vector<Cached> out;
      for (size_t at = 0; at < idx.size(); at += size_t(o.confidence_batch)) {
        std::vector<EncodedPrompt> b;
        std::vector<float> l, cap;
        std::vector<uint32_t> from;
        for (size_t k = at; k < std::min(idx.size(), at + size_t(o.confidence_batch)); ++k) {
          b.push_back(seqs[idx[k]]), l.push_back(labels[idx[k]]), cap.push_back(caps[idx[k]]), from.push_back(pool_from[idx[k]]);
        }
        Cached cc;
        const TrainBatch tb = OnePerRow(b, c, window, &cc.visible);
        for (size_t r = 0; r < b.size(); ++r) {
          if (from[r] > b[r].sink_length) cc.visible[int64_t(r)].slice(0, b[r].sink_length, from[r]).fill_(false);
        }
        torch::NoGradGuard ng;
        cc.cells = model->Cells(tb, window);
        cc.labels = torch::tensor(l);
        cc.caps = torch::tensor(cap);
        out.push_back(std::move(cc));
      }
      return out;
    };
    const std::vector<Cached> fit_b = cache(fit), hold_b = cache(hold);
    // The confidence the engine reports (clamped: the BCE takes logs).
    auto reported = [](const torch::Tensor& logit, const torch::Tensor& caps) {
      return torch::minimum(torch::sigmoid(logit), caps).clamp(1e-6, 1.0 - 1e-6);
    };
    auto evaluate = [&](double* ece, double* bce) {
      torch::NoGradGuard ng;
      std::vector<float> p, l;
      double loss = 0;
      for (const auto& b : hold_b) {
        const auto pr = reported(model->HeadOutput(hi, b.cells, b.visible).squeeze(1), b.caps).contiguous();
        loss += torch::nn::functional::binary_cross_entropy(
                    pr, b.labels, torch::nn::functional::BinaryCrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
        p.insert(p.end(), pr.data_ptr<float>(), pr.data_ptr<float>() + pr.numel());
        l.insert(l.end(), b.labels.data_ptr<float>(), b.labels.data_ptr<float>() + b.labels.numel());
      }
      *ece = ExpectedCalibrationError(p.data(), l.data(), p.size());
      *bce = loss / double(p.size());
    };
    evaluate(&res.ece_before, &res.bce_before);
    for (auto* p : {&head.probes, &head.proj, &head.bias}) p->set_requires_grad(true);
    torch::optim::AdamW opt({head.probes, head.proj, head.bias}, torch::optim::AdamWOptions(o.lr).weight_decay(0.01));
    std::vector<size_t> border(fit_b.size());
    for (size_t i = 0; i < border.size(); ++i) border[i] = i;
    // The head of the epoch with the lowest held-out BCE is kept (the untrained
    // one included): with a few hundred rollouts the held-out ECE swings by
    // 0.1 from one epoch to the next, and the last epoch is often not the best.
    auto snapshot = [&] {
      torch::NoGradGuard ng;
      return std::vector<torch::Tensor>{head.probes.clone(), head.proj.clone(), head.bias.clone()};
    };
    std::vector<torch::Tensor> best = snapshot();
    double best_bce = res.bce_before;
    for (int64_t epoch = 0; epoch < o.confidence_epochs; ++epoch) {
      for (size_t i = border.size(); i > 1; --i) std::swap(border[i - 1], border[rng.Next() % i]);
      double total = 0;
      for (size_t k : border) {
        const auto q = reported(model->HeadOutput(hi, fit_b[k].cells, fit_b[k].visible).squeeze(1), fit_b[k].caps);
        const auto loss = torch::nn::functional::binary_cross_entropy(q, fit_b[k].labels);
        opt.zero_grad();
        loss.backward();
        opt.step();
        total += loss.item<double>();
      }
      double ece, bce;
      evaluate(&ece, &bce);
      std::fprintf(stderr, "confidence epoch %lld: train bce %.4f, held-out bce %.4f, ECE %.4f%s\n", (long long)epoch + 1,
                   total / std::max<size_t>(1, border.size()), bce, ece, bce < best_bce ? " (best so far)" : "");
      if (bce < best_bce) best_bce = bce, best = snapshot(), res.confidence_epoch = epoch + 1;
    }
    for (auto* p : {&head.probes, &head.proj, &head.bias}) p->set_requires_grad(false);
    {
      torch::NoGradGuard ng;
      head.probes.copy_(best[0]), head.proj.copy_(best[1]), head.bias.copy_(best[2]);
    }
    evaluate(&res.ece_after, &res.bce_after);
  }

  // ---- the result: a base for the next stage
  fs::create_directories(o.out);
  {
    torch::serialize::OutputArchive ar;
    model->save(ar);
    ar.save_to((fs::path(o.out) / "checkpoint.pt").string());
  }
  std::ofstream((fs::path(o.out) / "config.json").string()) << ConfigToJson(c).dump(2) << "\n";
  ModelWeights w = model->Export();
  const BitsMap bits = !o.bits.empty() ? ParseBitsMap(o.bits, w.specs) : base.archive ? BitsMapOf(*base.archive) : ParseBitsMap("4", w.specs);
  WriteFileAtomically((fs::path(o.out) / "model.cact").string(), WithChecksum(ExportArchive(w, bits, tok_model, base.archive.get())));
  return res;
}

}  // namespace needle::train
