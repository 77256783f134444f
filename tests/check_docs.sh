#!/usr/bin/env bash
# The repository's facts live in the repository: docs/platform.md states each platform fact the
# code relies on, and comments cite it as docs/platform.md#anchor. Fails (exit 1), naming each
# file:line, when
#   - a citation docs/platform.md#ANCHOR (or a link (#ANCHOR) inside docs/platform.md) names an
#     anchor that no heading of docs/platform.md produces (GitHub's rule: lowercase, drop every
#     character but letters, digits, spaces, '-' and '_', spaces become '-');
#   - a file outside docs/ cites the team's old notes kept outside the repository (the "facts"
#     and "rdma-lab" Markdown files);
#   - any file points outside the repository (the shared folder beside the checkout, or an
#     absolute path into the team's workspace);
#   - an in-page link (#ANCHOR) of another Markdown page (README.md, ARCHITECTURE.md, ...) names
#     no heading of that page (headings inside fenced code blocks do not count).
# Files: `git ls-files` (tracked and new, not ignored) when SOURCE_DIR is a git checkout, else every file under it (build trees
# excluded). Usage: check_docs.sh SOURCE_DIR | --self-test
set -euo pipefail

if [ "${1:-}" = "--self-test" ]; then
  # The check must be able to fail: plant each kind of offence in a scratch tree.
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/docs" "$tmp/src"
  printf '# Title\n\n## Soft-RoCE\n\n## GID table, and addressing\n\nSee [x](#soft-roce).\n' \
    >"$tmp/docs/platform.md"
  printf '// (docs/platform.md#soft-roce, docs/platform.md#gid-table-and-addressing)\n' \
    >"$tmp/src/ok.h"
  "$0" "$tmp" >/dev/null || { echo "self-test: a valid tree was flagged"; exit 1; }
  fail() { echo "self-test: the check missed $1"; exit 1; }
  printf '// docs/platform.md#no-such-anchor\n' >"$tmp/src/bad.h"
  if "$0" "$tmp" >/dev/null; then fail "a missing anchor"; fi
  printf 'see [y](#nope)\n' >>"$tmp/docs/platform.md"; rm "$tmp/src/bad.h"
  if "$0" "$tmp" >/dev/null; then fail "a missing anchor inside docs/platform.md"; fi
  sed -i '$d' "$tmp/docs/platform.md"
  printf '// see %s\n' "facts"".md" >"$tmp/src/bad.h"
  if "$0" "$tmp" >/dev/null; then fail "a citation of the outside notes"; fi
  printf '# see %s\n' "..""/shared/docs/x" >"$tmp/src/bad.h"
  if "$0" "$tmp" >/dev/null; then fail "a path outside the repository"; fi
  printf '# see %s\n' "/work""/main/x" >"$tmp/src/bad.h"
  if "$0" "$tmp" >/dev/null; then fail "an absolute workspace path"; fi
  rm "$tmp/src/bad.h"
  printf '# T\n\n## Where to go\n\n```sh\n# not a heading\n```\nSee [a](#where-to-go).\n' >"$tmp/README.md"
  "$0" "$tmp" >/dev/null || { echo "self-test: a valid README link was flagged"; exit 1; }
  printf 'See [b](#not-a-heading).\n' >>"$tmp/README.md"
  if "$0" "$tmp" >/dev/null; then fail "a README link to a comment in a code block"; fi
  sed -i '$d' "$tmp/README.md"
  "$0" "$tmp" >/dev/null || { echo "self-test: the valid tree was flagged at the end"; exit 1; }
  echo "self-test: ok"; exit 0
fi

root=${1:?usage: check_docs.sh SOURCE_DIR | --self-test}
cd "$root"
doc=docs/platform.md
[ -f "$doc" ] || { echo "FAIL: $doc is missing"; exit 1; }

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list_files() { git ls-files -z --cached --others --exclude-standard; }
else
  list_files() {
    find . -path ./build -prune -o -path './build-*' -prune -o -name .git -prune -o -type f -print0 |
      sed -z 's|^\./||'
  }
fi
# grep over the listed files (text only); prints file:line:text, never fails on no match.
search() { list_files | xargs -0 -r grep -I -n -E "$@" -- 2>/dev/null || true; }

status=0
report() {  # report TITLE LINES
  if [ -n "$2" ]; then echo "FAIL: $1"; echo "$2"; status=1; fi
}

# Anchors of every heading, GitHub style.
anchors=$(sed -n 's/^#\{1,6\}[[:space:]]\{1,\}//p' "$doc" | tr '[:upper:]' '[:lower:]' |
  sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g')
bad=""
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  anchor=${hit##*#}
  grep -qxF -- "$anchor" <<<"$anchors" || bad+="${hit%%:platform.md#*}: #$anchor"$'\n'
done < <(search -o 'platform\.md#[A-Za-z0-9_-]+' | grep -v '^tests/check_docs[.]sh:')
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  anchor=${hit##*(#}; anchor=${anchor%)}
  grep -qxF -- "$anchor" <<<"$anchors" || bad+="$doc:${hit%%:*}: #$anchor"$'\n'
done < <(grep -n -o -E '\]\(#[A-Za-z0-9_-]+\)' "$doc" || true)
report "citations of $doc name anchors that no heading of it produces:" "${bad%$'\n'}"

# In-page links of the other Markdown pages (README.md's "Where to start" table among them):
# each (#anchor) must be a heading of the same page, fenced code blocks left out (a shell
# comment there is no heading).
page_anchors() {
  awk '/^[[:space:]]*```/ {fence = !fence; next} !fence' "$1" |
    sed -n 's/^#\{1,6\}[[:space:]]\{1,\}//p' | tr '[:upper:]' '[:lower:]' |
    sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g'
}
bad=""
while IFS= read -r -d '' page; do
  [ "$page" = "$doc" ] && continue
  links=$(grep -n -o -E '\]\(#[A-Za-z0-9_-]+\)' "$page" || true)
  [ -n "$links" ] || continue
  page_anchor_list=$(page_anchors "$page")
  while IFS= read -r hit; do
    anchor=${hit##*(#}; anchor=${anchor%)}
    grep -qxF -- "$anchor" <<<"$page_anchor_list" || bad+="$page:${hit%%:*}: #$anchor"$'\n'
  done <<<"$links"
done < <(list_files | grep -z -E '[.]md$' | grep -z -v -E '^tests/')
report "in-page links name anchors that no heading of their page produces:" "${bad%$'\n'}"

# The outside notes (their facts are in docs/platform.md now). Patterns are bracketed so that
# this script does not match itself.
report "files outside docs/ cite notes that are not in this repository (cite $doc instead):" \
  "$(search '(facts|rdma-lab)[.]md' | grep -v '^docs/' || true)"
report "files point outside the repository:" "$(search '[.][.]/shared|/work[/]' || true)"

[ "$status" = 0 ] && echo "docs: every $doc anchor cited exists; nothing points outside the repository"
exit "$status"
