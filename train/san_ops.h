// Fused forward and backward for the SAN's small per-token ops (issue N).
//
// Spelled with libtorch's elementwise ops, each of these is a chain of
// broadcast products over [tokens, lanes, d] with an autograd node per op and a
// broadcast reduction per node in the backward pass: the mHC lane mixing alone
// took a third of a training step. Here each is one op with a hand-written
// backward, one pass over its tensors per token (llm.c's habit: forward and
// backward side by side). Every op has its plain libtorch twin (`Reference*`),
// used on tensors the fused loops do not handle (not float32 on the CPU: a GPU
// run, autocast) and by san_ops_test.cc, which checks values and gradients
// against it.
#pragma once

#include <torch/torch.h>

namespace needle::train {

// x / sqrt(mean(x^2) + 1e-6) over the last dimension.
torch::Tensor RmsUnit(const torch::Tensor& x);
torch::Tensor ReferenceRmsUnit(const torch::Tensor& x);

// exp of `iterations` Sinkhorn–Knopp rounds in log space on per-token n x n
// matrices [..., n, n]: each round subtracts the rows' logsumexp, then the
// columns'. The result is (nearly) doubly stochastic (SPEC §1, mHC H_res).
torch::Tensor SinkhornExp(const torch::Tensor& logits, int iterations);
torch::Tensor ReferenceSinkhornExp(const torch::Tensor& logits, int iterations);

// The mHC lane readout: u[..., :] = sum_j weight[..., j] * lanes[..., j, :].
// lanes [..., n, d], weight [..., n] -> [..., d].
torch::Tensor LaneReadout(const torch::Tensor& lanes, const torch::Tensor& weight);
torch::Tensor ReferenceLaneReadout(const torch::Tensor& lanes, const torch::Tensor& weight);

// The mHC lane update after a block:
// out[..., i, :] = sum_j mix[..., i, j] * lanes[..., j, :] + post[..., i] * y[..., :].
// lanes [..., n, d], mix [..., n, n], post [..., n], y [..., d] -> [..., n, d].
torch::Tensor LaneUpdate(const torch::Tensor& lanes, const torch::Tensor& mix, const torch::Tensor& post,
                         const torch::Tensor& y);
torch::Tensor ReferenceLaneUpdate(const torch::Tensor& lanes, const torch::Tensor& mix, const torch::Tensor& post,
                                  const torch::Tensor& y);

}  // namespace needle::train
