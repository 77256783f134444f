#include "launch/wrapper.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include <unistd.h>

#include <fmt/format.h>

#include "remote/quote.h"
#include "util/number.h"
#include "util/process.h"

namespace cc::launch {
namespace {

// Named arguments, each followed by its value, then `--` and the rank's argv: --job-dir DIR,
// --rank N, --cwd C ('' = job dir; relative = inside it; may be left out), --grace SECONDS,
// --nonce M, --heartbeat-timeout SECONDS, --waiter TEXT (kWaiterText). A missing or unknown one
// ends the wrapper with 125 and a line that names it. With perl (every
// macOS, Debian's perl-base) the rank is started by the waiter, so JOBDIR/end-R tells an exit
// with 128+N from a death by signal N (the file stays until the job directory goes). The watchdog is two processes: a reader
// that touches JOBDIR/beat-R for every heartbeat line and JOBDIR/eof-R at stdin's end, and a
// checker that looks once a second (sleep 1: dash has no `read -t`) and ends the rank group
// when eof-R exists or no beat came for $6 seconds. See wrapper.h for the protocol. `kill -SIG -PID` signals a process
// group in sh, dash, bash and zsh (dash's kill takes no "--" and reads `-s SIG -PID`'s -PID
// as an option).
// Shell functions every script that trusts JOBDIR starts with. ours DIR: DIR is a real
// directory (not a symbolic link) owned by this user: one the setup script created (mkdir in
// the sticky /tmp, so no one else can swap it) and not one another user planted under a name
// they saw in `ps` after ours was removed. ident PID: the process's start time as ps prints it
// ("Tue Dec  1 21:14:30 2026", spaces squeezed), empty when there is no such process; a pid
// file holds "PID IDENT", and a group is signalled only while its leader's ident still matches,
// never a later process that was given the same pid.
constexpr std::string_view kTrust = R"SH(ours() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]; }
ident() { ps -o lstart= -p "$1" 2>/dev/null | tr -s ' ' | sed 's/^ //; s/ $//'; }
pidfile() { printf '%s %s\n' "$2" "$(ident "$2")" >"$1.tmp" && mv -f "$1.tmp" "$1"; }
live() {
  [ -f "$1" ] && [ ! -L "$1" ] || return 1
  read -r p t <"$1" || return 1
  case $p in '' | *[!0-9]*) return 1 ;; esac
  [ "$(ident "$p")" = "$t" ]
}
)SH";

constexpr std::string_view kWrapper =
    R"SH(_ccw_d= _ccw_r= _ccw_c= _ccw_g= _ccw_m= _ccw_h= _ccw_W= seen=
while [ $# -gt 0 ]; do
  case $1 in
    --) shift; break ;;
    --job-dir | --rank | --cwd | --grace | --nonce | --heartbeat-timeout | --waiter)
      if [ $# -lt 2 ]; then
        echo "clusterctl-rank: $1 needs a value (clusterctl wrote a bad command line: report it)" >&2
        exit 125
      fi
      case $1 in
        --job-dir) _ccw_d=$2 ;;
        --rank) _ccw_r=$2 ;;
        --cwd) _ccw_c=$2 ;;
        --grace) _ccw_g=$2 ;;
        --nonce) _ccw_m=$2 ;;
        --heartbeat-timeout) _ccw_h=$2 ;;
        --waiter) _ccw_W=$2 ;;
      esac
      seen="$seen $1"
      shift 2 ;;
    *)
      echo "clusterctl-rank: unknown argument '$1' before -- (clusterctl wrote a bad command line: report it)" >&2
      exit 125 ;;
  esac
done
for o in --job-dir --rank --grace --nonce --heartbeat-timeout --waiter; do
  case "$seen " in
    *" $o "*) ;;
    *) echo "clusterctl-rank: $o is missing (clusterctl wrote a bad command line: report it)" >&2; exit 125 ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "clusterctl-rank: no command after -- (clusterctl wrote a bad command line: report it)" >&2
  exit 125
fi
_ccw_c0=$_ccw_c
_ccw_e=
_ccw_l=
while IFS= read -r _ccw_l; do
  [ "$_ccw_l" = "$_ccw_m" ] && break
  _ccw_e="$_ccw_e$_ccw_l
"
done
if [ "$_ccw_l" != "$_ccw_m" ]; then
  echo "clusterctl: rank $_ccw_r: the environment did not arrive (connection lost?)" >&2
  exit 125
fi
# The job's variables (export NAME='value' lines) are set only in the subshell that becomes
# the rank (below): a job's PATH never changes which tools the wrapper runs (`env: {PATH:
# /opt/venv/bin}` left it without mkfifo and uname), and its kToolEnv ones (LD_PRELOAD,
# PERL5OPT, ...) come as _ccw_k_NAME, which only the waiter (or, without perl, the sh that
# execs the rank: $_ccw_R) turns back into NAME, in the rank's own process.
unset _ccw_l
if ! ours "$_ccw_d"; then
  echo "clusterctl: rank $_ccw_r: $_ccw_d on $(uname -n) is not this job's directory (missing, a link, or another user's): not started" >&2
  exit 126
fi
cd "$_ccw_d" || exit 126
if [ -n "$_ccw_c" ]; then
  case $_ccw_c in /*) ;; *) _ccw_c=$_ccw_d/$_ccw_c ;; esac
  if ! cd "$_ccw_c"; then
    case $_ccw_c0 in /*) _ccw_l= ;; *) _ccw_l=" (cwd: $_ccw_c0 is relative to the job's directory on the host, where uploads land)" ;; esac
    echo "clusterctl: rank $_ccw_r: cannot enter the working directory $_ccw_c on $(uname -n)$_ccw_l" >&2
    exit 126
  fi
fi
if [ -e "$_ccw_d/ending" ]; then
  echo "clusterctl: rank $_ccw_r: not started, the job is ending" >&2
  exit 143
fi
exec 3<&0
_ccw_o=$_ccw_d/out-$_ccw_r
_ccw_x=$_ccw_d/err-$_ccw_r
if ! mkfifo -m 600 "$_ccw_o" "$_ccw_x"; then
  echo "clusterctl: rank $_ccw_r: cannot create its output pipes in $_ccw_d on $(uname -n)" >&2
  exit 126
fi
cat <"$_ccw_o" 3<&- &
_ccw_co=$!
cat <"$_ccw_x" >&2 3<&- &
_ccw_ce=$!
# Found with the wrapper's PATH; the rank's command is then found with the job's.
_ccw_pl=$(command -v perl)
_ccw_ss=$(command -v setsid)
_ccw_sh=$(command -v sh)
if [ -n "$_ccw_pl" ]; then
  (eval "$_ccw_e"; exec "$_ccw_pl" -e "$_ccw_W" -- 1 "$_ccw_d/end-$_ccw_r" "$_ccw_m" "$@") </dev/null >"$_ccw_o" 2>"$_ccw_x" 3<&- &
else
  (eval "$_ccw_e"; exec "$_ccw_ss" "$_ccw_sh" -c "$_ccw_R"'
printf "%s %s\n" "$0" "$$" >&2; exec "$@"' "$_ccw_m" "$@") </dev/null >"$_ccw_o" 2>"$_ccw_x" 3<&- &
fi
p=$!
unset _ccw_e
# The rank runs only while its pid file says so: `jobs --gc` and a later launch's cleanup find
# a rank whose wrapper is gone by it alone. One that cannot be written (a full disk) ends the
# rank at once, before it has run on unrecorded; a child forked before the group kill is
# caught by the second one, after the wait.
if ! pidfile "$_ccw_d/rank-$_ccw_r.pid" "$p" 2>/dev/null; then
  kill -KILL -"$p" 2>/dev/null
  kill -KILL "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  kill -KILL -"$p" 2>/dev/null
  kill "$_ccw_co" "$_ccw_ce" 2>/dev/null
  rm -f "$_ccw_o" "$_ccw_x"
  echo "clusterctl: rank $_ccw_r: not run: its pid could not be recorded in $_ccw_d/rank-$_ccw_r.pid on $(uname -n) (a full disk?), and a rank nothing records could outlive the job: free space there, then launch again" >&2
  exit 126
fi
{
  while IFS= read -r l; do : >"$_ccw_d/beat-$_ccw_r"; done
  : >"$_ccw_d/eof-$_ccw_r"
} <&3 >/dev/null 2>&1 &
rd=$!
(
  n=0
  while [ ! -e "$_ccw_d/eof-$_ccw_r" ] && [ "$n" -lt "$_ccw_h" ]; do
    sleep 1
    if [ -e "$_ccw_d/beat-$_ccw_r" ]; then
      rm -f "$_ccw_d/beat-$_ccw_r"
      n=0
    else
      n=$((n + 1))
    fi
  done
  : >"$_ccw_d/lost-$_ccw_r"
  kill "$rd"
  kill -TERM -"$p"
  i=0
  while kill -0 -"$p" && [ "$i" -lt $((_ccw_g * 10)) ]; do
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL -"$p"
  rm -rf "$_ccw_d"
) </dev/null >/dev/null 2>&1 &
w=$!
exec 3<&-
# From here on the wrapper has nothing to say on stderr, where a shell reports a background
# job's death by a signal at a later `wait` (dash's "Killed" after the SIGKILL of the grace
# period, bash's "Killed: 9"): under the rank's prefix, as if the rank had printed it.
# clusterctl says it in its own line (watcher.cc); the relays keep the real stderr.
exec 2>/dev/null
wait "$p"
s=$?
kill -KILL -"$p" 2>/dev/null
# The relays end at their pipes' end, once every writer is gone; a daemon of the rank's (a
# new session, holding its stdout or stderr) would keep them, and the job, open: they get 2 s
# to pass on what is left, then the rank's end is the job's.
# The timer polls for the relays' end rather than being signalled, so nothing of the job
# outlives the wrapper; SIGPIPE ends the relays because no shell reports a job killed by it
# (dash prints "Terminated" on the rank's stderr for SIGTERM).
(
  i=0
  while [ ! -e "$_ccw_o.done" ] && [ "$i" -lt 20 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  [ -e "$_ccw_o.done" ] || kill -PIPE "$_ccw_co" "$_ccw_ce"
) </dev/null >/dev/null 2>&1 &
k=$!
wait "$_ccw_co" "$_ccw_ce"
: >"$_ccw_o.done"
wait "$k"
if [ -e "$_ccw_d/lost-$_ccw_r" ]; then
  wait "$w"
else
  kill "$w" "$rd" 2>/dev/null
  rm -f "$_ccw_d/rank-$_ccw_r.pid" "$_ccw_d/beat-$_ccw_r" "$_ccw_d/eof-$_ccw_r" "$_ccw_o" "$_ccw_x" "$_ccw_o.done"
fi
exit "$s"
)SH";

// perl: $ARGV[0] 1 = start a new session first; $ARGV[1] the file to write "exit N" or
// "signal N" to; $ARGV[2] the start marker's nonce ("" = none), then the argv. It ignores the
// usual termination signals itself (its child gets them with the default disposition), so it
// outlives the rank to record how it ended, and exits with the shell's status for it. A command
// it cannot run: "clusterctl: cannot run ARGV0: WHY" (exec_failure reads it), exit 127 when
// there is no such file (as a shell's "command not found"), 126 when it is not executable. WHY
// says where it looked: in PATH for a name without '/' ("(looked for in PATH=...)"), from the
// working directory for a relative path that is not there ("(relative to the working directory
// /tmp/clusterctl-job-...)": PATH is never searched for it). A file that is there but whose
// interpreter is not (exec's ENOENT for a file that exists; a `#!/usr/bin/env NAME` whose NAME
// is in no PATH directory, looked for before the exec, as env would): "cannot run ARGV0:
// interpreter not found: INTERP, named by the #! line of FILE[ (#!/usr/bin/env, looked for in
// PATH=...)][; that line ends in a carriage return (\r): FILE has Windows (CRLF) line
// endings]", a carriage return in INTERP shown as "\r"; an ELF binary's missing loader is said
// so. Exit 127.
constexpr std::string_view kWaiterText = R"PL(use POSIX ();
my ($new, $f, $m) = splice(@ARGV, 0, 3);
if ($new) { POSIX::setsid() > 0 or die "clusterctl: setsid: $!\n"; }
my @sigs = qw(TERM INT HUP QUIT PIPE ALRM USR1 USR2);
$SIG{$_} = "IGNORE" for @sigs;
my $c = fork();
die "clusterctl: fork: $!\n" unless defined $c;
if ($c == 0) {
  $SIG{$_} = "DEFAULT" for @sigs;
  for my $k (grep { /^_ccw_k_/ } keys %ENV) { my $v = delete $ENV{$k}; $ENV{substr($k, 7)} = $v; }
  print STDERR "$m $$\n" if length $m;
  my $file = $ARGV[0] =~ m{/} ? $ARGV[0]
    : (grep { -f $_ && -x _ } map { (length $_ ? $_ : ".") . "/$ARGV[0]" }
       split(/:/, $ENV{PATH} // "", -1))[0];
  my ($bang, $rest, $elf);  # its #! line's interpreter and the rest; an ELF binary
  if (defined $file && -f $file && open(my $h, "<", $file)) {
    my $l = <$h> // "";
    ($bang, $rest) = ($1, $2 // "") if $l =~ m{^#![ \t]*([^ \t\n]+)[ \t]*([^\n]*)};
    $elf = $l =~ /^\x7fELF/;
    close $h;
  }
  my $shown = sub { my $t = shift; $t =~ s/\r/\\r/g; $t };
  my $crlf = sub { $_[0] =~ /\r/ ? "; that line ends in a carriage return (\\r): $file has"
    . " Windows (CRLF) line endings" : "" };
  if (defined $bang && $bang =~ m{(?:^|/)env$}) {
    my @w = split(/[ \t]+/, $rest);
    shift @w if @w && $w[0] eq "-S";
    shift @w while @w && $w[0] =~ /^[A-Za-z_][A-Za-z0-9_]*=/;
    my $p = $w[0] // "";
    my $found = $p =~ m{/} ? -f $p && -x _ : grep { -f "$_/$p" && -x _ }
      map { length $_ ? $_ : "." } split(/:/, $ENV{PATH} // "", -1);
    if (length $p && $p !~ /^-/ && defined $ENV{PATH} && !$found) {
      print STDERR "clusterctl: cannot run $ARGV[0]: interpreter not found: ", $shown->($p),
        ", named by the #! line of $file (#!$bang, looked for in PATH=$ENV{PATH})",
        $crlf->($p), "\n";
      POSIX::_exit(127);
    }
  }
  exec { $ARGV[0] } @ARGV;
  my $e = $! + 0;
  my $why = "$!";
  my $gone = $e == POSIX::ENOENT() || $e == POSIX::ENOTDIR();
  if ($e == POSIX::ENOENT() && (defined $bang || $elf)) {
    print STDERR "clusterctl: cannot run $ARGV[0]: interpreter not found: ", (defined $bang
      ? $shown->($bang) . ", named by the #! line of $file" . $crlf->($bang)
      : "the dynamic loader $file names (an ELF binary built for another system or C library?)"),
      "\n";
    POSIX::_exit(127);
  }
  my $path = $ARGV[0] !~ m{/} ? " (looked for in PATH=" . ($ENV{PATH} // "") . ")"
    : ($gone && $ARGV[0] !~ m{^/}) ? " (relative to the working directory "
      . (eval { require Cwd; Cwd::getcwd() } // $ENV{PWD} // "?") . ")" : "";
  my $venv = ($ARGV[0] =~ m{^(/.+)/bin/python[0-9.]*$} && !-e "$1/pyvenv.cfg") ? $1 : "";
  $path .= ": this host has no Python venv at $venv; make it as README.md, \"Python\", says:"
    . " in a checkout of clusterctl on the host, `python3 -m venv $venv && $venv/bin/pip"
    . " install ./python` (on every host at once: `clusterctl exec --hosts all --shell --"
    . " '...'`; a lab's hosts share this machine's file system: run it once, here)" if length $venv;
  print STDERR "clusterctl: cannot run $ARGV[0]: $why$path\n";
  POSIX::_exit($gone ? 127 : 126);
}
waitpid($c, 0);
my $s = $?;
my $how = ($s & 127) ? "signal " . ($s & 127) : "exit " . ($s >> 8);
my $at = eval { require Time::HiRes; sprintf(" %.6f", Time::HiRes::time()) } // "";
if (open(my $o, ">", $f)) { print $o "$how$at\n"; close $o; }
POSIX::_exit(($s & 127) ? 128 + ($s & 127) : $s >> 8);)PL";

// $1 the job directory (a name no one can predict), $2 the launcher record. mkdir, not
// mkdir -p: the directory must be new, never one that already exists (another user's, or a
// link), and umask 077 makes it 0700 from the start.
constexpr std::string_view kSetup = R"SH(umask 077
if ! e=$(mkdir "$1" 2>&1); then
  if [ -e "$1" ] || [ -L "$1" ]; then
    echo "the job directory $1 already exists on $(uname -n): refusing to use a directory this launch did not create" >&2
  else
    echo "cannot create the job directory $1 on $(uname -n): $e" >&2
  fi
  exit 1
fi
printf '%s\n' "$2" >"$1/launcher")SH";

// The rank's working directory, checked on each host once its uploads are there (a relative
// cwd is inside the job directory $1, where they land), so that a missing one starts no rank.
constexpr std::string_view kCwdCheck = R"SH(ours "$1" || exit 0
case $2 in /*) a=$2 ;; *) a=$1/$2 ;; esac
if [ ! -d "$a" ]; then
  if [ -e "$a" ]; then w="is not a directory"; else w="does not exist"; fi
elif ! (cd "$a") 2>/dev/null; then
  w="cannot be entered (permissions)"
else
  exit 0
fi
case $2 in /*) r= ;; *) r=" (cwd: $2 is relative to the job's directory on the host, $1, where uploads land: give an absolute path, or upload into it)" ;; esac
echo "the working directory $a $w on $(uname -n)$r" >&2
exit 1)SH";

constexpr std::string_view kWriteFile = R"SH(umask 077
cat >"$1")SH";

// JOBDIR/ending first, so a rank not yet started never starts; TERM reaches each process group
// once (JOBDIR/sent-PID), so the launcher repeats it for ranks whose group appeared since.
// SIGCONT follows SIGTERM, as a shell does for its stopped jobs: a stopped rank gets its SIGTERM
// (and its grace) only once it runs again.
constexpr std::string_view kSignal = R"SH(ours "$1" || exit 0
: >"$1/ending"
for f in "$1"/rank-*.pid; do
  live "$f" || continue
  if [ "$2" = TERM ]; then
    [ -e "$1/sent-$p" ] && continue
    kill -TERM -"$p" 2>/dev/null && : >"$1/sent-$p"
    kill -CONT -"$p" 2>/dev/null
  else
    kill -"$2" -"$p" 2>/dev/null
  fi
done
exit 0)SH";

constexpr std::string_view kCleanup = R"SH(ours "$1" || exit 0
for f in "$1"/rank-*.pid; do
  live "$f" && kill -KILL -"$p" 2>/dev/null
done
rm -rf "$1")SH";

// The janitor's list: every job directory of this user on the host with its launcher record,
// one "DIR RECORD" line each (the launching side decides which launchers are gone).
constexpr std::string_view kLeftovers = R"SH(for d in /tmp/clusterctl-job-*; do
  ours "$d" || continue
  [ -f "$d/launcher" ] && [ ! -L "$d/launcher" ] || continue
  IFS= read -r l <"$d/launcher" || continue
  printf '%s %s\n' "$d" "$l"
done
exit 0)SH";

// The janitor's removal of one job directory: claimed first by a rename (of several janitors
// sharing a /tmp, as a lab's hosts do, one wins), its live groups killed, then removed; prints
// "removed" when this call removed it.
constexpr std::string_view kSweep = R"SH(ours "$1" || exit 0
g=$(dirname "$1")/.clusterctl-gone-$(basename "$1")
mv "$1" "$g" 2>/dev/null || exit 0
for f in "$g"/rank-*.pid; do
  live "$f" && kill -KILL -"$p" 2>/dev/null
done
rm -rf "$g"
echo removed)SH";

constexpr std::string_view kEndRecord = R"SH(cat "$1/end-$2" 2>/dev/null; exit 0)SH";

// $1 the coordinator's address (numeric, or a name resolved here as libclustercomm's rank 0
// resolves it: its IPv4 address when it has one, else its first, IPv6 too), $2 a TCP port:
// prints "in use" when binding that address and port as rank 0's listener would (SO_REUSEADDR)
// fails with EADDRINUSE, so something listens on it or holds it. perl, else python3; with
// neither, prints "unchecked" (the caller says so once). Says nothing when the port is free or
// the host cannot tell (a name it cannot resolve, an address not of this host: rank 0's own
// error says so).
constexpr std::string_view kPortHeld = R"SH(if command -v perl >/dev/null 2>&1; then
exec perl -e '
use Socket qw(:addrinfo SOCK_STREAM SOL_SOCKET SO_REUSEADDR AF_INET AF_INET6 inet_ntop
              unpack_sockaddr_in unpack_sockaddr_in6);
my ($e, @a) = getaddrinfo($ARGV[0], $ARGV[1], {socktype => SOCK_STREAM});
exit 0 if $e || !@a;
my ($a) = ((grep { $_->{family} == AF_INET } @a), @a);
my $ip = $a->{family} == AF_INET ? inet_ntop(AF_INET, (unpack_sockaddr_in($a->{addr}))[1])
       : $a->{family} == AF_INET6 ? inet_ntop(AF_INET6, (unpack_sockaddr_in6($a->{addr}))[1]) : "";
print "loopback $ip\n" if $ip =~ /^127\./ || $ip eq "::1";
socket(my $s, $a->{family}, SOCK_STREAM, 0) or exit 0;
setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1);
exit 0 if bind($s, $a->{addr});
print "in use\n" if $!{EADDRINUSE};' -- "$1" "$2" 2>/dev/null; exit 0
fi
if command -v python3 >/dev/null 2>&1; then
exec python3 -c '
import errno, socket, sys
try:
    a = socket.getaddrinfo(sys.argv[1], int(sys.argv[2]), 0, socket.SOCK_STREAM)
except (OSError, ValueError):
    sys.exit(0)
a = ([x for x in a if x[0] == socket.AF_INET] or a)[0]
if a[4][0].startswith("127.") or a[4][0] == "::1":
    print("loopback " + a[4][0])
s = socket.socket(a[0], socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(a[4])
except OSError as e:
    if e.errno == errno.EADDRINUSE:
        print("in use")' "$1" "$2" 2>/dev/null; exit 0
fi
echo unchecked)SH";

std::string_view trust_text() {
  static const std::string text = std::string(tool_env_guard()) + std::string(kTrust);
  return text;
}

std::vector<std::string> script(std::string_view text, std::vector<std::string> args) {
  std::vector<std::string> argv{"sh", "-c", std::string(trust_text()) + std::string(text),
                                "clusterctl-job"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

std::vector<std::string> wrapper_argv(const WrapperArgs& a) {
  std::vector<std::string> argv{"sh",
                                "-c",
                                std::string(trust_text()) + std::string(kWrapper),
                                "clusterctl-rank",
                                "--job-dir",
                                a.job_dir,
                                "--rank",
                                std::to_string(a.rank),
                                "--cwd",
                                a.cwd,
                                "--grace",
                                std::to_string(a.grace_s),
                                "--nonce",
                                a.nonce,
                                "--heartbeat-timeout",
                                std::to_string(a.heartbeat_timeout_s),
                                "--waiter",
                                std::string(kWaiterText),
                                "--"};
  argv.insert(argv.end(), a.command.begin(), a.command.end());
  return argv;
}

std::string env_payload(const std::vector<EnvVar>& env, std::string_view nonce) {
  std::string out;
  for (const auto& [name, value] : env) {
    out += fmt::format("export {}{}={}\n", is_tool_env(name) ? kToolEnvHidden : "", name,
                       remote::shell_quote_arg(value));
  }
  out += nonce;
  out += '\n';
  return out;
}

std::vector<std::string> setup_argv(const std::string& job_dir, const std::string& launcher) {
  return script(kSetup, {job_dir, launcher});
}

std::vector<std::string> leftovers_argv() {
  return script(kLeftovers, {});
}

std::vector<std::string> sweep_argv(const std::string& job_dir) {
  return script(kSweep, {job_dir});
}

std::vector<std::string> cwd_check_argv(const std::string& job_dir, const std::string& cwd) {
  return script(kCwdCheck, {job_dir, cwd});
}

std::vector<std::string> write_file_argv(const std::string& path) {
  return script(kWriteFile, {path});
}

std::vector<std::string> signal_argv(const std::string& job_dir, std::string_view signal) {
  return script(kSignal, {job_dir, std::string(signal)});
}

std::vector<std::string> cleanup_argv(const std::string& job_dir) {
  return script(kCleanup, {job_dir});
}

std::string launcher_record(const std::string& job_id) {
  const long pid = static_cast<long>(::getpid());
  return fmt::format("{} {} {} {}", util::host_name(), pid,
                     util::process_start_time(pid).value_or("-"), job_id);
}

bool launcher_gone(std::string_view record) {
  // HOST PID START JOBID
  std::vector<std::string_view> f;
  while (!record.empty() && f.size() < 3) {
    size_t sp = record.find(' ');
    f.push_back(record.substr(0, sp));
    record = sp == std::string_view::npos ? std::string_view() : record.substr(sp + 1);
  }
  if (f.size() < 3 || f[0] != util::host_name()) return false;
  long pid = 0;
  auto [end, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), pid);
  if (ec != std::errc() || end != f[1].data() + f[1].size() || pid <= 0) return false;
  auto now = util::process_start_time(pid);
  return !now || *now != f[2];
}

std::string_view trust_functions() {
  return trust_text();
}

bool is_tool_env(std::string_view name) {
  return std::find(std::begin(kToolEnv), std::end(kToolEnv), name) != std::end(kToolEnv);
}

std::string_view tool_env_guard() {
  // For each NAME (a constant identifier, so eval sees no value): a set NAME moves to
  // _ccw_k_NAME; then one mpirun forwarded as _ccw_x_NAME (the job's) replaces it. _ccw_R
  // moves them back.
  static const std::string text = [] {
    std::string names;
    for (std::string_view n : kToolEnv) names += fmt::format("{}{}", names.empty() ? "" : " ", n);
    return fmt::format(
        R"SH(for _ccw_n in {0}; do
  eval "[ -z \"\${{$_ccw_n+x}}\" ] || {{ {1}$_ccw_n=\${{$_ccw_n}}; export {1}$_ccw_n; unset $_ccw_n; }}"
  eval "[ -z \"\${{{2}$_ccw_n+x}}\" ] || {{ {1}$_ccw_n=\${{{2}$_ccw_n}}; export {1}$_ccw_n; unset {2}$_ccw_n; }}"
done
unset _ccw_n
_ccw_R='for _ccw_n in {0}; do eval "[ -z \"\${{{1}$_ccw_n+x}}\" ] || {{ $_ccw_n=\${{{1}$_ccw_n}}; export $_ccw_n; unset {1}$_ccw_n; }}"; done; unset _ccw_n'
)SH",
        names, kToolEnvHidden, kToolEnvForwarded);
  }();
  return text;
}

std::string_view waiter_perl() {
  return kWaiterText;
}

std::vector<std::string> port_held_argv(const std::string& address, int port) {
  return script(kPortHeld, {address, std::to_string(port)});
}

std::vector<std::string> end_record_argv(const std::string& job_dir, int rank) {
  return script(kEndRecord, {job_dir, std::to_string(rank)});
}

std::string describe_step(const std::vector<std::string>& argv) {
  // script(): {"sh", "-c", TEXT, "clusterctl-job", ARGS...}; wrapper_argv: "clusterctl-rank".
  if (argv.size() < 4 || argv[0] != "sh" || argv[1] != "-c") return {};
  auto arg = [&](size_t i) { return i < argv.size() ? argv[i] : std::string(); };
  if (argv[3] == "clusterctl-rank") {
    return fmt::format("rank {}'s wrapper", arg(7));
  }
  if (argv[3] != "clusterctl-job") return "a clusterctl script";
  const std::string_view text =
      std::string_view(argv[2]).substr(argv[2].starts_with(trust_text()) ? trust_text().size() : 0);
  if (text == kSetup) return "creating the job directory " + arg(4);
  if (text == kWriteFile) return "writing " + arg(4);
  if (text == kCwdCheck) return "the check of the working directory " + arg(5);
  if (text == kSignal) return fmt::format("SIG{} to the ranks of {}", arg(5), arg(4));
  if (text == kCleanup) return "the cleanup of " + arg(4);
  if (text == kLeftovers) return "the janitor's list of job directories";
  if (text == kSweep) return "the janitor's removal of " + arg(4);
  if (text == kEndRecord) return fmt::format("reading rank {}'s end record in {}", arg(5), arg(4));
  if (text == kPortHeld) return fmt::format("the check of port {} on {}", arg(5), arg(4));
  return "a clusterctl script";
}

std::string exec_failure(std::string_view line) {
  constexpr std::string_view kPrefix = "clusterctl: cannot run ";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (!line.starts_with(kPrefix)) return "";
  std::string rest(line.substr(kPrefix.size()));  // "ARGV0: WHY[ (looked for in PATH=...)]"
  constexpr std::string_view kInterpreter = ": interpreter not found: ";
  if (const size_t at = rest.find(kInterpreter); at != std::string::npos) {
    return rest.substr(at + 2);  // "interpreter not found: INTERP, named by the #! line of F..."
  }
  constexpr std::string_view kNoFile = ": No such file or directory";
  if (const size_t at = rest.find(kNoFile); at != std::string::npos) {
    return "command not found: " + rest.erase(at, kNoFile.size());
  }
  constexpr std::string_view kDenied = ": Permission denied";
  if (rest.find(kDenied) != std::string::npos) return "not executable: " + rest;
  return "cannot run " + rest;
}

std::optional<EndRecord> read_end_record(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  EndRecord rec;
  rec.signaled = text.starts_with("signal ");
  if (!rec.signaled && !text.starts_with("exit ")) return std::nullopt;
  text.remove_prefix(rec.signaled ? 7 : 5);
  int n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || n < 0 || n > 255) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  if (text.empty()) return rec;  // a waiter without Time::HiRes: no time
  if (!text.starts_with(' ')) return std::nullopt;
  text.remove_prefix(1);
  const auto at = util::parse_double(text);
  if (!at || !std::isfinite(*at) || *at <= 0) return std::nullopt;
  rec.exited_at = *at;
  return rec;
}

std::optional<bool> parse_end_record(std::string_view text) {
  auto rec = read_end_record(text);
  if (!rec) return std::nullopt;
  return rec->signaled;
}

std::string StartMarker::feed(std::string_view bytes) {
  if (pid_ > 0) return std::string(bytes);
  held_.append(bytes);
  std::string prefix = nonce_ + " ";
  size_t at = 0;
  for (;;) {
    size_t nl = held_.find('\n', at);
    if (nl == std::string::npos) return {};
    if (held_.compare(at, prefix.size(), prefix) == 0) {
      long pid = 0;
      const char* first = held_.data() + at + prefix.size();
      auto [end, ec] = std::from_chars(first, held_.data() + nl, pid);
      if (ec == std::errc() && end == held_.data() + nl && pid > 0) {
        pid_ = pid;
        std::string out = held_.substr(0, at) + held_.substr(nl + 1);
        held_.clear();
        return out;
      }
    }
    at = nl + 1;
  }
}

std::string StartMarker::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace cc::launch
