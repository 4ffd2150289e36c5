// Currencies and languages said by name, written as the codes a schema asks
// for: "250 euros in yen" -> EUR, JPY for an argument described as "ISO
// 4217 currency code"; "into Spanish" -> es for "ISO 639-1 language code".
// Like dates and times (dates_times.h), the session offers these as the
// values such an argument takes: a small model copies the word it read
// ("euros"), which an API expecting a code rejects, and it cannot be
// trained on every schema's spelling of "code".
//
// Read (English, case-insensitive, whole words):
//   currencies  codes as written ("USD", "eur"), symbols ($ € £ ¥ ₹ ₩ ₽ ₺ ₪),
//               names ("euros", "yen", "pounds", "swiss francs", "canadian
//               dollars"; "dollars" alone is USD, "won" only after a number
//               or "korean");
//   languages   names ("Spanish", "Brazilian Portuguese" is still pt,
//               "Mandarin" zh, "Farsi" fa); never bare codes ("it", "no"
//               and "id" are English words).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace needle::said {

// The currency codes `text` says, upper case, separated by spaces, in the
// order said, each once; "" when it says none.
std::string SpokenCurrencyCodes(std::string_view text);

// Each place `text` names a currency / language: where the naming begins
// (bytes; a qualified name at its qualifier) and the code, in order.
struct CodeMention {
  size_t begin = 0;
  std::string code;
};
std::vector<CodeMention> CurrencyMentions(std::string_view text);
std::vector<CodeMention> LanguageMentions(std::string_view text);

// The ISO 639-1 codes of the languages `text` names, lower case, separated
// by spaces, in the order said, each once; "" when it names none.
std::string SpokenLanguageCodes(std::string_view text);

// "currency-code" or "language-code" when a string argument's name and
// description ask for a code of one ("ISO 4217", "currency code", "3-letter
// currency", "language code", "ISO 639-1", "BCP 47", "two-letter language
// code", a name like `currency_code` or `target_lang_code`); "" otherwise,
// and "" when the description also allows a name ("Currency code or name").
std::string_view CodeFormatNamedBy(std::string_view name, std::string_view description);

}  // namespace needle::said
