// Kernel benchmarks: A8 matvec (decode) and 8-token matmul (prefill) on a
// needle2-sized [512 x 512] matrix, scalar reference vs SIMD, per width.
#include <benchmark/benchmark.h>

#include <vector>

#include "base/random.h"
#include "quant/codebook.h"
#include "quant/cq_matvec.h"

namespace needle {
namespace {

struct Fixture {
  std::vector<uint8_t> blob;
  CqMatrixView view;
  CqLevelsQ8 lv;
  std::vector<std::vector<int8_t>> q;
  std::vector<std::vector<float>> scale;
  std::vector<std::vector<int32_t>> sum;
  std::vector<ActivationQ8> acts;
  std::vector<float> y;

  Fixture(uint32_t rows, uint32_t in, uint32_t bits, uint32_t batch) {
    static const auto codebook = ComputeHeaderCodebook(kCqGroup);
    SplitMix64 rng(1);
    std::vector<float> w(size_t(rows) * in);
    for (float& v : w) v = static_cast<float>(rng.Normal() * 0.02);
    blob.resize(CqBlobBytes(rows, in, bits));
    CqQuantize(w.data(), rows, in, bits, codebook, blob.data());
    view = MakeCqMatrixView(blob.data(), rows, in, bits, codebook);
    lv = QuantizeLevels(view.levels);
    std::vector<float> x(in), rot(CqPaddedIn(in));
    q.resize(batch);
    scale.resize(batch);
    sum.resize(batch);
    for (uint32_t b = 0; b < batch; ++b) {
      for (float& v : x) v = static_cast<float>(rng.Normal());
      RotateForCq(x.data(), in, rot.data());
      q[b].resize(rot.size());
      scale[b].resize(rot.size() / kCqGroup);
      sum[b].resize(rot.size() / kCqGroup);
      ActivationQ8 a{q[b].data(), scale[b].data(), sum[b].data(), 0, 0};
      QuantizeActivation(rot.data(), static_cast<uint32_t>(rot.size()), CqFieldBits(bits), a);
      acts.push_back(a);
    }
    y.resize(size_t(rows) * batch);
  }
};

void BM_MatVecReference(benchmark::State& state) {
  Fixture f(512, 512, static_cast<uint32_t>(state.range(0)), 1);
  for (auto _ : state) {
    CqMatVecA8Reference(f.view, f.lv, f.acts[0], 0, 512, f.y.data());
    benchmark::DoNotOptimize(f.y.data());
  }
  state.counters["weights/s"] = benchmark::Counter(512.0 * 512, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MatVec(benchmark::State& state) {
  Fixture f(512, 512, static_cast<uint32_t>(state.range(0)), 1);
  for (auto _ : state) {
    CqMatVecA8(f.view, f.lv, f.acts[0], 0, 512, f.y.data());
    benchmark::DoNotOptimize(f.y.data());
  }
  state.counters["weights/s"] = benchmark::Counter(512.0 * 512, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(CqKernelTarget());
}

void BM_MatMul8(benchmark::State& state) {
  Fixture f(512, 512, static_cast<uint32_t>(state.range(0)), 8);
  for (auto _ : state) {
    CqMatMulA8(f.view, f.lv, f.acts.data(), 8, 0, 512, f.y.data(), 512);
    benchmark::DoNotOptimize(f.y.data());
  }
  state.counters["weight-tokens/s"] = benchmark::Counter(512.0 * 512 * 8, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_MatVecReference)->Arg(2)->Arg(4);
BENCHMARK(BM_MatVec)->Arg(2)->Arg(3)->Arg(4)->Arg(5);
BENCHMARK(BM_MatMul8)->Arg(2)->Arg(4);

}  // namespace
}  // namespace needle
