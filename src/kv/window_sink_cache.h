// The bounded KV cache of SPEC §3: the pinned prefix (sinks) plus a ring of
// the W most recent positions, int8 K/V with one fp32 scale per 32 values
// along the head dimension, and the short token/engram history the engram
// sites need. Everything is allocated once, at construction, from the model
// geometry, the sink length and the window: nothing grows with the conversation.
//
// Keys are stored already rotated (RoPE): sink keys at their positions
// 0..S-1, window keys at their absolute token counter. A query is rotated
// twice — at its counter for the window scores, and at S + nw - 1 for the
// sink scores — which realises the positions rule (the window sits right
// after the sinks) without ever re-rotating a stored key.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_quant.h"  // QuantizeKvRow, SnapToKvGrid

namespace needle {

struct CacheGeometry {
  uint32_t layers = 0;
  uint32_t kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t sink_capacity = 0;  // S: length of the pinned prefix
  uint32_t window = 0;         // W: ring slots
  uint32_t d_model = 0;
  uint32_t engram_sites = 0;
  uint32_t engram_value_history = 0;  // ev0 vectors kept per site: (taps-1)*dilation + 1
  uint32_t token_history = 0;         // token ids kept for engram hashing
  bool float_kv = false;              // fp32 K/V instead of int8 (the reference-precision mode of tests)
  // The sink rows live in another cache (ShareSinks): none are allocated here.
  bool shared_sinks = false;
};

class WindowSinkCache {
 public:
  static constexpr uint32_t kMaxScaleGroups = 32;  // head_dim up to 1,024

  explicit WindowSinkCache(const CacheGeometry& g);
  WindowSinkCache(const WindowSinkCache&) = delete;
  WindowSinkCache& operator=(const WindowSinkCache&) = delete;
  WindowSinkCache(WindowSinkCache&&) = default;
  WindowSinkCache& operator=(WindowSinkCache&&) = default;

  const CacheGeometry& geometry() const { return g_; }
  uint32_t groups_per_head() const { return groups_; }  // ceil(head_dim / 32)

  // Absolute token counter: tokens stored so far (sinks included).
  int64_t tokens() const { return tokens_; }
  uint32_t sinks_stored() const { return static_cast<uint32_t>(tokens_ < g_.sink_capacity ? tokens_ : g_.sink_capacity); }
  // Valid window slots when the next query is token t (itself included once stored).
  uint32_t window_valid() const;
  // The oldest conversation token the window shows (a session's choice: the
  // window may start later than W tokens back, e.g. at the previous request).
  // Tokens before it stay stored but are not attended; S (the default) and
  // anything at or below it: the whole window. ResetToSinks clears it.
  void SetWindowFloor(int64_t t) { floor_ = t; }
  int64_t window_floor() const { return floor_; }
  // First visible window token for a query at position P >= S.
  int64_t WindowFirst(int64_t P) const {
    const int64_t first = P - int64_t(g_.window) + 1;
    return std::max<int64_t>({int64_t(g_.sink_capacity), first, floor_});
  }

  // Slot for token t: sink slot t (t < S), else ring slot (t - S) % W.
  bool IsSink(int64_t t) const { return t < g_.sink_capacity; }
  uint32_t RingSlot(int64_t t) const { return static_cast<uint32_t>((t - g_.sink_capacity) % g_.window); }

  // Quantizes and stores one head's key (already rotated) and value for token t.
  void Store(uint32_t layer, int64_t t, uint32_t head, const float* k, const float* v);
  // Stores token t's already quantized rows for every kv head (int8 mode):
  // [kv_heads][head_dim] values and [kv_heads][groups] scales, as QuantizeKvRow makes them.
  void StoreQuantized(uint32_t layer, int64_t t, const int8_t* k, const float* ks, const int8_t* v, const float* vs);
  // Advances the counter after all layers stored token t (t == tokens()).
  void Commit(int64_t t);

  // Int8 rows: [kv_heads][head_dim] per slot. Their fp32 scales (one per
  // 32 values) are kept by kv head and group, slots adjacent: group q of kv
  // head h at slot s is Sink/RingKScale(layer, s, h)[q * Sink/RingScaleGroupStride()],
  // so attention loads sixteen keys' scales of a group at once.
  const int8_t* SinkK(uint32_t layer, uint32_t slot) const { return &sinks().k_sink_[Row(layer, slot, g_.sink_capacity)]; }
  const int8_t* SinkV(uint32_t layer, uint32_t slot) const { return &sinks().v_sink_[Row(layer, slot, g_.sink_capacity)]; }
  const float* SinkKScale(uint32_t layer, uint32_t slot, uint32_t head) const {
    return &sinks().ks_sink_[ScaleAt(layer, slot, head, 0, g_.sink_capacity)];
  }
  const float* SinkVScale(uint32_t layer, uint32_t slot, uint32_t head) const {
    return &sinks().vs_sink_[ScaleAt(layer, slot, head, 0, g_.sink_capacity)];
  }
  uint32_t SinkScaleGroupStride() const { return g_.sink_capacity; }
  const int8_t* RingK(uint32_t layer, uint32_t slot) const { return &k_ring_[Row(layer, slot, g_.window)]; }
  const int8_t* RingV(uint32_t layer, uint32_t slot) const { return &v_ring_[Row(layer, slot, g_.window)]; }
  const float* RingKScale(uint32_t layer, uint32_t slot, uint32_t head) const {
    return &ks_ring_[ScaleAt(layer, slot, head, 0, g_.window)];
  }
  const float* RingVScale(uint32_t layer, uint32_t slot, uint32_t head) const {
    return &vs_ring_[ScaleAt(layer, slot, head, 0, g_.window)];
  }
  uint32_t RingScaleGroupStride() const { return g_.window; }

  // fp32 rows [kv_heads][head_dim] (float_kv mode only).
  const float* SinkKf(uint32_t layer, uint32_t slot) const { return &sinks().kf_sink_[Row(layer, slot, g_.sink_capacity)]; }
  const float* SinkVf(uint32_t layer, uint32_t slot) const { return &sinks().vf_sink_[Row(layer, slot, g_.sink_capacity)]; }
  const float* RingKf(uint32_t layer, uint32_t slot) const { return &kf_ring_[Row(layer, slot, g_.window)]; }
  const float* RingVf(uint32_t layer, uint32_t slot) const { return &vf_ring_[Row(layer, slot, g_.window)]; }

  // Engram history: token id of position t (t > tokens() - token_history), 0 before the start.
  int32_t TokenAt(int64_t t) const;
  // What a token at or past the floor reads of position t: the token id and
  // ev0 (nullptr: no such position). Past the sinks, a position below the
  // floor is hidden, and the window continues from the sink block's tail —
  // SPEC §3's positions rule, for the engrams too: t reads sink position
  // S - (floor - t), so a request behind a floor hashes as it would right
  // after the sinks, whatever came before it.
  int32_t TokenSeen(int64_t t) const;
  const float* EngramValueSeen(uint32_t site, int64_t t) const;
  void PushToken(int64_t t, int32_t id);
  // ev0 of site s at position t (kept for the last engram_value_history positions).
  float* EngramValue(uint32_t site, int64_t t);
  const float* EngramValue(uint32_t site, int64_t t) const;

  // Becomes a copy of `other` (same geometry, else Error(kInvalidArgument)):
  // counter, floor, window rows and histories; the sink rows too unless
  // with_sinks is false (the caller knows they are equal already: copies of
  // one cache taken after its sink block). No allocation.
  void CopyFrom(const WindowSinkCache& other, bool with_sinks = true);

  // Reads the sink rows from `owner`, a cache of the same geometry that holds
  // them (this one was made with shared_sinks), or from the cache `owner`
  // reads them from: the hypotheses of a beam search keep one copy of the
  // sink block, and so do sessions with the same tools (agent/sink_blocks.h).
  // That cache must outlive their use; this one then stores conversation
  // tokens only. The window may differ.
  void ShareSinks(const WindowSinkCache& owner);

  // Becomes the cache right after `owner`'s sink block: counter S, no window
  // floor, owner's token and engram histories at the sinks; the window holds
  // nothing (its old rows are never read). `owner` has the same sink geometry
  // and histories, any window, and exactly its S sink tokens stored, else
  // Error(kInvalidArgument). With ShareSinks(owner), or an equal copy of the
  // sink rows, this is the state of a cache fed the same sink tokens. No allocation.
  void StartAfterSinks(const WindowSinkCache& owner);

  // Drops the conversation, keeps the sinks: the counter returns to S.
  void ResetToSinks();
  // Bytes held by every buffer (constant for the cache's lifetime).
  uint64_t bytes() const;

  // The whole state (counter, K/V, histories) as bytes, for saved sessions
  // (a cache sharing its sink rows writes them too); Restore requires a cache
  // of the same geometry that owns its sink rows and reads exactly what
  // Serialize wrote, else Error(kInvalidArgument) naming the mismatch.
  void Serialize(std::string& out) const;
  void Restore(std::string_view& in);

 private:
  size_t Row(uint32_t layer, uint32_t slot, uint32_t slots) const {
    return (size_t(layer) * slots + slot) * g_.kv_heads * g_.head_dim;
  }
  // [layers][kv_heads][groups][slots]
  size_t ScaleAt(uint32_t layer, uint32_t slot, uint32_t head, uint32_t group, uint32_t slots) const {
    return ((size_t(layer) * g_.kv_heads + head) * groups_ + group) * slots + slot;
  }

  const WindowSinkCache& sinks() const { return sinks_owner_ ? *sinks_owner_ : *this; }
  // Scale vectors in the saved files' slot-major order.
  void PutScales(std::string& out, const std::vector<float>& v, uint32_t slots) const;
  void GetScales(std::string_view& in, std::vector<float>& v, uint32_t slots, const char* what);
  // Layers, kv heads, head size, sink length, K/V precision and history sizes
  // equal (the window may differ).
  bool SameSinkGeometry(const WindowSinkCache& o) const;
  // A sink token stored here: only a cache that owns its sink rows takes one.
  void CheckOwnsSinks(int64_t t) const;

  CacheGeometry g_;
  const WindowSinkCache* sinks_owner_ = nullptr;  // ShareSinks
  uint32_t groups_ = 0;
  int64_t tokens_ = 0;
  int64_t floor_ = 0;
  std::vector<int8_t> k_sink_, v_sink_, k_ring_, v_ring_;    // [layers][slots][kv_heads][head_dim]
  std::vector<float> ks_sink_, vs_sink_, ks_ring_, vs_ring_;  // [layers][kv_heads][groups][slots]
  std::vector<float> kf_sink_, vf_sink_, kf_ring_, vf_ring_;  // float_kv mode: [layers][slots][kv_heads][head_dim]
  std::vector<int32_t> token_ring_;                            // [token_history]
  std::vector<float> engram_ring_;                             // [sites][engram_value_history][d_model]
  // The histories as they stood when the sink block completed: a reset restores
  // them, so the first conversation token hashes against the sink tail again.
  std::vector<int32_t> token_ring_at_sinks_;
  std::vector<float> engram_ring_at_sinks_;
};

}  // namespace needle
