#include "server/finetune_job.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/chat_request.h"  // ApiError

namespace needle::server {
namespace {

constexpr size_t kLogLines = 20;

// The share of the whole job each stage ends at.
double StageEnd(const std::string& stage) {
  if (stage == "generate") return 0.1;
  if (stage == "finetune") return 0.9;
  return 1.0;
}

}  // namespace

FinetuneJob::FinetuneJob(std::string cli, std::string dir) : cli_(std::move(cli)), dir_(std::move(dir)) {}

FinetuneJob::~FinetuneJob() {
  stopping_ = true;
  if (const int pid = pid_.load(); pid > 0) ::kill(pid, SIGTERM);
  if (thread_.joinable()) thread_.join();
}

void FinetuneJob::Start(const FinetuneRequest& r, const std::string& base_path) {
  namespace fs = std::filesystem;
  if (r.epochs < 1 || r.epochs > 20) throw ApiError(400, "epochs must be 1 to 20", "epochs");
  if (r.examples_jsonl.empty() && (r.generate < 10 || r.generate > 20000 || !r.tools.is_array() || r.tools.empty())) {
    throw ApiError(400, "give \"examples\" (JSONL), or \"tools\" and \"generate\" (10 to 20000 examples to phrase)", "examples");
  }
  if (cli_.empty()) throw ApiError(501, "this server was started without the needle CLI, which fine-tuning runs", "", "no_trainer", "server_error");
  const fs::path trainer = fs::path(cli_).parent_path() / "needle-train";
  if (!fs::exists(trainer)) {
    throw ApiError(501, "the trainer is not built (needle-train needs libtorch: scripts/setup, then scripts/build); fine-tuning is unavailable",
                   "", "no_trainer", "server_error");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == "running") throw ApiError(409, "a fine-tuning job is running (GET /v1/needle/finetune)", "", "job_running");
  if (thread_.joinable()) thread_.join();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const std::string data = dir_ + "/examples.jsonl", adapter = dir_ + "/adapter", out = dir_ + "/model.cact";
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> stages;
  if (r.examples_jsonl.empty()) {
    const std::string tools = dir_ + "/tools.json";
    std::ofstream(tools) << r.tools.dump();
    commands.push_back({cli_, "generate-data", "--tools", tools, "--num", std::to_string(r.generate), "--seed", "1", "--out", data});
    stages.push_back("generate");
  } else {
    std::ofstream(data) << r.examples_jsonl;
  }
  commands.push_back({cli_, "finetune", data, "--base", base_path, "--epochs", std::to_string(r.epochs), "--out", adapter});
  stages.push_back("finetune");
  commands.push_back({cli_, "build", base_path, "--lora", adapter, "--bits", r.bits, "--out", out});
  stages.push_back("build");
  state_ = "running", stage_ = stages[0], message_.clear(), progress_ = 0.0, epochs_ = r.epochs, pending_model_ = out;
  log_.clear();
  thread_ = std::thread([this, commands, stages] { Run(commands, stages); });
}

void FinetuneJob::Run(std::vector<std::vector<std::string>> commands, std::vector<std::string> stages) {
  for (size_t i = 0; i < commands.size(); ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stage_ = stages[i];
      stage_begin_ = progress_;
    }
    const int status = RunCommand(commands[i], i);
    std::lock_guard<std::mutex> lock(mu_);
    if (status != 0 || stopping_) {
      state_ = "failed";
      message_ = "needle " + commands[i][1] + " failed (exit status " + std::to_string(status) + ")" +
                 (log_.empty() ? "" : ": " + log_.back());
      return;
    }
    progress_ = StageEnd(stages[i]);
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_ = "done", progress_ = 1.0, model_ = pending_model_;
  message_ = "built " + model_ + " (POST /v1/needle/model {\"use\": \"finetuned\"} to serve it)";
}

int FinetuneJob::RunCommand(const std::vector<std::string>& argv, size_t stage) {
  std::vector<char*> args;  // (built before fork: the child only calls async-signal-safe functions)
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {  // the child: its output (both streams) into the pipe
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(args[0], args.data());
    _exit(127);
  }
  pid_ = pid;
  ::close(fds[1]);
  std::string line;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) {
    for (ssize_t k = 0; k < n; ++k) {
      if (buf[k] == '\n' || buf[k] == '\r') {  // progress lines end in \r
        if (!line.empty()) OnLine(line, stage);
        line.clear();
      } else {
        line += buf[k];
      }
    }
  }
  if (!line.empty()) OnLine(line, stage);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void FinetuneJob::OnLine(const std::string& line, size_t) {
  std::lock_guard<std::mutex> lock(mu_);
  log_.push_back(line);
  if (log_.size() > kLogLines) log_.erase(log_.begin());
  // "epoch 2  step 3/10  loss ..." from needle finetune.
  unsigned epoch = 0, step = 0, steps = 0;
  if (stage_ == "finetune" && std::sscanf(line.c_str(), "epoch %u step %u/%u", &epoch, &step, &steps) == 3 && steps > 0 && epoch > 0) {
    const double done = (double(epoch - 1) * steps + step) / (double(epochs_) * steps);
    progress_ = stage_begin_ + (StageEnd("finetune") - stage_begin_) * std::min(1.0, done);
  }
}

nlohmann::ordered_json FinetuneJob::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::ordered_json s = {{"state", state_}, {"stage", stage_}, {"progress", progress_}, {"message", message_}, {"log", log_}};
  s["model"] = model_.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(model_);
  return s;
}

std::string FinetuneJob::model() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_;
}

}  // namespace needle::server
