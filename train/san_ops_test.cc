// The fused ops against their libtorch twins: values and every input's
// gradient under a random upstream gradient, on random inputs.
#include "train/san_ops.h"

#include <gtest/gtest.h>

#include <functional>

namespace needle::train {
namespace {

using Op = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// Max |fused - reference| over the output and each input's gradient.
struct Gap {
  float value = 0;
  std::vector<float> grads;
};

Gap Compare(const Op& fused, const Op& reference, const std::vector<torch::Tensor>& inputs) {
  Gap gap;
  std::vector<torch::Tensor> a, b;
  for (const auto& t : inputs) {
    a.push_back(t.clone().requires_grad_(true));
    b.push_back(t.clone().requires_grad_(true));
  }
  const auto ya = fused(a), yb = reference(b);
  EXPECT_EQ(ya.sizes(), yb.sizes());
  gap.value = (ya - yb).abs().max().item<float>();
  const auto upstream = torch::randn_like(ya);
  const auto ga = torch::autograd::grad({ya}, a, {upstream});
  const auto gb = torch::autograd::grad({yb}, b, {upstream});
  for (size_t i = 0; i < inputs.size(); ++i) gap.grads.push_back((ga[i] - gb[i]).abs().max().item<float>());
  return gap;
}

void ExpectClose(const Gap& gap, float tolerance) {
  EXPECT_LE(gap.value, tolerance);
  for (size_t i = 0; i < gap.grads.size(); ++i) EXPECT_LE(gap.grads[i], tolerance) << "gradient of input " << i;
}

TEST(SanOps, RmsUnitMatchesReference) {
  torch::manual_seed(1);
  for (const auto& shape : {std::vector<int64_t>{3, 7, 256}, {2, 5, 4, 32}, {1, 13}}) {
    const auto x = torch::randn(shape) * 3;
    ExpectClose(Compare([](const auto& v) { return RmsUnit(v[0]); }, [](const auto& v) { return ReferenceRmsUnit(v[0]); },
                        {x}),
                2e-5f);
  }
}

TEST(SanOps, SinkhornExpMatchesReferenceAndIsDoublyStochastic) {
  torch::manual_seed(2);
  const auto logits = torch::randn({4, 9, 4, 4}) * 2;
  ExpectClose(Compare([](const auto& v) { return SinkhornExp(v[0], 20); },
                      [](const auto& v) { return ReferenceSinkhornExp(v[0], 20); }, {logits}),
              2e-5f);
  const auto h = SinkhornExp(logits, 20);
  EXPECT_LT((h.sum(-1) - 1).abs().max().item<float>(), 2e-2f);  // 20 rounds: close, not exact
  EXPECT_LT((h.sum(-2) - 1).abs().max().item<float>(), 1e-5f);  // columns normalised last
  // Other lane counts and a single round.
  ExpectClose(Compare([](const auto& v) { return SinkhornExp(v[0], 1); },
                      [](const auto& v) { return ReferenceSinkhornExp(v[0], 1); }, {torch::randn({6, 3, 3})}),
              2e-5f);
}

TEST(SanOps, LaneReadoutMatchesReference) {
  torch::manual_seed(3);
  ExpectClose(Compare([](const auto& v) { return LaneReadout(v[0], v[1]); },
                      [](const auto& v) { return ReferenceLaneReadout(v[0], v[1]); },
                      {torch::randn({2, 11, 4, 40}), torch::rand({2, 11, 4})}),
              2e-5f);
}

TEST(SanOps, LaneUpdateMatchesReference) {
  torch::manual_seed(4);
  ExpectClose(Compare([](const auto& v) { return LaneUpdate(v[0], v[1], v[2], v[3]); },
                      [](const auto& v) { return ReferenceLaneUpdate(v[0], v[1], v[2], v[3]); },
                      {torch::randn({2, 11, 4, 40}), torch::rand({2, 11, 4, 4}), torch::rand({2, 11, 4}) * 2,
                       torch::randn({2, 11, 40})}),
              3e-5f);
}

TEST(SanOps, NonContiguousInputsAndOtherTypesAreHandled) {
  torch::manual_seed(5);
  // A transposed view goes through the fused loop after a copy.
  const auto lanes = torch::randn({11, 2, 4, 40}).transpose(0, 1);
  ExpectClose(Compare([](const auto& v) { return LaneReadout(v[0], v[1]); },
                      [](const auto& v) { return ReferenceLaneReadout(v[0], v[1]); }, {lanes, torch::rand({2, 11, 4})}),
              2e-5f);
  // float64 takes the reference path and still gives the right values.
  const auto x = torch::randn({3, 16}, torch::kFloat64);
  EXPECT_LT((RmsUnit(x) - ReferenceRmsUnit(x)).abs().max().item<double>(), 1e-12);
}

}  // namespace
}  // namespace needle::train
