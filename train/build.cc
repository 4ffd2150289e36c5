#include "train/build.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/cact_archive.h"
#include "io/cact_checksum.h"  // WithChecksum
#include "model/export.h"
#include "train/lora.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

namespace fs = std::filesystem;

std::vector<HeadSpec> HeadsOf(const CactArchive& a) {
  std::vector<HeadSpec> out;
  for (const HeadTensors& h : a.layout().heads) out.push_back(h.spec);
  return out;
}

}  // namespace

BaseModel LoadBase(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) throw Error(ErrorCode::kIo, "base '" + path + "' does not exist");
  if (fs::is_directory(p)) {
    if (fs::exists(p / "checkpoint.pt")) return LoadBase((p / "checkpoint.pt").string());
    if (fs::exists(p / "model.cact")) return LoadBase((p / "model.cact").string());
    throw Error(ErrorCode::kIo, "base directory '" + path + "' has neither checkpoint.pt nor model.cact");
  }
  BaseModel b;
  b.checkpoint = path;
  if (p.extension() == ".cact") {
    b.archive = std::make_shared<const CactArchive>(CactArchive::Open(path));
    const CactArchive& a = *b.archive;
    b.config = a.config();
    b.model = San(b.config, HeadsOf(a), 0);
    b.model->Import(a);
    b.tokenizer = a.tokenizer();
    return b;
  }

  // A libtorch checkpoint holds tensors by name only: the geometry comes from beside it.
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const fs::path config_json = dir / "config.json", cact = dir / "model.cact";
  std::optional<CactArchive> archive;
  if (fs::exists(cact)) archive.emplace(CactArchive::Open(cact.string()));
  if (fs::exists(config_json)) {
    std::ifstream in(config_json);
    try {
      b.config = ConfigFromJson(nlohmann::json::parse(in));
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorCode::kInvalidJson, config_json.string() + ": " + e.what());
    } catch (const Error& e) {
      throw Error(e.code(), config_json.string() + ": " + e.what());
    }
  } else if (archive) {
    b.config = archive->config();
  } else {
    throw Error(ErrorCode::kInvalidArgument, "cannot tell the geometry of checkpoint '" + path +
                                                 "': no config.json or model.cact beside it (`needle train` writes both)");
  }
  const std::vector<HeadSpec> heads =
      archive ? HeadsOf(*archive)
              : std::vector<HeadSpec>{DefaultHeadSpec(HeadKind::kContrastive, b.config), DefaultHeadSpec(HeadKind::kConfidence, b.config)};
  if (archive) b.tokenizer = archive->tokenizer();
  b.model = San(b.config, heads, 0);
  torch::serialize::InputArchive ar;
  try {
    ar.load_from(path, torch::kCPU);  // (a run on a GPU saves its tensors there)
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kInvalidArgument, "'" + path + "' is not a libtorch checkpoint: " + e.what_without_backtrace());
  }
  try {
    b.model->load(ar);
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint '" + path + "' does not match the geometry in " +
                                                 (fs::exists(config_json) ? config_json : cact).string() + ": " +
                                                 e.what_without_backtrace());
  }
  // Its tensors are copied on export only where they match the checkpoint bit
  // for bit (a run whose body a stage froze after loading a .cact).
  if (archive) b.archive = std::make_shared<const CactArchive>(std::move(*archive));
  return b;
}

ModelWeights KeepHeads(const ModelWeights& w, const std::vector<HeadKind>& keep) {
  std::vector<HeadSpec> kept;
  for (const HeadSpec& h : w.heads) {
    if (std::find(keep.begin(), keep.end(), h.kind) != keep.end()) kept.push_back(h);
  }
  ModelWeights out = ZeroWeights(w.config, kept);
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < w.specs.size(); ++i) by_name[w.specs[i].name] = i;
  for (size_t i = 0; i < out.specs.size(); ++i) {
    if (out.specs[i].map_key == "heads.manifest") {
      for (size_t h = 0; h < kept.size(); ++h) out.tensors[i][h] = static_cast<float>(static_cast<uint32_t>(kept[h].kind));
      continue;
    }
    const auto it = by_name.find(out.specs[i].name);
    if (it == by_name.end()) throw Error(ErrorCode::kInternal, "KeepHeads: no tensor " + out.specs[i].name);
    out.tensors[i] = w.tensors[it->second];
  }
  return out;
}

BuildResult Build(const BuildOptions& o) {
  BaseModel base = LoadBase(o.base);
  TokenizerModel tok;
  if (!o.tokenizer.empty()) {
    tok = LoadTokenizerModel(o.tokenizer);
  } else if (base.tokenizer) {
    tok = *base.tokenizer;
  } else {
    throw Error(ErrorCode::kInvalidArgument, "build: --tokenizer is required (the base '" + o.base + "' embeds none)");
  }
  BuildResult r;
  r.finetuned = !o.lora.empty();
  if (r.finetuned) {
    const AdapterFile adapter = LoadAdapter(o.lora);
    CheckAdapterMatches(adapter, base.config, o.lora);
    if (WeightsFingerprint(base.model) != adapter.base_fingerprint) {
      // Same geometry, other weights: legitimate for a re-quantized copy of the
      // base, a mistake for another model. Say so, do not refuse.
      std::fprintf(stderr, "build: note: the adapter was trained on other base weights (%s) than %s\n",
                   adapter.base_source.empty() ? "unknown" : adapter.base_source.c_str(), base.checkpoint.c_str());
    }
    MergeLora(base.model, adapter.lora);
  }
  ModelWeights w = base.model->Export();
  // The confidence head was calibrated on the base's outputs and is not tuned
  // with the adapter: a fine-tuned archive leaves it out (confidence null).
  if (r.finetuned) w = KeepHeads(w, {HeadKind::kContrastive});
  ExportCounts counts;
  std::vector<uint8_t> bytes = ExportArchive(w, ParseBitsMap(o.bits, w.specs), tok, base.archive.get(), &counts);
  // Weights dequantized from an archive and quantized again are other weights
  // than the ones the head was calibrated on (at 2 bits its ECE went 0.07 -> 0.26).
  const bool dequantized = base.archive && fs::path(base.checkpoint).extension() == ".cact";
  const bool has_confidence = std::any_of(w.heads.begin(), w.heads.end(), [](const HeadSpec& h) { return h.kind == HeadKind::kConfidence; });
  if (dequantized && counts.quantized > 0 && has_confidence) {
    std::fprintf(stderr,
                 "build: note: %zu of %zu quantized tensors of %s were re-quantized, so its confidence head (calibrated on "
                 "that archive's own turns) is left out and confidence is null; recalibrate with `needle eval --model %s "
                 "--data VAL.jsonl --rollouts R.jsonl` and `needle train-heads --base %s --rollouts R.jsonl --out DIR`\n",
                 counts.quantized, counts.quantized + counts.copied, base.checkpoint.c_str(), o.out.c_str(), o.out.c_str());
    w = KeepHeads(w, {HeadKind::kContrastive});
    bytes = ExportArchive(w, ParseBitsMap(o.bits, w.specs), tok, base.archive.get());
    r.confidence_dropped = true;
  }
  bytes = WithChecksum(std::move(bytes));
  WriteFileAtomically(o.out, bytes);
  r.bytes = bytes.size();
  r.heads = w.heads;
  r.window = CactArchive::FromBytes(bytes).header().kv_window;
  return r;
}

}  // namespace needle::train
