#!/bin/bash
# Needs: k10.db/m1.db (init --count 5000 --size 10k / --count 200 --size 1m), their
# exports (k10r, k10lo, m1r, m1lo with --pg URL; .dir; .lmdb) and k10w.db/m1w.db copies
# for the SQLite writes, in /tmp/pgm, with a PostgreSQL server on the URL below.
# The 10 KB / 1 MB table: median us/op (kvtest's total) of 3 timed runs, one warm-up.
R=${BLOBBENCH:-$(pwd)/target/release/blobbench}
U=${PG_URL:?set PG_URL to the server, e.g. postgresql://blobbench@/blobbench?host=DIR}
cd "${WORK:-/tmp/pgm}"
med() { grep -E "us per (read|write) \(kvtest\)" | awk '{print $5" ["$7".."$8"]"}'; }
for sz in k10 m1; do
  if [ $sz = k10 ]; then N=5000; W=300; else N=200; W=60; fi
  echo "== $sz reads (count $N random)"
  echo "bytea  $($R run ${sz}r --pg "$U" --count $N --random --repeat 3 | med)"
  echo "lo     $($R run ${sz}lo --pg "$U" --count $N --random --repeat 3 | med)"
  echo "sqlite $($R run $sz.db --blob-api --mmap 1000000000 --count $N --random --repeat 3 | med)"
  echo "files  $($R run $sz.dir --file-read posix --count $N --random --repeat 3 | med)"
  echo "lmdb   $($R run $sz.lmdb --count $N --random --repeat 3 | med)"
  for sync in fast durable; do
    echo "== $sz $sync writes (count $W random, one transaction per write)"
    echo "bytea  $($R run ${sz}r --pg "$U" --update --multitrans --kv-sync $sync --count $W --random --repeat 3 | med)"
    echo "lo     $($R run ${sz}lo --pg "$U" --update --multitrans --kv-sync $sync --count $W --random --repeat 3 | med)"
    if [ $sync = durable ]; then S=full; F="--fsync"; else S=off; F=""; fi
    echo "sqlite $($R run ${sz}w.db --blob-api --update --multitrans --jmode wal --sync $S --count $W --random --repeat 3 | med)"
    echo "files  $($R run $sz.dir --update --file-write replace $F --count $W --random --repeat 3 | med)"
    echo "lmdb   $($R run $sz.lmdb --update --multitrans --kv-sync $sync --count $W --random --repeat 3 | med)"
  done
done
