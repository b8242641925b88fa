//! The device-sim board, which is mcp-hal's demo board ([`mcp_hal::sim::DemoBoard`]): the sim
//! devices behind the standard tool kits. [`TOOLS`] is "the device-sim tool set". Two additions
//! for the benches: [`SHOW_TEXT`], a tool with a free-form string argument (for the
//! escaped-string scenario), [`fillers`], 63 filler tools of about 300 listing bytes each
//! (for the tool-count and paging scenarios), the 255 fillers of the growth scenarios
//! ([`named_fillers`]), and [`set_levels`], a tool of 1 to 16 integer arguments.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_core::registry::Tool;
use mcp_core::schema::MAX_PARAMS;
use mcp_core::{Args, Evidence, Level, Output, Param, Reply, ToolResult};
use mcp_hal::kits::audio;

/// Everything the tools act on.
pub type Board = mcp_hal::sim::DemoBoard;

/// The device-sim tool set, in listing order.
pub const TOOLS: &[&Tool<Board>] = Board::TOOLS;

/// The tool capacity of a server with [`TOOLS`]: one per row of the demo board's table.
pub const CAPACITY: usize = mcp_hal::sim::DEMO_TOOLS;

/// `self.audio_speaker.set_volume` from mcp-hal's audio kit (the set's second tool): writes the
/// codec register, reads it back and compares.
pub static SET_VOLUME: Tool<Board> = audio::set_volume();

/// Characters of the text last shown by [`SHOW_TEXT`] (the demo board has no text display).
static SHOWN_CHARS: AtomicUsize = AtomicUsize::new(0);

/// Characters of the text last shown by [`SHOW_TEXT`].
pub fn shown_chars() -> usize {
    SHOWN_CHARS.load(Ordering::Relaxed)
}

fn show_text(_: &mut Board, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let shown = args.str("text")?.chars().count();
    SHOWN_CHARS.store(shown, Ordering::Relaxed);
    let shown = i64::try_from(shown).unwrap_or(i64::MAX);
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

/// 63 filler tools as in `device-sim --extra-tools` (about 300 bytes of listing each), built once
/// and leaked (tools are `'static`, as on a device).
pub fn fillers() -> &'static [&'static Tool<Board>] {
    static FILLERS: OnceLock<Vec<&'static Tool<Board>>> = OnceLock::new();
    FILLERS.get_or_init(|| {
        (0..63)
            .map(|i| {
                let name: &'static str =
                    Box::leak(format!("self.extra.filler_{i:03}").into_boxed_str());
                let tool: &'static Tool<Board> = Box::leak(Box::new(Board::filler(name)));
                tool
            })
            .collect()
    })
}

/// How the names of [`named_fillers`] are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// Every name the length of `set_volume`'s and sharing its first 24 bytes
    /// (`self.audio_speaker.set_v…`): a lookup that compares names byte by byte compares each.
    SharedPrefix,
    /// Names of varied lengths and words, as a large device's tools are named.
    Varied,
}

/// 255 filler tools named as `names` says, built once per kind and leaked: with
/// [`SET_VOLUME`] last they make the 256-tool lookup scenarios.
pub fn named_fillers(names: Names) -> &'static [&'static Tool<Board>] {
    static SHARED: OnceLock<Vec<&'static Tool<Board>>> = OnceLock::new();
    static VARIED: OnceLock<Vec<&'static Tool<Board>>> = OnceLock::new();
    const PARTS: [&str; 8] = [
        "light",
        "fan",
        "door.lock",
        "motor",
        "sensor.air",
        "relay",
        "screen",
        "pump",
    ];
    const VERBS: [&str; 6] = ["set", "get_state", "toggle", "calibrate", "read", "move_to"];
    let make = move || {
        (0..255)
            .map(|i: usize| {
                let name = match names {
                    Names::SharedPrefix => format!("self.audio_speaker.set_v{i:05}"),
                    Names::Varied => {
                        let part = PARTS.iter().cycle().nth(i).copied().unwrap_or_default();
                        let verb = VERBS.iter().cycle().nth(i).copied().unwrap_or_default();
                        format!("self.{part}_{}.{verb}", i / PARTS.len())
                    }
                };
                let name: &'static str = Box::leak(name.into_boxed_str());
                let tool: &'static Tool<Board> = Box::leak(Box::new(Board::filler(name)));
                tool
            })
            .collect()
    };
    match names {
        Names::SharedPrefix => SHARED.get_or_init(make),
        Names::Varied => VARIED.get_or_init(make),
    }
}

/// The integer parameters of [`set_levels`], `level_01` to `level_16` (0 to 1000 each).
const LEVELS: [Param; MAX_PARAMS] = {
    const NAMES: [&str; 16] = [
        "level_01", "level_02", "level_03", "level_04", "level_05", "level_06", "level_07",
        "level_08", "level_09", "level_10", "level_11", "level_12", "level_13", "level_14",
        "level_15", "level_16",
    ];
    let mut params = [Param::integer("level_01", "A level"); MAX_PARAMS];
    let (mut to, mut from): (&mut [Param], &[&str]) = (&mut params, &NAMES);
    while let ([param, to_rest @ ..], [name, from_rest @ ..]) = (to, from) {
        *param = Param::integer(name, "A level").range(0, 1000);
        (to, from) = (to_rest, from_rest);
    }
    params
};

/// Reads each of its `N` arguments by name, as a handler does, and answers their sum.
fn sum_levels<const N: usize>(_: &mut Board, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let mut sum = 0;
    for p in LEVELS.iter().take(N) {
        sum += args.int(p.name())?;
    }
    Ok(Output::int(sum).with_evidence(Evidence::new(Level::Applied)))
}

/// `bench.set_levels` with `N` required integer arguments (`level_01` …): the argument-count
/// scenarios call it with all of them.
pub const fn set_levels<const N: usize>() -> Tool<Board> {
    Tool::new(
        "bench.set_levels",
        "Set N levels at once (a bench tool: answers their sum).",
        sum_levels::<N>,
    )
    .params(LEVELS.split_at(N).0)
}
