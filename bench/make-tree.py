#!/usr/bin/env python3
"""A tree of real-looking files for `init --from`: N files (default 10000)
with lognormal sizes (median 30 KB, sigma 1.0: thumbnails and documents with
a long tail, capped at 20 MB), random (incompressible, like JPEG) content,
in a year/month/day layout. Fixed seed, so the same tree every time.

usage: bench/make-tree.py DIR [N] [MEDIAN_BYTES] [SIGMA]
"""
import os
import random
import sys

def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    median = float(sys.argv[3]) if len(sys.argv) > 3 else 30000
    sigma = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
    rng = random.Random(42)
    total = 0
    for i in range(n):
        year, month, day = 2019 + i % 5, 1 + (i // 5) % 12, 1 + (i // 60) % 28
        d = os.path.join(root, str(year), f"{month:02d}", f"{day:02d}")
        os.makedirs(d, exist_ok=True)
        size = max(1, min(20_000_000, int(rng.lognormvariate(0, sigma) * median)))
        with open(os.path.join(d, f"IMG_{i:05d}.jpg"), "wb") as f:
            f.write(rng.randbytes(size))
        total += size
    print(f"{n} files, {total} bytes, in {root}")

main()
