#include "model/heads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"

namespace needle {

std::optional<HeadWeights> LoadHead(const CactArchive& archive, HeadKind kind) {
  const HeadTensors* t = archive.layout().FindHead(kind);
  if (!t) return std::nullopt;
  HeadWeights w;
  w.kind = kind;
  w.probes = t->spec.probes;
  w.out = t->spec.out;
  w.d = archive.config().d_model;
  w.probe = archive.Dequantized(t->probes);
  w.proj = archive.Dequantized(t->proj);
  w.bias = archive.Dequantized(t->bias);
  return w;
}

ProbePool::ProbePool(const HeadWeights& w)
    : w_(&w), inv_sqrt_d_(1.0f / std::sqrt(static_cast<float>(w.d))), max_(w.probes), denom_(w.probes), acc_(size_t(w.probes) * w.d) {
  Reset();
}

void ProbePool::Reset() {
  cells_ = 0;
  std::fill(max_.begin(), max_.end(), -std::numeric_limits<float>::infinity());
  std::fill(denom_.begin(), denom_.end(), 0.0f);
  std::fill(acc_.begin(), acc_.end(), 0.0f);
}

void ProbePool::Add(const float* cell) {
  const uint32_t d = w_->d;
  for (uint32_t p = 0; p < w_->probes; ++p) {
    const float* probe = &w_->probe[size_t(p) * d];
    float s = 0.0f;
    for (uint32_t i = 0; i < d; ++i) s += cell[i] * probe[i];
    s *= inv_sqrt_d_;
    float* acc = &acc_[size_t(p) * d];
    if (s > max_[p]) {
      // Rescale what was accumulated against the new maximum.
      const float r = std::exp(max_[p] - s);  // 0 for the first cell (max = -inf)
      denom_[p] = denom_[p] * r + 1.0f;
      for (uint32_t i = 0; i < d; ++i) acc[i] = acc[i] * r + cell[i];
      max_[p] = s;
    } else {
      const float e = std::exp(s - max_[p]);
      denom_[p] += e;
      for (uint32_t i = 0; i < d; ++i) acc[i] += e * cell[i];
    }
  }
  ++cells_;
}

void ProbePool::Output(float* out) const {
  const uint32_t d = w_->d, P = w_->probes;
  for (uint32_t o = 0; o < w_->out; ++o) {
    const float* row = &w_->proj[size_t(o) * P * d];
    double acc = w_->bias[o];
    for (uint32_t p = 0; p < P; ++p) {
      if (denom_[p] <= 0.0f) continue;
      const float inv = 1.0f / denom_[p];
      const float* pooled = &acc_[size_t(p) * d];
      for (uint32_t i = 0; i < d; ++i) acc += double(row[size_t(p) * d + i]) * pooled[i] * inv;
    }
    out[o] = static_cast<float>(acc);
  }
}

void ProbePool::Serialize(std::string& out) const {
  const uint64_t head[2] = {cells_, acc_.size()};
  out.append(reinterpret_cast<const char*>(head), sizeof head);
  out.append(reinterpret_cast<const char*>(max_.data()), max_.size() * sizeof(float));
  out.append(reinterpret_cast<const char*>(denom_.data()), denom_.size() * sizeof(float));
  out.append(reinterpret_cast<const char*>(acc_.data()), acc_.size() * sizeof(float));
}

void ProbePool::Restore(std::string_view& in) {
  uint64_t head[2];
  const size_t need = sizeof head + (max_.size() + denom_.size() + acc_.size()) * sizeof(float);
  if (in.size() < sizeof head) throw Error(ErrorCode::kInvalidArgument, "saved head pool: truncated");
  std::memcpy(head, in.data(), sizeof head);
  if (head[1] != acc_.size() || in.size() < need) throw Error(ErrorCode::kInvalidArgument, "saved head pool: size differs from this model's head");
  const char* p = in.data() + sizeof head;
  std::memcpy(max_.data(), p, max_.size() * sizeof(float)), p += max_.size() * sizeof(float);
  std::memcpy(denom_.data(), p, denom_.size() * sizeof(float)), p += denom_.size() * sizeof(float);
  std::memcpy(acc_.data(), p, acc_.size() * sizeof(float));
  cells_ = head[0];
  in.remove_prefix(need);
}

void NormalizeEmbedding(float* v, uint32_t n) {
  double ss = 0;
  for (uint32_t i = 0; i < n; ++i) ss += double(v[i]) * v[i];
  const float inv = ss > 0 ? static_cast<float>(1.0 / std::sqrt(ss)) : 0.0f;
  for (uint32_t i = 0; i < n; ++i) v[i] *= inv;
}

}  // namespace needle
