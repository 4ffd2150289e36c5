#include "said/numbers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace needle::said {
namespace {

TEST(WrittenNumbers, ReadsDigitsAsTheyAreWritten) {
  EXPECT_EQ(WrittenNumbers("limit 20.9 at Dock 3, -5 degrees, 27%"), (std::vector<double>{20.9, 3, -5, 27}));
  EXPECT_EQ(WrittenNumbers("order 3,010,425"), (std::vector<double>{3010425, 3, 10, 425}));
  EXPECT_EQ(WrittenNumbers("spot P93 on 2025-09-06"), (std::vector<double>{93, 2025, 9, 6}));
  EXPECT_EQ(WrittenNumbers("a ride to the airport"), std::vector<double>{});
  EXPECT_EQ(WrittenNumbers("1.5.2 and 7."), (std::vector<double>{1.5, 2, 7}));
}

TEST(SpelledNumbers, ReadsEnglishNumberWords) {
  EXPECT_EQ(SpelledNumbers("dim the lights to fifty seven"), "57");
  EXPECT_EQ(SpelledNumbers("Set a timer for ten minutes"), "10");
  EXPECT_EQ(SpelledNumbers("twenty-two degrees, then Twelve"), "22 12");
  EXPECT_EQ(SpelledNumbers("one hundred and five"), "105");
  EXPECT_EQ(SpelledNumbers("one hundred twenty five euros"), "125");
  EXPECT_EQ(SpelledNumbers("a hundred and fifty"), "150");
  EXPECT_EQ(SpelledNumbers("two thousand three hundred"), "2300");
  EXPECT_EQ(SpelledNumbers("one million two hundred thousand and one"), "1200001");
  EXPECT_EQ(SpelledNumbers("nineteen hundred"), "1900");
  EXPECT_EQ(SpelledNumbers("zero"), "0");
  // Digits said one by one, tens after tens, and numbers apart stay apart.
  EXPECT_EQ(SpelledNumbers("dial five five one"), "5 5 1");
  EXPECT_EQ(SpelledNumbers("ten twenty"), "10 20");
  EXPECT_EQ(SpelledNumbers("six, seven"), "6 7");
  EXPECT_EQ(SpelledNumbers("sixty 5"), "60");
  EXPECT_EQ(SpelledNumbers("three and four"), "3 4");
  // Not numbers: parts of words, ordinals, nothing at all.
  EXPECT_EQ(SpelledNumbers("often tenth someone"), "");
  EXPECT_EQ(SpelledNumbers(""), "");
  EXPECT_EQ(SpelledNumbers("12 minutes"), "");
}

}  // namespace
}  // namespace needle::said
