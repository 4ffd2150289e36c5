#include "agent/sink_blocks.h"

#include <algorithm>

#include "base/error.h"

namespace needle {
namespace {

uint64_t HashIds(uint64_t model_key, std::span<const int32_t> ids) {
  uint64_t h = 1469598103934665603ull ^ model_key;
  for (int32_t id : ids) h = (h ^ static_cast<uint32_t>(id)) * 1099511628211ull;
  return h;
}

}  // namespace

SinkBlocks::SinkBlocks(uint32_t capacity) : capacity_(capacity) {
  if (capacity == 0) throw Error(ErrorCode::kInvalidArgument, "sink blocks: the capacity must be at least 1");
}

std::shared_ptr<const SinkBlock> SinkBlocks::Get(uint64_t model_key, std::span<const int32_t> ids,
                                                 const std::function<std::unique_ptr<SinkBlock>()>& build) {
  const uint64_t hash = HashIds(model_key, ids);
  auto find = [&]() -> std::list<Entry>::iterator {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->hash == hash && it->model_key == model_key && std::equal(ids.begin(), ids.end(), it->ids.begin(), it->ids.end()))
        return it;
    }
    return entries_.end();
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = find(); it != entries_.end()) {
      entries_.splice(entries_.begin(), entries_, it);
      ++hits_;
      return it->block;
    }
  }
  std::shared_ptr<const SinkBlock> built = build();
  if (!built || !built->state) throw Error(ErrorCode::kInternal, "sink blocks: the builder returned no block");
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = find(); it != entries_.end()) {  // another thread stored it meanwhile
    entries_.splice(entries_.begin(), entries_, it);
    ++hits_;
    return it->block;
  }
  ++builds_;
  entries_.push_front(Entry{model_key, hash, std::vector<int32_t>(ids.begin(), ids.end()), built});
  while (entries_.size() > capacity_) entries_.pop_back();
  return built;
}

SinkBlocks::Stats SinkBlocks::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.hits = hits_, s.builds = builds_;
  s.blocks = static_cast<uint32_t>(entries_.size());
  for (const Entry& e : entries_) s.bytes += e.block->state->bytes();
  return s;
}

}  // namespace needle
