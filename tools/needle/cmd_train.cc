// needle train: the libtorch trainer (built when libtorch is found).
#include <cstdio>

#include "args.h"
#include "base/error.h"
#include "commands.h"

#if NEEDLE_HAVE_TRAIN
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "train/trainer.h"
#endif

namespace needle::cli {

#if NEEDLE_HAVE_TRAIN
namespace {

// Starts `nproc` ranks of this same command (this executable, the same
// flags, --threads set) with torchrun's variables, and waits for all; when
// one fails the others are stopped and the launcher fails naming it.
int LaunchRanks(int nproc, int64_t threads, int argc, char** argv) {
  const std::string port = std::to_string(train::FreeLoopbackPort());
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorCode::kIo, "train --nproc: fork failed");
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      std::vector<std::string> args = {"needle-train", "train"};
      for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
      args.push_back("--threads");
      args.push_back(std::to_string(threads));
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      ::execv("/proc/self/exe", cargs.data());
      std::fprintf(stderr, "train --nproc: cannot start rank %d: %s\n", r, std::strerror(errno));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  int failed_rank = -1, failed_status = 0;
  for (size_t done = 0; done < pids.size(); ++done) {
    int status = 0;
    const pid_t pid = ::wait(&status);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && failed_rank < 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] == pid) failed_rank = int(r), failed_status = status;
        else ::kill(pids[r], SIGTERM);
      }
    }
  }
  if (failed_rank >= 0) {
    throw Error(ErrorCode::kInternal, "train --nproc: rank " + std::to_string(failed_rank) +
                                          (WIFEXITED(failed_status) ? " exited with status " + std::to_string(WEXITSTATUS(failed_status))
                                                                    : " was killed by signal " + std::to_string(WTERMSIG(failed_status))));
  }
  return 0;
}

}  // namespace
#endif

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
             {"matmul", "T", "type of the big products: fp32, bf16 (fp32 weights, bf16 operands) or auto (default: bf16 on a CPU with AMX "
                             "or AVX-512 BF16, else fp32)"},
             {"device", "D", "where the steps run: cpu (default), cuda or cuda:N (needs a libtorch built with CUDA; Debian's is CPU-only)"},
             {"seed", "N", "seed (default 0)"},
             {"bits", "W|MAP", "width of the exported model.cact (default 4)"},
             {"mtp-weight", "X", "add the multi-token-prediction loss (SPEC §1, training aid, not exported) with this weight (default 0)"},
             {"out", "DIR", "run directory (required)"},
             {"resume", "", "continue from DIR/checkpoint.pt"},
             {"init-from", "BASE", "start from a trained base's core weights (run DIR, checkpoint.pt or .cact, same geometry and tokenizer; heads keep their init) with a fresh schedule and optimizer"},
             {"stop-at", "N", "stop after step N with a checkpoint there, the schedule still that of --steps"},
             {"nproc", "N", "data-parallel: start N ranks on this machine (Gloo over loopback), each with --threads threads "
                            "(default: the cores shared out); the same global batch and curve as one rank. Several machines: "
                            "start each rank yourself with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set (README)"}});
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
  o.matmul = args.Get("matmul", o.matmul);
  train::MatmulType(o.matmul, torch::kCPU);  // a bad name fails here, before any rank starts
  if (o.mtp_weight < 0) throw Error(ErrorCode::kInvalidArgument, "train: --mtp-weight must be >= 0");
  if (o.steps < 1 || o.batch_tokens < 1 || o.max_len < 8 || o.warmup < 0 || o.window < 0 || o.threads < 1 ||
      o.eval_every < 1 || o.checkpoint_every < 1 || !(o.lr > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "train: steps, batch-tokens, threads, eval/checkpoint intervals and lr must be positive (max-len >= 8)");
  }
  const long long nproc = args.GetInt("nproc", 1);
  if (nproc < 1 || nproc > 256) throw Error(ErrorCode::kInvalidArgument, "train: --nproc must be 1 to 256");
  o.ranks = train::Ranks::FromEnvironment();
  if (nproc > 1 && o.ranks.world == 1) {
    // The launcher: N copies of this command as ranks 0..N-1.
    if (!args.Has("threads")) o.threads = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()) / nproc);
    return LaunchRanks(int(nproc), o.threads, argc, argv);
  }
  if (nproc > 1 && nproc != o.ranks.world) {
    throw Error(ErrorCode::kInvalidArgument, "train: --nproc " + std::to_string(nproc) + " but WORLD_SIZE is " + std::to_string(o.ranks.world));
  }
  const double loss = train::Train(o);
  if (o.ranks.rank != 0) return 0;
  std::printf("{\"final_loss\": %.5f, \"out\": \"%s\"}\n", loss, o.out.c_str());
  return 0;
#else
  throw Error(ErrorCode::kUnsupported, "train: this build has no libtorch (install libtorch-dev via scripts/setup and rebuild)");
#endif
}

}  // namespace needle::cli
