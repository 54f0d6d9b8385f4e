#!/usr/bin/env bash
# The open loop at a rate (issue 49) against an independent one:
# `reference_loops open` (examples/reference_loops/open_loop.rs: each
# store through its own crate, the same due times as blobbench's: client i
# of N at i/N of an interval N/R, then one every N/R s; sleeps to absolute
# due times; latency from due time; due operations not started by the
# deadline recorded at their lateness), alternated round by round with
# `blobbench run --clients N --rate R` on the same dataset, in the same
# configuration (mix, durable commit per write), each doing the same work
# per operation (LMDB's, redb's and fjall's references read the old value's
# length in the write, as blobbench's overwrites do).
#
#   bench/reference-loops-rate.sh
#
# kvtest's dataset (COUNT, default 10000 blobs of 10 KB). For each N in
# CLIENTS (default "4 16") and KIND in KINDS (default "threads processes";
# redb, fjall and sqlite-one-writer are threads only), and each store
# (files, sqlite-per-conn, sqlite-one-writer, lmdb, redb, fjall; STORES
# limits them), the rate R is FRACTION (0.7) of the reference's closed-loop
# ops/s at N (the median of 3 windows before the rounds: "near
# capacity"); then
# ROUNDS (6) rounds of one window of WINDOW_MS (4000) a side at the mix MIX
# (90:10), which side goes first alternating by round and pair (with AA=1,
# below, the three runs' order rotating).
# Each side runs one untimed warm-up window before its timed one
# (blobbench's `--warmup 1`; the reference's own). A side that fails (a
# SQLite writer busy past its timeout on a loaded machine) is shown as
# "-" for that round and left out of the ratios. It prints, per row, each
# side's p99 at R over both classes (median over rounds, min-max), the
# paired ratio blobbench / reference (median of the per-round ratios,
# range; target within 20%), each side's write p99 and the operations not
# started by the deadline. With AA=1 (the default) each round also runs
# the reference a second time, in an order that rotates over the three
# runs, and each row shows that run against the first, paired the same
# way: the A/A ratio, what two runs of one loop differ by on this machine
# at this rate; a blobbench / reference ratio inside the A/A one's spread
# is not a difference the rounds can show. AA=0 runs each side once. The
# rounds' figures are kept in LOG (default: none kept) as tab-separated
# lines. With FRESH=1 (the default) every run, the capacity windows
# included, begins from a fresh copy of the dataset as exported (copied,
# then `sync`ed, outside any window): a flush, compaction, checkpoint or
# freelist a run leaves behind (fjall's, SQLite's, LMDB's) would otherwise
# land in whichever run comes next, and the rounds would compare a store's
# state as much as the loops; FRESH=0 runs every side on one dataset in
# place. With the defaults the whole run takes about 55 minutes on 2
# cores (2 s windows: about 25; they resolve less, docs/measurement.md
# has both). The datasets go under TMPDIR (default
# /tmp): on a filesystem mounted with online discard (`discard`, as this
# project's VM's root is), an fsync waits for the discards of the blocks
# earlier renames freed, and those stalls decide single windows' p99s;
# docs/measurement.md compares both.
set -euo pipefail
ROUNDS=${ROUNDS:-6}
COUNT=${COUNT:-10000}
CLIENTS=${CLIENTS:-4 16}
KINDS=${KINDS:-threads processes}
WINDOW_MS=${WINDOW_MS:-4000}
MIX=${MIX:-90:10}
FRACTION=${FRACTION:-0.7}
AA=${AA:-1}
FRESH=${FRESH:-1}
for v in AA FRESH; do
  case ${!v} in 0 | 1) ;; *) echo "$v: 0 or 1, not '${!v}'" >&2; exit 2 ;; esac
done
# shellcheck source=bench/reference-binaries.sh
. "$(dirname "$0")/reference-binaries.sh"
STORES=${STORES:-}
STORES=${STORES// /,} # commas or spaces
for s in ${STORES//,/ }; do
  case $s in files | sqlite-per-conn | sqlite-one-writer | lmdb | redb | fjall) ;;
  *) echo "STORES: unknown store '$s' (comma-separated: files, sqlite-per-conn, sqlite-one-writer, lmdb, redb, fjall)" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/refrate.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "building datasets of $COUNT blobs of 10 KB in $work" >&2
"$bb" init "$work/kv.db" --count "$COUNT" --size 10k >/dev/null
"$bb" export "$work/kv.db" "$work/flat" >/dev/null
for e in lmdb redb fjall; do "$bb" export --engine "$e" "$work/kv.db" "$work/$e" >/dev/null; done
# Each run's dataset: with FRESH=1 a copy, in $work/live, of the exported
# one; with FRESH=0 the exported one itself.
live=$work
if [ "$FRESH" = 1 ]; then live=$work/live; fi
# fresh PATH: with FRESH=1, replace the copy at PATH by the exported dataset
# of that name (a SQLite database's -wal and -shm go too), and put it on disk.
# It runs inside the sides' command substitutions, where `set -e` is off:
# a copy that fails (a full disk) exits, and the script with it, rather than
# timing a half-copied dataset.
fresh() {
  [ "$FRESH" = 1 ] || return 0
  { rm -rf "$work/live" && mkdir "$work/live" && cp -a "$work/${1##*/}" "$1" && sync; } ||
    { echo "cannot copy ${1##*/} afresh into $work/live" >&2; exit 1; }
}

# store | the reference's path | blobbench's path and flags
stores=(
  "files|$live/flat|$live/flat --file-write replace --fsync --fsync-dir --file-read posix"
  "sqlite-per-conn|$live/kv.db|$live/kv.db --jmode wal --sync full --sqlite-writers per-client"
  "sqlite-one-writer|$live/kv.db|$live/kv.db --jmode wal --sync full --sqlite-writers one"
  "lmdb|$live/lmdb|$live/lmdb --kv-sync durable"
  "redb|$live/redb|$live/redb --kv-sync durable"
  "fjall|$live/fjall|$live/fjall --kv-sync durable"
)
threads_only=" sqlite-one-writer redb fjall "
# The reference's loop per store, where its name differs: blobbench's LMDB,
# redb and fjall overwrites read the old value's length inside the write (a
# key with no blob is a miss, not an insert), so the reference does too.
declare -A ref_kind=([lmdb]=lmdb-size-first [redb]=redb-size-first [fjall]=fjall-size-first)
# Both sides print `p99_us`, `write_p99_us` and `ops_per_s`; the
# reference `unstarted`, blobbench "not started by the deadline: U".
figures() {
  awk '{f[$1] = $2}
    /not started by the deadline:/ {s = $0; sub(/.*deadline: /, "", s); sub(/ .*/, "", s); f["unstarted"] = s}
    END {
      n = split("p99_us write_p99_us ops_per_s unstarted", k, " ")
      for (i = 1; i <= n; i++) printf "%s%s", (k[i] in f ? f[k[i]] : "-"), (i < n ? "\t" : "\n")
    }'
}
log=$work/rate.tsv
: >"$log"
declare -A rate
for n in $CLIENTS; do
  for kind in $KINDS; do
    for s in "${stores[@]}"; do
      IFS='|' read -r store path _ <<<"$s"
      [ -z "${STORES:-}" ] || [[ ",$STORES," == *",$store,"* ]] || continue
      [ "$kind" = threads ] || [[ $threads_only != *" $store "* ]] || continue
      cap=$(for _ in 1 2 3; do
        fresh "$path"
        "$ref" clients "${ref_kind[$store]:-$store}" "$path" "$n" "$WINDOW_MS" "$kind" "$MIX" | awk '$1 == "ops_per_s" {print $2}'
      done | sort -n | sed -n 2p)
      rate[$store/$n/$kind]=$(awk -v c="$cap" -v f="$FRACTION" 'BEGIN {printf "%.0f", c * f}')
      echo "capacity $store $n $kind: $cap ops/s closed loop; rate ${rate[$store/$n/$kind]}" >&2
    done
  done
done
for round in $(seq 1 "$ROUNDS"); do
  i=0
  for n in $CLIENTS; do
    for kind in $KINDS; do
      for s in "${stores[@]}"; do
        IFS='|' read -r store path flags <<<"$s"
        key=$store/$n/$kind
        [ -n "${rate[$key]:-}" ] || continue
        r_=${rate[$key]}
        i=$((i + 1))
        # shellcheck disable=SC2086
        run_bb() {
          fresh "$path"
          "$bb" run $flags --clients "$n" --clients-are "$kind" --rate "$r_" --mix "$MIX" --commit-every 1 \
            --window "${WINDOW_MS}ms" --warmup 1 --repeat 1 | figures
        }
        run_ref() {
          fresh "$path"
          "$ref" open "${ref_kind[$store]:-$store}" "$path" "$n" "$WINDOW_MS" "$r_" "$kind" "$MIX" | figures
        }
        a=$(printf -- '-\t-\t-\t-')
        if [ "$AA" = 1 ]; then
          case $(((round + i) % 3)) in
            0) b=$(run_bb || true); r=$(run_ref || true); a=$(run_ref || true) ;;
            1) r=$(run_ref || true); a=$(run_ref || true); b=$(run_bb || true) ;;
            *) a=$(run_ref || true); b=$(run_bb || true); r=$(run_ref || true) ;;
          esac
        elif (((round + i) % 2)); then
          b=$(run_bb || true); r=$(run_ref || true)
        else
          r=$(run_ref || true); b=$(run_bb || true)
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$store" "$n" "$kind" "$r_" "$round" "$r" "$b" "$a" >>"$log"
        printf 'round %d  %-17s %2d %-9s R %s  reference %s  blobbench %s\n' \
          "$round" "$store" "$n" "$kind" "$r_" "$r" "$b" | tr '\t' ' ' >&2
        [ "$AA" != 1 ] || printf 'round %d  %-17s %2d %-9s R %s  reference again %s\n' \
          "$round" "$store" "$n" "$kind" "$r_" "$a" | tr '\t' ' ' >&2
      done
    done
  done
done
[ -z "${LOG:-}" ] || cp "$log" "$LOG"
python3 - "$log" "$COUNT" "$WINDOW_MS" "$MIX" "$(nproc)" "$FRACTION" <<'EOF'
import statistics, sys
from collections import OrderedDict
path, blobs, window, mix, cores, fraction = sys.argv[1:]
rows = OrderedDict()
num = lambda x: None if x == "-" else float(x)
for line in open(path):
    store, n, kind, rate, _, *f = line.rstrip("\n").split("\t")
    rows.setdefault((store, int(n), kind, rate), []).append(([num(x) for x in f[:4]], [num(x) for x in f[4:8]], [num(x) for x in f[8:12]]))
med = statistics.median
def span(xs, fmt="{:.0f}"):
    xs = [x for x in xs if x is not None]
    return f"{fmt.format(med(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})" if xs else "-"
print(f"Open loop at R = {fraction} x the reference's closed-loop ops/s at N (median of 3); one timed window of {window} ms a side, "
      f"after one warm-up window, mix {mix} (each overwrite its own durable commit), {blobs} blobs of 10 KB, {cores} cores; p99 over both "
      f"classes, latency from due time, due ops not started recorded at their lateness; median over "
      f"{max(len(v) for v in rows.values())} paired rounds, min-max beside; latencies in us.")
print()
print("| store | N | clients as | R ops/s | reference p99 | blobbench p99 | blobbench / reference (paired) "
      "| A/A: reference again / reference | write p99 ref / bb | not started ref / bb (sum) |")
print("|---|---|---|---|---|---|---|---|---|---|")
def paired(v, side):
    """Median (range) of side's p99 over the first reference run's, by round."""
    ratios = sorted(x[side][0] / x[0][0] for x in v if x[0][0] and x[side][0])
    return ratios, (f"{med(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})" if ratios else "-")
for (store, n, kind, rate), v in rows.items():
    ratios, ratio = paired(v, 1)
    if ratios and not 1 / 1.2 <= med(ratios) <= 1.2:
        ratio += " **off by more than 20%**"
    unst = lambda side: sum(x[side][3] or 0 for x in v)
    print(f"| {store} | {n} | {kind} | {rate} | {span([x[0][0] for x in v])} | {span([x[1][0] for x in v])} | "
          f"{ratio} | {paired(v, 2)[1]} | {span([x[0][1] for x in v])} / {span([x[1][1] for x in v])} | {unst(0):.0f} / {unst(1):.0f} |")
EOF
