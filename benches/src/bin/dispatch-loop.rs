//! Runs one scenario N times with nothing else around it, for `valgrind --tool=callgrind` or
//! `perf stat`:
//!
//! ```text
//! cargo run --release -p mcp-benches --bin dispatch-loop -- SCENARIO N
//! cargo run --release -p mcp-benches --bin dispatch-loop -- --list
//! cargo run --release -p mcp-benches --bin dispatch-loop -- --show SCENARIO
//! ```
//!
//! SCENARIO is a criterion benchmark id (`call_set_volume/mcu-mcp`, `call_set_volume/rmcp-direct`,
//! …); a bare group name means its `mcu-mcp` function. The harness is built and its responses
//! checked before the loop; the loop itself is only `Harness::step`. On exit it prints the
//! response bytes and the allocations per step to stderr. `--show` prints the responses to the
//! cycle's first step instead (the bytes a step produces).

use std::process::ExitCode;

use mcp_benches::alloc_count;
use mcp_benches::scenarios::{all, find};

fn usage() -> ExitCode {
    eprintln!("usage: dispatch-loop SCENARIO N | --list | --show SCENARIO");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--list" => {
            for s in all() {
                println!("{:<36} {}", s.id(), s.about);
            }
            ExitCode::SUCCESS
        }
        [flag, name] if flag == "--show" => {
            let Some(scenario) = find(name) else {
                eprintln!("unknown scenario {name:?}; --list shows them");
                return ExitCode::from(2);
            };
            let mut harness = scenario.make();
            for response in harness.responses(0) {
                println!("{}", String::from_utf8_lossy(&response));
            }
            ExitCode::SUCCESS
        }
        [name, n] => {
            let Some(scenario) = find(name) else {
                eprintln!("unknown scenario {name:?}; --list shows them");
                return ExitCode::from(2);
            };
            let Ok(n) = n.parse::<u64>() else {
                return usage();
            };
            let mut harness = scenario.make();
            if let Err(e) = harness.check() {
                eprintln!("{}: wrong response: {e}", scenario.id());
                return ExitCode::FAILURE;
            }
            let mut bytes = 0u64;
            let allocs = alloc_count::count(|| {
                for _ in 0..n {
                    bytes += std::hint::black_box(harness.step()) as u64;
                }
            });
            let per = |v: u64| v as f64 / n.max(1) as f64;
            eprintln!(
                "{}: {n} steps, {bytes} response bytes, {:.2} allocations and {:.1} bytes allocated per step",
                scenario.id(),
                per(allocs.count),
                per(allocs.bytes)
            );
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}
