#include "kv/budget.h"

#include <algorithm>

namespace needle {

uint64_t KvBytesPerPosition(const ModelConfig& c) {
  const uint64_t kv = uint64_t(c.num_kv_heads) * c.head_dim();
  const uint64_t d = c.d_model;
  const uint64_t sites = c.engram_layers.size();
  return uint64_t(c.num_layers) * (2 * kv + 2 * (kv / kKvGroup) * 4) + sites * (d + (d / kKvGroup) * 4);
}

uint32_t budget_window(const ModelConfig& c) {
  const uint64_t per_pos = KvBytesPerPosition(c);
  const uint64_t window = (kKvBudgetBytes / per_pos) / kKvGroup * kKvGroup;
  return static_cast<uint32_t>(std::max<uint64_t>(kKvWindowMin, std::min<uint64_t>(window, c.max_seq_len)));
}

uint32_t effective_window(const ModelConfig& c) {
  const uint32_t budget = budget_window(c);
  return c.kv_window ? std::min(budget, c.kv_window) : budget;
}

}  // namespace needle
