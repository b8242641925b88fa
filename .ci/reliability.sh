#!/usr/bin/env bash
# Reliability checks: differential validation against a reference JSON Schema validator,
# the tools/list paging property, the fault soak, each fuzz target for FUZZ_SECONDS (default 60),
# engine/validator/index against the minimal engine for FUZZ_SECONDS/2, and Miri over the unit
# tests of mcp-core and mcp-hal. Run from the repository root; on a fresh machine it installs
# what it needs (nightly components, cargo-fuzz). The machine's nightly toolchain must already be
# there (toolchains cannot be downloaded here).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
TARGETS=(engine validator xiaozhi http auth mqtt index confirm ota)

step() { printf '\n==> %s (at %ds)\n' "$*" "$SECONDS"; }
SECONDS=0

step "toolchain: nightly with miri and rust-src, cargo-fuzz"
if ! rustup toolchain list | grep -q '^nightly'; then
    echo "no nightly toolchain on this machine: fuzzing and Miri need one" >&2
    exit 1
fi
rustup component add --toolchain nightly miri rust-src
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
cargo +nightly fuzz --version

step "differential validation: our validator vs the jsonschema crate on the emitted inputSchema"
cargo test -p mcu-mcp-core --test differential -- --nocapture

step "property: tools/list pages over random tool sets and budgets"
cargo test -p mcu-mcp-core --test pagination

step "soak: 100,000 calls over the sim board with faults, retransmissions and noise"
cargo test -p mcp-hal --features sim --test soak -- --nocapture

step "miri: build the unit tests of mcp-core and mcp-hal; mcp-core's run starts beside the fuzzing"
# A fuzz target runs on one core; mcp-core's Miri run (~10 min here, single-threaded) takes the
# other. mcp-hal's follows the fuzzing, and mcp-core's output is printed when both are done.
cargo +nightly miri setup
cargo +nightly miri test -p mcu-mcp-core --lib --no-run
cargo +nightly miri test -p mcp-hal --lib --features sim --no-run
mkdir -p target
cargo +nightly miri test -p mcu-mcp-core --lib >target/miri-mcp-core.log 2>&1 &
miri_core=$!
trap 'kill "$miri_core" 2>/dev/null || true' EXIT

step "fuzz: each target for ${FUZZ_SECONDS} s"
(
    cd fuzz
    # AddressSanitizer is off: mcp-core forbids unsafe code, and ASan costs ~13x in throughput
    # here. Debug assertions and overflow checks stay on (cargo-fuzz's default build).
    cargo +nightly fuzz build -s none
    # The oracles' unit tests: their JSON tree (src/json.rs) on serde_json's private keys, and
    # the model's exact integers.
    cargo +nightly test --lib
    for t in "${TARGETS[@]}"; do
        mkdir -p "corpus/$t"
        log="target/fuzz-$t.log"
        if ! cargo +nightly fuzz run -s none "$t" "corpus/$t" "seeds/$t" -- \
            -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 >"$log" 2>&1; then
            tail -n 60 "$log"
            echo "fuzz target $t failed; the input is in fuzz/artifacts/$t/" >&2
            exit 1
        fi
        echo "$t: $(grep -E '^stat::number_of_executed_units' "$log" | cut -d: -f4 | tr -d ' ') executions," \
            "$(grep -E '^stat::new_units_added' "$log" | cut -d: -f4 | tr -d ' ') new units," \
            "$(grep -E '^stat::peak_rss_mb' "$log" | cut -d: -f4 | tr -d ' ') MB peak RSS"
    done
)

# The minimal engine (mcp-core without its default features, as examples/esp32-serial ships it:
# no float parser, no 2026-07-28 revision, no resources/prompts, no confirmation): the fuzz
# crate's feature `full` off, and the oracles expect what that engine documents. Half the time
# of the run above (at least 1 s), for the three targets that reach the feature-dependent code.
# (`http`, `confirm` and `ota` need `full`: `fuzz build --no-default-features` skips them.)
MINIMAL_SECONDS=$((FUZZ_SECONDS / 2 > 0 ? FUZZ_SECONDS / 2 : 1))
MINIMAL_TARGETS=(engine validator index)
step "fuzz: the minimal engine (--no-default-features), ${MINIMAL_TARGETS[*]} for ${MINIMAL_SECONDS} s each"
(
    cd fuzz
    cargo +nightly fuzz build -s none --no-default-features
    cargo +nightly test --lib --no-default-features
    for t in "${MINIMAL_TARGETS[@]}"; do
        # Its own corpus: inputs found against the minimal engine stay out of corpus/.
        mkdir -p "corpus-minimal/$t"
        log="target/fuzz-minimal-$t.log"
        if ! cargo +nightly fuzz run -s none --no-default-features "$t" "corpus-minimal/$t" "seeds/$t" -- \
            -max_total_time="$MINIMAL_SECONDS" -print_final_stats=1 >"$log" 2>&1; then
            tail -n 60 "$log"
            echo "fuzz target $t (minimal engine) failed; the input is in fuzz/artifacts/$t/" >&2
            exit 1
        fi
        echo "$t (minimal): $(grep -E '^stat::number_of_executed_units' "$log" | cut -d: -f4 | tr -d ' ') executions," \
            "$(grep -E '^stat::new_units_added' "$log" | cut -d: -f4 | tr -d ' ') new units," \
            "$(grep -E '^stat::peak_rss_mb' "$log" | cut -d: -f4 | tr -d ' ') MB peak RSS"
    done
)

step "miri: unit tests of mcp-hal; then mcp-core's, run beside the fuzzing"
# One Miri process per crate: a process per test (cargo miri nextest) pays ~18 s of Miri start-up
# per test here, which costs more than it gains on 2 cores.
cargo +nightly miri test -p mcp-hal --lib --features sim
miri_rc=0
wait "$miri_core" || miri_rc=$?
trap - EXIT
cat target/miri-mcp-core.log
if [ "$miri_rc" -ne 0 ]; then
    echo "miri: mcp-core's unit tests failed (exit $miri_rc)" >&2
    exit 1
fi

step "done in ${SECONDS} s"
