// Forced ahead of every non-Linux translation unit by tests/check_libcxx.sh
// (clang++ -include tests/libcxx/gnu_only.h): it hides what glibc offers and macOS does not, so
// that such a call outside lab/ and *_linux.* fails to compile here, not first on a Mac.
//
// Why not -U_GNU_SOURCE -D_POSIX_C_SOURCE=200809L -D_XOPEN_SOURCE=700: both C++ libraries
// need glibc's GNU declarations in their own headers (libc++ 14: strtoll_l, vasprintf,
// pthread_cond_clockwait; libstdc++ 12: syscall, pthread_cond_clockwait), so no C++ file
// compiles that way. Instead the glibc headers are included here as usual, and then:
// - functions that macOS lacks are poisoned: any later mention is an error;
// - macros that macOS lacks are undefined: `#ifdef TCP_USER_TIMEOUT` is false, as on a Mac,
//   and an unguarded use is an undeclared identifier;
// - glibc's enumerators behind such macros (MSG_NOSIGNAL, SOCK_CLOEXEC, ...) are renamed
//   while <sys/socket.h> is read, so the names do not exist at all.
// Not checkable by the compiler (see tests/check_portability.sh instead): paths under /proc,
// <endian.h> (a header macOS lacks).
#pragma once

// Renamed while glibc declares them (enum { MSG_NOSIGNAL = 0x4000, ... } in bits/socket.h).
// MSG_NOSIGNAL stays in a build that runs (tests/check_libcxx.sh's comm/ build defines
// CLUSTERCTL_KEEP_MSG_NOSIGNAL): a Mac replaces it with SO_NOSIGPIPE, which Linux has not, so
// without it a send to a dead peer is a SIGPIPE that kills the rank (comm's kill -9 test).
#ifndef CLUSTERCTL_KEEP_MSG_NOSIGNAL
#define MSG_NOSIGNAL clusterctl_linux_only_MSG_NOSIGNAL
#endif
#define MSG_MORE clusterctl_linux_only_MSG_MORE
#define MSG_CMSG_CLOEXEC clusterctl_linux_only_MSG_CMSG_CLOEXEC
#define SOCK_CLOEXEC clusterctl_linux_only_SOCK_CLOEXEC
#define SOCK_NONBLOCK clusterctl_linux_only_SOCK_NONBLOCK
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wmacro-redefined"
#include <sys/socket.h>
#pragma clang diagnostic pop
#ifndef CLUSTERCTL_KEEP_MSG_NOSIGNAL
#undef MSG_NOSIGNAL
#endif
#undef MSG_MORE
#undef MSG_CMSG_CLOEXEC
#undef SOCK_CLOEXEC
#undef SOCK_NONBLOCK

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// Socket and file options macOS does not have (it has TCP_RXT_CONNDROPTIME, IP_BOUND_IF, ...).
#undef TCP_USER_TIMEOUT
#undef SO_BINDTODEVICE
#undef SO_PEERCRED
#undef O_PATH
#undef O_TMPFILE
// <endian.h>'s conversions (macros in glibc, pulled in by <sys/types.h>).
#undef htobe16
#undef htobe32
#undef htobe64
#undef be16toh
#undef be32toh
#undef be64toh
#undef htole16
#undef htole32
#undef htole64
#undef le16toh
#undef le32toh
#undef le64toh

// GNU and Linux functions macOS does not have.
#pragma GCC poison pipe2 accept4 dup3 prctl gettid get_nprocs sched_getaffinity \
    sched_setaffinity memrchr strchrnul rawmemchr secure_getenv getrandom mremap fallocate \
    posix_fallocate pthread_tryjoin_np pthread_timedjoin_np pthread_getattr_np \
    program_invocation_name program_invocation_short_name epoll_create epoll_create1 \
    epoll_ctl epoll_wait eventfd signalfd timerfd_create inotify_init inotify_init1 \
    htobe16 htobe32 htobe64 be16toh be32toh be64toh htole16 htole32 htole64 le16toh \
    le32toh le64toh
