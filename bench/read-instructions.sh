#!/usr/bin/env bash
# Instructions inside one SQLite read call (DbSession::read, SQL and blob
# API), counted by valgrind's callgrind with collection switched on only
# inside that function. Prints one column per blobbench binary given, so a
# change to the read path is compared before/after:
#
#   bench/read-instructions.sh OLD_BINARY NEW_BINARY [N]
#
# Each figure is (count at 3N reads - count at N reads) / 2N over a small
# database held entirely in SQLite's page cache, so first-touch misses and
# start-up cancel out and what is left is the per-read path on a cache hit.
# User-space instructions only; independent of machine load.
set -euo pipefail
bins=()
n=2000
for a in "$@"; do
  if [[ $a =~ ^[0-9]+$ ]]; then n=$a; else bins+=("$a"); fi
done
[ ${#bins[@]} -gt 0 ] || { echo "usage: $0 BINARY... [N]"; exit 1; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/readinstr.XXXXXX")
trap 'rm -rf "$work"' EXIT
"${bins[0]}" init "$work/t.db" --count 1000 --size 4k --variance 1k >/dev/null
fn='*DbSession as blobbench::engine::api::Session>::read'
ir() { # binary, count, extra args
  local bin=$1 count=$2
  shift 2
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --toggle-collect="$fn" \
    "$bin" run "$work/t.db" --random --count "$count" --cache-size 20000 --repeat 1 --warmup 0 --no-latency "$@" \
    >/dev/null 2>"$work/cg.err"
  sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$work/cg.out" | head -1
}
printf '%-10s' path
for b in "${bins[@]}"; do printf ' %14s' "$(basename "$b")"; done
printf '   (instructions per read, N=%s)\n' "$n"
for c in "SQL|" "blob API|--blob-api"; do
  IFS='|' read -r name args <<<"$c"
  printf '%-10s' "$name"
  for b in "${bins[@]}"; do
    # shellcheck disable=SC2086
    a=$(ir "$b" "$n" $args) z=$(ir "$b" $((3 * n)) $args)
    printf ' %14s' $(((z - a) / (2 * n)))
  done
  printf '\n'
done
