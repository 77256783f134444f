// What `clusterctl push` copies: the source tree as a flat list of entries (manifest), walked
// on the source host without following any symbolic link, and its JSON form, which the source
// rank broadcasts to the targets. Pure but for the walk (lstat/opendir on the source host).
//
// Each SRC given names one top-level entry, by its file name (as `cp -r SRC... DEST`): a file,
// a directory (walked recursively, entries sorted by path) or a symbolic link (copied as a link,
// never followed). Paths in the manifest are relative, '/'-separated, never absolute, never
// with "." or ".." components; a manifest from the wire is checked for that before use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct stat;

namespace cc::push {

/// A stat's modification time in ns since the epoch (st_mtim; st_mtimespec on macOS).
std::int64_t mtime_ns_of(const struct stat& st);

enum class EntryKind { kFile, kDirectory, kSymlink };

struct Entry {
  std::string path;         // relative to the destination directory: "llama/model-0001.bin"
  EntryKind kind = EntryKind::kFile;
  std::uint64_t size = 0;   // bytes (files)
  std::uint32_t mode = 0;   // permission bits (07777)
  std::int64_t mtime_ns = 0;  // modification time, ns since the epoch
  std::string link;         // the link's target, as stored (symlinks)
  std::string digest;       // XXH3-128, 32 hex digits; only with --checksum (else empty)
  friend bool operator==(const Entry&, const Entry&) = default;
};

struct Manifest {
  std::vector<Entry> entries;  // parents before children
  std::vector<std::string> errors;  // per source problem: "SRC: no such file or directory"
  std::vector<std::string> local;   // on the source: each entry's local path (not in the JSON)
  std::uint64_t file_bytes() const;
  std::size_t file_count() const;
};

/// Walks the sources (local paths on this host). Every problem is collected, none stops the
/// walk: a missing or unreadable source, an unreadable directory or file inside it, a FIFO,
/// socket or device (push copies regular files, directories and links), two sources with the
/// same file name. With `digests`, every file's XXH3-128 digest is computed (one read pass).
Manifest build_manifest(const std::vector<std::string>& sources, bool digests);

/// JSON text of the manifest's entries, and back. from_json throws std::invalid_argument for
/// malformed text or an unsafe path (absolute, "..", ".", empty component, NUL).
std::string to_json(const Manifest& m);
Manifest manifest_from_json(const std::string& text);

/// True when `path` is a safe relative path: non-empty, no leading '/', no empty, "." or ".."
/// component, no NUL.
bool safe_relative_path(const std::string& path);

}  // namespace cc::push
