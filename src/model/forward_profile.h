// Wall time per stage of FastModel::Forward, summed over calls, for a
// DecoderState with a profile attached (`needle bench --profile`). Detached,
// a stage costs one null check; attached, two clock reads per stage and layer.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace needle {

enum class ForwardStage : uint8_t {
  kEmbed,          // embedding rows into the lanes
  kMhcNorm,        // mHC: lanes normalized, rotated and quantized for phi
  kMhcMatmul,      // mHC: the phi_pre/post/res products
  kMhcMix,         // mHC: coefficients, Sinkhorn, the layer input (+ norm when no engram)
  kEngramLookup,   // engram: hashed n-gram rows dequantized
  kEngramMatmul,   // engram: key and value products
  kEngramMix,      // engram: taps, gate, the layer input
  kAttnNorm,       // attention input norm, rotated and quantized (engram layers)
  kQkvgMatmul,     // q, k, v and gate products
  kAttention,      // K/V into the cache and attention over sinks + window
  kGate,           // output gate, rotated and quantized for the out product
  kOutMatmul,      // attention output product
  kMlp,            // post norm, Hadamard MLP (two transforms) and lane update
  kLogitsNorm,     // final norm of the positions asked for
  kLogitsMatmul,   // tied logits (the vocab-sized product)
  kCount,
};

inline constexpr const char* kForwardStageNames[] = {
    "embed",  "mhc_norm", "mhc_matmul", "mhc_mix", "engram_lookup", "engram_matmul", "engram_mix", "attn_norm",
    "qkvg_matmul", "attention", "gate", "out_matmul", "mlp", "logits_norm", "logits_matmul"};
static_assert(std::size(kForwardStageNames) == size_t(ForwardStage::kCount));

struct ForwardProfile {
  std::array<double, size_t(ForwardStage::kCount)> seconds{};
  void Clear() { seconds.fill(0.0); }
  double Total() const {
    double t = 0;
    for (double s : seconds) t += s;
    return t;
  }
};

// Adds the time of its scope to one stage of `profile` (nothing when null).
class StageClock {
 public:
  StageClock(ForwardProfile* profile, ForwardStage stage) : profile_(profile), stage_(stage) {
    if (profile_) start_ = std::chrono::steady_clock::now();
  }
  ~StageClock() {
    if (profile_) profile_->seconds[size_t(stage_)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  StageClock(const StageClock&) = delete;
  StageClock& operator=(const StageClock&) = delete;

 private:
  ForwardProfile* profile_;
  ForwardStage stage_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace needle
