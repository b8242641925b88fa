//! The board: mcp-hal's demo board (`mcp_hal::sim::DemoBoard`, the simulated devices behind the
//! standard tool kits — the same tools as `examples/device-sim`) on esp-hal's clock, so that the
//! firmware runs on a bare DevKit and a laptop's MCP client can exercise every tool over the LAN.
//! For real hardware, bind the kits to mcp-hal's drivers as `examples/esp32-serial/src/board.rs`
//! does; the HTTP side does not change.

use mcp_hal::kits::DelayNs;
use mcp_hal::sim::{DemoBoard, SimBoard, Timebase};

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

/// Everything the tools act on: mcp-hal's demo board, waiting on esp-hal's delay.
pub type Board = DemoBoard<EspTime>;

/// A wait in a call: esp-hal's blocking delay (a busy wait on the system timer; at most the
/// 200 ms call budget, during which the executor does not run), after which the simulated
/// devices are brought to the time it now is (they run on the firmware's uptime).
pub struct EspTime;

impl Timebase for EspTime {
    fn delay_ns(&mut self, sim: &mut SimBoard, ns: u32) {
        esp_hal::delay::Delay::new().delay_ns(ns);
        sim.set_time(crate::uptime_ms());
    }
}
