//! Benchmarks of the mcu-mcp dispatch path, side by side with rmcp.
//!
//! Every scenario runs the full path — request bytes in, parsed and validated, the handler run on
//! the simulated board, response bytes out — and its responses are checked once, outside the
//! timed loop ([`harness::Harness::check`]). The same scenarios drive the criterion bench
//! (`cargo bench -p mcp-benches`) and the profiler loop
//! (`cargo run --release -p mcp-benches --bin dispatch-loop -- SCENARIO N`). Results and the
//! commands that produced them are in `BENCHMARKS.md` at the repository root.
//!
//! This crate installs a counting global allocator ([`alloc_count`]) so that allocations per call
//! can be reported for every scenario.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a bench harness stops on a setup failure or a wrong response; there is no caller to report to"
)]

pub mod alloc_count;
pub mod board;
pub mod harness;
pub mod ours;
pub mod rmcp_side;
pub mod scenarios;

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

use harness::Harness;

/// Allocations per step of a scenario's harness, measured over `steps` steps after one warm-up
/// cycle (so one-time setup is not counted).
pub fn allocations_per_step(harness: &mut dyn Harness, steps: u64) -> (f64, f64) {
    for _ in 0..harness::CYCLE {
        std::hint::black_box(harness.step());
    }
    let a = alloc_count::count(|| {
        for _ in 0..steps {
            std::hint::black_box(harness.step());
        }
    });
    let n = steps.max(1) as f64;
    (a.count as f64 / n, a.bytes as f64 / n)
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn every_scenario_answers_as_it_should() {
        for s in scenarios::all() {
            let mut h = s.make();
            h.check().unwrap_or_else(|e| panic!("{}: {e}", s.id()));
            // And again after the cycle has run once (steady state).
            h.check()
                .unwrap_or_else(|e| panic!("{} (second cycle): {e}", s.id()));
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        let all = scenarios::all();
        for s in &all {
            assert_eq!(scenarios::find(&s.id()).unwrap().id(), s.id());
            assert_eq!(all.iter().filter(|t| t.id() == s.id()).count(), 1);
        }
        assert_eq!(
            scenarios::find("call_set_volume").unwrap().id(),
            "call_set_volume/mcu-mcp"
        );
    }

    #[test]
    fn rmcp_lists_the_same_set_volume_tool() {
        let ours = rmcp_side::our_set_volume_listing();
        let device = rmcp_side::RmcpDevice::new();
        let theirs = serde_json::to_value(
            rmcp::ServerHandler::get_tool(&device, board::SET_VOLUME.name()).unwrap(),
        )
        .unwrap();
        for key in ["name", "description", "inputSchema"] {
            assert_eq!(theirs[key], ours[key], "{key}");
        }
        assert_eq!(
            theirs["annotations"]["idempotentHint"],
            ours["annotations"]["idempotentHint"]
        );
        assert_eq!(
            theirs["annotations"]["destructiveHint"],
            ours["annotations"]["destructiveHint"]
        );
    }

    #[test]
    fn escaped_text_is_200_bytes_with_escapes() {
        let t = scenarios::escaped_text();
        assert_eq!(t.len(), 200);
        assert!(t.contains(r"\u4f60"));
        assert!(scenarios::escaped_text_chars() < 200);
    }
}
