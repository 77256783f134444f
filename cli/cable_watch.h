// The cables a job's ranks use, looked at before the job starts (launch's check_routed_cables)
// and while it runs (CableWatch, launch/watcher.h WatchOptions::cables_down): each host at a
// cable's end probed once per look, all at once (discovery's host probe: one round trip, as
// `health --quick`), and each cable judged in health's own words (topology::cable_link and
// cable_down_line). A host that does not answer leaves its ends unjudged: a host cut off is
// the rank connections' heartbeat's to find (launch/runner.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/context.h"
#include "discovery/cluster_state.h"
#include "remote/executor.h"
#include "util/term.h"

namespace cc::cli {

/// One line per cable of `cables` that is down (topology::cable_down_line), in their order.
/// `hosts[i]` is the state's name of the host `execs[i]` reaches (a null entry: not reached).
/// Each probe is bounded by `timeout`.
std::vector<std::string> down_cable_lines(const std::vector<remote::Executor*>& execs,
                                          const std::vector<std::string>& hosts,
                                          const std::vector<discovery::Cable>& cables,
                                          const GlobalOptions& g,
                                          std::chrono::milliseconds timeout,
                                          const util::OutputStyle& style);

/// While it lives, a thread looks at `cables` every kCableLookInterval through connections of
/// its own to their hosts (`names[i]` reaches state host `hosts[i]`); down() gives the last
/// look's lines at once. Ends its thread on destruction (within one probe's timeout).
class CableWatch {
 public:
  CableWatch(GlobalOptions g, std::vector<std::string> hosts, std::vector<std::string> names,
             std::vector<discovery::Cable> cables);
  ~CableWatch();
  CableWatch(const CableWatch&) = delete;
  CableWatch& operator=(const CableWatch&) = delete;

  std::vector<std::string> down() const;

 private:
  void loop();
  GlobalOptions g_;
  std::vector<std::string> hosts_, names_;
  std::vector<discovery::Cable> cables_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::string> down_;
  std::thread thread_;
};

/// How often CableWatch looks; a probe is one SSH round trip per host.
inline constexpr std::chrono::seconds kCableLookInterval{2};
/// A probe that takes longer is given up (its host's ends unjudged for that look).
inline constexpr std::chrono::seconds kCableProbeTimeout{5};

/// Of `cables` (launch::routed_cables, launch::hostfile_cables), those a job on `job_hosts`
/// (state host names; `names[i]` reaches `job_hosts[i]`) uses (both ends among its hosts), and
/// the hosts at their ends, in job order, with the names that reach them.
struct JobCables {
  std::vector<discovery::Cable> cables;
  std::vector<std::string> hosts;
  std::vector<std::string> names;
};
JobCables job_cables(std::vector<discovery::Cable> cables,
                     const std::vector<std::string>& job_hosts,
                     const std::vector<std::string>& names);

/// A CableWatch on the job's cables `j`; nullptr when there are none.
std::unique_ptr<CableWatch> watch_cables(const GlobalOptions& g, JobCables j);

}  // namespace cc::cli
