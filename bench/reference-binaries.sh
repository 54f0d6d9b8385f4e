# Sourced by the reference-loop scripts: the blobbench binary ($bb) and the
# independent reference loops ($ref), built here unless BLOBBENCH and
# REFERENCE name them, and $root, the repository.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
if [ -z "${BLOBBENCH:-}" ] || [ -z "${REFERENCE:-}" ]; then
  (cd "$root" && cargo build --release --quiet --locked && cargo build --release --quiet --locked --example reference_loops)
fi
bb=${BLOBBENCH:-$target/release/blobbench}
ref=${REFERENCE:-$target/release/examples/reference_loops}
