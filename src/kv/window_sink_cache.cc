#include "kv/window_sink_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/round.h"
#include "kv/budget.h"

namespace needle {

WindowSinkCache::WindowSinkCache(const CacheGeometry& g) : g_(g) {
  if (g.window == 0) throw Error(ErrorCode::kInvalidArgument, "kv cache: window must be positive");
  if (g.layers == 0 || g.kv_heads == 0 || g.head_dim == 0) throw Error(ErrorCode::kInvalidArgument, "kv cache: empty geometry");
  groups_ = (g.head_dim + kKvGroup - 1) / kKvGroup;
  if (groups_ > kMaxScaleGroups) {
    throw Error(ErrorCode::kInvalidArgument, "kv cache: head_dim " + std::to_string(g.head_dim) + " is above the " +
                                                 std::to_string(kMaxScaleGroups * kKvGroup) + " supported");
  }
  const size_t row = size_t(g.kv_heads) * g.head_dim, srow = size_t(g.kv_heads) * groups_;
  const uint32_t sink_rows = g.shared_sinks ? 0 : g.sink_capacity;
  if (g.float_kv) {
    kf_sink_.assign(size_t(g.layers) * sink_rows * row, 0.0f);
    vf_sink_.assign(kf_sink_.size(), 0.0f);
    kf_ring_.assign(size_t(g.layers) * g.window * row, 0.0f);
    vf_ring_.assign(kf_ring_.size(), 0.0f);
  } else {
    k_sink_.assign(size_t(g.layers) * sink_rows * row, 0);
    v_sink_.assign(k_sink_.size(), 0);
    k_ring_.assign(size_t(g.layers) * g.window * row, 0);
    v_ring_.assign(k_ring_.size(), 0);
    ks_sink_.assign(size_t(g.layers) * sink_rows * srow, 0.0f);
    vs_sink_.assign(ks_sink_.size(), 0.0f);
    ks_ring_.assign(size_t(g.layers) * g.window * srow, 0.0f);
    vs_ring_.assign(ks_ring_.size(), 0.0f);
  }
  token_ring_.assign(std::max<uint32_t>(1, g.token_history), 0);
  engram_ring_.assign(size_t(g.engram_sites) * std::max<uint32_t>(1, g.engram_value_history) * g.d_model, 0.0f);
  token_ring_at_sinks_ = token_ring_;  // sized once: Commit copies into them without allocating
  engram_ring_at_sinks_ = engram_ring_;
}

namespace {

template <typename T>
void PutVector(std::string& out, const std::vector<T>& v) {
  const uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  if (n) out.append(reinterpret_cast<const char*>(v.data()), n * sizeof(T));
}

template <typename T>
void GetVector(std::string_view& in, std::vector<T>& v, const char* what) {
  uint64_t n = 0;
  if (in.size() < sizeof n) throw Error(ErrorCode::kInvalidArgument, std::string("saved cache: truncated before ") + what);
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (n != v.size()) throw Error(ErrorCode::kInvalidArgument, std::string("saved cache: ") + what + " has " + std::to_string(n) +
                                                               " entries, this cache " + std::to_string(v.size()) + " (another model or window?)");
  if (in.size() < n * sizeof(T)) throw Error(ErrorCode::kInvalidArgument, std::string("saved cache: truncated in ") + what);
  if (n) std::memcpy(v.data(), in.data(), n * sizeof(T));  // empty vectors may have a null data()
  in.remove_prefix(n * sizeof(T));
}

}  // namespace

// Saved files keep the scales slot by slot ([layers][slots][kv_heads][groups],
// the order before the cache kept them by group), so files stay the same.
void WindowSinkCache::PutScales(std::string& out, const std::vector<float>& v, uint32_t slots) const {
  const uint64_t n = v.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  if (n == 0) return;
  const size_t at = out.size();
  out.resize(at + n * sizeof(float));
  char* dst = out.data() + at;
  for (uint32_t l = 0; l < g_.layers; ++l) {
    for (uint32_t s = 0; s < slots; ++s) {
      for (uint32_t h = 0; h < g_.kv_heads; ++h) {
        for (uint32_t q = 0; q < groups_; ++q, dst += sizeof(float)) std::memcpy(dst, &v[ScaleAt(l, s, h, q, slots)], sizeof(float));
      }
    }
  }
}

void WindowSinkCache::GetScales(std::string_view& in, std::vector<float>& v, uint32_t slots, const char* what) {
  uint64_t n = 0;
  if (in.size() < sizeof n) throw Error(ErrorCode::kInvalidArgument, std::string("saved cache: truncated before ") + what);
  std::memcpy(&n, in.data(), sizeof n);
  if (n != v.size()) {
    throw Error(ErrorCode::kInvalidArgument, std::string("saved cache: ") + what + " has " + std::to_string(n) +
                                                 " entries, this cache " + std::to_string(v.size()) + " (another model or window?)");
  }
  if (in.size() - sizeof n < n * sizeof(float)) throw Error(ErrorCode::kInvalidArgument, std::string("saved cache: truncated in ") + what);
  in.remove_prefix(sizeof n);
  if (n == 0) return;
  const char* src = in.data();
  for (uint32_t l = 0; l < g_.layers; ++l) {
    for (uint32_t s = 0; s < slots; ++s) {
      for (uint32_t h = 0; h < g_.kv_heads; ++h) {
        for (uint32_t q = 0; q < groups_; ++q, src += sizeof(float)) std::memcpy(&v[ScaleAt(l, s, h, q, slots)], src, sizeof(float));
      }
    }
  }
  in.remove_prefix(n * sizeof(float));
}

void WindowSinkCache::Serialize(std::string& out) const {
  // A cache sharing its sink rows writes its owner's: the file is the same
  // as an owning cache's, and restores into one.
  const WindowSinkCache& s = sinks();
  const int64_t header[4] = {tokens_, g_.sink_capacity, g_.window, g_.float_kv};
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  PutVector(out, s.k_sink_), PutVector(out, s.v_sink_), PutVector(out, k_ring_), PutVector(out, v_ring_);
  PutScales(out, s.ks_sink_, g_.sink_capacity), PutScales(out, s.vs_sink_, g_.sink_capacity);
  PutScales(out, ks_ring_, g_.window), PutScales(out, vs_ring_, g_.window);
  PutVector(out, s.kf_sink_), PutVector(out, s.vf_sink_), PutVector(out, kf_ring_), PutVector(out, vf_ring_);
  PutVector(out, token_ring_), PutVector(out, engram_ring_), PutVector(out, token_ring_at_sinks_), PutVector(out, engram_ring_at_sinks_);
}

void WindowSinkCache::Restore(std::string_view& in) {
  if (g_.shared_sinks) throw Error(ErrorCode::kInvalidState, "saved cache: a cache sharing its sinks is not restored on its own");
  int64_t header[4];
  if (in.size() < sizeof header) throw Error(ErrorCode::kInvalidArgument, "saved cache: truncated header");
  std::memcpy(header, in.data(), sizeof header);
  in.remove_prefix(sizeof header);
  if (header[1] != g_.sink_capacity || header[2] != g_.window || header[3] != int64_t(g_.float_kv)) {
    throw Error(ErrorCode::kInvalidArgument, "saved cache: sink length / window differ from this cache");
  }
  if (header[0] < 0) throw Error(ErrorCode::kInvalidArgument, "saved cache: negative token counter");
  GetVector(in, k_sink_, "k_sink"), GetVector(in, v_sink_, "v_sink"), GetVector(in, k_ring_, "k_ring"), GetVector(in, v_ring_, "v_ring");
  GetScales(in, ks_sink_, g_.sink_capacity, "ks_sink"), GetScales(in, vs_sink_, g_.sink_capacity, "vs_sink");
  GetScales(in, ks_ring_, g_.window, "ks_ring"), GetScales(in, vs_ring_, g_.window, "vs_ring");
  GetVector(in, kf_sink_, "kf_sink"), GetVector(in, vf_sink_, "vf_sink"), GetVector(in, kf_ring_, "kf_ring"), GetVector(in, vf_ring_, "vf_ring");
  GetVector(in, token_ring_, "token history"), GetVector(in, engram_ring_, "engram history");
  GetVector(in, token_ring_at_sinks_, "token history at sinks"), GetVector(in, engram_ring_at_sinks_, "engram history at sinks");
  tokens_ = header[0];
}

bool WindowSinkCache::SameSinkGeometry(const WindowSinkCache& o) const {
  return o.g_.layers == g_.layers && o.g_.kv_heads == g_.kv_heads && o.g_.head_dim == g_.head_dim &&
         o.g_.sink_capacity == g_.sink_capacity && o.g_.float_kv == g_.float_kv &&
         o.token_ring_.size() == token_ring_.size() && o.engram_ring_.size() == engram_ring_.size();
}

void WindowSinkCache::ShareSinks(const WindowSinkCache& other) {
  const WindowSinkCache& o = other.sinks();  // a cache that shares reads its owner's rows: share those
  if (!g_.shared_sinks || o.g_.shared_sinks || !SameSinkGeometry(o)) {
    throw Error(ErrorCode::kInvalidArgument, "cache: sink rows can only be shared from a cache of the same geometry that owns them");
  }
  sinks_owner_ = &o;
}

void WindowSinkCache::StartAfterSinks(const WindowSinkCache& o) {
  if (!SameSinkGeometry(o)) {
    throw Error(ErrorCode::kInvalidArgument, "cache: a sink block of another geometry");
  }
  if (o.tokens_ != g_.sink_capacity) {
    throw Error(ErrorCode::kInvalidArgument, "cache: the sink block holds " + std::to_string(o.tokens_) + " tokens, not its " +
                                                 std::to_string(g_.sink_capacity));
  }
  token_ring_ = o.token_ring_at_sinks_, engram_ring_ = o.engram_ring_at_sinks_;
  token_ring_at_sinks_ = o.token_ring_at_sinks_, engram_ring_at_sinks_ = o.engram_ring_at_sinks_;
  tokens_ = g_.sink_capacity, floor_ = 0;
}

void WindowSinkCache::CheckOwnsSinks(int64_t t) const {
  if (g_.shared_sinks && IsSink(t)) throw Error(ErrorCode::kInvalidState, "cache: a sink token stored in a cache that shares its sinks");
}

void WindowSinkCache::CopyFrom(const WindowSinkCache& o, bool with_sinks) {
  if (!SameSinkGeometry(o) || o.g_.window != g_.window) {
    throw Error(ErrorCode::kInvalidArgument, "cache copy: the caches have different geometries");
  }
  if (with_sinks && (g_.shared_sinks || o.g_.shared_sinks)) {
    throw Error(ErrorCode::kInvalidArgument, "cache copy: a cache sharing its sinks copies without them");
  }
  // (Equal sizes: vector assignment copies in place.)
  if (with_sinks) {
    k_sink_ = o.k_sink_, v_sink_ = o.v_sink_, ks_sink_ = o.ks_sink_, vs_sink_ = o.vs_sink_;
    kf_sink_ = o.kf_sink_, vf_sink_ = o.vf_sink_;
  }
  // The histories at the sinks come along either way: a copy that reads
  // another cache's sink rows still resets to them on its own.
  token_ring_at_sinks_ = o.token_ring_at_sinks_, engram_ring_at_sinks_ = o.engram_ring_at_sinks_;
  k_ring_ = o.k_ring_, v_ring_ = o.v_ring_, ks_ring_ = o.ks_ring_, vs_ring_ = o.vs_ring_;
  kf_ring_ = o.kf_ring_, vf_ring_ = o.vf_ring_;
  token_ring_ = o.token_ring_, engram_ring_ = o.engram_ring_;
  tokens_ = o.tokens_, floor_ = o.floor_;
}

uint32_t WindowSinkCache::window_valid() const {
  const int64_t beyond = tokens_ - std::max<int64_t>(g_.sink_capacity, floor_);
  return beyond <= 0 ? 0u : static_cast<uint32_t>(std::min<int64_t>(beyond, g_.window));
}

void WindowSinkCache::Store(uint32_t layer, int64_t t, uint32_t head, const float* k, const float* v) {
  CheckOwnsSinks(t);
  const bool sink = IsSink(t);
  const uint32_t slot = sink ? static_cast<uint32_t>(t) : RingSlot(t);
  const uint32_t slots = sink ? g_.sink_capacity : g_.window;
  const size_t r = Row(layer, slot, slots) + size_t(head) * g_.head_dim;
  if (g_.float_kv) {
    std::copy(k, k + g_.head_dim, (sink ? kf_sink_ : kf_ring_).begin() + static_cast<std::ptrdiff_t>(r));
    std::copy(v, v + g_.head_dim, (sink ? vf_sink_ : vf_ring_).begin() + static_cast<std::ptrdiff_t>(r));
    return;
  }
  float ks[kMaxScaleGroups], vs[kMaxScaleGroups];
  QuantizeKvRow(k, g_.head_dim, &(sink ? k_sink_ : k_ring_)[r], ks);
  QuantizeKvRow(v, g_.head_dim, &(sink ? v_sink_ : v_ring_)[r], vs);
  std::vector<float>& ks_to = sink ? ks_sink_ : ks_ring_;
  std::vector<float>& vs_to = sink ? vs_sink_ : vs_ring_;
  for (uint32_t q = 0; q < groups_; ++q) {
    ks_to[ScaleAt(layer, slot, head, q, slots)] = ks[q];
    vs_to[ScaleAt(layer, slot, head, q, slots)] = vs[q];
  }
}

void WindowSinkCache::StoreQuantized(uint32_t layer, int64_t t, const int8_t* k, const float* ks, const int8_t* v,
                                     const float* vs) {
  CheckOwnsSinks(t);
  const bool sink = IsSink(t);
  const uint32_t slot = sink ? static_cast<uint32_t>(t) : RingSlot(t);
  const uint32_t slots = sink ? g_.sink_capacity : g_.window;
  const size_t r = Row(layer, slot, slots);
  const size_t n = size_t(g_.kv_heads) * g_.head_dim;
  std::copy(k, k + n, &(sink ? k_sink_ : k_ring_)[r]);
  std::copy(v, v + n, &(sink ? v_sink_ : v_ring_)[r]);
  std::vector<float>& ks_to = sink ? ks_sink_ : ks_ring_;
  std::vector<float>& vs_to = sink ? vs_sink_ : vs_ring_;
  for (uint32_t h = 0; h < g_.kv_heads; ++h) {
    for (uint32_t q = 0; q < groups_; ++q) {
      ks_to[ScaleAt(layer, slot, h, q, slots)] = ks[h * groups_ + q];
      vs_to[ScaleAt(layer, slot, h, q, slots)] = vs[h * groups_ + q];
    }
  }
}

void WindowSinkCache::Commit(int64_t t) {
  tokens_ = t + 1;
  if (tokens_ == g_.sink_capacity) {
    token_ring_at_sinks_ = token_ring_;
    engram_ring_at_sinks_ = engram_ring_;
  }
}

int32_t WindowSinkCache::TokenAt(int64_t t) const {
  if (t < 0) return 0;
  return token_ring_[static_cast<size_t>(t % static_cast<int64_t>(token_ring_.size()))];
}

int32_t WindowSinkCache::TokenSeen(int64_t t) const {
  if (floor_ <= int64_t(g_.sink_capacity) || t >= floor_) return TokenAt(t);
  const int64_t v = int64_t(g_.sink_capacity) - (floor_ - t);
  const std::vector<int32_t>& ring = sinks().token_ring_at_sinks_;
  if (v < 0 || floor_ - t > int64_t(ring.size())) return 0;
  return ring[static_cast<size_t>(v % static_cast<int64_t>(ring.size()))];
}

const float* WindowSinkCache::EngramValueSeen(uint32_t site, int64_t t) const {
  if (t < 0) return nullptr;
  if (floor_ <= int64_t(g_.sink_capacity) || t >= floor_) return EngramValue(site, t);
  const int64_t v = int64_t(g_.sink_capacity) - (floor_ - t);
  const int64_t h = std::max<uint32_t>(1, g_.engram_value_history);
  if (v < 0 || floor_ - t > h) return nullptr;
  return &sinks().engram_ring_at_sinks_[(size_t(site) * size_t(h) + static_cast<size_t>(v % h)) * g_.d_model];
}

void WindowSinkCache::PushToken(int64_t t, int32_t id) {
  token_ring_[static_cast<size_t>(t % static_cast<int64_t>(token_ring_.size()))] = id;
}

float* WindowSinkCache::EngramValue(uint32_t site, int64_t t) {
  const size_t h = std::max<uint32_t>(1, g_.engram_value_history);
  return &engram_ring_[(size_t(site) * h + static_cast<size_t>(t % static_cast<int64_t>(h))) * g_.d_model];
}

const float* WindowSinkCache::EngramValue(uint32_t site, int64_t t) const {
  return const_cast<WindowSinkCache*>(this)->EngramValue(site, t);
}

void WindowSinkCache::ResetToSinks() {
  floor_ = 0;
  if (tokens_ <= g_.sink_capacity) return;
  tokens_ = g_.sink_capacity;
  if (g_.sink_capacity == 0) {
    std::fill(token_ring_.begin(), token_ring_.end(), 0);
    std::fill(engram_ring_.begin(), engram_ring_.end(), 0.0f);
  } else {
    token_ring_ = token_ring_at_sinks_;
    engram_ring_ = engram_ring_at_sinks_;
  }
}

uint64_t WindowSinkCache::bytes() const {
  return k_sink_.size() + v_sink_.size() + k_ring_.size() + v_ring_.size() +
         4 * (ks_sink_.size() + vs_sink_.size() + ks_ring_.size() + vs_ring_.size()) +
         8 * engram_ring_.size() + 8 * token_ring_.size() +
         4 * (kf_sink_.size() + vf_sink_.size() + kf_ring_.size() + vf_ring_.size());
}

}  // namespace needle
