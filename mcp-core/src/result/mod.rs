//! What a tool handler returns: a business value ([`Output`]) or a failure ([`ToolError`]), each
//! optionally carrying [`Evidence`] of what the hardware really did.
//!
//! `Output::bool(false)` is a successful answer whose value is `false`; a failed call is an
//! `Err(ToolError)`. The type decides, never the text. Both render as an MCP `CallToolResult`
//! (a success leaves `isError` out: absent, it is false in every revision):
//!
//! | handler returns | `content[0].text` | `structuredContent` | `isError` |
//! |---|---|---|---|
//! | `Output::bool(true)` | `true` | `{"value":true}` | absent |
//! | `Output::int(40)` | `40` | `{"value":40}` | absent |
//! | `reply.json(…)` | the object's JSON text | the object | absent |
//! | `reply.captioned(caption, blocks)` | the caption (and the evidence sentence), then the blocks (`image`, …) | — | absent |
//! | `Err(ToolError::new("…"))` | the message | — | `true` |
//! | `Output::bool(true).with_evidence(e)` | `true — read back: 40` | `{"value":true}` | absent |
//! | `Err(ToolError::new("…").with_evidence(e))` | `… — read back: 47 (commanded 40)` | — | `true` |
//!
//! **What a model hears.** Some clients hand the model `content[0].text` and nothing else
//! (xinnan's xiaozhi backend, the most used one, does), so when evidence is attached the first
//! text says the business value *and* the evidence in one sentence a model can repeat:
//! `true — read back: 40`, `true — applied, not verified (commanded 55)`, `true —
//! scheduled, not done yet`, a failure `The codec reports a different volume than commanded — read
//! back: 47 (commanded 40)`. This is one rule for every revision and peer, not a per-peer
//! rendering: text is free-form for every client (the SDKs validate `structuredContent` against
//! the `outputSchema`, never the text), and a client that reads everything loses nothing by
//! hearing the value and its evidence together. A result without evidence keeps its text as the
//! tool gave it. For programs the result also carries the evidence as data, in its `_meta` under
//! `io.github.mcu-mcp/evidence` (`{"level":"read_back","commanded":40,"observed":40}`), where the
//! SDKs keep it; `structuredContent` and `isError` are the same with or without it. Evidence from hardware with a coarser resolution than the command
//! carries its tolerance (`{"level":"read_back","commanded":40,"observed":39,"tolerance":2}`, said
//! as `read back: 39 (commanded 40, within ±2)`), and readings that are not percent or on/off
//! carry their unit (`"unit":"steps"`: `measured: 498 steps (commanded 500 steps, within ±2
//! steps)`). A long-running action's immediate answer to a client without task support and the
//! status tool's report ([`status_tool`](crate::server::status_tool)) follow the same rule.
//!
//! Evidence is written by exactly one function per form (crate-internal `Evidence::write_json`
//! and `Evidence::write_sentence`), for every answer that carries it.
//!
//! Dynamic text and JSON are written by the handler into a scratch area through [`Reply`]; the
//! engine lends the caller's output buffer for that, so nothing is allocated.

use core::fmt::{self, Write as _};

mod render;
mod task;

#[cfg(feature = "resources")]
pub(crate) use render::{render_error_text, render_plain_string};
pub(crate) use render::{render_result, render_result_for, write_first_text};
pub use task::{
    Progress, StopHook, TaskHooks, TaskInfo, TaskLookup, TaskPoll, TaskSnapshot, TaskStatus,
};

use crate::caller::{LogLevel, Notify, Peer, Principal};
use crate::schema::AccessError;
use crate::wire::json::Json;
use crate::wire::protocol::{self, join};
use crate::wire::writer::{ObjectWriter, Writer};

/// What a handler returns.
pub type ToolResult = Result<Output, ToolError>;

/// How strongly the device can vouch for an action's effect, weakest first.
///
/// The first two say that the action did not (knowingly) take effect, so they come only with a
/// failed call ([`ToolError::with_evidence`]): a failure states what was commanded and how much
/// of it the device knows to have happened, in the same sentence as every other answer (`The
/// device did not acknowledge (I2C NACK); nothing was changed — not applied (commanded 40)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Level {
    /// The command may or may not have taken effect: the device lost track (a bus error or a
    /// timeout in the middle of a write). Only on a failed call.
    Unknown,
    /// The command did not take effect: it was refused before the hardware was driven (a
    /// range the device cannot reach, an interlock, a person's "no", a full queue), or the
    /// hardware refused it (an I2C NACK). Only on a failed call.
    NotApplied,
    /// Queued or deferred: it has not happened yet (a reboot in one second, a queued move).
    Scheduled,
    /// The driver call returned OK; nothing was read back.
    Applied,
    /// The state was read back from the device after the write and matches the command:
    /// `|observed − commanded| ≤ tolerance` ([`Evidence::tolerance`]), which is exact equality
    /// when the evidence carries no tolerance (0). A read-back that does not match is a failed
    /// call carrying this level with both values.
    ReadBack,
    /// An independent sensor confirmed the effect: the measured value matches the command in the
    /// same sense as [`ReadBack`](Level::ReadBack), `|observed − commanded| ≤ tolerance` (exact
    /// when there is no tolerance). A measurement that does not match is a failed call carrying
    /// this level with both values.
    Measured,
}

impl Level {
    /// The wire name: `unknown`, `not_applied`, `scheduled`, `applied`, `read_back`,
    /// `measured`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Unknown => "unknown",
            Level::NotApplied => "not_applied",
            Level::Scheduled => "scheduled",
            Level::Applied => "applied",
            Level::ReadBack => "read_back",
            Level::Measured => "measured",
        }
    }
}

/// A commanded or observed value.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Reading {
    /// An on/off state.
    Bool(bool),
    /// An integer (register value, percent, position).
    Int(i64),
    /// A measurement (feature `float`).
    #[cfg(feature = "float")]
    Number(f64),
    /// A named setting (a theme, a mode, an input source): a JSON string in the evidence JSON,
    /// the bare word in its text.
    Str(&'static str),
}

impl Reading {
    /// The value as a JSON token.
    fn write_json(self, w: &mut Writer<'_>) {
        match self {
            Reading::Bool(b) => w.bool(b),
            Reading::Int(i) => w.int(i),
            #[cfg(feature = "float")]
            Reading::Number(n) => w.number(n),
            Reading::Str(s) => w.string(s),
        }
    }

    /// The value as text for a reader: as in JSON, but a string without quotes.
    pub(crate) fn write_text(self, w: &mut Writer<'_>) {
        match self {
            Reading::Str(s) => w.text(s),
            other => other.write_json(w),
        }
    }
}

/// Completion evidence: the level, what was commanded and observed when known, and how close
/// the two must be to match.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct Evidence {
    /// How strongly the effect is confirmed.
    pub level: Level,
    /// What the device was told to do.
    pub commanded: Option<Reading>,
    /// What the device reported back or a sensor measured.
    pub observed: Option<Reading>,
    /// The resolution of the comparison, in the readings' unit: the observed value matches the
    /// command when `|observed − commanded| ≤ tolerance`. 0 (the default) means exactly equal; it
    /// is then left out of the rendering. A codec with 64 volume steps has a tolerance of 2
    /// percent; an encoder that counts arrival within 2 steps, 2.
    pub tolerance: u32,
    /// The unit of the readings and the tolerance, for readings that are not percent or on/off
    /// (`"steps"`, `"mm"`); `None` when the tool's parameter already says it.
    pub unit: Option<&'static str>,
}

impl Evidence {
    /// Evidence at `level` with no values.
    pub const fn new(level: Level) -> Self {
        Evidence {
            level,
            commanded: None,
            observed: None,
            tolerance: 0,
            unit: None,
        }
    }

    setters! {
        /// Records the commanded value.
        commanded(v: Reading) => commanded = Some(v);
        /// Records the observed value.
        observed(v: Reading) => observed = Some(v);
        /// Records the tolerance of the comparison (0: exact), in the readings' unit.
        tolerance(tolerance: u32) => tolerance = tolerance;
        /// Records the unit of the readings (`"steps"`), for readings that are not percent or
        /// on/off.
        unit(unit: &'static str) => unit = Some(unit);
    }

    /// Whether the observed value matches the command: `|observed − commanded| ≤ tolerance`
    /// (equality for on/off readings). `None` when either value is missing or they are of
    /// different kinds.
    pub fn matches(&self) -> Option<bool> {
        match (self.commanded?, self.observed?) {
            (Reading::Bool(c), Reading::Bool(o)) => Some(c == o),
            (Reading::Str(c), Reading::Str(o)) => Some(c == o),
            (Reading::Int(c), Reading::Int(o)) => Some(o.abs_diff(c) <= u64::from(self.tolerance)),
            #[cfg(feature = "float")]
            (Reading::Number(c), Reading::Number(o)) => {
                Some((o - c).abs() <= f64::from(self.tolerance))
            }
            _ => None,
        }
    }

    /// Every field, named here once: a field added to `Evidence` does not compile until it is
    /// added to this tuple, and then not until every writer (the JSON, the sentence) and the
    /// tests that check them take it.
    pub(crate) const fn fields(
        &self,
    ) -> (
        Level,
        Option<Reading>,
        Option<Reading>,
        u32,
        Option<&'static str>,
    ) {
        let Evidence {
            level,
            commanded,
            observed,
            tolerance,
            unit,
        } = *self;
        (level, commanded, observed, tolerance, unit)
    }

    /// The evidence as JSON: `{"level":"read_back","commanded":40,"observed":39,"tolerance":2}`
    /// (`tolerance` only when not 0; `unit` only when set): the one writer of this form. A
    /// result's evidence as data ([`write_member`](Self::write_member)), a task's result, a task
    /// start, and the status tool's report all come here.
    pub(crate) fn write_json(&self, w: &mut Writer<'_>) {
        // Every field: a field added to `Evidence` does not compile until it is written.
        let (level, commanded, observed, tolerance, unit) = self.fields();
        // `{"level":"read_back"`: the object's opening and its first member, one piece.
        macro_rules! head {
            ($level:ident) => {
                join!(
                    b"{",
                    protocol::first(protocol::LEVEL),
                    b"\"",
                    Level::$level.as_str().as_bytes(),
                    b"\"",
                )
            };
        }
        let head: &[u8] = match level {
            Level::Unknown => head!(Unknown),
            Level::NotApplied => head!(NotApplied),
            Level::Scheduled => head!(Scheduled),
            Level::Applied => head!(Applied),
            Level::ReadBack => head!(ReadBack),
            Level::Measured => head!(Measured),
        };
        w.plain(head);
        if let Some(c) = commanded {
            w.plain(protocol::COMMANDED);
            c.write_json(w);
        }
        if let Some(o) = observed {
            w.plain(protocol::OBSERVED);
            o.write_json(w);
        }
        if tolerance > 0 {
            w.plain(protocol::TOLERANCE);
            w.uint(u64::from(tolerance));
        }
        if let Some(u) = unit {
            w.plain(protocol::UNIT);
            w.string(u);
        }
        w.plain(b"}");
    }

    /// The evidence as data where the SDKs keep a result's data: the result's `_meta`, under
    /// `io.github.mcu-mcp/evidence` (the Python SDK drops members its model does not know, and
    /// keeps `_meta`). The result object's writer closes the `_meta` member
    /// ([`Writer::close_meta`]).
    pub(crate) fn write_member(&self, w: &mut Writer<'_>) {
        w.meta_member(protocol::EVIDENCE_META);
        self.write_json(w);
    }

    /// The evidence as words a model can repeat, what a client that reads only a result's first
    /// text hears: `read back: 40` (the commanded value, read back exactly: it is said once),
    /// `read back: 39 (commanded 40, within ±2)`,
    /// `measured: 498 steps (commanded 500 steps, within ±2 steps)`, `applied, not verified
    /// (commanded 55)`, `scheduled, not done yet`. A disagreement outside the tolerance reads
    /// `not within ±2`; a tolerance without an observed value, `tolerance ±2`. With
    /// [`write_sentence_after`](Self::write_sentence_after) the one writer of this form (written
    /// as text: escaped when the writer is in string mode).
    pub(crate) fn write_sentence(&self, w: &mut Writer<'_>) {
        self.write_sentence_from(w, SEPARATOR.len());
    }

    /// ` — ` and the sentence: what follows the value in a first text (`true — read back: 40`). Public for sentences a firmware says of its own (a kit's news after a
    /// restart), so that every sentence with evidence uses the same words.
    pub fn write_sentence_after(&self, w: &mut Writer<'_>) {
        self.write_sentence_from(w, 0);
    }

    /// The sentence, from byte `skip` on (the separator, the level's words and the colon before
    /// an observed value are one piece).
    fn write_sentence_from(&self, w: &mut Writer<'_>, skip: usize) {
        // Every field: a field added to `Evidence` does not compile until it is said.
        let (level, commanded, observed, tolerance, unit) = self.fields();
        let said: &str = match level {
            Level::Unknown => " — state unknown: ",
            Level::NotApplied => " — not applied: ",
            Level::Scheduled => " — scheduled, not done yet: ",
            Level::Applied => " — applied, not verified: ",
            Level::ReadBack => " — read back: ",
            Level::Measured => " — measured: ",
        };
        // Without an observed value, no colon.
        let end = said
            .len()
            .saturating_sub(if observed.is_some() { 0 } else { 2 });
        w.plain(said.as_bytes().get(skip..end).unwrap_or_default());
        let unit = |w: &mut Writer<'_>| {
            if let Some(u) = unit {
                w.plain(b" ");
                w.text(u);
            }
        };
        if let Some(o) = observed {
            o.write_text(w);
            unit(w);
        }
        let mut open = false;
        // (What was commanded, when the sentence has not said it already: an observed value
        // that is exactly the commanded one says both.)
        if let Some(c) = commanded.filter(|&c| observed != Some(c)) {
            w.plain(b" (commanded ");
            c.write_text(w);
            unit(w);
            open = true;
        }
        if tolerance > 0 {
            w.plain(if open { b", " } else { b" (" });
            w.plain(
                match self.matches() {
                    Some(true) => "within ±",
                    Some(false) => "not within ±",
                    None => "tolerance ±",
                }
                .as_bytes(),
            );
            w.uint(u64::from(tolerance));
            unit(w);
            open = true;
        }
        if open {
            w.plain(b")");
        }
    }
}

/// What a call commanded, as a failure's evidence names it: its first parameter's validated
/// value when that is a boolean, a number or one of the parameter's declared choices (`on`:
/// `true`, `volume`: 40, `theme`: `dark`). A free-form string is never repeated (it is the
/// client's text, and a failure's sentence is spoken and logged), nor an absent optional one.
pub(crate) fn commanded(args: &crate::schema::Args<'_>) -> Option<Reading> {
    use crate::schema::ParamType;
    let (p, v) = args.first()?;
    Some(match p.ty() {
        ParamType::Boolean => Reading::Bool(v != 0),
        ParamType::Integer => Reading::Int(v as i64),
        #[cfg(feature = "float")]
        ParamType::Number => Reading::Number(f64::from_bits(v)),
        #[cfg(feature = "strings")]
        ParamType::String => Reading::Str(p.choices().get(usize::try_from(v).ok()?)?),
    })
}

impl ToolError {
    /// The rule every failure follows: when its evidence names no commanded value, the call's
    /// ([`commanded`]) is filled in, so that `… — not applied (commanded 40)` says what was
    /// asked for whichever part of the device refused it. A failure without evidence (a tool
    /// bug) stays as it is.
    pub(crate) fn with_commanded(mut self, args: &crate::schema::Args<'_>) -> Self {
        if let Some(e) = &mut self.evidence
            && e.commanded.is_none()
        {
            e.commanded = commanded(args);
        }
        self
    }
}

/// What separates a value from its evidence in a first text.
const SEPARATOR: &str = " — ";

/// A region of the scratch area written through a [`Reply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    start: usize,
    len: usize,
    /// The call that wrote it: a span kept from an earlier call resolves to nothing.
    seq: u32,
}

impl Span {
    pub(crate) fn resolve(self, scratch: &[u8], seq: u32) -> Option<&[u8]> {
        if self.seq != seq {
            return None;
        }
        scratch.get(self.start..self.start + self.len)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    Bool(bool),
    Int(i64),
    #[cfg(feature = "float")]
    Number(f64),
    Static(&'static str),
    Text(Span),
    Json(Span),
    /// Pre-rendered content blocks (comma-separated JSON objects), from [`Reply::content`].
    Content(Span),
    /// A long-running tool started its action; the word is the task's data.
    Task(i64),
    /// A JSON object with a text of its own (the status tool's report), from [`Reply::report`]:
    /// the text, the object, and the text's length (4 bytes, little-endian) in one span, so that
    /// a `Value` stays as small as a span.
    Report(Span),
    /// Content blocks with a caption, from [`Reply::captioned`]: the caption (the first text,
    /// which the evidence sentence follows), the blocks, and the caption's length, laid out as
    /// a [`Value::Report`] is.
    Captioned(Span),
}

/// A [`Value::Report`]'s text and object (a [`Value::Captioned`]'s caption and blocks), from its
/// span's bytes.
pub(crate) fn report_parts(bytes: &[u8]) -> (&[u8], &[u8]) {
    let (body, len) = bytes
        .split_at_checked(bytes.len().saturating_sub(4))
        .unwrap_or_default();
    let text_len = <[u8; 4]>::try_from(len).map_or(usize::MAX, |n| {
        usize::try_from(u32::from_le_bytes(n)).unwrap_or(usize::MAX)
    });
    body.split_at_checked(text_len).unwrap_or((b"", b"{}"))
}

/// A successful tool result: the business value and, for actions, the evidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Output {
    pub(crate) value: Value,
    pub(crate) evidence: Option<Evidence>,
}

impl Output {
    const fn of(value: Value) -> Self {
        Output {
            value,
            evidence: None,
        }
    }

    /// A boolean answer (`false` is an answer, not a failure).
    pub const fn bool(v: bool) -> Self {
        Self::of(Value::Bool(v))
    }

    /// An integer answer.
    pub const fn int(v: i64) -> Self {
        Self::of(Value::Int(v))
    }

    /// A number answer. Feature `float`.
    #[cfg(feature = "float")]
    pub const fn number(v: f64) -> Self {
        Self::of(Value::Number(v))
    }

    /// A fixed text answer (dynamic text: [`Reply::text`]).
    pub const fn text(v: &'static str) -> Self {
        Self::of(Value::Static(v))
    }

    /// From a long-running tool's handler: "the action has started; track it as a task".
    /// `data` is handed back to the tool's [`TaskHooks`] (a target position, a commanded level).
    /// Without attached evidence the start is reported as [`Level::Scheduled`].
    pub const fn task(data: i64) -> Self {
        Self::of(Value::Task(data))
    }

    /// Attaches completion evidence.
    pub const fn with_evidence(mut self, e: Evidence) -> Self {
        self.evidence = Some(e);
        self
    }

    /// The attached evidence.
    pub const fn evidence(&self) -> Option<Evidence> {
        self.evidence
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    Static(&'static str),
    Scratch(Span),
}

/// A failed tool call: rendered as a result with `isError: true`, so that the model can read the
/// message and react. Protocol problems (unknown tool, malformed request) are not `ToolError`s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolError {
    pub(crate) message: Message,
    pub(crate) evidence: Option<Evidence>,
}

impl ToolError {
    /// A failure with a fixed message (dynamic messages: [`Reply::error`]).
    pub const fn new(message: &'static str) -> Self {
        ToolError {
            message: Message::Static(message),
            evidence: None,
        }
    }

    /// Attaches evidence (for example a read-back that disagrees with the command).
    pub const fn with_evidence(mut self, e: Evidence) -> Self {
        self.evidence = Some(e);
        self
    }

    /// The attached evidence.
    pub const fn evidence(&self) -> Option<Evidence> {
        self.evidence
    }
}

impl From<AccessError> for ToolError {
    fn from(e: AccessError) -> Self {
        ToolError::new(match e {
            AccessError::Undeclared => {
                "Tool bug: the handler read an argument the tool does not declare"
            }
            AccessError::WrongType => "Tool bug: the handler read an argument as the wrong type",
            AccessError::Absent => {
                "Tool bug: the handler required an optional argument that was absent"
            }
            AccessError::NotDecoded => {
                "Tool bug: a string argument with escapes was read before it was decoded"
            }
        })
    }
}

const SCRATCH_FULL: ToolError =
    ToolError::new("The tool ran, but its result is too large for the device's output buffer");

/// The handler's side of a call: request facts, and a scratch area for dynamic results.
///
/// The scratch area is the caller's output buffer, lent for the duration of the handler. The
/// engine moves what the handler wrote to the end of the buffer and renders the response in
/// front of it, so a result of `n` bytes needs roughly `2n` plus the envelope (`3n` for JSON, which
/// is rendered as `structuredContent` and as text).
#[derive(Debug)]
pub struct Reply<'s> {
    w: Writer<'s>,
    /// The bytes the answer's envelope needs around the content (see
    /// [`content_room`](Self::content_room)).
    reserve: usize,
    principal: Principal,
    peer: Peer,
    seq: u32,
    tasks: Option<&'s dyn TaskLookup>,
    notify: Option<&'s mut dyn Notify>,
    progress_token: Option<Json<'s>>,
    log_level: Option<LogLevel>,
}

impl core::fmt::Debug for dyn TaskLookup + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TaskLookup")
    }
}

impl<'s> Reply<'s> {
    pub(crate) fn new(scratch: &'s mut [u8], principal: Principal, seq: u32) -> Self {
        Reply {
            w: Writer::new(scratch),
            reserve: 0,
            principal,
            peer: Peer::ONLY,
            seq,
            tasks: None,
            notify: None,
            progress_token: None,
            log_level: None,
        }
    }

    /// Sets the bytes the answer's envelope needs (the response head with the call's id, the
    /// result's members around `content`), which [`content_room`](Self::content_room) keeps free.
    pub(crate) fn with_reserve(mut self, reserve: usize) -> Self {
        self.reserve = reserve;
        self
    }

    pub(crate) const fn with_peer(mut self, peer: Peer) -> Self {
        self.peer = peer;
        self
    }

    pub(crate) fn with_tasks(mut self, tasks: &'s dyn TaskLookup) -> Self {
        self.tasks = Some(tasks);
        self
    }

    pub(crate) fn with_notify(
        mut self,
        notify: &'s mut dyn Notify,
        progress_token: Option<Json<'s>>,
        log_level: Option<LogLevel>,
    ) -> Self {
        self.notify = Some(notify);
        self.progress_token = progress_token;
        self.log_level = log_level;
        self
    }

    /// Writes a notification at the end of the scratch area, hands it to the sink, and forgets
    /// it. Returns `false` when there is no sink or it does not fit.
    fn send(&mut self, write: impl FnOnce(&mut Writer<'s>)) -> bool {
        let Some(notify) = self.notify.as_deref_mut() else {
            return false;
        };
        let mark = self.w.mark();
        write(&mut self.w);
        let sent = match self.w.written().and_then(|all| all.get(mark..)) {
            Some(message) => {
                notify.notify(message);
                true
            }
            None => false,
        };
        self.w.rewind(mark);
        sent
    }

    /// The request's `progressToken` (a JSON string or integer, as sent), if it carried one.
    pub fn progress_token(&self) -> Option<Json<'s>> {
        self.progress_token
    }

    /// Reports progress to the client (`notifications/progress`), when the request carried a
    /// `progressToken` and the transport can deliver notifications. Returns whether it was sent.
    pub fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(token) = self.progress_token else {
            return false;
        };
        self.send(|w| {
            w.raw(protocol::PROGRESS_NOTIFICATION);
            w.raw(token.raw());
            w.raw(protocol::PROGRESS);
            w.progress_value(progress);
            if let Some(total) = total {
                w.raw(protocol::TOTAL);
                w.progress_value(total);
            }
            if let Some(m) = message {
                w.raw(protocol::MESSAGE);
                w.string(m);
            }
            w.raw(b"}}");
        })
    }

    /// Sends a log message to the client (`notifications/message`) when `level` is at or above
    /// the level the client asked for. Returns whether it was sent.
    pub fn log(
        &mut self,
        level: LogLevel,
        logger: Option<&str>,
        message: fmt::Arguments<'_>,
    ) -> bool {
        if self.log_level.is_none_or(|min| level < min) {
            return false;
        }
        self.send(|w| {
            w.raw(protocol::LOG_NOTIFICATION);
            w.string(level.as_str());
            if let Some(l) = logger {
                w.raw(protocol::LOGGER);
                w.string(l);
            }
            w.raw(protocol::DATA);
            w.begin_string();
            let _ = w.write_fmt(message);
            w.end_string();
            w.raw(b"}}");
        })
    }

    /// The state of a task of this server, by its id (for a status tool).
    pub fn task(&self, id: &str) -> Option<&'s TaskSnapshot> {
        self.tasks.and_then(|t| t.snapshot(id))
    }

    pub(crate) const fn used(&self) -> usize {
        if self.w.fits() {
            self.w.needed()
        } else {
            self.w.capacity()
        }
    }

    /// Who made this call.
    pub const fn principal(&self) -> Principal {
        self.principal
    }

    /// The client that made this call, as the transport named it
    /// ([`Input::peer`](crate::Input::peer); [`Peer::ONLY`] on a point-to-point link): a tool
    /// that keeps state for one client across calls (an upgrade's pieces) checks that the next
    /// call comes from the same one.
    pub const fn peer(&self) -> Peer {
        self.peer
    }

    /// How many more bytes of content blocks ([`content`](Self::content),
    /// [`captioned`](Self::captioned)) the answer can hold, as the handler writes them: what a
    /// handler with a large result (an image) checks *before* it produces it, to refuse clearly
    /// instead of running into the engine's generic "response too large" error.
    ///
    /// The engine renders the answer in front of what the handler wrote (see the type's docs), so
    /// every byte written counts twice, and the response's envelope (its head with the call's id,
    /// `isError`, the 2026-07-28 `_meta`) is kept free. Not counted: what the result adds when it
    /// is rendered once — the evidence sentence after a caption and the evidence as data in
    /// `_meta` (74 bytes for a bare `measured`, some 200 with readings and a unit) — for which
    /// the handler keeps a margin of half that (one rendered byte is half a written one here).
    ///
    /// A handler checks `ContentWriter::image_len(mime, len) + margin <= reply.content_room()`
    /// before it makes the image ([`ContentWriter::image_len`]; mcp-hal's demo camera does).
    pub const fn content_room(&self) -> usize {
        (self.w.capacity().saturating_sub(self.reserve) / 2).saturating_sub(self.used())
    }

    /// A span of `head`, then `body`, then the head's length (4 bytes, little-endian): how a
    /// report and a captioned answer keep their first text apart from what follows it.
    fn headed(
        &mut self,
        head: impl FnOnce(&mut Writer<'s>),
        body: impl FnOnce(&mut Writer<'s>),
    ) -> Result<Span, ToolError> {
        self.span(|w| {
            let start = w.mark();
            head(w);
            let head_len = u32::try_from(w.mark() - start).unwrap_or(u32::MAX);
            body(w);
            w.plain(&head_len.to_le_bytes());
        })
        .ok_or(SCRATCH_FULL)
    }

    fn span(&mut self, write: impl FnOnce(&mut Writer<'s>)) -> Option<Span> {
        let start = self.w.mark();
        write(&mut self.w);
        if self.w.fits() {
            Some(Span {
                start,
                len: self.w.needed() - start,
                seq: self.seq,
            })
        } else {
            self.w.rewind(start);
            None
        }
    }

    /// A formatted text answer: `reply.text(format_args!("volume is {v}"))`.
    pub fn text(&mut self, args: fmt::Arguments<'_>) -> Result<Output, ToolError> {
        let span = self.span(|w| {
            let _ = w.write_fmt(args);
        });
        span.map(|s| Output::of(Value::Text(s))).ok_or(SCRATCH_FULL)
    }

    /// A JSON object answer, written member by member:
    /// `reply.json(|o| { o.int("volume", 40); })`.
    pub fn json(&mut self, f: impl FnOnce(&mut ObjectWriter<'_, 's>)) -> Result<Output, ToolError> {
        let span = self.span(|w| ObjectWriter::write(w, f));
        span.map(|s| Output::of(Value::Json(s))).ok_or(SCRATCH_FULL)
    }

    /// A JSON object answer from any `serde::Serialize` value whose JSON form is an object.
    ///
    /// This path serializes with `serde_json` into a temporary `Vec` (it allocates; feature
    /// `alloc`); use [`json`](Self::json) on allocation-free paths.
    #[cfg(feature = "alloc")]
    pub fn serialize<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> Result<Output, ToolError> {
        let bytes = serde_json::to_vec(v)
            .map_err(|_| ToolError::new("Tool bug: the result could not be serialized"))?;
        if bytes.first() != Some(&b'{') {
            return Err(ToolError::new(
                "Tool bug: a structured result must be a JSON object",
            ));
        }
        let span = self.span(|w| w.raw(&bytes));
        span.map(|s| Output::of(Value::Json(s))).ok_or(SCRATCH_FULL)
    }

    /// A JSON object answer with a text of its own: `text` writes the first text content (what
    /// a client that reads only `content[0].text` hears: a sentence, not the object, followed
    /// by the result's evidence sentence), `f` the object (`structuredContent`).
    ///
    /// `reply.report(|w| { w.text("firmware "); w.text(version); }, |o| { o.str("running", version); })`
    pub fn report(
        &mut self,
        text: impl FnOnce(&mut Writer<'s>),
        f: impl FnOnce(&mut ObjectWriter<'_, 's>),
    ) -> Result<Output, ToolError> {
        self.headed(text, |w| ObjectWriter::write(w, f))
            .map(|s| Output::of(Value::Report(s)))
    }

    /// An image answer (`data` is base64-encoded into the scratch area).
    pub fn image(&mut self, mime: &str, data: &[u8]) -> Result<Output, ToolError> {
        self.content(|c| {
            c.image(mime, data);
        })
    }

    /// An answer made of several content blocks (text, image, audio), in order:
    /// `reply.content(|c| { c.text("a chart"); c.image("image/png", &png); })`.
    pub fn content(
        &mut self,
        f: impl FnOnce(&mut ContentWriter<'_, 's>),
    ) -> Result<Output, ToolError> {
        let span = self.span(|w| f(&mut ContentWriter { w, first: true }));
        span.map(|s| Output::of(Value::Content(s)))
            .ok_or(SCRATCH_FULL)
    }

    /// Content blocks after a caption of the handler's: `caption` writes the first text (piece by
    /// piece: `w.text`, `w.uint`), the result's evidence sentence follows it in the same text
    /// (`captured frame 7, a 32x24 PNG of 2396 bytes — measured`), and `f` writes the blocks after
    /// it. For content whose first text must say the business value and the evidence together
    /// (a client that reads only `content[0].text` hears both); [`content`](Self::content) puts
    /// the evidence sentence in a text block of its own instead.
    pub fn captioned(
        &mut self,
        caption: impl FnOnce(&mut Writer<'s>),
        f: impl FnOnce(&mut ContentWriter<'_, 's>),
    ) -> Result<Output, ToolError> {
        // The caption's text block comes first: every block follows a comma.
        self.headed(caption, |w| f(&mut ContentWriter { w, first: false }))
            .map(|s| Output::of(Value::Captioned(s)))
    }

    /// A failure with a formatted message: `Err(reply.error(format_args!("codec NACK at {addr:#x}")))`.
    /// ([`error_with`](Self::error_with) writes the same without `core::fmt`.)
    pub fn error(&mut self, args: fmt::Arguments<'_>) -> ToolError {
        self.error_with(|w| {
            let _ = w.write_fmt(args);
        })
    }

    /// A failure whose message `f` writes piece by piece (`w.text`, `w.int`, `w.uint`), for
    /// firmware that links no `core::fmt` (its formatting machinery costs some 2.5 KiB of flash):
    /// `Err(reply.error_with(|w| { w.text("codec NACK at "); w.uint(addr.into()); }))`.
    pub fn error_with(&mut self, f: impl FnOnce(&mut Writer<'s>)) -> ToolError {
        let span = self.span(f);
        match span {
            Some(s) => ToolError {
                message: Message::Scratch(s),
                evidence: None,
            },
            None => ToolError::new("Tool failed (its message did not fit the output buffer)"),
        }
    }
}

/// Writes content blocks for [`Reply::content`].
#[derive(Debug)]
pub struct ContentWriter<'w, 's> {
    w: &'w mut Writer<'s>,
    first: bool,
}

impl ContentWriter<'_, '_> {
    fn block(&mut self, kind: &str) {
        if !self.first {
            self.w.raw(b",");
        }
        self.first = false;
        self.w.raw(protocol::BLOCK_OPEN);
        self.w.string(kind);
    }

    /// A text block.
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.block("text");
        self.w.raw(protocol::TEXT);
        self.w.string(text);
        self.w.raw(b"}");
        self
    }

    /// A text block whose text `f` writes piece by piece (`w.text`, `w.uint`; escaped as it is
    /// written), for a dynamic text without `core::fmt` or a buffer of its own.
    pub fn text_with(&mut self, f: impl FnOnce(&mut Writer<'_>)) -> &mut Self {
        self.block("text");
        self.w.open_string(join!(protocol::TEXT, b"\""));
        f(self.w);
        self.w.close_string(b"\"}");
        self
    }

    fn binary_with(
        &mut self,
        kind: &str,
        mime: &str,
        data: impl FnOnce(&mut Base64<'_, '_>),
    ) -> &mut Self {
        self.block(kind);
        self.w.raw(join!(protocol::DATA, b"\""));
        let mut b = Base64::new(self.w);
        data(&mut b);
        b.finish();
        self.w.raw(join!(b"\"", protocol::MIME_TYPE));
        self.w.string(mime);
        self.w.raw(b"}");
        self
    }

    fn binary(&mut self, kind: &str, mime: &str, data: &[u8]) -> &mut Self {
        self.binary_with(kind, mime, |b| b.write(data))
    }

    /// An image block (`data` is base64-encoded).
    pub fn image(&mut self, mime: &str, data: &[u8]) -> &mut Self {
        self.binary("image", mime, data)
    }

    /// An image block whose bytes `data` streams through a base64 encoder straight into the
    /// answer (`b.write(chunk)` as often as it likes): an image made on the fly (a camera frame
    /// encoded row by row) needs no buffer of its own. Check
    /// [`image_len`](Self::image_len) against [`Reply::content_room`] first.
    pub fn image_with(&mut self, mime: &str, data: impl FnOnce(&mut Base64<'_, '_>)) -> &mut Self {
        self.binary_with("image", mime, data)
    }

    /// The bytes an image block of `data_len` bytes of type `mime` (plain ASCII) takes in the
    /// answer: its base64 ([`base64_len`]) and its JSON, with a comma before it (as every
    /// block but a first one has).
    pub const fn image_len(mime: &str, data_len: usize) -> usize {
        // `,{"type":"image","data":"` … `","mimeType":"` … `"}`
        const FRAME: usize = br#",{"type":"image","data":"","mimeType":""}"#.len();
        FRAME + base64_len(data_len) + mime.len()
    }

    /// An embedded text resource block.
    pub fn resource(&mut self, uri: &str, mime: &str, text: &str) -> &mut Self {
        self.block("resource");
        self.w.raw(protocol::RESOURCE_OPEN);
        self.w.string(uri);
        self.w.raw(protocol::MIME_TYPE);
        self.w.string(mime);
        self.w.raw(protocol::TEXT);
        self.w.string(text);
        self.w.raw(b"}}");
        self
    }

    /// An audio block (`data` is base64-encoded).
    pub fn audio(&mut self, mime: &str, data: &[u8]) -> &mut Self {
        self.binary("audio", mime, data)
    }
}

/// How many bytes `n` bytes take in base64 (padded): `4 * ceil(n / 3)`.
pub const fn base64_len(n: usize) -> usize {
    n.div_ceil(3).saturating_mul(4)
}

/// A streaming base64 encoder (RFC 4648, padded) into an answer, for
/// [`ContentWriter::image_with`]: bytes go in by [`write`](Self::write) in pieces of any size;
/// at most two wait for the next piece, and the engine pads the end. 8 bytes on the stack.
#[derive(Debug)]
pub struct Base64<'w, 's> {
    w: &'w mut Writer<'s>,
    /// Bytes waiting for a group of three (`pending` of them).
    carry: [u8; 2],
    pending: u8,
}

impl<'w, 's> Base64<'w, 's> {
    fn new(w: &'w mut Writer<'s>) -> Self {
        Base64 {
            w,
            carry: [0; 2],
            pending: 0,
        }
    }

    /// Encodes `bytes`, after those written before.
    pub fn write(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        // Complete the waiting group first, then whole groups straight from `bytes`.
        while self.pending != 0 {
            let Some((&b, tail)) = rest.split_first() else {
                return;
            };
            rest = tail;
            self.push(b);
        }
        let mut groups = rest.chunks_exact(3);
        for group in &mut groups {
            self.group(group);
        }
        for &b in groups.remainder() {
            self.push(b);
        }
    }

    /// One byte into the waiting group; a full group is written.
    fn push(&mut self, b: u8) {
        let [c0, c1] = self.carry;
        match self.pending {
            0 => (self.carry, self.pending) = ([b, 0], 1),
            1 => (self.carry, self.pending) = ([c0, b], 2),
            _ => {
                self.group(&[c0, c1, b]);
                self.pending = 0;
            }
        }
    }

    /// Writes one group of 1 to 3 bytes as 4 symbols (padded with `=`).
    fn group(&mut self, chunk: &[u8]) {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let sym = |i: u32| ALPHABET.get((i & 63) as usize).copied().unwrap_or(b'=');
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        let out = [
            sym(n >> 18),
            sym(n >> 12),
            if chunk.len() > 1 { sym(n >> 6) } else { b'=' },
            if chunk.len() > 2 { sym(n) } else { b'=' },
        ];
        self.w.raw(&out);
    }

    /// Writes the last group, padded.
    fn finish(mut self) {
        let [c0, c1] = self.carry;
        match self.pending {
            1 => self.group(&[c0]),
            2 => self.group(&[c0, c1]),
            _ => {}
        }
    }
}

/// The whole of `data` in base64 (the tests' one-shot form of [`Base64`]).
#[cfg(test)]
pub(crate) fn base64(w: &mut Writer<'_>, data: &[u8]) {
    let mut b = Base64::new(w);
    b.write(data);
    b.finish();
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut buf = [0u8; 16];
            let mut w = Writer::new(&mut buf);
            base64(&mut w, input.as_bytes());
            assert_eq!(w.written().unwrap(), expected.as_bytes());
        }
    }

    /// Bytes streamed in pieces of any size encode as the whole does.
    #[test]
    fn base64_in_pieces_is_base64_of_the_whole() {
        let data: Vec<u8> = (0..=255u8).chain(0..17).collect();
        let mut whole = [0u8; 512];
        let mut w = Writer::new(&mut whole);
        base64(&mut w, &data);
        let whole = w.written().unwrap().to_vec();
        assert_eq!(whole.len(), base64_len(data.len()));
        for sizes in [&[1usize][..], &[2], &[1, 1, 5], &[4, 2, 1], &[0, 3, 7, 2]] {
            let mut buf = [0u8; 512];
            let mut w = Writer::new(&mut buf);
            let mut b = Base64::new(&mut w);
            let (mut rest, mut i) = (&data[..], 0);
            while !rest.is_empty() {
                let (piece, tail) = rest.split_at(sizes[i % sizes.len()].min(rest.len()));
                b.write(piece);
                rest = tail;
                i += 1;
            }
            b.finish();
            assert_eq!(w.written().unwrap(), &whole[..], "{sizes:?}");
        }
        for n in 0..7 {
            assert_eq!(base64_len(n), [0, 4, 4, 4, 8, 8, 8][n]);
        }
    }

    #[test]
    fn scratch_overflow_is_an_error_not_a_truncation() {
        let mut buf = [0u8; 8];
        let mut r = Reply::new(&mut buf, Principal::Model, 1);
        assert_eq!(r.text(format_args!("{}", "0123456789")), Err(SCRATCH_FULL));
        assert_eq!(r.used(), 0);
        assert!(
            r.json(|o| {
                o.int("a", 1);
            })
            .is_ok()
        );
        assert_eq!(r.used(), 7);
    }

    #[test]
    fn a_report_keeps_its_text_and_its_object_apart() {
        let mut buf = [0u8; 64];
        let mut r = Reply::new(&mut buf, Principal::Model, 1);
        let out = r
            .report(
                |w| w.text("moved \"far\""),
                |o| {
                    o.int("n", 1);
                },
            )
            .unwrap();
        let used = r.used();
        let Value::Report(span) = out.value else {
            panic!("{out:?}")
        };
        let bytes = span.resolve(&buf[..used], 1).unwrap();
        assert_eq!(
            report_parts(bytes),
            (&b"moved \"far\""[..], &br#"{"n":1}"#[..])
        );
        // Damaged or too short: no text, an empty object.
        assert_eq!(report_parts(b"ab"), (&b""[..], &b"{}"[..]));
        assert_eq!(report_parts(b"{}\xff\xff\xff\x7f"), (&b""[..], &b"{}"[..]));
        // A report that does not fit is the scratch error, and takes no room.
        let mut small = [0u8; 8];
        let mut r = Reply::new(&mut small, Principal::Model, 1);
        assert_eq!(
            r.report(|w| w.text("0123456789"), |_| {}),
            Err(SCRATCH_FULL)
        );
        assert_eq!(r.used(), 0);
    }

    #[test]
    fn evidence_renders_as_json_and_text() {
        let e = Evidence::new(Level::ReadBack)
            .commanded(Reading::Int(80))
            .observed(Reading::Int(63));
        let mut buf = [0u8; 128];
        let mut w = Writer::new(&mut buf);
        e.write_json(&mut w);
        assert_eq!(
            w.written().unwrap(),
            br#"{"level":"read_back","commanded":80,"observed":63}"#
        );
        let mut w = Writer::new(&mut buf);
        e.write_sentence(&mut w);
        assert_eq!(w.written().unwrap(), b"read back: 63 (commanded 80)");
        for (level, said) in [
            (Level::Unknown, "state unknown"),
            (Level::NotApplied, "not applied"),
            (Level::Scheduled, "scheduled, not done yet"),
            (Level::Applied, "applied, not verified"),
            (Level::ReadBack, "read back"),
            (Level::Measured, "measured"),
        ] {
            let mut w = Writer::new(&mut buf);
            Evidence::new(level).write_sentence(&mut w);
            assert_eq!(w.written().unwrap(), said.as_bytes());
        }
        let mut w = Writer::new(&mut buf);
        Evidence::new(Level::Applied)
            .commanded(Reading::Int(55))
            .write_sentence(&mut w);
        assert_eq!(
            w.written().unwrap(),
            "applied, not verified (commanded 55)".as_bytes()
        );
    }

    fn rendered(e: &Evidence) -> (String, String) {
        let mut buf = [0u8; 256];
        let mut w = Writer::new(&mut buf);
        e.write_json(&mut w);
        let json = String::from_utf8(w.written().unwrap().to_vec()).unwrap();
        let mut w = Writer::new(&mut buf);
        e.write_sentence(&mut w);
        (
            json,
            String::from_utf8(w.written().unwrap().to_vec()).unwrap(),
        )
    }

    #[test]
    fn tolerance_and_unit_render_as_json_and_readable_text() {
        let e = Evidence::new(Level::ReadBack)
            .commanded(Reading::Int(40))
            .observed(Reading::Int(39))
            .tolerance(2);
        assert_eq!(e.matches(), Some(true));
        assert_eq!(
            rendered(&e),
            (
                r#"{"level":"read_back","commanded":40,"observed":39,"tolerance":2}"#.into(),
                "read back: 39 (commanded 40, within ±2)".into()
            )
        );
        let e = e.observed(Reading::Int(37));
        assert_eq!(e.matches(), Some(false));
        assert_eq!(
            rendered(&e).1,
            "read back: 37 (commanded 40, not within ±2)"
        );
        let e = Evidence::new(Level::Measured)
            .commanded(Reading::Int(500))
            .observed(Reading::Int(498))
            .tolerance(2)
            .unit("steps");
        assert_eq!(
            rendered(&e),
            (
                r#"{"level":"measured","commanded":500,"observed":498,"tolerance":2,"unit":"steps"}"#
                    .into(),
                "measured: 498 steps (commanded 500 steps, within ±2 steps)".into()
            )
        );
        // Without an observed value the tolerance is stated, not judged.
        let e = Evidence::new(Level::Applied)
            .commanded(Reading::Int(40))
            .tolerance(2);
        assert_eq!(e.matches(), None);
        assert_eq!(
            rendered(&e).1,
            "applied, not verified (commanded 40, tolerance ±2)"
        );
        // A unit alone, and no parentheses without values.
        assert_eq!(
            rendered(&Evidence::new(Level::Applied).unit("mm")),
            (
                r#"{"level":"applied","unit":"mm"}"#.into(),
                "applied, not verified".into()
            )
        );
    }

    #[test]
    fn a_string_reading_is_a_json_string_and_a_bare_word() {
        let e = Evidence::new(Level::ReadBack)
            .commanded(Reading::Str("dark"))
            .observed(Reading::Str("dark"));
        assert_eq!(e.matches(), Some(true));
        assert_eq!(
            rendered(&e),
            (
                r#"{"level":"read_back","commanded":"dark","observed":"dark"}"#.into(),
                "read back: dark".into()
            )
        );
        // Escaped in JSON like any string; compared exactly; never equal to another kind.
        let e = Evidence::new(Level::Applied).commanded(Reading::Str("say \"hi\""));
        assert_eq!(
            rendered(&e),
            (
                r#"{"level":"applied","commanded":"say \"hi\""}"#.into(),
                "applied, not verified (commanded say \"hi\")".into()
            )
        );
        assert_eq!(e.observed(Reading::Str("say hi")).matches(), Some(false));
        assert_eq!(e.observed(Reading::Int(0)).matches(), None);
    }

    #[test]
    fn matching_is_exact_without_a_tolerance() {
        let e = Evidence::new(Level::ReadBack).commanded(Reading::Int(40));
        assert_eq!(e.matches(), None);
        assert_eq!(e.observed(Reading::Int(40)).matches(), Some(true));
        assert_eq!(e.observed(Reading::Int(39)).matches(), Some(false));
        assert_eq!(e.observed(Reading::Bool(true)).matches(), None);
        let b = Evidence::new(Level::Measured).commanded(Reading::Bool(true));
        assert_eq!(b.observed(Reading::Bool(true)).matches(), Some(true));
        assert_eq!(
            b.observed(Reading::Bool(false)).tolerance(5).matches(),
            Some(false)
        );
        let far = Evidence::new(Level::Measured)
            .commanded(Reading::Int(i64::MIN))
            .observed(Reading::Int(i64::MAX))
            .tolerance(u32::MAX);
        assert_eq!(far.matches(), Some(false));
    }
}
