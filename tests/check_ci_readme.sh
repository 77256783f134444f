#!/usr/bin/env bash
# The README's macOS commands and the CI workflow's macos job must be the same lines, in the
# same order: the workflow is where a Mac build is proved, and what it proves is what the README
# tells Mac users to type. Compared: the first ```sh block under "## Building on macOS" (each
# line without its trailing "  # comment") and every line of the macos job's run: steps.
# Also checks that the workflow parses as YAML. Usage: check_ci_readme.sh [ROOT]
set -euo pipefail
if [ "${1:-}" = "--self-test" ]; then
  # The check must be able to fail: one command changed in a copy of the workflow.
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  here=$(cd "$(dirname "$0")/.." && pwd)
  mkdir -p "$tmp/.github/workflows"
  cp "$here/README.md" "$tmp/"
  sed 's/-DCMAKE_BUILD_TYPE=Release/-DCMAKE_BUILD_TYPE=Debug/' "$here/.github/workflows/ci.yml" \
    >"$tmp/.github/workflows/ci.yml"
  if "$0" "$tmp" >/dev/null; then echo "self-test: a changed workflow line was not caught"; exit 1; fi
  "$0" "$here" >/dev/null || { echo "self-test: the real files do not match"; exit 1; }
  echo "self-test: ok"; exit 0
fi
root=${1:-$(dirname "$0")/..}
python3 - "$root/README.md" "$root/.github/workflows/ci.yml" <<'EOF_PY'
import re, sys
import yaml  # Debian: python3-yaml (scripts/lib.sh)

readme, workflow = sys.argv[1], sys.argv[2]
text = open(readme).read().split("\n")
try:
    start = text.index("## Building on macOS")
    begin = text.index("```sh", start) + 1
    end = text.index("```", begin)
except ValueError:
    sys.exit(f"FAIL: {readme}: no ```sh block under '## Building on macOS'")
want = [re.sub(r"\s+#\s.*$", "", l).rstrip() for l in text[begin:end]]
want = [l for l in want if l]
try:
    doc = yaml.safe_load(open(workflow))
    steps = doc["jobs"]["macos"]["steps"]
except Exception as e:  # a YAML error or a missing key: say which
    sys.exit(f"FAIL: {workflow}: not a workflow with jobs.macos.steps ({type(e).__name__}: {e})")
got = [l.rstrip() for s in steps if "run" in s for l in str(s["run"]).split("\n") if l.strip()]
if want != got:
    print(f"FAIL: {readme}'s macOS commands and {workflow}'s macos job differ; make them the same")
    print("README:   " + "\n          ".join(want))
    print("workflow: " + "\n          ".join(got))
    sys.exit(1)
print(f"ci: the macos job runs the README's {len(want)} macOS command lines")
EOF_PY
