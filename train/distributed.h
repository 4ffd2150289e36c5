// Data-parallel training with PyTorch's distributed package (c10d, Gloo: CPU
// tensors, loopback or a network). Every rank holds the whole model, takes
// its share of each global batch, and the gradients are summed with one
// all-reduce per step, so N ranks follow the curve of one rank at the same
// global batch. Rendezvous is torchrun's: RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT in the environment (rank 0 serves the TCPStore).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace needle::train {

struct Ranks {
  int rank = 0, world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // From RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT; one rank when RANK is
  // unset. A malformed or inconsistent value is an error naming the variable.
  static Ranks FromEnvironment();
};

// The process group of a run; with one rank every call is a no-op.
class Collective {
 public:
  explicit Collective(const Ranks& ranks);
  ~Collective();
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  int rank() const { return ranks_.rank; }
  int world() const { return ranks_.world; }
  bool leader() const { return ranks_.rank == 0; }

  // Sums a number over the ranks.
  double Sum(double value);
  // Sums the parameters' gradients over the ranks in one flat buffer (a
  // parameter without a gradient counts as zeros).
  void SumGradients(const std::vector<torch::Tensor>& params);
  // Rank 0's values of the tensors on every rank.
  void Broadcast(const std::vector<torch::Tensor>& tensors);
  void Barrier();

 private:
  struct Group;
  Ranks ranks_;
  std::unique_ptr<Group> group_;
};

// The examples of a global batch that rank `rank` of `world` takes: each in
// turn to the rank with the fewest tokens so far (the lowest on a tie), the
// same split on every rank. Returns indices into `lengths`.
std::vector<size_t> ShareOfBatch(const std::vector<size_t>& lengths, int rank, int world);

// A TCP port nothing listens on now on loopback (the kernel's pick for port
// 0), for a rendezvous on this machine.
int FreeLoopbackPort();

}  // namespace needle::train
