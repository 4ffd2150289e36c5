// The C ABI under misuse (issue L): handles freed twice, used after free, of
// the wrong kind or never issued; NULL and malformed arguments; limits; a
// failed needle_init; needle_last_error per thread.
#include "needle/needle.h"

#include <gtest/gtest.h>

#include <string>
#include <atomic>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

constexpr const char* kTools =
    R"([{"name":"set_timer","description":"Start a timer","parameters":{"type":"object",)"
    R"("properties":{"minutes":{"type":"integer","minimum":1,"maximum":600}},"required":["minutes"]}}])";

std::string LastError() { return needle_last_error(); }

bool Says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CApi, FreeingTwiceOrUsingAfterFreeIsAnErrorNotACrash) {
  needle_model* m = needle_model_default();
  ASSERT_NE(m, nullptr) << LastError();
  needle_session* s = needle_session_new(m, nullptr, kTools, nullptr);
  ASSERT_NE(s, nullptr) << LastError();
  EXPECT_EQ(needle_model_free(m), 0);
  EXPECT_EQ(LastError(), "");
  EXPECT_EQ(needle_model_free(m), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "needle_model_free: this needle_model was freed")) << LastError();
  EXPECT_EQ(needle_session_new(m, nullptr, kTools, nullptr), nullptr);
  EXPECT_TRUE(Says(LastError(), "was freed")) << LastError();

  char out[4096];
  EXPECT_GE(needle_session_complete(s, "a timer for 5 minutes", 0, out, sizeof out), 0) << LastError();  // the session keeps the model
  EXPECT_EQ(needle_session_free(s), 0);
  EXPECT_EQ(needle_session_free(s), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "needle_session_free: this needle_session was freed")) << LastError();
  EXPECT_EQ(needle_session_complete(s, "a timer for 5 minutes", 0, out, sizeof out), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "was freed")) << LastError();
  EXPECT_EQ(needle_session_reset(s), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_session_set_reasoning_beams(s, 1), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_session_get_options(s, out, sizeof out), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_session_pin(s, "x"), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_session_save(s, "/tmp/x"), NEEDLE_E_ARGUMENT);
}

TEST(CApi, AHandleOfTheWrongKindOrNeverIssuedIsNamed) {
  needle_model* m = needle_model_default();
  ASSERT_NE(m, nullptr);
  char out[256];
  auto* as_session = reinterpret_cast<needle_session*>(m);
  EXPECT_EQ(needle_session_complete(as_session, "hi", 0, out, sizeof out), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "a needle_model handle where a needle_session is expected")) << LastError();
  EXPECT_EQ(needle_session_free(as_session), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_model_free(m), 0);  // the wrong-kind free above did not free it

  int local = 0;
  for (needle_session* bogus : {reinterpret_cast<needle_session*>(&local), reinterpret_cast<needle_session*>(uintptr_t{0x123456789})}) {
    EXPECT_EQ(needle_session_free(bogus), NEEDLE_E_ARGUMENT);
    EXPECT_TRUE(Says(LastError(), "not a needle_session handle of this library")) << LastError();
  }
  EXPECT_EQ(needle_session_free(nullptr), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "NULL needle_session")) << LastError();
  EXPECT_EQ(needle_model_free(nullptr), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_session_new(nullptr, nullptr, kTools, nullptr), nullptr);
  EXPECT_TRUE(Says(LastError(), "NULL needle_model")) << LastError();
}

TEST(CApi, ArgumentsAreCheckedAndNamed) {
  needle_model* m = needle_model_default();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(needle_session_new(m, nullptr, nullptr, nullptr), nullptr);
  EXPECT_TRUE(Says(LastError(), "tools_json is NULL")) << LastError();
  EXPECT_EQ(needle_session_new(m, R"({"date":)", kTools, nullptr), nullptr);
  EXPECT_TRUE(Says(LastError(), "system facts: malformed JSON")) << LastError();
  EXPECT_EQ(needle_session_new(m, R"({"weather":"sunny"})", kTools, nullptr), nullptr);
  EXPECT_TRUE(Says(LastError(), "unknown fact 'weather'")) << LastError();
  needle_session* s = needle_session_new(m, R"({"date":"2026-11-30"})", kTools, nullptr);
  ASSERT_NE(s, nullptr) << LastError();
  needle_model_free(m);

  char out[4096];
  EXPECT_EQ(needle_session_complete(s, "a timer for 5 minutes", -5, out, sizeof out), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "max_new_tokens is -5")) << LastError();
  EXPECT_EQ(needle_session_complete(s, "a timer for 5 minutes", 1 << 30, out, sizeof out), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "max_new_tokens")) << LastError();
  EXPECT_EQ(needle_session_complete(s, nullptr, 0, out, sizeof out), NEEDLE_E_ARGUMENT);
  EXPECT_EQ(needle_session_complete(s, "hi", 0, nullptr, 10), NEEDLE_E_ARGUMENT);

  // Bytes that are not text: an error envelope naming them, no call.
  const int n = needle_session_complete(s, "timer \xFF\xFE", 0, out, sizeof out);
  ASSERT_GT(n, 0) << LastError();
  const auto env = nlohmann::json::parse(std::string(out, n));
  EXPECT_EQ(env["type"], "error");
  EXPECT_FALSE(env["success"].get<bool>());
  EXPECT_EQ(env["error_code"], "invalid_argument");
  EXPECT_TRUE(Says(env["error"].get<std::string>(), "the query is not valid UTF-8 (byte 0xFF at offset 6)")) << env.dump();
  EXPECT_TRUE(env["function_calls"].empty());
  // ... and the session still answers.
  EXPECT_GT(needle_session_complete(s, "a timer for 5 minutes", 0, out, sizeof out), 0) << LastError();
  EXPECT_EQ(needle_session_free(s), 0);
}

// A failed needle_init keeps the previous session, which keeps answering with
// its own tools; needle.h says so.
TEST(CApi, AFailedInitLeavesThePreviousSession) {
  ASSERT_EQ(needle_init(R"({"date":"2026-11-30"})", kTools, nullptr), 0) << LastError();
  EXPECT_EQ(needle_init(nullptr, nullptr, nullptr), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "needle_init")) << LastError();
  EXPECT_EQ(needle_init(R"({"date":)", R"([{"name":"other_tool"}])", nullptr), NEEDLE_E_ARGUMENT);
  EXPECT_TRUE(Says(LastError(), "malformed JSON")) << LastError();
  EXPECT_EQ(needle_init(nullptr, R"([{"name": )", nullptr), NEEDLE_E_ARGUMENT);
  char out[4096];
  const int n = needle_complete("start a timer for 12 minutes", 0, out, sizeof out);
  ASSERT_GT(n, 0) << LastError();
  const auto env = nlohmann::json::parse(std::string(out, n));
  EXPECT_NE(env["type"], "error") << env.dump();
  for (const auto& c : env["function_calls"]) EXPECT_EQ(c["name"], "set_timer") << env.dump();
  EXPECT_EQ(needle_complete("x", -1, out, sizeof out), NEEDLE_E_ARGUMENT);
  needle_reset();
}

// Sessions on threads (run under ThreadSanitizer by scripts/tsan): four
// sessions over one model answer at once; one session hit by two threads
// serves one and tells the other NEEDLE_E_STATE (or serves both in turn);
// a session freed while another thread is inside a call on it lives until
// that call returns, and the handle is dead afterwards.
TEST(CApi, SessionsOnThreads) {
  needle_model* m = needle_model_default();
  ASSERT_NE(m, nullptr);
  std::vector<needle_session*> sessions;
  for (int i = 0; i < 4; ++i) sessions.push_back(needle_session_new(m, nullptr, kTools, nullptr));
  needle_model_free(m);
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (needle_session* s : sessions) {
    threads.emplace_back([s, &answered] {
      char out[4096];
      for (int k = 0; k < 3; ++k) {
        if (needle_session_complete(s, "a timer for 5 minutes", 0, out, sizeof out) > 0) ++answered;
        needle_session_reset(s);
      }
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  EXPECT_EQ(answered.load(), 12);

  std::atomic<int> served{0}, busy{0}, other{0};
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      char out[4096];
      for (int k = 0; k < 3; ++k) {
        const int n = needle_session_complete(sessions[0], "a timer for 5 minutes", 0, out, sizeof out);
        (n > 0 ? served : n == NEEDLE_E_STATE ? busy : other)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  EXPECT_EQ(served + busy, 6);
  EXPECT_EQ(other.load(), 0);
  EXPECT_GE(served.load(), 3);

  std::atomic<int> freed{0};
  std::thread caller([&] {
    char out[4096];
    needle_session_complete(sessions[1], "a timer for 5 minutes", 0, out, sizeof out);  // may run before or after the free
  });
  std::thread freer([&] { freed = needle_session_free(sessions[1]) == 0; });
  caller.join();
  freer.join();
  EXPECT_EQ(freed.load(), 1);
  char out[256];
  EXPECT_EQ(needle_session_complete(sessions[1], "hi", 0, out, sizeof out), NEEDLE_E_ARGUMENT);
  for (needle_session* s : {sessions[0], sessions[2], sessions[3]}) EXPECT_EQ(needle_session_free(s), 0);
}

TEST(CApi, LastErrorIsPerThread) {
  EXPECT_EQ(needle_model_free(nullptr), NEEDLE_E_ARGUMENT);
  const std::string mine = LastError();
  EXPECT_FALSE(mine.empty());
  std::string theirs = "unset";
  std::thread([&] { theirs = needle_last_error(); }).join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(LastError(), mine);
  static char out[1 << 16];
  EXPECT_GT(needle_options_describe(out, sizeof out), 0);  // a call that succeeds clears it
  EXPECT_EQ(LastError(), "");
}

}  // namespace
