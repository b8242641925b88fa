#!/usr/bin/env bash
# CI smoke run of the dispatch-path benches (issue 6), on a fresh machine with rustup's stable
# toolchain; nothing else is needed. Every scenario checks its responses once before it is timed,
# so a wrong answer fails the run. No thresholds: timings on shared CI machines are noise (the
# numbers that count are in BENCHMARKS.md). Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
start=$(date +%s)

step() { printf '\n==> %s\n' "$*"; }

step "criterion, quick mode (every scenario, ours and rmcp)"
cargo bench -p mcp-benches -- --quick

step "dispatch-loop: every scenario, 100 steps (same build profile, so nothing is rebuilt)"
cargo build --profile bench -p mcp-benches --bin dispatch-loop
loop=${CARGO_TARGET_DIR:-target}/release/dispatch-loop
"$loop" --list
for scenario in $("$loop" --list | awk '{print $1}'); do
    "$loop" "$scenario" 100
done

step "done in $(($(date +%s) - start)) s"
