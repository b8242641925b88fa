//! The device-sim board, which is mcp-hal's demo board ([`mcp_hal::sim::DemoBoard`]): the sim
//! devices behind the standard tool kits. [`TOOLS`] is "the device-sim tool set". Two additions
//! for the benches: [`SHOW_TEXT`], a tool with a free-form string argument (for the
//! escaped-string scenario), and [`fillers`], 63 filler tools of about 300 listing bytes each
//! (for the tool-count and paging scenarios).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_core::registry::Tool;
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
