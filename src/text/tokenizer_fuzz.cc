// libFuzzer target for the tokenizer. The first byte picks a mode:
//   0: the rest is text, encoded and decoded with the golden tokenizer
//      (testdata/golden/tokenizer.model);
//   1: the same with the byte-level fallback vocabulary;
//   2: the rest is a tokenizer blob: if ParseTokenizerBlob accepts it, a
//      Tokenizer must build from it and encode/decode without failing.
// Invariants (text modes): every id is in range; decoding gives back the
// input when it is valid UTF-8 without U+2581 (what SentencePiece gives);
// encoding is idempotent (encode(decode(encode(s))) == encode(s)); the
// tokens' bytes concatenate to the decoded text behind the dummy-prefix space.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"

namespace {

// The repository root, from this file's path (CMake compiles it by absolute
// path); a relative path as the fallback when run from the repository root.
std::string GoldenModelPath() {
  const std::string self = __FILE__, tail = "src/text/tokenizer_fuzz.cc";
  if (self.size() > tail.size() && self[0] == '/') return self.substr(0, self.size() - tail.size()) + "testdata/golden/tokenizer.model";
  return "testdata/golden/tokenizer.model";
}

const needle::Tokenizer& Golden() {
  static const needle::Tokenizer* tok = [] {
    try {
      return new needle::Tokenizer(needle::ReadSentencePieceModelFile(GoldenModelPath()));
    } catch (const needle::Error& e) {
      std::fprintf(stderr, "tokenizer_fuzz: cannot load the golden tokenizer: %s\n", e.what());
      std::abort();
    }
  }();
  return *tok;
}

const needle::Tokenizer& ByteLevel() {
  static const needle::Tokenizer tok(needle::ByteLevelTokenizer());
  return tok;
}

// Strict UTF-8 (no overlongs, surrogates or values above U+10FFFF), written
// independently of the tokenizer's own decoder.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) len = 1, cp = c;
    else if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return false;
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char t = s[i + k];
      if ((t & 0xC0) != 0x80) return false;
      cp = cp << 6 | (t & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: invariant failed: %s\n", what);
    std::abort();
  }
}

void CheckText(const needle::Tokenizer& tok, std::string_view s) {
  const std::vector<int32_t> ids = tok.Encode(s);
  for (int32_t id : ids) Check(id >= 0 && id < tok.vocab_size(), "id in range");
  Check(s.empty() == ids.empty(), "only the empty string has no ids");
  const std::string text = tok.Decode(ids);
  if (IsValidUtf8(s) && s.find("\xE2\x96\x81") == std::string_view::npos) Check(text == s, "decode(encode(s)) == s");
  Check(IsValidUtf8(text), "decoded text is valid UTF-8");
  Check(tok.Encode(text) == ids, "encode(decode(encode(s))) == encode(s)");
  std::string joined;
  for (int32_t id : ids) joined += tok.TokenBytes(id);
  Check(joined == (s.empty() ? "" : " " + text), "token bytes concatenate to the decoded text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: CheckText(Golden(), rest); break;
    case 1: CheckText(ByteLevel(), rest); break;
    default: {
      needle::TokenizerModel model;
      try {
        model = needle::ParseTokenizerBlob({data + 1, size - 1}, 0);
      } catch (const needle::Error&) {
        return 0;  // rejected with a clear error: fine
      }
      const needle::Tokenizer tok(model);  // must not throw for an accepted blob
      for (std::string_view s : {std::string_view("turn on the lights <tool_call>{\"a\":1}</tool_call>"),
                                 std::string_view("  \xFF\xC3 <think>42</think> \xE2\x96\x81"), rest.substr(0, 256)}) {
        const std::vector<int32_t> ids = tok.Encode(s);
        for (int32_t id : ids) Check(id >= 0 && id < tok.vocab_size(), "id in range (blob mode)");
        tok.Decode(ids);
      }
      break;
    }
  }
  return 0;
}
