// needle train-bench: the trainer's step timed by phase and op family (issue N).
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "args.h"
#include "base/error.h"
#include "commands.h"

#if NEEDLE_HAVE_TRAIN
#include "train/step_profile.h"
#endif

namespace needle::cli {

int RunTrainBench(int argc, char** argv) {
  Args args("train-bench", "--data TRAIN.jsonl --tokenizer SPM.model (--preset NAME | --config FILE.json) [flags]",
            "Times the trainer's own step (the code `needle train` runs) on packed batches of the data:\n"
            "a fresh model per thread count, --warmup untimed steps, then --steps timed ones. Prints JSON:\n"
            "tokens/s (rows x length, as `needle train` counts, and without padding), ms per step by\n"
            "phase (pack, forward, backward, optimizer), model FLOPs per step (the matmuls as computed,\n"
            "attention over the keys the packing mask lets each query see) and MFU against this machine's\n"
            "own 1024^3 fp32 matmul rate on the same threads. --profile adds one step under the libtorch\n"
            "profiler, its self time by op family (forward and backward apart; the optimizer is 'unscoped').\n"
            "A benchmark: compare variants as ratios within one run on one machine.",
            {{"data", "FILE", "examples, JSONL (required; the first --examples are used)"},
             {"tokenizer", "SPM.model", "SentencePiece model or a .cact with one (required)"},
             {"preset", "NAME", "needle2, needle-large"},
             {"config", "FILE", "model config JSON"},
             {"threads", "LIST", "thread counts, comma-separated (default 1,2)"},
             {"steps", "N", "timed steps per thread count (default 6)"},
             {"warmup", "N", "untimed steps first (default 2)"},
             {"batch-tokens", "K", "tokens per step before padding (default 8192)"},
             {"max-len", "N", "longest example in tokens (default 1024)"},
             {"window", "W", "attention window (default 256)"},
             {"examples", "N", "examples read from --data (default 4000)"},
             {"mtp-weight", "X", "include the MTP loss with this weight (default 0)"},
             {"seed", "N", "seed (default 0)"},
             {"matmul", "LIST", "product types, comma-separated: fp32, bf16, auto (default auto)"},
             {"profile", "", "also profile one step by op family"}});
  if (!args.Parse(argc, argv)) return 0;
#if NEEDLE_HAVE_TRAIN
  train::BenchOptions o;
  o.train.data = args.Require("data");
  o.train.tokenizer = args.Require("tokenizer");
  if (args.Has("preset") == args.Has("config")) throw Error(ErrorCode::kInvalidArgument, "train-bench: give exactly one of --preset and --config");
  o.train.config = LoadConfig(args.Has("preset") ? args.Get("preset") : args.Get("config"));
  o.train.batch_tokens = args.GetInt("batch-tokens", o.train.batch_tokens);
  o.train.max_len = args.GetInt("max-len", o.train.max_len);
  o.train.window = args.GetInt("window", o.train.window);
  o.train.mtp_weight = args.GetDouble("mtp-weight", 0.0);
  o.train.seed = static_cast<uint64_t>(args.GetInt("seed", 0));
  o.steps = args.GetInt("steps", o.steps);
  o.warmup_steps = args.GetInt("warmup", o.warmup_steps);
  o.examples = args.GetInt("examples", o.examples);
  o.profile = args.Has("profile");
  if (args.Has("threads")) {
    o.threads.clear();
    std::stringstream list(args.Get("threads"));
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      const long long n = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end || n < 1 || n > 1024) throw Error(ErrorCode::kInvalidArgument, "train-bench: --threads '" + item + "' is not a thread count");
      o.threads.push_back(n);
    }
  }
  if (args.Has("matmul")) {
    o.matmul.clear();
    std::stringstream list(args.Get("matmul"));
    for (std::string item; std::getline(list, item, ',');) {
      train::MatmulType(item, torch::kCPU);  // names a bad type
      o.matmul.push_back(item);
    }
  }
  if (o.steps < 1 || o.warmup_steps < 0 || o.examples < 1 || o.train.batch_tokens < 1 || o.train.max_len < 8 || o.train.window < 0 ||
      o.train.mtp_weight < 0) {
    throw Error(ErrorCode::kInvalidArgument, "train-bench: steps, examples, batch-tokens must be positive, warmup and window >= 0, max-len >= 8");
  }
  std::printf("%s\n", train::RunTrainBench(o).dump(2).c_str());
  return 0;
#else
  throw Error(ErrorCode::kUnsupported, "train-bench: this build has no libtorch (install libtorch-dev via scripts/setup and rebuild)");
#endif
}

}  // namespace needle::cli
