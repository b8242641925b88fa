//! Human confirmation (feature `confirm`): a person's yes before a tool acts
//! ([`Tool::confirm`](crate::Tool::confirm)), obtained the way the client allows.
//!
//! A person's yes is a security boundary, so an approval is bound to **one call, one client and
//! one answer** (the rules are stated in full in `docs/CONFIRMATION.md`):
//!
//! - **2025-06-18 / 2025-11-25, a client that declared `elicitation`** at *its own*
//!   `initialize` (elicitation support is a property of each client: see
//!   [`Session`](super::Session)): the call is held (its message bytes, up to `HOLD`), and the
//!   engine writes an `elicitation/create` request — form mode, one boolean — as the answer to the
//!   call's message (`Handled::deferred`: the call's own response comes later). Its id,
//!   `"confirm-<16 hex digits>"`, is unguessable ([`Approval`]). Only a response *from the client
//!   that made the call* ([`Input::peer`](super::Input)) with that id answers it; on `accept`
//!   with `true` the held call is dispatched again, confirmed, and its response is the answer to
//!   the client's response message; on `decline`, `cancel`, an error or no answer within
//!   [`Config::confirm_timeout_ms`](super::Config) nothing runs and the call's response says so.
//! - **2026-07-28 with `elicitation`** in the request's capabilities: nothing is held. The call
//!   is answered `resultType: "input_required"` with the same question and a `requestState` that
//!   binds the tool, the exact `arguments` bytes, an expiry and a fresh nonce under a keyed MAC
//!   (SipHash-2-4, keyed by [`Server::set_entropy`](super::Server::set_entropy)); the client
//!   retries with the same arguments, the state and `inputResponses.confirm`. An accepted state is
//!   **single use**: its nonce is recorded until it expires, and the same state again is -32602.
//!   A state that fails verification is -32602; a client without elicitation gets -32021 naming
//!   it.
//! - **Without elicitation** (xiaozhi backends, 2024-11-05, clients that did not declare it): the
//!   call is held for the device's button. The device shows the question from the first
//!   [`poll`](super::Server::poll) after it was held ([`Pending::shown_ms`]); the firmware passes
//!   a press, with its time and the [`Approval`] it showed, to
//!   [`Server::confirm_on_device`](super::Server::confirm_on_device), which takes it only for
//!   that question and only when it came after the question was shown. The next `poll` runs the
//!   call (or not). While [`Config::hold_answer_ms`](super::Config) lasts (default 25 s, under
//!   the 30 s a xiaozhi backend waits for a tool) the call's **own answer is held back** and is
//!   the real outcome, with its evidence; past that budget the call is answered with a result
//!   the model can read aloud ("Waiting for a person: press the button on the device within 5 s
//!   to confirm: Reboot the device?"; `structuredContent.status` `awaiting_confirmation`), and
//!   the outcome follows as a `notifications/message` (logger `confirmation`) with the call's
//!   result. With `hold_answer_ms` 0 the call is answered that way at once.
//!
//! Whatever the outcome, it is written for the client that made the call:
//! [`Polled::to`](super::Polled) names it, and a transport that serves several clients sends it
//! there only.
//! A confirmed call that runs from `poll` reports [`Polled::ran`](super::Polled), so that a host
//! can tell the other engines on the same hardware ([`Server::touched`](super::Server::touched)).
//!
//! An async tool (`Tool::new_async`) that asks first runs after the yes on the async path: a yes
//! from the client through [`Server::handle_async`](super::Server::handle_async) (or a press on
//! the device) approves the call, and the next [`Server::poll_async`](super::Server::poll_async)
//! runs it and writes its answer for the client that made the call.
//!
//! One call can wait for a person per engine: a second one meanwhile is refused, saying so.

use core::fmt::{self, Write as _};

use super::era::Era;
use super::flow::Caller;
use super::params::members;
use super::respond::{Respond, finish, write_result_object};
use super::{Capacities, ClientName, Handled, Input, Peer, Principal, Session};
use crate::registry::Confirm;
use crate::result::{
    Evidence, Level, Reading, ToolError, commanded, render_result_for, write_first_text,
};
use crate::schema::{Args, validate, validate_object};
#[cfg(feature = "modern")]
use crate::wire::json::JsonStr;
use crate::wire::json::{Json, Kind};
use crate::wire::protocol;
use crate::wire::request::Id;
use crate::wire::response::ErrorCode;
use crate::wire::writer::Writer;

/// The `inputRequests` / `inputResponses` key and the boolean property of the question.
pub(crate) const KEY: &str = "confirm";

/// How many 2026-07-28 approvals are remembered as used (until each expires): a state accepted
/// once is refused afterwards. When every record is still live, a further approval is refused
/// (nothing runs) rather than one of them forgotten.
#[cfg(feature = "modern")]
const SPENT: usize = 4;

/// Names one question put to a person: a fresh, unguessable number for every held call (a keyed
/// hash of a counter, keyed by [`Server::set_entropy`](super::Server::set_entropy)).
///
/// A firmware shows [`Pending`] and passes its `approval` back with a press
/// ([`Server::confirm_on_device`](super::Server::confirm_on_device)): a press answers the question
/// the device showed, never one that replaced it meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Approval(u64);

impl Approval {
    /// The number (for a log line or a display).
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// A time (engine clock, ms), or none: `u64::MAX` stands for none (half the room of an
/// `Option<u64>`, in a struct every firmware with the feature pays for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At(u64);

impl At {
    const NONE: At = At(u64::MAX);

    const fn get(self) -> Option<u64> {
        if self.0 == u64::MAX {
            None
        } else {
            Some(self.0)
        }
    }
}

/// The call held for a person's answer (`len == 0`: none).
#[derive(Debug, Clone, Copy)]
struct Held {
    /// The held message's length, `bytes[..len]`.
    len: u16,
    /// Where the call's id is in the message (start, length).
    id: (u16, u16),
    /// The held tool's index in the registry.
    tool: u16,
    principal: Principal,
    /// The client that made the call: the only one whose answer counts, and the one its outcome
    /// goes to.
    owner: Peer,
    /// That client's session when it called (its revision decides how the outcome is written).
    session: Session,
    approval: u64,
    /// `true`: the question went to the owner as `elicitation/create`; `false`: the answer comes
    /// from the device.
    asked: bool,
    /// A person said yes: the call runs at the caller's next chance (`handle`, `poll`, or their
    /// async twins, which can await an async tool).
    approved: bool,
    /// Since when the device shows the question (the first `poll` after the call was held): a
    /// press counts only after it.
    shown_ms: At,
    /// When the engine gives up (ms, engine clock).
    deadline_ms: u64,
    /// The call's own answer is still owed (held inside the call for a client that can neither
    /// ask its user nor follow a task): written by this time at the latest.
    owed_until: At,
    /// The device's answer, reported by the firmware, acted on by `poll`.
    device_answer: Option<bool>,
}

impl Held {
    const NONE: Held = Held {
        len: 0,
        id: (0, 0),
        tool: 0,
        principal: Principal::Model,
        owner: Peer::ONLY,
        session: Session::NEW,
        approval: 0,
        asked: false,
        approved: false,
        shown_ms: At::NONE,
        deadline_ms: 0,
        owed_until: At::NONE,
        device_answer: None,
    };

    /// 2024-11-05 (xiaozhi backends): a refusal also carries its reason as `error`.
    fn error_member(&self) -> bool {
        self.session.effective_revision() == super::Revision::V2024_11_05
    }
}

/// Bytes at the start of a server's `HOLD` kept for the record of the held call (who made it,
/// what it asks, its times), the approval counter, (feature `modern`) the 2026-07-28 approvals
/// already used, and who is owed an outcome that came after its call's answer (a client that
/// receives only answers: [`Config::answers_only`](super::Config::answers_only)); the rest of `HOLD` holds the call's
/// message, and at its end that outcome's sentence while it is owed. A server whose `HOLD` is
/// not larger holds nothing, keeps no record, and refuses tools that ask a person first at
/// registration ([`RegisterErrorKind::NoHold`](crate::registry::RegisterErrorKind::NoHold)).
pub const HOLD_RECORD: usize = OWED_AT + OWED_HEAD;

/// The held call's record, [`Held::read`] / [`Held::write`]: its numbers (52 bytes) and the
/// client's name (its length and bytes).
const HELD: usize = 52 + 1 + ClientName::MAX_LEN;
/// Where the approval counter is kept, after the record (4 bytes).
const COUNTER: usize = HELD;
/// Where the time of the last press on the device is kept (8 bytes; `u64::MAX`: none, and all
/// zeros reads as a press at 0, which no later press is a bounce of once the minimum passed).
const LAST_PRESS: usize = HELD + 4;
/// Where the 2026-07-28 approvals already used are kept.
#[cfg(feature = "modern")]
const SPENT_AT: usize = HELD + 4 + 8;
#[cfg(feature = "modern")]
const SPENT_BYTES: usize = SPENT * 8;
#[cfg(not(feature = "modern"))]
const SPENT_BYTES: usize = 0;
/// Where the owed outcome's header is kept: its owner (8 bytes) and its sentence's length
/// (2 bytes; 0: nothing owed). The sentence is the last bytes of `HOLD`.
const OWED_AT: usize = HELD + 4 + 8 + SPENT_BYTES;
const OWED_HEAD: usize = 10;

/// `…`, after an owed sentence that was cut.
const ELLIPSIS: &[u8] = "…".as_bytes();

/// How many bytes of `escaped` (JSON string content, escaped) can be kept within `room` without
/// cutting an escape sequence or a character in two, and whether that cuts it.
fn keep_escaped(escaped: &[u8], room: usize) -> (usize, bool) {
    if escaped.len() <= room {
        return (escaped.len(), false);
    }
    let mut at = 0;
    while at < escaped.len() {
        let step = match escaped.get(at) {
            Some(&b'\\') if escaped.get(at + 1) == Some(&b'u') => 6,
            Some(&b'\\') => 2,
            Some(&b) if b >= 0xF0 => 4,
            Some(&b) if b >= 0xE0 => 3,
            Some(&b) if b >= 0xC0 => 2,
            _ => 1,
        };
        if at + step > room {
            break;
        }
        at += step;
    }
    (at, true)
}

/// Reads a record's fields in order (zeros past its end: never, the sizes are constants).
struct Rd<'a>(&'a [u8]);

impl Rd<'_> {
    fn take<const K: usize>(&mut self) -> [u8; K] {
        match self.0.split_first_chunk::<K>() {
            Some((a, rest)) => {
                self.0 = rest;
                *a
            }
            None => [0; K],
        }
    }
    fn u8(&mut self) -> u8 {
        u8::from_le_bytes(self.take())
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
}

/// Writes a record's fields in order.
struct Wr<'a>(&'a mut [u8]);

impl Wr<'_> {
    fn put<const K: usize>(&mut self, bytes: [u8; K]) {
        let buf = core::mem::take(&mut self.0);
        if let Some((head, rest)) = buf.split_first_chunk_mut::<K>() {
            *head = bytes;
            self.0 = rest;
        }
    }
}

impl Held {
    const ASKED: u8 = 1;
    const APPROVED: u8 = 2;
    const ANSWERED: u8 = 4;
    const YES: u8 = 8;
    const ELICITS: u8 = 16;
    const TASKS: u8 = 32;

    /// The record as [`write`](Self::write) left it (all zeros: none held, `len == 0`).
    #[inline(never)]
    fn read(b: &[u8; HELD]) -> Held {
        let mut r = Rd(b);
        let (len, id, tool) = (r.u16(), (r.u16(), r.u16()), r.u16());
        let (principal, flags, revision, log_level) = (r.u8(), r.u8(), r.u8(), r.u8());
        fn at<T: Copy>(index: u8, all: &[T]) -> Option<T> {
            usize::from(index)
                .checked_sub(1)
                .and_then(|i| all.get(i).copied())
        }
        Held {
            len,
            id,
            tool,
            principal: match principal {
                1 => Principal::User,
                _ => Principal::Model,
            },
            session: Session {
                revision: at(revision, &super::Revision::ALL),
                elicits: flags & Self::ELICITS != 0,
                tasks: flags & Self::TASKS != 0,
                log_level: at(log_level, &crate::LogLevel::ALL),
                client: ClientName::NONE,
            },
            asked: flags & Self::ASKED != 0,
            approved: flags & Self::APPROVED != 0,
            device_answer: (flags & Self::ANSWERED != 0).then_some(flags & Self::YES != 0),
            owner: Peer::new(r.u64()),
            approval: r.u64(),
            shown_ms: At(r.u64()),
            deadline_ms: r.u64(),
            owed_until: At(r.u64()),
        }
        .with_client({
            let len = r.u8().min(ClientName::MAX_LEN as u8);
            ClientName {
                bytes: r.take(),
                len,
            }
        })
    }

    /// The record with its session's client name.
    fn with_client(mut self, client: ClientName) -> Held {
        self.session.client = client;
        self
    }

    #[inline(never)]
    fn write(&self, b: &mut [u8; HELD]) {
        let index = |found: Option<usize>| found.map_or(0, |i| i as u8 + 1);
        let s = &self.session;
        let flags = [
            (self.asked, Self::ASKED),
            (self.approved, Self::APPROVED),
            (self.device_answer.is_some(), Self::ANSWERED),
            (self.device_answer == Some(true), Self::YES),
            (s.elicits, Self::ELICITS),
            (s.tasks, Self::TASKS),
        ]
        .iter()
        .fold(0, |f, &(on, bit)| if on { f | bit } else { f });
        let mut w = Wr(b);
        w.put(self.len.to_le_bytes());
        w.put(self.id.0.to_le_bytes());
        w.put(self.id.1.to_le_bytes());
        w.put(self.tool.to_le_bytes());
        w.put([
            u8::from(self.principal == Principal::User),
            flags,
            index(
                s.revision
                    .and_then(|r| super::Revision::ALL.iter().position(|&x| x == r)),
            ),
            index(
                s.log_level
                    .and_then(|l| crate::LogLevel::ALL.iter().position(|&x| x == l)),
            ),
        ]);
        w.put(self.owner.get().to_le_bytes());
        w.put(self.approval.to_le_bytes());
        w.put(self.shown_ms.0.to_le_bytes());
        w.put(self.deadline_ms.to_le_bytes());
        w.put(self.owed_until.0.to_le_bytes());
        w.put([s.client.len]);
        w.put(s.client.bytes);
    }
}

/// The confirmation state of a server: at most one call held for a person's answer, and the
/// 2026-07-28 approvals already used.
///
/// All of it lives in the `HOLD` bytes ([`HOLD_RECORD`] of record, then the message): a
/// firmware that sets `HOLD = 0` pays nothing for it. The question and the tool's name are not
/// stored; they are the registered tool's (`tool` is its index).
pub(crate) struct Confirmations<K: Capacities> {
    /// The record, then the held call's message (`[HOLD_RECORD..][..held.len]`).
    bytes: K::Hold,
}

impl<K: Capacities> Confirmations<K> {
    /// Room for a record and a message: with less, nothing is ever held (and the compiler drops
    /// the confirmation code from the server).
    pub(crate) const ON: bool = K::HOLD > HOLD_RECORD;

    pub(crate) const fn new(bytes: K::Hold) -> Self {
        Confirmations { bytes }
    }

    /// The held call's record (its `len` is 0 when nothing is held).
    fn held(&self) -> Held {
        match self.bytes.as_ref().first_chunk::<HELD>() {
            Some(b) if Self::ON => Held::read(b),
            _ => Held::NONE,
        }
    }

    fn set_held(&mut self, h: &Held) {
        if let Some(b) = self.bytes.as_mut().first_chunk_mut::<HELD>() {
            h.write(b);
        }
    }

    /// `true` while a call waits for a person (or, approved, to run).
    pub(crate) fn holds(&self) -> bool {
        Self::ON
            && self
                .bytes
                .as_ref()
                .first_chunk::<2>()
                .is_some_and(|len| *len != [0, 0])
    }

    /// `true` when a person said yes to the held call and it waits to run.
    pub(crate) fn approved(&self) -> bool {
        self.holds() && self.held().approved
    }

    /// Where the held call's message goes: what an owed outcome leaves at the end.
    fn message_mut(&mut self) -> &mut [u8] {
        let end = K::HOLD.saturating_sub(self.owed_len());
        self.bytes
            .as_mut()
            .get_mut(HOLD_RECORD..end)
            .unwrap_or_default()
    }

    /// The owed outcome's header: its owner and its sentence's length (0: none).
    fn owed_head(&self) -> (Peer, usize) {
        let mut r = Rd(self
            .bytes
            .as_ref()
            .get(OWED_AT..HOLD_RECORD)
            .unwrap_or_default());
        let (owner, len) = (r.u64(), r.u16());
        (Peer::new(owner), usize::from(len))
    }

    fn owed_len(&self) -> usize {
        if Self::ON { self.owed_head().1 } else { 0 }
    }

    /// The outcome owed to a client that receives only answers, if any: its owner and its
    /// sentence (escaped JSON string content).
    pub(crate) fn owed(&self) -> Option<(Peer, &[u8])> {
        let (owner, len) = self.owed_head();
        let at = K::HOLD.checked_sub(len)?;
        let sentence = self
            .bytes
            .as_ref()
            .get(at..)
            .filter(|_| Self::ON && len > 0)?;
        Some((owner, sentence))
    }

    /// Keeps `sentence` (escaped JSON string content) as the outcome owed to `owner`, in the
    /// room the held call's message leaves (replacing what was owed before); cut, with `…`,
    /// where the room ends. `false` when there is no room at all.
    pub(crate) fn set_owed(&mut self, owner: Peer, sentence: &[u8]) -> bool {
        self.clear_owed();
        let held = usize::from(self.held().len) * usize::from(self.holds());
        let room = K::HOLD.saturating_sub(HOLD_RECORD + held);
        let (kept, cut) = keep_escaped(sentence, room.saturating_sub(ELLIPSIS.len()));
        let len = kept + if cut { ELLIPSIS.len() } else { 0 };
        let Ok(len16) = u16::try_from(len) else {
            return false;
        };
        if len == 0 || len > room {
            return false;
        }
        let at = K::HOLD - len;
        let bytes = self.bytes.as_mut();
        let (Some(dst), Some(src)) = (bytes.get_mut(at..at + kept), sentence.get(..kept)) else {
            return false;
        };
        dst.copy_from_slice(src);
        if let (true, Some(dst)) = (cut, bytes.get_mut(at + kept..K::HOLD)) {
            dst.copy_from_slice(ELLIPSIS);
        }
        if let Some(head) = bytes.get_mut(OWED_AT..HOLD_RECORD) {
            let mut w = Wr(head);
            w.put(owner.get().to_le_bytes());
            w.put(len16.to_le_bytes());
        }
        true
    }

    /// Forgets the owed outcome.
    pub(crate) fn clear_owed(&mut self) {
        if let Some(head) = self.bytes.as_mut().get_mut(OWED_AT..HOLD_RECORD) {
            head.fill(0);
        }
    }

    /// The first `len` bytes held (the message, when `len` is the length it was held with).
    fn message_at(&self, len: usize) -> &[u8] {
        self.bytes
            .as_ref()
            .get(HOLD_RECORD..)
            .and_then(|m| m.get(..len))
            .unwrap_or_default()
    }

    /// The id the held call `h` was sent with, read from its held message.
    fn held_id(&self, h: &Held) -> Option<Id<'_>> {
        let (start, len) = (usize::from(h.id.0), usize::from(h.id.1));
        let id = self
            .message_at(usize::from(h.len))
            .get(start..start + len)?;
        Some(Id::from_checked_raw(id))
    }

    /// A fresh approval number, unguessable under `key`.
    fn fresh(&mut self, key: (u64, u64)) -> u64 {
        use core::hash::Hasher as _;
        let mut counter = 0;
        if let Some(c) = self
            .bytes
            .as_mut()
            .get_mut(COUNTER..)
            .and_then(|b| b.first_chunk_mut::<4>())
        {
            counter = u32::from_le_bytes(*c).wrapping_add(1);
            *c = counter.to_le_bytes();
        }
        let mut h =
            siphasher::sip::SipHasher13::new_with_keys(key.0 ^ 0x6170_7072_6f76_616c, key.1);
        h.write_u32(counter);
        h.finish()
    }

    /// When the device's button was last pressed (engine clock), if ever.
    fn last_press(&self) -> Option<u64> {
        let at = self.bytes.as_ref().get(LAST_PRESS..)?.first_chunk::<8>()?;
        At(u64::from_le_bytes(*at)).get()
    }

    fn set_last_press(&mut self, ms: u64) {
        if let Some(at) = self
            .bytes
            .as_mut()
            .get_mut(LAST_PRESS..)
            .and_then(|b| b.first_chunk_mut::<8>())
        {
            *at = ms.to_le_bytes();
        }
    }

    /// Records a 2026-07-28 approval as used; `Err(true)` when it was used already, `Err(false)`
    /// when no record is free.
    #[cfg(feature = "modern")]
    fn spend(&mut self, nonce: u64, expiry: u64, now: u64) -> Result<(), bool> {
        let nonce = nonce as u32;
        // Each record: the expiry in whole seconds (0: free) above the nonce's low 32 bits.
        let (records, _) = self
            .bytes
            .as_mut()
            .get_mut(SPENT_AT..OWED_AT)
            .unwrap_or_default()
            .as_chunks_mut::<8>();
        let live = |r: &[u8; 8]| {
            let until = u64::from_le_bytes(*r) >> 32;
            until != 0 && until * 1000 >= now
        };
        if records
            .iter()
            .any(|r| live(r) && u64::from_le_bytes(*r) as u32 == nonce)
        {
            return Err(true);
        }
        let until = u32::try_from(expiry.div_ceil(1000).saturating_add(1)).unwrap_or(u32::MAX);
        let slot = records.iter_mut().find(|r| !live(r)).ok_or(false)?;
        *slot = (u64::from(until) << 32 | u64::from(nonce)).to_le_bytes();
        Ok(())
    }
}

#[cfg(feature = "modern")]
/// The MAC of a `requestState`: tool, arguments as sent, expiry and the approval's nonce; keyed
/// by the server's entropy (with its own domain constant: task ids use the same seed).
fn mac(key: (u64, u64), tool: &str, arguments: &[u8], expiry_ms: u64, nonce: u64) -> u64 {
    use core::hash::Hasher as _;
    let mut h = siphasher::sip::SipHasher24::new_with_keys(key.0 ^ 0x636f_6e66_6972_6d21, key.1);
    h.write(tool.as_bytes());
    h.write_u8(0xFF);
    h.write(arguments);
    h.write_u8(0xFF);
    h.write_u64(expiry_ms);
    h.write_u64(nonce);
    h.finish()
}

/// What a person is being asked, for a firmware's display (see
/// [`Server::confirmation`](super::Server::confirmation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pending {
    /// This question's number: pass it back with a press
    /// ([`Server::confirm_on_device`](super::Server::confirm_on_device)).
    pub approval: Approval,
    /// The tool that waits.
    pub tool: &'static str,
    /// The question.
    pub message: &'static str,
    /// `true`: the answer must come from the device ([`Server::confirm_on_device`](super::Server::confirm_on_device));
    /// `false`: the client asks the person.
    pub on_device: bool,
    /// Since when the device shows the question (engine clock, ms): the first
    /// [`poll`](super::Server::poll) after the call was held. `None`: not yet; a press before it
    /// does not count.
    pub shown_ms: Option<u64>,
    /// When the engine gives up (engine clock, ms).
    pub deadline_ms: u64,
    /// The client that made the call: the only one whose answer counts, and where its outcome
    /// goes.
    pub owner: Peer,
    /// Who asks, as the device shows it: the name the client gave and a tag of its session.
    pub client: ClientLabel,
    /// A press counts for this question only once it has been shown this long (ms), and not
    /// this soon after the previous press ([`Config::confirm_min_shown_ms`](super::Config)).
    pub min_shown_ms: u32,
    /// From when a press answers it (engine clock, ms): shown for [`min_shown_ms`](Self::min_shown_ms)
    /// and that long after the previous press. `None`: not on the device (yet).
    pub press_from_ms: Option<u64>,
}

/// Which client asks, as a device shows it next to the question: the name the client gave in
/// its `initialize` ([`ClientName`], its own claim) and a tag of its session — four hex digits of
/// a keyed hash of the transport's name for the client ([`Input::peer`]), so that two clients
/// that give the same name are still told apart. Displayed as `client #3fa2 "python-sdk"`,
/// the tag first (`client #3fa2` without a name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClientLabel {
    /// The name the client gave.
    pub name: ClientName,
    /// The session's tag.
    pub tag: u16,
}

impl ClientLabel {
    /// The label of the client `peer` called `name`, its tag keyed by the server's entropy.
    fn new(name: ClientName, peer: Peer, key: (u64, u64)) -> Self {
        use core::hash::Hasher as _;
        let mut h =
            siphasher::sip::SipHasher13::new_with_keys(key.0 ^ 0x636c_6965_6e74_2374, key.1);
        h.write_u64(peer.get());
        ClientLabel {
            name,
            tag: h.finish() as u16,
        }
    }
}

/// `client #3fa2 "python-sdk"`: the device-made tag first, where no name can come before it,
/// then the client's own name in quotes it cannot close ([`ClientName`]); `client #3fa2`
/// without a name.
impl fmt::Display for ClientLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client #{:04x}", self.tag)?;
        if !self.name.is_empty() {
            write!(f, " \"{}\"", self.name.as_str())?;
        }
        Ok(())
    }
}

/// The question a person is asked about one call, as every form of it says it (the device's
/// display, the `elicitation/create` message, the answer a client that cannot ask hears): the
/// tool's question with the call's validated arguments filled in ([`Confirm`]), then who asks —
/// `Upgrade the device's firmware to the 4096-byte image with SHA-256 9f86d081…? (asked by
/// client #3fa2 "python-sdk")`. `Display` writes it; see [`Server::question`](super::Server::question).
#[derive(Debug, Clone)]
pub struct Question<'a> {
    confirm: &'a Confirm,
    args: Args<'a>,
    client: Option<ClientLabel>,
}

impl fmt::Display for Question<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let asked = Asked {
            confirm: self.confirm,
            args: &self.args,
            client: self.client,
        };
        fmt::Display::fmt(&asked, f)
    }
}

/// A [`Question`] over arguments it borrows (the call's own, while it is being held): the one
/// writer of a question's text.
#[derive(Clone, Copy)]
struct Asked<'a> {
    confirm: &'a Confirm,
    args: &'a Args<'a>,
    /// `None`: who asks is not known (a 2026-07-28 request, which has no session), and the
    /// question goes to that client's own user.
    client: Option<ClientLabel>,
}

impl fmt::Display for Asked<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.confirm.write_question(self.args, f);
        if let Some(client) = &self.client {
            write!(f, " (asked by {client})")?;
        }
        Ok(())
    }
}

impl Asked<'_> {
    /// Written as a JSON string (escaped).
    fn write_string(&self, w: &mut Writer<'_>) {
        w.begin_string();
        let _ = write!(w, "{self}");
        w.end_string();
    }
}

/// A 2026-07-28 call as the gate reads it: the tool's name, its arguments (as sent, and the
/// value they command), and its params.
type ModernCall<'i> = (
    &'static str,
    Option<Json<'i>>,
    Option<Json<'i>>,
    Option<Reading>,
);

/// What the gate decided about a call.
pub(crate) enum Gate {
    /// Run it.
    Pass,
    /// Answered (held for the device, asked again, refused): the length written.
    Answered(usize),
    /// The question went to the client (`elicitation/create`): the length written; the call's
    /// own response comes later.
    Asked(usize),
}

/// `{"type":"object","properties":{"confirm":{"type":"boolean",…}},"required":["confirm"]}`.
fn write_schema(w: &mut Writer<'_>, question: &Asked<'_>) {
    w.raw(protocol::CONFIRM_SCHEMA_OPEN);
    question.write_string(w);
    w.raw(protocol::CONFIRM_SCHEMA_END);
}

/// The params of `elicitation/create` (no braces around): message and schema.
fn write_elicitation_params(w: &mut Writer<'_>, question: &Asked<'_>, form_mode: bool) {
    if form_mode {
        w.raw(protocol::FORM_MODE);
    }
    w.raw(protocol::first(protocol::MESSAGE));
    question.write_string(w);
    w.raw(protocol::REQUESTED_SCHEMA);
    write_schema(w, question);
}

/// How a person answered, as an `ElicitResult` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Yes,
    /// `accept` with `confirm: false`, or `decline`.
    No,
    /// `cancel` (the dialog was dismissed).
    Cancel,
    /// Not an `ElicitResult`, or an `accept` whose content does not answer the question (no
    /// boolean `confirm`): not a person's no, and not a yes either.
    Malformed,
    /// No answer in time.
    Timeout,
    /// A yes, but the call cannot run: the output buffer left beside the held message is too
    /// small for its answer.
    NoRoom,
}

impl Answer {
    /// Reads `{action, content:{confirm}}`.
    pub(crate) fn read(result: Option<Json<'_>>) -> Self {
        let Ok([action, content]) = members(
            result.filter(|r| r.kind() == Kind::Object),
            ["action", "content"],
        ) else {
            return Answer::Malformed;
        };
        let Some(action) = action.and_then(|a| a.as_str()) else {
            return Answer::Malformed;
        };
        if action.eq_str("accept") {
            let confirmed = members(content, [KEY])
                .ok()
                .and_then(|[c]| c)
                .and_then(|c| c.as_bool());
            match confirmed {
                Some(true) => Answer::Yes,
                Some(false) => Answer::No,
                // Content that is not the schema's: the client's bug, not the person's decline.
                None => Answer::Malformed,
            }
        } else if action.eq_str("decline") {
            Answer::No
        } else if action.eq_str("cancel") {
            Answer::Cancel
        } else {
            Answer::Malformed
        }
    }

    /// Why nothing ran, for the refusal.
    pub(crate) fn refusal(self) -> &'static str {
        match self {
            Answer::Yes => "",
            Answer::No => "Not confirmed: the person declined; nothing was done",
            Answer::Cancel => "Not confirmed: the person dismissed the question; nothing was done",
            Answer::Malformed => {
                "Not confirmed: the client's answer was not understood; nothing was done"
            }
            Answer::Timeout => "Not confirmed: no answer in time; nothing was done",
            Answer::NoRoom => {
                "Confirmed, but the device's output buffer is too small to run the call; nothing was done"
            }
        }
    }
}

/// Writes 16 lower-case hex digits.
fn hex16(w: &mut Writer<'_>, v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in 0..16 {
        let n = ((v >> (60 - 4 * i)) & 0xF) as usize;
        w.raw(HEX.get(n..=n).unwrap_or(b"0"));
    }
}

/// Reads 16 lower-case hex digits.
#[cfg(feature = "modern")]
fn read_hex16(b: &[u8]) -> Option<u64> {
    if b.len() != 16 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(core::str::from_utf8(b).ok()?, 16).ok()
}

/// The `requestState` of a 2026-07-28 question: `v2.<expiry>.<nonce>.<mac>`, each 16 hex digits.
#[cfg(feature = "modern")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    expiry: u64,
    nonce: u64,
    mac: u64,
}

#[cfg(feature = "modern")]
impl State {
    fn write(&self, w: &mut Writer<'_>) {
        w.raw(br#""v2."#);
        hex16(w, self.expiry);
        w.raw(b".");
        hex16(w, self.nonce);
        w.raw(b".");
        hex16(w, self.mac);
        w.raw(b"\"");
    }

    fn read(s: JsonStr<'_>) -> Option<State> {
        let raw = s.raw();
        if raw.len() != 53
            || raw.get(..3)? != b"v2."
            || raw.get(19)? != &b'.'
            || raw.get(36)? != &b'.'
        {
            return None;
        }
        Some(State {
            expiry: read_hex16(raw.get(3..19)?)?,
            nonce: read_hex16(raw.get(20..36)?)?,
            mac: read_hex16(raw.get(37..53)?)?,
        })
    }
}

/// A call a person approved, taken out of the hold to run: its message is at `out[at..]`.
pub(crate) struct Approved {
    at: usize,
    principal: Principal,
    owner: Peer,
    session: Session,
    tool: &'static str,
    /// The outcome is a notification (the call was answered already); otherwise the call's own
    /// response.
    notify: bool,
}

impl Approved {
    /// The held message, dispatched again as confirmed.
    pub(crate) fn input<'i>(&self, bytes: &'i [u8]) -> Input<'i> {
        Input {
            bytes,
            principal: self.principal,
            stateless: false,
            peer: self.owner,
            session: Some(self.session),
            confirmed: true,
        }
    }

    /// Where the held message was copied: `out[at..]`.
    pub(crate) const fn at(&self) -> usize {
        self.at
    }
}

impl<'t, C, K: Capacities> super::Server<'t, C, K> {
    /// The call waiting for a person's answer, if any (for a display: "Press the button to
    /// confirm: Reboot the device?").
    pub fn confirmation(&self) -> Option<Pending> {
        let h = self.confirm.held();
        let tool = self
            .registry
            .get(usize::from(h.tool))
            .filter(|_| self.confirm.holds() && !h.approved)?;
        Some(Pending {
            approval: Approval(h.approval),
            tool: tool.name(),
            message: tool.confirmation().map_or("", Confirm::message),
            on_device: !h.asked,
            shown_ms: h.shown_ms.get().filter(|_| !h.asked),
            deadline_ms: h.deadline_ms,
            owner: h.owner,
            client: self.label(&h),
            min_shown_ms: self.config.confirm_min_shown_ms,
            press_from_ms: h.shown_ms.get().filter(|_| !h.asked).map(|shown| {
                let min = u64::from(self.config.confirm_min_shown_ms);
                let read = shown.saturating_add(min.max(1));
                match self.confirm.last_press() {
                    Some(last) if min > 0 => read.max(last.saturating_add(min)),
                    _ => read,
                }
            }),
        })
    }

    /// The question the waiting call asks ([`confirmation`](Self::confirmation)), as every form
    /// of it says it: the tool's question filled from the call's validated arguments, then
    /// which client asks (`Upgrade the device's firmware to the 4096-byte image with SHA-256
    /// 9f86d081…? (asked by client #3fa2 "python-sdk")`). A device shows this text, never the template:
    /// two calls of one tool ask two different questions.
    ///
    /// ```
    /// # use mcp_core::{Caps, Config, Server};
    /// # let server: Server<'static, (), Caps<4>> = Server::new(Config::new("d", "1"));
    /// let mut display = heapless::String::<160>::new();
    /// if let Some(q) = server.question() {
    ///     let _ = core::fmt::Write::write_fmt(&mut display, format_args!("{q}"));
    /// }
    /// ```
    pub fn question(&self) -> Option<Question<'_>> {
        let h = self.confirm.held();
        if !self.confirm.holds() || h.approved {
            return None;
        }
        self.question_of(&h)
    }

    /// The question of the held call `h`, its arguments read again from the held message (they
    /// passed validation when it was held).
    fn question_of(&self, h: &Held) -> Option<Question<'_>> {
        let tool = self.registry.get(usize::from(h.tool))?;
        let confirm = tool.confirmation()?;
        let message = self.confirm.message_at(usize::from(h.len));
        let arguments = Json::parse(message, self.config.max_depth)
            .ok()
            .and_then(|root| members(Some(root), ["params"]).ok())
            .and_then(|[params]| members(params, ["arguments"]).ok())
            .and_then(|[arguments]| arguments);
        let args = match tool.raw_input_schema() {
            Some(_) => validate_object(arguments),
            None => validate(tool.param_specs(), arguments),
        };
        Some(Question {
            confirm,
            args: args.unwrap_or(Args::empty()),
            client: Some(self.label(h)),
        })
    }

    /// Who asks the held call `h`'s question.
    fn label(&self, h: &Held) -> ClientLabel {
        ClientLabel::new(h.session.client, h.owner, self.entropy)
    }

    /// The id of the waiting call's request ([`confirmation`](Self::confirmation)), raw JSON as
    /// the client sent it (`"call-7"`, `3`): what links the question, and later its outcome, to
    /// the call in a log or on a display.
    pub fn confirmation_id(&self) -> Option<&[u8]> {
        let h = self.confirm.held();
        if !self.confirm.holds() || h.approved {
            return None;
        }
        self.confirm.held_id(&h).map(|id| id.raw())
    }

    /// Who the client `peer` is, as the device names it next to a question (`python-sdk
    /// #3fa2`): the name its session holds and the tag of `peer` — the label the questions of its
    /// calls carry, so that a log or a display names the client of every call the same way.
    /// `lent`: the session a transport lends with the client's messages
    /// ([`Input::session`](super::Input::session)); `None`: the engine's own client's.
    pub fn client_label(&self, peer: Peer, lent: Option<&Session>) -> ClientLabel {
        let session = lent.unwrap_or(&self.session);
        ClientLabel::new(session.client, peer, self.entropy)
    }

    /// A person answered on the device (a button; `yes: false` for a "no" button) at
    /// `pressed_ms` (the clock [`poll`](Self::poll) is given), to the question `approval` that the
    /// device showed ([`confirmation`](Self::confirmation)). The next `poll` runs the held call
    /// when `yes`, or drops it, and writes the outcome for the client that made the call.
    ///
    /// Returns `false`, and nothing changes but the time of the last press, unless that question
    /// still waits for an answer on the device, the press came after it had been shown for
    /// [`Config::confirm_min_shown_ms`](super::Config) (default 1 s; strictly after
    /// [`Pending::shown_ms`] when 0), at least that long after the previous press passed here
    /// (a quicker one is a bounce, or the second half of a double press), and before its time
    /// was up ([`Pending::deadline_ms`]): a press never answers a question that was not on the
    /// device long enough to be read, nor one that replaced the question the person saw, nor
    /// one whose time ran out (nothing runs then). Pass every press of the button here while a
    /// question is shown, answered or not.
    pub fn confirm_on_device(&mut self, approval: Approval, yes: bool, pressed_ms: u64) -> bool {
        let holds = self.confirm.holds();
        let mut h = self.confirm.held();
        let min = u64::from(self.config.confirm_min_shown_ms);
        // A press this soon after the previous one is the button bouncing, or a double press
        // whose second half was meant for nothing: it answers nothing (and counts as a press).
        let bounce = self
            .confirm
            .last_press()
            .is_some_and(|last| min > 0 && pressed_ms < last.saturating_add(min));
        self.confirm.set_last_press(pressed_ms);
        let waits = holds
            && !bounce
            && !h.asked
            && !h.approved
            && h.device_answer.is_none()
            && h.approval == approval.0
            && h.shown_ms
                .get()
                .is_some_and(|shown| pressed_ms > shown && pressed_ms - shown >= min)
            && pressed_ms < h.deadline_ms;
        if waits {
            h.device_answer = Some(yes);
            self.confirm.set_held(&h);
        }
        waits
    }

    /// The client `peer` is gone (its session ended, its link closed for good): a call it left
    /// waiting for a person is dropped (nothing runs, no outcome is written). Returns whether one
    /// was.
    pub fn forget_confirmation(&mut self, peer: Peer) -> bool {
        let gone = self.confirm.holds() && self.confirm.held().owner == peer;
        if gone {
            self.confirm.set_held(&Held::NONE);
        }
        if self.confirm.owed().is_some_and(|(owner, _)| owner == peer) {
            self.confirm.clear_owed();
        }
        gone
    }

    /// An outcome that came after its call's answer, written as a notification (`outcome`: its
    /// length and where its sentence is): sent as it is to a client that can receive it; where
    /// clients receive only answers ([`Config::answers_only`](super::Config::answers_only)) its
    /// sentence is kept instead, for the first text of that client's next call's answer, and
    /// nothing is sent now.
    fn later(
        &mut self,
        owner: Peer,
        out: &[u8],
        (len, heard): (usize, Option<super::Heard>),
    ) -> (usize, Option<super::Heard>) {
        let Some(h) = heard.filter(|_| self.config.answers_only && len > 0) else {
            return (len, heard);
        };
        let sentence = out
            .get(h.at..h.at.saturating_add(h.len))
            .unwrap_or_default();
        self.confirm.set_owed(owner, sentence);
        (0, None)
    }

    /// The gate of `tools/call`: after validation, before the handler. `tool` is the tool's
    /// index in the registry.
    #[inline(never)]
    #[allow(
        clippy::too_many_arguments,
        reason = "the call, its validated arguments, who makes it, and where the question goes"
    )]
    pub(super) fn confirm_gate<'o, 'i>(
        &mut self,
        confirm: &Confirm,
        tool: usize,
        arguments: Option<Json<'i>>,
        args: &Args<'_>,
        params: Option<Json<'i>>,
        caller: &Caller<'i>,
        respond: Respond<'o, 'i>,
    ) -> Gate {
        if caller.confirmed || caller.principal == Principal::User {
            return Gate::Pass;
        }
        // What a refusal names as commanded (a failure's rule), read now: only the validated
        // arguments know it.
        let commanded = commanded(args);
        match respond.era {
            Era::Modern(m) => {
                let elicits = m.caps.and_then(|c| c.members()).is_some_and(|mut c| {
                    c.any(|(k, v)| k.eq_str("elicitation") && v.kind() == Kind::Object)
                });
                let name = self.registry.get(tool).map_or("", |t| t.name());
                // No session on this wire: the question goes to the caller's own user.
                let question = Asked {
                    confirm,
                    args,
                    client: None,
                };
                let call = (name, arguments, params, commanded);
                self.modern_gate(&question, call, elicits, respond)
            }
            Era::Legacy => self.hold(confirm, tool, args, caller, commanded, respond),
        }
    }

    /// 2026-07-28: `input_required` with a signed, single-use state, or the retry that carries
    /// the answer.
    fn modern_gate<'o, 'i>(
        &mut self,
        question: &Asked<'_>,
        (tool, arguments, params, commanded): ModernCall<'i>,
        elicits: bool,
        respond: Respond<'o, 'i>,
    ) -> Gate {
        if !elicits {
            return Gate::Answered(respond.error_with(
                ErrorCode::MissingRequiredClientCapability,
                |w| {
                    w.text("Missing required client capability: elicitation (this tool asks a person first: ");
                    let _ = write!(w, "{question}");
                    w.text(")");
                },
                Some(|w: &mut Writer<'_>| w.raw(protocol::REQUIRES_ELICITATION)),
            ));
        }
        #[cfg(feature = "modern")]
        {
            let mut respond = respond;
            let arguments = arguments.map_or(&b""[..], |a| a.raw());
            let Ok([state, responses]) = members(params, ["requestState", "inputResponses"]) else {
                return Gate::Answered(
                    respond
                        .error_text(ErrorCode::InvalidParams, "Invalid params: duplicate member"),
                );
            };
            if let Some(state) = state
                && let Some(gate) =
                    self.retry(tool, arguments, state, responses, commanded, &mut respond)
            {
                return gate;
            }
            self.ask_modern(question, tool, arguments, respond)
        }
        // (Without the feature `modern` no request is of that era.)
        #[cfg(not(feature = "modern"))]
        {
            let _ = (tool, arguments, params, commanded, question);
            Gate::Answered(0)
        }
    }

    /// The retry of a 2026-07-28 call with the `requestState` it was answered with and the
    /// person's answer: a yes runs it (once), anything else refuses it. `None`: a valid state
    /// without an answer (ask again).
    #[cfg(feature = "modern")]
    fn retry(
        &mut self,
        tool: &'static str,
        arguments: &[u8],
        state: Json<'_>,
        responses: Option<Json<'_>>,
        commanded: Option<Reading>,
        respond: &mut Respond<'_, '_>,
    ) -> Option<Gate> {
        let (now, key) = (self.now_ms, self.entropy);
        let verified = state.as_str().and_then(State::read).filter(|s| {
            s.mac == self::mac(key, tool, arguments, s.expiry, s.nonce) && now <= s.expiry
        });
        let Some(verified) = verified else {
            return Some(Gate::Answered(respond.reborrow().error_text(
                ErrorCode::InvalidParams,
                "Invalid params: requestState failed verification or expired; call the tool again without it",
            )));
        };
        let answer = members(responses.filter(|r| r.kind() == Kind::Object), [KEY])
            .ok()
            .and_then(|[a]| a)?;
        let respond = respond.reborrow();
        Some(match Answer::read(Some(answer)) {
            // A yes is good once: the approval is recorded as used until it expires.
            Answer::Yes => match self.confirm.spend(verified.nonce, verified.expiry, now) {
                Ok(()) => Gate::Pass,
                Err(true) => Gate::Answered(respond.error_text(
                    ErrorCode::InvalidParams,
                    "Invalid params: this requestState was used already (an approval is good for one call); call the tool again without it",
                )),
                Err(false) => Gate::Answered(respond.result(|w| refusal(w, "Not run: the device is keeping track of too many approvals just now; call the tool again shortly", false, commanded))),
            },
            other => Gate::Answered(respond.result(|w| refusal(w, other.refusal(), false, commanded))),
        })
    }

    /// Asks a 2026-07-28 client's user: `input_required`, with a state signed for this tool and
    /// these arguments, good until the confirmation times out.
    #[cfg(feature = "modern")]
    fn ask_modern(
        &mut self,
        question: &Asked<'_>,
        tool: &'static str,
        arguments: &[u8],
        respond: Respond<'_, '_>,
    ) -> Gate {
        let key = self.entropy;
        let expiry = self
            .now_ms
            .saturating_add(u64::from(self.config.confirm_timeout_ms));
        let nonce = self.confirm.fresh(key);
        let state = State {
            expiry,
            nonce,
            mac: self::mac(key, tool, arguments, expiry, nonce),
        };
        Gate::Answered(respond.result_typed("input_required", |w| {
            w.raw(protocol::INPUT_REQUEST_OPEN);
            write_elicitation_params(w, question, true);
            w.raw(protocol::REQUEST_STATE);
            state.write(w);
        }))
    }

    /// Legacy revisions: hold the call, and ask the client (elicitation, when *this* client
    /// declared it) or the device.
    fn hold<'o, 'i>(
        &mut self,
        confirm: &Confirm,
        tool: usize,
        args: &Args<'_>,
        caller: &Caller<'i>,
        commanded: Option<Reading>,
        respond: Respond<'o, 'i>,
    ) -> Gate {
        let session = self.session;
        let error_member = session.effective_revision() == super::Revision::V2024_11_05;
        if self.confirm.holds() {
            return Gate::Answered(respond.result(|w| {
                refusal(w, "Another action is waiting for a person's confirmation; answer that one first. Nothing was done", error_member, commanded);
            }));
        }
        let raw = caller.raw;
        // The id is a part of the message: kept as its place there.
        let id = respond.id.map_or((0, 0), |id| {
            let start = (id.raw().as_ptr() as usize).wrapping_sub(raw.as_ptr() as usize);
            (start, id.raw().len())
        });
        let fits = (
            u16::try_from(raw.len()),
            u16::try_from(id.0),
            u16::try_from(id.1),
            u16::try_from(tool),
            self.confirm.message_mut().get_mut(..raw.len()),
        );
        let (Ok(len), Ok(id_start), Ok(id_len), Ok(tool), Some(dst)) = fits else {
            return Gate::Answered(respond.result(|w| {
                refusal(w, "This call is too large for the device to hold while it asks for confirmation; nothing was done", error_member, commanded);
            }));
        };
        dst.copy_from_slice(raw);
        let asked = session.elicits;
        let now = self.now_ms;
        let deadline_ms = now.saturating_add(u64::from(self.config.confirm_timeout_ms));
        // A client that can neither ask its user nor follow a task hears the outcome in the
        // call's own answer, when it comes within the budget.
        let budget = self.config.hold_answer_ms;
        let owed_until = match !asked && budget > 0 {
            true => At(now.saturating_add(u64::from(budget)).min(deadline_ms)),
            false => At::NONE,
        };
        // Answered at once that it waits: the person has at least the margin from now.
        let deadline_ms = match !asked && owed_until == At::NONE {
            true => self.heard_deadline(deadline_ms),
            false => deadline_ms,
        };
        let approval = self.confirm.fresh(self.entropy);
        let held = Held {
            len,
            id: (id_start, id_len),
            tool,
            principal: caller.principal,
            owner: caller.peer,
            session,
            approval,
            asked,
            approved: false,
            shown_ms: At::NONE,
            deadline_ms,
            owed_until,
            device_answer: None,
        };
        self.confirm.set_held(&held);
        let question = Asked {
            confirm,
            args,
            client: Some(self.label(&held)),
        };
        self.held_answer(&question, &held, respond)
    }

    /// The answer to a call just held: the question to the client (elicitation: the call's own
    /// answer comes later), nothing yet (the answer is owed, from `poll`), or that it waits for
    /// the device's button.
    fn held_answer(&self, question: &Asked<'_>, held: &Held, respond: Respond<'_, '_>) -> Gate {
        let Respond {
            out, id, era, info, ..
        } = respond;
        let answers_only = self.config.answers_only;
        if held.asked {
            let mut w = Writer::new(out);
            w.raw(protocol::RESPONSE_HEAD);
            write_elicitation_id(&mut w, held.approval);
            w.raw(protocol::ELICITATION_REQUEST);
            let form = held.session.effective_revision() >= super::Revision::V2025_11_25;
            write_elicitation_params(&mut w, question, form);
            w.raw(b"}}");
            return Gate::Asked(if w.fits() { w.needed() } else { 0 });
        }
        if held.owed_until != At::NONE {
            return Gate::Asked(0);
        }
        let timeout = held.deadline_ms.saturating_sub(self.now_ms);
        let timeout = u32::try_from(timeout).unwrap_or(u32::MAX);
        Gate::Answered(finish(out, id, "", |w| {
            if let Some(id) = id {
                write_result_object(w, id, era, info, "complete", |w| {
                    awaiting(w, question, timeout, answers_only);
                });
            }
        }))
    }

    /// A client's response: the answer to `elicitation/create`, when one is awaited *from this
    /// client* (the call's owner). A yes approves the call (the caller runs it); anything else
    /// refuses it, and the refusal is the answer. Called by `begin` after the message's own
    /// dispatch returned.
    #[inline(never)]
    pub(super) fn on_response<'i>(&mut self, input: &Input<'_>, out: &mut [u8]) -> Handled<'i> {
        let mut handled = Handled::empty();
        let h = self.confirm.held();
        if !(self.confirm.holds() && h.asked && !h.approved && input.peer == h.owner) {
            return handled;
        }
        let Ok(root) = Json::parse(input.bytes, self.config.max_depth) else {
            return handled;
        };
        let Ok([id, result, error]) = members(Some(root), ["id", "result", "error"]) else {
            return handled;
        };
        let mut want = [0u8; 28];
        let mut w = Writer::new(&mut want);
        write_elicitation_id(&mut w, h.approval);
        let matches = w
            .written()
            .zip(id)
            .is_some_and(|(want, id)| id.raw() == want);
        if !matches {
            return handled;
        }
        let answer = if error.is_some() {
            Answer::Cancel
        } else {
            Answer::read(result)
        };
        handled.len = self.settle(answer, out).0;
        handled
    }

    /// Ends a held call with a person's answer: a yes approves it (it runs at the caller's next
    /// chance: [`take_approved`](Self::take_approved)); anything else drops it, and what is
    /// written is why: the call's own answer when it is still owed, else a notification.
    /// The length written, and, for an outcome that comes after the call was answered, what
    /// the client hears of it.
    fn settle(&mut self, answer: Answer, out: &mut [u8]) -> (usize, Option<super::Heard>) {
        if !self.confirm.holds() {
            return (0, None);
        }
        let mut h = self.confirm.held();
        if answer == Answer::Yes {
            h.approved = true;
            self.confirm.set_held(&h);
            return (0, None);
        }
        // (Read before the record is cleared: the held message is the arguments' only copy.)
        let commanded = self.held_commanded(&h);
        self.confirm.set_held(&Held::NONE);
        let tool = self
            .registry
            .get(usize::from(h.tool))
            .map_or("", |t| t.name());
        if !(h.asked || h.owed_until != At::NONE) {
            let refused = Refused {
                why: answer.refusal(),
                commanded,
            };
            let outcome = wrap_outcome(out, 0, tool, Some(refused));
            return self.later(h.owner, out, outcome);
        }
        // The call's own response: a refusal, for the id it was sent with.
        let Some(id) = self.confirm.held_id(&h) else {
            return (0, None);
        };
        let info = (self.config.name, self.config.version);
        let len = finish(out, Some(id), "", |w| {
            write_result_object(w, id, Era::Legacy, info, "complete", |w| {
                refusal(w, answer.refusal(), h.error_member(), commanded);
            });
        });
        (len, None)
    }

    /// What the held call `h` commanded ([`commanded`]), read from its held message: its
    /// arguments validated again against the tool's parameters (they passed once).
    #[inline(never)]
    fn held_commanded(&self, h: &Held) -> Option<Reading> {
        let tool = self.registry.get(usize::from(h.tool))?;
        let message = self.confirm.message_at(usize::from(h.len));
        let root = Json::parse(message, self.config.max_depth).ok()?;
        let [params] = members(Some(root), ["params"]).ok()?;
        let [arguments] = members(params, ["arguments"]).ok()?;
        let args = crate::schema::validate(tool.param_specs(), arguments).ok()?;
        commanded(&args)
    }

    /// The latest a person may answer, once the client heard that the call waits (now): at
    /// least [`Config::heard_margin_ms`](super::Config) from now, never earlier than `deadline_ms`.
    fn heard_deadline(&self, deadline_ms: u64) -> u64 {
        let margin = u64::from(self.config.heard_margin_ms);
        deadline_ms.max(self.now_ms.saturating_add(margin))
    }

    /// Takes the approved call out of the hold to run it: copies its message to the end of
    /// `out` (nothing of the size of `HOLD` goes on the stack; the call's answer has the buffer
    /// in front of it). `Err`: it cannot run here (the rest of `out` is too small for a
    /// response), and its refusal was written instead, for the client that made the call.
    pub(crate) fn take_approved(
        &mut self,
        out: &mut [u8],
    ) -> Option<Result<Approved, super::Polled>> {
        if !self.confirm.approved() {
            return None;
        }
        let mut h = self.confirm.held();
        let held = usize::from(h.len);
        let at = out.len().saturating_sub(held);
        if at < super::MIN_OUT_LEN {
            h.approved = false;
            self.confirm.set_held(&h);
            let (len, heard) = self.settle(Answer::NoRoom, out);
            return Some(Err(super::Polled {
                len,
                to: Some(h.owner),
                heard,
                ..super::Polled::NONE
            }));
        }
        self.confirm.set_held(&Held::NONE);
        let tail = out.get_mut(at..)?;
        tail.copy_from_slice(self.confirm.message_at(held));
        let tool = self
            .registry
            .get(usize::from(h.tool))
            .map_or("", |t| t.name());
        Some(Ok(Approved {
            at,
            principal: h.principal,
            owner: h.owner,
            session: h.session,
            tool,
            notify: !(h.asked || h.owed_until != At::NONE),
        }))
    }

    /// After an approved call ran (its response at `out[..n]`): what goes to its owner.
    pub(crate) fn after_approved(
        &mut self,
        approved: &Approved,
        out: &mut [u8],
        (n, ran, receipt): (usize, Option<&'static str>, Option<super::Receipt>),
    ) -> super::Polled {
        let (len, heard) = if approved.notify {
            let outcome = wrap_outcome(out, n, approved.tool, None);
            self.later(approved.owner, out, outcome)
        } else {
            (n, None)
        };
        super::Polled {
            len,
            to: Some(approved.owner),
            ran,
            receipt,
            heard,
        }
    }

    /// Runs the approved call on the blocking path (an async tool is refused there, saying so).
    pub(crate) fn run_approved(
        &mut self,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn super::Notify,
    ) -> super::Polled {
        let approved = match self.take_approved(out) {
            None => return super::Polled::NONE,
            Some(Err(refused)) => return refused,
            Some(Ok(a)) => a,
        };
        let (head, tail) = out.split_at_mut(approved.at());
        let input = approved.input(tail);
        let handled = self
            .begin::<false>(input, ctx, head, notify, None)
            .unwrap_or(Handled::empty());
        let done = (handled.len, handled.ran, handled.receipt);
        self.after_approved(&approved, out, done)
    }

    /// `poll`'s part: shows a held question on the device, acts on its answer, answers an owed
    /// call whose budget ran out, or refuses a call whose time is up. A yes only approves the
    /// call: the caller runs it ([`run_approved`](Self::run_approved) or its async twin).
    pub(super) fn poll_confirmation(&mut self, out: &mut [u8]) -> super::Polled {
        let mut h = self.confirm.held();
        if !self.confirm.holds() || h.approved {
            return super::Polled::NONE;
        }
        let now = self.now_ms;
        if !h.asked && h.shown_ms == At::NONE {
            h.shown_ms = At(now);
            self.confirm.set_held(&h);
        }
        let to = Some(h.owner);
        let (len, heard) = match (h.device_answer, now >= h.deadline_ms) {
            (Some(true), _) => self.settle(Answer::Yes, out),
            (Some(false), _) => self.settle(Answer::No, out),
            (None, true) => self.settle(Answer::Timeout, out),
            (None, false) => match h.owed_until.get() {
                // The budget for holding the call's answer ran out: answer that it waits. The
                // person's time counts from when the client hears that: at least the margin.
                Some(until) if now >= until => {
                    let mut owed = h;
                    owed.owed_until = At::NONE;
                    owed.deadline_ms = self.heard_deadline(h.deadline_ms);
                    self.confirm.set_held(&owed);
                    (self.write_awaiting(out, &owed), None)
                }
                _ => (0, None),
            },
        };
        super::Polled {
            len,
            to,
            heard,
            ..super::Polled::NONE
        }
    }

    /// The answer of a call held for the device's button, written when its answer is due before
    /// the person answered: it waits (with the time left).
    fn write_awaiting(&self, out: &mut [u8], h: &Held) -> usize {
        let Some(id) = self.confirm.held_id(h) else {
            return 0;
        };
        let info = (self.config.name, self.config.version);
        let Some(question) = self.question_of(h) else {
            return 0;
        };
        let question = Asked {
            confirm: question.confirm,
            args: &question.args,
            client: question.client,
        };
        let left = h.deadline_ms.saturating_sub(self.now_ms);
        let left = u32::try_from(left).unwrap_or(u32::MAX);
        finish(out, Some(id), "", |w| {
            write_result_object(w, id, Era::Legacy, info, "complete", |w| {
                awaiting(w, &question, left, self.config.answers_only);
            });
        })
    }
}

/// What a client that receives only answers is told in a "waiting" answer: how it learns the
/// outcome, since nothing can be sent to it later.
pub(crate) const LEARN_LATER: &str = " This device cannot send the outcome by itself: it will begin the answer to your next call to any of its tools.";

/// `"confirm-<approval>"`: the id of the `elicitation/create` request that asks a client's user.
fn write_elicitation_id(w: &mut Writer<'_>, approval: u64) {
    w.raw(br#""confirm-"#);
    hex16(w, approval);
    w.raw(b"\"");
}

/// A refusal result's members: the reason, `isError: true`; with `error_member` (2024-11-05) the
/// reason again as `error`, where xiaozhi's backends read a failed call's reason (as
/// `render_result_for` writes it for any failed call).
fn refusal(w: &mut Writer<'_>, why: &'static str, error_member: bool, commanded: Option<Reading>) {
    let refused = Refused { why, commanded }.error();
    render_result_for(w, &Err(refused), &[], 0, None, error_member);
}

/// A held call that did not run, and why: a failure like any other (the first-text rule), its
/// evidence `not applied` with what the call commanded.
#[derive(Clone, Copy)]
struct Refused {
    why: &'static str,
    commanded: Option<Reading>,
}

impl Refused {
    fn error(self) -> ToolError {
        let mut evidence = Evidence::new(Level::NotApplied);
        evidence.commanded = self.commanded;
        ToolError::new(self.why).with_evidence(evidence)
    }
}

/// The answer of a call held for the device's button while it waits. A client that receives
/// only answers ([`Config::answers_only`](super::Config::answers_only)) is told how it will
/// learn the outcome: no message can follow this one, so the outcome begins the answer to its
/// next call.
fn awaiting(w: &mut Writer<'_>, question: &Asked<'_>, timeout_ms: u32, answers_only: bool) {
    let secs = u64::from(timeout_ms.div_ceil(1000));
    w.raw(protocol::FIRST_TEXT);
    w.begin_string();
    w.text("Waiting for a person: press the button on the device within ");
    w.uint(secs);
    w.text(" s to confirm: ");
    let _ = write!(w, "{question}");
    w.text(" Nothing has been done yet.");
    if answers_only {
        w.text(LEARN_LATER);
    }
    w.end_string();
    w.raw(protocol::AWAITING_OPEN);
    w.uint(secs);
    w.raw(protocol::QUESTION);
    question.write_string(w);
    w.raw(b"}");
}

/// Turns the held call's outcome into a `notifications/message` (the call was answered already):
/// `out[..n]` holds the call's response when it ran (`refused` is `None`), else nothing. Its
/// `data` has the tool, whether it was confirmed, the reason of a refusal, the sentence a
/// person hears (`text`: `self.relay.set, confirmed: true — measured: …`, `self.relay.set: the
/// person confirmed it, then it failed: Refused by interlock …`, `self.relay.set: Not
/// confirmed: no answer in time; nothing was done — not applied (commanded true)`), and the
/// call's result or error. Returns the length and where the sentence is.
fn wrap_outcome(
    out: &mut [u8],
    n: usize,
    tool: &'static str,
    refused: Option<Refused>,
) -> (usize, Option<super::Heard>) {
    // The response's `result` (or `error`) member, moved to the end of the buffer.
    let member = out.get(..n).and_then(|resp| {
        let root = Json::parse(resp, crate::wire::json::DEFAULT_MAX_DEPTH).ok()?;
        let [result, error] = members(Some(root), ["result", "error"]).ok()?;
        let v = result.or(error)?;
        let start = v.raw().as_ptr() as usize - resp.as_ptr() as usize;
        Some((start, v.raw().len(), result.is_some()))
    });
    let cap = out.len();
    let (tail, len, is_result) = match member {
        Some((start, len, is_result)) if len < cap => {
            let tail = cap - len;
            out.copy_within(start..start + len, tail);
            (tail, len, is_result)
        }
        _ => (cap, 0, true),
    };
    let (head, moved) = out.split_at_mut(tail);
    let moved = moved.get(..len).unwrap_or_default();
    let mut w = Writer::new(head);
    w.raw(protocol::CONFIRMATION_NOTIFICATION);
    w.string(tool);
    w.raw(protocol::CONFIRMED);
    w.bool(refused.is_none());
    if let Some(r) = refused {
        w.raw(protocol::REASON);
        w.string(r.why);
    }
    // The sentence: the engine's words, the tool's name, and the result's own first text (or
    // error message), copied as it was written (escaped already).
    w.raw(protocol::TEXT);
    w.begin_string();
    let said_at = w.mark();
    w.text(tool);
    match refused {
        Some(r) => {
            w.plain(b": ");
            write_first_text(&mut w, &Err(r.error()), &[], 0, None);
        }
        // Confirmed, then failed (an interlock refused, the hardware failed): in that order,
        // then the failure's own words — never "confirmed: Refused by …".
        None if failed(moved, is_result) => {
            w.plain(b": the person confirmed it, then it failed: ");
            w.plain(said_by(moved, is_result));
        }
        None => {
            w.plain(b", confirmed: ");
            w.plain(said_by(moved, is_result));
        }
    }
    let said = w.mark() - said_at;
    w.end_string();
    if len > 0 {
        w.raw(if is_result {
            protocol::RESULT
        } else {
            protocol::ERROR
        });
    }
    let at = w.needed();
    if !w.fits() {
        return (0, None);
    }
    // The member slides down behind the head (it need not fit twice), then the braces.
    let end = at + len + 3;
    if end > cap {
        return (0, None);
    }
    out.copy_within(tail..tail + len, at);
    match out.get_mut(at + len..end) {
        Some(braces) => braces.copy_from_slice(b"}}}"),
        None => return (0, None),
    }
    let heard = super::Heard {
        outcome: match refused {
            Some(_) => super::Later::Refused,
            None => super::Later::Confirmed,
        },
        tool,
        at: said_at,
        len: said,
    };
    (end, Some(heard))
}

/// `true` when a call's `result` member says it failed (`isError: true`), or it is an `error`.
fn failed(member: &[u8], is_result: bool) -> bool {
    !is_result
        || Json::parse(member, crate::wire::json::DEFAULT_MAX_DEPTH)
            .ok()
            .and_then(|v| members(Some(v), ["isError"]).ok())
            .and_then(|[e]| e)
            .is_some_and(|e| e.raw() == b"true")
}

/// What a call's `result` member says in words (its first text), or its `error` member (the
/// message), as escaped JSON string content; nothing when it has neither.
fn said_by(member: &[u8], is_result: bool) -> &[u8] {
    let Ok(v) = Json::parse(member, crate::wire::json::DEFAULT_MAX_DEPTH) else {
        return b"";
    };
    let text = match is_result {
        true => members(Some(v), ["content"])
            .ok()
            .and_then(|[c]| c?.elements()?.next())
            .and_then(|first| members(Some(first), ["text"]).ok())
            .and_then(|[t]| t),
        false => members(Some(v), ["message"]).ok().and_then(|[m]| m),
    };
    text.and_then(|t| t.as_str()).map_or(b"", |t| t.raw())
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::server::Caps;

    /// An owed sentence cut to its room never splits an escape sequence or a character.
    #[test]
    fn a_kept_sentence_is_cut_between_characters_and_escapes() {
        let s = r#"a\u00e9\"b\u2014c—d"#.as_bytes();
        assert_eq!(keep_escaped(s, 100), (s.len(), false));
        for room in 0..s.len() {
            let (kept, cut) = keep_escaped(s, room);
            assert!(cut && kept <= room);
            let piece = format!("\"{}\"", core::str::from_utf8(&s[..kept]).unwrap());
            serde_json::from_str::<serde_json::Value>(&piece).unwrap();
        }
    }

    /// Every field of the record reads back as it was written, whatever its value.
    #[test]
    fn a_record_reads_back_as_written() {
        let mut cases = [Held::NONE; 3];
        cases[1] = Held {
            len: 300,
            id: (41, 7),
            tool: 3,
            principal: Principal::User,
            owner: Peer::new(u64::MAX - 5),
            session: Session {
                revision: Some(super::super::Revision::V2024_11_05),
                elicits: true,
                tasks: false,
                log_level: Some(crate::LogLevel::Emergency),
                client: ClientName::new(
                    crate::wire::Json::parse(br#""caf\u00e9 \n xxxxxxxxxxxxxxxxxxxxxxxxxx""#, 2)
                        .unwrap()
                        .as_str()
                        .unwrap(),
                ),
            },
            approval: 0x0123_4567_89ab_cdef,
            asked: true,
            approved: false,
            shown_ms: At(17),
            deadline_ms: u64::MAX - 1,
            owed_until: At::NONE,
            device_answer: Some(false),
        };
        cases[2] = Held {
            principal: Principal::Model,
            session: Session {
                revision: Some(super::super::Revision::LATEST),
                elicits: false,
                tasks: true,
                log_level: None,
                client: ClientName::NONE,
            },
            asked: false,
            approved: true,
            device_answer: Some(true),
            shown_ms: At::NONE,
            owed_until: At(9),
            ..cases[1]
        };
        for h in cases {
            let mut b = [0xA5; HELD];
            h.write(&mut b);
            assert_eq!(format!("{:?}", Held::read(&b)), format!("{h:?}"));
        }
        // A fresh server's zeros: nothing held.
        assert_eq!(Held::read(&[0; HELD]).len, 0);
        let fresh =
            Confirmations::<Caps<1, 0, 0, 0, 0, 0, { HOLD_RECORD + 1 }>>::new([0; HOLD_RECORD + 1]);
        assert!(!fresh.holds());
        const { assert!(!Confirmations::<Caps<1, 0, 0, 0, 0, 0, HOLD_RECORD>>::ON) };
    }
}
