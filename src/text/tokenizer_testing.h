// Deterministic test strings for the tokenizer tests, benchmark and fuzzer
// seeds (header-only, not part of the engine): prompt-like text in the SPEC
// §8 format, tool JSON schemas, JSON values, and a stress set of the inputs
// where tokenizers usually disagree.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "base/random.h"
#include "io/tokenizer_blob.h"

namespace needle::testing {

class TextRng {
 public:
  explicit TextRng(uint64_t seed) : rng_(seed) {}
  size_t Below(size_t n) { return n ? static_cast<size_t>(rng_.Next() % n) : 0; }
  bool Chance(double p) { return rng_.Uniform() < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Below(v.size())]; }
  uint64_t Next() { return rng_.Next(); }

 private:
  SplitMix64 rng_;
};

inline const std::vector<std::string>& Words() {
  static const std::vector<std::string> w = {
      "turn", "on", "off", "the", "kitchen", "lights", "set", "a", "timer", "for", "minutes", "weather", "in",
      "tomorrow", "call", "mom", "send", "message", "to", "play", "some", "jazz", "volume", "brightness", "please",
      "what's", "is", "it", "going", "rain", "book", "table", "two", "at", "remind", "me", "about", "meeting",
      "convert", "dollars", "euros", "how", "far", "from", "airport", "hotel", "living", "room", "thermostat",
      "degrees", "Celsius", "Fahrenheit", "can", "you", "I'd", "like", "don't", "schedule", "email", "Dr.",
      "O'Brien", "e-mail", "re-schedule", "ASAP", "iPhone", "WiFi", "JSON", "API", "http://example.com/a?b=1",
      "user@example.org", "C:\\Users\\me", "/tmp/x.txt", "3.14", "-42", "1e9", "50%", "$19.99", "#hashtag"};
  return w;
}

inline const std::vector<std::string>& Places() {
  static const std::vector<std::string> p = {
      "Lagos", "Paris", "São Paulo", "Zürich", "Köln", "Reykjavík", "Kraków", "Ōsaka", "東京", "北京", "서울",
      "Москва", "Київ", "القاهرة", "תל אביב", "मुंबई", "Ελλάδα", "Hà Nội", "Curaçao", "Nuuk", "İstanbul", "Łódź"};
  return p;
}

inline const std::vector<std::string>& ToolNames() {
  static const std::vector<std::string> t = {"set_lights", "get_weather", "send_message", "set_timer", "play_music",
                                             "book_table", "convert_currency", "create_event", "search_web", "call"};
  return t;
}

// Fragments that exercise Unicode and byte-level edge cases.
inline const std::vector<std::string>& StressFragments() {
  static const std::vector<std::string> f = {
      // emoji, ZWJ sequences, skin tones, flags, keycaps, variation selectors
      "🙂", "😀😃", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🇳🇬", "🇯🇵🇺🇸", "1️⃣", "❤️", "✌🏿", "🧑‍🤝‍🧑",
      // CJK, Korean, Thai, Devanagari
      "日本語", "中文字符", "한국어", "ภาษาไทย", "हिन्दी", "ｆｕｌｌｗｉｄｔｈ", "ｶﾀｶﾅ",
      // RTL scripts and direction marks
      "العربية", "עברית", "\u200Fمرحبا\u200E", "\u202Bembedded\u202C", "فارسی",
      // combining marks, decomposed forms, zalgo
      "e\u0301", "cafe\u0301", "a\u0308\u0304", "Z\u0351\u0359a\u0350\u036Bl\u0352go", "\u0301", "ñ", "n\u0303",
      // Unicode spaces and invisibles
      "\u00A0", "a\u00A0b", "\u2000", "\u2002\u2003", "\u2009", "\u200A", "\u202F", "\u205F", "\u3000", "\u200B",
      "\uFEFF", "\u2028", "\u2029", "\u180E", "\u1680",
      // ASCII whitespace and controls
      "\t", "\n", "\r\n", "\v", "\f", "\t\t", "\n\n\n", " \t \n ", std::string("a\0b", 3), "\x01\x1F\x7F",
      // spaces
      " ", "  ", "   ", "          ", " x ", "x  y",
      // digits
      "0", "42", "007", "1234567890", "3.14159", "-1e-9", "99999999999999999999999999999999",
      // the space symbol and the replacement character typed literally, and piece-like text
      "\u2581", "\u2581\u2581", "a\u2581b", "\uFFFD", "<0x41>", "<s>", "</s>", "<unk>", "<pad>", "<|", "|>",
      // invalid UTF-8: stray continuation, truncated, overlong, surrogates, out of range, 0xFE/0xFF
      "\x80", "\xBF\x80", "\xC3", "\xC3(", "\xE2\x82", "\xE2\x82x", "\xF0\x9F\x99", "\xC0\x80", "\xC1\xBF",
      "\xE0\x80\xAF", "\xED\xA0\x80", "\xED\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xF8\x88\x80\x80\x80",
      "\xFE", "\xFF", "\xFF\xFE", "caf\xE9", "\xC3\xA9\xA9"};
  return f;
}

inline std::string Marker(TextRng& rng) { return kChatMarkers[rng.Below(kNumMarkers)]; }

inline std::string RandomNumber(TextRng& rng) {
  switch (rng.Below(4)) {
    case 0: return std::to_string(rng.Below(100));
    case 1: return std::to_string(rng.Below(100000));
    case 2: return std::to_string(rng.Next() % 1000000000000000ull);
    default: return std::to_string(rng.Below(1000)) + "." + std::to_string(rng.Below(100));
  }
}

inline std::string RandomQuery(TextRng& rng) {
  std::string s;
  const size_t n = 1 + rng.Below(14);
  for (size_t i = 0; i < n; ++i) {
    if (i) s += rng.Chance(0.03) ? "  " : " ";
    const size_t kind = rng.Below(10);
    if (kind < 6) s += rng.Pick(Words());
    else if (kind < 8) s += rng.Pick(Places());
    else s += RandomNumber(rng);
    if (rng.Chance(0.08)) s += rng.Pick(std::vector<std::string>{",", ".", "?", "!", ":", ";", "'s"});
  }
  if (rng.Chance(0.3)) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// A compact JSON string literal (no spaces after , and :), escaping as JSON does.
inline std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else out += static_cast<char>(c);
  }
  return out + "\"";
}

inline std::string RandomToolSchema(TextRng& rng) {
  std::string s = "{\"name\":" + JsonString(rng.Pick(ToolNames()));
  if (rng.Chance(0.7)) s += ",\"description\":" + JsonString(RandomQuery(rng));
  s += ",\"parameters\":{\"type\":\"object\",\"properties\":{";
  const size_t n = rng.Below(4);
  std::string required;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = rng.Pick(std::vector<std::string>{"location", "level", "minutes", "text", "to", "unit",
                                                               "room", "query", "amount", "date"}) + (i ? std::to_string(i) : "");
    if (i) s += ",";
    s += JsonString(name) + ":{\"type\":";
    switch (rng.Below(4)) {
      case 0: s += "\"string\""; break;
      case 1: s += "\"integer\",\"minimum\":0,\"maximum\":" + RandomNumber(rng); break;
      case 2: s += "\"number\""; break;
      default: s += "\"string\",\"enum\":[\"celsius\",\"fahrenheit\"]"; break;
    }
    s += "}";
    if (rng.Chance(0.6)) required += (required.empty() ? "" : ",") + JsonString(name);
  }
  s += "},\"required\":[" + required + "]}}";
  return s;
}

inline std::string RandomJsonValue(TextRng& rng, int depth) {
  switch (depth > 3 ? rng.Below(4) : rng.Below(7)) {
    case 0: return RandomNumber(rng);
    case 1: return JsonString(rng.Chance(0.2) ? rng.Pick(StressFragments()) : RandomQuery(rng));
    case 2: return rng.Pick(std::vector<std::string>{"true", "false", "null"});
    case 3: return JsonString(rng.Pick(Places()));
    case 4: {
      std::string s = "[";
      for (size_t i = 0, n = rng.Below(4); i < n; ++i) s += (i ? "," : "") + RandomJsonValue(rng, depth + 1);
      return s + "]";
    }
    default: {
      std::string s = "{";
      for (size_t i = 0, n = rng.Below(4); i < n; ++i) {
        s += (i ? "," : "") + JsonString(rng.Pick(Words())) + ":" + RandomJsonValue(rng, depth + 1);
      }
      return s + "}";
    }
  }
}

inline std::string RandomCalls(TextRng& rng) {
  std::string s = "[";
  for (size_t i = 0, n = rng.Below(3); i < n; ++i) {
    s += (i ? "," : "") + std::string("{\"name\":") + JsonString(rng.Pick(ToolNames())) + ",\"arguments\":" +
         RandomJsonValue(rng, 3) + "}";
  }
  return s + "]";
}

// One turn in the SPEC §8 format, sometimes with a system block and follow-ups.
inline std::string RandomPrompt(TextRng& rng) {
  std::string s;
  if (rng.Chance(0.3)) s += "<|im_start|>system\n" + RandomQuery(rng) + "<|im_end|>\n";
  s += "<|im_start|>user\n<tools>[";
  for (size_t i = 0, n = 1 + rng.Below(3); i < n; ++i) s += (i ? "," : "") + RandomToolSchema(rng);
  s += "]</tools>\n" + RandomQuery(rng) + "<|im_end|>\n<|im_start|>assistant\n";
  if (rng.Chance(0.6)) {
    s += "<think>" + RandomQuery(rng) + "</think>\n<tool_call>" + RandomCalls(rng) + "</tool_call><|im_end|>";
    if (rng.Chance(0.4)) {
      s += "\n<|im_start|>tool\n<tool_result>" + RandomJsonValue(rng, 2) +
           "</tool_result><|im_end|>\n<|im_start|>assistant\n";
    }
  }
  return s;
}

inline std::string RandomStress(TextRng& rng) {
  std::string s;
  const size_t n = rng.Below(9);
  for (size_t i = 0; i < n; ++i) {
    switch (rng.Below(8)) {
      case 0: s += Marker(rng); break;
      case 1: s += rng.Pick(Words()); break;
      case 2: s += std::string(1 + rng.Below(40), "0123456789"[rng.Below(10)]); break;
      case 3: s += static_cast<char>(rng.Below(256)); break;  // any byte, often invalid UTF-8
      case 4: {  // a marker cut, doubled or nested in another
        const std::string m = Marker(rng), o = Marker(rng);
        const size_t cut = rng.Below(m.size());
        s += rng.Chance(0.5) ? m.substr(0, cut) + o + m.substr(cut) : m.substr(0, cut);
        break;
      }
      default: s += rng.Pick(StressFragments()); break;
    }
    if (rng.Chance(0.3)) s += std::string(rng.Below(4), ' ');
  }
  return s;
}

// Hand-picked edge cases, always included.
inline std::vector<std::string> EdgeCases() {
  std::vector<std::string> v = {"", " ", "  ", "\t", "\n", "a", " a", "a ", " a ", "  two leading", "trailing  ",
                                "x<tools>y</tools>z", "<<think>>", "<think><think>", "<tool_call></tool_call>",
                                "<tools</tools>>", "<tool<tool_call>_call>", "</tool_result><|im_start|>",
                                "\xFF", "a\xFFz", "\xEF\xBF\xBD", std::string(1, '\0'), std::string(200, '7'),
                                std::string(300, ' '), std::string(100, 'a'), "\u00A0\u00A0", "\u2581"};
  for (uint32_t i = 0; i < kNumMarkers; ++i) {
    const std::string m = kChatMarkers[i];
    v.push_back(m);
    v.push_back(m + m);
    v.push_back(" " + m);
    v.push_back(m + " ");
    v.push_back("x" + m + "y");
    v.push_back(m + kChatMarkers[(i + 1) % kNumMarkers]);
    v.push_back(m.substr(0, m.size() - 1));
    v.push_back(m.substr(0, m.size() / 2) + m + m.substr(m.size() / 2));  // nested in itself
  }
  for (const std::string& f : StressFragments()) {
    v.push_back(f);
    v.push_back(" " + f + " ");
  }
  return v;
}

// `count` strings: the edge cases first, then prompts, JSON, queries and stress
// strings in equal shares.
inline std::vector<std::string> TestStrings(uint64_t seed, size_t count) {
  std::vector<std::string> v = EdgeCases();
  TextRng rng(seed);
  while (v.size() < count) {
    switch (v.size() % 5) {
      case 0: v.push_back(RandomPrompt(rng)); break;
      case 1: v.push_back(RandomJsonValue(rng, 0)); break;
      case 2: v.push_back(RandomQuery(rng)); break;
      case 3: v.push_back(RandomToolSchema(rng)); break;
      default: v.push_back(RandomStress(rng)); break;
    }
  }
  v.resize(count);
  return v;
}

// Training lines for a small tokenizer: prompt-like text with some Unicode, one
// sentence per line (the trainer reads lines, so newlines become spaces).
inline std::string TrainingCorpus(uint64_t seed, size_t lines) {
  TextRng rng(seed);
  std::string out;
  for (size_t i = 0; i < lines; ++i) {
    std::string s = i % 3 == 0 ? RandomPrompt(rng) : i % 3 == 1 ? RandomQuery(rng) : RandomJsonValue(rng, 0);
    if (i % 7 == 0) s += " " + rng.Pick(StressFragments());
    for (char& c : s) {
      if (c == '\n' || c == '\r' || c == '\0') c = ' ';
    }
    out += s + "\n";
  }
  return out;
}

}  // namespace needle::testing
