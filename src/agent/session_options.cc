#include "agent/session_options.h"

#include <charconv>
#include <cstdlib>
#include <type_traits>

#include "base/error.h"

namespace needle {
namespace {

[[noreturn]] void Bad(std::string_view name, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "option " + std::string(name) + ": " + why);
}

std::string Number(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  nlohmann::json j = x == std::floor(x) && std::abs(x) < 1e15 ? nlohmann::json(int64_t(x)) : nlohmann::json(x);
  return j.dump();
}

template <class T>
void CheckRange(const OptionInfo& info, const T& v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, uint32_t>) {
    const double x = double(v);
    if (std::isnan(x)) Bad(info.name, "is NaN");
    if (x < info.min || x > info.max) {
      Bad(info.name, "must be " + Number(info.min) + " to " + Number(info.max) + ", got " + Number(x));
    }
  }
}

// A JSON value as the option's type; throws naming the option.
template <class T>
T FromJson(const OptionInfo& info, const nlohmann::json& j) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) Bad(info.name, "expects true or false, got " + j.dump());
    return j.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) Bad(info.name, "expects a string, got " + j.dump());
    return j.get<std::string>();
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    if (!j.is_number_integer() && !(j.is_number_float() && j.get<double>() == std::floor(j.get<double>())))
      Bad(info.name, "expects an integer, got " + j.dump());
    const double x = j.get<double>();
    if (x < info.min || x > info.max) Bad(info.name, "must be " + Number(info.min) + " to " + Number(info.max) + ", got " + j.dump());
    return static_cast<uint32_t>(x);
  } else {
    if (j.is_string() && j.get<std::string>() == "inf" && info.max == double(kInf)) return kInf;
    if (j.is_string() && j.get<std::string>() == "inf") Bad(info.name, "must be " + Number(info.min) + " to " + Number(info.max) + ", got \"inf\"");
    if (!j.is_number()) Bad(info.name, "expects a number" + std::string(info.max == double(kInf) ? " or \"inf\"" : "") + ", got " + j.dump());
    const double x = j.get<double>();
    if (x < info.min || x > info.max) Bad(info.name, "must be " + Number(info.min) + " to " + Number(info.max) + ", got " + j.dump());
    return static_cast<float>(x);
  }
}

template <class T>
nlohmann::ordered_json ToJson(const T& v) {
  if constexpr (std::is_same_v<T, float>) {
    if (std::isinf(v)) return "inf";
    char text[32];  // the shortest text that reads back as this float: 0.6, not 0.6000000238418579
    const auto end = std::to_chars(text, text + sizeof text, v).ptr;
    return nlohmann::ordered_json::parse(std::string_view(text, size_t(end - text)));
  } else {
    return v;
  }
}

template <class T>
const char* JsonType() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_same_v<T, uint32_t>) return "integer";
  else return "number";
}

}  // namespace

void CheckOptions(const SessionOptions& o) {
  ForEachOption(o, [](const OptionInfo& info, const auto& v) { CheckRange(info, v); });
}

nlohmann::ordered_json OptionsToJson(const SessionOptions& o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  ForEachOption(o, [&](const OptionInfo& info, const auto& v) { j[std::string(info.name)] = ToJson(v); });
  return j;
}

void ApplyOptionsJson(const nlohmann::json& j, SessionOptions& o) {
  if (!j.is_object()) throw Error(ErrorCode::kInvalidArgument, "options: expected a JSON object, got " + j.dump());
  SessionOptions next = o;
  size_t known = 0;
  ForEachOption(next, [&](const OptionInfo& info, auto& field) {
    const auto it = j.find(std::string(info.name));
    if (it == j.end()) return;
    field = FromJson<std::decay_t<decltype(field)>>(info, *it);
    ++known;
  });
  if (known != j.size()) {
    for (const auto& item : j.items()) {
      const std::string key = item.key();  // (not a structured binding: clang 14 cannot capture one)
      bool found = false;
      ForEachOption(o, [&](const OptionInfo& info, const auto&) { found = found || info.name == key; });
      if (!found) throw Error(ErrorCode::kInvalidArgument, "options: unknown option '" + key + "' (DescribeOptions lists them)");
    }
  }
  o = next;
}

void SetOptionFromText(SessionOptions& o, std::string_view name, std::string_view text) {
  bool found = false;
  ForEachOption(o, [&](const OptionInfo& info, auto& field) {
    if (info.name != name) return;
    found = true;
    using T = std::decay_t<decltype(field)>;
    const std::string s(text);
    if constexpr (std::is_same_v<T, std::string>) {
      field = s;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (s == "true" || s == "1") field = true;
      else if (s == "false" || s == "0") field = false;
      else Bad(name, "expects true or false, got '" + s + "'");
    } else {
      char* end = nullptr;
      const double x = s == "inf" ? double(kInf) : std::strtod(s.c_str(), &end);
      if (s != "inf" && (s.empty() || *end)) Bad(name, "expects a number, got '" + s + "'");
      const bool whole = std::isfinite(x) && x == std::floor(x) && std::abs(x) < 1e15;
      field = FromJson<T>(info, std::isinf(x) ? nlohmann::json(s) : whole ? nlohmann::json(int64_t(x)) : nlohmann::json(x));
    }
  });
  if (!found) Bad(name, "no such option");
}

nlohmann::ordered_json DescribeOptions() {
  const SessionOptions defaults;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  ForEachOption(defaults, [&](const OptionInfo& info, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    nlohmann::ordered_json row = {{"name", info.name}, {"type", JsonType<T>()}, {"default", ToJson(v)}};
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, uint32_t>) {
      row["min"] = ToJson(float(info.min));
      row["max"] = std::is_same_v<T, float> ? ToJson(float(info.max)) : nlohmann::ordered_json(uint64_t(info.max));
    }
    row["scope"] = info.scope == OptionScope::kCreation ? "creation" : "turn";
    row["help"] = info.help;
    rows.push_back(std::move(row));
  });
  return rows;
}

}  // namespace needle
