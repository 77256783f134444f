#include "util/number.h"

#include <clocale>
#include <locale>

#include <doctest/doctest.h>

using cc::util::parse_double;

TEST_CASE("parse_double reads decimal and scientific notation") {
  CHECK(parse_double("5") == 5.0);
  CHECK(parse_double("0.5") == 0.5);
  CHECK(parse_double("-0.25") == -0.25);
  CHECK(parse_double(".5") == 0.5);
  CHECK(parse_double("5.") == 5.0);
  CHECK(parse_double("1e3") == 1000.0);
  CHECK(parse_double("2.5E-3") == 0.0025);
  CHECK(parse_double("1e+2") == 100.0);
  CHECK(parse_double("86400") == 86400.0);
  CHECK(parse_double("1700000000.123456") == 1700000000.123456);
}

TEST_CASE("parse_double refuses anything but a whole finite number") {
  for (const char* bad : {"", " 5", "5 ", "+5", "-", ".", "e3", "1e", "1e+", "0x10", "inf",
                          "-inf", "nan", "5s", "1,5", "1.2.3", "--1", "1e400", "-1e400",
                          "1e-400"}) {
    INFO("text: '" << bad << "'");
    CHECK_FALSE(parse_double(bad).has_value());
  }
  // Only the view is read, not what follows it in memory.
  std::string_view part = std::string_view("12.5xyz").substr(0, 4);
  CHECK(parse_double(part) == 12.5);
}

TEST_CASE("parse_double ignores the locale's decimal separator") {
  // A German locale (decimal comma), where installed; the C++ global locale as well.
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  std::string saved = old != nullptr ? old : "C";
  bool have = false;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}) {
    if (std::setlocale(LC_NUMERIC, name) != nullptr) {
      have = true;
      break;
    }
  }
  CHECK(parse_double("0.5") == 0.5);
  CHECK_FALSE(parse_double("0,5").has_value());
  std::setlocale(LC_NUMERIC, saved.c_str());
  if (!have) MESSAGE("no de_DE or fr_FR locale installed: checked in the C locale only");
}
