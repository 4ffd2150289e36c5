// Prefilled sink blocks shared by sessions with the same setup (the server's
// pool, or any C++ caller with several sessions): the tools, facts and pins
// render to the same sink tokens, so their int8 K/V rows are the same and one
// copy serves every session (WindowSinkCache::ShareSinks). A session that
// finds its block here pays no tool prefill, and each session holds only its
// window: about half the cache of a needle2 session.
//
// A block is immutable once built and read by any number of threads. The
// cache keeps the most recently used blocks (a bounded count); a block stays
// alive while a session reads it, whether or not the cache still lists it.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "model/fast_model.h"
#include "model/heads.h"

namespace needle {

struct SinkBlock {
  // Fed the sink tokens and nothing else; its window is one slot (never used).
  std::unique_ptr<DecoderState> state;
  // The confidence head's pool after the sink tokens (cells() == 0 without a head).
  ProbePool confidence;
};

class SinkBlocks {
 public:
  // Keeps up to `capacity` (>= 1) blocks besides those sessions still read.
  explicit SinkBlocks(uint32_t capacity);
  SinkBlocks(const SinkBlocks&) = delete;
  SinkBlocks& operator=(const SinkBlocks&) = delete;

  // The block of `ids` for the model `model_key` (any value naming the model
  // and the geometry the block is built for), built by `build` when absent.
  // `build` runs without the cache's lock, so two threads may build one
  // block at once; the first stored wins. Errors from `build` pass through.
  std::shared_ptr<const SinkBlock> Get(uint64_t model_key, std::span<const int32_t> ids,
                                       const std::function<std::unique_ptr<SinkBlock>()>& build);

  struct Stats {
    uint64_t hits = 0, builds = 0;
    uint32_t blocks = 0;  // held by the cache now
    uint64_t bytes = 0;   // of those blocks' states
  };
  Stats stats() const;

 private:
  struct Entry {
    uint64_t model_key, hash;
    std::vector<int32_t> ids;
    std::shared_ptr<const SinkBlock> block;
  };
  const uint32_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t hits_ = 0, builds_ = 0;
};

}  // namespace needle
