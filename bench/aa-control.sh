#!/usr/bin/env bash
# The A/A control: one read path (SQLite's blob API, 2000 random reads of
# 10 KB blobs) measured as two identical arms in 10 interleaved rounds, 20
# times over. A 95% interval spans 1.0 in about 19 of 20; at least 18 of 20
# is the bar. Well under 2 minutes after the build.
#
#   bench/aa-control.sh [COMPARISONS] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --quiet --example aa_control
target=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d "${TMPDIR:-/tmp}/blobbench-aa.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$target/release/blobbench" init "$work/aa.db" --count 10000 --size 10k >/dev/null
time "$target/release/examples/aa_control" "$work/aa.db" "${1:-20}" "${2:-10}"
