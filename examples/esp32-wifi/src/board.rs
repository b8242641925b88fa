//! The board: mcp-hal's simulated devices behind the standard tool kits — the same tools as
//! `examples/device-sim` — so that the firmware runs on a bare DevKit and a laptop's MCP client
//! can exercise every tool over the LAN. For real hardware, bind the kits to mcp-hal's drivers as
//! `examples/esp32-serial/src/board.rs` does; the HTTP side does not change.

use mcp_core::registry::{Annotations, Tool};
use mcp_core::server::status_tool;
use mcp_core::{Args, Evidence, Level, Output, Param, Reply, ToolResult};
use mcp_hal::kits::{DelayNs, Wait, audio, motor, relay, screen, status, system};
use mcp_hal::sim::{Faults, SimBacklight, SimBoard, SimCodec, SimMotor, SimRelay, SimSystem};

/// When the reboot `self.reboot` armed is due (ms since boot), copied out of the board after
/// each request so that a task that does not own the board can carry it out.
static REBOOT_AT: critical_section::Mutex<core::cell::Cell<Option<u64>>> =
    critical_section::Mutex::new(core::cell::Cell::new(None));

/// Publishes the board's armed reboot, if any.
pub fn note_reboot(board: &Board) {
    let at = board.sim.system.scheduled_at();
    critical_section::with(|cs| REBOOT_AT.borrow(cs).set(at));
}

/// `true` when an armed reboot is due at `now_ms`.
pub fn reboot_due(now_ms: u64) -> bool {
    critical_section::with(|cs| REBOOT_AT.borrow(cs).get()).is_some_and(|at| now_ms >= at)
}

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

/// A wait in a call: esp-hal's blocking delay (a busy wait on the system timer; at most the
/// 200 ms call budget, during which the executor does not run), after which the simulated
/// devices are brought to the time it now is (they run on the firmware's uptime).
pub struct EspDelay<'a> {
    sim: &'a mut SimBoard,
}

impl DelayNs for EspDelay<'_> {
    fn delay_ns(&mut self, ns: u32) {
        esp_hal::delay::Delay::new().delay_ns(ns);
        self.sim.set_time(crate::uptime_ms());
    }
}

impl Wait for Board {
    fn delay(&mut self) -> impl DelayNs + '_ {
        EspDelay { sim: &mut self.sim }
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
/// The board's tools, in listing order: device-sim's eight.
pub static TOOLS: [&Tool<Board>; 8] = [
    &GET_DEVICE_STATUS,
    &SET_VOLUME,
    &SET_BRIGHTNESS,
    &SET_THEME,
    &RELAY_SET,
    &MOVE_TO,
    &TASK_STATUS,
    &REBOOT,
];
