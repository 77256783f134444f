#include "lab/lock.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/temp_dir.h"
#include "util/interrupt.h"

namespace fs = std::filesystem;
using cc::lab::acquire_lock;
using cc::lab::flock_holder;
using cc::lab::LabLock;
using cc::test::TempDir;
using cc::util::ExitCode;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("lock: /proc/locks names the pid holding a file's flock, by device and inode") {
  const std::string text =
      "1: POSIX  ADVISORY  WRITE 700 00:1a:4242 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 812 00:1a:4243 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 813 00:1a:4243 0 EOF\n"
      "3: FLOCK  ADVISORY  WRITE 955 fd:01:4243 0 EOF\n"
      "4: OFDLCK ADVISORY  READ  -1 00:05:99 0 EOF\n";
  CHECK(flock_holder(text, 0x00, 0x1a, 4243) == 812);
  CHECK(flock_holder(text, 0xfd, 0x01, 4243) == 955);             // hex device numbers
  CHECK_FALSE(flock_holder(text, 0x00, 0x1a, 4242).has_value());  // a POSIX lock, not a flock
  // The same inode on another device is another file: never taken for the lab's.
  CHECK_FALSE(flock_holder(text, 0x08, 0x01, 4243).has_value());
  CHECK_FALSE(flock_holder("", 0, 0, 1).has_value());
  CHECK_FALSE(flock_holder("garbage\n1: FLOCK x y z w\n", 0, 0, 1).has_value());
}

TEST_CASE("lock: a second taker waits, then is told who holds the lab and that nothing changed") {
  TempDir tmp{"cc-lock-test"};
  const fs::path path = tmp.path / "labs" / "t.lock";
  auto first = acquire_lock(path, "t", "up", 0ms, {});
  REQUIRE_MESSAGE(first.ok(), (first.ok() ? "" : first.error().message));
  CHECK(first->held());
  // flock belongs to the open file description: a second open in this process conflicts as
  // another process's would, and /proc/locks names this process as the holder.
  std::vector<std::string> notes;
  const auto start = std::chrono::steady_clock::now();
  auto second = acquire_lock(path, "t", "down", 200ms,
                             [&notes](std::string_view n) { notes.emplace_back(n); });
  const auto waited = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(second.ok());
  CHECK(second.error().code == ExitCode::kUsage);
  const std::string who =
      fmt::format("lab 't' is being created by another clusterctl (pid {})", ::getpid());
  CHECK(contains(second.error().message, who + ", still after 0.2 s; nothing was changed"));
  CHECK(waited >= 200ms);
  REQUIRE(notes.size() == 1);  // told once, not at every poll
  CHECK(notes[0] == "waiting: " + who);

  // Released (the holder ended): the next one gets it, and says what it does.
  first = LabLock();
  auto third = acquire_lock(path, "t", "down", 0ms, {});
  REQUIRE_MESSAGE(third.ok(), (third.ok() ? "" : third.error().message));
  auto fourth = acquire_lock(path, "t", "up", 0ms, {});
  REQUIRE_FALSE(fourth.ok());
  CHECK(contains(fourth.error().message, "lab 't' is being removed by another clusterctl"));
}

TEST_CASE("lock: lock_holder says what the holder does to the lab, and its pid") {
  // `lab status --json` said "state": "none" of a lab another clusterctl was creating.
  TempDir tmp{"cc-lock-test"};
  const fs::path path = tmp.path / "labs" / "s.lock";
  CHECK_FALSE(cc::lab::lock_holder(path, "s").has_value());  // no file
  {
    auto up = acquire_lock(path, "s", "up", 0ms, {});
    REQUIRE(up.ok());
    auto h = cc::lab::lock_holder(path, "s");
    REQUIRE(h.has_value());
    CHECK(h->state == "creating");
    CHECK(h->pid == ::getpid());
    CHECK(h->message ==
          fmt::format("lab 's' is being created by another clusterctl (pid {})", ::getpid()));
  }
  CHECK_FALSE(cc::lab::lock_holder(path, "s").has_value());  // released: a file, no holder
  auto down = acquire_lock(path, "s", "down", 0ms, {});
  REQUIRE(down.ok());
  auto h = cc::lab::lock_holder(path, "s");
  REQUIRE(h.has_value());
  CHECK(h->state == "removing");
}

TEST_CASE("lock: a waiter gets the lock once the holder is done, also when it removed the file") {
  TempDir tmp{"cc-lock-test"};
  const fs::path path = tmp.path / "labs" / "w.lock";
  auto holder = acquire_lock(path, "w", "down", 0ms, {});
  REQUIRE(holder.ok());
  std::thread done([&holder] {
    std::this_thread::sleep_for(150ms);
    holder->remove_file();  // `lab down` once the lab is gone: still held while it unlinks
    *holder = LabLock();
  });
  auto waiter = acquire_lock(path, "w", "up", 5s, {});
  done.join();
  REQUIRE_MESSAGE(waiter.ok(), (waiter.ok() ? "" : waiter.error().message));
  // It holds the file that is at the path now, not the removed one: a third is refused.
  CHECK(fs::exists(path));
  auto third = acquire_lock(path, "w", "up", 0ms, {});
  CHECK_FALSE(third.ok());
}

TEST_CASE("lock: a symbolic link, a non-file or a directory others may write is refused") {
  TempDir tmp{"cc-lock-test"};
  const fs::path labs = tmp.path / "labs";
  fs::create_directories(labs);
  fs::permissions(labs, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  fs::create_symlink(tmp.path / "elsewhere", labs / "l.lock");
  auto link = acquire_lock(labs / "l.lock", "l", "up", 0ms, {});
  REQUIRE_FALSE(link.ok());
  CHECK(link.error().code == ExitCode::kUsage);
  CHECK(contains(link.error().message, "is a symbolic link, not the lab's lock file"));
  CHECK_FALSE(fs::exists(tmp.path / "elsewhere"));  // never created through the link

  fs::create_directory(labs / "d.lock");
  auto dir = acquire_lock(labs / "d.lock", "d", "up", 0ms, {});
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().code == ExitCode::kUsage);

  fs::permissions(labs, fs::perms::others_write, fs::perm_options::add);
  auto open = acquire_lock(labs / "o.lock", "o", "up", 0ms, {});
  REQUIRE_FALSE(open.ok());
  CHECK(contains(open.error().message, "that no one else may write"));
  CHECK_FALSE(fs::exists(labs / "o.lock"));
}

TEST_CASE("lock: Ctrl-C while waiting gives up at once with kInterrupted") {
  TempDir tmp{"cc-lock-test"};
  const fs::path path = tmp.path / "labs" / "i.lock";
  auto holder = acquire_lock(path, "i", "up", 0ms, {});
  REQUIRE(holder.ok());
  cc::util::set_interrupted(true);
  auto waiter = acquire_lock(path, "i", "down", 10s, {});
  // Named as the signal that came, as every command does (util::interruption()).
  cc::util::set_interrupted(true, SIGTERM);
  auto terminated = acquire_lock(path, "i", "down", 10s, {});
  cc::util::set_interrupted(false);
  REQUIRE_FALSE(waiter.ok());
  CHECK(waiter.error().code == ExitCode::kInterrupted);
  CHECK(contains(waiter.error().message,
                 "interrupted (Ctrl-C) while waiting: lab 'i' is being created"));
  REQUIRE_FALSE(terminated.ok());
  CHECK(terminated.error().code == ExitCode::kInterrupted);
  CHECK(contains(terminated.error().message,
                 "terminated (SIGTERM) while waiting: lab 'i' is being created"));
}
