#!/bin/bash
# The S3 engine against a bare loop of its own client crates (rusty-s3 +
# ureq), GET and PUT per op, 6 alternated rounds on one throwaway Swift
# cluster (examples/s3_parity.rs); then export speed, 10k x 10 KB, with 1
# and 3 replicas, and single-client run figures. Release build; needs
# Swift's packages (README's set-up line). WORK defaults to /tmp/s3bench.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --example s3_parity
R=$(pwd)/target/release/blobbench
P=$(pwd)/target/release/examples/s3_parity
W=${WORK:-/tmp/s3bench}
mkdir -p "$W"
[ -f "$W/k10.db" ] || $R init "$W/k10.db" --count 10000 --size 10240
for n in 1 3; do
  rm -rf "$W/k10r$n.s3"
  echo "== export, $n replica(s)"
  $R export --engine s3 --s3-replicas "$n" "$W/k10.db" "$W/k10r$n.s3"
done
echo "== parity, 1 replica (6 rounds, 300 ops per arm and round)"
$P "$W/k10r1.s3" 6 300
for n in 1 3; do
  echo "== run, $n replica(s): GET, PUT (one client), round trip"
  $R run "$W/k10r$n.s3" --count 500 --random --repeat 3 | grep -E "per (read|write)|timer"
  $R run "$W/k10r$n.s3" --update --count 200 --random --repeat 3 | grep -E "per (read|write)|timer"
  $R run "$W/k10r$n.s3" --round-trip --count 500 --repeat 3 | grep -E "per (read|write)"
done
