// needle finetune: LoRA fine-tuning (in needle-train, built when libtorch is found).
#include <cstdio>

#include "args.h"
#include "base/error.h"
#include "commands.h"

#if NEEDLE_HAVE_TRAIN
#include "train/finetune.h"
#endif

namespace needle::cli {

int RunFinetune(int argc, char** argv) {
  Args args("finetune", "DATA.jsonl --base CKPT --out ADAPTER [flags]",
            "LoRA fine-tuning of a trained model (SPEC §12) on JSONL tool-calling examples\n"
            "rendered with the prompt format of SPEC §8. Adapters (rank r, scale alpha/r) on\n"
            "the q, k, v, gate and out projections of every layer; the base stays frozen.\n"
            "Batches of --batch-size examples are packed into rows at the base's window\n"
            "(SPEC §4), loss on the assistant targets only; AdamW, warmup then cosine decay\n"
            "to 0, global-norm clip 1.0. A seeded --val-split is held out and its loss\n"
            "printed before training and after every epoch. Examples longer than --max-len\n"
            "are truncated (the count is reported). Writes the adapter after every epoch\n"
            "and ADAPTER.log.jsonl; `needle build CKPT --lora ADAPTER` merges and quantizes.\n"
            "CKPT: a `needle train` run directory, its checkpoint.pt (geometry from the\n"
            "config.json beside it) or a .cact archive (its dequantized weights).",
            {{"base", "CKPT", "run directory, checkpoint.pt or .cact (required)"},
             {"tokenizer", "SPM.model", "SentencePiece model or .cact (default: the tokenizer embedded in the base\n"
                                        "                            archive, or in the run's model.cact; else required)"},
             {"epochs", "N", "passes over the training split (default 3)"},
             {"lora-rank", "R", "adapter rank (default 16)"},
             {"lora-alpha", "A", "adapter scale numerator, scale = A/R (default 32)"},
             {"lr", "X", "peak learning rate (default 1e-4)"},
             {"batch-size", "N", "examples per optimizer step (default 16)"},
             {"max-len", "N", "longest example in tokens, longer ones are truncated (default 1024)"},
             {"val-split", "F", "fraction held out for validation, 0 for none (default 0.1)"},
             {"warmup", "N", "warmup steps (default: a tenth of all steps)"},
             {"threads", "K", "CPU threads (default 2)"},
             {"seed", "N", "seed of the split, the order and the adapter init (default 0)"},
             {"out", "ADAPTER", "adapter file to write (required)"}});
  if (!args.Parse(argc, argv)) return 0;
#if NEEDLE_HAVE_TRAIN
  if (args.positionals().size() != 1) {
    throw Error(ErrorCode::kInvalidArgument, "finetune: expected one DATA.jsonl argument (see --help)");
  }
  train::FinetuneOptions o;
  o.data = args.positionals()[0];
  o.base = args.Require("base");
  o.out = args.Require("out");
  o.tokenizer = args.Get("tokenizer");
  o.epochs = args.GetInt("epochs", o.epochs);
  o.rank = args.GetInt("lora-rank", o.rank);
  o.alpha = args.GetDouble("lora-alpha", o.alpha);
  o.lr = args.GetDouble("lr", o.lr);
  o.batch_size = args.GetInt("batch-size", o.batch_size);
  o.max_len = args.GetInt("max-len", o.max_len);
  o.val_split = args.GetDouble("val-split", o.val_split);
  o.warmup = args.GetInt("warmup", o.warmup);
  o.threads = args.GetInt("threads", o.threads);
  const long long seed = args.GetInt("seed", 0);
  if (seed < 0) throw Error(ErrorCode::kInvalidArgument, "finetune: --seed must be >= 0");
  o.seed = static_cast<uint64_t>(seed);
  if (args.Has("warmup") && o.warmup < 0) throw Error(ErrorCode::kInvalidArgument, "finetune: --warmup must be >= 0");
  if (o.rank < 1 || !(o.alpha > 0)) throw Error(ErrorCode::kInvalidArgument, "finetune: --lora-rank and --lora-alpha must be positive");
  const train::FinetuneResult r = train::Finetune(o);
  std::printf("{\"steps\": %lld, \"train_examples\": %zu, \"val_examples\": %zu, \"truncated\": %llu, ", (long long)r.steps,
              r.train_examples, r.val_examples, (unsigned long long)r.truncated);
  if (!r.val_loss.empty()) std::printf("\"val_loss\": %.5f, ", r.val_loss.back());
  std::printf("\"out\": \"%s\"}\n", o.out.c_str());
  return 0;
#else
  throw Error(ErrorCode::kUnsupported, "finetune: this build has no libtorch (install libtorch-dev via scripts/setup and rebuild)");
#endif
}

}  // namespace needle::cli
