// Loading a trained base in any of its forms, and `needle build`: base (+ a
// merged LoRA adapter) -> a quantized `.cact` (SPEC §6, §12).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/model_config.h"
#include "io/cact_archive.h"
#include "io/cact_layout.h"
#include "io/tokenizer_blob.h"
#include "train/san.h"

namespace needle::train {

struct BaseModel {
  San model{nullptr};
  ModelConfig config;
  std::string checkpoint;                   // the file the weights came from
  std::optional<TokenizerModel> tokenizer;  // embedded in the base archive (or the run's model.cact)
  // The .cact the weights came from (or the one beside the checkpoint): an
  // export passes it on so the tensors a stage left alone keep their bytes.
  std::shared_ptr<const CactArchive> archive;
};

// Accepts
//  - a run directory of `needle train` (its checkpoint.pt, else its model.cact);
//  - a checkpoint.pt: geometry from the sibling config.json, or from the
//    header of the sibling model.cact (heads from model.cact when present,
//    else the two heads `needle train` makes);
//  - a .cact archive: its header and dequantized weights.
// Errors name the path and what is missing.
BaseModel LoadBase(const std::string& path);

// A copy of `w` keeping only the heads in `keep` (core tensors unchanged).
ModelWeights KeepHeads(const ModelWeights& w, const std::vector<HeadKind>& keep);

struct BuildOptions {
  std::string base;       // run DIR, checkpoint.pt or .cact
  std::string lora;       // adapter from `needle finetune` (optional)
  std::string bits = "4";
  std::string tokenizer;  // SentencePiece .model or .cact; default: the base's embedded tokenizer
  std::string out;        // .cact
};
struct BuildResult {
  size_t bytes = 0;
  bool finetuned = false;
  std::vector<HeadSpec> heads;  // heads written
  uint32_t window = 0;          // the header's kv_window
  // A .cact base re-quantized (another width): its confidence head, calibrated
  // on the base's own turns, is left out (confidence null) until recalibrated.
  bool confidence_dropped = false;
};
// Loads the base, merges the adapter, quantizes with the bits map and writes
// `out`. With an adapter the confidence head is left out (it was not tuned
// with the weights, so a tuned model reports confidence null: SPEC §12,
// docs/format-notes.md). From a .cact base, tensors the build leaves as they
// were keep their bytes; if any is re-quantized (another width) the
// confidence head is left out too, for the same reason (SPEC §10).
// `needle eval --rollouts` + `needle train-heads --rollouts` recalibrate it.
BuildResult Build(const BuildOptions& o);

}  // namespace needle::train
