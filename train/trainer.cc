#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/random.h"
#include "io/cact_archive.h"
#include "io/cact_checksum.h"  // WithChecksum
#include "io/tokenizer_blob.h"
#include "model/export.h"
#include "text/tokenizer.h"
#include "train/build.h"
#include "train/lora.h"
#include "train/san.h"

namespace needle::train {
namespace {

namespace fs = std::filesystem;

double LearningRate(const TrainOptions& o, int64_t step) { return WarmupCosine(o.lr, o.min_lr_ratio, o.warmup, o.steps, step); }

// Mean cross-entropy over the target tokens of a set of examples (no grad).
double Evaluate(San& model, const std::vector<EncodedPrompt>& data, const TrainOptions& o, torch::Device device) {
  torch::NoGradGuard no_grad;
  double total = 0, count = 0;
  for (size_t at = 0; at < data.size();) {
    std::vector<EncodedPrompt> chunk;
    size_t tokens = 0;
    while (at < data.size() && (chunk.empty() || tokens + data[at].ids.size() <= size_t(o.batch_tokens))) {
      tokens += data[at].ids.size();
      chunk.push_back(data[at++]);
    }
    std::vector<const EncodedPrompt*> ptrs;
    for (const auto& e : chunk) ptrs.push_back(&e);
    const PackedRows rows = PackExamples(chunk, RowLength(ptrs, o.max_len), model->config(), static_cast<uint32_t>(o.window));
    const TrainBatch b = TrainBatch::From(rows, model->config(), device);
    const auto loss = TargetLoss(model, b, o.window, torch::kSum);
    total += loss.item<double>();
    count += double(rows.target_tokens);
  }
  return count > 0 ? total / count : 0.0;
}

// Copies a trained base's weights into a new run's model, so that a run can
// continue from a shipped .cact (dequantized) or from another run when the
// float checkpoint is gone. Only the core weights are taken, and all must fit:
// the heads keep the run's init (the language-model loss does not train them;
// `needle train-heads` does, afterwards), so a run from a shipped model and
// one from the run that made its body start alike. The base's tokenizer, when
// it embeds one, must be the run's: the embedding rows mean its pieces.
void InitFromBase(San& model, const TokenizerModel& tok, const std::string& path) {
  const BaseModel base = LoadBase(path);
  const std::string diffs = GeometryMismatch(model->config(), base.config, "the base");
  if (!diffs.empty()) throw Error(ErrorCode::kInvalidArgument, "train: --init-from '" + path + "' has another geometry: " + diffs);
  if (base.tokenizer) {
    bool same = base.tokenizer->pieces.size() == tok.pieces.size();
    for (size_t i = 0; same && i < tok.pieces.size(); ++i) same = base.tokenizer->pieces[i].text == tok.pieces[i].text;
    if (!same) {
      throw Error(ErrorCode::kInvalidArgument, "train: --init-from '" + path + "' embeds another tokenizer (" +
                                                   std::to_string(base.tokenizer->pieces.size()) + " pieces) than --tokenizer (" +
                                                   std::to_string(tok.pieces.size()) + " pieces)");
    }
  }
  torch::NoGradGuard no_grad;
  const auto from = base.model->named_parameters();
  size_t copied = 0, kept = 0;
  for (auto& p : model->named_parameters()) {
    if (p.key().rfind("heads", 0) == 0 || p.key().rfind("mtp_", 0) == 0) {
      ++kept;
      continue;
    }
    const torch::Tensor* src = from.find(p.key());
    if (src && src->sizes() == p.value().sizes()) {
      p.value().copy_(*src);
      ++copied;
    } else {
      throw Error(ErrorCode::kInvalidArgument, "train: --init-from '" + path + "' has no tensor " + p.key() + " of the run's shape");
    }
  }
  std::fprintf(stderr, "train: initialised from %s (%zu tensors; %zu head/MTP tensors keep their init)\n", base.checkpoint.c_str(),
               copied, kept);
}

}  // namespace

double WarmupCosine(double lr, double min_ratio, int64_t warmup, int64_t steps, int64_t step) {
  if (step < warmup) return lr * double(step + 1) / double(warmup);
  const double progress = double(step - warmup) / double(std::max<int64_t>(1, steps - warmup));
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress)));
  return lr * (min_ratio + (1.0 - min_ratio) * cosine);
}

StepResult TrainStep(San& model, torch::optim::Optimizer& opt, const TrainBatch& b, const TrainOptions& o, StepPhases* phases,
                     Collective* group) {
  using Clock = std::chrono::steady_clock;
  const bool shared = group && group->world() > 1;
  const auto t0 = Clock::now();
  const auto hidden = model->Hidden(b, o.window);
  torch::Tensor main;
  if (shared) {
    const double targets = group->Sum((b.targets != -100).sum().item<double>());
    main = TargetLossFromHidden(model, b, hidden, torch::kSum) / std::max(1.0, targets);
  } else {
    main = TargetLossFromHidden(model, b, hidden, torch::kMean);
  }
  auto loss = main;
  StepResult r;
  if (o.mtp_weight > 0) {
    const auto m = model->MtpLoss(b, o.window, hidden) / double(shared ? group->world() : 1);
    r.mtp_loss = m.item<double>();
    loss = loss + o.mtp_weight * m;
  }
  const auto t1 = Clock::now();
  opt.zero_grad();
  loss.backward();
  if (shared) group->SumGradients(model->parameters());
  const auto t2 = Clock::now();
  torch::nn::utils::clip_grad_norm_(model->parameters(), o.clip);
  opt.step();
  const auto t3 = Clock::now();
  // The reported loss stays the main one, over the whole batch.
  r.loss = shared ? group->Sum(main.item<double>()) : main.item<double>();
  if (shared && o.mtp_weight > 0) r.mtp_loss = group->Sum(r.mtp_loss);
  if (phases) {
    phases->forward += std::chrono::duration<double>(t1 - t0).count();
    phases->backward += std::chrono::duration<double>(t2 - t1).count();
    phases->optimizer += std::chrono::duration<double>(t3 - t2).count();
  }
  return r;
}

uint32_t RowLength(const std::vector<const EncodedPrompt*>& batch, int64_t max_len) {
  size_t longest = 1;
  for (const EncodedPrompt* e : batch) longest = std::max(longest, e->ids.size());
  uint32_t len = 1;
  while (len < longest) len <<= 1;  // padding to the next power of two (SPEC §12)
  return static_cast<uint32_t>(std::min<int64_t>(len, max_len));
}

// Cross-entropy over the target positions only: the tied vocab projection
// is the largest product of a small model, and most positions are prompt.
torch::Tensor TargetLoss(San& model, const TrainBatch& b, int64_t window, torch::nn::functional::CrossEntropyFuncOptions::reduction_t reduction) {
  return TargetLossFromHidden(model, b, model->Hidden(b, window), reduction);
}

torch::Tensor TargetLossFromHidden(San& model, const TrainBatch& b, const torch::Tensor& h,
                                   torch::nn::functional::CrossEntropyFuncOptions::reduction_t reduction) {
  OpFamily family("loss");
  const auto targets = b.targets.reshape({-1});
  const auto at = (targets != -100).nonzero().squeeze(1);
  const auto logits = model->Logits(h.reshape({-1, h.size(-1)}).index_select(0, at));
  return torch::nn::functional::cross_entropy(logits, targets.index_select(0, at),
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(reduction));
}

TokenizerModel LoadTokenizerModel(const std::string& path) {
  if (fs::path(path).extension() == ".cact") return CactArchive::Open(path).tokenizer();
  return ReadSentencePieceModelFile(path);
}

std::vector<EncodedPrompt> LoadExamples(const std::string& path, const PromptEncoder& enc, int64_t max_len,
                                        uint64_t* skipped) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, "cannot open '" + path + "'");
  std::vector<EncodedPrompt> out;
  std::string line;
  uint64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    nlohmann::ordered_json ex;
    try {
      ex = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error(ErrorCode::kInvalidJson, path + ":" + std::to_string(lineno) + ": " + e.what());
    }
    EncodedPrompt p;
    try {
      p = EncodeExample(enc, ex);
    } catch (const Error& e) {
      throw Error(e.code(), path + ":" + std::to_string(lineno) + ": " + e.what());
    }
    if (static_cast<int64_t>(p.ids.size()) > max_len) {
      if (skipped) ++*skipped;
      p.ids.resize(max_len);
      p.target.resize(max_len);
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {
// Whether this CPU multiplies bf16 natively (AMX tiles or AVX-512 BF16): where
// it does not, oneDNN emulates bf16 and it is slower than fp32.
bool CpuHasNativeBf16() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w == "amx_bf16" || w == "avx512_bf16") return true;
    }
    return false;
  }
  return false;
}
}  // namespace

torch::ScalarType MatmulType(const std::string& name, const torch::Device& device) {
  if (name == "fp32") return torch::kFloat32;
  if (name == "bf16") return torch::kBFloat16;
  if (name != "auto") throw Error(ErrorCode::kInvalidArgument, "train: --matmul '" + name + "' is not fp32, bf16 or auto");
  return device.is_cpu() && torch::hasMKLDNN() && CpuHasNativeBf16() ? torch::kBFloat16 : torch::kFloat32;
}

torch::Device TrainingDevice(const std::string& name) {
  std::optional<torch::Device> d;
  try {
    d.emplace(name);
  } catch (const c10::Error&) {
  }
  if (!d || !(d->is_cpu() || d->is_cuda())) {
    throw Error(ErrorCode::kInvalidArgument, "train: --device '" + name + "' is not cpu, cuda or cuda:N");
  }
  if (d->is_cuda()) {
    const int64_t count = torch::cuda::is_available() ? int64_t(torch::cuda::device_count()) : 0;
    if (count == 0) {
      throw Error(ErrorCode::kUnsupported, "train: --device " + name +
                                               ": this libtorch sees no CUDA device (Debian's libtorch is CPU-only; "
                                               "build needle-train against a CUDA libtorch: README, needle train --device)");
    }
    if (d->has_index() && d->index() >= count) {
      throw Error(ErrorCode::kInvalidArgument, "train: --device " + name + ": there are " + std::to_string(count) + " CUDA devices");
    }
  }
  return *d;
}

double Train(const TrainOptions& o) {
  const torch::Device device = TrainingDevice(o.device);
  Collective group(o.ranks);
  const bool leader = group.leader();
  torch::set_num_threads(static_cast<int>(o.threads));
  torch::manual_seed(o.seed);
  // fp32 matrix products may use TF32 on a GPU (Ampere and later): about 8x
  // the fp32 rate, and the SAN trains in fp32 otherwise unchanged.
  if (device.is_cuda()) at::globalContext().setFloat32MatmulPrecision("high");
  fs::create_directories(o.out);
  const TokenizerModel tok_model = LoadTokenizerModel(o.tokenizer);
  const Tokenizer tok(tok_model);
  ModelConfig config = o.config;
  if (tok_model.pieces.size() > config.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "the tokenizer has " + std::to_string(tok_model.pieces.size()) +
                                                 " pieces but the model vocab is " + std::to_string(config.vocab_size));
  }
  config.kv_window = static_cast<uint32_t>(o.window);
  config.Validate();
  // The run directory carries its geometry, so that checkpoint.pt alone can be
  // loaded again (`needle finetune --base`, `needle build`).
  const std::string config_path = (fs::path(o.out) / "config.json").string();
  const std::string config_text = ConfigToJson(config).dump(2) + "\n";
  if (o.resume && fs::exists(config_path)) {
    std::ifstream in(config_path);
    const ModelConfig was = ConfigFromJson(nlohmann::json::parse(in));
    if (ConfigToJson(was) != ConfigToJson(config)) {
      throw Error(ErrorCode::kInvalidArgument, "train: --resume with another config than the run's " + config_path +
                                                   " (it has " + ConfigToJson(was).dump() + ")");
    }
  }
  if (leader) {
    const std::vector<uint8_t> bytes(config_text.begin(), config_text.end());
    WriteFileAtomically(config_path, bytes);
  }
  const PromptEncoder enc(tok);
  uint64_t truncated = 0;
  const std::vector<EncodedPrompt> train = LoadExamples(o.data, enc, o.max_len, &truncated);
  const std::vector<EncodedPrompt> val = o.val.empty() ? std::vector<EncodedPrompt>{} : LoadExamples(o.val, enc, o.max_len, nullptr);
  if (train.empty()) throw Error(ErrorCode::kInvalidArgument, "train: no examples in " + o.data);
  if (leader) {
    std::fprintf(stderr, "train: %zu examples (%llu truncated to %lld tokens), %zu validation, %.2fM parameters%s\n", train.size(),
                 (unsigned long long)truncated, (long long)o.max_len, val.size(), config.ParameterCount() / 1e6,
                 group.world() > 1 ? (", " + std::to_string(group.world()) + " ranks").c_str() : "");
    std::fprintf(stderr, "train: products in %s\n", MatmulType(o.matmul, device) == torch::kBFloat16 ? "bf16 (fp32 weights)" : "fp32");
  }

  const std::vector<HeadSpec> heads = {DefaultHeadSpec(HeadKind::kContrastive, config), DefaultHeadSpec(HeadKind::kConfidence, config)};
  San model(config, heads, o.seed);
  if (o.mtp_weight > 0) model->EnableMtp(o.seed + 1);  // before the optimizer and the checkpoint load
  // Initialised on the CPU (the same weights for a seed on any device), then moved.
  model->to(device);
  model->set_matmul_type(MatmulType(o.matmul, device));
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay).betas({0.9, 0.95}));
  int64_t step = 0;
  uint64_t tokens_seen = 0, consumed = 0;
  const std::string ckpt = (fs::path(o.out) / "checkpoint.pt").string();
  // A resumed run continues from its own checkpoint, not from the base again.
  if (!o.init_from.empty() && !(o.resume && fs::exists(ckpt))) InitFromBase(model, tok_model, o.init_from);
  if (o.resume && fs::exists(ckpt)) {
    torch::serialize::InputArchive ar;
    ar.load_from(ckpt, device);
    model->load(ar);
    torch::serialize::InputArchive oar;
    ar.read("optimizer", oar);
    opt.load(oar);
    torch::Tensor meta;
    ar.read("meta", meta);
    step = meta[0].item<int64_t>();
    tokens_seen = static_cast<uint64_t>(meta[1].item<int64_t>());
    consumed = static_cast<uint64_t>(meta[2].item<int64_t>());
    if (leader) std::fprintf(stderr, "train: resumed from %s at step %lld\n", ckpt.c_str(), (long long)step);
  }
  group.Broadcast(model->parameters());  // every rank starts from rank 0's weights
  auto save = [&]() {
    if (!leader) return;
    torch::serialize::OutputArchive ar;
    model->save(ar);
    torch::serialize::OutputArchive oar;
    opt.save(oar);
    ar.write("optimizer", oar);
    ar.write("meta", torch::tensor({step, static_cast<int64_t>(tokens_seen), static_cast<int64_t>(consumed)}, torch::kInt64));
    ar.save_to(ckpt + ".tmp");
    fs::rename(ckpt + ".tmp", ckpt);
    ModelWeights w = model->Export();
    WriteFileAtomically((fs::path(o.out) / "model.cact").string(), WithChecksum(ExportArchive(w, ParseBitsMap(o.bits, w.specs), tok_model)));
  };
  std::ofstream log;
  if (leader) log.open((fs::path(o.out) / "log.jsonl").string(), std::ios::app);

  // The example stream is the concatenation of per-epoch permutations (seeded),
  // so a resumed run continues exactly where the killed one stopped.
  std::vector<size_t> order;
  uint64_t order_epoch = UINT64_MAX;
  auto example_at = [&](uint64_t k) -> const EncodedPrompt& {
    const uint64_t epoch = k / train.size();
    if (epoch != order_epoch) {
      order.resize(train.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      SplitMix64 rng(o.seed * 1000003 + epoch);
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Next() % i]);
      order_epoch = epoch;
    }
    return train[order[k % train.size()]];
  };

  const auto t_start = std::chrono::steady_clock::now();
  const int64_t first_step = step;
  uint64_t tokens_this_run = 0;
  double last_loss = 0, val_loss = 0;
  const auto stopped = [&] { return o.stop_at > 0 && step >= o.stop_at; };
  while (step < o.steps && !stopped()) {
    std::vector<EncodedPrompt> batch;
    std::vector<const EncodedPrompt*> ptrs;
    size_t tokens = 0;
    // The global batch, the same on every rank (at least one example per rank).
    while ((tokens < size_t(o.batch_tokens) || batch.size() < size_t(group.world())) &&
           batch.size() < std::max(train.size(), size_t(group.world()))) {
      batch.push_back(example_at(consumed++));
      tokens += batch.back().ids.size();
    }
    if (group.world() > 1) {  // this rank's share
      std::vector<size_t> lengths;
      for (const auto& e : batch) lengths.push_back(e.ids.size());
      std::vector<EncodedPrompt> mine;
      for (size_t i : ShareOfBatch(lengths, group.rank(), group.world())) mine.push_back(std::move(batch[i]));
      batch = std::move(mine);
    }
    for (const auto& e : batch) ptrs.push_back(&e);
    const PackedRows rows = PackExamples(batch, RowLength(ptrs, o.max_len), config, static_cast<uint32_t>(o.window));
    const TrainBatch b = TrainBatch::From(rows, config, device);
    const double lr = LearningRate(o, step);
    for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    const StepResult r = TrainStep(model, opt, b, o, nullptr, &group);
    ++step;
    last_loss = r.loss;
    const double mtp_loss = r.mtp_loss;
    const uint64_t row_tokens = static_cast<uint64_t>(group.Sum(double(rows.rows) * rows.length));
    tokens_seen += row_tokens;
    tokens_this_run += row_tokens;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    const double tps = tokens_this_run / std::max(1e-9, secs);
    const double eta = double(o.steps - step) * secs / double(step - first_step);
    if (leader) {
      std::fprintf(stderr, "\rstep %lld/%lld  loss %.4f  lr %.2e  %.0f tok/s  ETA %.1f min   ", (long long)step, (long long)o.steps,
                   last_loss, lr, tps, eta / 60.0);
    }
    nlohmann::json rec = {{"step", step}, {"loss", last_loss}, {"lr", lr}, {"tokens", tokens_seen}, {"tok_per_s", tps}};
    if (o.mtp_weight > 0) rec["mtp_loss"] = mtp_loss;
    if (leader && !val.empty() && (step % o.eval_every == 0 || step == o.steps)) {
      val_loss = Evaluate(model, val, o, device);
      rec["val_loss"] = val_loss;
      std::fprintf(stderr, "\nstep %lld: validation loss %.4f\n", (long long)step, val_loss);
    }
    if (leader) {
      log << rec.dump() << "\n";
      log.flush();
    }
    if (step % o.checkpoint_every == 0 || step == o.steps || (stopped() && o.checkpoint_at_stop)) save();
  }
  if (leader) std::fprintf(stderr, "\n");
  return val.empty() || !leader ? last_loss : val_loss;
}

}  // namespace needle::train
