#!/usr/bin/env bash
# device-sim's --ui page in headless Chromium: Debian's chromium driven by playwright-core (no
# browser download), over HTTP and over MQTT. Installs what it needs: the chromium and mosquitto
# packages (apt, when missing), playwright-core and mqtt (the test's MQTT client) at pinned
# versions into a scratch directory (default target/ui, override with UI_DIR). Screenshots land
# in that directory (page.png, page-after.png, page-mqtt.png): the CI artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

PLAYWRIGHT_VERSION=1.64.1
MQTT_JS_VERSION=5.16.0

ROOT=$PWD
SCRATCH=${UI_DIR:-$ROOT/target/ui}
mkdir -p "$SCRATCH/node"
SCRATCH=$(cd "$SCRATCH" && pwd)
started=$(date +%s)
step() { printf '\n==> [%ss] %s\n' "$(($(date +%s) - started))" "$*"; }

step "chromium (Debian package)"
if ! command -v chromium >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
chromium --version 2>/dev/null | head -1

step "mosquitto (Debian package; the test starts its own on a loopback port)"
.ci/mqtt.sh install
MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)

step "node: playwright-core@$PLAYWRIGHT_VERSION, mqtt@$MQTT_JS_VERSION"
command -v node >/dev/null || { echo "ui: node is required (Node 20+)" >&2; exit 2; }
[ -f "$SCRATCH/node/package.json" ] || echo '{"name":"ui-test","private":true}' >"$SCRATCH/node/package.json"
npm install --prefix "$SCRATCH/node" --save-exact --no-audit --no-fund --loglevel=error \
    "playwright-core@$PLAYWRIGHT_VERSION" "mqtt@$MQTT_JS_VERSION" </dev/null

step "device-sim: one build"
cargo build -p device-sim --locked
TARGET_DIR=${CARGO_TARGET_DIR:-target}
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR=$ROOT/$TARGET_DIR ;; esac

step "the page in headless Chromium"
rm -f "$SCRATCH"/page*.png
UI_NODE_DIR=$SCRATCH/node DEVICE_SIM=$TARGET_DIR/debug/device-sim UI_ARTIFACTS=$SCRATCH MOSQUITTO=$MOSQUITTO \
    timeout --kill-after=10 120 node tests/ui/page.mjs </dev/null
ls -l "$SCRATCH"/page*.png
step "done ($(($(date +%s) - started)) s)"
