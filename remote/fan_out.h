// Running one command on many hosts at once.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "remote/executor.h"
#include "util/term.h"

namespace cc::remote {

struct HostOutcome {
  std::string host;                    // Executor::host()
  util::Result<CommandResult> result;  // the command's result, or why the host failed
};

/// Runs `cmd` on every executor at once, one thread per executor (meant for up to ~64 hosts),
/// and returns one outcome per executor, in input order.
/// Wall time is that of the slowest host: each host is bounded only by its own timeouts
/// (connect timeout + opts.timeout), so a dead host never delays the others' results past
/// them. On a terminal (style.progress) a progress line "exec: 5/8 done, waiting for h3, h7"
/// is redrawn about every 200 ms on stderr and cleared at the end; otherwise nothing is printed.
/// Ctrl-C: each executor notices util::interrupted() itself and returns kInterrupted.
/// An exception thrown by an executor (a bug) is re-thrown here, after every thread ended.
/// With `keep` > 0 (and no opts.on_output), at most the first `keep` bytes of each host's
/// stdout, and of its stderr, are kept in its result, as they arrive; the rest is only counted
/// (CommandResult::out_hidden, err_hidden), so memory stays bounded whatever the hosts print.
std::vector<HostOutcome> fan_out(std::span<Executor* const> executors, const Command& cmd,
                                 const RunOptions& opts, const util::OutputStyle& style,
                                 std::size_t keep = 0);

/// Runs work(i) for every executor i at once, one thread per executor, and returns when all
/// have finished; the general form of fan_out() for per-host work of several steps (discovery's
/// probes). Progress and Ctrl-C as for fan_out(), with `label` leading the progress line. When
/// no thread can be started, work(i) runs on the calling thread. An exception thrown by work
/// is re-thrown here after every thread ended. A null entry (a host never connected) is
/// allowed: work(i) still runs for it, and must expect it.
void for_each_host(std::span<Executor* const> executors, std::string_view label,
                   const std::function<void(size_t)>& work, const util::OutputStyle& style);

/// Executor::check() of every executor at once (as for_each_host, label "check"; a null entry
/// is skipped), in input order: the problems a command that changes or runs something must
/// find on every host before it acts on any. Runs nothing on any host.
std::vector<std::optional<util::Error>> check_each(std::span<Executor* const> executors,
                                                   const util::OutputStyle& style);

/// The error that refuses to act on any of `total` hosts because of `problems` (one line per
/// host, each naming it and what to fix; at least one): kUsage, "2 of 5 hosts cannot be
/// reached as given (found before connecting to any); nothing was run on any host:" followed
/// by the lines, indented, in order.
util::Error hosts_refused(const std::vector<std::string>& problems, size_t total);

/// The progress text for `done` of `total` hosts while `waiting` are still running, e.g.
/// "exec: 5/8 done, waiting for h3, h7"; after four names: "waiting for h1, h2, h3, h4 +5 more".
std::string fan_out_progress(std::string_view label, size_t done, size_t total,
                             const std::vector<std::string>& waiting);

}  // namespace cc::remote
