// A launched job's record, so other terminals can find it: `clusterctl jobs`, `logs`, `stop`.
// One JSON file per job, written atomically (util::write_file_atomic) when the job starts and
// again when it ends:
//   ${XDG_STATE_HOME:-$HOME/.local/state}/clusterctl/jobs/JOBID.json
// The directory is private (util::private_state_dir: mode 0700, owned by the user, writable by
// no one else, or every command that uses it refuses with exit 2), so no other user can plant
// a record; and a record names its launcher by pid and start time, so a reused pid is never
// taken for it.
//   {"schema": "clusterctl.job/1", "id": "smoke-20261130-233053-1c3456", "name": "smoke",
//    "job_file": "/abs/job.yaml", "pid": 1234,            // the clusterctl process running it
//    "pid_start": "linux:BOOTID:TICKS",                  // util::process_start_time(pid)
//    "state": "running" | "succeeded" | "failed" | "interrupted",
//    "exit_code": null | 0 | 4 | 130, "started_at": "2026-11-30T23:30:53Z",
//    "started_us": 1796081453123456,                     // the same, in microseconds since
//                                                        // the epoch (absent in older records)
//    "logs": "/abs/logs/smoke/ID", "world_size": 4,
//    "lab": "default",                                   // or absent: see JobRecord::lab
//    "inventory": "/abs/inv.yaml", "ssh_config": "/abs/ssh_config",  // or absent: see below
//    "ranks": [{"rank": 0, "host": "h1", "status": "exit 0"}, ...],  // status: at the end
//    "reason": "rank 2 on h3 failed (exit 1)"}           // why it failed; absent otherwise
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace cc::launch {

/// Where a job is; in records as "running", "succeeded", "failed", "interrupted" ("lost" is
/// never written: it is what a "running" record whose launcher is gone reads as).
enum class JobState { kRunning, kSucceeded, kFailed, kInterrupted, kLost };
std::string_view to_string(JobState s);
/// The state a record's text names; nullopt for any other text.
std::optional<JobState> job_state_from(std::string_view text);

struct JobRecord {
  std::string id;
  std::string name;
  std::string job_file;
  long pid = 0;
  std::string pid_start;  // util::process_start_time(pid) when the record was written; "" in
                          // records of older versions
  JobState state = JobState::kRunning;
  std::optional<int> exit_code;
  std::string started_at;  // util::utc_iso, to the second (what `jobs` shows)
  /// When it started, in microseconds since the Unix epoch: what orders the runs (two runs of
  /// one job started in the same second are told apart by it, never by their ids' random
  /// part). Records of older versions have only started_at: its second, times 10^6.
  std::int64_t started_us = 0;
  std::string logs;  // absolute
  int world_size = 0;
  std::vector<std::string> hosts;        // per rank
  std::vector<std::string> rank_status;  // per rank, at the end ("exit 0", "SIGKILL")
  /// The lab whose inventory names the hosts (`cluster: lab:NAME` or --lab), so `jobs --gc`
  /// reaches them without --lab; "" for other jobs. A record's text that is not a valid lab
  /// name (remote::validate_lab_name) reads as "": a record cannot point gc at another path.
  std::string lab;
  /// The inventory file (`cluster: inv.yaml`, `inventory:FILE` or --inventory) and the SSH
  /// config (-F) that reached the hosts, absolute, so `jobs --gc` reaches them as launch did;
  /// "" when none was given (and in older records). A record's text that is not an absolute
  /// path reads as "".
  std::string inventory;
  std::string ssh_config;
  /// Why the job did not succeed (launch::job_reason: the rank, its exit status or signal, or
  /// the lost host; or why it never started), at the end; "" otherwise and in older records.
  std::string reason;
  /// Why the job failed, for `jobs`: `reason`, or what the record still tells (a lost
  /// launcher; the first rank status that is not "exit 0"); "" for a running or succeeded job.
  std::string why() const;
  /// kRunning only while its clusterctl process lives; a record left running by a process
  /// that died (kill -9), or whose pid now names another process, reads kLost.
  JobState live_state() const;
  /// The launcher still runs: its pid names a process with the recorded start time (records
  /// without one: a process with that pid exists).
  bool launcher_alive() const;
};

/// The jobs directory: ${XDG_STATE_HOME:-$HOME/.local/state}/clusterctl/jobs.
std::filesystem::path jobs_dir();

/// Writes the record atomically to jobs_dir()/ID.json. Errors: kUsage naming the file, or the
/// jobs directory when it is not private (util::private_state_dir).
util::Status save_job(const JobRecord& rec);

/// Every record, newest first (by started_us; records started in the same microsecond by id,
/// an order nothing picks a run by: resolve_job). Unreadable files are skipped. Errors: kUsage
/// when the jobs directory is not private.
util::Result<std::vector<JobRecord>> list_jobs();
/// Sorts records as list_jobs returns them: newest first.
void sort_newest_first(std::vector<JobRecord>& jobs);

/// Removes the record of job `id` (exactly its id) from jobs_dir(): its logs and anything on the
/// hosts are left as they are. Errors: kUsage when there is no record with that id, or its
/// launcher still runs (a running job keeps its record: stop it first).
util::Status forget_job(const std::string& id);

/// How a job's name picks one of its runs (README, "Launching a job"). A run's id always names
/// that run.
enum class NameUse {
  /// `logs`, `stop`: the run of that name that is running; when none is, the newest run. A
  /// name that several running runs share is refused (which one was meant cannot be known),
  /// and so is one whose newest runs started in the same second (older records, which hold no
  /// finer time).
  kCurrentRun,
  /// `jobs --forget`: only a name that exactly one record has (dropping is not undone).
  kOnlyRecord,
};

/// The record that `given` (a run id, or a job name) names among `jobs` (newest first, as
/// list_jobs returns them). `command` is the command that was run ("stop", "logs", "jobs
/// --forget"), for the way to pick one run: `clusterctl COMMAND ID`. Errors, all kUsage: no
/// record has that id or name (naming the jobs directory, the closest job name or run id as a
/// "did you mean" (util::did_you_mean), and recent ids: `clusterctl jobs`
/// lists them); the name is ambiguous as `use` says, naming every run id it could mean, newest
/// first, with its state and start.
util::Result<JobRecord> resolve_job(const std::vector<JobRecord>& jobs, const std::string& given,
                                    NameUse use, std::string_view command);

/// resolve_job over list_jobs(). Errors: list_jobs's and resolve_job's.
util::Result<JobRecord> find_job(const std::string& given, NameUse use, std::string_view command);

}  // namespace cc::launch
