// The temporary files an upload writes beside its dest before renaming it into place
// (SshExecutor::upload), and which of them an upload may remove. An upload cut short (the
// connection dropped, clusterctl killed) cannot remove its own: the next upload to the same
// dest removes the ones that are certainly clusterctl's and certainly abandoned, so they do not
// accumulate (README, "upload").
//
// A temporary's name says who wrote it: DEST.clusterctl-tmp-HOST-PID-RANDOM, HOST this
// machine's name (util::host_name: its first label, only [A-Za-z0-9_-]) and PID the clusterctl
// process writing it. (Older versions wrote DEST.clusterctl-tmp-RANDOM: 8 hex digits.) A DEST
// too long for the name to fit NAME_MAX is cut (upload_temp_prefix). Uploads over SSH and to
// `local` (a host reached without SSH) name, and remove, their temporaries alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/atomic_file.h"

namespace cc::remote {

/// What every temporary of an upload to a file named `dest_name` (the dest's last component)
/// starts with: "DEST.clusterctl-tmp-", DEST cut (at a UTF-8 character's start) to the bytes
/// that leave room for the longest HOST-PID-RANDOM within util::kNameMax. It depends on
/// `dest_name` alone, so every machine's uploads there name their temporaries alike.
std::string upload_temp_prefix(std::string_view dest_name);

/// The temporary's name for an upload to a file named `dest_name`, written by this process on
/// this machine: upload_temp_prefix, then HOST-PID-RANDOM; at most util::kNameMax bytes.
std::string upload_temp_name(std::string_view dest_name);

/// What the host says about a directory entry (its lstat: never through a link).
struct TempEntry {
  std::string name;
  bool regular = false;    // a regular file (not a link, a directory, a device ...)
  std::uint64_t uid = 0;   // its owner
  std::int64_t mtime = 0;  // last modified, seconds, by the host's clock
};

/// What an upload knows when it judges the entries beside its dest.
struct TempContext {
  std::string dest_name;  // the dest's last component
  std::uint64_t uid = 0;  // who this upload writes as (the owner of its own temporary)
  std::int64_t now = 0;   // the host's clock (its own temporary's mtime)
  /// Whether process `pid` of this machine may still be writing a temporary named `name`
  /// (upload_writer_alive).
  std::function<bool(long pid, std::string_view name)> writer_alive;
};

/// How long after its last write a temporary of another machine's clusterctl (or of an older
/// version, whose names have no pid) is taken for abandoned. A live upload writes its
/// temporary every few milliseconds and renames it within a few round trips of its last write:
/// an hour with no write is no live upload.
inline constexpr std::int64_t kStaleTempSeconds = 3600;

/// True when `e` is a temporary of an upload to `c.dest_name` that clusterctl made and nobody
/// will finish: named as upload_temp_name names them (or as older versions did), a regular
/// file owned by `c.uid`, and either written by a process of this machine that is gone (or is
/// this one and no longer uploads it), or not written for kStaleTempSeconds. Anything else
/// (another name, a link, a directory, another user's file, a live upload's) is left alone.
bool stale_upload_temp(const TempEntry& e, const TempContext& c);

/// The directory an upload's dest is in, on its host, as remove_stale_upload_temps reads it.
struct TempDirectory {
  /// Its permission bits (07777); nullopt when they cannot be read.
  std::function<std::optional<unsigned>()> mode;
  /// The names of its entries that start with `prefix`, read until `deadline`.
  std::function<std::vector<std::string>(const std::string& prefix,
                                         std::chrono::steady_clock::time_point deadline)>
      names;
  /// An entry's lstat (never through a link); nullopt when it is gone or cannot be read.
  std::function<std::optional<TempEntry>(const std::string& name)> lstat;
  /// Removes an entry (best effort).
  std::function<void(const std::string& name)> remove;
};

/// Removes the temporaries that earlier uploads to `dest_name` left in `dir` and nobody will
/// finish (stale_upload_temp), so uploads cut short do not accumulate them. `own_name` is this
/// upload's temporary, just created there: its owner is who this upload writes as, its mtime
/// the host's now. Best effort, until `deadline`: what cannot be read or removed stays. Never
/// in a directory others may write without the sticky bit (there an entry could be swapped
/// between the look and the removal); in a sticky one (/tmp) no one else can rename or remove
/// an entry of ours.
void remove_stale_upload_temps(const TempDirectory& dir, const std::string& dest_name,
                               const std::string& own_name,
                               std::chrono::steady_clock::time_point deadline);

/// A directory of this machine, for remove_stale_upload_temps.
TempDirectory local_temp_directory(const std::filesystem::path& dir);

/// Whether a temporary written by process `pid` of this machine may still be written: `pid`
/// is this process and one of its uploads now writes `name`, or `pid` is another process that
/// exists (a pid reused since only keeps a temporary until it is kStaleTempSeconds old).
bool upload_writer_alive(long pid, std::string_view name);

/// While it lives, this process is writing the temporary `name` (upload_writer_alive).
class UploadInFlight {
 public:
  explicit UploadInFlight(std::string name);
  ~UploadInFlight();
  UploadInFlight(const UploadInFlight&) = delete;
  UploadInFlight& operator=(const UploadInFlight&) = delete;

 private:
  std::string name_;
};

/// An upload to a path of this machine (LocalExecutor::upload) by util::write_file_atomic, its
/// temporary named and removed as an SSH upload's: naming() names it upload_temp_name, keeps
/// it a live one while this object lives (UploadInFlight), and once it exists removes the
/// stale temporaries beside it (remove_stale_upload_temps, until `deadline`).
class LocalUpload {
 public:
  explicit LocalUpload(std::chrono::steady_clock::time_point deadline) : deadline_(deadline) {}
  util::TempNaming naming();

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::optional<UploadInFlight> in_flight_;
};

}  // namespace cc::remote
