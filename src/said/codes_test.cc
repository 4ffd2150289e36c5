#include "said/codes.h"

#include <gtest/gtest.h>

namespace needle::said {
namespace {

TEST(Codes, CurrenciesSaidByNameSymbolOrCode) {
  EXPECT_EQ(SpokenCurrencyCodes("how much is 250 euros in yen"), "EUR JPY");
  EXPECT_EQ(SpokenCurrencyCodes("convert 100 USD to eur"), "USD EUR");
  EXPECT_EQ(SpokenCurrencyCodes("send Priya 20 dollars"), "USD");
  EXPECT_EQ(SpokenCurrencyCodes("€40 in £ please, and ¥ too"), "EUR GBP JPY");
  EXPECT_EQ(SpokenCurrencyCodes("C$ 30 to HK$"), "CAD HKD");
  EXPECT_EQ(SpokenCurrencyCodes("500 canadian dollars into australian dollars"), "CAD AUD");
  EXPECT_EQ(SpokenCurrencyCodes("Swiss francs to danish kroner, then 10 Egyptian pounds"), "CHF DKK EGP");
  EXPECT_EQ(SpokenCurrencyCodes("3000 won in korean won, 5 pounds"), "KRW GBP");
  EXPECT_EQ(SpokenCurrencyCodes("payment of 12 EUR, 30 eur and 4 euros"), "EUR");  // each once
}

TEST(Codes, WordsThatOnlyLookLikeCurrencies) {
  EXPECT_EQ(SpokenCurrencyCodes("I won the game, try again"), "");
  EXPECT_EQ(SpokenCurrencyCodes("a pound of flour"), "");
  EXPECT_EQ(SpokenCurrencyCodes("the real deal, a cad and a pen"), "");
  EXPECT_EQ(SpokenCurrencyCodes("TRY 200 in CAD"), "TRY CAD");  // capitals: codes
  EXPECT_EQ(SpokenCurrencyCodes(""), "");
}

TEST(Codes, LanguagesByName) {
  EXPECT_EQ(SpokenLanguageCodes("How do you say \"I lost my passport\" in Spanish?"), "es");
  EXPECT_EQ(SpokenLanguageCodes("translate this from German into Brazilian Portuguese"), "de pt");
  EXPECT_EQ(SpokenLanguageCodes("Mandarin, then Farsi, then mandarin again"), "zh fa");
  EXPECT_EQ(SpokenLanguageCodes("is it ok? no, it's id 5"), "");  // bare codes are English words
}

TEST(Codes, ArgumentsAskingForACode) {
  EXPECT_EQ(CodeFormatNamedBy("from_currency", "ISO code of the source currency"), "currency-code");
  EXPECT_EQ(CodeFormatNamedBy("ccy", "ISO 4217"), "currency-code");
  EXPECT_EQ(CodeFormatNamedBy("currencyCode", ""), "currency-code");
  EXPECT_EQ(CodeFormatNamedBy("to", "3-letter currency, e.g. USD"), "currency-code");
  EXPECT_EQ(CodeFormatNamedBy("target_language", "Target language code (ISO 639-1), e.g. 'es'"), "language-code");
  EXPECT_EQ(CodeFormatNamedBy("lang", "BCP 47 tag"), "language-code");
  EXPECT_EQ(CodeFormatNamedBy("targetLangCode", ""), "language-code");
  // A name is allowed, or no code is asked for: the words stay as said.
  EXPECT_EQ(CodeFormatNamedBy("from_currency", "Currency code or name"), "");
  EXPECT_EQ(CodeFormatNamedBy("target_language", "Language name"), "");
  EXPECT_EQ(CodeFormatNamedBy("currency", "Currency of the amount"), "");
  EXPECT_EQ(CodeFormatNamedBy("language", ""), "");
  EXPECT_EQ(CodeFormatNamedBy("decision", "Decision on the comparison"), "");  // ("iso" inside words)
  EXPECT_EQ(CodeFormatNamedBy("zip", "Postal code"), "");
}

}  // namespace
}  // namespace needle::said
