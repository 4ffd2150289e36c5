#include "train/batch.h"

#include <algorithm>

#include "model/ops.h"  // EngramIndex

namespace needle::train {

PackedRows PackExamples(const std::vector<EncodedPrompt>& examples, uint32_t length, const ModelConfig& c,
                        uint32_t window) {
  // First-fit: rows are lists of example indices.
  std::vector<std::vector<size_t>> rows;
  std::vector<uint32_t> used;
  for (size_t i = 0; i < examples.size(); ++i) {
    const uint32_t n = std::min<uint32_t>(length, static_cast<uint32_t>(examples[i].ids.size()));
    size_t r = 0;
    while (r < rows.size() && used[r] + n > length) ++r;
    if (r == rows.size()) rows.emplace_back(), used.push_back(0);
    rows[r].push_back(i);
    used[r] += n;
  }
  PackedRows p;
  p.rows = static_cast<uint32_t>(rows.size());
  p.length = length;
  const size_t N = size_t(p.rows) * length;
  const uint32_t tables = c.num_engram_tables(), eh = c.engram_heads_per_order(), taps = ModelConfig::kEngramTaps;
  const uint32_t dil = c.engram_dilation();
  p.tokens.assign(N, c.pad_token_id);
  p.seg.assign(N, 0);
  p.sink.assign(N, 0);
  p.pos.assign(N, 0);
  p.sink_qpos.assign(N, 0);
  p.targets.assign(N, -100);
  p.engram_idx.assign(N * tables, 0);
  p.engram_ok.assign(N * tables, 0.0f);
  p.tap_ok.assign(N * taps, 0.0f);
  for (uint32_t r = 0; r < p.rows; ++r) {
    uint32_t at = 0;
    for (size_t k = 0; k < rows[r].size(); ++k) {
      const EncodedPrompt& e = examples[rows[r][k]];
      const uint32_t n = std::min<uint32_t>(length, static_cast<uint32_t>(e.ids.size()));
      const int64_t S = std::min<uint32_t>(e.sink_length, n);
      std::vector<int32_t> local(e.ids.begin(), e.ids.begin() + n);
      for (uint32_t q = 0; q < n; ++q) {
        const size_t i = size_t(r) * length + at + q;
        p.tokens[i] = local[q];
        p.seg[i] = static_cast<int64_t>(k + 1);
        p.sink[i] = q < S;
        p.pos[i] = q;
        if (q < S || window == 0) {
          p.sink_qpos[i] = q;
        } else {
          const int64_t first = std::max<int64_t>(S, int64_t(q) - window + 1);
          p.sink_qpos[i] = S + (int64_t(q) - first + 1) - 1;
        }
        // Loss on the next token when that token is a target.
        if (q + 1 < n && e.target[q + 1]) {
          p.targets[i] = local[q + 1];
          ++p.target_tokens;
        }
        for (uint32_t oi = 0; oi < c.engram_orders.size(); ++oi) {
          const uint32_t order = c.engram_orders[oi];
          const bool ok = int64_t(q) - int64_t(order) + 1 >= 0;
          for (uint32_t h = 0; h < eh; ++h) {
            const uint32_t t = oi * eh + h;
            p.engram_idx[i * tables + t] = int64_t(t) * c.engram_slots + EngramIndex(t, order, local.data(), q, c.engram_slots);
            p.engram_ok[i * tables + t] = ok ? 1.0f : 0.0f;
          }
        }
        for (uint32_t j = 0; j < taps; ++j) p.tap_ok[i * taps + j] = int64_t(q) - int64_t(j) * dil >= 0 ? 1.0f : 0.0f;
      }
      at += n;
    }
  }
  return p;
}

}  // namespace needle::train
