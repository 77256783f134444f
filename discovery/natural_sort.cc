#include "discovery/natural_sort.h"

#include <algorithm>

namespace cc::discovery {

namespace {
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
}  // namespace

bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ei = i;
      while (ei < a.size() && is_digit(a[ei])) ++ei;
      std::size_t ej = j;
      while (ej < b.size() && is_digit(b[ej])) ++ej;
      std::size_t zi = i;
      while (zi + 1 < ei && a[zi] == '0') ++zi;  // keep one digit of "000"
      std::size_t zj = j;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      std::string_view da = a.substr(zi, ei - zi);
      std::string_view db = b.substr(zj, ej - zj);
      if (da.size() != db.size()) return da.size() < db.size();
      if (da != db) return da < db;
      if (zi - i != zj - j) return (zi - i) < (zj - j);  // "1" < "01"
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return (a.size() - i) < (b.size() - j);
}

void natural_sort(std::vector<std::string>& names) {
  std::stable_sort(names.begin(), names.end(),
                   [](const std::string& x, const std::string& y) { return natural_less(x, y); });
}

}  // namespace cc::discovery
