#!/usr/bin/env bash
# The footprint report: flash share of mcp-core + mcp-hal in the release esp32-serial
# firmware (ESP32-C3), the engine's static RAM, and the stack and heap the qemu-riscv firmware
# measures on itself during a 1000-request session and a JSON nesting sweep, next to the same
# firmware's async build and the custom-board firmware; and what resources,
# subscriptions and confirmation cost (qemu-riscv with and without them).
#
#   examples/footprint.sh            # print the report (Markdown)
#   examples/footprint.sh --write    # and rewrite docs/FOOTPRINT.md
#
# Needs: the riscv32imc target, cargo-bloat, llvm-tools, qemu-system-riscv32, python3 (installed
# by .ci/firmware.sh; this script installs cargo-bloat and llvm-tools itself if missing).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
write=()
if [[ "${1:-}" == "--write" ]]; then write=(--write "$root/docs/FOOTPRINT.md"); fi

command -v cargo-bloat >/dev/null || cargo install cargo-bloat --locked
rustup component add llvm-tools >/dev/null 2>&1 || true
llvm_bin="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# cargo reads .cargo/config.toml (the target) from the current directory.
serial="$root/examples/esp32-serial"
elf="$serial/target/riscv32imc-unknown-none-elf/release/esp32-serial"
# Without MCP first (same output path: keep a copy), then the real firmware, measured by cargo bloat.
(cd "$serial" && cargo build --release --quiet --features _footprint-baseline)
cp "$elf" "$tmp/baseline.elf"
(cd "$serial" && cargo build --release --quiet && cargo bloat --release --crates -n 40) > "$tmp/bloat.txt"
qemu="$root/examples/qemu-riscv"
(cd "$qemu" && cargo build --release --quiet \
    && cargo build --release --quiet --features async --target-dir target/async)
(cd "$root/examples/custom-board" && cargo build --release --quiet)
# Resources, subscriptions and confirmation: qemu-riscv without the features
# `resources` and `confirm`, and with each on its own and used (`_footprint-use`).
qelf() { echo "$qemu/target/footprint-$1/riscv32imc-unknown-none-elf/release/qemu-riscv"; }
(cd "$qemu" \
    && cargo build --release --quiet --no-default-features --target-dir target/footprint-none \
    && cargo build --release --quiet --no-default-features --features resources,_footprint-use \
        --target-dir target/footprint-resources \
    && cargo build --release --quiet --no-default-features --features confirm,_footprint-use \
        --target-dir target/footprint-confirm)

python3 "$root/examples/footprint.py" \
    --bloat "$tmp/bloat.txt" \
    --elf "$elf" --baseline-elf "$tmp/baseline.elf" \
    --qemu-elf "$qemu/target/riscv32imc-unknown-none-elf/release/qemu-riscv" \
    --qemu-async-elf "$qemu/target/async/riscv32imc-unknown-none-elf/release/qemu-riscv" \
    --custom-elf "$root/examples/custom-board/target/riscv32imc-unknown-none-elf/release/custom-board" \
    --qemu-none-elf "$(qelf none)" --qemu-resources-elf "$(qelf resources)" \
    --qemu-confirm-elf "$(qelf confirm)" \
    --wifi-dir "$root/examples/esp32-wifi/target/footprint" \
    --llvm-bin "$llvm_bin" "${write[@]}"
