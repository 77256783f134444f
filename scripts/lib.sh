# Shared by scripts/demo and scripts/test: package installation and privilege handling.
# shellcheck shell=bash

# Debian packages the project needs to build, test and run its lab.
CLUSTERCTL_PACKAGES=(
  build-essential cmake ninja-build pkg-config clang
  libclang-rt-dev  # clang's sanitizer and libFuzzer runtimes (only recommended by clang)
  libc++-dev libc++abi-dev  # LLVM's C++ library, every Mac's: tests/check_libcxx.sh
  libcli11-dev libssh-dev libyaml-cpp-dev nlohmann-json3-dev libibverbs-dev libfmt-dev doctest-dev
  libxxhash-dev  # push: chunk and file checksums (used header-only)
  xxhash  # xxhsum: the push test compares each host's copy
  openssh-server openssh-client iproute2 iputils-ping procps util-linux python3
  python3-yaml  # tests/check_ci_readme.sh reads the CI workflow
  libxml2-utils  # xmllint: the health tests validate the JUnit reports
  # The Soft-RoCE guest (tests/rdma-vm): QEMU, what its image is built with, and the RDMA
  # userland that runs in it from the host's root (providers, tools, perftest as a peer).
  qemu-system-x86 busybox-static cpio kmod xz-utils
  ibverbs-providers ibverbs-utils rdmacm-utils perftest
  openmpi-bin libopenmpi-dev  # runtime: mpi (launch runs mpirun) and its lab test
  python3-venv python3-dev  # the Python package (python/): its venv, and Python.h for the build
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Installs whichever of CLUSTERCTL_PACKAGES (plus any extra arguments) are missing.
ensure_packages() {
  local missing=() p
  for p in "${CLUSTERCTL_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "==> installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"
  fi
}

# The lab creates network namespaces and runs sshd: it needs root.
require_root_for_lab() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: the lab creates network namespaces and needs root; re-run with sudo" >&2
    exit 2
  fi
}
