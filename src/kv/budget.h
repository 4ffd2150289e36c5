// The KV budget calculator (SPEC §3). Its constants are part of the contract:
// the published exporter writes the resulting window into the archive header.
#pragma once

#include <cstdint>

#include "base/model_config.h"  // ModelConfig

namespace needle {

inline constexpr uint64_t kKvBudgetBytes = 11ull * 1024 * 1024 + 512 * 1024;  // 12,058,624
inline constexpr uint32_t kKvGroup = 32;        // int8 values per 4-byte scale
inline constexpr uint32_t kKvWindowMin = 160;

// Bytes of int8 K/V (+ scales) one position costs across all layers, plus the
// engram sites' per-position state.
uint64_t KvBytesPerPosition(const ModelConfig& c);
// Window the budget affords: floor(budget / per_pos) rounded down to a
// multiple of 32, capped by max_seq_len, at least 160.
uint32_t budget_window(const ModelConfig& c);
// kv_window when set (capped by the budget), else the budget window.
uint32_t effective_window(const ModelConfig& c);

}  // namespace needle
