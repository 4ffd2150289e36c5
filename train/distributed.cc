#include "train/distributed.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#if NEEDLE_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

#include "base/error.h"

namespace needle::train {
namespace {

long EnvNumber(const char* name, long lo, long hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw Error(ErrorCode::kInvalidArgument, std::string("distributed training: ") + name + " is not set");
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end || n < lo || n > hi) {
    throw Error(ErrorCode::kInvalidArgument, std::string("distributed training: ") + name + "='" + v + "' is not a number in [" +
                                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return n;
}

}  // namespace

Ranks Ranks::FromEnvironment() {
  Ranks r;
  const char* rank = std::getenv("RANK");
  if (!rank || !*rank) return r;
  r.world = static_cast<int>(EnvNumber("WORLD_SIZE", 1, 4096));
  r.rank = static_cast<int>(EnvNumber("RANK", 0, r.world - 1));
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) r.master_addr = addr;
  if (std::getenv("MASTER_PORT")) r.master_port = static_cast<int>(EnvNumber("MASTER_PORT", 1, 65535));
  return r;
}

#if NEEDLE_HAVE_GLOO
struct Collective::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
};

Collective::Collective(const Ranks& ranks) : ranks_(ranks) {
  if (ranks_.world <= 1) return;
  group_ = std::make_unique<Group>();
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(ranks_.master_port);
  so.isServer = ranks_.rank == 0;
  so.numWorkers = static_cast<std::size_t>(ranks_.world);
  so.timeout = std::chrono::minutes(10);
  try {
    group_->store = c10::make_intrusive<c10d::TCPStore>(ranks_.master_addr, so);
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(30));
    // Ranks on one machine talk over loopback; across machines, over the
    // interface that reaches MASTER_ADDR's network (GLOO_SOCKET_IFNAME picks one).
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (ranks_.master_addr == "127.0.0.1" || ranks_.master_addr == "localhost") {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    options->threads = 1;
    group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, ranks_.rank, ranks_.world, options);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, "distributed training: rank " + std::to_string(ranks_.rank) + " of " + std::to_string(ranks_.world) +
                                    " could not join " + ranks_.master_addr + ":" + std::to_string(ranks_.master_port) + ": " + e.what());
  }
}

#else
struct Collective::Group {};

Collective::Collective(const Ranks& ranks) : ranks_(ranks) {
  if (ranks_.world > 1) {
    throw Error(ErrorCode::kUnsupported, "distributed training: this build has no Gloo (install libgloo-dev via scripts/setup and rebuild)");
  }
}
double Collective::Sum(double value) { return value; }
void Collective::SumGradients(const std::vector<torch::Tensor>&) {}
void Collective::Broadcast(const std::vector<torch::Tensor>&) {}
void Collective::Barrier() {}
#endif

Collective::~Collective() = default;

#if NEEDLE_HAVE_GLOO
double Collective::Sum(double value) {
  if (!group_) return value;
  std::vector<at::Tensor> t = {torch::tensor({value}, torch::kFloat64)};
  group_->pg->allreduce(t)->wait();
  return t[0].item<double>();
}

void Collective::SumGradients(const std::vector<torch::Tensor>& params) {
  if (!group_) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) const_cast<torch::Tensor&>(p).mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  std::vector<at::Tensor> flat = {torch::cat([&] {
    std::vector<torch::Tensor> v;
    for (const auto& g : grads) v.push_back(g.reshape({-1}));
    return v;
  }())};
  group_->pg->allreduce(flat)->wait();
  int64_t at = 0;
  for (auto& g : grads) {
    g.copy_(flat[0].narrow(0, at, g.numel()).view_as(g));
    at += g.numel();
  }
}

void Collective::Broadcast(const std::vector<torch::Tensor>& tensors) {
  if (!group_) return;
  torch::NoGradGuard no_grad;
  for (const auto& t : tensors) {
    std::vector<at::Tensor> one = {t.detach()};
    group_->pg->broadcast(one)->wait();
  }
}

void Collective::Barrier() {
  if (group_) group_->pg->barrier()->wait();
}

#endif

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(ErrorCode::kIo, "distributed training: no socket for the rendezvous port");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) throw Error(ErrorCode::kIo, "distributed training: cannot pick a rendezvous port");
  return ntohs(a.sin_port);
}

std::vector<size_t> ShareOfBatch(const std::vector<size_t>& lengths, int rank, int world) {
  std::vector<size_t> load(size_t(std::max(1, world)), 0), mine;
  for (size_t i = 0; i < lengths.size(); ++i) {
    size_t best = 0;
    for (size_t r = 1; r < load.size(); ++r)
      if (load[r] < load[best]) best = r;
    load[best] += lengths[i];
    if (int(best) == rank) mine.push_back(i);
  }
  return mine;
}

}  // namespace needle::train
