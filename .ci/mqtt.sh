#!/usr/bin/env bash
# MCP over MQTT. `install`: the mosquitto binary that the fleet tests and mqtt-device's
# test (the device loop of examples/esp32-wifi --features mqtt) need; .ci/run calls it before
# `cargo test --workspace` (Debian package; the tests start their own broker from a config file
# on an ephemeral loopback port, never the system service). `bench`: the fleet benchmark's short
# mode (10 and 100 simulated devices on a broker of its own; BENCHMARKS.md has the full run). Run
# from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

case "${1:-}" in
    install)
        if ! command -v mosquitto >/dev/null 2>&1 && [ ! -x /usr/sbin/mosquitto ]; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends mosquitto >/dev/null
        fi
        "$(command -v mosquitto || echo /usr/sbin/mosquitto)" -h | head -n 1 || true
        ;;
    bench)
        cargo run --release -q -p mqtt-fleet --bin fleet-bench -- --short
        ;;
    *)
        echo "usage: .ci/mqtt.sh install|bench" >&2
        exit 2
        ;;
esac
