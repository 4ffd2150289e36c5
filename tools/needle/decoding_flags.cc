#include "decoding_flags.h"

#include <sstream>
#include <type_traits>

#include "base/error.h"

namespace needle::cli {
namespace {

template <class T>
std::string DefaultText(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return v.empty() ? "none" : v;
  else if constexpr (std::is_same_v<T, bool>) return v ? "on" : "off";
  else {
    if constexpr (std::is_same_v<T, float>) {
      if (std::isinf(v)) return "inf: a rule";
      std::ostringstream os;
      os << v;
      return os.str();
    } else {
      return std::to_string(v);
    }
  }
}

template <class T>
const char* Placeholder() {
  if constexpr (std::is_same_v<T, std::string>) return "FILE";
  else if constexpr (std::is_same_v<T, uint32_t>) return "N";
  else return "X";
}

// --options: a file holding a JSON object, or the object inline.
nlohmann::json OptionsArg(const std::string& v) {
  const std::string text = FlagFileOrInline("options", v);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error(ErrorCode::kInvalidJson, "--options: not a JSON object nor a file holding one: '" + v + "'");
  return j;
}

}  // namespace

std::string FlagName(std::string_view option) {
  std::string s(option);
  for (char& c : s) c = c == '_' ? '-' : c;
  return s;
}

std::vector<FlagSpec> DecodingFlags() {
  std::vector<FlagSpec> flags = {
      {"options", "FILE|JSON", "session options as one JSON object (the C ABI's needle_session_set_options keys); the flags below override it"}};
  const SessionOptions defaults;
  ForEachOption(defaults, [&](const OptionInfo& info, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    const std::string name = FlagName(info.name), help(info.help);
    if constexpr (std::is_same_v<T, bool>) {
      if (v) flags.push_back({"no-" + name, "", "turn off: " + help + " (on by default)"});
      else flags.push_back({name, "", help + " (off by default)"});
    } else {
      flags.push_back({name, Placeholder<T>(), help + " (default " + DefaultText(v) + ")"});
    }
  });
  return flags;
}

void ReadDecodingFlags(const Args& args, SessionOptions& o) {
  if (args.Has("options")) ApplyOptionsJson(OptionsArg(args.Get("options")), o);
  SessionOptions next = o;
  ForEachOption(o, [&](const OptionInfo& info, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    const std::string name = FlagName(info.name);
    try {
      if constexpr (std::is_same_v<T, bool>) {
        if (args.Has(name)) SetOptionFromText(next, info.name, "true");
        if (args.Has("no-" + name)) SetOptionFromText(next, info.name, "false");
      } else if (args.Has(name)) {
        SetOptionFromText(next, info.name, args.Get(name));
      }
    } catch (const Error& e) {  // "option max_new_tokens: must be ..." -> "--max-new-tokens must be ..."
      std::string why = e.what();
      const std::string prefix = "option " + std::string(info.name) + ":";
      if (why.starts_with(prefix)) why.erase(0, prefix.size());
      throw Error(ErrorCode::kInvalidArgument, "--" + (args.Has(name) ? name : "no-" + name) + why);
    }
  });
  o = next;
}

}  // namespace needle::cli
