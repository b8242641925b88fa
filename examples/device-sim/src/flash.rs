//! `--flash FILE`: the simulated device's flash, kept in a file, so that a firmware upgrade
//! (mcp-hal's `kits::firmware` over the demo board's `SimFirmware`) survives the restart it
//! arms, and the restart is real.
//!
//! At start-up the file (blank when absent) is lent to the board's firmware store, whose
//! `attach` is the bootloader's decision: an image activated before the restart boots on trial
//! when its header names this board (`device-sim`), else the firmware that ran before runs on;
//! a trial that restarts before it answered is rolled back. The running version is what the
//! engine reports as `serverInfo.version`.
//!
//! A due reboot (`self.reboot`, or the restart an upgrade arms) writes the store back to the
//! file and replaces this process with a fresh one (`exec`, same arguments, same process id):
//! every session, task and held call is gone, as on a device; stdio clients keep their pipes,
//! network clients reconnect.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mcp_core::transport::escape::escaped;
use mcp_hal::sim::SimFirmware;

use crate::board::Board;

/// The board's name in an image's header: only images for it boot.
pub const BOARD: &str = "device-sim";

/// Bytes of the simulated flash: the boot record and two slots of 256 KiB.
pub const SIZE: usize = SimFirmware::RECORD + 2 * 256 * 1024;

/// The running firmware's version, once [`power_up`] read the flash.
static RUNNING: OnceLock<&'static str> = OnceLock::new();

/// The version the engine reports: the running image's, or the build's without `--flash`.
pub fn version() -> &'static str {
    RUNNING.get().copied().unwrap_or(env!("CARGO_PKG_VERSION"))
}

/// Lends the board the flash in `path` (created blank when absent), runs the bootloader's
/// start-up decision, writes the outcome back, and makes a due reboot restart this process.
pub fn power_up(board: &mut Board, path: &Path) -> Result<(), String> {
    let mut bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("--flash {}: {e}", path.display())),
    };
    bytes.resize(SIZE, 0);
    let record_before = bytes.get(..SimFirmware::RECORD).map(<[u8]>::to_vec);
    board.firmware.slot = SimFirmware::new(BOARD, env!("CARGO_PKG_VERSION"));
    board
        .firmware
        .slot
        .attach(Box::leak(bytes.into_boxed_slice()));
    save(path, board.firmware.slot.storage())?;
    // The bootloader decided about an upgrade at this start-up (it changed the boot record: an
    // image on trial, or one rolled back): news for a xiaozhi backend once it is known.
    let storage = board.firmware.slot.storage();
    if record_before.as_deref() != storage.get(..SimFirmware::RECORD) {
        mcp_host::upgrade_decided();
    }
    let boot = mcp_hal::firmware::FirmwareSlot::boot(&board.firmware.slot);
    let running: &'static str = Box::leak(boot.running.to_owned().into_boxed_str());
    let _ = RUNNING.set(running);
    // The version is the image's: escaped, as every string from the wire or an image.
    eprintln!(
        "device-sim: firmware {} ({:?}) from flash {}",
        escaped(running),
        boot.state,
        path.display()
    );
    let path: PathBuf = path.to_owned();
    let kept = path.clone();
    // A trial image that confirmed itself is written at once: a crash afterwards keeps it.
    mcp_host::on_flash_changed(move |storage| {
        if let Err(e) = save(&kept, storage) {
            eprintln!("device-sim: {e}");
        }
    });
    mcp_host::on_reboot(move |storage| restart(&path, storage));
    Ok(())
}

fn save(path: &Path, storage: &[u8]) -> Result<(), String> {
    std::fs::write(path, storage).map_err(|e| format!("--flash {}: {e}", path.display()))
}

/// Writes the flash back and replaces this process with a fresh start of the same program.
fn restart(path: &Path, storage: &[u8]) {
    if let Err(e) = save(path, storage) {
        eprintln!("device-sim: reboot: {e}; keeps running");
        return;
    }
    eprintln!("device-sim: reboot: restarting");
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("device-sim: reboot: {e}; keeps running");
            return;
        }
    };
    // Only returns on failure.
    let e = Command::new(exe).args(args).exec();
    eprintln!("device-sim: reboot: {e}; keeps running");
}
