#include "said/codes.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace needle::said {

namespace {

struct Word {
  std::string text;     // lower case; a symbol as its UTF-8 bytes
  bool upper = false;   // written all in capitals ("USD")
  bool number = false;  // digits (with separators): "250", "1,000.50"
  size_t begin = 0, end = 0;  // bytes of the text
};

bool Letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool Digit(char c) { return c >= '0' && c <= '9'; }

// Words, numbers and the currency symbols of `s`, in order.
std::vector<Word> Words(std::string_view s) {
  static constexpr std::string_view kSymbols[] = {"$", "\u20ac", "\u00a3", "\u00a5", "\u20b9", "\u20a9", "\u20bd", "\u20ba", "\u20aa"};
  std::vector<Word> out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t begin = i;
    if (Letter(s[i])) {
      Word w;
      w.begin = begin;
      bool upper = true;
      while (i < s.size() && Letter(s[i])) {
        upper = upper && std::isupper(static_cast<unsigned char>(s[i]));
        w.text.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(s[i++]))));
      }
      w.upper = upper && w.text.size() > 1;
      w.end = i;
      out.push_back(std::move(w));
      continue;
    }
    if (Digit(s[i])) {
      Word w{"", false, true, begin};
      while (i < s.size() && (Digit(s[i]) || ((s[i] == ',' || s[i] == '.') && i + 1 < s.size() && Digit(s[i + 1])))) w.text.push_back(s[i++]);
      w.end = i;
      out.push_back(std::move(w));
      continue;
    }
    bool symbol = false;
    for (std::string_view sym : kSymbols) {
      if (s.substr(i, sym.size()) == sym) {
        out.push_back({std::string(sym), false, false, i, i + sym.size()});
        i += sym.size();
        symbol = true;
        break;
      }
    }
    if (!symbol) ++i;
  }
  return out;
}

void Add(std::string& out, std::string_view code) {
  for (size_t at = 0; at + code.size() <= out.size(); ++at) {
    if (out.compare(at, code.size(), code) == 0 && (at == 0 || out[at - 1] == ' ') &&
        (at + code.size() == out.size() || out[at + code.size()] == ' ')) {
      return;  // said before
    }
  }
  if (!out.empty()) out.push_back(' ');
  out.append(code);
}

struct Named {
  std::string_view word, code;
};

// Codes written as codes: upper case always, lower case where the code is no English word.
constexpr std::string_view kCurrencyCodes[] = {
    "usd", "eur", "gbp", "jpy", "cny", "inr", "krw", "chf", "cad", "aud", "nzd", "hkd", "sgd", "sek", "nok",
    "dkk", "pln", "czk", "huf", "rub", "try", "ils", "zar", "brl", "mxn", "ars", "clp", "cop", "pen", "php",
    "thb", "myr", "idr", "vnd", "aed", "sar", "egp", "pkr", "lkr", "kwd", "qar", "ngn", "kes", "isk", "twd"};
constexpr std::string_view kEnglishWordCodes[] = {"cad", "rub", "try", "cop", "pen", "php", "sar", "kes", "ils"};

// A currency's name (singular and plural forms listed), with the code it has
// alone; qualified names are read below.
constexpr Named kCurrencyNames[] = {
    {"euro", "EUR"},      {"euros", "EUR"},     {"yen", "JPY"},       {"yuan", "CNY"},       {"renminbi", "CNY"},
    {"rmb", "CNY"},       {"rupee", "INR"},     {"rupees", "INR"},    {"franc", "CHF"},      {"francs", "CHF"},
    {"pound", "GBP"},     {"pounds", "GBP"},    {"sterling", "GBP"},  {"quid", "GBP"},       {"dollar", "USD"},
    {"dollars", "USD"},   {"bucks", "USD"},     {"ruble", "RUB"},     {"rubles", "RUB"},     {"rouble", "RUB"},
    {"roubles", "RUB"},   {"lira", "TRY"},      {"liras", "TRY"},     {"shekel", "ILS"},     {"shekels", "ILS"},
    {"zloty", "PLN"},     {"zlotys", "PLN"},    {"forint", "HUF"},    {"forints", "HUF"},    {"koruna", "CZK"},
    {"baht", "THB"},      {"ringgit", "MYR"},   {"rupiah", "IDR"},    {"dirham", "AED"},     {"dirhams", "AED"},
    {"riyal", "SAR"},     {"riyals", "SAR"},    {"rand", "ZAR"},      {"reais", "BRL"},      {"peso", "MXN"},
    {"pesos", "MXN"},     {"krona", "SEK"},     {"kronor", "SEK"},    {"krone", "NOK"},      {"kroner", "NOK"},
    {"won", "KRW"},       {"dong", "VND"},      {"naira", "NGN"},     {"shilling", "KES"},   {"shillings", "KES"}};

// The word before a currency's name that changes its code ("canadian dollars").
struct Qualified {
  std::string_view qualifier, name_stem, code;
};
constexpr Qualified kQualified[] = {
    {"canadian", "dollar", "CAD"},     {"australian", "dollar", "AUD"},  {"aussie", "dollar", "AUD"},
    {"zealand", "dollar", "NZD"},      {"kong", "dollar", "HKD"},        {"singapore", "dollar", "SGD"},
    {"singaporean", "dollar", "SGD"},  {"taiwan", "dollar", "TWD"},      {"taiwanese", "dollar", "TWD"},
    {"egyptian", "pound", "EGP"},      {"pakistani", "rupee", "PKR"},    {"lankan", "rupee", "LKR"},
    {"indonesian", "rupiah", "IDR"},   {"argentine", "peso", "ARS"},     {"argentinian", "peso", "ARS"},
    {"chilean", "peso", "CLP"},        {"colombian", "peso", "COP"},     {"philippine", "peso", "PHP"},
    {"danish", "krone", "DKK"},        {"icelandic", "krona", "ISK"},    {"brazilian", "real", "BRL"},
    {"kuwaiti", "dinar", "KWD"},       {"qatari", "riyal", "QAR"},       {"kenyan", "shilling", "KES"}};

// Names that are English words too: a currency only after a number or a symbol-free amount.
constexpr std::string_view kAmbiguousNames[] = {"won", "dong", "rand", "pound", "pounds", "franc", "real"};

constexpr Named kLanguages[] = {
    {"english", "en"},    {"spanish", "es"},    {"castilian", "es"},  {"french", "fr"},      {"german", "de"},
    {"italian", "it"},    {"portuguese", "pt"}, {"dutch", "nl"},      {"flemish", "nl"},     {"russian", "ru"},
    {"chinese", "zh"},    {"mandarin", "zh"},   {"japanese", "ja"},   {"korean", "ko"},      {"arabic", "ar"},
    {"hindi", "hi"},      {"turkish", "tr"},    {"polish", "pl"},     {"swedish", "sv"},     {"norwegian", "no"},
    {"danish", "da"},     {"finnish", "fi"},    {"greek", "el"},      {"hebrew", "he"},      {"thai", "th"},
    {"vietnamese", "vi"}, {"indonesian", "id"}, {"malay", "ms"},      {"czech", "cs"},       {"hungarian", "hu"},
    {"romanian", "ro"},   {"ukrainian", "uk"},  {"bengali", "bn"},    {"tamil", "ta"},       {"urdu", "ur"},
    {"persian", "fa"},    {"farsi", "fa"},      {"swahili", "sw"},    {"tagalog", "tl"},     {"filipino", "tl"},
    {"catalan", "ca"},    {"irish", "ga"},      {"welsh", "cy"},      {"icelandic", "is"},   {"croatian", "hr"},
    {"serbian", "sr"},    {"slovak", "sk"},     {"slovenian", "sl"},  {"bulgarian", "bg"},   {"estonian", "et"},
    {"latvian", "lv"},    {"lithuanian", "lt"}, {"punjabi", "pa"},    {"gujarati", "gu"},    {"marathi", "mr"},
    {"telugu", "te"},     {"kannada", "kn"},    {"malayalam", "ml"},  {"nepali", "ne"},      {"afrikaans", "af"},
    {"zulu", "zu"},       {"amharic", "am"},    {"yoruba", "yo"},     {"latin", "la"},       {"esperanto", "eo"}};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool Contains(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != std::string_view::npos; }

}  // namespace

std::vector<CodeMention> CurrencyMentions(std::string_view text) {
  const std::vector<Word> w = Words(text);
  std::vector<CodeMention> out;
  size_t i = 0;
  auto Add = [&](std::vector<CodeMention>& to, std::string_view code) { to.push_back({w[i].begin, std::string(code)}); };
  for (; i < w.size(); ++i) {
    const std::string& t = w[i].text;
    if (w[i].number) continue;
    // Symbols, with the letters written against a dollar sign ("C$", "HK$", "R$").
    if (t == "$") {
      const bool joined = i > 0 && !w[i - 1].number && w[i - 1].end == w[i].begin;  // "C$", "HK$"
      const std::string before = joined ? w[i - 1].text : "";
      Add(out, before == "c" || before == "ca" ? "CAD" : before == "a" || before == "au" ? "AUD" : before == "nz" ? "NZD"
               : before == "hk" ? "HKD" : before == "s" ? "SGD" : before == "r" ? "BRL" : before == "nt" ? "TWD" : "USD");
      continue;
    }
    if (t == "\u20ac") { Add(out, "EUR"); continue; }
    if (t == "\u00a3") { Add(out, "GBP"); continue; }
    if (t == "\u00a5") { Add(out, "JPY"); continue; }
    if (t == "\u20b9") { Add(out, "INR"); continue; }
    if (t == "\u20a9") { Add(out, "KRW"); continue; }
    if (t == "\u20bd") { Add(out, "RUB"); continue; }
    if (t == "\u20ba") { Add(out, "TRY"); continue; }
    if (t == "\u20aa") { Add(out, "ILS"); continue; }
    // Codes as written.
    if (t.size() == 3 && std::find(std::begin(kCurrencyCodes), std::end(kCurrencyCodes), t) != std::end(kCurrencyCodes)) {
      const bool word = std::find(std::begin(kEnglishWordCodes), std::end(kEnglishWordCodes), t) != std::end(kEnglishWordCodes);
      if (w[i].upper || !word) Add(out, Upper(t));
      continue;
    }
    // Names, qualified by the word before them.
    const std::string_view prev = i > 0 ? std::string_view(w[i - 1].text) : std::string_view();
    bool done = false;
    for (const Qualified& q : kQualified) {
      if (prev == q.qualifier && t.compare(0, q.name_stem.size(), q.name_stem) == 0 && t.size() <= q.name_stem.size() + 1) {
        out.push_back({w[i - 1].begin, std::string(q.code)});  // (the naming begins at the qualifier)
        done = true;
        break;
      }
    }
    if (done) continue;
    for (const Named& n : kCurrencyNames) {
      if (t != n.word) continue;
      const bool ambiguous = std::find(std::begin(kAmbiguousNames), std::end(kAmbiguousNames), t) != std::end(kAmbiguousNames);
      const bool after_amount = i > 0 && w[i - 1].number;
      const bool korean = t == "won" && prev == "korean";
      const bool vietnamese = t == "dong" && prev == "vietnamese";
      const bool african = t == "rand" && prev == "african";
      const bool swiss = t.compare(0, 5, "franc") == 0 && prev == "swiss";
      const bool british = t.compare(0, 5, "pound") == 0 && (prev == "british" || prev == "sterling");
      // "in pounds", "to euros": a currency named as the target of a conversion.
      const bool target = (prev == "in" || prev == "to" || prev == "into") && t != "won" && t != "dong" && t != "real";
      if (!ambiguous || after_amount || korean || vietnamese || african || swiss || british || target) Add(out, n.code);
      break;
    }
  }
  return out;
}

std::vector<CodeMention> LanguageMentions(std::string_view text) {
  std::vector<CodeMention> out;
  for (const Word& w : Words(text)) {
    for (const Named& n : kLanguages) {
      if (w.text == n.word) {
        out.push_back({w.begin, std::string(n.code)});
        break;
      }
    }
  }
  return out;
}

namespace {

std::string CodesSaid(const std::vector<CodeMention>& mentions) {
  std::string out;
  for (const CodeMention& m : mentions) Add(out, m.code);
  return out;
}

}  // namespace

std::string SpokenCurrencyCodes(std::string_view text) { return CodesSaid(CurrencyMentions(text)); }

std::string SpokenLanguageCodes(std::string_view text) { return CodesSaid(LanguageMentions(text)); }

std::string_view CodeFormatNamedBy(std::string_view name, std::string_view description) {
  std::string n;
  for (char c : name) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::vector<std::string> d;  // the description's words and numbers, lower case
  for (const Word& w : Words(description)) d.push_back(w.text);
  auto says = [&](std::string_view word) { return std::find(d.begin(), d.end(), word) != d.end(); };
  auto says_prefix = [&](std::string_view stem) {
    return std::any_of(d.begin(), d.end(), [&](const std::string& w) { return w.compare(0, stem.size(), stem) == 0; });
  };
  if (says("name") || says("names")) return "";  // "Currency code or name", "Language name"
  const bool coded = Contains(n, "code") || says("code") || says("codes") || says("iso") || says("letter") || says("bcp");
  if (!coded) return "";
  if (Contains(n, "currenc") || Contains(n, "ccy") || says_prefix("currenc") || says("4217")) return "currency-code";
  if (Contains(n, "lang") || says_prefix("language") || says("639") || says("bcp")) return "language-code";
  return "";
}

}  // namespace needle::said
