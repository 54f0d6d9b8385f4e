#!/usr/bin/env bash
# Instructions per operation of each read path, kvtest.c against blobbench,
# counted by valgrind (callgrind). Unlike wall time this does not depend on
# what else the machine is doing, so a few percent of loop overhead shows.
# Each figure is (count at 2N - count at N) / N: start-up, checks and output
# cancel out, leaving the loop. User-space instructions only (the kernel's
# share of a syscall is the same for both tools).
#
#   KVTEST_C=/path/to/sqlite/test/kvtest.c bench/instructions.sh [N]
#
# Without KVTEST_C only blobbench is counted (the kvtest column says "-"):
# enough to compare two builds of blobbench, e.g. before and after a change
# to a read path. BLOBBENCH names the binary to count (default: the release
# build in $CARGO_TARGET_DIR or target/).
set -euo pipefail
n=${1:-5000}
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)"; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/instr.XXXXXX")
trap 'rm -rf "$work"' EXIT
bb=${BLOBBENCH:-${CARGO_TARGET_DIR:-$root/target}/release/blobbench}
if [ -n "${KVTEST_C:-}" ]; then
  # Reuse kvtest-compare's build recipe: same sqlite3.c, same options.
  KEEP_KVTEST="$work/kvtest" BUILD_ONLY=1 "$root/bench/kvtest-compare.sh" >/dev/null
else
  [ -n "${BLOBBENCH:-}" ] || (cd "$root" && cargo build --release --quiet)
fi
kv="$work/kvtest"
cd "$work"
"$bb" init t.db --count 10000 --size 10k --variance 2k >/dev/null
"$bb" export t.db t.dir >/dev/null
ir() {
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" >/dev/null 2>"$work/cg.err"
  sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$work/cg.out" | head -1
}
per_op() { local a b; a=$(ir "$@" --count "$n"); b=$(ir "$@" --count $((2 * n))); echo $(((b - a) / n)); }
printf '%-18s %10s %10s %14s   (instructions per read)\n' path kvtest blobbench "+per-op clock"
for c in "db SQL|t.db --random|t.db --random" \
         "db blob API|t.db --random --blob-api|t.db --random --blob-api" \
         "db blob API+mmap|t.db --random --blob-api --mmap 1000000000|t.db --random --blob-api --mmap 1000000000" \
         "flat stdio|t.dir --random --max-id 10000|t.dir --random"; do
  IFS='|' read -r name kargs bargs <<<"$c"
  # shellcheck disable=SC2086
  kvn=-
  if [ -n "${KVTEST_C:-}" ]; then kvn=$(per_op "$kv" run $kargs); fi
  printf '%-18s %10s %10s %14s\n' "$name" "$kvn" \
    "$(per_op "$bb" run $bargs --repeat 1 --warmup 0 --no-latency)" "$(per_op "$bb" run $bargs --repeat 1 --warmup 0)"
done
