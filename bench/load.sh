#!/usr/bin/env bash
# A busy machine on demand: two CPU-bound processes plus one writer that
# writes a 64 MB file and fsyncs it, in a loop. Bounded in time: every
# process stops by itself after SECONDS (default 600), and Ctrl-C or the
# end of the script stops them early and removes the scratch file.
#
#   bench/load.sh [SECONDS] [DIR]     DIR: where the writer writes (default: $TMPDIR or /tmp)
#
# This is the load of issue 21's table ("busy run 1-3").
set -euo pipefail
seconds=${1:-600}
dir=${2:-${TMPDIR:-/tmp}}
case $seconds in ''|*[!0-9]*) echo "error: SECONDS must be a whole number, not '$seconds'" >&2; exit 2;; esac
[ "$seconds" -gt 0 ] || { echo "error: SECONDS must be above 0" >&2; exit 2; }
scratch=$(mktemp -d "$dir/blobbench-load.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT INT TERM
for _ in 1 2; do
    timeout "$seconds" sh -c 'while :; do :; done' &
    pids+=($!)
done
timeout "$seconds" sh -c '
    while :; do
        dd if=/dev/zero of="$1/load.bin" bs=1M count=64 conv=fsync status=none
        rm -f "$1/load.bin"
    done' sh "$scratch" &
pids+=($!)
echo "load: 2 CPU-bound processes and a 64 MB write+fsync loop for ${seconds}s (pids ${pids[*]})" >&2
wait
