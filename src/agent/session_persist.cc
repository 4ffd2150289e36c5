// Session::Save and Session::Restore: the whole session, cache included.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "agent/session.h"
#include "base/error.h"
#include "io/cact_archive.h"  // WriteFileAtomically

namespace needle {

namespace {
constexpr char kSessionMagic[8] = {'N', 'E', 'E', 'D', 'L', 'E', 'S', '1'};

// An unsigned integer field of the header, `fallback` when absent. Anything
// else (a float, a negative number, text) is a corrupt header: nlohmann's
// value() would convert a float such as 1e21 to an integer, which is
// undefined behaviour (found by session_restore_fuzz).
uint64_t HeaderUint(const nlohmann::ordered_json& head, const char* key, uint64_t fallback, uint64_t max) {
  if (!head.contains(key)) return fallback;
  const auto& v = head[key];
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max) {
    throw Error(ErrorCode::kInvalidArgument, std::string("header field \"") + key + "\" is not an integer in [0, " + std::to_string(max) + "]");
  }
  return v.get<uint64_t>();
}

std::vector<uint32_t> HeaderIndices(const nlohmann::ordered_json& head, const char* key) {
  std::vector<uint32_t> out;
  if (!head.contains(key)) return out;
  if (!head[key].is_array()) throw Error(ErrorCode::kInvalidArgument, std::string("header field \"") + key + "\" is not an array");
  for (const auto& v : head[key]) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX) throw Error(ErrorCode::kInvalidArgument, std::string("header field \"") + key + "\" holds a value that is not an index");
    out.push_back(v.get<uint32_t>());
  }
  return out;
}

}  // namespace

void Session::Save(const std::string& path) const {
  nlohmann::ordered_json head = {{"model", model_->fingerprint()}, {"tools", tools_}, {"system", facts_},
                                 {"pins", pins_},    {"active", active_}, {"selected", selected_}, {"turns", turns_},
                                 {"last_type", int(last_type_)}, {"has_state", state_ != nullptr && !sinks_dirty_},
                                 {"sink_length", state_ ? state_->sink_length() : 0}, {"window", opt_.window},
                                 {"copy_texts", evidence_.texts()}, {"copy_text_requests", evidence_.request_flags()}, {"chain_called", chain_called_},
                                 {"request_starts", request_starts_}, {"request", request_},
                                 {"record_ids", evidence_.record_ids()}};
  const std::string h = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out(kSessionMagic, sizeof kSessionMagic);
  const uint64_t hn = h.size();
  out.append(reinterpret_cast<const char*>(&hn), sizeof hn).append(h);
  if (state_ && !sinks_dirty_) {
    state_->cache().Serialize(out);
    if (model_->confidence()) confidence_at_sinks_.Serialize(out);
  }
  WriteFileAtomically(path, {reinterpret_cast<const uint8_t*>(out.data()), out.size()});
}

void Session::Restore(const std::string& path) {
  const nlohmann::ordered_json tools = tools_, facts = facts_;
  const std::vector<std::string> pins = pins_;
  const uint32_t window = opt_.window;
  auto roll_back = [&] {
    opt_.window = window;
    SetTools(tools);
    SetSystem(facts);
    pins_ = pins;
    state_.reset();
    sinks_dirty_ = true;
    Reset();
  };
  try {
    RestoreOrThrow(path);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type in the header
    roll_back();
    throw Error(ErrorCode::kInvalidArgument, "session: corrupt header in '" + path + "' (" + e.what() + ")");
  } catch (const Error& e) {
    roll_back();
    const std::string why = e.what();
    if (why.starts_with("session:")) throw;
    throw Error(e.code(), "session: cannot restore '" + path + "': " + why);
  } catch (...) {
    roll_back();
    throw;
  }
}

void Session::RestoreOrThrow(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "session: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  std::string_view v = data;
  uint64_t hn = 0;
  if (v.size() < sizeof kSessionMagic + sizeof hn || std::memcmp(v.data(), kSessionMagic, sizeof kSessionMagic) != 0) {
    throw Error(ErrorCode::kInvalidArgument, "session: '" + path + "' is not a saved needle session");
  }
  v.remove_prefix(sizeof kSessionMagic);
  std::memcpy(&hn, v.data(), sizeof hn);
  v.remove_prefix(sizeof hn);
  if (hn > v.size()) throw Error(ErrorCode::kInvalidArgument, "session: truncated header in '" + path + "'");
  const auto head = nlohmann::ordered_json::parse(v.substr(0, hn), nullptr, false);
  v.remove_prefix(hn);
  if (head.is_discarded() || !head.is_object()) throw Error(ErrorCode::kInvalidArgument, "session: corrupt header in '" + path + "'");
  if (HeaderUint(head, "model", 0, UINT64_MAX) != model_->fingerprint()) {
    throw Error(ErrorCode::kInvalidArgument, "session: '" + path + "' was saved with another model");
  }
  // Rebuild the setup, then the cache exactly as it was.
  // (at(): the header is const, and operator[] of a missing key on a const
  // JSON is undefined behaviour; found by session_restore_fuzz.)
  for (const char* key : {"tools", "system", "pins"}) {
    if (!head.contains(key)) throw Error(ErrorCode::kInvalidArgument, std::string("header field \"") + key + "\" is missing");
  }
  SetTools(head.at("tools"));
  SetSystem(head.at("system"));
  pins_ = head.at("pins").get<std::vector<std::string>>();
  opt_.window = static_cast<uint32_t>(HeaderUint(head, "window", 0, 1u << 16));
  state_.reset();
  sink_block_.reset();  // a restored cache holds its own sink rows
  sinks_dirty_ = true;
  if (head.contains("has_state") && !head["has_state"].is_boolean()) throw Error(ErrorCode::kInvalidArgument, "header field \"has_state\" is not a boolean");
  if (head.value("has_state", false)) {
    state_ = model_->fast().NewState({static_cast<uint32_t>(HeaderUint(head, "sink_length", 0, UINT32_MAX)), opt_.window, 32, false});
    ++sink_epoch_;
    state_->cache().Restore(v);
    if (model_->confidence()) confidence_at_sinks_.Restore(v);
    active_ = HeaderIndices(head, "active");
    for (uint32_t i : active_) {
      if (i >= tools_.size()) throw Error(ErrorCode::kInvalidArgument, "session: active tool index out of range");
    }
    // Files written before the budget fit have no "selected": retrieval's choice was the active set.
    selected_ = head.contains("selected") ? HeaderIndices(head, "selected") : active_;
    for (uint32_t i : selected_) {
      if (i >= tools_.size()) throw Error(ErrorCode::kInvalidArgument, "session: selected tool index out of range");
    }
    RestrictToActiveTools();
    sinks_dirty_ = false;
  }
  turns_ = static_cast<uint32_t>(HeaderUint(head, "turns", 0, UINT32_MAX));
  std::vector<std::string> texts;
  std::vector<uint8_t> flags;
  if (head.contains("copy_texts") && head["copy_texts"].is_array()) {
    for (const auto& t : head["copy_texts"])
      if (t.is_string()) texts.push_back(t.get<std::string>());
  }
  if (head.contains("copy_text_requests") && head["copy_text_requests"].is_array()) {
    for (const auto& r : head["copy_text_requests"]) flags.push_back(r.is_number_integer() && r.get<int>() != 0);
  }
  evidence_.RestoreTexts(std::move(texts), std::move(flags));
  chain_called_.clear();
  if (head.contains("chain_called") && head["chain_called"].is_array()) {
    for (const auto& t : head["chain_called"])
      if (t.is_number_unsigned() && t.get<uint64_t>() < tools_.size()) chain_called_.push_back(t.get<uint32_t>());
  }
  // The request's ranking, words and named record: a tool result right after
  // Restore is decoded as it would have been without the save.
  request_ = head.value("request", std::string());
  if (!request_.empty()) {
    SelectTools(request_);  // (tool_scores_; the active tools are the saved ones)
    request_terms_ = LexicalTerms(request_);
    call_rules_.BeginRequest(*grammar_, request_terms_);
  }
  std::vector<std::string> record_ids;
  if (head.contains("record_ids") && head["record_ids"].is_array()) {
    for (const auto& t : head["record_ids"])
      if (t.is_string()) record_ids.push_back(t.get<std::string>());
  }
  evidence_.SetRecordIds(std::move(record_ids));
  request_starts_.clear();
  if (head.contains("request_starts") && head["request_starts"].is_array()) {
    for (const auto& t : head["request_starts"])
      if (t.is_number_integer()) request_starts_.push_back(t.get<int64_t>());
  }
  // (The window floor is the session's, not the cache's: set again here.)
  if (state_ && !request_starts_.empty() && opt_.window_requests > 0) {
    while (request_starts_.size() > opt_.window_requests) request_starts_.erase(request_starts_.begin());
    state_->cache().SetWindowFloor(std::min(request_starts_.front(), state_->cache().tokens()));
  }
  last_type_ = static_cast<EnvelopeType>(HeaderUint(head, "last_type", 1, 3));
}

}  // namespace needle
