// needle build: base (+ LoRA adapter) -> quantized .cact (in needle-train, built when libtorch is found).
#include <cstdio>

#include "args.h"
#include "base/error.h"
#include "commands.h"

#if NEEDLE_HAVE_TRAIN
#include "train/build.h"
#endif

namespace needle::cli {

int RunBuild(int argc, char** argv) {
  Args args("build", "CKPT [--lora ADAPTER] [--bits W|MAP] [--tokenizer SPM.model] --out FILE.cact",
            "Builds the deployable archive (SPEC §6): loads the base CKPT (a `needle train` run\n"
            "directory, its checkpoint.pt, or a .cact), merges the LoRA adapter from `needle\n"
            "finetune` if given (W' = W + alpha/r B A), quantizes with CQ at --bits and writes\n"
            "the effective window (SPEC §3) into the header.\n"
            "An archive built with --lora is marked fine-tuned by leaving out the confidence\n"
            "head (the heads section keeps only the contrastive head): that head was not\n"
            "tuned with the weights, so the engine reports confidence null for it (SPEC §12,\n"
            "docs/format-notes.md). From a .cact base, tensors the build leaves as they were\n"
            "keep their bytes (at the base's own width the archive is written back unchanged);\n"
            "if any is re-quantized (another width) the confidence head is left out too, as it\n"
            "was calibrated on the base's weights. `needle eval --rollouts` and `needle\n"
            "train-heads --base FILE.cact --rollouts` give either kind a calibrated one.",
            {{"lora", "ADAPTER", "adapter file from `needle finetune` (its base geometry must match)"},
             {"bits", "W|MAP", "2, 3, 4, ternary, or a map like default=2,attn.v_proj=4 (default 4)"},
             {"tokenizer", "SPM.model", "SentencePiece model or .cact to embed (default: the tokenizer embedded\n"
                                        "                            in the base archive, or in the run's model.cact; else required)"},
             {"out", "FILE", "output archive (required)"}});
  if (!args.Parse(argc, argv)) return 0;
#if NEEDLE_HAVE_TRAIN
  if (args.positionals().size() != 1) throw Error(ErrorCode::kInvalidArgument, "build: expected one CKPT argument (see --help)");
  train::BuildOptions o;
  o.base = args.positionals()[0];
  o.lora = args.Get("lora");
  o.bits = args.Get("bits", o.bits);
  o.tokenizer = args.Get("tokenizer");
  o.out = args.Require("out");
  const train::BuildResult r = train::Build(o);
  std::string heads;
  for (const HeadSpec& h : r.heads) heads += std::string(heads.empty() ? "" : ", ") + (h.kind == HeadKind::kContrastive ? "\"contrastive\"" : "\"confidence\"");
  std::printf("{\"out\": \"%s\", \"bytes\": %zu, \"finetuned\": %s, \"heads\": [%s], \"kv_window\": %u}\n", o.out.c_str(), r.bytes,
              r.finetuned ? "true" : "false", heads.c_str(), r.window);
  return 0;
#else
  throw Error(ErrorCode::kUnsupported, "build: this build has no libtorch (install libtorch-dev via scripts/setup and rebuild)");
#endif
}

}  // namespace needle::cli
