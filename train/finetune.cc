#include "train/finetune.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/random.h"
#include "kv/budget.h"
#include "text/tokenizer.h"
#include "train/build.h"
#include "train/lora.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

PackedRows Pack(const std::vector<const EncodedPrompt*>& batch, const ModelConfig& c, int64_t max_len, int64_t window) {
  std::vector<EncodedPrompt> copy;
  copy.reserve(batch.size());
  for (const EncodedPrompt* e : batch) copy.push_back(*e);
  return PackExamples(copy, RowLength(batch, max_len), c, static_cast<uint32_t>(window));
}

// Mean cross-entropy per target token over `data`, in batches of `batch_size`.
double Evaluate(San& model, const std::vector<const EncodedPrompt*>& data, const FinetuneOptions& o, int64_t window) {
  torch::NoGradGuard no_grad;
  double total = 0, count = 0;
  for (size_t at = 0; at < data.size(); at += size_t(o.batch_size)) {
    const std::vector<const EncodedPrompt*> batch(data.begin() + at, data.begin() + std::min(data.size(), at + size_t(o.batch_size)));
    const PackedRows rows = Pack(batch, model->config(), o.max_len, window);
    if (rows.target_tokens == 0) continue;
    total += TargetLoss(model, TrainBatch::From(rows, model->config()), window, torch::kSum).item<double>();
    count += double(rows.target_tokens);
  }
  return count > 0 ? total / count : 0.0;
}

}  // namespace

FinetuneResult Finetune(const FinetuneOptions& o) {
  if (o.epochs < 1 || o.batch_size < 1 || o.max_len < 8 || o.threads < 1 || !(o.lr > 0) || !(o.val_split >= 0 && o.val_split < 1)) {
    throw Error(ErrorCode::kInvalidArgument, "finetune: epochs, batch-size, threads and lr must be positive, max-len >= 8, 0 <= val-split < 1");
  }
  torch::set_num_threads(static_cast<int>(o.threads));
  torch::manual_seed(o.seed);

  BaseModel base = LoadBase(o.base);
  TokenizerModel tok_model;
  if (!o.tokenizer.empty()) {
    tok_model = LoadTokenizerModel(o.tokenizer);
  } else if (base.tokenizer) {
    tok_model = *base.tokenizer;
  } else {
    throw Error(ErrorCode::kInvalidArgument, "finetune: --tokenizer is required (the base '" + o.base + "' embeds none)");
  }
  if (tok_model.pieces.size() > base.config.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "finetune: the tokenizer has " + std::to_string(tok_model.pieces.size()) +
                                                 " pieces but the base's vocab is " + std::to_string(base.config.vocab_size));
  }
  const Tokenizer tok(tok_model);
  const PromptEncoder enc(tok);
  FinetuneResult r;
  const std::vector<EncodedPrompt> all = LoadExamples(o.data, enc, o.max_len, &r.truncated);
  if (all.empty()) throw Error(ErrorCode::kInvalidArgument, "finetune: no examples in " + o.data);

  // Seeded split: a fixed shuffle, the first val_split of it held out.
  std::vector<size_t> idx(all.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  SplitMix64 split_rng(o.seed * 1000003 + 17);
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[split_rng.Next() % i]);
  size_t n_val = o.val_split > 0 && all.size() > 1 ? std::max<size_t>(1, size_t(std::lround(o.val_split * double(all.size())))) : 0;
  n_val = std::min(n_val, all.size() - 1);
  std::vector<const EncodedPrompt*> val, train;
  for (size_t i = 0; i < idx.size(); ++i) (i < n_val ? val : train).push_back(&all[idx[i]]);
  r.train_examples = train.size();
  r.val_examples = val.size();

  // Train at the window the archive will run with (SPEC §4).
  r.window = effective_window(base.config);
  const int64_t steps_per_epoch = (int64_t(train.size()) + o.batch_size - 1) / o.batch_size;
  const int64_t total_steps = steps_per_epoch * o.epochs;
  const int64_t warmup = o.warmup >= 0 ? o.warmup : std::max<int64_t>(1, total_steps / 10);
  std::fprintf(stderr,
               "finetune: %zu examples (%llu truncated to %lld tokens), %zu validation; %lld steps of %lld examples, "
               "window %lld, LoRA rank %lld alpha %g\n",
               train.size(), (unsigned long long)r.truncated, (long long)o.max_len, val.size(), (long long)total_steps,
               (long long)o.batch_size, (long long)r.window, (long long)o.rank, o.alpha);

  San& model = base.model;
  const uint64_t fingerprint = WeightsFingerprint(model);
  Lora lora(base.config, o.rank, o.alpha, o.seed);
  AttachLora(model, lora);
  torch::optim::AdamW opt(lora->parameters(), torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay));
  std::ofstream log(o.out + ".log.jsonl", std::ios::trunc);
  if (!log) throw Error(ErrorCode::kIo, "cannot write '" + o.out + ".log.jsonl'");

  auto validate = [&](int64_t epoch) {
    if (val.empty()) return;
    const double v = Evaluate(model, val, o, r.window);
    r.val_loss.push_back(v);
    std::fprintf(stderr, "%sepoch %lld: validation loss %.4f\n", epoch ? "\n" : "", (long long)epoch, v);
    log << nlohmann::json{{"epoch", epoch}, {"step", r.steps}, {"val_loss", v}}.dump() << "\n";
    log.flush();
  };
  validate(0);
  const auto t_start = std::chrono::steady_clock::now();
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    std::vector<const EncodedPrompt*> order = train;
    SplitMix64 rng(o.seed * 1000003 + uint64_t(epoch));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Next() % i]);
    for (size_t at = 0; at < order.size(); at += size_t(o.batch_size)) {
      const std::vector<const EncodedPrompt*> batch(order.begin() + at, order.begin() + std::min(order.size(), at + size_t(o.batch_size)));
      const PackedRows rows = Pack(batch, base.config, o.max_len, r.window);
      const double lr = WarmupCosine(o.lr, o.min_lr_ratio, warmup, total_steps, r.steps);
      ++r.steps;
      if (rows.target_tokens == 0) continue;  // every target truncated away
      for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      const auto loss = TargetLoss(model, TrainBatch::From(rows, base.config), r.window, torch::kMean);
      opt.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(lora->parameters(), o.clip);
      opt.step();
      const double l = loss.item<double>();
      r.train_loss.push_back(l);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      std::fprintf(stderr, "\repoch %lld  step %lld/%lld  loss %.4f  lr %.2e  ETA %.1f min   ", (long long)epoch,
                   (long long)r.steps, (long long)total_steps, l, lr,
                   double(total_steps - r.steps) * secs / double(r.steps) / 60.0);
      log << nlohmann::json{{"epoch", epoch}, {"step", r.steps}, {"loss", l}, {"lr", lr}}.dump() << "\n";
    }
    validate(epoch);
    // After every epoch, so that a killed run keeps its last full epoch.
    SaveAdapter(o.out, lora, base.config, fingerprint, o.base);
  }
  std::fprintf(stderr, "\n");
  return r;
}

}  // namespace needle::train
