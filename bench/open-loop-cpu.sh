#!/usr/bin/env bash
# What an open loop costs the cores per due operation (issue 49's target:
# the harness's own CPU under 20 µs per due operation at 16 clients).
#
#   bench/open-loop-cpu.sh            (CLIENTS=16 RATES="1600 16000" SECONDS_=10 RUNS=3)
#
# Four loops over the same files, at each rate, CLIENTS threads, reads:
#   bare       bench/bare_wake.c: the waits alone (clock_nanosleep to
#              absolute due times, nothing done on waking): the machine's
#              cost of a wake-up, which no sleeping harness avoids;
#   bare-read  bench/bare_wake.c given the files: the waits and, on each
#              wake-up, one file read (open, fstat, read, close) in C;
#   reference  the independent open loop (examples/reference_loops open):
#              the waits and a read;
#   blobbench  run --clients N --rate R: the waits, a read, and the harness.
# A process's CPU (user + system, from getrusage of the child) at rate R,
# less its CPU at LOW_RATE (16 ops/s: its start, its files' open and its
# end), over the due operations the two runs differ by: CPU per due
# operation. The reference and blobbench each pace two windows at R (an
# untimed warm-up, then the timed one), the bare loops one. The read's own
# CPU is blobbench's closed loop's CPU per operation; "blobbench - read"
# (its waits and bookkeeping) is its figure less that, an upper bound: a
# read after a sleep is cache-cold and costs more than in a closed loop.
# "harness" is the harness's own CPU, waits and bookkeeping: blobbench less
# what the read costs after a wake-up (bare-read less bare), paired by run.
# Each figure is the median of RUNS, each run's loops in an order that
# rotates.
set -euo pipefail
CLIENTS=${CLIENTS:-16}
RATES=${RATES:-1600 16000}
SECONDS_=${SECONDS_:-10}
RUNS=${RUNS:-3}
LOW_RATE=16
# shellcheck source=bench/reference-binaries.sh
source "$(dirname "$0")/reference-binaries.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/open-loop-cpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread "$root/bench/bare_wake.c" -o "$work/bare_wake"
COUNT=10000 # files of 4 KB
"$bb" init "$work/kv.db" --count "$COUNT" --size 4k >/dev/null
"$bb" export "$work/kv.db" "$work/flat" >/dev/null
ms=$((SECONDS_ * 1000))

# cpu_of CMD...: the child's user + system seconds, its output in $work/out.
cpu_of() {
  python3 - "$@" >"$work/cpu" <<'EOF'
import os, resource, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, check=True).stdout
open(os.environ["OUT"], "wb").write(out)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{u.ru_utime + u.ru_stime:.4f}")
EOF
  cat "$work/cpu"
}
export OUT=$work/out
run() { # run LOOP RATE -> CPU seconds (RATE "closed": a closed loop)
  case $1/$2 in
    bare/closed) echo 0 ;;
    bare/*) cpu_of "$work/bare_wake" "$CLIENTS" "$2" "$SECONDS_" ;;
    bare-read/closed) echo 0 ;;
    bare-read/*) cpu_of "$work/bare_wake" "$CLIENTS" "$2" "$SECONDS_" "$work/flat" "$COUNT" ;;
    reference/closed) cpu_of "$ref" clients files "$work/flat" "$CLIENTS" "$ms" threads 100:0 ;;
    reference/*) cpu_of "$ref" open files "$work/flat" "$CLIENTS" "$ms" "$2" threads 100:0 ;;
    blobbench/closed) cpu_of "$bb" run "$work/flat" --file-read posix --clients "$CLIENTS" --window "${SECONDS_}s" --repeat 1 --warmup 0 ;;
    blobbench/*) cpu_of "$bb" run "$work/flat" --file-read posix --clients "$CLIENTS" --rate "$2" --window "${SECONDS_}s" --repeat 1 --warmup 1 ;;
  esac
}
# ops/s of the last run, whichever loop printed it.
ops_per_s() { awk '$1 == "ops_per_s" {print $2} /^wakes / {print $2 / s}' s="$SECONDS_" "$OUT"; }

log=$work/cpu.tsv
: >"$log"
loops=(bare bare-read reference blobbench)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$RUNS"); do
  for rate in closed $LOW_RATE $RATES; do
    for k in 0 1 2 3; do
      loop=${loops[$(((k + r) % 4))]}
      cpu=$(run "$loop" "$rate")
      ops=$(case $loop/$rate in bare*/closed) echo 1 ;; *) ops_per_s ;; esac)
      printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$loop" "$rate" "$cpu" "$ops" >>"$log"
    done
  done
  echo "run $r of $RUNS done" >&2
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$log" "$SECONDS_" "$LOW_RATE" "$CLIENTS" "$RUNS" <<'EOF'
import statistics, sys
from collections import defaultdict
log, secs, low, clients, runs = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
cpu = defaultdict(dict)
ops = defaultdict(dict)
for line in open(log):
    r, loop, rate, c, o = line.split()
    cpu[(loop, rate)][r] = float(c)
    ops[(loop, rate)][r] = float(o)
def runs_of(loop, rate):
    """CPU per due operation at `rate` in each run, in µs."""
    v = {}
    for r in cpu[(loop, rate)]:
        if rate == "closed":
            v[r] = cpu[(loop, rate)][r] / (ops[(loop, rate)][r] * secs) * 1e6
        else:
            windows = 1 if loop.startswith("bare") else 2
            d_ops = (float(rate) - float(low)) * secs * windows
            v[r] = (cpu[(loop, rate)][r] - cpu[(loop, low)][r]) / d_ops * 1e6
    return v
def spread(v):
    v = list(v)
    return f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})"
print(f"CPU per due operation (µs), {clients} threads, reads of 4 KB files, {secs:g} s windows; median (min-max) of {runs} runs")
print(f"{'rate (ops/s)':>12}  {'bare wake':>17}  {'bare wake + read':>17}  {'reference':>17}  {'blobbench':>17}  "
      f"{'blobbench - read':>16}  {'harness':>17}  {'blobbench - reference':>21}")
read_us = statistics.median(runs_of("blobbench", "closed").values())
for rate in sorted({k[1] for k in cpu if k[1] not in ("closed", low)}, key=float):
    bare, bare_read = runs_of("bare", rate), runs_of("bare-read", rate)
    ref, bb = runs_of("reference", rate), runs_of("blobbench", rate)
    paired = [bb[r] - ref[r] for r in bb if r in ref]
    harness = [bb[r] - (bare_read[r] - bare[r]) for r in bb if r in bare and r in bare_read]
    print(f"{rate:>12}  {spread(bare.values()):>17}  {spread(bare_read.values()):>17}  {spread(ref.values()):>17}  "
          f"{spread(bb.values()):>17}  {statistics.median(bb.values()) - read_us:16.1f}  {spread(harness):>17}  {spread(paired):>21}")
print(f"closed loop, CPU per read: reference {statistics.median(runs_of('reference', 'closed').values()):.1f} µs, blobbench {read_us:.1f} µs")
print("bare wake: the waits alone, the machine's floor for sleeping to due times. bare wake + read: the same waits")
print("and a read on each wake-up, in C. blobbench - read: its waits and bookkeeping, less the closed loop's read (a")
print("read after a sleep is cache-cold and costs more, so this is an upper bound). harness: blobbench less what a")
print("read costs after a wake-up (bare wake + read, less bare wake), paired by run: the harness's own CPU, waits")
print("included. blobbench - reference: what blobbench adds over the independent open loop, paired by run.")
EOF
