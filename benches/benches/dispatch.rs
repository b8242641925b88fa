//! Criterion benches of the dispatch path, one group per scenario, with rmcp side by side in the
//! groups where it serves the same request (see `mcp_benches::scenarios`).
//!
//! After the measurements it prints, for this run: the medians and the ratios (ours vs rmcp,
//! 64 vs 4 tools), read back from criterion's own estimates, and the allocations per call of
//! every scenario (counted in a separate pass, outside the timed loops).
//!
//! ```text
//! cargo bench -p mcp-benches                 # the full run
//! cargo bench -p mcp-benches -- --quick      # the CI smoke run
//! cargo bench -p mcp-benches -- call_set_volume
//! ```
#![allow(
    clippy::panic,
    reason = "a bench stops on a wrong response or a setup failure"
)]

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use criterion::Criterion;
use mcp_benches::allocations_per_step;
use mcp_benches::scenarios::{Scenario, all};

fn main() {
    let started = SystemTime::now();
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let scenarios = all();
    let mut groups: Vec<&str> = Vec::new();
    for s in &scenarios {
        if !groups.contains(&s.group) {
            groups.push(s.group);
        }
    }
    for group in &groups {
        let mut g = c.benchmark_group(*group);
        for s in scenarios.iter().filter(|s| s.group == *group) {
            let mut harness = s.make();
            // Once, outside the timed loop: every response of the cycle is what it should be.
            if let Err(e) = harness.check() {
                panic!("{}: wrong response: {e}", s.id());
            }
            g.bench_function(s.function, |b| b.iter(|| harness.step()));
        }
        g.finish();
    }
    c.final_summary();

    print_medians(&scenarios, started);
    print_allocations(&scenarios);
}

/// Where criterion keeps its estimates (the same rules as criterion's own).
fn criterion_home() -> PathBuf {
    if let Some(v) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(v);
    }
    if let Some(v) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(v).join("criterion");
    }
    // target/<profile>/deps/<this bench>
    std::env::current_exe()
        .ok()
        .and_then(|p| p.ancestors().nth(3).map(|t| t.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// The median (ns) criterion estimated for `s` in this run, if it ran.
fn median_ns(s: &Scenario, since: SystemTime) -> Option<f64> {
    let path = criterion_home()
        .join(s.group)
        .join(s.function)
        .join("new")
        .join("estimates.json");
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    if !fresh {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.pointer("/median/point_estimate")?.as_f64()
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1_000_000.0 {
        format!("{:.2} ms", ns / 1_000_000.0)
    } else if ns >= 1_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else {
        format!("{ns:.0} ns")
    }
}

fn print_medians(scenarios: &[Scenario], since: SystemTime) {
    let medians: Vec<(Scenario, f64)> = scenarios
        .iter()
        .filter_map(|s| median_ns(s, since).map(|m| (*s, m)))
        .collect();
    if medians.is_empty() {
        return;
    }
    let of = |id: &str| medians.iter().find(|(s, _)| s.id() == id).map(|(_, m)| *m);
    println!("\nMedians of this run");
    println!("| scenario | median |");
    println!("|---|---:|");
    for (s, m) in &medians {
        println!("| `{}` | {} |", s.id(), fmt_ns(*m));
    }
    println!("\nRatios of this run (rmcp median / mcu-mcp median; higher = mcu-mcp faster)");
    println!("| scenario | mcu-mcp | rmcp-direct | ratio | rmcp-served | ratio |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (s, ours) in medians.iter().filter(|(s, _)| s.function == "mcu-mcp") {
        let direct = of(&format!("{}/rmcp-direct", s.group));
        let served = of(&format!("{}/rmcp-served", s.group));
        if direct.is_none() && served.is_none() {
            continue;
        }
        let cell = |v: Option<f64>| {
            v.map_or(("—".to_string(), "—".to_string()), |v| {
                (fmt_ns(v), format!("{:.1}×", v / ours))
            })
        };
        let (d, dr) = cell(direct);
        let (sv, sr) = cell(served);
        println!(
            "| `{}` | {} | {d} | {dr} | {sv} | {sr} |",
            s.group,
            fmt_ns(*ours)
        );
    }
    if let (Some(t4), Some(t16), Some(t64)) = (
        of("call_set_volume_tools/4"),
        of("call_set_volume_tools/16"),
        of("call_set_volume_tools/64"),
    ) {
        println!("\nTool count (valid set_volume call, set_volume registered last)");
        println!("| tools | median | vs 4 tools |");
        println!("|---:|---:|---:|");
        for (n, m) in [(4, t4), (16, t16), (64, t64)] {
            println!("| {n} | {} | {:+.1} % |", fmt_ns(m), (m / t4 - 1.0) * 100.0);
        }
    }
}

fn print_allocations(scenarios: &[Scenario]) {
    println!("\nAllocations per call (after one warm-up cycle, mean over 200 steps)");
    println!("| scenario | allocations | bytes |");
    println!("|---|---:|---:|");
    for s in scenarios {
        let mut harness = s.make();
        let (count, bytes) = allocations_per_step(harness.as_mut(), 200);
        println!("| `{}` | {count:.1} | {bytes:.0} |", s.id());
    }
}
