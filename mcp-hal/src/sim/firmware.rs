//! [`SimFirmware`]: two image slots and a boot record in memory the firmware lends it, with the
//! bootloader's start-up decision (trial boot, confirmation, rollback).

use crate::ErrorKind;
use crate::firmware::{BootReport, BootState, FirmwareSlot, Rollback, Unbootable};

/// The magic that starts a simulated firmware image.
pub const IMAGE_MAGIC: &[u8; 6] = b"MCPFW1";

/// Bytes of the boot record at the start of the storage.
const RECORD: usize = SimFirmware::RECORD;
/// The record's format (`OTA1` kept no versions: such a record reads as a first start-up).
const RECORD_MAGIC: &[u8; 4] = b"OTA2";
/// The most bytes of a version the record keeps (cut at a character).
const VERSION_LEN: usize = 31;
/// Where the attempted and the previous versions are kept: a length byte, then the text.
const ATTEMPTED_AT: usize = 28;
const PREVIOUS_AT: usize = 60;
/// Where the checksum is, over the bytes before it.
const SUM_AT: usize = RECORD - 4;
/// The slot id of the built-in (factory) firmware.
const FACTORY: u8 = 0xFF;
const NONE: u8 = 0xFE;

/// Writes the header of a simulated image for `board` at `version` into `out`; the image is the
/// header followed by any payload. Returns the header's length, or `None` when `out` is too
/// small or a name is longer than 255 bytes.
///
/// The format, for tools that build images: `MCPFW1`, one byte of length and the board's name,
/// one byte of length and the version.
pub fn write_image_header(board: &str, version: &str, out: &mut [u8]) -> Option<usize> {
    let (b, v) = (board.as_bytes(), version.as_bytes());
    let len = IMAGE_MAGIC.len() + 2 + b.len() + v.len();
    let (bl, vl) = ([u8::try_from(b.len()).ok()?], [u8::try_from(v.len()).ok()?]);
    let header = IMAGE_MAGIC.iter().chain(&bl).chain(b).chain(&vl).chain(v);
    for (o, &byte) in out.get_mut(..len)?.iter_mut().zip(header) {
        *o = byte;
    }
    Some(len)
}

/// The board name and version in an image's header, when it has one.
fn parse_header(image: &[u8]) -> Option<(&str, &str)> {
    let rest = image.strip_prefix(IMAGE_MAGIC)?;
    let (&bl, rest) = rest.split_first()?;
    let (board, rest) = rest.split_at_checked(bl.into())?;
    let (&vl, rest) = rest.split_first()?;
    let (version, _) = rest.split_at_checked(vl.into())?;
    Some((
        core::str::from_utf8(board).ok()?,
        core::str::from_utf8(version)
            .ok()
            .filter(|v| !v.is_empty())?,
    ))
}

/// A version as the boot record keeps it: copied when the bootloader decided, so that a later
/// upgrade writing over a slot never changes what the record says of the last start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    bytes: [u8; VERSION_LEN],
    len: u8,
}

impl Version {
    const EMPTY: Version = Version {
        bytes: [0; VERSION_LEN],
        len: 0,
    };

    /// `v`, cut at a character to [`VERSION_LEN`] bytes.
    fn of(v: &str) -> Version {
        let mut end = v.len().min(VERSION_LEN);
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        let mut out = Version::EMPTY;
        if let (Some(dst), Some(src)) = (out.bytes.get_mut(..end), v.as_bytes().get(..end)) {
            dst.copy_from_slice(src);
        }
        out.len = end as u8;
        out
    }

    fn load(bytes: &[u8]) -> Option<Version> {
        let (&len, rest) = bytes.split_first()?;
        let text = core::str::from_utf8(rest.get(..usize::from(len))?).ok()?;
        Some(Version::of(text))
    }

    fn store(&self, to: &mut [u8]) {
        if let Some((len, rest)) = to.split_first_mut() {
            *len = self.len;
            if let Some(dst) = rest.get_mut(..VERSION_LEN) {
                dst.copy_from_slice(&self.bytes);
            }
        }
    }
}

/// The boot record, as kept in the first [`RECORD`] bytes of the storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    state: BootState,
    running: u8,
    previous: u8,
    attempted: u8,
    pending: u8,
    sizes: [u32; 2],
    /// The version the last upgrade tried to start (empty: its image had no valid header).
    attempted_version: Version,
    /// The version that ran before the last upgrade.
    previous_version: Version,
}

impl Record {
    const FRESH: Record = Record {
        state: BootState::Normal,
        running: FACTORY,
        previous: NONE,
        attempted: NONE,
        pending: NONE,
        sizes: [0; 2],
        attempted_version: Version::EMPTY,
        previous_version: Version::EMPTY,
    };

    fn checksum(bytes: &[u8]) -> u32 {
        // FNV-1a: enough to tell a record from blank or stale memory.
        bytes.iter().fold(0x811c_9dc5, |h: u32, &b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        })
    }

    fn load(bytes: &[u8]) -> Option<Record> {
        let bytes: &[u8; RECORD] = bytes.get(..RECORD)?.try_into().ok()?;
        let (body, sum) = bytes.split_at(SUM_AT);
        if !body.starts_with(RECORD_MAGIC) || sum != Self::checksum(body).to_le_bytes() {
            return None;
        }
        let state = match bytes[4] {
            0 => BootState::Normal,
            1 => BootState::Trial,
            2 => BootState::Upgraded,
            3 => BootState::RolledBack(Rollback::NotBootable),
            4 => BootState::RolledBack(Rollback::NotConfirmed),
            _ => return None,
        };
        let word = |w: [u8; 4]| u32::from_le_bytes(w);
        Some(Record {
            state,
            running: bytes[5],
            previous: bytes[6],
            attempted: bytes[7],
            pending: bytes[8],
            sizes: [
                word([bytes[12], bytes[13], bytes[14], bytes[15]]),
                word([bytes[16], bytes[17], bytes[18], bytes[19]]),
            ],
            attempted_version: Version::load(&bytes[ATTEMPTED_AT..PREVIOUS_AT])?,
            previous_version: Version::load(&bytes[PREVIOUS_AT..SUM_AT])?,
        })
    }

    fn store(&self, storage: &mut [u8]) {
        let mut bytes = [0u8; RECORD];
        bytes[..4].copy_from_slice(RECORD_MAGIC);
        bytes[4] = match self.state {
            BootState::Normal => 0,
            BootState::Trial => 1,
            BootState::Upgraded => 2,
            BootState::RolledBack(Rollback::NotBootable) => 3,
            BootState::RolledBack(Rollback::NotConfirmed) => 4,
        };
        bytes[5] = self.running;
        bytes[6] = self.previous;
        bytes[7] = self.attempted;
        bytes[8] = self.pending;
        bytes[12..16].copy_from_slice(&self.sizes[0].to_le_bytes());
        bytes[16..20].copy_from_slice(&self.sizes[1].to_le_bytes());
        self.attempted_version
            .store(&mut bytes[ATTEMPTED_AT..PREVIOUS_AT]);
        self.previous_version.store(&mut bytes[PREVIOUS_AT..SUM_AT]);
        let sum = Self::checksum(&bytes[..SUM_AT]);
        bytes[SUM_AT..].copy_from_slice(&sum.to_le_bytes());
        if let Some(to) = storage.get_mut(..RECORD) {
            to.copy_from_slice(&bytes);
        }
    }
}

/// A simulated firmware store: the built-in (factory) firmware, two image slots and a boot
/// record, in memory the firmware lends with [`attach`](SimFirmware::attach) — memory that
/// survives a restart (a RAM region the start-up code leaves alone, a file on a host), as flash
/// would.
///
/// The record is what a bootloader keeps. [`attach`](SimFirmware::attach) is the start-up:
///
/// - an image activated before the restart boots on trial when its header names this board
///   (`BootState::Trial`, the image's version running); otherwise the bootloader cannot start
///   it (`RolledBack(NotBootable)`) and the firmware that ran before runs on;
/// - a trial image that did not [`mark_good`](FirmwareSlot::mark_good) before this restart is
///   rolled back (`RolledBack(NotConfirmed)`).
///
/// An upgrade writes the slot that is not running. Writes and reads past the size given to
/// `begin` are refused with [`ErrorKind::Unsupported`]; without storage the capacity is 0.
#[derive(Debug)]
pub struct SimFirmware {
    storage: &'static mut [u8],
    board: &'static str,
    factory: &'static str,
    /// The slot an upgrade is writing, and its size.
    writing: Option<(u8, u32)>,
}

impl SimFirmware {
    /// Bytes of the boot record at the start of the storage; the rest is two slots of half of
    /// it each.
    pub const RECORD: usize = 96;

    /// A store for `board`'s images whose built-in firmware is `factory` (its version), with no
    /// storage yet.
    pub const fn new(board: &'static str, factory: &'static str) -> Self {
        SimFirmware {
            storage: &mut [],
            board,
            factory,
            writing: None,
        }
    }

    /// Lends the store its memory (a boot record and two slots: at least a few hundred bytes)
    /// and starts up: the bootloader's decision on an image activated before the restart, or a
    /// trial that was never confirmed (see the type's docs). Blank or foreign memory is a first
    /// start-up.
    pub fn attach(&mut self, storage: &'static mut [u8]) {
        self.storage = storage;
        self.writing = None;
        let mut r = Record::load(self.storage).unwrap_or(Record::FRESH);
        // The versions are copied into the record as the bootloader decides: a later upgrade
        // writes over the slots, never over what the record says of this start-up.
        if r.pending != NONE {
            let slot = r.pending;
            r.pending = NONE;
            r.attempted = slot;
            let header = self.header(slot, r.sizes);
            r.attempted_version = Version::of(header.map_or("", |(_, v)| v));
            r.previous_version = Version::of(self.version(&r, r.running).unwrap_or(""));
            let ours = header.is_some_and(|(board, _)| board == self.board);
            if ours {
                r.previous = r.running;
                r.running = slot;
                r.state = BootState::Trial;
            } else {
                r.previous = r.running;
                r.state = BootState::RolledBack(Rollback::NotBootable);
            }
        } else if r.state == BootState::Trial {
            r.attempted = r.running;
            r.running = r.previous;
            r.state = BootState::RolledBack(Rollback::NotConfirmed);
        }
        r.store(self.storage);
    }

    /// The memory as it stands (to keep it across a restart: a host writes it to a file).
    pub fn storage(&self) -> &[u8] {
        self.storage
    }

    /// Takes the memory back (for a restart that lends it to the next start-up), leaving the
    /// store without storage.
    pub fn detach(&mut self) -> &'static mut [u8] {
        self.writing = None;
        core::mem::take(&mut self.storage)
    }

    fn slot_len(&self) -> usize {
        self.storage.len().saturating_sub(RECORD) / 2
    }

    fn slot(&self, slot: u8) -> &[u8] {
        let n = self.slot_len();
        let at = RECORD + usize::from(slot) * n;
        self.storage.get(at..at + n).unwrap_or(&[])
    }

    fn header(&self, slot: u8, sizes: [u32; 2]) -> Option<(&str, &str)> {
        let size = *sizes.get(usize::from(slot))? as usize;
        parse_header(self.slot(slot).get(..size)?)
    }

    fn record(&self) -> Record {
        Record::load(self.storage).unwrap_or(Record::FRESH)
    }

    /// The version in `slot`'s header (the running firmware's: its slot is never written).
    fn version(&self, r: &Record, slot: u8) -> Option<&str> {
        match slot {
            FACTORY => Some(self.factory),
            NONE => None,
            s => Some(
                self.header(s, r.sizes)
                    .map_or("an image with no valid header", |(_, v)| v),
            ),
        }
    }

    /// A version the record kept at `at` (`None` when the record names no `slot`): read where
    /// it is kept (the record was checked when it was loaded).
    fn kept(&self, slot: u8, at: usize) -> Option<&str> {
        if slot == NONE {
            return None;
        }
        let text = self
            .storage
            .split_at_checked(at)
            .and_then(|(_, rest)| rest.split_first())
            .and_then(|(&len, rest)| rest.get(..usize::from(len).min(VERSION_LEN)))
            .and_then(|b| core::str::from_utf8(b).ok())
            .unwrap_or_default();
        Some(match text {
            "" => "an image with no valid header",
            v => v,
        })
    }

    fn range(&self, offset: u32, len: usize) -> Result<core::ops::Range<usize>, ErrorKind> {
        let (slot, size) = self.writing.ok_or(ErrorKind::Unsupported)?;
        let start = offset as usize;
        let end = start.checked_add(len).ok_or(ErrorKind::Unsupported)?;
        if end > size as usize {
            return Err(ErrorKind::Unsupported);
        }
        let base = RECORD + usize::from(slot) * self.slot_len();
        Ok(base + start..base + end)
    }
}

impl crate::ErrorType for SimFirmware {
    type Error = ErrorKind;
}

impl FirmwareSlot for SimFirmware {
    fn capacity(&self) -> u32 {
        u32::try_from(self.slot_len()).unwrap_or(u32::MAX)
    }

    fn begin(&mut self, size: u32) -> Result<(), ErrorKind> {
        if size as usize > self.slot_len() {
            return Err(ErrorKind::Unsupported);
        }
        let mut r = self.record();
        let slot = if r.running == 0 { 1 } else { 0 };
        r.pending = NONE;
        if let Some(s) = r.sizes.get_mut(usize::from(slot)) {
            *s = size;
        }
        r.store(self.storage);
        let n = self.slot_len();
        let at = RECORD + usize::from(slot) * n;
        if let Some(region) = self.storage.get_mut(at..at + n) {
            region.fill(0xFF);
        }
        self.writing = Some((slot, size));
        Ok(())
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), ErrorKind> {
        let range = self.range(offset, data.len())?;
        let to = self.storage.get_mut(range).ok_or(ErrorKind::Unsupported)?;
        to.copy_from_slice(data);
        Ok(())
    }

    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), ErrorKind> {
        let range = self.range(offset, buf.len())?;
        buf.copy_from_slice(self.storage.get(range).ok_or(ErrorKind::Unsupported)?);
        Ok(())
    }

    fn check_image(&mut self) -> Result<(), Unbootable> {
        let (slot, size) = self.writing.ok_or(Unbootable::NoHeader)?;
        let image = self
            .slot(slot)
            .get(..size as usize)
            .ok_or(Unbootable::NoHeader)?;
        match parse_header(image) {
            None => Err(Unbootable::NoHeader),
            Some((board, _)) if board != self.board => Err(Unbootable::OtherBoard),
            Some(_) => Ok(()),
        }
    }

    fn activate(&mut self) -> Result<(), ErrorKind> {
        let (slot, _) = self.writing.ok_or(ErrorKind::Unsupported)?;
        let mut r = self.record();
        r.pending = slot;
        r.store(self.storage);
        Ok(())
    }

    fn abort(&mut self) -> Result<(), ErrorKind> {
        self.writing = None;
        let mut r = self.record();
        r.pending = NONE;
        r.store(self.storage);
        Ok(())
    }

    fn mark_good(&mut self) -> Result<(), ErrorKind> {
        let mut r = self.record();
        if r.state == BootState::Trial {
            r.state = BootState::Upgraded;
            r.store(self.storage);
        }
        Ok(())
    }

    fn boot(&self) -> BootReport<'_> {
        let r = self.record();
        BootReport {
            running: self.version(&r, r.running).unwrap_or(self.factory),
            state: r.state,
            attempted: self.kept(r.attempted, ATTEMPTED_AT),
            previous: self.kept(r.previous, PREVIOUS_AT),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The store's memory, leaked (a store borrows `&'static mut`). Miri reports leaked memory,
    /// so the tests that lend it are skipped there: this module has no `unsafe` (the crate
    /// forbids it) for Miri to check.
    fn storage(n: usize) -> &'static mut [u8] {
        Box::leak(vec![0u8; n].into_boxed_slice())
    }

    fn image(board: &str, version: &str, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; 64];
        let n = write_image_header(board, version, &mut out).unwrap();
        out.truncate(n);
        out.extend_from_slice(payload);
        out
    }

    /// Writes `img` as an upgrade and activates it.
    fn upgrade(fw: &mut SimFirmware, img: &[u8]) {
        fw.begin(img.len() as u32).unwrap();
        for (i, piece) in img.chunks(7).enumerate() {
            fw.write((i * 7) as u32, piece).unwrap();
        }
        let mut back = vec![0u8; img.len()];
        fw.read(0, &mut back).unwrap();
        assert_eq!(back, img);
        fw.activate().unwrap();
    }

    /// A restart: the storage survives, the rest is built anew.
    fn restart(mut fw: SimFirmware) -> SimFirmware {
        let mut next = SimFirmware::new(fw.board, fw.factory);
        next.attach(fw.detach());
        next
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn an_upgrade_boots_on_trial_and_is_confirmed() {
        let mut fw = SimFirmware::new("board-a", "1.0.0");
        fw.attach(storage(1024));
        assert_eq!(fw.capacity(), (1024 - SimFirmware::RECORD as u32) / 2);
        let first = fw.boot();
        assert_eq!(
            (first.running, first.state, first.attempted),
            ("1.0.0", BootState::Normal, None)
        );
        upgrade(&mut fw, &image("board-a", "1.1.0", b"new code"));
        // Nothing changes before the restart.
        assert_eq!(fw.boot().running, "1.0.0");
        let mut fw = restart(fw);
        let b = fw.boot();
        assert_eq!(
            (b.running, b.state, b.attempted, b.previous),
            ("1.1.0", BootState::Trial, Some("1.1.0"), Some("1.0.0"))
        );
        fw.mark_good().unwrap();
        assert_eq!(fw.boot().state, BootState::Upgraded);
        // Confirmed: the next restart keeps it.
        let fw = restart(fw);
        assert_eq!(
            (fw.boot().running, fw.boot().state),
            ("1.1.0", BootState::Upgraded)
        );
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_trial_that_restarts_unconfirmed_rolls_back() {
        let mut fw = SimFirmware::new("board-a", "1.0.0");
        fw.attach(storage(512));
        upgrade(&mut fw, &image("board-a", "2.0.0", b""));
        let fw = restart(fw);
        assert_eq!(fw.boot().state, BootState::Trial);
        let fw = restart(fw);
        let b = fw.boot();
        assert_eq!(
            (b.running, b.state, b.attempted),
            (
                "1.0.0",
                BootState::RolledBack(Rollback::NotConfirmed),
                Some("2.0.0")
            )
        );
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn an_image_for_another_board_or_without_a_header_does_not_boot() {
        for img in [
            image("board-b", "3.0.0", b"x"),
            b"garbage that is no image".to_vec(),
        ] {
            let mut fw = SimFirmware::new("board-a", "1.0.0");
            fw.attach(storage(512));
            upgrade(&mut fw, &img);
            let fw = restart(fw);
            let b = fw.boot();
            assert_eq!(b.running, "1.0.0");
            assert_eq!(b.state, BootState::RolledBack(Rollback::NotBootable));
            assert!(b.attempted.is_some());
        }
    }

    /// What the record says of the last start-up is kept in the record: a later upgrade writing
    /// over the slot of the image that rolled back (or of the one that ran before) does not
    /// change it; the check before `activate` says what the bootloader would.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn the_record_keeps_its_versions_while_a_later_upgrade_writes_the_slots() {
        let mut fw = SimFirmware::new("b", "1.0.0");
        fw.attach(storage(512));
        upgrade(&mut fw, &image("b", "2.0.0", b""));
        let fw = restart(fw);
        let mut fw = restart(fw); // not confirmed: rolled back
        let b = fw.boot();
        assert_eq!(
            (b.running, b.state, b.attempted, b.previous),
            (
                "1.0.0",
                BootState::RolledBack(Rollback::NotConfirmed),
                Some("2.0.0"),
                Some("1.0.0")
            )
        );
        // The next upgrade erases and writes the slot 2.0.0 was in.
        let next = image("b", "2.0.1", b"fix");
        fw.begin(next.len() as u32).unwrap();
        assert_eq!(
            fw.boot().attempted,
            Some("2.0.0"),
            "while the slot is blank"
        );
        fw.write(0, &next[..5]).unwrap();
        assert_eq!(
            fw.boot().attempted,
            Some("2.0.0"),
            "while it is half written"
        );
        assert_eq!(fw.check_image(), Err(Unbootable::NoHeader));
        fw.write(5, &next[5..]).unwrap();
        assert_eq!(fw.check_image(), Ok(()));
        // Another board's image is refused before the restart.
        let foreign = image("other", "9.0.0", b"");
        fw.begin(foreign.len() as u32).unwrap();
        fw.write(0, &foreign).unwrap();
        assert_eq!(fw.check_image(), Err(Unbootable::OtherBoard));
        // A long version is kept cut at a character.
        let long = format!("1.{}é", "0".repeat(28));
        upgrade(&mut fw, &image("b", &long, b""));
        let fw = restart(fw);
        assert_eq!(
            fw.boot().running,
            long,
            "the running version is read from its slot"
        );
        assert_eq!(
            fw.boot().attempted,
            Some(&long[..30]),
            "cut at a character: the é would make 32 bytes"
        );
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn an_upgrade_writes_the_slot_that_is_not_running() {
        let mut fw = SimFirmware::new("b", "1");
        fw.attach(storage(256));
        upgrade(&mut fw, &image("b", "2", b"two"));
        let mut fw = restart(fw);
        fw.mark_good().unwrap();
        // Slot 0 runs: the next upgrade goes to slot 1 and slot 0 stays intact.
        upgrade(&mut fw, &image("b", "3", b"three"));
        let fw = restart(fw);
        let b = fw.boot();
        assert_eq!((b.running, b.previous), ("3", Some("2")));
        let fw = restart(fw);
        // Not confirmed: back to 2, whose slot was never touched.
        assert_eq!(fw.boot().running, "2");
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn out_of_bounds_and_unbegun_access_is_refused() {
        let mut fw = SimFirmware::new("b", "1");
        assert_eq!(fw.capacity(), 0);
        assert_eq!(fw.begin(1), Err(ErrorKind::Unsupported));
        fw.attach(storage(256));
        assert_eq!(fw.write(0, b"x"), Err(ErrorKind::Unsupported));
        assert_eq!(fw.activate(), Err(ErrorKind::Unsupported));
        assert_eq!(fw.begin(fw.capacity() + 1), Err(ErrorKind::Unsupported));
        fw.begin(10).unwrap();
        assert_eq!(fw.write(8, b"abc"), Err(ErrorKind::Unsupported));
        assert_eq!(fw.write(u32::MAX, b"a"), Err(ErrorKind::Unsupported));
        let mut buf = [0u8; 11];
        assert_eq!(fw.read(0, &mut buf), Err(ErrorKind::Unsupported));
        // An aborted upgrade does not boot.
        fw.write(0, &image("b", "9", b"")[..10]).unwrap();
        fw.activate().unwrap();
        fw.abort().unwrap();
        let fw = restart(fw);
        assert_eq!(
            (fw.boot().running, fw.boot().state),
            ("1", BootState::Normal)
        );
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn blank_or_corrupt_records_are_a_first_start_up() {
        let s = storage(256);
        s.fill(0xA5);
        let mut fw = SimFirmware::new("b", "1");
        fw.attach(s);
        assert_eq!(
            (fw.boot().running, fw.boot().state),
            ("1", BootState::Normal)
        );
        assert_eq!(Record::load(fw.storage()), Some(Record::FRESH));
    }
}
