//! Firmware upgrades: an image slot beside the running firmware, and what the last boot did.
//!
//! # For driver authors
//! An upgrade proves itself in steps, and only the last one is the upgrade: the image was
//! *received* (written to the slot), *verified* (read back from the slot, its SHA-256 equal to
//! the one the sender gave), *scheduled* (marked to boot once, on trial, at the next restart) and
//! finally *running* — the new firmware came up and answers. The trait maps these onto what a
//! bootloader already has (ESP-IDF's `esp_ota_*` with rollback, MCUboot's test swap):
//!
//! - [`begin`](FirmwareSlot::begin) erases the slot that is not running;
//!   [`write`](FirmwareSlot::write) and [`read`](FirmwareSlot::read) reach it by offset;
//! - [`check_image`](FirmwareSlot::check_image) reads the image's header as the bootloader will
//!   (ESP-IDF's `esp_ota_end` image verification and the app description's chip and version,
//!   MCUboot's image header): an image this board would not start is refused *before* the
//!   restart, not discovered by a rollback after it;
//! - [`activate`](FirmwareSlot::activate) makes the next restart boot it on trial (ESP-IDF's
//!   `esp_ota_set_boot_partition`, MCUboot's `boot_set_pending(0)`);
//! - the new firmware calls [`mark_good`](FirmwareSlot::mark_good) once it is up (ESP-IDF's
//!   `esp_ota_mark_app_valid_cancel_rollback`, MCUboot's `boot_set_confirmed`); a restart before
//!   that, or an image the bootloader cannot start, rolls back to the firmware that ran before;
//! - [`boot`](FirmwareSlot::boot) says which of these happened at the last start-up, so the
//!   running firmware can report the upgrade's outcome after the restart that took its caller's
//!   connection away.
//!
//! The hash is checked by the kit ([`kits::firmware`](crate::kits::firmware)), over what `read`
//! returns: the slot's contents, not the bytes that arrived.

use crate::ErrorType;

/// What the bootloader did at the last start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootState {
    /// An ordinary start: no upgrade was waiting.
    Normal,
    /// The upgraded image started on trial and has not yet called
    /// [`mark_good`](FirmwareSlot::mark_good): a restart now rolls back.
    Trial,
    /// The upgraded image started and confirmed itself: the upgrade took.
    Upgraded,
    /// The upgraded image did not come up; the firmware that ran before runs again.
    RolledBack(Rollback),
}

/// Why an upgrade was rolled back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rollback {
    /// The bootloader could not start the image (not an image for this board, a bad header).
    NotBootable,
    /// The image started but the device restarted before it confirmed itself (a crash, a hang
    /// the watchdog ended, a restart before its first answer).
    NotConfirmed,
}

impl Rollback {
    /// A short phrase for a tool result.
    pub const fn as_str(self) -> &'static str {
        match self {
            Rollback::NotBootable => "the bootloader could not start it",
            Rollback::NotConfirmed => "it restarted before it confirmed itself",
        }
    }
}

/// Why the bootloader would not start the image in the slot ([`FirmwareSlot::check_image`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unbootable {
    /// The slot holds no image header the bootloader recognises (or one without a version).
    NoHeader,
    /// The image is built for another board (or chip).
    OtherBoard,
}

impl Unbootable {
    /// A short phrase for a tool result.
    pub const fn as_str(self) -> &'static str {
        match self {
            Unbootable::NoHeader => "it has no valid image header",
            Unbootable::OtherBoard => "it is built for another board",
        }
    }
}

/// The running firmware and the outcome of the last upgrade, as the bootloader left them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootReport<'a> {
    /// The version of the firmware that is running.
    pub running: &'a str,
    /// What the last start-up did.
    pub state: BootState,
    /// The version the last upgrade tried to start (`None` before any upgrade).
    pub attempted: Option<&'a str>,
    /// The version that ran before the last upgrade (`None` before any upgrade).
    pub previous: Option<&'a str>,
}

device_trait! {
    /// An image slot beside the running firmware, and the bootloader's record of the last boot.
    ///
    /// Offsets are bytes from the start of the image. Implementations refuse a write or read past
    /// the size given to [`begin`](FirmwareSlot::begin) ([`ErrorKind::Unsupported`]), and never
    /// touch the running image.
    ///
    /// [`ErrorKind::Unsupported`]: crate::ErrorKind::Unsupported
    pub trait FirmwareSlot: ErrorType {
        /// The largest image the slot holds, in bytes (0: this device cannot be upgraded).
        fn capacity(&self) -> u32;

        /// Erases the slot and prepares it for an image of `size` bytes. Cancels an earlier
        /// [`activate`](FirmwareSlot::activate) that has not restarted yet.
        fn begin(&mut self, size: u32) -> Result<(), Self::Error>;

        /// Writes `data` at `offset`.
        fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), Self::Error>;

        /// Reads the slot's contents at `offset` into `buf`.
        fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Self::Error>;

        /// Whether the bootloader would start the image written to the slot: its header names this
        /// board and a version. Checked after the image's hash matched, before
        /// [`activate`](FirmwareSlot::activate): an image refused here never restarts the device.
        /// The default says yes (a slot that cannot tell leaves it to the bootloader, which rolls
        /// back).
        fn check_image(&mut self) -> Result<(), Unbootable> {
            Ok(())
        }

        /// Makes the next restart boot the slot's image, on trial.
        fn activate(&mut self) -> Result<(), Self::Error>;

        /// Abandons the slot's image: it will not boot.
        fn abort(&mut self) -> Result<(), Self::Error>;

        /// Confirms the running trial image (called by the new firmware once it is up); nothing
        /// when no trial is running.
        fn mark_good(&mut self) -> Result<(), Self::Error>;

        /// What the last start-up did.
        fn boot(&self) -> BootReport<'_>;
    }
}
