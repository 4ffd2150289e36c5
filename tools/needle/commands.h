// The `needle` subcommands. Each returns the process exit code; errors are
// thrown as needle::Error and reported by main (one line on stderr, exit 2).
#pragma once

namespace needle::cli {

int RunRandom(int argc, char** argv);
int RunInspect(int argc, char** argv);
int RunBench(int argc, char** argv);
int RunBenchBatch(int argc, char** argv);
int RunTrain(int argc, char** argv);   // in needle-train
int ExecTrain(int argc, char** argv);  // runs needle-train
int RunFinetune(int argc, char** argv);   // in needle-train
int ExecFinetune(int argc, char** argv);  // runs needle-train
int RunBuild(int argc, char** argv);      // in needle-train
int ExecBuild(int argc, char** argv);     // runs needle-train
int RunTrainHeads(int argc, char** argv);   // in needle-train
int ExecTrainHeads(int argc, char** argv);  // runs needle-train
int RunTrainBench(int argc, char** argv);
int ExecTrainBench(int argc, char** argv);  // runs needle-train
int RunTokenize(int argc, char** argv);
int RunRun(int argc, char** argv);
int RunChat(int argc, char** argv);
int RunServe(int argc, char** argv);   // in needle-serve
int ExecServe(int argc, char** argv);  // runs needle-serve
int RunEval(int argc, char** argv);
int RunTokenizerTrain(int argc, char** argv);   // in needle-tokenizer-train
int ExecTokenizerTrain(int argc, char** argv);  // runs needle-tokenizer-train
int RunGenerateData(int argc, char** argv);

}  // namespace needle::cli
