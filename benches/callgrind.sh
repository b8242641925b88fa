#!/usr/bin/env bash
# Instructions per call for each scenario, counted by valgrind's callgrind: unlike timings on a
# shared machine, these repeat exactly. Only `Harness::step` is counted (--toggle-collect), so the
# set-up and the response check before the loop are not.
#
#   benches/callgrind.sh                          # every scenario (+ the cJSON C baseline)
#   benches/callgrind.sh call_set_volume/mcu-mcp  # some
#   N=5000 benches/callgrind.sh                   # steps per scenario (default 1000)
#   benches/callgrind.sh --check FILE             # fail when a scenario of this engine needs more
#                                                 # than its cap in FILE, or has none
#
# The figures committed in benches/callgrind-figures.md are this script's output. Its third column
# is each scenario's **cap**: an absolute number of instructions, not a margin over the last
# figure, so that small additions cannot ratchet the figures up one commit at a time. A cap is
# changed only by editing that file, on purpose (the budgets are in BENCHMARKS.md).
# With --check the output is the file's table (scenario, figure, cap): when the check passes, that
# output is the file's next version (write it elsewhere first, then move it over the file).
# The C baseline `call_set_volume/cjson` (benches/c/cjson_path.c) is counted when a C compiler and
# libcjson-dev are present.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-1000}
check=""
if [ "${1:-}" = "--check" ]; then
    check=${2:?"--check needs the figures file"}
    shift 2
fi
# The counts describe the bench profile (opt-level 3), whatever the caller's environment says.
export CARGO_PROFILE_BENCH_OPT_LEVEL=3
# `cargo bench --no-run` builds dispatch-loop exactly as the criterion bench is built (same
# profile, same features), so the counts describe the code that criterion times.
cargo bench -q -p mcp-benches --no-run
target=${CARGO_TARGET_DIR:-target}
bin=$target/release/dispatch-loop
if [ "$#" -gt 0 ]; then
    scenarios=("$@")
else
    mapfile -t scenarios < <("$bin" --list | awk '{print $1}')
    if command -v cc >/dev/null && [ -f /usr/include/cjson/cJSON.h ]; then
        scenarios+=(call_set_volume/cjson)
    fi
fi
count() {
    local s=$1 out
    if [ "$s" = call_set_volume/cjson ]; then
        cc -O2 -o "$target/cjson_path" benches/c/cjson_path.c -lcjson
        out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect=step \
            "$target/cjson_path" "$n" 2>&1)
        # The C program checks its answer with one counted step before the loop.
        n_steps=$((n + 1))
    else
        out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --toggle-collect='*Harness>::step' "$bin" "$s" "$n" 2>&1)
        n_steps=$n
    fi
    local ir
    ir=$(sed -n 's/.*Collected : //p' <<<"$out")
    echo $((ir / n_steps))
}
ours() { [[ "$1" == *mcu-mcp || "$1" == call_set_volume_tools/* || "$1" == call_arguments/* ]]; }
if [ -n "$check" ]; then
    printf '| scenario | instructions per call | cap |\n|---|---:|---:|\n'
else
    printf '| scenario | instructions per call |\n|---|---:|\n'
fi
failed=0
for s in "${scenarios[@]}"; do
    ir=$(count "$s")
    if [ -z "$check" ]; then
        printf '| `%s` | %s |\n' "$s" "$ir"
        continue
    fi
    cap=$(sed -n "s/^| \`${s//\//\\/}\` | [0-9]* | \([0-9]*\) |$/\1/p" "$check")
    printf '| `%s` | %s | %s |\n' "$s" "$ir" "$cap"
    if ! ours "$s"; then
        continue
    elif [ -z "$cap" ]; then
        echo "callgrind: \`$s\` has no cap in $check (every scenario of this engine needs one)" >&2
        failed=1
    elif [ "$ir" -gt "$cap" ]; then
        echo "callgrind: \`$s\` needs $ir instructions per call, above its cap of $cap ($check)" >&2
        failed=1
    fi
done
if [ "$failed" != 0 ]; then
    exit 1
fi
