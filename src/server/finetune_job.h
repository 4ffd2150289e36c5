// The playground's fine-tuning: one background job at a time that runs the
// CLI's own commands, as a user would: `needle generate-data --tools` (when
// asked to phrase examples for the tools), `needle finetune` (LoRA) and
// `needle build` (merge and quantize), reading their progress lines. The
// server can then switch its sessions to the built model.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace needle::server {

struct FinetuneRequest {
  std::string examples_jsonl;       // SPEC §12 JSONL; or, empty:
  nlohmann::ordered_json tools;     // tools to generate `generate` examples for
  uint32_t generate = 0;
  uint32_t epochs = 1;
  std::string bits = "4";
};

class FinetuneJob {
 public:
  // `cli`: the needle binary (its needle-train sibling does the training);
  // `dir`: where jobs write their data, adapter and model.
  FinetuneJob(std::string cli, std::string dir);
  ~FinetuneJob();  // stops a running job (its process is killed)
  FinetuneJob(const FinetuneJob&) = delete;
  FinetuneJob& operator=(const FinetuneJob&) = delete;

  // Starts a job on the base model at `base_path`. Throws ApiError: 409 when
  // a job runs, 501 when the trainer is not built, 400 for a bad request.
  void Start(const FinetuneRequest& r, const std::string& base_path);
  // {"state": "idle"|"running"|"done"|"failed", "stage", "progress" (0..1),
  //  "message", "log" (the last lines), "model" (when done)}.
  nlohmann::ordered_json Status() const;
  // The built model of the last job that finished ("" when none).
  std::string model() const;

 private:
  void Run(std::vector<std::vector<std::string>> commands, std::vector<std::string> stages);
  // Runs one command, feeding each output line to OnLine; its exit status.
  int RunCommand(const std::vector<std::string>& argv, size_t stage);
  void OnLine(const std::string& line, size_t stage);

  std::string cli_, dir_;
  mutable std::mutex mu_;
  std::string state_ = "idle", stage_, message_, model_, pending_model_;
  double progress_ = 0.0, stage_begin_ = 0.0;
  uint32_t epochs_ = 1;
  std::vector<std::string> log_;
  std::thread thread_;
  std::atomic<int> pid_{-1};
  std::atomic<bool> stopping_{false};
};

}  // namespace needle::server
