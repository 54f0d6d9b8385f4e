#!/usr/bin/env bash
# Independent reference loops (issue 28's checks) against blobbench's
# matching arms. examples/reference_loops.rs reads and writes each store
# through its own crate or C API (rusqlite, heed, redb, fjall, libc, the
# postgres crate), never through blobbench's engine or session code; this
# script alternates it with `blobbench run` on the same dataset in ROUNDS
# rounds (which one goes first alternates too) and prints each side's
# loop-only time per operation, median over the rounds, and the paired
# ratio blobbench / reference: the median of the per-round ratios and
# their range (the target: within 10%); for writes also blobbench's steady
# figure (the loop, its commits and the work deferred to the close, which
# advise ranks) and its ratio; and beside them each side's CPU
# time per op (user + system, getrusage; blobbench's from its runs' OS
# counters), which load from other processes disturbs least.
#
#   bench/reference-loops.sh [reads|writes|all|clients]
#
# Reads: READS (20000) random reads of 10 KB blobs (a dataset of READS
# blobs), a long-running reader: 1 warm-up and 5 timed sessions in one
# process on each side; blobbench's figure is `summary.loop_per_op_us`
# (median of its 5 runs) from `run --json`, the reference's the median of
# its 5 sessions.
# Writes: WRITES (300) durable overwrites per session, each its own
# transaction (the files: each file fsynced, renamed without a directory
# fsync as blobbench's `--file-write replace --fsync`, or overwritten in
# place), after 1 warm-up session on each side; a per-write commit is
# $PER_WRITE (default `--commit-every 1`; kvtest's `--multitrans` is the
# same for writes). PostgreSQL runs on a cluster this script starts (as
# the postgres user when run as root) and stops.
# Clients (issue 42's parity at N; not part of `all`): kvtest's dataset
# (COUNT, default 10000, blobs of 10 KB), and for each N in CLIENTS
# (default "1 4 16") and each KIND in threads processes, every store's
# `reference_loops clients` loop (files, sqlite-per-conn,
# sqlite-one-writer (threads only), lmdb, postgres) for one window of
# WINDOW_MS (3000) at the mix MIX (90:10), ROUNDS times; it prints each
# one's median ops/s with the min-max over the rounds, the median over
# rounds of its slowest and its median client's operations, of its read
# p99, and of its write p50 and p99. In each round the reference alternates with
# blobbench's side of the pair, `run --clients` (`blobbench_at_n` below),
# and the table gives blobbench's ops/s and its paired ratio to the
# reference's. About 20 minutes with the defaults (27 pairs x 6 rounds x
# 3 s a side, blobbench's warm-up window, and the datasets).
# STORES limits the stores by their first word (STORES=redb,lmdb; default:
# all; for clients, the store names above). BLOBBENCH and REFERENCE name
# the two binaries (default: this checkout's release builds, built
# first). Reads and writes take about 10 minutes on a quiet 2-core
# machine, 20 on a busy one.
set -euo pipefail
what=${1:-all}
case $what in reads | writes | all | clients) ;; *) echo "usage: $0 [reads|writes|all|clients]" >&2; exit 2 ;; esac
ROUNDS=${ROUNDS:-6}
READS=${READS:-20000}
WRITES=${WRITES:-300}
PER_WRITE=${PER_WRITE:---commit-every 1}
# shellcheck source=bench/reference-binaries.sh
. "$(dirname "$0")/reference-binaries.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/refloops.XXXXXX")
chmod 755 "$work"
pgbin=$(dirname "$(command -v pg_ctl || ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  [ -f "$work/pg/data/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" stop -D "$work/pg/data" -m fast -s -w || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ "$what" = clients ]; then blobs=${COUNT:-10000} engines="lmdb"; else blobs=$READS engines="lmdb redb fjall"; fi
echo "building datasets of $blobs blobs of 10 KB in $work" >&2
"$bb" init "$work/kv.db" --count "$blobs" --size 10k >/dev/null
"$bb" export "$work/kv.db" "$work/flat" >/dev/null
for e in $engines; do "$bb" export --engine "$e" "$work/kv.db" "$work/$e" >/dev/null; done
mkdir -p "$work/pg"
[ "$(id -u)" = 0 ] && chown postgres "$work/pg"
as_pg "$pgbin/initdb" -D "$work/pg/data" -U blobbench -A trust -E UTF8 --locale=C -N >/dev/null
as_pg "$pgbin/pg_ctl" start -D "$work/pg/data" -w -s -l "$work/pg/log" \
  -o "-c listen_addresses='' -c unix_socket_directories='$work/pg' -c fsync=on -c synchronous_commit=on"
url="postgresql://blobbench@/postgres?host=$work/pg"
"$bb" export --engine postgres "$work/kv.db" "$work/pgds" --pg "$url" >/dev/null
export PG_TABLE
PG_TABLE=$(jq -r .table "$work/pgds/blobbench-postgres.json")

if [ "$what" = clients ]; then
  # store | its path for `reference_loops clients`
  client_stores=(
    "files|$work/flat"
    "sqlite-per-conn|$work/kv.db"
    "sqlite-one-writer|$work/kv.db"
    "lmdb|$work/lmdb"
    "postgres|$url"
  )
  CLIENTS=${CLIENTS:-1 4 16}
  WINDOW_MS=${WINDOW_MS:-3000}
  MIX=${MIX:-90:10}
  # Both sides print `ops_per_s`, `client_ops_min`, `client_ops_median`,
  # `read_p99_us`, `write_p50_us`, `write_p99_us`; this keeps them as one
  # tab-separated line ("-" for a figure missing). A durable write's p50
  # far below `reference_loops flush`'s figures is a commit that wrote
  # nothing.
  figures() {
    awk '{f[$1] = $2} END {
      n = split("ops_per_s client_ops_min client_ops_median read_p99_us write_p50_us write_p99_us", k, " ")
      for (i = 1; i <= n; i++) printf "%s%s", (k[i] in f ? f[k[i]] : "-"), (i < n ? "\t" : "\n")
    }'
  }
  # Blobbench's side of each pair: `run --clients`, the driver advise
  # --clients uses, on STORE's dataset in the reference's configuration
  # (the same window, mix and durable commit per write; SQLite's reads by a
  # prepared SELECT, as the reference's), after one warm-up window; it
  # prints its figures in the reference's words.
  blobbench_at_n() { # STORE N KIND
    local flags
    case $1 in
      files) flags=("$work/flat" --file-write replace --fsync --fsync-dir --file-read posix) ;;
      sqlite-per-conn) flags=("$work/kv.db" --jmode wal --sync full --sqlite-writers per-client) ;;
      sqlite-one-writer) flags=("$work/kv.db" --jmode wal --sync full --sqlite-writers one) ;;
      lmdb) flags=("$work/lmdb" --kv-sync durable) ;;
      postgres) flags=("$work/pgds" --pg "$url" --kv-sync durable) ;;
    esac
    "$bb" run "${flags[@]}" --clients "$2" --clients-are "$3" --mix "$MIX" --commit-every 1 \
      --window "${WINDOW_MS}ms" --warmup 1 --repeat 1
  }
  reference_at_n() { # STORE PATH N KIND
    "$ref" clients "$1" "$2" "$3" "$WINDOW_MS" "$4" "$MIX"
  }
  log=$work/clients.tsv
  : >"$log"
  for round in $(seq 1 "$ROUNDS"); do
    i=0
    for n in $CLIENTS; do
      for kind in threads processes; do
        for s in "${client_stores[@]}"; do
          store=${s%%|*} path=${s#*|}
          [ -z "${STORES:-}" ] || [[ ",$STORES," == *",$store,"* ]] || continue
          [ "$kind/$store" != processes/sqlite-one-writer ] || continue
          i=$((i + 1))
          # Which side goes first alternates by round and by pair.
          if (((round + i) % 2)); then
            b=$(blobbench_at_n "$store" "$n" "$kind" | figures)
            r=$(reference_at_n "$store" "$path" "$n" "$kind" | figures)
          else
            r=$(reference_at_n "$store" "$path" "$n" "$kind" | figures)
            b=$(blobbench_at_n "$store" "$n" "$kind" | figures)
          fi
          printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$store" "$n" "$kind" "$round" "$r" "$b" >>"$log"
          printf 'round %d  %-17s %2d %-9s reference %s  blobbench %s\n' \
            "$round" "$store" "$n" "$kind" "$r" "$b" | tr '\t' ' ' >&2
        done
      done
    done
  done
  python3 - "$log" "$blobs" "$WINDOW_MS" "$MIX" "$(nproc)" <<'EOF'
import statistics, sys
from collections import OrderedDict
path, blobs, window, mix, cores = sys.argv[1:]
rows = OrderedDict()
for line in open(path):
    store, n, kind, _, *f = line.rstrip("\n").split("\t")
    num = lambda x: None if x == "-" else float(x)
    rows.setdefault((store, int(n), kind), []).append(([num(x) for x in f[:6]], [num(x) for x in f[6:]]))
med = statistics.median
def col(v, side, i):
    return [x[side][i] for x in v if x[side][i] is not None]
def fig(xs, fmt="{:.0f}"):
    return fmt.format(med(xs)) if xs else "-"
print(f"N clients over one window of {window} ms, mix {mix} (reads:overwrites, each overwrite its own durable "
      f"commit), {blobs} blobs of 10 KB, {cores} cores; median over {max(len(v) for v in rows.values())} rounds, "
      "min-max beside; client ops: the slowest and the median client's operations in the window; latencies in us.")
print()
print("| store | N | clients as | reference ops/s (min-max) | client ops min / median | read p99 | write p50 "
      "| write p99 | blobbench ops/s | blobbench / reference (paired median, range) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (store, n, kind), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2] != "threads")):
    ops = col(v, 0, 0)
    span = f"{fig(ops)} ({min(ops):.0f}-{max(ops):.0f})" if ops else "-"
    ratios = sorted(x[1][0] / x[0][0] for x in v if x[1] and x[1][0] and x[0][0])
    ratio = f"{med(ratios):.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})" if ratios else "-"
    print(f"| {store} | {n} | {kind} | {span} | {fig(col(v, 0, 1))} / {fig(col(v, 0, 2))} | "
          f"{fig(col(v, 0, 3))} | {fig(col(v, 0, 4))} | {fig(col(v, 0, 5))} | {fig(col(v, 1, 0))} | {ratio} |")
EOF
  exit 0
fi


# store | reference store and path | blobbench's path and flags
reads=(
  "sqlite|sqlite $work/kv.db|$work/kv.db"
  "sqlite blob API + mmap|sqlite-blob $work/kv.db|$work/kv.db --blob-api --mmap 1000000000"
  "lmdb|lmdb $work/lmdb|$work/lmdb"
  "redb|redb $work/redb|$work/redb"
  "fjall|fjall $work/fjall|$work/fjall"
  "files (posix read)|files $work/flat|$work/flat --file-read posix"
  "postgres|postgres $url|$work/pgds --pg $url"
)
writes=(
  "sqlite WAL + FULL|sqlite $work/kv.db|$work/kv.db --jmode wal --sync full $PER_WRITE"
  "lmdb durable|lmdb $work/lmdb|$work/lmdb --kv-sync durable $PER_WRITE"
  "redb Immediate|redb $work/redb|$work/redb --kv-sync durable $PER_WRITE"
  "fjall SyncAll|fjall $work/fjall|$work/fjall --kv-sync durable $PER_WRITE"
  "files temp+fsync+rename, no dir fsync|files-replace $work/flat|$work/flat --file-write replace --fsync"
  "files in place + fsync|files-inplace $work/flat|$work/flat --file-write inplace --fsync"
  "postgres sync commit|postgres $url|$work/pgds --pg $url --kv-sync durable $PER_WRITE"
)
selected() { # store line: its name's first word is in STORES, or no STORES
  local name=${1%%|*}
  [ -z "${STORES:-}" ] || [[ ",$STORES," == *",${name%% *},"* ]]
}

log=$work/figures.tsv
one_pair() { # kind, round, first (ref|bb), store line
  local kind=$1 round=$2 first=$3 name refargs bbargs r b
  IFS='|' read -r name refargs bbargs <<<"$4"
  local figures='$1 == "per_op_us" {w = $2} $1 == "cpu_us_per_op" {c = $2} END {print w "\t" c}'
  if [ "$kind" = reads ]; then
    # shellcheck disable=SC2086
    run_ref() { "$ref" read $refargs "$READS" 5 | awk "$figures"; }
    # shellcheck disable=SC2086
    run_bb() { "$bb" run $bbargs --random --count "$READS" --repeat 5 --warmup 1 --json "$work/r.json" >/dev/null; }
  else
    # shellcheck disable=SC2086
    run_ref() { "$ref" write $refargs "$WRITES" 1 | awk "$figures"; }
    # shellcheck disable=SC2086
    run_bb() { "$bb" run $bbargs --update --random --count "$WRITES" --repeat 1 --warmup 1 --json "$work/r.json" >/dev/null; }
  fi
  # The loop's median per-op time, the median run's CPU time per op, and
  # the steady figure (the loop, its commits and the work deferred to the
  # close: what advise ranks).
  loop() {
    jq -r '.experiments[0] | [.summary.loop_per_op_us.median,
      ([.runs[] | (.os.user_cpu_us + .os.system_cpu_us) / .ops] | sort | .[length / 2 | floor]),
      (.summary.steady_per_op_us // .summary.loop_per_op_us).median] | @tsv' "$work/r.json"
  }
  if [ "$first" = ref ]; then r=$(run_ref); run_bb; b=$(loop); else run_bb; b=$(loop); r=$(run_ref); fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$name" "$round" "$r" "$b" >>"$log"
  printf '%-7s round %d  %-26s reference %s  blobbench %s (us per op, us of CPU per op)\n' \
    "$kind" "$round" "$name" "$r" "$b" | tr '\t' ' ' >&2
}
rounds() { # kind, stores...
  local kind=$1 i
  shift
  for round in $(seq 1 "$ROUNDS"); do
    i=0
    for s in "$@"; do
      i=$((i + 1))
      selected "$s" || continue
      if (((round + i) % 2)); then one_pair "$kind" "$round" bb "$s"; else one_pair "$kind" "$round" ref "$s"; fi
    done
  done
}
: >"$log"
[ "$what" = writes ] || rounds reads "${reads[@]}"
[ "$what" = reads ] || rounds writes "${writes[@]}"

python3 - "$log" "$READS" "$WRITES" "$PER_WRITE" <<'EOF'
import statistics, sys
from collections import OrderedDict
path, reads, writes, per_write = sys.argv[1:]
rows = OrderedDict()
for line in open(path):
    kind, name, _, rw, rc, bw, bc, bs = line.rstrip("\n").split("\t")
    rows.setdefault((kind, name), []).append(tuple(map(float, (rw, rc, bw, bc, bs))))
med = statistics.median
print(f"Loop-only us per op, median of {max(len(v) for v in rows.values())} alternated rounds; "
      f"reads: {reads} random 10 KB reads x 5 sessions after 1 warm-up; "
      f"writes: {writes} durable commits per session ({per_write}), after 1 warm-up. "
      "CPU: user + system time per op (the median session or run), which load on the machine disturbs least; "
      "for writes blobbench's covers its whole run (setup opens the engine, close syncs), the reference's the loop only.")
print()
print("Steady (writes): blobbench's loop with its commits and the work its writes deferred to the close "
      "(SQLite's closing checkpoint, fjall's flush at close), the figure advise ranks, against the same reference loop, "
      "whose own checkpoints fall inside it.")
print()
print("| | store | reference | blobbench | blobbench / reference (paired median, range) | "
      "blobbench steady, its ratio (paired median, range) | CPU per op: reference, blobbench, ratio |")
print("|---|---|---|---|---|---|---|")
def ratio(pairs):
    r = sorted(pairs)
    flag = "" if 1 / 1.1 <= med(r) <= 1.1 else " **off by more than 10%**"
    return f"{med(r):.3f} ({r[0]:.3f}-{r[-1]:.3f}){flag}"
for (kind, name), v in rows.items():
    cpu = med([x[3] / x[1] for x in v if x[1] > 0] or [float("nan")])
    steady = "" if kind == "reads" else f"{med([x[4] for x in v]):.2f}, {ratio(x[4] / x[0] for x in v)}"
    print(f"| {kind} | {name} | {med([x[0] for x in v]):.2f} | {med([x[2] for x in v]):.2f} | "
          f"{ratio(x[2] / x[0] for x in v)} | {steady} | "
          f"{med([x[1] for x in v]):.2f}, {med([x[3] for x in v]):.2f}, {cpu:.3f} |")
EOF
