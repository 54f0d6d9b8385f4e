#!/usr/bin/env bash
# Runs kvtest.c and blobbench side by side on one dataset, same SQLite.
#
#   KVTEST_C=/path/to/sqlite/test/kvtest.c bench/kvtest-compare.sh [COUNT] [ROUNDS]
#
# kvtest.c is not shipped with blobbench, nor with the SQLite amalgamation
# the crate bundles: take it from an SQLite source tree (test/kvtest.c). The
# script downloads nothing; without KVTEST_C it stops with a one-line reason. It is compiled against the very sqlite3.c that blobbench
# bundles, with the same compile-time options, so any difference comes from
# the tools' loops. Each round runs every path once with each tool,
# alternating, one timed run per invocation (blobbench --repeat 1 --warmup 0,
# exactly kvtest's behaviour); the first round is a warm-up and not counted.
# Prints the median "Microseconds per BLOB" of each tool and their ratio.
set -euo pipefail
die() { echo "kvtest-compare: $*" >&2; exit 1; }
count=${1:-10000}
rounds=${2:-7}
# kvtest.c is SQLite's test program, in its full source tree only: the
# amalgamation bundled by libsqlite3-sys has no test/ directory, and this
# script downloads nothing. Without it, stop here, in one line.
[ -n "${KVTEST_C:-}" ] || die "needs SQLite's test/kvtest.c, which is not bundled (the crate ships only the amalgamation): set KVTEST_C=/path/to/kvtest.c from an SQLite source tree"
[ -r "$KVTEST_C" ] || die "KVTEST_C=$KVTEST_C: no such readable file"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --quiet
bb="${CARGO_TARGET_DIR:-$root/target}/release/blobbench"
[ -x "$bb" ] || die "no release binary at $bb after cargo build --release"
sqlite_dir=$(cargo metadata --format-version 1 | python3 -c '
import json, sys, os
pkgs = json.load(sys.stdin)["packages"]
p = next(p for p in pkgs if p["name"] == "libsqlite3-sys")
print(os.path.join(os.path.dirname(p["manifest_path"]), "sqlite3"))')
[ -r "$sqlite_dir/sqlite3.c" ] || die "the bundled amalgamation is not at $sqlite_dir/sqlite3.c (run cargo fetch)"
work=$(mktemp -d "${TMPDIR:-/tmp}/kvcompare.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The options libsqlite3-sys compiles the bundled amalgamation with, plus
# the raised mmap cap from .cargo/config.toml.
flags="-O3 -DSQLITE_CORE -DSQLITE_DEFAULT_FOREIGN_KEYS=1 -DSQLITE_ENABLE_API_ARMOR -DSQLITE_ENABLE_COLUMN_METADATA
 -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS3_PARENTHESIS -DSQLITE_ENABLE_FTS5
 -DSQLITE_ENABLE_JSON1 -DSQLITE_ENABLE_LOAD_EXTENSION=1 -DSQLITE_ENABLE_RTREE -DSQLITE_ENABLE_STAT4 -DSQLITE_SOUNDEX
 -DSQLITE_THREADSAFE=1 -DSQLITE_USE_URI -DHAVE_USLEEP=1 -DHAVE_ISNAN -DSQLITE_MAX_MMAP_SIZE=0x10000000000"
echo "building kvtest against $sqlite_dir/sqlite3.c ..."
# shellcheck disable=SC2086
cc $flags -I"$sqlite_dir" "$KVTEST_C" "$sqlite_dir/sqlite3.c" -o "$work/kvtest" -lpthread -ldl -lm 2>"$work/cc.log" ||
  die "cannot compile $KVTEST_C against the bundled sqlite3.c: $(grep -m1 -i error "$work/cc.log" || head -n1 "$work/cc.log")"
kv="$work/kvtest"
if [ -n "${KEEP_KVTEST:-}" ]; then cp "$kv" "$KEEP_KVTEST"; fi
if [ -n "${BUILD_ONLY:-}" ]; then exit 0; fi

cd "$work"
"$bb" init t.db --count "$count" --size 10k --variance 2k >/dev/null
"$bb" export t.db t.dir >/dev/null
"$bb" export t.db t.tree --tree >/dev/null
writes=$((count / 10))
# name | kvtest arguments | blobbench arguments (same meaning)
cases=(
  "db SQL read|t.db --count $count --random|t.db --count $count --random"
  "db blob API read|t.db --count $count --random --blob-api|t.db --count $count --random --blob-api"
  "db blob API + mmap read|t.db --count $count --random --blob-api --mmap 2000000000|t.db --count $count --random --blob-api --mmap 2000000000"
  "flat read (stdio)|t.dir --count $count --random --max-id $count|t.dir --count $count --random"
  "tree read (stdio)|t.tree --count $count --random --max-id $count|t.tree --count $count --random"
  "db SQL update|t.db --count $writes --random --update|t.db --count $writes --random --update"
  "db blob API update|t.db --count $writes --random --update --blob-api|t.db --count $writes --random --update --blob-api"
  "flat update (truncate)|t.dir --count $writes --random --update --max-id $count|t.dir --count $writes --random --update"
)
per_blob() { sed -n 's/^Microseconds per BLOB [a-z]*: //p'; }
printf '%-26s %10s %10s %10s %7s %7s  (us per blob, median of %d rounds)\n' path kvtest blobbench "bb nolat" ratio "nolat" $((rounds - 1))
for c in "${cases[@]}"; do
  IFS='|' read -r name kargs bargs <<<"$c"
  k=() b=() nb=()
  for r in $(seq 1 "$rounds"); do
    # shellcheck disable=SC2086
    kt=$("$kv" run $kargs | per_blob)
    # shellcheck disable=SC2086
    bt=$("$bb" run $bargs --repeat 1 --warmup 0 | per_blob)
    # shellcheck disable=SC2086
    nt=$("$bb" run $bargs --repeat 1 --warmup 0 --no-latency | per_blob)
    if [ "$r" -gt 1 ]; then k+=("$kt"); b+=("$bt"); nb+=("$nt"); fi
  done
  python3 - "$name" "${k[*]}" "${b[*]}" "${nb[*]}" <<'PY'
import statistics, sys
name = sys.argv[1]
k, b, n = ([float(x) for x in a.split()] for a in sys.argv[2:5])
mk, mb, mn = statistics.median(k), statistics.median(b), statistics.median(n)
print(f"{name:<26} {mk:10.3f} {mb:10.3f} {mn:10.3f} {mb / mk:7.2f} {mn / mk:7.2f}")
PY
done
echo "ratio = blobbench / kvtest (default, and with --no-latency): below 1.00 blobbench is faster."
echo "kvtest's timer counts whole milliseconds; use bench/instructions.sh for a noise-free comparison."
