// Scratch files for push's unit tests (manifest_test.cc, target_test.cc).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace cc::push::testing {

/// A new, empty directory TMP/NAME-PID.
inline std::filesystem::path scratch(const char* name) {
  std::filesystem::path p =
      std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline void put(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string get(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace cc::push::testing
