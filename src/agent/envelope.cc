#include "agent/envelope.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>

#include "said/codes.h"  // CurrencyMentions, LanguageMentions

namespace needle {

const char* EnvelopeTypeName(EnvelopeType t) {
  switch (t) {
    case EnvelopeType::kCall: return "call";
    case EnvelopeType::kRefuse: return "refuse";
    case EnvelopeType::kRespond: return "respond";
    case EnvelopeType::kError: return "error";
  }
  return "error";
}

namespace {
// Speeds and memory as plain numbers with a sensible precision.
double Round(double x, double scale) { return std::isfinite(x) ? std::round(x * scale) / scale : 0.0; }
}  // namespace

nlohmann::ordered_json Envelope::ToJson() const {
  nlohmann::ordered_json j;
  j["type"] = EnvelopeTypeName(type);
  j["success"] = success();
  j["error"] = error.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error);
  j["error_code"] = error_code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(error_code);
  j["function_calls"] = function_calls;
  j["reasoning"] = reasoning;
  j["confidence"] = confidence ? nlohmann::ordered_json(Round(*confidence, 1e4)) : nlohmann::ordered_json();
  j["prefill_tps"] = Round(prefill_tps, 10);
  j["decode_tps"] = Round(decode_tps, 10);
  j["peak_ram_mb"] = Round(peak_ram_mb, 10);
  if (results) j["results"] = *results;
  if (!warnings.empty()) j["warnings"] = warnings;
  return j;
}

std::string Envelope::Dump() const {
  return ToJson().dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Envelope ErrorEnvelope(ErrorCode code, const std::string& message) {
  Envelope e;
  e.type = EnvelopeType::kError;
  e.error = message;
  e.error_code = ErrorCodeName(code);
  e.peak_ram_mb = PeakRssMb();
  return e;
}

double PeakRssMb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0.0;
  char line[256];
  double mb = 0.0;
  while (std::fgets(line, sizeof line, f)) {
    if (!std::strncmp(line, "VmHWM:", 6)) {
      mb = std::strtod(line + 6, nullptr) / 1024.0;
      break;
    }
  }
  std::fclose(f);
  return mb;
}

uint32_t PlannedCalls(std::string_view reasoning) {
  uint32_t calls = 1;
  bool named = false;  // this segment has its "name:"
  PlanSpanReader spans;
  char prev = ' ';
  for (char c : reasoning) {
    const char before = prev;
    prev = c;
    if (!spans.Outside(c)) continue;
    if (c == ':') {
      named = true;
    } else if (c == '|' && before == ' ') {
      if (!named) return 0;
      ++calls, named = false;
    }
  }
  return named ? calls : 0;
}

std::string UnplannedRequiredValue(std::string_view reasoning, const nlohmann::ordered_json& tools, bool with_facts) {
  static constexpr std::string_view kNoArguments = ": no arguments needed";
  while (!reasoning.empty() && reasoning.front() == ' ') reasoning.remove_prefix(1);
  while (!reasoning.empty() && reasoning.back() == ' ') reasoning.remove_suffix(1);
  if (!reasoning.ends_with(kNoArguments)) return "";
  const std::string_view name = reasoning.substr(0, reasoning.size() - kNoArguments.size());
  if (name.empty() || name.find_first_of(" :|'") != std::string_view::npos) return "";
  for (const auto& t : tools) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || t["name"].get_ref<const std::string&>() != name) continue;
    if (!t.contains("parameters") || !t["parameters"].is_object()) return "";
    const auto& params = t["parameters"];
    if (!params.contains("required") || !params["required"].is_array() || !params.contains("properties") || !params["properties"].is_object())
      return "";
    for (const auto& key : params["required"]) {
      if (!key.is_string() || !params["properties"].contains(key.get_ref<const std::string&>())) continue;
      const auto& prop = params["properties"][key.get_ref<const std::string&>()];
      if (!prop.is_object() || prop.contains("enum") || prop.contains("const")) continue;
      const std::string type = prop.contains("type") && prop["type"].is_string() ? prop["type"].get<std::string>() : "";
      if ((type == "string" && !with_facts) || type == "number" || type == "integer" || type == "array" || type == "object")
        return std::string(name) + " needs " + key.get<std::string>() + "; the request does not give it";
    }
    return "";
  }
  return "";
}

void DropRepeatedCalls(Envelope& env) {
  std::vector<nlohmann::json> seen;  // nlohmann::json sorts keys: order-free comparison
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (const auto& call : env.function_calls) {
    nlohmann::json canonical = nlohmann::json::parse(call.dump());
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
    seen.push_back(std::move(canonical));
    kept.push_back(call);
  }
  if (kept.size() == env.function_calls.size()) return;
  env.warnings.push_back("dropped " + std::to_string(env.function_calls.size() - kept.size()) +
                         " repeated call(s): the same name and arguments as an earlier call of this turn");
  env.function_calls = std::move(kept);
}

namespace {

// The declared `parameters` object of a call's tool; nullptr for a call that
// is not an object with a name and arguments, or of an undeclared tool.
const nlohmann::ordered_json* ParametersOf(const nlohmann::ordered_json& call, const nlohmann::ordered_json& tools) {
  if (!call.is_object() || !call.contains("arguments") || !call["arguments"].is_object() || !call["name"].is_string()) return nullptr;
  for (const auto& t : tools) {
    if (t.is_object() && t.value("name", "") == call["name"].get_ref<const std::string&>()) {
      const auto p = t.find("parameters");
      return p != t.end() && p->is_object() ? &*p : nullptr;
    }
  }
  return nullptr;
}

bool IsRequired(const nlohmann::ordered_json& params, const std::string& key) {
  const auto r = params.find("required");
  return r != params.end() && r->is_array() && std::find(r->begin(), r->end(), key) != r->end();
}

}  // namespace

void DropEchoedArguments(Envelope& env, const nlohmann::ordered_json& tools) {
  std::vector<std::string> dropped;
  for (auto& call : env.function_calls) {
    const nlohmann::ordered_json* schema_params = ParametersOf(call, tools);
    if (!schema_params) continue;
    const nlohmann::ordered_json& params = *schema_params;
    auto required = [&](const std::string& key) { return IsRequired(params, key); };
    nlohmann::ordered_json& args = call["arguments"];
    nlohmann::ordered_json kept = nlohmann::ordered_json::object();
    for (auto it = args.begin(); it != args.end(); ++it) {
      const nlohmann::ordered_json& v = it.value();
      bool echo = false;
      if (!required(it.key())) {
        if (v.is_string() && v.get_ref<const std::string&>().empty()) {
          echo = true;
        } else if (!v.is_boolean() && !v.is_null()) {
          for (auto jt = args.begin(); jt != args.end() && !echo; ++jt) {
            if (jt == it) continue;
            const bool other_counts = required(jt.key()) || kept.contains(jt.key());
            echo = other_counts && jt.value() == v;
          }
        }
      }
      if (echo) {
        dropped.push_back(call["name"].get<std::string>() + "." + it.key());
      } else {
        kept[it.key()] = v;
      }
    }
    args = std::move(kept);
  }
  if (dropped.empty()) return;
  std::string w = "dropped optional argument(s) that were empty or repeated another argument's value:";
  for (const std::string& d : dropped) w += " " + d;
  env.warnings.push_back(std::move(w));
}

void DropUnsaidOptionalNumbers(Envelope& env, const nlohmann::ordered_json& tools, const std::vector<double>& said) {
  std::vector<std::string> dropped;
  for (auto& call : env.function_calls) {
    const nlohmann::ordered_json* params = ParametersOf(call, tools);
    if (!params) continue;
    nlohmann::ordered_json& args = call["arguments"];
    nlohmann::ordered_json kept = nlohmann::ordered_json::object();
    for (auto it = args.begin(); it != args.end(); ++it) {
      const nlohmann::ordered_json& v = it.value();
      if (v.is_number() && !IsRequired(*params, it.key())) {
        const double x = v.get<double>();
        const bool is_said = std::any_of(said.begin(), said.end(), [&](double s) {
          return std::fabs(s - x) <= 1e-9 * std::max(1.0, std::fabs(x));
        });
        if (!is_said) {
          dropped.push_back(call["name"].get<std::string>() + "." + it.key());
          continue;
        }
      }
      kept[it.key()] = v;
    }
    args = std::move(kept);
  }
  if (dropped.empty()) return;
  std::string w = "dropped optional number argument(s) the conversation does not say:";
  for (const std::string& d : dropped) w += " " + d;
  env.warnings.push_back(std::move(w));
}

namespace {

// A key's direction in a from/to pair and the rest of its name
// ("from_currency" -> from, "currency"; "destination" -> to, "").
struct KeyRole {
  int side = 0;  // -1 from, +1 to, 0 neither
  std::string rest;
};

KeyRole RoleOf(std::string_view key) {
  static constexpr std::string_view kFrom[] = {"from", "source", "src", "origin", "base", "departure", "sell"};
  static constexpr std::string_view kTo[] = {"to", "target", "dst", "dest", "destination", "quote", "arrival", "buy", "into"};
  std::vector<std::string> words(1);
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool upper = c >= 'A' && c <= 'Z';
    if (!std::isalnum(static_cast<unsigned char>(c)) || (upper && i > 0 && std::islower(static_cast<unsigned char>(key[i - 1])))) {
      if (!words.back().empty()) words.emplace_back();
      if (!std::isalnum(static_cast<unsigned char>(c))) continue;
    }
    words.back().push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  KeyRole r;
  for (const std::string& w : words) {
    const int side = std::find(std::begin(kFrom), std::end(kFrom), w) != std::end(kFrom) ? -1
                     : std::find(std::begin(kTo), std::end(kTo), w) != std::end(kTo) ? 1
                                                                                      : 0;
    if (side != 0 && r.side == 0) {
      r.side = side;
    } else if (!w.empty()) {
      r.rest += (r.rest.empty() ? "" : " ") + w;
    }
  }
  return r;
}

bool WordByte(char c) { return std::isalnum(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) & 0x80); }

// Where `value` is named in `request`: its case-insensitive whole-word
// occurrences, and for a currency or language code the places naming it.
std::vector<size_t> MentionsOf(std::string_view request, const std::string& value) {
  std::vector<size_t> at;
  std::string lower_request(request), lower_value(value);
  for (char& c : lower_request) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : lower_value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t p = lower_request.find(lower_value); !lower_value.empty() && p != std::string::npos;
       p = lower_request.find(lower_value, p + 1)) {
    const size_t end = p + lower_value.size();
    if ((p == 0 || !WordByte(lower_request[p - 1])) && (end == lower_request.size() || !WordByte(lower_request[end]))) at.push_back(p);
  }
  for (const auto& mentions : {said::CurrencyMentions(request), said::LanguageMentions(request)}) {
    for (const said::CodeMention& m : mentions) {
      if (m.code == value && std::find(at.begin(), at.end(), m.begin) == at.end()) at.push_back(m.begin);
    }
  }
  return at;
}

// -1 where a mention follows "from", +1 where it follows "to", "into" or "in".
int SideSaid(std::string_view request, size_t at) {
  size_t end = at;
  while (end > 0 && !WordByte(request[end - 1])) --end;
  size_t begin = end;
  while (begin > 0 && WordByte(request[begin - 1])) --begin;
  std::string word(request.substr(begin, end - begin));
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return word == "from" ? -1 : (word == "to" || word == "into" || word == "in") ? 1 : 0;
}

// The one value of `key`'s enum that the request writes on `side` (after
// "from": -1, after "to" / "into" / "in": +1); empty when the key lists no
// values, or none or several are said there.
std::string OnlyValueSaidOn(std::string_view request, const nlohmann::ordered_json& params, const std::string& key, int side) {
  const auto props = params.find("properties");
  if (props == params.end() || !props->is_object() || !props->contains(key)) return "";
  const nlohmann::ordered_json& schema = (*props)[key];
  if (!schema.is_object() || !schema.contains("enum") || !schema["enum"].is_array()) return "";
  std::string found;
  for (const auto& v : schema["enum"]) {
    if (!v.is_string()) continue;
    const std::string value = v.get<std::string>();
    for (size_t at : MentionsOf(request, value)) {
      if (SideSaid(request, at) != side) continue;
      if (!found.empty() && found != value) return "";
      found = value;
    }
  }
  return found;
}

}  // namespace

void OrderFromToPairs(Envelope& env, const nlohmann::ordered_json& tools, std::string_view request) {
  std::vector<std::string> swapped;
  for (auto& call : env.function_calls) {
    const nlohmann::ordered_json* params = ParametersOf(call, tools);
    if (!params) continue;
    nlohmann::ordered_json& args = call["arguments"];
    std::vector<std::pair<std::string, KeyRole>> keyed;
    for (auto it = args.begin(); it != args.end(); ++it) {
      if (it.value().is_string() && !it.value().get_ref<const std::string&>().empty()) {
        KeyRole r = RoleOf(it.key());
        if (r.side != 0) keyed.emplace_back(it.key(), std::move(r));
      }
    }
    for (const auto& [from_key, from_role] : keyed) {
      if (from_role.side != -1) continue;
      for (const auto& [to_key, to_role] : keyed) {
        if (to_role.side != 1 || to_role.rest != from_role.rest) continue;
        const std::string a = args[from_key], b = args[to_key];
        if (a == b) {
          // The same value on both sides ("from savings to savings" for "from
          // checking to savings"): where both keys list their values, the one
          // value the words put on each side, when they differ and one of them
          // is the value decoded.
          const std::string from_value = OnlyValueSaidOn(request, *params, from_key, -1);
          const std::string to_value = OnlyValueSaidOn(request, *params, to_key, 1);
          if (!from_value.empty() && !to_value.empty() && from_value != to_value && (a == from_value || a == to_value)) {
            args[from_key] = from_value, args[to_key] = to_value;
            swapped.push_back(call["name"].get<std::string>() + "." + from_key + "/" + to_key);
          }
          continue;
        }
        // How many of the two values the words put on each side.
        int kept = 0, turned = 0;
        for (size_t at : MentionsOf(request, a)) {
          const int side = SideSaid(request, at);
          kept += side == -1, turned += side == 1;
        }
        for (size_t at : MentionsOf(request, b)) {
          const int side = SideSaid(request, at);
          kept += side == 1, turned += side == -1;
        }
        if (turned > kept) {
          args[from_key] = b, args[to_key] = a;
          swapped.push_back(call["name"].get<std::string>() + "." + from_key + "/" + to_key);
        }
      }
    }
  }
  if (swapped.empty()) return;
  std::string w = "swapped from/to values the request's words put the other way:";
  for (const std::string& s : swapped) w += " " + s;
  env.warnings.push_back(std::move(w));
}

}  // namespace needle
