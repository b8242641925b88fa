//! The emulated board: mcp-hal's demo board (`mcp_hal::sim::DemoBoard`, the sim devices behind
//! the standard tool kits — the same tools as `examples/device-sim`) on the platform timer, plus
//! a user-only diagnostics tool through which the firmware reports its own stack and heap use.

use mcp_core::registry::{Annotations, Tool};
use mcp_core::{Args, Reply, ToolResult};
use mcp_hal::sim::{DemoBoard, SimBoard, Timebase};

use crate::measure;

/// Everything the tools act on: mcp-hal's demo board, waiting on the platform timer.
pub type Board = DemoBoard<PlatformTime>;

/// A wait in a call: a busy wait on the platform timer (`mtime`), after which the simulated
/// devices are brought to the time it now is (they run on the firmware's uptime).
pub struct PlatformTime;

impl Timebase for PlatformTime {
    fn delay_ns(&mut self, sim: &mut SimBoard, ns: u32) {
        crate::platform::busy_wait_ns(ns);
        sim.set_time(crate::platform::now_ms());
    }
}

/// The engine's memory, computed by the firmware for its own target (see `main.rs`).
#[derive(Clone, Copy)]
pub struct EngineSizes {
    /// `size_of` the firmware's `Server`.
    pub server: usize,
    /// Its tool slots (`N`).
    pub tool_slots: usize,
    /// What one more tool slot (`N`) costs.
    pub per_tool: usize,
    /// What one more task slot (`TASKS`) costs.
    pub per_task: usize,
    /// What one more recent-call slot (`CACHE`) costs.
    pub per_cache_slot: usize,
    /// `size_of` a server with no task table and no recent-call cache.
    pub server_without_tasks_and_cache: usize,
    /// What a live-resource slot (`RES`) costs (feature `resources`).
    pub per_resource: usize,
    /// What one more `subscriptions/listen` stream (`LISTEN`) costs (feature `resources`).
    pub per_listen: usize,
    /// What `HOLD = 256` (a held call's record and a message of up to `256 - HOLD_RECORD`
    /// bytes, while a person is asked to confirm it) costs next to `HOLD = 0` (feature
    /// `confirm`).
    pub hold_256: usize,
    /// The line buffer (`LineLink<LINE>`).
    pub line_buffer: usize,
    /// The output buffer.
    pub out_buffer: usize,
    /// The JSON nesting limit (`Config::max_depth`).
    pub max_depth: u8,
}

/// Set once at boot by `main`.
pub static ENGINE_SIZES: critical_section::Mutex<core::cell::Cell<Option<EngineSizes>>> =
    critical_section::Mutex::new(core::cell::Cell::new(None));

fn diagnostics(_: &mut Board, _: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let stack = measure::stack_report();
    let heap = crate::HEAP.report();
    let sizes = critical_section::with(|cs| ENGINE_SIZES.borrow(cs).get());
    let uptime = crate::platform::now_ms();
    let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    reply.json(|o| {
        o.object("stack", |o| {
            o.int("size", n(stack.size))
                .int("peak", n(stack.peak))
                .int("handle_peak", n(stack.handle_peak))
                .int("poll_peak", n(stack.poll_peak))
                .int("last_handle", n(stack.last_handle))
                .bool("exhausted", stack.exhausted);
        })
        .object("heap", |o| {
            o.int("size", n(heap.size))
                .int("used", n(heap.used))
                .int("peak", n(heap.peak))
                .int("allocations", i64::from(heap.allocations))
                .int("failures", i64::from(heap.failures));
        });
        if let Some(s) = sizes {
            o.object("engine", |o| {
                o.int("server", n(s.server))
                    .int("tool_slots", n(s.tool_slots))
                    .int(
                        "server_without_tasks_and_cache",
                        n(s.server_without_tasks_and_cache),
                    )
                    .int("per_tool", n(s.per_tool))
                    .int("per_task", n(s.per_task))
                    .int("per_cache_slot", n(s.per_cache_slot))
                    .int("per_resource", n(s.per_resource))
                    .int("per_listen", n(s.per_listen))
                    .int("hold_256", n(s.hold_256))
                    .int("line_buffer", n(s.line_buffer))
                    .int("out_buffer", n(s.out_buffer))
                    .int("max_depth", i64::from(s.max_depth));
            });
        }
        o.int("messages", i64::from(stack.handled))
            .int("uptime_ms", i64::try_from(uptime).unwrap_or(i64::MAX));
    })
}

const DIAGNOSTICS_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""stack":{"type":"object","properties":{"size":{"type":"integer"},"peak":{"type":"integer"},"handle_peak":{"type":"integer"},"poll_peak":{"type":"integer"},"last_handle":{"type":"integer"},"exhausted":{"type":"boolean"}},"required":["size","peak","handle_peak"]},"#,
    r#""heap":{"type":"object","properties":{"size":{"type":"integer"},"used":{"type":"integer"},"peak":{"type":"integer"},"allocations":{"type":"integer"},"failures":{"type":"integer"}},"required":["size","used","peak"]},"#,
    r#""engine":{"type":"object"},"messages":{"type":"integer"},"uptime_ms":{"type":"integer"}},"#,
    r#""required":["stack","heap"]}"#
);

/// `self.device.get_diagnostics` (user-only): the firmware's own measurements.
pub static DIAGNOSTICS: Tool<Board> = Tool::new(
    "self.device.get_diagnostics",
    "The firmware's own measurements since boot: peak stack use (painted stack) per message and \
     overall, heap use and its high-water mark, and the engine's memory.",
    diagnostics,
)
.user_only()
.output_schema(DIAGNOSTICS_SCHEMA)
.annotations(Annotations::new().read_only(true));
