//! Firmware upgrades over MCP, with the evidence of each step (feature `ota`).
//!
//! Three tools over a [`FirmwareSlot`] and the board's [`System`] (for the restart):
//!
//! | tool | what it does | evidence |
//! |---|---|---|
//! | [`upgrade`] `self.upgrade_firmware` (user-only; [`upgrade_confirmed`]: open to the model, a person confirms first) | `size`, `sha256`: erases the slot and starts a task that waits for the image | `scheduled` at once; the task ends with `read_back` (the slot's contents hashed, equal to `sha256`, and its header one this board starts: [`FirmwareSlot::check_image`]) and the restart armed, or fails and discards the slot |
//! | [`write()`] `self.firmware.write` (same audience as the upgrade) | `offset`, `data` (base64, up to [`MAX_CHUNK`] bytes): the next piece of the image | `applied` |
//! | [`status`] `self.firmware.status` (read-only) | the running version, what the last start-up did, the upgrade in progress | `measured` after an upgrade: the new version is answering (`trial` until it has answered a tool call, then `upgraded`), or the bootloader rolled back (`boot: "rolled_back"`, `rollback` says why, the sentence names both versions) |
//!
//! The image travels as MCP calls, so an upgrade works over every transport the device has (a
//! UART, MQTT, a WebSocket) and needs no HTTP client on the device. The task reports progress as
//! the pieces arrive and as the slot is read back; a task-less client follows it with the
//! board's task status tool. A cancelled task, a timeout, a write the slot refuses, a hash that
//! does not match and an image this board would not start (another board's, no valid header:
//! checked before the restart, never discovered by a rollback after it) all discard the slot
//! (the task's safe-stop): the running firmware stays.
//!
//! **Who may write.** Pieces are taken only from the client that began the upgrade
//! ([`Reply::peer`]), and the slot boots only when its contents hash to the `sha256` that client
//! gave. A new `self.upgrade_firmware` (user-only or confirmed) replaces one still receiving or
//! verifying — whose client may be gone, and with it the engine that drove its task — and that
//! one's task fails as abandoned; only the restart into a verified image is never interrupted.
//!
//! **After the restart.** The new firmware runs on trial (`self.firmware.status`: `boot:
//! "trial"`, `measured`) until it has answered a tool call end to end; then it calls
//! [`FirmwareSlot::mark_good`] (see [`came_up`]) and the status says `upgraded`. An image the
//! bootloader cannot start, or one that restarts before it confirms itself, is rolled back by the
//! bootloader, and the status reports `boot: "rolled_back"` with the version that did not come up
//! and why — as data, and in its first text; what the boot record says of that start-up stays
//! true while later upgrades write over the slots.

use core::fmt::Write as _;

use mcp_core::schema::Param;
use mcp_core::server::Peer;
use mcp_core::transport::escape::escaped;
use mcp_core::wire::writer::Writer;
use mcp_core::{
    Annotations, Args, Evidence, Level, Output, Progress, Reading, Reply, TaskHooks, TaskInfo,
    TaskPoll, TaskSupport, Tool, ToolError, ToolResult,
};
use sha2::{Digest, Sha256};

use super::system::{HasSystem, REBOOT_DELAY_MS};
use super::{NOT_APPLIED, command_failed, device_error};
use crate::firmware::{BootState, FirmwareSlot, Rollback, Unbootable};
use crate::system::System;

/// The upgrade tool's name.
pub const NAME: &str = "self.upgrade_firmware";
/// The write tool's name.
pub const WRITE: &str = "self.firmware.write";
/// The status tool's name.
pub const STATUS: &str = "self.firmware.status";

/// The largest piece one `self.firmware.write` carries, in bytes (1,368 characters of base64):
/// the call fits a 2 KiB message buffer.
pub const MAX_CHUNK: usize = 1024;
/// How long an upgrade may take, from `self.upgrade_firmware` to the verified image, before the
/// task fails and the slot is discarded.
pub const DEFAULT_TIMEOUT_MS: u32 = 600_000;
/// Bytes of the slot read back and hashed per poll of the task, so that one poll stays short.
pub const VERIFY_PER_POLL: u32 = 4096;

const MAX_DATA: u32 = (MAX_CHUNK as u32).div_ceil(3) * 4;
/// Bytes read back at a time (on the stack of the poll).
const READ_BLOCK: usize = 64;

/// Access to the board's firmware slot and the upgrade in progress.
pub trait HasFirmware {
    /// The slot type.
    type Slot: FirmwareSlot;
    /// The slot and the upgrade's state, kept by the board.
    fn ota(&mut self) -> &mut Ota<Self::Slot>;
}

/// A firmware slot and the upgrade in progress: the board keeps one and hands it out through
/// [`HasFirmware`]. About 180 bytes beside the slot (the SHA-256 state among them).
#[derive(Debug, Clone)]
pub struct Ota<S> {
    /// The slot.
    pub slot: S,
    upgrade: Option<Upgrade>,
    generation: u32,
}

#[derive(Debug, Clone)]
struct Upgrade {
    generation: u32,
    /// The client that began it: only its pieces are taken.
    owner: Peer,
    size: u32,
    expected: [u8; 32],
    received: u32,
    verified: u32,
    phase: Phase,
    hasher: Sha256,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for pieces.
    Receiving,
    /// Reading the slot back and hashing it.
    Verifying,
    /// Verified and activated; the restart is armed.
    Restarting,
    /// Failed; the safe-stop discards the slot.
    Failed,
}

impl Phase {
    const fn as_str(self) -> &'static str {
        match self {
            Phase::Receiving => "receiving",
            Phase::Verifying => "verifying",
            Phase::Restarting => "restarting",
            Phase::Failed => "failed",
        }
    }
}

impl<S> Ota<S> {
    /// `slot`, with no upgrade in progress.
    pub const fn new(slot: S) -> Self {
        Ota {
            slot,
            upgrade: None,
            generation: 0,
        }
    }

    /// `true` while an upgrade is receiving, verifying or waiting for its restart.
    pub fn in_progress(&self) -> bool {
        self.upgrade.is_some()
    }
}

/// Tells the slot that the firmware came up: a firmware calls it once it has answered its first
/// tool call after a start-up (a handler ran and its answer went out: `Handled::ran` with a
/// non-empty answer), so that a handshake alone never confirms an image whose tools do not work,
/// and a client sees the trial (`self.firmware.status` on trial, `measured`) before it is kept.
/// Nothing happens unless a trial image runs.
pub fn came_up<S: FirmwareSlot>(ota: &mut Ota<S>) -> Result<(), S::Error> {
    if ota.slot.boot().state == BootState::Trial {
        ota.slot.mark_good()
    } else {
        Ok(())
    }
}

/// What a client that asked for an upgrade hears once the device restarted: whether the new
/// firmware came up or the bootloader rolled back, as one sentence with its evidence (`measured`:
/// the running firmware answers): `self.upgrade_firmware: firmware 5.4.3 came up after the
/// upgrade from firmware 0.1.0 and answers — measured`, `self.upgrade_firmware: firmware 6.0.0
/// did not come up (the bootloader could not start it); the bootloader rolled back and firmware
/// 5.4.3 runs — measured`. Writes it (as text: escaped in string mode) and returns `true` after an upgrade
/// that came up (after [`came_up`]) or was rolled back; `false`, writing nothing, otherwise
/// (an ordinary start, a trial not confirmed yet).
///
/// A version is the image's own text: it is written only when it is a plain version (up to 32
/// letters, digits and `.+-_`), else as "the new firmware" — the sentence is spoken and goes
/// into a model's dialogue.
pub fn write_boot<S: FirmwareSlot>(ota: &Ota<S>, w: &mut Writer<'_>) -> bool {
    let boot = ota.slot.boot();
    // `firmware 1.1.0`, or the words for it when the version is not a plain one.
    let named = |w: &mut Writer<'_>, v: Option<&str>, otherwise: &str| match v {
        Some(v) if plain_version(v) => {
            w.text("firmware ");
            w.text(v);
        }
        _ => w.text(otherwise),
    };
    match boot.state {
        BootState::Upgraded => {
            w.text(NAME);
            w.text(": ");
            named(w, Some(boot.running), "the new firmware");
            w.text(" came up after the upgrade from ");
            named(w, boot.previous, "the firmware before");
            w.text(" and answers");
        }
        BootState::RolledBack(why) => {
            w.text(NAME);
            w.text(": ");
            named(w, boot.attempted, "the new firmware");
            w.text(" did not come up (");
            w.text(why.as_str());
            w.text("); the bootloader rolled back and ");
            named(w, Some(boot.running), "the firmware before");
            w.text(" runs");
        }
        BootState::Normal | BootState::Trial => return false,
    }
    Evidence::new(Level::Measured).write_sentence_after(w);
    true
}

/// Up to 32 characters of `A-Za-z0-9.+-_`, not empty.
fn plain_version(v: &str) -> bool {
    (1..=32).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'_'))
}

const UPGRADE_PARAMS: &[Param] = &[
    Param::integer("size", "The image's size in bytes").range(1, u32::MAX as i64),
    Param::string(
        "sha256",
        "The image's SHA-256, 64 hexadecimal digits: the slot boots only if its contents match",
    )
    .length(64, 64),
];

const WRITE_PARAMS: &[Param] = &[
    Param::integer(
        "offset",
        "Where this piece goes: the number of bytes sent before it",
    )
    .range(0, u32::MAX as i64),
    Param::string(
        "data",
        "The piece, base64 (standard alphabet, padded), 1 to 1024 bytes",
    )
    .length(4, MAX_DATA),
];

const STATUS_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"running":{"type":"string"},"#,
    r#""boot":{"type":"string","enum":["normal","trial","upgraded","rolled_back"]},"#,
    r#""attempted":{"type":"string"},"previous":{"type":"string"},"#,
    r#""rollback":{"type":"string","enum":["not_bootable","not_confirmed"]},"#,
    r#""upgrade":{"type":"object","properties":{"phase":{"type":"string"},"size":{"type":"integer"},"received":{"type":"integer"},"verified":{"type":"integer"}}}},"#,
    r#""required":["running","boot"]}"#
);

fn hex(digits: &[u8]) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if digits.len() != 64 {
        return None;
    }
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let d = |c: &u8| (*c as char).to_digit(16);
        let [high, low] = pair else { return None };
        *o = (d(high)? * 16 + d(low)?) as u8;
    }
    Some(out)
}

fn upgrade_handler<C: HasFirmware>(
    ctx: &mut C,
    args: &Args<'_>,
    reply: &mut Reply<'_>,
) -> ToolResult {
    let size = args.int_as::<u32>("size")?;
    let Some(expected) = hex(args.str("sha256")?.as_bytes()) else {
        return Err(
            ToolError::new("sha256 must be 64 hexadecimal digits; nothing was started")
                .with_evidence(NOT_APPLIED),
        );
    };
    let ota = ctx.ota();
    if ota
        .upgrade
        .as_ref()
        .is_some_and(|u| u.phase == Phase::Restarting)
    {
        return Err(ToolError::new(
            "The device is about to restart into a verified image; nothing was started",
        )
        .with_evidence(NOT_APPLIED));
    }
    let capacity = ota.slot.capacity();
    if size > capacity {
        let refused = reply.error_with(|w| {
            w.text("The image is larger than the slot (");
            w.uint(size.into());
            w.text(" bytes; the slot holds ");
            w.uint(capacity.into());
            w.text("); nothing was started");
        });
        return Err(refused.with_evidence(NOT_APPLIED));
    }
    // A newer upgrade replaces one still receiving or verifying (its client may be gone, and
    // with it the engine that drove its task): that one's task fails as abandoned.
    ota.upgrade = None;
    ota.slot.begin(size).map_err(|e| command_failed(&e))?;
    ota.generation = ota.generation.wrapping_add(1);
    ota.upgrade = Some(Upgrade {
        generation: ota.generation,
        owner: reply.peer(),
        size,
        expected,
        received: 0,
        verified: 0,
        phase: Phase::Receiving,
        hasher: Sha256::new(),
    });
    let started = Evidence::new(Level::Scheduled)
        .commanded(Reading::Int(size.into()))
        .unit("bytes");
    Ok(Output::task(ota.generation.into()).with_evidence(started))
}

/// The decoded length of `data` (standard base64, padded), or `None` when it is not base64.
fn base64_len(data: &[u8]) -> Option<usize> {
    if data.is_empty() || !data.len().is_multiple_of(4) {
        return None;
    }
    let pad = data.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return None;
    }
    let body = data.get(..data.len() - pad)?;
    if !body.iter().all(|&c| sextet(c).is_some()) {
        return None;
    }
    // The bits a padded group leaves over must be zero (one spelling per byte string).
    let last = sextet(*body.last()?)?;
    let unused = match pad {
        1 => last & 0b11,
        2 => last & 0b1111,
        _ => 0,
    };
    (unused == 0).then_some(data.len() / 4 * 3 - pad)
}

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes checked base64 ([`base64_len`] said yes) a group at a time, handing out up to 48
/// bytes at a time.
fn decode_each<E>(data: &[u8], mut f: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
    let mut buf = [0u8; 48];
    for groups in data.chunks(64) {
        let mut n = 0;
        for g in groups.chunks_exact(4) {
            let v = g.iter().fold(0u32, |acc, &c| {
                (acc << 6) | u32::from(sextet(c).unwrap_or(0))
            });
            let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
            let keep = 3usize.saturating_sub(g.iter().filter(|&&c| c == b'=').count());
            for (slot, byte) in buf.iter_mut().skip(n).zip(bytes.into_iter().take(keep)) {
                *slot = byte;
                n += 1;
            }
        }
        f(buf.get(..n).unwrap_or_default())?;
    }
    Ok(())
}

fn write_handler<C: HasFirmware>(
    ctx: &mut C,
    args: &Args<'_>,
    reply: &mut Reply<'_>,
) -> ToolResult {
    let offset = args.int_as::<u32>("offset")?;
    let data = args.str("data")?.as_bytes();
    let ota = ctx.ota();
    let Some(up) = ota.upgrade.as_mut().filter(|u| u.phase == Phase::Receiving) else {
        return Err(ToolError::new(
            "No upgrade is receiving: call self.upgrade_firmware first; nothing was written",
        )
        .with_evidence(NOT_APPLIED));
    };
    if up.owner != reply.peer() {
        return Err(ToolError::new(
            "The upgrade that is receiving belongs to another client; nothing was written",
        )
        .with_evidence(NOT_APPLIED));
    }
    if offset != up.received {
        let refused = reply.error_with(|w| {
            w.text("The next piece starts at byte ");
            w.uint(up.received.into());
            w.text(", not ");
            w.uint(offset.into());
            w.text("; nothing was written");
        });
        return Err(refused.with_evidence(NOT_APPLIED));
    }
    let Some(len) = base64_len(data).filter(|&n| n <= MAX_CHUNK) else {
        return Err(ToolError::new(
            "data must be standard padded base64 of 1 to 1024 bytes; nothing was written",
        )
        .with_evidence(NOT_APPLIED));
    };
    let len = len as u32;
    if len > up.size - up.received {
        let refused = reply.error_with(|w| {
            w.text("The piece goes past the image's ");
            w.uint(up.size.into());
            w.text(" bytes; nothing was written");
        });
        return Err(refused.with_evidence(NOT_APPLIED));
    }
    let slot = &mut ota.slot;
    let mut at = offset;
    let wrote = decode_each::<<C::Slot as crate::ErrorType>::Error>(data, |bytes| {
        slot.write(at, bytes)?;
        at += bytes.len() as u32;
        Ok(())
    });
    if let Err(e) = wrote {
        // Part of the piece may be in the slot: the upgrade cannot go on.
        up.phase = Phase::Failed;
        let failed = reply.error_with(|w| {
            w.text(crate::Error::message(&e));
            w.text(" writing the slot; the upgrade is abandoned and the running firmware stays");
        });
        return Err(failed.with_evidence(Evidence::new(Level::Unknown)));
    }
    up.received = at;
    let (received, size) = (up.received, up.size);
    let out = reply.text(format_args!("{received} of {size} bytes received"))?;
    Ok(out.with_evidence(Evidence::new(Level::Applied)))
}

fn poll<C: HasFirmware + HasSystem>(ctx: &mut C, task: &TaskInfo) -> TaskPoll {
    let generation = task.data as u32;
    let ota = ctx.ota();
    let Some(up) = ota.upgrade.as_mut().filter(|u| u.generation == generation) else {
        return TaskPoll::Done(Err(ToolError::new(
            "The upgrade was abandoned: a newer one replaced it",
        )));
    };
    let progress = |up: &Upgrade| {
        TaskPoll::Working(Some(Progress {
            progress: f64::from(up.received) + f64::from(up.verified),
            total: Some(2.0 * f64::from(up.size)),
        }))
    };
    match up.phase {
        Phase::Failed => {
            return TaskPoll::Done(Err(ToolError::new(
                "Writing the slot failed; the upgrade is abandoned and the running firmware stays",
            )));
        }
        Phase::Restarting => {
            return TaskPoll::Error("the upgrade's task was polled after it ended");
        }
        Phase::Receiving if up.received < up.size => return progress(up),
        Phase::Receiving => up.phase = Phase::Verifying,
        Phase::Verifying => {}
    }
    let mut block = [0u8; READ_BLOCK];
    let stop = up.size.min(up.verified.saturating_add(VERIFY_PER_POLL));
    while up.verified < stop {
        let n = (stop - up.verified).min(READ_BLOCK as u32) as usize;
        let block = block.get_mut(..n).unwrap_or_default();
        if let Err(e) = ota.slot.read(up.verified, block) {
            up.phase = Phase::Failed;
            return TaskPoll::Done(Err(device_error(&e)));
        }
        up.hasher.update(&*block);
        up.verified += n as u32;
    }
    if up.verified < up.size {
        return progress(up);
    }
    let size = up.size;
    let evidence = Evidence::new(Level::ReadBack)
        .commanded(Reading::Int(size.into()))
        .observed(Reading::Int(up.verified.into()))
        .unit("bytes");
    if up.hasher.finalize_reset().as_slice() != up.expected {
        up.phase = Phase::Failed;
        return TaskPoll::Done(Err(ToolError::new(
            "The image read back from the slot does not match the sha256 given; it will not boot and the running firmware stays",
        )
        .with_evidence(evidence)));
    }
    // The header as the bootloader will read it (board, version): an image this board would not
    // start fails here, before a restart that could only roll back.
    if let Err(why) = ota.slot.check_image() {
        up.phase = Phase::Failed;
        return TaskPoll::Done(Err(ToolError::new(match why {
            Unbootable::OtherBoard => {
                "The image matches its sha256, but it is built for another board: this board would not start it, so the device does not restart and the running firmware stays"
            }
            _ => {
                "The image matches its sha256, but it has no valid image header: this board would not start it, so the device does not restart and the running firmware stays"
            }
        })
        .with_evidence(evidence)));
    }
    if let Err(e) = ota.slot.activate() {
        up.phase = Phase::Failed;
        return TaskPoll::Done(Err(device_error(&e)));
    }
    up.phase = Phase::Restarting;
    if let Err(e) = ctx.system().schedule_reboot(REBOOT_DELAY_MS) {
        if let Some(up) = ctx.ota().upgrade.as_mut() {
            up.phase = Phase::Failed;
        }
        return TaskPoll::Done(Err(device_error(&e)));
    }
    TaskPoll::Done(Ok(Output::text(
        "The image read back from the slot matches its sha256; the device restarts into it in 1 s, on trial: self.firmware.status then says whether it came up",
    )
    .with_evidence(evidence)))
}

/// The safe-stop: discards the slot of an upgrade that has not been activated.
fn stop<C: HasFirmware>(ctx: &mut C, task: &TaskInfo) -> Result<(), ToolError> {
    let ota = ctx.ota();
    let ours = ota
        .upgrade
        .as_ref()
        .is_some_and(|u| u.generation == task.data as u32 && u.phase != Phase::Restarting);
    if !ours {
        return Ok(());
    }
    ota.upgrade = None;
    ota.slot.abort().map_err(|e| device_error(&e))
}

/// Writes an image's version into a sentence: escaped and capped (it is the image's text, and
/// backends speak and log the sentence), as every string from the wire or an image is.
fn version(w: &mut Writer<'_>, v: &str) {
    let _ = write!(w, "{}", escaped(v).max_chars(MAX_VERSION_SHOWN));
}

/// The most characters of a version a sentence shows.
const MAX_VERSION_SHOWN: usize = 64;

fn status_handler<C: HasFirmware>(ctx: &mut C, _: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let ota = ctx.ota();
    let boot = ota.slot.boot();
    let upgrade = ota.upgrade.as_ref();
    let attempted = boot.attempted.unwrap_or("");
    let previous = boot.previous.unwrap_or("");
    let (state, rollback) = match boot.state {
        BootState::Normal => ("normal", None),
        BootState::Trial => ("trial", None),
        BootState::Upgraded => ("upgraded", None),
        BootState::RolledBack(why) => ("rolled_back", Some(why)),
    };
    // A rollback is what the device measured of the last start-up: reported as data
    // (`boot: "rolled_back"`, why), with the sentence that names both versions first.
    let out = reply.report(
        |w| {
            match rollback {
                Some(why) => {
                    w.text("Firmware ");
                    version(w, attempted);
                    w.text(" did not come up (");
                    w.text(why.as_str());
                    w.text("); the bootloader rolled back and ");
                    version(w, boot.running);
                    w.text(" runs");
                }
                None => {
                    w.text("Firmware ");
                    version(w, boot.running);
                    w.text(" is running");
                }
            }
            match boot.state {
                BootState::Upgraded => {
                    w.text(": it came up after the upgrade from ");
                    version(w, previous);
                    w.text(" and answers");
                }
                BootState::Trial => {
                    w.text(" on trial after the upgrade from ");
                    version(w, previous);
                    w.text(": it answers, not yet confirmed");
                }
                _ => {}
            }
            if let Some(up) = upgrade {
                w.text("; an upgrade is ");
                w.text(up.phase.as_str());
                w.text(" (");
                w.uint(up.received.into());
                w.text(" of ");
                w.uint(up.size.into());
                w.text(" bytes)");
            }
        },
        |o| {
            o.str("running", boot.running).str("boot", state);
            if boot.attempted.is_some() {
                o.str("attempted", attempted).str("previous", previous);
            }
            if let Some(why) = rollback {
                o.str(
                    "rollback",
                    match why {
                        Rollback::NotBootable => "not_bootable",
                        Rollback::NotConfirmed => "not_confirmed",
                    },
                );
            }
            if let Some(up) = upgrade {
                o.object("upgrade", |o| {
                    o.str("phase", up.phase.as_str())
                        .int("size", up.size.into())
                        .int("received", up.received.into())
                        .int("verified", up.verified.into());
                });
            }
        },
    )?;
    let measured = Evidence::new(Level::Measured);
    Ok(match boot.state {
        BootState::Normal => out,
        _ => out.with_evidence(measured),
    })
}

/// The task hooks of [`upgrade`], with a chosen timeout.
pub const fn hooks<C: HasFirmware + HasSystem>(timeout_ms: u32) -> TaskHooks<C> {
    TaskHooks {
        poll: poll::<C>,
        stop: Some(stop::<C>),
        timeout_ms,
    }
}

const UPGRADE_DESCRIPTION: &str = "Upgrade the firmware. Give the image's size and SHA-256, then send it with self.firmware.write. A task reports progress and ends when the slot's contents are verified; the device then restarts into the new firmware on trial, and rolls back if it does not come up (self.firmware.status tells).";

/// `self.upgrade_firmware` (user-only): `size` (bytes) and `sha256` (64 hex digits). Starts a
/// long-running upgrade (see the [module](self)).
pub const fn upgrade<C: HasFirmware + HasSystem>() -> Tool<C> {
    Tool::new(NAME, UPGRADE_DESCRIPTION, upgrade_handler::<C>)
        .params(UPGRADE_PARAMS)
        .annotations(Annotations::new().destructive(true))
        .long_running(TaskSupport::Optional, hooks::<C>(DEFAULT_TIMEOUT_MS))
        .answer_at_once()
        .user_only()
}

/// The question an upgrade asks a person ([`upgrade_confirmed`]; mcp-core's feature `confirm`):
/// it names the image it approves, from the call's validated arguments — `Upgrade the device's
/// firmware to the 524288-byte image with SHA-256 9f86d081…?` — and the engine adds which client
/// asks. Two upgrades waiting on one device ask two different questions.
pub const CONFIRM: mcp_core::Confirm = mcp_core::Confirm::new(
    "Upgrade the device's firmware to the {size}-byte image with SHA-256 {sha256:8}?",
);

/// `self.upgrade_firmware` open to the model behind a person's yes ([`CONFIRM`]), with
/// [`write_open`] for its pieces.
pub const fn upgrade_confirmed<C: HasFirmware + HasSystem>() -> Tool<C> {
    Tool::new(NAME, UPGRADE_DESCRIPTION, upgrade_handler::<C>)
        .params(UPGRADE_PARAMS)
        .annotations(Annotations::new().destructive(true))
        .long_running(TaskSupport::Optional, hooks::<C>(DEFAULT_TIMEOUT_MS))
        .answer_at_once()
        .confirm(CONFIRM)
}

const WRITE_DESCRIPTION: &str = "Send the next piece of the image an upgrade is receiving: offset is the number of bytes sent before it, data up to 1024 bytes in base64.";

/// `self.firmware.write` (user-only, like [`upgrade`]).
pub const fn write<C: HasFirmware>() -> Tool<C> {
    write_open::<C>().user_only()
}

/// `self.firmware.write` open to the model, for [`upgrade_confirmed`]: a piece lands only in a
/// slot a confirmed upgrade opened, and boots only if the whole image matches its `sha256`.
pub const fn write_open<C: HasFirmware>() -> Tool<C> {
    Tool::new(WRITE, WRITE_DESCRIPTION, write_handler::<C>)
        .params(WRITE_PARAMS)
        .annotations(Annotations::new().destructive(false).idempotent(false))
}

/// `self.firmware.status` (read-only): the running version, what the last start-up did, the
/// upgrade in progress.
pub const fn status<C: HasFirmware>() -> Tool<C> {
    Tool::new(
        STATUS,
        "The running firmware's version, whether the last upgrade came up (measured: the new version answers) or was rolled back, and the upgrade in progress.",
        status_handler::<C>,
    )
    .output_schema(STATUS_SCHEMA)
    .annotations(Annotations::new().read_only(true))
}

#[cfg(test)]
mod test {
    use super::*;

    fn decode(s: &str) -> Option<Vec<u8>> {
        let n = base64_len(s.as_bytes())?;
        let mut out = Vec::new();
        decode_each::<()>(s.as_bytes(), |b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(out.len(), n);
        Some(out)
    }

    #[test]
    fn base64_decodes_the_standard_alphabet_and_refuses_the_rest() {
        assert_eq!(decode("TWFu").unwrap(), b"Man");
        assert_eq!(decode("TWE=").unwrap(), b"Ma");
        assert_eq!(decode("TQ==").unwrap(), b"M");
        assert_eq!(decode("+/+/").unwrap(), [0xfb, 0xff, 0xbf]);
        let long: Vec<u8> = (0..=255u8).cycle().take(1024).collect();
        let text = {
            const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut s = String::new();
            for c in long.chunks(3) {
                let v = c
                    .iter()
                    .enumerate()
                    .fold(0u32, |a, (i, &b)| a | u32::from(b) << (16 - 8 * i));
                for i in 0..4 {
                    s.push(if i <= c.len() {
                        A[(v >> (18 - 6 * i) & 63) as usize] as char
                    } else {
                        '='
                    });
                }
            }
            s
        };
        assert_eq!(text.len(), MAX_DATA as usize);
        assert_eq!(decode(&text).unwrap(), long);
        for bad in [
            "", "TWF", "TW=u", "T===", "TWE-", "TWF=", "TR==", "TWFu\n", "TQ==TQ==",
        ] {
            assert_eq!(base64_len(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn hex_digests_parse_in_either_case() {
        let h = "00ff10AB".repeat(8);
        let d = hex(h.as_bytes()).unwrap();
        assert_eq!(&d[..4], [0x00, 0xff, 0x10, 0xab]);
        assert_eq!(hex(&h.as_bytes()[..63]), None);
        assert_eq!(hex("g".repeat(64).as_bytes()), None);
    }
}
