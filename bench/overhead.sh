#!/usr/bin/env bash
# The harness's own cost, measured:
#  1. blobbench's posix read path against a bare C open/fstat/read/close loop
#     over the same keys (target: under 5% slower);
#  2. per-op latency on (one clock read per op) against --no-latency
#     (target: mean per-op time within 2%).
#
#   bench/overhead.sh [COUNT] [ROUNDS]
# Rounds alternate the order of the variants; the first two are warm-ups.
set -euo pipefail
count=${1:-10000}
rounds=${2:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --quiet
bb="$root/target/release/blobbench"
work=$(mktemp -d "${TMPDIR:-/tmp}/overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 bench/bare_read.c -o "$work/bare_read"
cd "$work"
"$bb" init t.db --count "$count" --size 10k --variance 2k >/dev/null
"$bb" export t.db t.dir >/dev/null
loop_us() { sed -n 's/^us per read (loop) *\([0-9.]*\).*/\1/p'; }
variant() {
  case $1 in
    bare) "$work/bare_read" t.dir "$count" "$count" ;;
    posix) "$bb" run t.dir --count "$count" --random --file-read posix --repeat 1 --warmup 0 --no-latency | loop_us ;;
    posix-lat) "$bb" run t.dir --count "$count" --random --file-read posix --repeat 1 --warmup 0 | loop_us ;;
    db-lat) "$bb" run t.db --count "$count" --random --blob-api --mmap 2G --repeat 1 --warmup 0 | loop_us ;;
    db) "$bb" run t.db --count "$count" --random --blob-api --mmap 2G --repeat 1 --warmup 0 --no-latency | loop_us ;;
  esac
}
names=(bare posix posix-lat db-lat db)
declare -A got
for r in $(seq 1 "$rounds"); do
  # Every other round runs the variants in reverse, so that whatever the
  # position in a round does (caches, frequency) hits each variant alike.
  order=("${names[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=(db db-lat posix-lat posix bare); fi
  for v in "${order[@]}"; do
    t=$(variant "$v")
    if [ "$r" -gt 2 ]; then got[$v]+="$t "; fi
  done
done
python3 - "${got[bare]}" "${got[posix]}" "${got[posix-lat]}" "${got[posix]}" "${got[db-lat]}" "${got[db]}" <<'PY'
import statistics as st, sys
bare, posix, lat, nolat, dblat, dbnolat = ([float(x) for x in a.split()] for a in sys.argv[1:7])
m = st.median
print(f"rounds: {len(bare)} (medians; us per read, loop only)")
print(f"bare C open/fstat/read/close : {m(bare):8.3f}")
print(f"blobbench --file-read posix  : {m(posix):8.3f}   overhead {100 * (m(posix) / m(bare) - 1):+.1f}% (target < 5%)")
print(f"files, latency on vs off     : {m(lat):8.3f} vs {m(nolat):8.3f}   {100 * (m(lat) / m(nolat) - 1):+.1f}% (target within 2%)")
print(f"db mmap, latency on vs off   : {m(dblat):8.3f} vs {m(dbnolat):8.3f}   {100 * (m(dblat) / m(dbnolat) - 1):+.1f}% (target within 2%)")
PY
