#!/usr/bin/env bash
# init --from DIR against cp -r of the same tree: 5 rounds, each copy's
# wall time with its flush to disk (init fsyncs its database; cp gets a
# sync so both pay for the disk), then export of the database to a flat
# directory. usage: bench/from-dir.sh TREE WORKDIR [BLOBBENCH]
set -euo pipefail
tree=$1 work=$2 bb=${3:-target/release/blobbench}
mkdir -p "$work"
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
for round in 1 2 3 4 5; do
  rm -rf "$work"/db "$work"/db.manifest.tsv "$work"/cp "$work"/flat; sync
  cat $(find "$tree" -type f) >/dev/null  # same warm source cache for both
  a=$(t "$bb" init "$work"/db --from "$tree")
  b=$(t bash -c "cp -r '$tree' '$work/cp' && sync -f '$work'")
  c=$(t bash -c "'$bb' export '$work/db' '$work/flat' && sync -f '$work'")
  echo "round $round: init --from ${a}s  cp -r + sync ${b}s  export flat + sync ${c}s"
done
