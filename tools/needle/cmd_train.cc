// needle train: the libtorch trainer (built when libtorch is found).
#include <cstdio>

#include "args.h"
#include "base/error.h"
#include "commands.h"

#if NEEDLE_HAVE_TRAIN
#include "train/trainer.h"
#endif

namespace needle::cli {

int RunTrain(int argc, char** argv) {
  Args args("train", "--data TRAIN.jsonl --tokenizer SPM.model (--preset NAME | --config FILE.json) --out DIR [flags]",
            "Trains the SAN (from scratch, or from a base with --init-from) on JSONL tool-calling examples (SPEC §12) rendered\n"
            "with the prompt format of SPEC §8, packed into rows with the window + sink\n"
            "mask (SPEC §4); AdamW, warmup then cosine decay, global-norm clip 1.0, fp32 on\n"
            "the CPU (--device cuda: a GPU, TF32 products). Writes DIR/checkpoint.pt and\n"
            "DIR/model.cact every --checkpoint-every steps and DIR/log.jsonl; --resume\n"
            "continues a killed run from its checkpoint (on any device).",
            {{"data", "FILE", "training examples, JSONL (required)"},
             {"val", "FILE", "validation examples, JSONL"},
             {"tokenizer", "SPM.model", "SentencePiece model (required; embedded in model.cact)"},
             {"preset", "NAME", "needle2, needle-large"},
             {"config", "FILE", "model config JSON (SPEC §1 field names)"},
             {"steps", "N", "optimizer steps (default 1000)"},
             {"batch-tokens", "K", "tokens per step before padding (default 8192)"},
             {"max-len", "N", "longest example in tokens, longer ones are truncated (default 1024)"},
             {"lr", "X", "peak learning rate (default 3e-3)"},
             {"warmup", "N", "warmup steps (default 100)"},
             {"window", "W", "attention window (default 256, the engine's)"},
             {"eval-every", "N", "validation every N steps (default 200)"},
             {"checkpoint-every", "N", "checkpoint every N steps (default 200)"},
             {"threads", "K", "CPU threads (default 2)"},
             {"device", "D", "where the steps run: cpu (default), cuda or cuda:N (needs a libtorch built with CUDA; Debian's is CPU-only)"},
             {"seed", "N", "seed (default 0)"},
             {"bits", "W|MAP", "width of the exported model.cact (default 4)"},
             {"mtp-weight", "X", "add the multi-token-prediction loss (SPEC §1, training aid, not exported) with this weight (default 0)"},
             {"out", "DIR", "run directory (required)"},
             {"resume", "", "continue from DIR/checkpoint.pt"},
             {"init-from", "BASE", "start from a trained base's core weights (run DIR, checkpoint.pt or .cact, same geometry and tokenizer; heads keep their init) with a fresh schedule and optimizer"},
             {"stop-at", "N", "stop after step N with a checkpoint there, the schedule still that of --steps"}});
  if (!args.Parse(argc, argv)) return 0;
#if NEEDLE_HAVE_TRAIN
  train::TrainOptions o;
  o.data = args.Require("data");
  o.val = args.Get("val");
  o.tokenizer = args.Require("tokenizer");
  if (args.Has("preset") == args.Has("config")) throw Error(ErrorCode::kInvalidArgument, "train: give exactly one of --preset and --config");
  o.config = LoadConfig(args.Has("preset") ? args.Get("preset") : args.Get("config"));
  o.out = args.Require("out");
  o.steps = args.GetInt("steps", o.steps);
  o.batch_tokens = args.GetInt("batch-tokens", o.batch_tokens);
  o.max_len = args.GetInt("max-len", o.max_len);
  o.lr = args.GetDouble("lr", o.lr);
  o.warmup = args.GetInt("warmup", o.warmup);
  o.window = args.GetInt("window", o.window);
  o.eval_every = args.GetInt("eval-every", o.eval_every);
  o.checkpoint_every = args.GetInt("checkpoint-every", o.checkpoint_every);
  o.threads = args.GetInt("threads", o.threads);
  o.seed = static_cast<uint64_t>(args.GetInt("seed", 0));
  o.bits = args.Get("bits", o.bits);
  o.resume = args.Has("resume");
  o.init_from = args.Get("init-from");
  o.stop_at = args.GetInt("stop-at", 0);
  if (o.stop_at < 0) throw Error(ErrorCode::kInvalidArgument, "train: --stop-at must be a step number");
  o.mtp_weight = args.GetDouble("mtp-weight", 0.0);
  o.device = args.Get("device", o.device);
  if (o.mtp_weight < 0) throw Error(ErrorCode::kInvalidArgument, "train: --mtp-weight must be >= 0");
  if (o.steps < 1 || o.batch_tokens < 1 || o.max_len < 8 || o.warmup < 0 || o.window < 0 || o.threads < 1 ||
      o.eval_every < 1 || o.checkpoint_every < 1 || !(o.lr > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "train: steps, batch-tokens, threads, eval/checkpoint intervals and lr must be positive (max-len >= 8)");
  }
  const double loss = train::Train(o);
  std::printf("{\"final_loss\": %.5f, \"out\": \"%s\"}\n", loss, o.out.c_str());
  return 0;
#else
  throw Error(ErrorCode::kUnsupported, "train: this build has no libtorch (install libtorch-dev via scripts/setup and rebuild)");
#endif
}

}  // namespace needle::cli
