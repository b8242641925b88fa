#!/usr/bin/env bash
# Instructions per call for each scenario, counted by valgrind's callgrind: unlike timings on a
# shared machine, these repeat exactly. Only `Harness::step` is counted (--toggle-collect), so the
# set-up and the response check before the loop are not.
#
#   benches/callgrind.sh                          # every scenario
#   benches/callgrind.sh call_set_volume/mcu-mcp  # some
#   N=5000 benches/callgrind.sh                   # steps per scenario (default 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-1000}
# `cargo bench --no-run` builds dispatch-loop exactly as the criterion bench is built (same
# profile, same features), so the counts describe the code that criterion times.
cargo bench -q -p mcp-benches --no-run
bin=${CARGO_TARGET_DIR:-target}/release/dispatch-loop
if [ "$#" -gt 0 ]; then scenarios=("$@"); else mapfile -t scenarios < <("$bin" --list | awk '{print $1}'); fi
printf '| scenario | instructions per call |\n|---|---:|\n'
for s in "${scenarios[@]}"; do
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*Harness>::step' \
        "$bin" "$s" "$n" 2>&1 | sed -n 's/.*Collected : //p')
    printf '| `%s` | %s |\n' "$s" "$((ir / n))"
done
