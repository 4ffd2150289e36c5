// The C++ API: tools from C++ callables, run() executing the calls until the
// model responds. Usage: run_tools [MODEL.cact] ["request"]
#include <cstdio>
#include <string>

#include "needle/needle.hpp"

int main(int argc, char** argv) {
  try {
    auto model = argc > 1 && std::string(argv[1]) != "-" ? needle::Model::Open(argv[1]) : needle::Model::Default();
    needle::Session session(model);
    session.SetSystem({{"date", "2026-11-30"}, {"location", "Lisbon"}});
    session.AddTool(
        {{"name", "get_weather"},
         {"description", "Current weather for a city"},
         {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}}}},
        [](const nlohmann::ordered_json& args) {
          return nlohmann::ordered_json{{"city", args.value("city", "")}, {"temp_c", 19}, {"sky", "clear"}};
        });
    session.AddTool({{"name", "send_message"},
                     {"description", "Send a text message to a contact"},
                     {"parameters",
                      {{"type", "object"},
                       {"properties", {{"to", {{"type", "string"}}}, {"body", {{"type", "string"}}}}},
                       {"required", {"to", "body"}}}}},
                    [](const nlohmann::ordered_json&) { return nlohmann::ordered_json{{"status", "sent"}}; });
    const std::string request = argc > 2 ? argv[2] : "what's the weather in Porto?";
    const needle::Envelope env = session.Run(request, /*max_steps=*/3);
    std::printf("%s\n", env.ToJson().dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return env.success() ? 0 : 1;
  } catch (const needle::Error& e) {
    std::fprintf(stderr, "run_tools: %s\n", e.what());
    return 1;
  }
}
