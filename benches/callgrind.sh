#!/usr/bin/env bash
# Instructions per call for each scenario, counted by valgrind's callgrind: unlike timings on a
# shared machine, these repeat exactly. Only `Harness::step` is counted (--toggle-collect), so the
# set-up and the response check before the loop are not.
#
#   benches/callgrind.sh                          # every scenario (+ the cJSON C baseline)
#   benches/callgrind.sh call_set_volume/mcu-mcp  # some
#   N=5000 benches/callgrind.sh                   # steps per scenario (default 1000)
#   benches/callgrind.sh --check FILE             # fail when an mcu-mcp scenario needs more
#                                                 # than 10 % above its figure in FILE
#
# The figures committed in benches/callgrind-figures.md are this script's output (the budgets of
# issue 14 are in BENCHMARKS.md). The C baseline `call_set_volume/cjson` (benches/c/cjson_path.c)
# is counted when a C compiler and libcjson-dev are present.
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
printf '| scenario | instructions per call |\n|---|---:|\n'
failed=0
for s in "${scenarios[@]}"; do
    ir=$(count "$s")
    if [ -n "$check" ] && [[ "$s" == *mcu-mcp || "$s" == call_set_volume_tools/* ]]; then
        figure=$(sed -n "s/^| \`${s//\//\\/}\` | \([0-9]*\) |$/\1/p" "$check")
        if [ -z "$figure" ]; then
            printf '| `%s` | %s | (no committed figure) |\n' "$s" "$ir"
        elif [ $((ir * 10)) -gt $((figure * 11)) ]; then
            printf '| `%s` | %s | **more than 10 %% above %s** |\n' "$s" "$ir" "$figure"
            failed=1
        else
            printf '| `%s` | %s | figure %s |\n' "$s" "$ir" "$figure"
        fi
    else
        printf '| `%s` | %s |\n' "$s" "$ir"
    fi
done
if [ "$failed" != 0 ]; then
    echo "callgrind: instructions per call regressed by more than 10 % (figures: $check)" >&2
    exit 1
fi
