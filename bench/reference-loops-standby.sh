#!/usr/bin/env bash
# PostgreSQL with a synchronous standby (issue 48): blobbench's durable
# write against an independent loop on the same cluster. The script starts
# a throwaway primary and a standby made by `pg_basebackup -R` (as the
# postgres user when run as root), streaming over a Unix socket, with
# `synchronous_standby_names = '*'` and `synchronous_commit = on` as
# blobbench's `postgres-sync-standby` layout has them, so every commit
# returns once the standby has flushed it; both are stopped and removed
# at exit. blobbench reaches it as a server the user runs (`--pg URL`):
# its own replicated layout is not reachable from `run`.
#
#   bench/reference-loops-standby.sh
#
# kvtest's dataset (COUNT, default 10000 blobs of 10 KB) exported to a
# table on the primary. In each of ROUNDS (6) rounds, the side that goes
# first alternating:
# - one client: `reference_loops write postgres URL WRITES 1` (WRITES,
#   300, autocommitted bytea UPDATEs after one warm-up session) against
#   `blobbench run --update --random --commit-every 1 --kv-sync durable`
#   (the same count, after one warm-up run), each one's loop time per
#   write;
# - for each N in CLIENTS (default "1 16"): `reference_loops standby URL N
#   WINDOW_MS` (checks that the server's commits wait for a synchronous
#   standby, then N threads of durable writes for one window, WINDOW_MS
#   2000) against `blobbench run --clients N --mix 0:100 --commit-every 1`
#   (the same window, after one warm-up window), each one's ops/s and
#   write p50.
# It prints the medians over the rounds and the paired ratios (target:
# within 10%).
set -euo pipefail
ROUNDS=${ROUNDS:-6}
COUNT=${COUNT:-10000}
WRITES=${WRITES:-300}
CLIENTS=${CLIENTS:-1 16}
WINDOW_MS=${WINDOW_MS:-2000}
# shellcheck source=bench/reference-binaries.sh
. "$(dirname "$0")/reference-binaries.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/refstandby.XXXXXX")
chmod 755 "$work"
# The directory pg_ctl really lives in (it holds pg_basebackup and psql
# too, which a symlink's directory may not).
pgbin=$(dirname "$(readlink -f "$(command -v pg_ctl || ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -1)")")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  for node in standby primary; do
    [ -f "$work/pg/$node/postmaster.pid" ] && as_pg "$pgbin/pg_ctl" stop -D "$work/pg/$node" -m immediate -s -w || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

sock=$work/pg
mkdir -p "$sock"
[ "$(id -u)" = 0 ] && chown postgres "$sock"
as_pg "$pgbin/initdb" -D "$sock/primary" -U blobbench -A trust -E UTF8 --locale=C -N >/dev/null
common="-c listen_addresses='' -c unix_socket_directories='$sock' -c fsync=on -c synchronous_commit=on"
as_pg "$pgbin/pg_ctl" start -D "$sock/primary" -w -s -l "$sock/primary.log" -t 60 \
  -o "$common -c port=5432 -c wal_level=replica -c synchronous_standby_names='*'"
as_pg "$pgbin/pg_basebackup" -h "$sock" -p 5432 -U blobbench -D "$sock/standby" -R -X stream -c fast
as_pg "$pgbin/pg_ctl" start -D "$sock/standby" -w -s -l "$sock/standby.log" -t 60 -o "$common -c port=5433"
url="postgresql://blobbench@/postgres?host=$sock&port=5432&connect_timeout=5"
state=
for _ in $(seq 1 60); do
  state=$("$pgbin/psql" -h "$sock" -p 5432 -U blobbench -d postgres -Atc \
    "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null || true)
  [ "$state" = sync ] && break
  sleep 1
done
[ "$state" = sync ] || { echo "the standby is not streaming as synchronous (pg_stat_replication: '$state')" >&2; exit 1; }
echo "primary and synchronous standby up in $sock; building $COUNT blobs of 10 KB" >&2
"$bb" init "$work/kv.db" --count "$COUNT" --size 10k >/dev/null
"$bb" export --engine postgres "$work/kv.db" "$work/pgds" --pg "$url" >/dev/null
export PG_TABLE
PG_TABLE=$(jq -r .table "$work/pgds/blobbench-postgres.json")

log=$work/standby.tsv
: >"$log"
one_client_ref() { "$ref" write postgres "$url" "$WRITES" 1 | awk '$1 == "per_op_us" {print $2}'; }
one_client_bb() {
  "$bb" run "$work/pgds" --pg "$url" --kv-sync durable --update --random --commit-every 1 --count "$WRITES" \
    --repeat 1 --warmup 1 --json "$work/r.json" >/dev/null
  jq -r '.experiments[0].summary.loop_per_op_us.median' "$work/r.json"
}
at_n() { awk '$1 == "ops_per_s" {o = $2} $1 == "write_p50_us" {p = $2} END {print o "\t" p}'; }
n_ref() { "$ref" standby "$url" "$1" "$WINDOW_MS" threads | tee "$work/standby.out" | at_n; }
n_bb() {
  "$bb" run "$work/pgds" --pg "$url" --kv-sync durable --clients "$1" --mix 0:100 --commit-every 1 \
    --window "${WINDOW_MS}ms" --warmup 1 --repeat 1 | at_n
}
for round in $(seq 1 "$ROUNDS"); do
  # A side that fails is "-" for the round, left out of the ratios.
  if ((round % 2)); then b=$(one_client_bb || true); r=$(one_client_ref || true); else r=$(one_client_ref || true); b=$(one_client_bb || true); fi
  printf 'write\t1\t%s\t%s\t-\t%s\t-\n' "$round" "${r:--}" "${b:--}" >>"$log"
  echo "round $round  one-client loop us per write: reference $r  blobbench $b" >&2
  i=0
  for n in $CLIENTS; do
    i=$((i + 1))
    if (((round + i) % 2)); then b=$(n_bb "$n" || true); r=$(n_ref "$n" || true); else r=$(n_ref "$n" || true); b=$(n_bb "$n" || true); fi
    printf 'clients\t%s\t%s\t%s\t%s\n' "$n" "$round" "${r:-$'-\t-'}" "${b:-$'-\t-'}" >>"$log"
    echo "round $round  $n clients ops/s, write p50: reference $r  blobbench $b" | tr '\t' ' ' >&2
  done
done
grep '^# standby' "$work/standby.out" || true
python3 - "$log" "$COUNT" "$WRITES" "$WINDOW_MS" "$(nproc)" <<'EOF'
import statistics, sys
from collections import OrderedDict
path, blobs, writes, window, cores = sys.argv[1:]
rows = OrderedDict()
for line in open(path):
    what, n, _, r1, r2, b1, b2 = (line.rstrip("\n").split("\t") + ["-"] * 7)[:7]
    num = lambda x: None if x in ("-", "") else float(x)
    rows.setdefault((what, int(n)), []).append((num(r1), num(r2), num(b1), num(b2)))
med = statistics.median
def ratio(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return "-"
    flag = "" if 1 / 1.1 <= med(xs) <= 1.1 else " **off by more than 10%**"
    return f"{med(xs):.3f} ({xs[0]:.3f}-{xs[-1]:.3f}){flag}"
def fig(xs):
    xs = [x for x in xs if x is not None]
    return f"{med(xs):.0f} ({min(xs):.0f}-{max(xs):.0f})" if xs else "-"
print(f"PostgreSQL, primary + synchronous standby (Unix socket), durable bytea overwrites of 10 KB ({blobs} blobs), "
      f"{cores} cores; median over {max(len(v) for v in rows.values())} paired rounds, min-max beside.")
print()
print("| what | N | reference | blobbench | blobbench / reference (paired: time per write) | write p50 us ref / bb |")
print("|---|---|---|---|---|---|")
for (what, n), v in rows.items():
    if what == "write":
        print(f"| loop us per write ({writes} commits) | 1 | {fig([x[0] for x in v])} | {fig([x[2] for x in v])} | "
              f"{ratio(x[2] / x[0] for x in v if x[0] and x[2])} | - |")
    else:
        print(f"| ops/s over one {window} ms window | {n} | {fig([x[0] for x in v])} | {fig([x[2] for x in v])} | "
              f"{ratio(x[0] / x[2] for x in v if x[0] and x[2])} | "
              f"{fig([x[1] for x in v])} / {fig([x[3] for x in v])} |")
EOF
