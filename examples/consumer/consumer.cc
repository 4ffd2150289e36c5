// The same through the C++ API (<needle/needle.hpp>, C++20).
#include <cstdio>

#include <needle/needle.hpp>

int main() {
  try {
    needle::Session session(needle::Model::Default());
    session.SetToolsJson(R"([{"name":"set_timer","description":"Start a timer","parameters":{"type":"object",
      "properties":{"minutes":{"type":"integer","minimum":1,"maximum":600}},"required":["minutes"]}}])");
    std::printf("%s\n", session.Complete("set a timer for 10 minutes").ToJson().dump().c_str());
    return 0;
  } catch (const needle::Error& e) {
    std::fprintf(stderr, "consumer_cpp: %s\n", e.what());
    return 1;
  }
}
