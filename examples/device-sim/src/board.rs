//! The simulated board: mcp-hal's sim devices behind the standard tool kits, plus the screen
//! theme (a UI setting, not hardware) and a door sensor that the relay's interlock watches.

use mcp_core::registry::{Annotations, Tool};
use mcp_core::server::status_tool;
use mcp_core::{Args, Evidence, Level, Output, Param, Reply, ToolResult};
use mcp_hal::kits::{DelayNs, Wait, audio, motor, relay, screen, status, system};
use mcp_hal::sim::{Faults, SimBacklight, SimBoard, SimCodec, SimMotor, SimRelay, SimSystem};

/// Everything the tools act on.
#[derive(Debug)]
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
    pub fn new(faults: Faults, door_open: bool) -> Self {
        Board {
            sim: SimBoard::new(faults),
            theme: "light",
            door_open,
        }
    }
}

impl Wait for Board {
    /// The simulated clock: a wait in a call advances the sim board's time (it takes no real
    /// time), so that a relay's 20 ms settle time is seen exactly.
    fn delay(&mut self) -> impl DelayNs + '_ {
        &mut self.sim
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

/// The board's tools, in listing order.
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

fn filler(_: &mut Board, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text("This filler tool has no effect."))
}

const FILLER_PARAMS: &[Param] = &[
    Param::integer("level", "Ignored")
        .range(0, 10)
        .default_int(0),
    Param::string("label", "Ignored").length(0, 32).optional(),
];

/// Filler tool `i` (about 300 bytes of listing), so that `tools/list` paging can be seen.
/// The tool is leaked: the simulator builds these once at start-up.
pub fn filler_tool(i: usize) -> &'static Tool<Board> {
    let name: &'static str = Box::leak(format!("self.extra.filler_{i:03}").into_boxed_str());
    Box::leak(Box::new(
        Tool::new(
            name,
            "Filler tool (device-sim --extra-tools); no effect.",
            filler,
        )
        .params(FILLER_PARAMS)
        .annotations(Annotations::new().read_only(true)),
    ))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn fillers_are_about_300_bytes() {
        let size = filler_tool(1).listing_size();
        assert!((250..=400).contains(&size), "{size}");
    }
}
