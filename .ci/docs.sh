#!/usr/bin/env bash
# The crates' docs, without warnings, in the two ways a reader gets them:
#  - every feature but `log` and `defmt` (they exclude each other: `--all-features` cannot build);
#  - as docs.rs builds each crate: the features of its `[package.metadata.docs.rs]`, `--cfg docsrs`.
# The feature lists are read from the manifests (`cargo metadata`), so the check is of what ships.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

step() { printf '\n==> %s\n' "$*"; }

# features MODE [PACKAGE]: `all` gives every feature of the two crates but default/log/defmt, as
# `package/feature`; `docsrs PACKAGE` gives that package's docs.rs features.
features() {
    cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
mode, pkg = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
packages = {p["name"]: p for p in json.load(sys.stdin)["packages"]}
if mode == "all":
    print(",".join(f"{name}/{f}" for name in ("mcu-mcp-core", "mcp-hal")
                   for f in packages[name]["features"] if f not in ("default", "log", "defmt")))
else:
    print(",".join(packages[pkg]["metadata"]["docs"]["rs"]["features"]))
' "$@"
}

all=$(features all)
step "cargo doc, every feature but log and defmt: $all"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p mcu-mcp-core -p mcp-hal --features "$all"

for package in mcu-mcp-core mcp-hal; do
    docsrs=$(features docsrs "$package")
    step "cargo doc as docs.rs builds $package: --cfg docsrs, features $docsrs"
    RUSTDOCFLAGS="--cfg docsrs -D warnings" cargo doc --no-deps -p "$package" --features "$docsrs"
done
