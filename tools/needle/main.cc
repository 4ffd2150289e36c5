// needle: one binary, subcommands, `--help` on each.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "base/error.h"
#include "commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

const Command kCommands[] = {
    {"random", needle::cli::RunRandom, "create an archive with random weights (SPEC §1 init)"},
    {"inspect", needle::cli::RunInspect, "validate an archive and show geometry, budget and tensors"},
    {"bench", needle::cli::RunBench, "simulate a long session: speed, memory, cache bytes"},
    {"bench-batch", needle::cli::RunBenchBatch, "decode speed of N concurrent sessions, alone vs batched"},
    {"train", needle::cli::ExecTrain, "train a model from scratch on JSONL data (libtorch)"},
    {"train-heads", needle::cli::ExecTrainHeads, "train the retrieval and confidence heads, body frozen (libtorch)"},
    {"train-bench", needle::cli::ExecTrainBench, "time the trainer's step by phase and op family: tokens/s, MFU (libtorch)"},
    {"finetune", needle::cli::ExecFinetune, "LoRA fine-tuning of a trained model on JSONL data (libtorch)"},
    {"build", needle::cli::ExecBuild, "merge a LoRA adapter into a base and quantize it to a .cact (libtorch)"},
    {"run", needle::cli::RunRun, "answer one request with a tool call (prints the envelope)"},
    {"chat", needle::cli::RunChat, "interactive multi-turn session (tool results typed or via --exec)"},
    {"serve", needle::cli::ExecServe, "OpenAI-compatible HTTP server: chat completions with tools, streaming"},
    {"eval", needle::cli::RunEval, "score a model on JSONL examples through the agent (exact calls, refusals, ...)"},
    {"tokenize", needle::cli::RunTokenize, "encode text with an archive's tokenizer (ids or pieces)"},
    {"tokenizer-train", needle::cli::ExecTokenizerTrain, "train the SentencePiece BPE tokenizer (SPEC §7)"},
    {"generate-data", needle::cli::RunGenerateData, "generate tool-calling training data offline (JSONL)"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: needle <command> [flags]   (needle <command> --help for details)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-16s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(argc - 2, argv + 2);
    } catch (const needle::Error& e) {
      std::fprintf(stderr, "needle %s: error [%s]: %s\n", c.name, needle::ErrorCodeName(e.code()), e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "needle %s: error [internal_error]: %s\n", c.name, e.what());
      return 2;
    }
  }
  std::fprintf(stderr, "needle: unknown command '%s'\n", argv[1]);
  Usage(stderr);
  return 2;
}
