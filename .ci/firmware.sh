#!/usr/bin/env bash
# Firmware CI: builds the ESP32 firmwares, boots the QEMU firmware and drives it with the
# official MCP Python SDK client, and prints the footprint table.
#
# Runs from the repository root on a fresh machine (CI=true, no stdin) and installs what it needs:
# rustup targets and llvm-tools, qemu-system-misc (apt), the MCP Python SDK (pip), cargo-bloat.
# Each firmware is its own cargo workspace with its own target directory; they build one at a time
# (an ESP build is heavy: a 0.75-1 GB target directory). The firmwares' Cargo.lock files are
# committed but not enforced with --locked: the engine crates are path dependencies, and a new
# dependency of theirs must not break the firmware builds.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
started=$(date +%s)

step() { printf '\n==> [%4ss] %s\n' "$(($(date +%s) - started))" "$*"; }

step "toolchain: riscv32imc (ESP32-C3, QEMU) and riscv32imac (ESP32-C6) targets, llvm-tools"
rustup target add riscv32imc-unknown-none-elf riscv32imac-unknown-none-elf
rustup component add llvm-tools

step "QEMU (qemu-system-riscv32)"
if ! command -v qemu-system-riscv32 >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends qemu-system-misc
fi
qemu-system-riscv32 --version | head -1

step "MCP Python SDK (mcp==2.3.0)"
python3 -m pip install -q --disable-pip-version-check mcp==2.3.0
python3 -c 'import importlib.metadata as m; print("mcp", m.version("mcp"))'

step "cargo-bloat"
command -v cargo-bloat >/dev/null || cargo install cargo-bloat --locked --quiet
cargo bloat --version

step "esp32-serial: ESP32-C3 (riscv32imc), release"
(cd examples/esp32-serial && cargo build --release)

step "esp32-serial: ESP32-C6 (riscv32imac), release, same source"
(cd examples/esp32-serial && cargo build --release --no-default-features --features esp32c6 \
    --target riscv32imac-unknown-none-elf)

step "esp32-wifi: ESP32-C3, release: Streamable HTTP server (also with the mDNS responder), the xiaozhi WebSocket client, MCP over MQTT, the xiaozhi MCP endpoint"
# The ELFs the footprint report compares (TLS's cost) are kept in target/footprint.
wifi_elf=examples/esp32-wifi/target/riscv32imc-unknown-none-elf/release/esp32-wifi
keep() { mkdir -p examples/esp32-wifi/target/footprint && cp "$wifi_elf" "examples/esp32-wifi/target/footprint/$1.elf"; }
(cd examples/esp32-wifi && cargo build --release)
keep default
(cd examples/esp32-wifi && cargo build --release --features mdns)
(cd examples/esp32-wifi && cargo build --release --features xiaozhi)
keep xiaozhi
(cd examples/esp32-wifi && cargo build --release --features mqtt)
keep mqtt
(cd examples/esp32-wifi && cargo build --release --features endpoint)
keep endpoint

step "esp32-wifi: the xiaozhi OTA/config check and host names (DNS) configured at build time"
(cd examples/esp32-wifi \
    && XIAOZHI_OTA_URL=http://ota.example.lan:8003/xiaozhi/ota/ cargo build --release --features xiaozhi \
    && MQTT_BROKER=mqtt://broker.example.lan:1883 cargo build --release --features mqtt)

step "esp32-wifi: an MCP endpoint URL (its token percent-encoded) and the tools the link offers at build time; a ws:// URL beyond the LAN refused"
(cd examples/esp32-wifi \
    && MCP_ENDPOINT_URL='ws://192.168.1.10:8004/mcp_endpoint/mcp/?token=Zk9v%2BYmFy%2FcXV4%3D' \
       MCP_ENDPOINT_TOOLS='self.relay.*,self.get_device_status' cargo build --release --features endpoint)
if (cd examples/esp32-wifi && MCP_ENDPOINT_URL='ws://api.example.com/mcp/?token=x' \
        cargo build --release --features endpoint) >/tmp/endpoint-in-clear.log 2>&1; then
    echo "a ws:// MCP endpoint URL beyond the LAN was accepted" >&2
    exit 1
fi
grep -q "would send the token in clear" /tmp/endpoint-in-clear.log

step "esp32-wifi --features tls: wss:// (and an https:// OTA check) for xiaozhi, mqtts:// for MQTT, wss:// to an MCP endpoint, roots compiled in"
(cd examples/esp32-wifi && cargo build --release --features xiaozhi,tls)
keep xiaozhi-tls
(cd examples/esp32-wifi && cargo build --release --features mqtt,tls)
keep mqtt-tls
(cd examples/esp32-wifi && cargo build --release --features endpoint,tls)
keep endpoint-tls
(cd examples/esp32-wifi \
    && XIAOZHI_OTA_URL=https://ota.example.com/xiaozhi/ota/ cargo build --release --features xiaozhi,tls \
    && MQTT_BROKER=mqtts://broker.example.com:8883 cargo build --release --features mqtt,tls \
    && MCP_ENDPOINT_URL='wss://api.xiaozhi.me/mcp/?token=eyJhbGciOiJIUzI1NiJ9.e30.c2ln' \
       cargo build --release --features endpoint,tls)

step "qemu-riscv: build, then the Python SDK client against examples/qemu-riscv/run"
(cd examples/qemu-riscv && cargo build --release)
python3 examples/qemu-riscv/tests/client_session.py </dev/null

step "qemu-riscv --async: the same session through Server::handle_async and the async kits"
# Build first: examples/qemu-riscv/run builds on demand, but a cold build on 2 cores outlasts the
# client's initialize timeout (the CI run of fe2bfe2 failed that way).
(cd examples/qemu-riscv && cargo build --release --features async --target-dir target/async)
python3 examples/qemu-riscv/tests/client_session.py --async </dev/null

step "custom-board: public API only, async, no allocator: its host test (mcp_core::testing), the build, then the Python SDK against it"
host=$(rustc -vV | sed -n 's/^host: //p')
(cd examples/custom-board && cargo test --target "$host" && cargo clippy --target "$host" --all-targets -- -D warnings)
(cd examples/custom-board && cargo build --release)
python3 examples/custom-board/tests/session.py </dev/null

step "custom-board --no-codec: nothing answers on the I2C bus; the firmware serves, the codec tools answer an error naming the chip (bounded in time)"
(cd examples/custom-board && cargo build --release --features no-codec --target-dir target/no-codec)
python3 examples/custom-board/tests/session.py --no-codec </dev/null

step "footprint (examples/footprint.sh; committed as docs/FOOTPRINT.md)"
examples/footprint.sh </dev/null

step "done in $(($(date +%s) - started)) s"
