// needle train-heads: the retrieval and confidence heads, body frozen (in needle-train).
#include <cstdio>

#include "args.h"
#include "base/error.h"
#include "commands.h"

#if NEEDLE_HAVE_TRAIN
#include "train/heads.h"
#endif

namespace needle::cli {

int RunTrainHeads(int argc, char** argv) {
  Args args("train-heads", "--base CKPT [--data TRAIN.jsonl] [--val VAL.jsonl] [--rollouts R.jsonl] --out DIR [flags]",
            "Trains the probe-pooled heads of SPEC §2 with the body frozen, on the inputs the\n"
            "engine gives them (docs/agent.md). Contrastive (retrieval): (query, called tool)\n"
            "pairs from --data, in-batch negatives, learned temperature; top-1/top-5 retrieval\n"
            "on --val before and after. Confidence: rollouts from `needle eval --rollouts`\n"
            "(the engine's own turns, labelled exact or not), binary cross-entropy and ECE\n"
            "(10 bins, on a held-out share before and after) of the confidence the engine\n"
            "reports, min(sigmoid(head), the rollout's call_p); a base without a confidence\n"
            "head gets a fresh one. Writes DIR/checkpoint.pt, DIR/config.json and\n"
            "DIR/model.cact (tensors not trained keep the base archive's bytes and widths).",
            {{"base", "CKPT", "run DIR, checkpoint.pt or .cact (required)"},
             {"data", "FILE", "JSONL examples for the contrastive stage"},
             {"val", "FILE", "JSONL examples to score retrieval"},
             {"rollouts", "FILE", "rollouts JSONL for the confidence stage"},
             {"tokenizer", "SPM.model", "default: the base's embedded tokenizer"},
             {"contrastive-steps", "N", "default 300"},
             {"pairs", "N", "(query, tool) pairs per step (default 32)"},
             {"hard-negatives", "N", "per pair, up to N other tools of its example as extra negatives (default 0)"},
             {"refusals", "N", "per step, N requests no tool serves (examples with no call): every tool below --no-tool-cosine for them, the called tool above it for the others (default 0)"},
             {"no-tool-cosine", "X", "the cosine that separates them (default 0.5; the engine's no_tool_cosine)"},
             {"confidence-epochs", "N", "default 8"},
             {"lr", "X", "default 1e-3"},
             {"threads", "K", "default 2"},
             {"seed", "N", "default 0"},
             {"bits", "W|MAP", "width of DIR/model.cact (default: the base archive's widths, else 4)"},
             {"out", "DIR", "output directory (required)"}});
  if (!args.Parse(argc, argv)) return 0;
#if NEEDLE_HAVE_TRAIN
  train::HeadsOptions o;
  o.base = args.Require("base");
  o.out = args.Require("out");
  o.data = args.Get("data");
  o.val = args.Get("val");
  o.rollouts = args.Get("rollouts");
  o.tokenizer = args.Get("tokenizer");
  o.contrastive_steps = args.GetInt("contrastive-steps", o.contrastive_steps);
  o.pairs_per_step = args.GetInt("pairs", o.pairs_per_step);
  o.hard_negatives = args.GetInt("hard-negatives", o.hard_negatives);
  o.refusals_per_step = args.GetInt("refusals", o.refusals_per_step);
  o.no_tool_cosine = args.GetDouble("no-tool-cosine", o.no_tool_cosine);
  o.confidence_epochs = args.GetInt("confidence-epochs", o.confidence_epochs);
  o.lr = args.GetDouble("lr", o.lr);
  o.threads = args.GetInt("threads", o.threads);
  o.seed = static_cast<uint64_t>(args.GetInt("seed", 0));
  o.bits = args.Get("bits", o.bits);
  if (o.contrastive_steps < 0 || o.pairs_per_step < 2 || o.hard_negatives < 0 || o.refusals_per_step < 0 || !(o.no_tool_cosine > -1.0 && o.no_tool_cosine < 1.0) || o.confidence_epochs < 0 || o.threads < 1 || !(o.lr > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "train-heads: steps/epochs >= 0, pairs >= 2, hard negatives and refusals >= 0, no-tool cosine in (-1, 1), threads >= 1, lr > 0");
  }
  const train::HeadsResult r = train::TrainHeads(o);
  std::printf("{\"retrieval_top1\": [%.1f, %.1f], \"retrieval_top5\": [%.1f, %.1f], \"no_tool_auroc\": [%.3f, %.3f], "
              "\"refusals_below\": [%.1f, %.1f], \"calls_above\": [%.1f, %.1f], \"confidence_ece\": [%.4f, %.4f], "
              "\"confidence_bce\": [%.4f, %.4f], \"confidence_epoch\": %lld, \"rollouts\": %lld, \"exact\": %lld, "
              "\"out\": \"%s\"}\n",
              r.top1_before, r.top1_after, r.top5_before, r.top5_after, r.no_tool_auroc_before, r.no_tool_auroc_after,
              r.refusals_below_before, r.refusals_below_after, r.calls_above_before, r.calls_above_after, r.ece_before, r.ece_after, r.bce_before, r.bce_after,
              (long long)r.confidence_epoch, (long long)r.rollouts, (long long)r.positives, o.out.c_str());
  return 0;
#else
  throw Error(ErrorCode::kUnsupported, "train-heads: this build has no libtorch (install libtorch-dev via scripts/setup and rebuild)");
#endif
}

}  // namespace needle::cli
