#!/usr/bin/env bash
# The advise page looked at as a reader sees it: `advise --quick --count
# 2000`, then headless Chromium screenshots of index.html at 1280 px (a
# desktop) and 390 px (a phone) wide. Open the PNGs and check that nothing
# is cut off: wide tables and charts scroll inside their own box, text
# wraps. Chromium is not a test dependency (Debian: apt-get install chromium).
#
#   bench/screenshot-advise.sh [OUT_DIR] [HEIGHT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/blobbench-shots.XXXXXX")}
mkdir -p "$out"
height=${2:-6000}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    echo "no chromium on PATH (Debian: apt-get install chromium)" >&2
    exit 1
fi
cargo build --release --quiet
target=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d "${TMPDIR:-/tmp}/blobbench-advise.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$target/release/blobbench" advise --quick --count 2000 --workdir "$work" --out "$out/page" --force >/dev/null
for width in 1280 390; do
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --screenshot="$out/advise-$width.png" --window-size="$width,$height" \
        "file://$out/page/index.html" 2>/dev/null
done
echo "page: $out/page/index.html"
echo "screenshots: $out/advise-1280.png $out/advise-390.png"
