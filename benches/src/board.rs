//! The device-sim board, copied from `examples/device-sim/src/board.rs` (a binary crate, so it
//! cannot be a dependency): mcp-hal's sim devices behind the standard tool kits. [`TOOLS`] is
//! "the device-sim tool set". Two additions for the benches: [`SHOW_TEXT`], a tool with a
//! free-form string argument (for the escaped-string scenario), and [`fillers`], 63 filler tools
//! of about 300 listing bytes each (for the tool-count and paging scenarios).

use std::sync::OnceLock;

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
    /// Characters of the text last shown by [`SHOW_TEXT`].
    pub shown_chars: usize,
}

impl Board {
    /// A board in its power-up state, no faults, door closed.
    pub fn new() -> Self {
        Board {
            sim: SimBoard::new(Faults::NONE),
            theme: "light",
            door_open: false,
            shown_chars: 0,
        }
    }
}

impl Default for Board {
    fn default() -> Self {
        Self::new()
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
/// `self.audio_speaker.set_volume` from mcp-hal's audio kit: writes the codec register, reads it
/// back and compares.
pub static SET_VOLUME: Tool<Board> = audio::set_volume();
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

/// The device-sim tool set, in listing order.
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

fn show_text(board: &mut Board, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let text = args.str("text")?;
    board.shown_chars = text.chars().count();
    let shown = i64::try_from(board.shown_chars).unwrap_or(i64::MAX);
    Ok(Output::int(shown).with_evidence(Evidence::new(Level::Applied)))
}

/// `self.screen.show_text` (`text`: a string of up to 256 characters); answers the number of
/// characters shown. The escaped-string scenario calls it.
pub static SHOW_TEXT: Tool<Board> = Tool::new(
    "self.screen.show_text",
    "Show a line of text on the screen.",
    show_text,
)
.params(&[Param::string("text", "The text to show").length(0, 256)]);

fn filler(_: &mut Board, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text("This filler tool has no effect."))
}

const FILLER_PARAMS: &[Param] = &[
    Param::integer("level", "Ignored")
        .range(0, 10)
        .default_int(0),
    Param::string("label", "Ignored").length(0, 32).optional(),
];

/// 63 filler tools as in `device-sim --extra-tools` (about 300 bytes of listing each), built once
/// and leaked (tools are `'static`, as on a device).
pub fn fillers() -> &'static [&'static Tool<Board>] {
    static FILLERS: OnceLock<Vec<&'static Tool<Board>>> = OnceLock::new();
    FILLERS.get_or_init(|| {
        (0..63)
            .map(|i| {
                let name: &'static str =
                    Box::leak(format!("self.extra.filler_{i:03}").into_boxed_str());
                let tool: &'static Tool<Board> = Box::leak(Box::new(
                    Tool::new(
                        name,
                        "Filler tool (device-sim --extra-tools); no effect.",
                        filler,
                    )
                    .params(FILLER_PARAMS)
                    .annotations(Annotations::new().read_only(true)),
                ));
                tool
            })
            .collect()
    })
}
