//! The emulated board: mcp-hal's sim devices behind the standard tool kits — the same tools as
//! `examples/device-sim` — plus a user-only diagnostics tool through which the firmware reports
//! its own stack and heap use.

use mcp_core::registry::{Annotations, Tool};
use mcp_core::server::status_tool;
use mcp_core::{Args, Evidence, Level, Output, Param, Reply, ToolResult};
use mcp_hal::kits::{DelayNs, Wait, audio, motor, relay, screen, status, system};
use mcp_hal::sim::{Faults, SimBacklight, SimBoard, SimCodec, SimMotor, SimRelay, SimSystem};

use crate::measure;

/// Everything the tools act on.
pub struct Board {
    /// The simulated devices.
    pub sim: SimBoard,
    /// Screen theme: `"light"` or `"dark"`.
    pub theme: &'static str,
    /// The door sensor: the relay may not switch on while it reads open.
    pub door_open: bool,
}

impl Board {
    /// A board in its power-up state with `faults` injected.
    pub const fn new(faults: Faults, door_open: bool) -> Self {
        Board {
            sim: SimBoard::new(faults),
            theme: "light",
            door_open,
        }
    }
}

/// A wait in a call: a busy wait on the platform timer (`mtime`), after which the simulated
/// devices are brought to the time it now is (they run on the firmware's uptime).
pub struct PlatformDelay<'a> {
    sim: &'a mut SimBoard,
}

impl DelayNs for PlatformDelay<'_> {
    fn delay_ns(&mut self, ns: u32) {
        crate::platform::busy_wait_ns(ns);
        self.sim.set_time(crate::platform::now_ms());
    }
}

impl Wait for Board {
    fn delay(&mut self) -> impl DelayNs + '_ {
        PlatformDelay { sim: &mut self.sim }
    }
}
impl audio::HasCodec for Board {
    type Codec = SimCodec;
    fn codec(&mut self) -> &mut SimCodec {
        &mut self.sim.codec
    }
}

impl screen::HasBacklight for Board {
    type Backlight = SimBacklight;
    fn backlight(&mut self) -> &mut SimBacklight {
        &mut self.sim.backlight
    }
}

impl relay::HasRelay for Board {
    type Relay = SimRelay;
    fn relay(&mut self) -> &mut SimRelay {
        &mut self.sim.relay
    }
    fn interlock(&mut self, on: bool) -> Result<(), relay::Refusal> {
        if on && self.door_open {
            return Err(relay::Refusal {
                guard: "door-closed",
                reason: "the door sensor reads open",
            });
        }
        Ok(())
    }
}

impl motor::HasMotor for Board {
    type Motor = SimMotor;
    fn motor(&mut self) -> &mut SimMotor {
        &mut self.sim.motor
    }
}

impl system::HasSystem for Board {
    type System = SimSystem;
    fn system(&mut self) -> &mut SimSystem {
        &mut self.sim.system
    }
}

impl status::StatusReport for Board {
    fn report(&mut self, s: &mut status::Status<'_, '_, '_>) {
        // A PWM backlight cannot be read back: the status shows its commanded level.
        let brightness = self.sim.backlight.level();
        s.audio_speaker(&mut self.sim.codec)
            .screen(brightness, self.theme)
            .relay(&mut self.sim.relay)
            .motor(&mut self.sim.motor);
    }
}

fn set_theme(board: &mut Board, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    board.theme = if args.str("theme")? == "dark" {
        "dark"
    } else {
        "light"
    };
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Applied)))
}

const STATUS_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""audio_speaker":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]},"#,
    r#""screen":{"type":"object","properties":{"brightness":{"type":"integer","minimum":0,"maximum":100},"#,
    r#""theme":{"type":"string","enum":["light","dark"]}},"required":["brightness","theme"]},"#,
    r#""relay":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]},"#,
    r#""motor":{"type":"object","properties":{"position":{"type":"integer"},"moving":{"type":"boolean"}},"required":["position","moving"]}},"#,
    r#""required":["audio_speaker","screen"]}"#
);

/// The engine's memory, computed by the firmware for its own target (see `main.rs`).
#[derive(Clone, Copy)]
pub struct EngineSizes {
    /// `size_of` the firmware's `Server`.
    pub server: usize,
    /// What one more tool slot (`N`) costs.
    pub per_tool: usize,
    /// What one more task slot (`TASKS`) costs.
    pub per_task: usize,
    /// What one more recent-call slot (`CACHE`) costs.
    pub per_cache_slot: usize,
    /// `size_of` a server with no task table and no recent-call cache.
    pub server_without_tasks_and_cache: usize,
    /// The line buffer (`LineBuffer<LINE>`).
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
                    .int(
                        "server_without_tasks_and_cache",
                        n(s.server_without_tasks_and_cache),
                    )
                    .int("per_tool", n(s.per_tool))
                    .int("per_task", n(s.per_task))
                    .int("per_cache_slot", n(s.per_cache_slot))
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

static GET_DEVICE_STATUS: Tool<Board> = status::get_device_status().output_schema(STATUS_SCHEMA);
static SET_VOLUME: Tool<Board> = audio::set_volume();
static SET_BRIGHTNESS: Tool<Board> = screen::set_brightness();
static SET_THEME: Tool<Board> = Tool::new(
    "self.screen.set_theme",
    "Set the theme of the screen.",
    set_theme,
)
.params(&[Param::string("theme", "The theme of the screen").one_of(&["light", "dark"])])
.annotations(Annotations::new().idempotent(true).destructive(false));
static RELAY_SET: Tool<Board> = relay::set();
static MOVE_TO: Tool<Board> = motor::move_to::<Board, 0, 1000>();
static TASK_STATUS: Tool<Board> = status_tool();
static REBOOT: Tool<Board> = system::reboot();
static DIAGNOSTICS: Tool<Board> = Tool::new(
    "self.device.get_diagnostics",
    "The firmware's own measurements since boot: peak stack use (painted stack) per message and \
     overall, heap use and its high-water mark, and the engine's memory.",
    diagnostics,
)
.user_only()
.output_schema(DIAGNOSTICS_SCHEMA)
.annotations(Annotations::new().read_only(true));

/// The board's tools, in listing order: device-sim's eight, then the diagnostics.
pub static TOOLS: [&Tool<Board>; 9] = [
    &GET_DEVICE_STATUS,
    &SET_VOLUME,
    &SET_BRIGHTNESS,
    &SET_THEME,
    &RELAY_SET,
    &MOVE_TO,
    &TASK_STATUS,
    &REBOOT,
    &DIAGNOSTICS,
];
