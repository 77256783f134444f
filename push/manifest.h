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

#include <nlohmann/json_fwd.hpp>

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
  std::vector<int> to;      // files and links: the target ranks of a share (--manifest),
                            // ascending; empty: every target
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

/// One line of a `--manifest` file: target rank `rank` gets the files matching `glob`. A glob
/// without '/' matches a file's or link's name (its last component); one with '/' matches its
/// whole relative path ("llama/model-0000[12]-*", fnmatch with FNM_PATHNAME); either also
/// matches everything below a matching directory. `at` says where it was written
/// ("shares.yaml:4: h3"), for errors.
struct Share {
  int rank = 0;
  std::string glob;
  std::string at;
  friend bool operator==(const Share&, const Share&) = default;
};

/// Applies the shares to `m`: each file or link matched by some share goes to exactly the
/// ranks of the shares that match it (Entry::to); every other one (the common files) goes to
/// every target. Directories go to every target. Returns one problem per share that matches
/// nothing ("shares.yaml:4: h3: 'model-9*' matches no file of the push").
std::vector<std::string> apply_shares(Manifest& m, const std::vector<Share>& shares);

/// Shares as JSON text (rank_main's --shares), and back; throws std::invalid_argument.
std::string shares_to_json(const std::vector<Share>& shares);
std::vector<Share> shares_from_json(const std::string& text);

/// `j` as JSON text that never throws: bytes that are not UTF-8 (a file name in Latin-1) become
/// U+FFFD. For messages and reports; the manifest keeps such names exactly (to_json). The rank
/// program's own copy of util::json_text (push/ links comm/ only, not util/).
std::string json_text(const nlohmann::json& j);

/// JSON text of the manifest's entries, and back. A path or link target that is not UTF-8 is
/// carried as hex ("path_hex", "link_hex"), so every name arrives byte for byte. from_json throws std::invalid_argument for
/// malformed text or an unsafe path (absolute, "..", ".", empty component, NUL).
std::string to_json(const Manifest& m);
Manifest manifest_from_json(const std::string& text);

/// True when `path` is a safe relative path: non-empty, no leading '/', no empty, "." or ".."
/// component, no NUL.
bool safe_relative_path(const std::string& path);

}  // namespace cc::push
