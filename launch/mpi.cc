#include "launch/mpi.h"

#include <charconv>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "discovery/cluster_state.h"
#include "launch/runner.h"
#include "launch/wrapper.h"
#include "provision/hostfile.h"
#include "util/number.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

namespace cc::launch {
namespace {

// Named arguments, then "--" and the rank's argv: --job-dirs the prefix of the hosts' job
// directories (JOBDIR without the host number), --ranks-per-host N, --cwd DIR ('' = job dir;
// relative = inside it), --nonce the job's marker nonce, --waiter the perl waiter (wrapper.h:
// it tells an exit with 128+N from a death by signal N; without perl, 128+N counts as a
// signal). Open MPI makes the rank (this sh) a process group leader, so "$$" in rank-R.pid is
// its group for kill -SIG -PID. Open MPI signals only this sh's pid: SIGTERM/SIGINT/SIGHUP are
// passed on to the whole group (the command runs in the background, so the trap runs at once),
// and the sh waits on until the command has ended, to report its status in the end marker.
// Both markers end with the time by the host's clock (Time::HiRes, as the waiter's end record:
// absent without it), so a rank's duration is its own run, not when mpirun's output reached us.
constexpr std::string_view kRankScript = R"SH(p= n= c= m= W=
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  if [ "$#" -lt 2 ]; then
    echo "clusterctl: rank script: $1 without a value" >&2
    exit 126
  fi
  case $1 in
    --job-dirs) p=$2 ;;
    --ranks-per-host) n=$2 ;;
    --cwd) c=$2 ;;
    --nonce) m=$2 ;;
    --waiter) W=$2 ;;
    *)
      echo "clusterctl: rank script: unknown argument $1" >&2
      exit 126
      ;;
  esac
  shift 2
done
if [ "$1" != -- ] || [ -z "$p" ] || [ -z "$n" ] || [ -z "$m" ]; then
  echo "clusterctl: rank script: needs --job-dirs, --ranks-per-host and --nonce, then -- and the command" >&2
  exit 126
fi
shift
c0=$c
r=${OMPI_COMM_WORLD_RANK:?clusterctl: not started by mpirun}
d=$p$((r / n))
if ! ours "$d" || ! cd "$d"; then
  echo "clusterctl: rank $r: no job directory $d on $(uname -n) (or not this job's): the hostfile's order is not the job's" >&2
  exit 126
fi
if [ -n "$c" ]; then
  case $c in /*) ;; *) c=$d/$c ;; esac
  if ! cd "$c"; then
    case $c0 in /*) c0= ;; *) c0=" (cwd: $c0 is relative to the job's directory on the host, where uploads land)" ;; esac
    echo "clusterctl: rank $r: cannot enter the working directory $c on $(uname -n)$c0" >&2
    exit 126
  fi
fi
pidfile "$d/rank-$r.pid" "$$"
[ "$PPID" -gt 1 ] && pidfile "$d/daemon-$r.pid" "$PPID"
fw() {
  trap '' TERM INT HUP
  kill -"$1" -$$ 2>/dev/null
}
trap 'fw TERM' TERM
trap 'fw INT' INT
trap 'fw HUP' HUP
t=
if command -v perl >/dev/null 2>&1; then
  t=$(perl -MTime::HiRes=time -e 'printf " %.6f", time' 2>/dev/null)
fi
printf '%s start %s%s\n' "$m" "$$" "$t" >&2
how=
if command -v perl >/dev/null 2>&1; then
  perl -e "$W" -- "" "$d/end-$r" "" "$@" </dev/null &
else
  (eval "$_ccw_R"; exec "$@") </dev/null &
fi
k=$!
wait "$k"
s=$?
while kill -0 "$k" 2>/dev/null; do
  wait "$k"
  s=$?
done
how=$(cut -d ' ' -f 1-3 "$d/end-$r" 2>/dev/null)  # "exit N AT", AT by the host's clock
rm -f "$d/end-$r"
if [ -z "$how" ]; then
  if [ "$s" -gt 128 ]; then how="signal $((s - 128))"; else how="exit $s"; fi
fi
rm -f "$d/rank-$r.pid"
printf '%s end %s\n' "$m" "$how" >&2
exit "$s")SH";

// A host's watch (mpi.h, host_watch_argv), run by the rank wrapper as if it were a rank: $1
// the host's job directory, $2 the grace period in seconds, $3 the SIGTERM/SIGKILL script
// (signal_argv's text), $4 the wrapper's rank number for it (its own pid file, rank-$4.pid, is
// not a rank's). It waits; ended by its wrapper's watchdog (clusterctl cut off) or by the
// teardown's SIGTERM, it sends SIGTERM to the job's ranks on the host, and SIGKILL to those
// still there after the grace period (to its own group too, which ends it): Open MPI's ranks
// are not the wrapper's, whose watchdog ends only its own command's group. Ended by the
// watchdog (lost-$4: clusterctl cut off), Open MPI's daemon there too, before that
// (daemon-R.pid, the rank script's parent): cut off from mpirun, it would wait for it for
// good; SIGTERM first, so it removes its session directory. Never in a teardown: mpirun ends
// its daemons itself, and a daemon may be mpirun (ranks on this machine), which a SIGTERM while
// it ends the job makes crash (mpi_backend.cc).
constexpr std::string_view kHostWatch = R"SH(d=$1 g=$2 s=$3 w=$4
end() {
  trap '' TERM INT HUP
  sh -c "$s" clusterctl-job "$d" TERM
  i=0
  while [ "$i" -lt $((g * 10)) ]; do
    a=
    for f in "$d"/rank-*.pid; do
      [ "$f" = "$d/rank-$w.pid" ] || ! live "$f" || a=1
    done
    [ -n "$a" ] || break
    sleep 0.1
    i=$((i + 1))
  done
  [ -e "$d/lost-$w" ] || { sh -c "$s" clusterctl-job "$d" KILL; exit 0; }
  for f in "$d"/daemon-*.pid; do
    ! live "$f" || kill -TERM "$p" 2>/dev/null
  done
  i=0
  while [ "$i" -lt 10 ]; do
    a=
    for f in "$d"/daemon-*.pid; do
      ! live "$f" || a=1
    done
    [ -n "$a" ] || break
    sleep 0.1
    i=$((i + 1))
  done
  for f in "$d"/daemon-*.pid; do
    ! live "$f" || kill -KILL "$p" 2>/dev/null
  done
  sh -c "$s" clusterctl-job "$d" KILL
  exit 0
}
trap end TERM INT HUP
while :; do
  sleep 3600 &
  wait $!
done)SH";

bool env_sets(const WorldPlan& plan, const std::string& name) {
  return plan.env.contains(name) || plan.secrets.contains(name);
}

// "[JOB,RANK]<stdout>:" or "<stderr>:" at text[at]: its length, rank and fd; 0 when none.
size_t tag_at(std::string_view text, size_t at, int& rank, int& fd) {
  std::string_view s = text.substr(at);
  if (s.empty() || s[0] != '[') return 0;
  size_t comma = s.find(',');
  size_t close = s.find(']');
  if (comma == std::string_view::npos || close == std::string_view::npos || comma > close) {
    return 0;
  }
  auto digits = [](std::string_view d) {
    return !d.empty() && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string_view job = s.substr(1, comma - 1), r = s.substr(comma + 1, close - comma - 1);
  if (!digits(job) || !digits(r) || r.size() > 9) return 0;
  std::string_view rest = s.substr(close + 1);
  int f = 0;
  size_t len = 0;
  if (rest.starts_with("<stdout>:")) {
    f = 1;
    len = 9;
  } else if (rest.starts_with("<stderr>:")) {
    f = 2;
    len = 9;
  } else {
    return 0;
  }
  int value = 0;
  std::from_chars(r.data(), r.data() + r.size(), value);
  rank = value;
  fd = f;
  return close + 1 + len;
}

// The position of the next tag in text at or after `from`, or npos.
size_t next_tag(std::string_view text, size_t from) {
  for (size_t at = text.find('[', from); at != std::string_view::npos;
       at = text.find('[', at + 1)) {
    int r = 0, f = 0;
    if (tag_at(text, at, r, f) > 0) return at;
  }
  return std::string_view::npos;
}

}  // namespace

util::Result<std::string> mpi_hostfile(const WorldPlan& plan) {
  discovery::ClusterState state;
  for (const auto& h : plan.hosts) {
    discovery::HostFacts f;
    f.host = h.ssh.empty() ? h.name : h.ssh;
    state.hosts.push_back(std::move(f));
  }
  provision::HostfileOptions o;
  o.format = provision::HostfileFormat::kMpi;
  o.slots = plan.ranks_per_host;
  return provision::render_hostfile(state, o);
}

std::vector<EnvVar> mpirun_env(const WorldPlan& plan) {
  std::vector<EnvVar> env = rank_env_defaults(plan);
  env.insert(env.end(), plan.env.begin(), plan.env.end());
  env.insert(env.end(), plan.secrets.begin(), plan.secrets.end());
  // mpirun and Open MPI's daemons are the job's tools, not its ranks: a kToolEnv variable
  // (LD_PRELOAD, PERL5OPT, ...) reaches them under another name, and the rank script's waiter
  // gives it back to the rank (wrapper.h).
  for (EnvVar& v : env) {
    if (is_tool_env(v.first)) v.first = std::string(kToolEnvForwarded) + v.first;
  }
  return env;
}

std::vector<std::string> mpirun_argv(const WorldPlan& plan, const MpiLaunch& m) {
  std::vector<std::string> a{"mpirun",
                             "--hostfile",
                             m.local_dir + "/" + kMpiHostfile,
                             "-np",
                             std::to_string(plan.world_size()),
                             "--map-by",
                             "slot",
                             "--bind-to",
                             "none",
                             "--tag-output"};
  if (m.run_as_root) a.emplace_back("--allow-run-as-root");
  a.insert(a.end(), {"--mca", "plm_rsh_agent", m.rsh_agent.empty() ? "ssh" : m.rsh_agent});
  // Every daemon started from here: hosts then need no ssh keys to each other.
  a.insert(a.end(), {"--mca", "plm_rsh_no_tree_spawn", "1"});
  // Each host reached by the name the hostfile gives it, not the part before its first '.'
  // (provision/hostfile.h, kOpenMpiKeepFqdn): `studio1.local` stays `studio1.local`.
  a.insert(a.end(), {"--mca", provision::kOpenMpiKeepFqdn, "1"});
  if (!m.tcp_include.empty()) {
    for (const char* p : {"oob_tcp_if_include", "btl_tcp_if_include"}) {
      if (!env_sets(plan, std::string("OMPI_MCA_") + p)) {
        a.insert(a.end(), {"--mca", p, m.tcp_include});
      }
    }
  }
  for (const auto& [name, value] : mpirun_env(plan)) a.insert(a.end(), {"-x", name});
  std::string prefix = job_dir(m.job_id, 0);
  prefix.pop_back();  // the host number
  a.insert(a.end(), {"sh", "-c", std::string(trust_functions()) + std::string(kRankScript),
                     "clusterctl-mpi-rank", "--job-dirs", prefix, "--ranks-per-host",
                     std::to_string(plan.ranks_per_host), "--cwd", m.cwd, "--nonce", m.nonce,
                     "--waiter", std::string(waiter_perl()), "--"});
  a.insert(a.end(), m.command.begin(), m.command.end());
  return a;
}

std::vector<std::string> host_watch_argv(const std::string& job_dir, int grace_s, int watch_rank) {
  return {"sh",
          "-c",
          std::string(trust_functions()) + std::string(kHostWatch),
          "clusterctl-host-watch",
          job_dir,
          std::to_string(grace_s),
          signal_argv(job_dir, "TERM").at(2),
          std::to_string(watch_rank)};
}

std::string mpi_rsh_agent(const std::string& ssh_config, const std::string& known_hosts) {
  std::string agent = "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes";
  if (!ssh_config.empty()) agent += " -F " + ssh_config;
  if (!known_hosts.empty()) agent += " -o UserKnownHostsFile=" + known_hosts;
  return agent;
}

std::string local_network_of(const std::string& address) {
  in_addr target{};
  if (::inet_pton(AF_INET, address.c_str(), &target) != 1) return "";
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* i = list; i != nullptr && out.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr || i->ifa_addr->sa_family != AF_INET) {
      continue;
    }
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    const auto* mask = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask);
    const std::uint32_t m = ntohl(mask->sin_addr.s_addr);
    const std::uint32_t net = ntohl(a->sin_addr.s_addr) & m;
    if (m == 0 || (ntohl(target.s_addr) & m) != net) continue;
    int bits = 0;
    for (std::uint32_t v = m; v != 0; v <<= 1) ++bits;
    out = fmt::format("{}.{}.{}.{}/{}", net >> 24, (net >> 16) & 0xff, (net >> 8) & 0xff,
                      net & 0xff, bits);
  }
  ::freeifaddrs(list);
  return out;
}

bool mpirun_warning(std::string_view line) {
  // Open MPI's "[HOST:PID] " before a component's message
  if (line.starts_with('[')) {
    const size_t close = line.find("] ");
    if (close != std::string_view::npos &&
        line.substr(0, close).find(':') != std::string_view::npos) {
      line.remove_prefix(close + 2);
    }
  }
  return line.starts_with("WARNING") || line.starts_with("Warning") ||
         line.find(": Warning: ") != std::string_view::npos ||
         line.find(": WARNING: ") != std::string_view::npos;
}

MpiDemux::Pending* MpiDemux::partial(int rank, int fd) {
  for (auto& p : partial_) {
    if (p.rank == rank && p.fd == fd) return &p;
  }
  partial_.push_back({rank, fd, {}});
  return &partial_.back();
}

void MpiDemux::emit(int rank, int fd, std::string line, std::vector<MpiEvent>& out) const {
  if (rank < 0) {
    out.push_back({MpiEvent::Kind::kMpirun, -1, fd, 0, std::move(line), false, {}});
    return;
  }
  if (fd == 2) {
    const std::string mark = nonce_ + " ";
    size_t at = line.rfind(mark);
    if (at != std::string::npos) {
      std::string_view rest = std::string_view(line).substr(at + mark.size());
      MpiEvent::Kind kind = MpiEvent::Kind::kLine;
      bool signaled = false;
      if (rest.starts_with("start ")) {
        kind = MpiEvent::Kind::kStarted;
        rest.remove_prefix(6);
      } else if (rest.starts_with("end exit ")) {
        kind = MpiEvent::Kind::kEnded;
        rest.remove_prefix(9);
      } else if (rest.starts_with("end signal ")) {
        kind = MpiEvent::Kind::kEnded;
        signaled = true;
        rest.remove_prefix(11);
      }
      long value = 0;
      auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
      std::optional<double> time;  // " AT" after the number: the host's clock
      const std::string_view after(end, static_cast<size_t>(rest.data() + rest.size() - end));
      bool whole = after.empty();
      if (after.starts_with(' ')) {
        time = util::parse_double(after.substr(1));
        whole = time && *time > 0;
      }
      if (kind != MpiEvent::Kind::kLine && ec == std::errc() && whole) {
        if (at > 0) {
          out.push_back({MpiEvent::Kind::kLine, rank, fd, 0, line.substr(0, at), false, {}});
        }
        if (signaled) value += 128;
        out.push_back({kind, rank, fd, value, {}, signaled, time});
        return;
      }
    }
  }
  out.push_back({MpiEvent::Kind::kLine, rank, fd, 0, std::move(line), false, {}});
}

void MpiDemux::take(int fd, bool at_end, std::vector<MpiEvent>& out) {
  std::string& buf = buf_[fd == 2 ? 1 : 0];
  size_t done = 0;
  for (;;) {
    size_t nl = buf.find('\n', done);
    if (nl == std::string::npos && !(at_end && done < buf.size())) break;
    const bool complete = nl != std::string::npos;
    std::string_view seg = std::string_view(buf).substr(done, (complete ? nl : buf.size()) - done);
    done = complete ? nl + 1 : buf.size();
    // Pieces: [untagged head] then (tag, text up to the next tag) ...
    size_t at = 0;
    size_t first = next_tag(seg, 0);
    if (first != 0) {  // mpirun's own text, ended by a newline or by a rank's tag
      Pending* p = partial(-1, fd);
      p->text += seg.substr(0, first == std::string_view::npos ? seg.size() : first);
      if (complete || first != std::string_view::npos) {
        std::string line = std::move(p->text);
        p->text.clear();
        emit(-1, fd, std::move(line), out);
      }
      if (first == std::string_view::npos) continue;
      at = first;
    }
    while (at < seg.size()) {
      int rank = -1, tfd = 1;
      size_t len = tag_at(seg, at, rank, tfd);
      size_t next = next_tag(seg, at + len);
      const bool last = next == std::string_view::npos;
      Pending* p = partial(rank, tfd);
      p->text += seg.substr(at + len, (last ? seg.size() : next) - at - len);
      if (last && complete) {
        std::string line = std::move(p->text);
        p->text.clear();
        emit(rank, tfd, std::move(line), out);
      }
      if (last) break;
      at = next;
    }
  }
  buf.erase(0, done);
}

std::vector<MpiEvent> MpiDemux::feed(int fd, std::string_view bytes) {
  std::vector<MpiEvent> out;
  buf_[fd == 2 ? 1 : 0].append(bytes);
  take(fd, false, out);
  return out;
}

std::vector<MpiEvent> MpiDemux::flush() {
  std::vector<MpiEvent> out;
  take(1, true, out);
  take(2, true, out);
  for (auto& p : partial_) {
    if (!p.text.empty()) emit(p.rank, p.fd, std::move(p.text), out);
    p.text.clear();
  }
  return out;
}

}  // namespace cc::launch
