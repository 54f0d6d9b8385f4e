#!/usr/bin/env bash
# The stability bench of issue 21: `suite --quick` RUNS times on a quiet
# machine and RUNS times under bench/load.sh, then the verdict rows side by
# side (10 KB reads, fast writes, durable writes), with the noise floor.
#
#   bench/stability.sh [RUNS] [BINARY...]
#
# RUNS defaults to 5. BINARY defaults to this checkout's release build; give
# several (say, an older build with the block method first) to compare them
# under the same conditions: each binary runs RUNS times quiet, then RUNS
# times loaded. Takes about 2 minutes per suite run.
set -euo pipefail
runs=${1:-5}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -eq 0 ]; then
    (cd "$root" && cargo build --release --quiet)
    set -- "${CARGO_TARGET_DIR:-$root/target}/release/blobbench"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/blobbench-stability.XXXXXX")
trap 'rm -rf "$work"' EXIT
one() { # binary, tag, n
    local out="$work/$2-$3"
    "$1" suite --quick --workdir "$work" --out "$out" >/dev/null
    "$1" report --format markdown "$out/results.json" >"$out/summary.txt"
}
for bin in "$@"; do
    tag=$(basename "$(dirname "$(dirname "$bin")")")-$(echo "$bin" | md5sum | cut -c1-6)
    for n in $(seq "$runs"); do
        echo "quiet $n/$runs: $bin" >&2
        one "$bin" "$tag-quiet" "$n"
    done
    for n in $(seq "$runs"); do
        echo "loaded $n/$runs: $bin" >&2
        "$root/bench/load.sh" 300 "$work" &
        load=$!
        sleep 2
        one "$bin" "$tag-loaded" "$n"
        kill "$load" 2>/dev/null || true
        wait "$load" 2>/dev/null || true
    done
done
echo
echo "| run | question | answer | factor | uncertainty |"
echo "|---|---|---|---|---|"
for f in "$work"/*/summary.txt; do
    run=$(basename "$(dirname "$f")")
    grep -E '^\| (10 KB reads|fast writes|durable writes) ' "$f" \
        | awk -F' \\| ' -v run="$run" '{ sub(/^\| /, "", $1); print "| " run " | " $1 " | " $3 " | " $4 " | " $5 " |" }'
    grep -E '^- noise floor' "$f" | sed "s/^- /| $run | /; s/\$/ | | | |/" || true
done
