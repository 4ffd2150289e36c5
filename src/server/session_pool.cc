#include "server/session_pool.h"

#include "base/error.h"

namespace needle::server {

SessionPool::SessionPool(std::shared_ptr<const Model> model, SessionOptions options, uint32_t sessions, uint32_t max_waiting,
                         bool batch_decoding, bool share_sinks)
    : model_(model), batch_decoding_(batch_decoding), share_sinks_(share_sinks), options_(options), max_waiting_(max_waiting) {
  if (sessions == 0) throw Error(ErrorCode::kInvalidArgument, "the server needs at least one session (--parallel 1)");
  slots_.resize(sessions);
  if (batch_decoding_ && sessions > 1) batcher_ = std::make_shared<DecodeBatcher>(model_->fast(), std::min(sessions, 64u));
  if (share_sinks_ && sessions > 1) sink_blocks_ = std::make_shared<SinkBlocks>(sessions);
  for (Slot& s : slots_) s.session = NewSession();
}

std::unique_ptr<Session> SessionPool::NewSession() const {
  auto session = std::make_unique<Session>(model_, options_);
  session->SetDecodeBatcher(batcher_);
  session->SetSinkBlocks(sink_blocks_);
  return session;
}

SessionPool::Lease::~Lease() {
  if (pool_) pool_->Release(slot_);
}

Session& SessionPool::Lease::session() { return *pool_->slots_[slot_].session; }

int SessionPool::PickSlot(const std::string& key) const {
  int lru = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.busy) continue;
    if (s.key == key) return int(i);
    if (lru < 0 || s.last_used < slots_[size_t(lru)].last_used) lru = int(i);
  }
  return lru;
}

void SessionPool::Release(size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[slot];
    if (s.stale) s.session = NewSession(), s.key.clear(), s.stale = false;
    s.busy = false;
  }
  freed_.notify_all();  // (all: a waiter for another setup may take it as well)
}

void SessionPool::SetModel(std::shared_ptr<const Model> model) {
  std::lock_guard<std::mutex> lock(mu_);
  model_ = std::move(model);
  if (batcher_) {  // busy sessions finish with the old one (they hold it)
    const DecodeBatcher::Stats old = batcher_->stats();
    retired_.steps += old.steps, retired_.batches += old.batches;
    batcher_ = std::make_shared<DecodeBatcher>(model_->fast(), std::min<uint32_t>(uint32_t(slots_.size()), 64u));
  }
  if (sink_blocks_) {  // the old model's blocks go with the sessions that read them
    const SinkBlocks::Stats old = sink_blocks_->stats();
    retired_blocks_.hits += old.hits, retired_blocks_.builds += old.builds;
    sink_blocks_ = std::make_shared<SinkBlocks>(uint32_t(slots_.size()));
  }
  for (Slot& s : slots_) {
    if (s.busy) {
      s.stale = true;
    } else {
      s.session = NewSession();
      s.key.clear();
    }
  }
}

void SessionPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  freed_.notify_all();
}

SessionPool::Stats SessionPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats st{uint32_t(slots_.size()), 0, waiting_, served_, reused_, queue_full_, timed_out_, retired_.steps, retired_.batches, retired_blocks_};
  for (const Slot& s : slots_) st.busy += s.busy;
  if (batcher_) {
    const DecodeBatcher::Stats b = batcher_->stats();
    st.decode_steps += b.steps, st.decode_batches += b.batches;
  }
  if (sink_blocks_) {
    const SinkBlocks::Stats b = sink_blocks_->stats();
    st.sink_blocks.hits += b.hits, st.sink_blocks.builds += b.builds;
    st.sink_blocks.blocks = b.blocks, st.sink_blocks.bytes = b.bytes;
  }
  return st;
}

}  // namespace needle::server
