#!/bin/bash
# blobbench export --engine postgres against psql \copy of the same rows,
# into the same server, interleaved (ROUNDS rounds, each starting from a
# CHECKPOINT with neither table present). Prints seconds per export.
# Needs: a server on PG_URL (user may create tables), psql on PATH or in
# /usr/lib/postgresql/*/bin, and WORK holding c100k.db
# (blobbench init c100k.db --count 100000 --size 10000). BLOBBENCH_B, if
# set, is a second blobbench binary timed in the same rounds (an A/B).
set -euo pipefail
R=${BLOBBENCH:-$(pwd)/target/release/blobbench}
U=${PG_URL:?set PG_URL to the server, e.g. postgresql://blobbench@/blobbench?host=DIR}
PSQL=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql | tail -1)
cd "${WORK:-/tmp/pgx}"
q() { "$PSQL" -X -q -d "$U" "$@"; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
reset() {
  rm -rf c100k
  q -c "DROP TABLE IF EXISTS blobbench_c100k" -c "DROP TABLE IF EXISTS copyt" -c CHECKPOINT
}
if [ ! -f rows.bin ]; then
  reset
  "$R" export --engine postgres c100k.db c100k --pg "$U" >/dev/null
  q -c "\\copy blobbench_c100k (k, v) TO 'rows.bin' (FORMAT binary)"
fi
psql_copy() {
  q -c "CREATE TABLE copyt (k bigint PRIMARY KEY, v bytea NOT NULL)" \
    -c BEGIN -c "\\copy copyt (k, v) FROM 'rows.bin' (FORMAT binary)" -c COMMIT -c "ANALYZE copyt"
}
for round in $(seq 1 "${ROUNDS:-3}"); do
  reset
  b=$(secs "$R" export --engine postgres c100k.db c100k --pg "$U")
  if [ -n "${BLOBBENCH_B:-}" ]; then
    reset
    b2=$(secs "$BLOBBENCH_B" export --engine postgres c100k.db c100k --pg "$U")
    b="${b} s, B ${b2}"
  fi
  reset
  p=$(secs psql_copy)
  echo "round $round: blobbench export ${b} s, psql \\copy ${p} s"
done
reset
