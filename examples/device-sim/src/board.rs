//! The simulated board: mcp-hal's demo board ([`mcp_hal::sim::DemoBoard`]: the sim devices
//! behind the standard tool kits, the screen theme, a door sensor that the relay's interlock
//! watches, and the standard tool set), plus `--extra-tools` fillers.

use mcp_core::Tool;

/// Everything the tools act on; its tools are `Board::TOOLS`.
pub type Board = mcp_hal::sim::DemoBoard;

/// Filler tool `i` (about 300 bytes of listing), so that `tools/list` paging can be seen.
/// The tool is leaked: the simulator builds these once at start-up.
pub fn filler_tool(i: usize) -> &'static Tool<Board> {
    let name: &'static str = Box::leak(format!("self.extra.filler_{i:03}").into_boxed_str());
    Box::leak(Box::new(Board::filler(name)))
}
