// The temporary files an upload writes beside its dest before renaming it into place
// (SshExecutor::upload), and which of them an upload may remove. An upload cut short (the
// connection dropped, clusterctl killed) cannot remove its own: the next upload to the same
// dest removes the ones that are certainly clusterctl's and certainly abandoned, so they do not
// accumulate (README, "upload").
//
// A temporary's name says who wrote it: DEST.clusterctl-tmp-HOST-PID-RANDOM, HOST this
// machine's name (util::host_name: its first label, only [A-Za-z0-9_-]) and PID the clusterctl
// process writing it. (Older versions wrote DEST.clusterctl-tmp-RANDOM: 8 hex digits.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace cc::remote {

/// The temporary's name for an upload to a file named `dest_name` (the dest's last component),
/// written by this process on this machine.
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

}  // namespace cc::remote
