#!/usr/bin/env bash
# CI smoke run of the dispatch-path benches, on a fresh machine with rustup's stable
# toolchain, then the instruction-count check. Every scenario checks its responses once
# before it is timed, so a wrong answer fails the run. Timings get no thresholds: on shared CI
# machines they are noise. Instruction counts repeat exactly, so they do: the last step fails
# when a scenario of this engine needs more than its cap, an absolute number of instructions in
# the third column of benches/callgrind-figures.md (not a margin over the last figure, which could
# ratchet up a little with each commit), or has no cap. valgrind is installed with apt-get when
# missing. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# Compile time decides whether this fits 3 minutes on 2 cores. Measured from scratch (fresh
# CARGO_HOME and target directory): at the bench profile's opt-level 3 the build alone needs about
# 6.5 CPU-minutes (rmcp, tokio and criterion, and rmcp's generic service code instantiated in
# mcp-benches), so at least 3.3 minutes of wall time on 2 cores; at opt-level 0 the whole script
# took 138 s (190 CPU-seconds). A smoke run checks that the benches build, that every scenario
# answers correctly and that criterion, the tables and dispatch-loop work; its timings are not
# used, so it builds unoptimized unless the caller says otherwise
# (CARGO_PROFILE_BENCH_OPT_LEVEL=3 .ci/bench.sh gives the real profile).
export CARGO_PROFILE_BENCH_OPT_LEVEL="${CARGO_PROFILE_BENCH_OPT_LEVEL:-0}"
start=$(date +%s)

step() { printf '\n==> %s\n' "$*"; }

step "criterion, quick mode (every scenario, ours and rmcp), opt-level $CARGO_PROFILE_BENCH_OPT_LEVEL"
if [ "$CARGO_PROFILE_BENCH_OPT_LEVEL" != 3 ]; then
    echo "note: not the bench profile's opt-level 3; the medians and ratios printed are not the figures (see BENCHMARKS.md)"
fi
cargo bench -p mcp-benches -- --quick

step "dispatch-loop: every scenario, 100 steps"
# `cargo bench` has built the binary (a package's bins are built for its benches). Building it
# again with `cargo build` would resolve features without the dev-dependencies and recompile half
# of the dependency tree.
loop=${CARGO_TARGET_DIR:-target}/release/dispatch-loop
"$loop" --list
for scenario in $("$loop" --list | awk '{print $1}'); do
    "$loop" "$scenario" 100
done

step "callgrind: instructions per call against the caps in benches/callgrind-figures.md (fails above a cap)"
# The figures describe the bench profile (opt-level 3): callgrind.sh builds it whatever
# CARGO_PROFILE_BENCH_OPT_LEVEL says above (a second build; about 3 minutes on 2 cores).
if ! command -v valgrind >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends valgrind
fi
N=200 benches/callgrind.sh --check benches/callgrind-figures.md

step "benches/bound/ping_shape.rs: the speculated check's bound still checks what it claims to"
# A standalone program (BENCHMARKS.md, "What is left after the seventh round"): built and run so
# that it does not rot; it fails when either check records wrong spans or takes another shape.
bound=$(mktemp -d)
rustc --edition 2021 -O benches/bound/ping_shape.rs -o "$bound/ping_shape"
"$bound/ping_shape" 1000
valgrind --tool=callgrind --callgrind-out-file="$bound/cg" --toggle-collect='*template*' \
    "$bound/ping_shape" 1000 2>&1 | sed -n 's/.*Collected : /instructions per 1000 speculated checks: /p'
rm -rf "$bound"

step "done in $(($(date +%s) - start)) s"
