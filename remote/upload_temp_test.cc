// Which temporaries beside a dest an upload removes: only clusterctl's own (its name, a regular
// file of the same owner) that nobody will finish (its writer gone, or an hour idle).
#include "remote/upload_temp.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "util/process.h"

using cc::remote::stale_upload_temp;
using cc::remote::TempContext;
using cc::remote::TempEntry;

namespace {

constexpr std::int64_t kNow = 1'800'000'000;

// This machine's tag as upload_temp_name writes it (the part before "-PID-RANDOM").
std::string this_host_tag() {
  const std::string name = cc::remote::upload_temp_name("f");
  const std::string rest = name.substr(std::string("f.clusterctl-tmp-").size());
  return rest.substr(0, rest.rfind('-', rest.rfind('-') - 1));
}

TempContext context(long live_pid) {
  TempContext c;
  c.dest_name = "train.py";
  c.uid = 1000;
  c.now = kNow;
  c.writer_alive = [live_pid](long pid, std::string_view) { return pid == live_pid; };
  return c;
}

TempEntry entry(std::string name, std::int64_t age_seconds) {
  TempEntry e;
  e.name = std::move(name);
  e.regular = true;
  e.uid = 1000;
  e.mtime = kNow - age_seconds;
  return e;
}

}  // namespace

TEST_CASE("upload temporaries: the name says which machine and process wrote it") {
  const std::string name = cc::remote::upload_temp_name("train.py");
  const std::string head =
      "train.py.clusterctl-tmp-" + this_host_tag() + "-" + std::to_string(::getpid()) + "-";
  REQUIRE(name.starts_with(head));
  const std::string random = name.substr(head.size());
  CHECK(random.size() == 8);
  CHECK(random.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(name != cc::remote::upload_temp_name("train.py"));  // two uploads, two names
  CHECK_FALSE(this_host_tag().empty());
  CHECK(this_host_tag().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_") == std::string::npos);
}

TEST_CASE("upload temporaries: this machine's, of a process that is gone, go at once") {
  const std::string tag = this_host_tag();
  const TempContext c = context(/*live_pid=*/4242);
  CHECK(stale_upload_temp(entry("train.py.clusterctl-tmp-" + tag + "-4343-0123abcd", 5), c));
  // Its writer still runs: kept until it is an hour idle.
  CHECK_FALSE(stale_upload_temp(entry("train.py.clusterctl-tmp-" + tag + "-4242-0123abcd", 5), c));
  CHECK_FALSE(
      stale_upload_temp(entry("train.py.clusterctl-tmp-" + tag + "-4242-0123abcd", 3599), c));
  CHECK(stale_upload_temp(entry("train.py.clusterctl-tmp-" + tag + "-4242-0123abcd", 3600), c));
  // No way to ask: taken for alive.
  TempContext unknown = c;
  unknown.writer_alive = nullptr;
  CHECK_FALSE(
      stale_upload_temp(entry("train.py.clusterctl-tmp-" + tag + "-4343-0123abcd", 5), unknown));
}

TEST_CASE("upload temporaries: another machine's and older versions' go only when an hour idle") {
  const TempContext c = context(/*live_pid=*/0);  // no process of this machine is alive
  const std::string other = "train.py.clusterctl-tmp-" + this_host_tag() + "x-4343-0123abcd";
  CHECK_FALSE(stale_upload_temp(entry(other, 60), c));
  CHECK(stale_upload_temp(entry(other, 3600), c));
  CHECK_FALSE(stale_upload_temp(entry("train.py.clusterctl-tmp-0123456789abcdef", 60), c));
  CHECK(stale_upload_temp(entry("train.py.clusterctl-tmp-0123456789abcdef", 7200), c));
}

TEST_CASE("upload temporaries: what is not ours, or not a file, is never removed") {
  const std::string tag = this_host_tag();
  const TempContext c = context(/*live_pid=*/0);
  const std::string ours = "train.py.clusterctl-tmp-" + tag + "-4343-0123abcd";
  REQUIRE(stale_upload_temp(entry(ours, 7200), c));
  TempEntry link = entry(ours, 7200);
  link.regular = false;  // a symbolic link, a directory, a FIFO ...
  CHECK_FALSE(stale_upload_temp(link, c));
  TempEntry theirs = entry(ours, 7200);
  theirs.uid = 0;  // another user's
  CHECK_FALSE(stale_upload_temp(theirs, c));
  // Another dest's, or a name clusterctl does not write.
  for (const std::string& name : std::vector<std::string>{
           "other.py.clusterctl-tmp-" + tag + "-4343-0123abcd", std::string("train.py"),
           "xtrain.py.clusterctl-tmp-" + tag + "-4343-0123abcd", "train.py.clusterctl-tmp-",
           "train.py.clusterctl-tmp-" + tag + "-4343-0123abcg",
           "train.py.clusterctl-tmp-" + tag + "-4343-0123abcde",
           "train.py.clusterctl-tmp-" + tag + "-43x3-0123abcd",
           "train.py.clusterctl-tmp-" + tag + "--0123abcd",
           "train.py.clusterctl-tmp--4343-0123abcd", "train.py.clusterctl-tmp-0123456789abcde",
           "train.py.clusterctl-tmp-4343-0123abcd",
           "train.py.clusterctl-tmp-" + tag + "-0-0123abcd"}) {
    CAPTURE(name);
    CHECK_FALSE(stale_upload_temp(entry(name, 7200), c));
  }
  TempContext no_dest = c;
  no_dest.dest_name = "";
  CHECK_FALSE(stale_upload_temp(entry(".clusterctl-tmp-" + tag + "-4343-0123abcd", 7200), no_dest));
}

TEST_CASE("upload temporaries: this process's own, while an upload writes it, stays") {
  const std::string name = cc::remote::upload_temp_name("train.py");
  const long self = static_cast<long>(::getpid());
  CHECK_FALSE(cc::remote::upload_writer_alive(self, name));
  {
    const cc::remote::UploadInFlight writing(name);
    CHECK(cc::remote::upload_writer_alive(self, name));
    CHECK_FALSE(cc::remote::upload_writer_alive(self, name + "x"));
  }
  CHECK_FALSE(cc::remote::upload_writer_alive(self, name));  // its upload ended (cut short)
  CHECK_FALSE(cc::remote::upload_writer_alive(0, name));
  CHECK_FALSE(cc::remote::upload_writer_alive(-1, name));
  CHECK(cc::remote::upload_writer_alive(static_cast<long>(::getppid()), "x"));
}

TEST_CASE("upload temporaries: a name of 255 bytes still gets a temporary that fits NAME_MAX") {
  // DEST.clusterctl-tmp-HOST-PID-RANDOM for a 240-byte DEST was ~290 bytes: creating it failed
  // (ENAMETOOLONG) where the dest itself was a good name.
  for (const size_t n : std::vector<size_t>{1, 180, 187, 188, 200, 254, 255}) {
    CAPTURE(n);
    const std::string dest(n, 'a');
    const std::string name = cc::remote::upload_temp_name(dest);
    CHECK(name.size() <= cc::util::kNameMax);
    // What the cleanup recognises: the same prefix, the same dest cut alike.
    const std::string prefix = cc::remote::upload_temp_prefix(dest);
    CHECK(name.starts_with(prefix));
    CHECK(prefix.ends_with(".clusterctl-tmp-"));
    CHECK(prefix.starts_with(dest.substr(0, std::min<size_t>(n, 100))));
    CHECK(name != cc::remote::upload_temp_name(dest));  // still one of its own per upload
    TempContext c = context(/*live_pid=*/0);
    c.dest_name = dest;
    CHECK(stale_upload_temp(entry(name.substr(0, name.rfind('-', name.rfind('-') - 1)) +
                                      "-4343-0123abcd",
                                  5),
                            c));
    // The longest tail (a 32-byte machine tag, a 10-digit pid) fits too.
    const std::string longest = prefix + std::string(32, 'm') + "-4294967295-0123abcd";
    CHECK(longest.size() <= cc::util::kNameMax);
  }
  // A cut never splits a UTF-8 character (macOS refuses such a name).
  std::string accented;
  for (int i = 0; i < 127; ++i) accented += "\xc3\xa9";  // "é", 254 bytes
  const std::string prefix = cc::remote::upload_temp_prefix(accented);
  const std::string dest_part = prefix.substr(0, prefix.size() - std::string(".clusterctl-tmp-").size());
  CHECK(dest_part.size() % 2 == 0);
  CHECK(dest_part.size() < accented.size());
  CHECK(accented.starts_with(dest_part));
}

TEST_CASE("upload temporaries: remove_stale_upload_temps removes the stale ones, through the directory given") {
  const std::string tag = this_host_tag();
  const std::string own = cc::remote::upload_temp_name("train.py");
  std::map<std::string, TempEntry> entries;
  for (const auto& [name, age] : std::vector<std::pair<std::string, std::int64_t>>{
           {own, 0},
           {"train.py.clusterctl-tmp-" + tag + "-4343-0123abcd", 5},       // its writer gone
           {"train.py.clusterctl-tmp-" + tag + "x-4343-0123abcd", 5},      // another machine's
           {"other.py.clusterctl-tmp-" + tag + "-4343-0123abcd", 5}}) {   // another dest's
    entries[name] = entry(name, age);
  }
  unsigned mode = 0755;
  std::vector<std::string> removed;
  cc::remote::TempDirectory d;
  d.mode = [&]() -> std::optional<unsigned> { return mode; };
  d.names = [&](const std::string& prefix, std::chrono::steady_clock::time_point) {
    std::vector<std::string> names;
    for (const auto& [name, e] : entries) {
      if (name.starts_with(prefix)) names.push_back(name);
    }
    return names;
  };
  d.lstat = [&](const std::string& name) -> std::optional<TempEntry> {
    auto it = entries.find(name);
    if (it == entries.end()) return std::nullopt;
    return it->second;
  };
  d.remove = [&](const std::string& name) { removed.push_back(name); };
  const auto later = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // A directory others may write without the sticky bit: nothing.
  mode = 0777;
  cc::remote::remove_stale_upload_temps(d, "train.py", own, later);
  CHECK(removed.empty());
  mode = 01777;
  cc::remote::remove_stale_upload_temps(d, "train.py", own, later);
  CHECK(removed == std::vector<std::string>{"train.py.clusterctl-tmp-" + tag + "-4343-0123abcd"});
}
