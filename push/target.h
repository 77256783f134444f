// The destination side of `clusterctl push`, on each target host: what the manifest needs
// there (examine: the preflight, nothing written), then the writes (DestTree), which never
// follow a symbolic link below the destination directory, never replace anything that is not a
// regular file or a link, and put a file under its final name only when it is whole, verified
// and synced.
//
// A file is written as DIR/.ccpush-P-V.part (P: a hash of its path; V: of its size and mtime,
// so a changed source never resumes a stale part), then renamed over DIR/NAME. An interrupted
// push leaves the part, and the next push of the same file resumes at its last whole chunk;
// a push of a changed file removes the parts its earlier versions left (same P, other V).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "push/manifest.h"

namespace cc::push {

struct TargetPlan {
  std::vector<std::string> errors;  // "DEST/x: is a directory, and the source has a file there"
  std::uint64_t free_bytes = 0;     // available to this user at the destination
  std::uint64_t need_bytes = 0;     // what the files to send add
  /// Files to write: (entry index, bytes already there in its part, a multiple of the chunk).
  std::vector<std::pair<std::size_t, std::uint64_t>> files;
  std::size_t skipped = 0;  // files already at the destination, same size and mtime (digest)
  /// What makes this destination directory one place: the host's boot (Linux's
  /// /proc/sys/kernel/random/boot_id, macOS's kern.bootsessionuuid) and the device and inode
  /// of its nearest existing ancestor, plus the rest of its path. Two targets with the same
  /// identity would write the same files (one machine named twice, or lab hosts sharing a
  /// file system): rank 0 refuses that.
  std::string identity;
};

/// True when a destination file's mtime `have_ns` counts as the source's `want_ns`: equal, or
/// equal to the second when the destination keeps whole seconds only (HFS+, some network file
/// systems: its nanoseconds are 0).
bool same_mtime(std::int64_t have_ns, std::int64_t want_ns);

/// The preflight: looks at `dest` for every entry of `m`. `checksum`: a file of the same size
/// is skipped only when its digest equals the entry's (the manifest has digests), else when
/// size and mtime match. `chunk`: the transfer's chunk size in bytes (a part resumes at a
/// multiple of it). `rank`: this target's rank; an entry shared to other ranks only
/// (Entry::to) is not looked at.
TargetPlan examine(const std::string& dest, const Manifest& m, bool checksum, std::uint64_t chunk,
                   int rank);

/// True when entry `e` goes to target `rank` (Entry::to empty, or naming it).
bool goes_to(const Entry& e, int rank);

/// The part file's name for entry `e` (in the entry's directory).
std::string part_name(const Entry& e);

class DestTree {
 public:
  /// Creates `dest` (and its missing parents, mode 0755) when needed. Check ok() after.
  explicit DestTree(std::string dest);
  ~DestTree();
  DestTree(const DestTree&) = delete;
  DestTree& operator=(const DestTree&) = delete;
  bool ok() const { return root_ >= 0; }
  const std::string& error() const { return error_; }

  /// Makes the directories of `m` (and each file's parents), each writable and searchable by
  /// its owner until finish_directories gives it the source's mode (a read-only source
  /// directory would otherwise refuse the next push). Returns problems, one per path.
  std::vector<std::string> make_directories(const Manifest& m);
  /// Opens entry e's part for writing from `have` (truncated to `have`), after removing the
  /// parts earlier versions of e left; -1 with `problem` set.
  int open_part(const Entry& e, std::uint64_t have, std::string& problem);
  /// Syncs the part, sets its mode and mtime, and renames it to its final name when `digest`
  /// matches e's (computed by the caller); else removes it. Closes fd. Returns "" or a problem.
  std::string finish_file(const Entry& e, int fd, const std::string& digest,
                          const std::string& expected);
  /// Makes entry e's symbolic link (replacing a link or regular file there).
  std::string make_link(const Entry& e);
  /// Sets the directories' modes and mtimes (last: writing inside changes them) and syncs.
  std::vector<std::string> finish_directories(const Manifest& m);

 private:
  // The directory holding rel's last component, opened without following links; -1 on a
  // problem (in `problem`). `leaf` gets the last component.
  int open_parent(const std::string& rel, bool create, std::string& leaf, std::string& problem);
  std::string shown(const std::string& rel) const { return dest_ + "/" + rel; }
  // Removes the parts of other versions of e in `dir` (regular files only).
  static void remove_stale_parts(int dir, const Entry& e);

  std::string dest_;
  int root_ = -1;
  std::string error_;
};

}  // namespace cc::push
