//! MCP Tasks: the bounded task table, the `tasks/*` methods, and [`Server::poll`], which drives
//! long-running tools and emits what the engine owes the client.
//!
//! Three forms share one table:
//!
//! | form | how it starts | how the client follows it |
//! |---|---|---|
//! | plain | a `tools/call` without task support (xiaozhi backends) | the result carries `task_id`; the status tool ([`status_tool`]) |
//! | 2025-11-25 | `tools/call` with `params.task` | `CreateTaskResult {task}`, `tasks/get`, `tasks/result` (parked until the end), `tasks/list`, `tasks/cancel`, `notifications/tasks/status` |
//! | 2026-07-28 extension | `tools/call` from a client whose `_meta` declares `io.modelcontextprotocol/tasks` | flat `CreateTaskResult` (`resultType: "task"`), `tasks/get` carrying the result, `tasks/update`, `tasks/cancel` |
//!
//! What a model hears in the plain form, where a client may hand it only `content[0].text`: the
//! immediate answer says what started, the task id, the evidence so far and how to learn the
//! outcome (`self.motor.move_to started as task task-… — scheduled, not done yet (commanded 600
//! steps); for the outcome, call self.tasks.get_status with this task_id`), and the status tool's
//! first text says the status, the outcome and its evidence (`self.motor.move_to completed: 600 —
//! measured: 600 steps (within ±2 steps)`; `… working (200 of 600) —
//! scheduled, not done yet (…)`; `… failed: Motor stalled — measured: 120 steps (commanded 600
//! steps, not within ±2 steps); safe-stop issued`), its `structuredContent` the same as members.
//! A task's `statusMessage` is its result's first text once it ended.
//!
//! A task's slot is reserved *before* the handler runs, so an action is never started that cannot
//! be tracked; a full table of running tasks is a clear error, and running tasks are never
//! evicted. Finished tasks are kept until their `ttl` (from creation) runs out.
//!
//! Task ids are `task-` and 16 hex digits of a keyed hash (SipHash-1-3) of a counter, so that they
//! cannot be enumerated; seed the key from a hardware random source with
//! [`Server::set_entropy`] (until then the ids are predictable).
//!
//! Time: the engine has no clock. [`Server::poll`] takes the caller's monotonic milliseconds, and
//! requests handled afterwards use that time. Timestamps (`createdAt`, `lastUpdatedAt`) are that
//! time plus the offset set with [`Server::set_unix_time`]; until then they count from
//! 1970-01-01T00:00:00Z (uptime), which is valid ISO 8601 but not wall-clock time.

use core::fmt::Write as _;
use core::hash::Hasher as _;

use super::era::Era;
use super::params::members;
use super::respond::{Respond, finish, write_object};
use super::{Capacities, Peer, Receipt, Server};
use crate::registry::Tool;
use crate::result::{
    Evidence, Level, Output, TaskInfo, TaskLookup, TaskPoll, TaskSnapshot, TaskStatus, ToolError,
    ToolResult, Value, render_result, render_result_for, write_first_text,
};
#[cfg(feature = "strings")]
use crate::schema::Param;
use crate::wire::json::{Json, JsonStr};
use crate::wire::protocol;
use crate::wire::request::{Id, KeptRaw, MAX_ID_LEN};
use crate::wire::response::{ErrorCode, NO_DATA, write_error, write_result};
#[cfg(feature = "strings")]
use crate::wire::writer::ObjectWriter;
use crate::wire::writer::Writer;
#[cfg(feature = "strings")]
use crate::{Args, Reply};

/// [`Entry::owed_until`] of a task whose call's answer is not held back.
const NOT_OWED: u64 = u64::MAX;

/// Longest `progressToken` (raw JSON bytes) kept for progress notifications.
pub const MAX_PROGRESS_TOKEN_LEN: usize = 64;

/// What one [`Server::poll_with`] wrote at the start of the output buffer, and for whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Polled {
    /// The message's length (0: nothing is owed now).
    pub len: usize,
    /// The client it is for: the one that made the call (a held call's answer or outcome, a
    /// task's status, progress or parked `tasks/result`), or whose listen stream it tags. `None`:
    /// every subscriber (a 2025 `resources/subscribe` update). A transport that serves several
    /// clients with one engine sends it to that client only.
    pub to: Option<Peer>,
    /// The tool whose handler ran in this poll (a call a person confirmed on the device): tell
    /// the other engines on the same hardware ([`Server::touched`]).
    pub ran: Option<&'static str>,
    /// The remembered answer of that call: tell the engine what became of it
    /// ([`Server::delivered`]).
    pub receipt: Option<Receipt>,
    /// The message is an outcome that came after the call's own answer (a press on a call
    /// answered "waiting", a refusal or timeout after it, a task that ended after its call was
    /// answered), with the sentence a person hears: what a transport whose client only speaks
    /// or hands its model what it is told (xiaozhi) sends on as well
    /// (`mcp_core::transport::xiaozhi::heard`).
    pub heard: Option<Heard>,
}

impl Polled {
    /// Nothing written.
    pub const NONE: Polled = Polled {
        len: 0,
        to: None,
        ran: None,
        receipt: None,
        heard: None,
    };
}

/// An outcome that came after a call was answered, in a message [`Server::poll_with`] wrote: what
/// it is, and where its sentence is.
///
/// The sentence says the tool, what came of it, the value and the evidence, in words a person
/// can hear and a model can repeat (the first-text rule): `self.relay.set, confirmed: true —
/// measured: true`, `self.relay.set: Not confirmed: no answer in time; nothing
/// was done — not applied (commanded true)`, `self.motor.move_to completed: 150 — measured: 150
/// steps (commanded 150 steps, within ±2 steps)`. It is the `text` member of the message's
/// `data` (a `notifications/message`), so it is made of the engine's words and the device's
/// readings only: the call's free-form strings never appear in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Heard {
    /// What came of the call.
    pub outcome: Later,
    /// The tool.
    pub tool: &'static str,
    /// Where the sentence starts in the message (a byte offset into the output buffer).
    pub at: usize,
    /// Its length in bytes, as written: the content of a JSON string (escaped as JSON escapes
    /// it, so it can be copied into another JSON string as it is).
    pub len: usize,
}

impl Heard {
    /// The sentence in `message` (the bytes the poll wrote, from their start), as the JSON
    /// string it is there (escaped). Given other bytes, a view that reads as whatever they hold.
    pub fn sentence<'m>(&self, message: &'m [u8]) -> JsonStr<'m> {
        JsonStr::from_checked(
            message
                .get(self.at..self.at.saturating_add(self.len))
                .unwrap_or_default(),
        )
    }
}

/// What came of a call after its answer ([`Heard::outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Later {
    /// A person said yes on the device and the call ran: the sentence has its result (which may
    /// be a failure).
    Confirmed,
    /// The call did not run: the person said no, or did not answer in time.
    Refused,
    /// A long-running action's task ended (completed, failed, cancelled or timed out: the
    /// sentence says which, with the evidence).
    TaskEnded(TaskStatus),
}

/// How a task was started, which decides how it is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskForm {
    /// A plain call answered with a task id (clients without task support).
    Plain,
    /// 2025-11-25 `params.task`.
    Legacy,
    /// 2026-07-28 `io.modelcontextprotocol/tasks`.
    Extension,
}

/// A task of the table. What a status tool reads (the tool's name, status, progress, evidence,
/// outcome, error and safe-stop) is kept as the public [`TaskSnapshot`] itself, so that
/// [`TaskLookup::snapshot`] lends it instead of copying some 250 bytes under the handler; the
/// entry derefs to it, so those fields read as the entry's own.
#[derive(Debug)]
pub struct Entry {
    id: u64,
    tool: u16,
    view: TaskSnapshot,
    form: TaskForm,
    data: i64,
    created_ms: u64,
    updated_ms: u64,
    ttl_ms: u64,
    deadline_ms: u64,
    token: KeptRaw<MAX_PROGRESS_TOKEN_LEN>,
    /// The client that started the task: its status and progress notifications go there.
    owner: Peer,
    waiter: KeptRaw<MAX_ID_LEN>,
    /// The client whose request waits (`waiter`): a `tasks/result`, or the plain call itself.
    waiter_peer: Peer,
    /// The plain call's own answer is held back (its client can follow no task): written when
    /// the task ends, or by this time with what was started.
    owed_until: u64,
    /// The plain call's client speaks 2024-11-05: a failure also carries its reason as `error`.
    error_member: bool,
    send_progress: bool,
    /// How its owner hears of its end (one byte: an entry's size is the task table's RAM).
    after: After,
}

/// How a task's owner hears of its end, after the call that started it was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Told by a notification (the status, or the outcome's sentence for a plain call); none
    /// is due now.
    Notify,
    /// That notification is due: the next poll writes it.
    Due,
    /// The owner receives only answers ([`Config::answers_only`](super::Config::answers_only)):
    /// nothing can be sent to it.
    AnswersOnly,
    /// It ended after its plain call was answered, and its owner, which receives only answers,
    /// has not heard of it yet: the first text of that client's next call's answer tells it.
    Owed,
    /// Its owner's conversation ended: nothing of it goes to anyone any more.
    Orphan,
}

impl core::ops::Deref for Entry {
    type Target = TaskSnapshot;
    fn deref(&self) -> &TaskSnapshot {
        &self.view
    }
}

impl core::ops::DerefMut for Entry {
    fn deref_mut(&mut self) -> &mut TaskSnapshot {
        &mut self.view
    }
}

impl Entry {
    /// What [`Tasks::slot`] fills in.
    const BLANK: Entry = Entry {
        id: 0,
        tool: 0,
        view: TaskSnapshot {
            tool: "",
            status: TaskStatus::Working,
            progress: None,
            started: Evidence::new(Level::Scheduled),
            outcome: None,
            error: None,
            stop: None,
        },
        form: TaskForm::Plain,
        data: 0,
        created_ms: 0,
        updated_ms: 0,
        ttl_ms: 0,
        deadline_ms: 0,
        token: KeptRaw::NONE,
        owner: Peer::ONLY,
        waiter: KeptRaw::NONE,
        waiter_peer: Peer::ONLY,
        owed_until: NOT_OWED,
        error_member: false,
        send_progress: false,
        after: After::Notify,
    };

    fn info(&self, now_ms: u64) -> TaskInfo {
        TaskInfo {
            data: self.data,
            started_ms: self.created_ms,
            now_ms,
        }
    }

    fn finish(
        &mut self,
        status: TaskStatus,
        outcome: ToolResult,
        stop: Option<Result<(), ToolError>>,
        now: u64,
    ) {
        self.status = status;
        self.outcome = Some(outcome);
        self.stop = stop;
        self.updated_ms = now;
        // A 2025-11-25 client hears of it by a status notification; a plain call's client,
        // whose answer was given already (past the hold budget, or at once), by a log message
        // with the outcome's sentence. (One still waiting for its held answer hears it there.)
        let plain_answered = self.form == TaskForm::Plain && self.waiter.is_none();
        self.after = match (self.after, self.form) {
            (After::Orphan, _) => After::Orphan,
            (_, TaskForm::Legacy) => After::Due,
            (After::Notify | After::Due, TaskForm::Plain) if plain_answered => After::Due,
            // A client that receives only answers cannot be sent that message: its next call's
            // answer tells it instead.
            (After::AnswersOnly, TaskForm::Plain) if plain_answered => After::Owed,
            (after, _) => after,
        };
        self.send_progress = false;
    }

    /// [`finish`](Self::finish) as failed with `error`. A failure that brings no evidence of its
    /// own (a timeout, a read that failed) states what the task's start did: what was commanded
    /// and how far it got (`… — scheduled, not done yet (commanded 600 steps)`).
    fn fail(&mut self, error: ToolError, stop: Option<Result<(), ToolError>>, now: u64) {
        let error = match error.evidence {
            Some(_) => error,
            None => error.with_evidence(self.view.started),
        };
        self.finish(TaskStatus::Failed, Err(error), stop, now);
    }

    /// The status on the wire: the 2026-07-28 extension reports a tool failure as `completed`
    /// (the result carries `isError: true`); `failed` is for JSON-RPC errors, which tasks here
    /// never end with.
    fn wire_status(&self) -> &'static str {
        match (self.form, self.status) {
            (TaskForm::Extension, TaskStatus::Failed) if self.error.is_none() => "completed",
            (_, s) => s.as_str(),
        }
    }
}

/// Writes a task id: `task-` and 16 hex digits.
fn write_id(w: &mut Writer<'_>, id: u64) {
    let _ = write!(w, "task-{id:016x}");
}

fn parse_id(id: &str) -> Option<u64> {
    let hex = id.strip_prefix("task-")?;
    if hex.len() != 16 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The bounded task table over the storage `S`: `heapless::Vec<Entry, T>` in a server (its
/// [`Capacities::Tasks`](super::Capacities)), seen as [`TasksView`] — the table without its
/// capacity in the type — by every method.
#[derive(Debug)]
pub struct Tasks<S: ?Sized> {
    counter: u64,
    entries: S,
}

/// The task table of any capacity.
pub type TasksView = Tasks<heapless::VecView<Entry>>;

impl<const T: usize> Tasks<heapless::Vec<Entry, T>> {
    pub(crate) const fn new() -> Self {
        Tasks {
            entries: heapless::Vec::new(),
            counter: 0,
        }
    }
}

impl<const T: usize> core::ops::Deref for Tasks<heapless::Vec<Entry, T>> {
    type Target = TasksView;
    fn deref(&self) -> &TasksView {
        self
    }
}

impl<const T: usize> core::ops::DerefMut for Tasks<heapless::Vec<Entry, T>> {
    fn deref_mut(&mut self) -> &mut TasksView {
        self
    }
}

// (For both forms: the server lends its own table to a handler's reply as a `dyn TaskLookup`,
// which needs the sized one.)
impl<S: ?Sized + core::ops::Deref<Target = [Entry]>> TaskLookup for Tasks<S> {
    fn snapshot(&self, id: &str) -> Option<&TaskSnapshot> {
        let id = parse_id(id)?;
        self.entries.iter().find(|e| e.id == id).map(|e| &e.view)
    }
}

impl TasksView {
    /// A fresh task id, unguessable under the server's `key` ([`Server::set_entropy`]).
    fn next_id(&mut self, key: (u64, u64)) -> u64 {
        loop {
            self.counter = self.counter.wrapping_add(1);
            let mut h = siphasher::sip::SipHasher13::new_with_keys(key.0, key.1);
            h.write_u64(self.counter);
            let id = h.finish();
            if !self.entries.iter().any(|e| e.id == id) {
                return id;
            }
        }
    }

    fn position(&self, id: Option<Json<'_>>) -> Option<usize> {
        let id = id?.as_str()?;
        let mut buf = [0u8; 24];
        let n = parse_id(id.decode_into(&mut buf)?)?;
        self.entries.iter().position(|e| e.id == n)
    }

    /// `true` when a new task fits: a free slot, or a finished task nobody waits for to evict.
    pub(crate) fn has_room(&self) -> bool {
        !self.entries.is_full()
            || self
                .entries
                .iter()
                .any(|e| e.status.is_terminal() && e.waiter.is_none())
    }

    /// `true` while some task is still working.
    pub(crate) fn any_working(&self) -> bool {
        self.entries.iter().any(|e| !e.status.is_terminal())
    }

    /// `true` when the end of a task is owed to `peer` (a client that receives only answers).
    pub(crate) fn owes(&self, peer: Peer) -> bool {
        self.entries
            .iter()
            .any(|e| e.after == After::Owed && e.owner == peer)
    }

    /// Writes, in string mode, `before`, the sentence of the task's end and `after`, for every
    /// task whose end is owed to `peer`.
    pub(crate) fn write_owed(&self, peer: Peer, w: &mut Writer<'_>, before: &str, after: &str) {
        for e in self
            .entries
            .iter()
            .filter(|e| e.after == After::Owed && e.owner == peer)
        {
            w.text(before);
            write_task_sentence(w, e);
            w.text(after);
        }
    }

    /// `peer` heard of every task's end it was owed.
    pub(crate) fn clear_owed(&mut self, peer: Peer) {
        for e in self.entries.iter_mut().filter(|e| e.owner == peer) {
            if e.after == After::Owed {
                e.after = After::AnswersOnly;
            }
        }
    }

    /// The conversation of `peer` ended: nothing of its tasks goes to it, or to anyone, any more
    /// — no status or progress notification, no owed end, no parked answer. The tasks run on
    /// (an action is stopped only by its own hooks), their state readable through the status
    /// tool by whoever has their id. Returns whether anything was dropped.
    pub(crate) fn forget_owner(&mut self, peer: Peer) -> bool {
        let mut dropped = false;
        for e in self.entries.iter_mut() {
            if e.owner == peer && e.after != After::Orphan {
                dropped |= e.after == After::Due
                    || e.send_progress
                    || e.after == After::Owed
                    || !e.status.is_terminal();
                e.after = After::Orphan;
                e.send_progress = false;
                e.token.clear();
            }
            if e.waiter_peer == peer && e.waiter.is_some() {
                dropped = true;
                e.waiter.clear();
                e.owed_until = NOT_OWED;
            }
        }
        dropped
    }

    /// The slot of a new task, blank: the next free one, after evicting the oldest finished task
    /// nobody waits for when the table is full (running tasks are never evicted). The caller
    /// writes the entry where it stays (an entry is some 500 bytes: built on the stack and moved
    /// in, it would cost that much stack under every call that starts a task).
    fn slot(&mut self) -> Option<&mut Entry> {
        if self.entries.is_full() {
            let victim = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.status.is_terminal() && e.waiter.is_none())
                .min_by_key(|(_, e)| e.created_ms)
                .map(|(i, _)| i)?;
            self.entries.remove(victim);
        }
        self.entries.push(Entry::BLANK).ok()?;
        self.entries.last_mut()
    }
}

/// How a task is created: the parts of the `tools/call` request that matter.
pub(crate) struct NewTask<'i> {
    pub(crate) tool: usize,
    pub(crate) tool_name: &'static str,
    pub(crate) form: TaskForm,
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) token: Option<Json<'i>>,
    pub(crate) timeout_ms: u32,
    /// The client that started it.
    pub(crate) peer: Peer,
    /// That client speaks 2024-11-05 (a failure carries `error` too).
    pub(crate) error_member: bool,
    /// That client receives only answers.
    pub(crate) answers_only: bool,
}

/// Writes an ISO 8601 UTC timestamp (`1970-01-01T00:00:00.000Z`) for `ms` since the Unix epoch.
pub(crate) fn write_timestamp(w: &mut Writer<'_>, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let _ = write!(
        w,
        "\"{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z\""
    );
}

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// Tells the engine the wall-clock time: `unix_ms` (milliseconds since the Unix epoch) is
    /// now, as of the last [`poll`](Self::poll). Task timestamps use it from then on.
    pub fn set_unix_time(&mut self, unix_ms: i64) {
        self.unix_offset_ms =
            unix_ms.saturating_sub(i64::try_from(self.now_ms).unwrap_or(i64::MAX));
    }

    /// Seeds the key that makes task ids unguessable; take the 16 bytes from a hardware random
    /// number generator at start-up.
    pub fn set_entropy(&mut self, seed: [u8; 16]) {
        let (a, b) = seed.split_at(8);
        let word = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
        self.entropy = (word(a), word(b));
    }

    fn wall(&self, ms: u64) -> i64 {
        i64::try_from(ms)
            .unwrap_or(i64::MAX)
            .saturating_add(self.unix_offset_ms)
    }

    /// Advances time and long-running tools, and writes at most one message the engine owes a
    /// client into `out`: a deferred `tasks/result` response, a `notifications/tasks/status`, a
    /// `notifications/progress`, (feature `confirm`) the answer or outcome of a call a person
    /// confirmed, or (feature `resources`) a `notifications/resources/updated` for a published
    /// resource. Returns its length, 0 when nothing is owed.
    ///
    /// Call it from the firmware's main loop with a monotonic millisecond clock, repeatedly until
    /// it returns 0, and send each message. Task hooks run at most once per distinct `now_ms`.
    /// A transport that serves several clients with one engine uses
    /// [`poll_with`](Self::poll_with), which says whom each message is for.
    pub fn poll(&mut self, now_ms: u64, ctx: &mut C, out: &mut [u8]) -> usize {
        self.poll_with(now_ms, ctx, out).len
    }

    /// [`poll`](Self::poll), saying whom the message is for ([`Polled::to`]) and which tool ran
    /// in it ([`Polled::ran`]: a call a person confirmed on the device), so that a host can tell
    /// the other engines on the same hardware ([`touched`](Self::touched)).
    pub fn poll_with(&mut self, now_ms: u64, ctx: &mut C, out: &mut [u8]) -> Polled {
        #[allow(
            unused_mut,
            reason = "reassigned with the features confirm and resources"
        )]
        let mut polled = self.poll_step(now_ms, ctx, out);
        #[cfg(feature = "confirm")]
        if super::confirm::Confirmations::<K>::ON && polled.len == 0 && self.confirm.approved() {
            polled = self.run_approved(ctx, out, &mut |_: &[u8]| {});
        }
        #[cfg(feature = "resources")]
        if polled.len == 0 {
            polled = self.poll_resources(out);
        }
        self.owed_first(polled, out)
    }

    /// An answer a poll wrote for a client that receives only answers (a held call's) begins
    /// with what that client is owed.
    fn owed_first(&mut self, mut polled: Polled, out: &mut [u8]) -> Polled {
        if let Some(to) = polled.to.filter(|_| polled.len > 0) {
            polled.len = self.tell_owed(to, out, polled.len);
        }
        polled
    }

    /// [`poll_with`](Self::poll_with) for firmware whose tools are async: a call a person
    /// confirmed on the device runs through `run`, as [`handle_async`](Self::handle_async)
    /// runs calls (an async tool that asks first needs this path; a blocking one runs as usual).
    pub fn poll_async<'a, F>(
        &'a mut self,
        now_ms: u64,
        ctx: &'a mut C,
        out: &'a mut [u8],
        run: F,
    ) -> impl core::future::Future<Output = Polled>
    where
        F: AsyncFnMut(&mut C, crate::Call<'_, '_>) -> ToolResult,
    {
        #[allow(
            unused_mut,
            reason = "reassigned with the features confirm and resources"
        )]
        let mut polled = self.poll_step(now_ms, ctx, out);
        #[allow(unused_mut, reason = "used with the feature confirm")]
        let mut run = run;
        async move {
            #[cfg(feature = "confirm")]
            if super::confirm::Confirmations::<K>::ON && polled.len == 0 && self.confirm.approved()
            {
                polled = self
                    .run_approved_async(ctx, out, &mut |_: &[u8]| {}, &mut run)
                    .await;
            }
            let _ = &mut run;
            #[cfg(feature = "resources")]
            if polled.len == 0 {
                polled = self.poll_resources(out);
            }
            self.owed_first(polled, out)
        }
    }

    /// What the engine owes before anything else: a task's news, a held call's answer or
    /// refusal. (A call a person approved is run next, by the caller; resource updates after.)
    fn poll_step(&mut self, now_ms: u64, ctx: &mut C, out: &mut [u8]) -> Polled {
        #[allow(unused_mut, reason = "reassigned with the feature confirm")]
        let mut polled = self.poll_tasks(now_ms, ctx, out);
        // (`HOLD > HOLD_RECORD`: a server that holds nothing has no confirmation code to link.)
        #[cfg(feature = "confirm")]
        if super::confirm::Confirmations::<K>::ON
            && polled.len == 0
            && out.len() >= super::MIN_OUT_LEN
        {
            polled = self.poll_confirmation(out);
        }
        polled
    }

    /// A published resource's update, for its subscribers.
    #[cfg(feature = "resources")]
    fn poll_resources(&mut self, out: &mut [u8]) -> Polled {
        if out.len() < super::MIN_OUT_LEN {
            return Polled::NONE;
        }
        let (len, to) = self.live.emit(out);
        Polled {
            len,
            to,
            ..Polled::NONE
        }
    }

    fn poll_tasks(&mut self, now_ms: u64, ctx: &mut C, out: &mut [u8]) -> Polled {
        self.now_ms = self.now_ms.max(now_ms);
        if K::TASKS == 0 {
            // No task table: nothing to drive or send (and no task code linked).
            return Polled::NONE;
        }
        if self.last_advance != self.now_ms || self.now_ms == u64::MAX {
            self.last_advance = self.now_ms;
            self.advance(ctx);
        }
        if out.len() < super::MIN_OUT_LEN {
            // Nothing is consumed: what is owed stays owed until a buffer that fits comes.
            return Polled::NONE;
        }
        let (len, to, heard) = self.emit(out);
        Polled {
            len,
            to: Some(to),
            heard,
            ..Polled::NONE
        }
    }

    fn advance(&mut self, ctx: &mut C) {
        let now = self.now_ms;
        for e in self.tasks.entries.iter_mut() {
            if e.status.is_terminal() {
                continue;
            }
            let Some(hooks) = self
                .registry
                .get(usize::from(e.tool))
                .and_then(Tool::task_hooks)
                .copied()
            else {
                e.fail(
                    ToolError::new("Tool bug: the task's tool has no hooks"),
                    None,
                    now,
                );
                continue;
            };
            let info = e.info(now);
            if now >= e.deadline_ms {
                let stop = hooks.stop.map(|stop| stop(ctx, &info));
                e.fail(
                    ToolError::new("Timed out before the action finished"),
                    stop,
                    now,
                );
                continue;
            }
            match (hooks.poll)(ctx, &info) {
                TaskPoll::Working(p) => {
                    if p.is_some() && p != e.progress {
                        e.progress = p;
                        e.updated_ms = now;
                        e.send_progress = e.token.is_some();
                    }
                }
                TaskPoll::Done(Ok(output)) if storable(&output.value) => {
                    e.finish(TaskStatus::Completed, Ok(output), None, now);
                }
                TaskPoll::Done(Ok(_)) => {
                    let bug = ToolError::new(
                        "Tool bug: a task result cannot use scratch text or start another task",
                    );
                    e.fail(bug, None, now);
                }
                TaskPoll::Done(Err(err)) => {
                    // A failure after the start: make the actuator safe.
                    let stop = hooks.stop.map(|stop| stop(ctx, &info));
                    e.fail(err, stop, now);
                }
                TaskPoll::Error(message) => {
                    let stop = hooks.stop.map(|stop| stop(ctx, &info));
                    e.fail(ToolError::new(message), stop, now);
                    e.error = Some(message);
                }
            }
        }
        self.tasks.entries.retain(|e| {
            !(e.status.is_terminal()
                && e.waiter.is_none()
                && now >= e.created_ms.saturating_add(e.ttl_ms))
        });
    }

    fn emit(&mut self, out: &mut [u8]) -> (usize, Peer, Option<Heard>) {
        let now = self.now_ms;
        // A request that waits for a task: a parked `tasks/result`, or a plain call whose answer
        // is held back — answered when the task ends, a held call also when its budget ran out.
        if let Some(i) = self.tasks.entries.iter().position(|e| {
            e.waiter.is_some()
                && (e.status.is_terminal() || (e.owed_until != NOT_OWED && now >= e.owed_until))
        }) {
            let Some(e) = self.tasks.entries.get(i) else {
                return (0, Peer::ONLY, None);
            };
            let to = e.waiter_peer;
            let id = Id::from_checked_raw(e.waiter.get().unwrap_or_default());
            let n = match e.owed_until != NOT_OWED {
                true => {
                    let info = (self.config.name, self.config.version);
                    finish(out, Some(id), "", |w| {
                        self.write_start(e, id, Era::Legacy, info, w);
                    })
                }
                false => self.write_payload(e, id, out),
            };
            // The request is answered only once the answer is written.
            if let (true, Some(e)) = (n > 0, self.tasks.entries.get_mut(i)) {
                e.waiter.clear();
                e.owed_until = NOT_OWED;
            }
            return (n, to, None);
        }
        if let Some(i) = self
            .tasks
            .entries
            .iter()
            .position(|e| e.after == After::Due)
        {
            let Some(e) = self.tasks.entries.get(i) else {
                return (0, Peer::ONLY, None);
            };
            let to = e.owner;
            let mut w = Writer::new(out);
            let heard = match e.form {
                TaskForm::Plain => Some(write_ended(&mut w, e)),
                _ => {
                    w.raw(protocol::TASK_STATUS_NOTIFICATION);
                    self.write_task(&mut w, e);
                    w.raw(b"}}");
                    None
                }
            };
            let n = if w.fits() { w.needed() } else { 0 };
            if let (true, Some(e)) = (n > 0, self.tasks.entries.get_mut(i)) {
                e.after = After::Notify;
            }
            return (n, to, heard.filter(|_| n > 0));
        }
        if let Some(e) = self.tasks.entries.iter_mut().find(|e| e.send_progress) {
            let (Some(token), Some(p)) = (e.token.get(), e.progress) else {
                e.send_progress = false;
                return (0, Peer::ONLY, None);
            };
            let mut w = Writer::new(out);
            w.raw(protocol::PROGRESS_NOTIFICATION);
            w.raw(token);
            w.raw(protocol::PROGRESS);
            w.progress_value(p.progress);
            if let Some(total) = p.total {
                w.raw(protocol::TOTAL);
                w.progress_value(total);
            }
            if e.form == TaskForm::Legacy {
                w.raw(protocol::RELATED_TASK_OPEN);
                write_id(&mut w, e.id);
                w.raw(br#""}}"#);
            }
            w.raw(b"}}");
            let n = if w.fits() { w.needed() } else { 0 };
            e.send_progress = n == 0;
            return (n, e.owner, None);
        }
        (0, Peer::ONLY, None)
    }

    /// Writes the members of a `Task` object, in the shape of its form.
    fn write_task(&self, w: &mut Writer<'_>, e: &Entry) {
        w.raw(protocol::TASK_ID_OPEN);
        write_id(w, e.id);
        w.raw(protocol::TASK_STATUS);
        w.string(e.wire_status());
        w.raw(protocol::STATUS_MESSAGE);
        w.begin_string();
        write_status_message(w, e);
        w.end_string();
        w.raw(protocol::CREATED_AT);
        write_timestamp(w, self.wall(e.created_ms));
        w.raw(protocol::LAST_UPDATED_AT);
        write_timestamp(w, self.wall(e.updated_ms));
        w.raw(if e.form == TaskForm::Extension {
            protocol::TTL_MS
        } else {
            protocol::TTL
        });
        w.uint(e.ttl_ms);
        w.raw(if e.form == TaskForm::Extension {
            protocol::POLL_INTERVAL_MS
        } else {
            protocol::POLL_INTERVAL
        });
        w.uint(u64::from(self.config.task_poll_interval_ms));
    }

    /// The final result of a terminal task, as the original call would have returned it.
    fn outcome(e: &Entry) -> ToolResult {
        e.outcome
            .unwrap_or(Err(ToolError::new("The task has no result")))
    }

    /// Writes the 2025-11-25 `tasks/result` response for a terminal task.
    fn write_payload(&self, e: &Entry, id: Id<'_>, out: &mut [u8]) -> usize {
        if let Some(message) = e.error {
            let note = stop_note(e.stop);
            return finish(out, Some(id), "", |w| {
                write_error(
                    w,
                    Some(id),
                    ErrorCode::InternalError,
                    |w| write_with_note(w, message, note),
                    NO_DATA,
                );
            });
        }
        let outcome = Self::outcome(e);
        let note = stop_note(e.stop);
        finish(out, Some(id), "", |w| {
            write_result(w, id, |w| {
                w.raw(b"{");
                render_result(w, &outcome, &[], 0, note);
                // Beside the evidence in the same `_meta`, when there is evidence.
                w.meta_member(protocol::RELATED_TASK_OPEN);
                write_id(w, e.id);
                w.raw(br#""}"#);
                w.close_meta();
                w.raw(b"}");
            });
        })
    }

    /// Creates a task for a started long-running action, writes the response
    /// ([`write_start`](Self::write_start)) and returns the task's id. (Not inlined: the task
    /// entry it builds stays out of the frame every call's handler runs under; and the entry is
    /// built in [`create_task`](Self::create_task), whose frame is gone before the response is
    /// written.)
    #[inline(never)]
    pub(super) fn start_task(
        &mut self,
        new: NewTask<'_>,
        result: ToolResult,
        id: Id<'_>,
        era: Era<'_>,
        info: (&'static str, &'static str),
        w: &mut Writer<'_>,
    ) -> Option<u64> {
        let task_id = self.create_task(new, result);
        let Some(e) = self.tasks.entries.iter().find(|e| e.id == task_id) else {
            write_error(
                w,
                Some(id),
                ErrorCode::InternalError,
                |w| w.text("The task table is full"),
                NO_DATA,
            );
            return None;
        };
        self.write_start(e, id, era, info, w);
        Some(task_id)
    }

    /// Starts a task for a plain call whose answer is held back (its client can follow no
    /// task): the call waits as the task's `waiter` until the task ends or `budget_ms` passes.
    /// Returns the task's id.
    pub(super) fn start_held(
        &mut self,
        new: NewTask<'_>,
        result: ToolResult,
        id: Id<'_>,
        budget_ms: u32,
    ) -> u64 {
        let (peer, until) = (new.peer, self.now_ms.saturating_add(u64::from(budget_ms)));
        let task = self.create_task(new, result);
        if let Some(e) = self.tasks.entries.iter_mut().find(|e| e.id == task) {
            e.waiter_peer = peer;
            e.owed_until = if e.waiter.set(id.raw()) {
                until
            } else {
                NOT_OWED
            };
        }
        task
    }

    /// Fills a slot of the table with the new task (room was checked before the handler ran);
    /// returns its id.
    #[inline(never)]
    fn create_task(&mut self, new: NewTask<'_>, result: ToolResult) -> u64 {
        let now = self.now_ms;
        let ttl = new
            .ttl_ms
            .unwrap_or(u64::from(self.config.task_ttl_ms))
            .min(u64::from(self.config.task_ttl_max_ms));
        let started = match &result {
            Ok(Output {
                evidence: Some(e), ..
            }) => *e,
            _ => Evidence::new(Level::Scheduled),
        };
        let (status, data, outcome) = match result {
            Ok(Output {
                value: Value::Task(data),
                ..
            }) => (TaskStatus::Working, data, None),
            Ok(o) if storable(&o.value) => (TaskStatus::Completed, 0, Some(Ok(o))),
            Ok(_) => (
                TaskStatus::Failed,
                0,
                Some(Err(ToolError::new(
                    "Tool bug: a task result cannot use scratch text",
                ))),
            ),
            Err(e) => (TaskStatus::Failed, 0, Some(Err(e))),
        };
        let task_id = self.tasks.next_id(self.entropy);
        let token = new.token.filter(|_| new.form == TaskForm::Legacy);
        // Room was checked before the handler ran.
        if let Some(slot) = self.tasks.slot() {
            *slot = Entry {
                id: task_id,
                tool: u16::try_from(new.tool).unwrap_or(u16::MAX),
                view: TaskSnapshot {
                    tool: new.tool_name,
                    status,
                    progress: None,
                    started,
                    outcome,
                    error: None,
                    stop: None,
                },
                form: new.form,
                data,
                created_ms: now,
                updated_ms: now,
                ttl_ms: ttl,
                deadline_ms: now.saturating_add(u64::from(new.timeout_ms)),
                token: KeptRaw::NONE,
                owner: new.peer,
                waiter: KeptRaw::NONE,
                waiter_peer: new.peer,
                owed_until: NOT_OWED,
                error_member: new.error_member,
                send_progress: false,
                after: match new.answers_only {
                    true => After::AnswersOnly,
                    false => After::Notify,
                },
            };
            if let Some(token) = token {
                slot.token.set(token.raw());
            }
        }
        task_id
    }

    /// Writes the answer to the call that started task `e`: a `CreateTaskResult` in the form the
    /// client asked for, or, for a plain call, a tool result with the task id and the start
    /// evidence. Also the answer to a retransmission of that call.
    fn write_start(
        &self,
        e: &Entry,
        id: Id<'_>,
        era: Era<'_>,
        info: (&'static str, &'static str),
        w: &mut Writer<'_>,
    ) {
        write_result(w, id, |w| match e.form {
            TaskForm::Legacy => {
                w.raw(protocol::TASK_OPEN);
                self.write_task(w, e);
                w.raw(b"}");
                write_task_evidence(w, e);
                w.close_meta();
                w.raw(b"}");
            }
            TaskForm::Extension => write_object(w, era, info, "task", |w| {
                self.write_task(w, e);
                write_task_evidence(w, e);
            }),
            TaskForm::Plain => write_object(w, era, info, "complete", |w| match e.outcome {
                Some(outcome) => {
                    render_result_for(w, &outcome, &[], 0, stop_note(e.stop), e.error_member);
                }
                None => render_started(w, e),
            }),
        });
    }

    /// Answers a retransmission of the call that started `task`, from the task table; `false` when
    /// the task is gone.
    pub(super) fn replay_start(
        &self,
        task: u64,
        id: Id<'_>,
        era: Era<'_>,
        info: (&'static str, &'static str),
        w: &mut Writer<'_>,
    ) -> bool {
        match self.tasks.entries.iter().find(|e| e.id == task) {
            Some(e) => {
                self.write_start(e, id, era, info, w);
                true
            }
            None => false,
        }
    }

    /// Answers the `tasks/*` methods. Returns 0 when a 2025-11-25 `tasks/result` is parked until
    /// the task ends.
    // Not inlined into `Server::request` (whose frame is under every tools/call).
    #[inline(never)]
    pub(super) fn task_method(
        &mut self,
        method: &str,
        params: Option<Json<'_>>,
        respond: Respond<'_, '_>,
        ctx: &mut C,
        peer: Peer,
    ) -> usize {
        if K::TASKS == 0 {
            // Not offered without a task table (see `Server::request`); links no task code.
            return respond.error_text(ErrorCode::MethodNotFound, "Method not found");
        }
        if let Era::Modern(m) = respond.era
            && !m.tasks
        {
            return respond.error_with(
                ErrorCode::MissingRequiredClientCapability,
                |w| w.text("Missing required client capability: the tasks extension"),
                Some(|w: &mut Writer<'_>| w.raw(protocol::REQUIRES_TASKS)),
            );
        }
        let [task_id, cursor] = match members(params, ["taskId", "cursor"]) {
            Ok(m) => m,
            Err(msg) => return respond.error_text(ErrorCode::InvalidParams, msg),
        };
        if method == "tasks/list" {
            return self.list_tasks(cursor, respond);
        }
        let Some(i) = self.tasks.position(task_id) else {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: unknown or expired taskId")
            });
        };
        match method {
            "tasks/cancel" => self.cancel_task(i, ctx, respond),
            // Input for a task that asks for none: acknowledged and ignored.
            "tasks/update" => respond.result(|_| {}),
            "tasks/result" => self.task_result(i, peer, respond),
            _ => self.get_task(i, respond),
        }
    }

    /// `tasks/list`: every task of the table, in one page.
    fn list_tasks(&self, cursor: Option<Json<'_>>, respond: Respond<'_, '_>) -> usize {
        if cursor.is_some() {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: unknown cursor")
            });
        }
        respond.result(|w| {
            w.raw(protocol::TASKS_OPEN);
            for (i, e) in self.tasks.entries.iter().enumerate() {
                w.raw(if i > 0 { b",{" } else { b"{" });
                self.write_task(w, e);
                w.raw(b"}");
            }
            w.raw(b"]");
        })
    }

    /// `tasks/cancel`: a running task ends `cancelled`, its safe-stop issued. Cancelling a
    /// finished task is an error on the legacy wire, an idempotent acknowledgement on 2026-07-28.
    fn cancel_task(&mut self, i: usize, ctx: &mut C, respond: Respond<'_, '_>) -> usize {
        let now = self.now_ms;
        let era = respond.era;
        let hooks = self
            .tasks
            .entries
            .get(i)
            .and_then(|e| self.registry.get(usize::from(e.tool)))
            .and_then(Tool::task_hooks)
            .copied();
        let Some(e) = self.tasks.entries.get_mut(i) else {
            return 0;
        };
        if e.status.is_terminal() {
            if era.is_modern() {
                return respond.result(|_| {});
            }
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: the task already finished (");
                w.text(e.status.as_str());
                w.text(")");
            });
        }
        let stop = hooks
            .and_then(|h| h.stop)
            .map(|stop| stop(ctx, &e.info(now)));
        e.finish(
            TaskStatus::Cancelled,
            Err(ToolError::new("Cancelled by request")),
            stop,
            now,
        );
        // The requestor learns it from this response.
        if e.after == After::Due {
            e.after = After::Notify;
        }
        if era.is_modern() {
            return respond.result(|_| {});
        }
        self.get_task(i, respond)
    }

    /// 2025-11-25 `tasks/result`: the outcome of a finished task; for a running one the request
    /// is parked (returns 0) until the task ends, one waiter at a time.
    fn task_result(&mut self, i: usize, peer: Peer, respond: Respond<'_, '_>) -> usize {
        let Some(e) = self.tasks.entries.get_mut(i) else {
            return 0;
        };
        if !e.status.is_terminal() {
            if e.waiter.is_some() {
                return respond.error_text(
                    ErrorCode::InvalidRequest,
                    "Another tasks/result request is already waiting for this task",
                );
            }
            let id = respond.id.map(|id| id.raw()).unwrap_or_default();
            e.waiter.set(id);
            e.waiter_peer = peer;
            return 0;
        }
        let (Some(id), Some(e)) = (respond.id, self.tasks.entries.get(i)) else {
            return 0;
        };
        self.write_payload(e, id, respond.out)
    }

    /// `tasks/get` (and the legacy answer to `tasks/cancel`): the task; on 2026-07-28 a finished
    /// task's result (or error) too.
    fn get_task(&self, i: usize, respond: Respond<'_, '_>) -> usize {
        let Some(e) = self.tasks.entries.get(i) else {
            return 0;
        };
        let (era, info) = (respond.era, respond.info);
        respond.result(|w| {
            self.write_task(w, e);
            if era.is_modern() {
                self.write_modern_outcome(w, e, era, info);
            }
            // After the 2026-07-28 result, which has its own `_meta`.
            write_task_evidence(w, e);
        })
    }

    /// The 2026-07-28 `tasks/get` members of a finished task: its result, or its error.
    fn write_modern_outcome(
        &self,
        w: &mut Writer<'_>,
        e: &Entry,
        era: Era<'_>,
        info: (&'static str, &'static str),
    ) {
        if let Some(message) = e.error {
            w.raw(protocol::ERROR_OPEN);
            w.int(i64::from(ErrorCode::InternalError.code()));
            w.raw(protocol::MESSAGE);
            match stop_note(e.stop) {
                Some(note) => w.string_parts(&[message, "; ", note]),
                None => w.string(message),
            }
            w.raw(b"}");
        } else if matches!(e.status, TaskStatus::Completed | TaskStatus::Failed) {
            let outcome = Self::outcome(e);
            w.raw(protocol::RESULT);
            write_object(w, era, info, "complete", |w| {
                render_result(w, &outcome, &[], 0, stop_note(e.stop))
            });
        }
    }
}

/// A task that ended with evidence: the evidence as data, in the `_meta` of the result that
/// describes the task (`tasks/get`, a task start answered when the task had already ended); its
/// words are in the task's `statusMessage`. The result object's writer closes the `_meta`.
fn write_task_evidence(w: &mut Writer<'_>, e: &Entry) {
    let evidence = match &e.outcome {
        Some(Ok(o)) => o.evidence,
        Some(Err(err)) => err.evidence,
        None => None,
    };
    if let Some(ev) = evidence.filter(|_| e.status != TaskStatus::Working) {
        w.meta_member(protocol::EVIDENCE_META);
        ev.write_json(w);
    }
}

/// `true` for values a task can keep after the call (no scratch spans, not a new task).
fn storable(v: &Value) -> bool {
    matches!(v, Value::Bool(_) | Value::Int(_) | Value::Static(_)) || is_number(v)
}

#[cfg(feature = "float")]
fn is_number(v: &Value) -> bool {
    matches!(v, Value::Number(_))
}

#[cfg(not(feature = "float"))]
fn is_number(_: &Value) -> bool {
    false
}

/// What became of the safe-stop, as every form of a task's outcome says it after the failure
/// message (`…; safe-stop issued`): the `tasks/get` status message, the `tasks/result` and
/// 2026-07-28 `tasks/get` result or error, the status tool's `error`, a replayed plain answer.
fn stop_note(stop: Option<Result<(), ToolError>>) -> Option<&'static str> {
    match stop {
        Some(Ok(())) => Some("safe-stop issued"),
        Some(Err(_)) => Some("safe-stop FAILED: the actuator may still be moving"),
        None => None,
    }
}

/// Writes `message` and, when there is one, `; ` and the safe-stop note (text mode).
fn write_with_note(w: &mut Writer<'_>, message: &str, note: Option<&str>) {
    w.text(message);
    if let Some(note) = note {
        w.text("; ");
        w.text(note);
    }
}

/// A task's `statusMessage`: its progress while it works; once it ended, the first text of its
/// result ([`write_first_text`]: value or failure, safe-stop, evidence).
fn write_status_message(w: &mut Writer<'_>, e: &Entry) {
    match (e.status, &e.outcome) {
        (TaskStatus::Working, _) => {
            w.text("The action is in progress");
            write_progress(w, e.progress);
        }
        (_, Some(outcome)) => write_first_text(w, outcome, &[], 0, stop_note(e.stop)),
        (status, None) => write_with_note(w, status.as_str(), stop_note(e.stop)),
    }
}

/// ` (3 of 10)`, ` (3)`, or nothing.
fn write_progress(w: &mut Writer<'_>, progress: Option<crate::result::Progress>) {
    if let Some(p) = progress {
        w.text(" (");
        w.progress_value(p.progress);
        if let Some(t) = p.total {
            w.text(" of ");
            w.progress_value(t);
        }
        w.text(")");
    }
}

/// The members of the immediate result of a plain call to a long-running tool. Its first text
/// says in words what a model must know: what started, the task id, the evidence so far, and how
/// to learn the outcome (`self.motor.move_to started as task task-… — scheduled, not done yet
/// (commanded 600); for the outcome, call self.tasks.get_status with this task_id`).
fn render_started(w: &mut Writer<'_>, e: &Entry) {
    w.open_string(protocol::FIRST_TEXT_OPEN);
    w.text(e.view.tool);
    w.plain(b" started as task ");
    write_id(w, e.id);
    e.started.write_sentence_after(w);
    w.plain(b"; for the outcome, call ");
    w.plain(STATUS_TOOL_NAME.as_bytes());
    w.plain(b" with this task_id");
    w.close_string(protocol::STARTED_TASK_ID_OPEN);
    write_id(w, e.id);
    w.raw(protocol::STARTED_POLL_WITH_OPEN);
    w.raw(STATUS_TOOL_NAME.as_bytes());
    w.raw(b"\"}");
    e.started.write_member(w);
}

/// A task's state as a model reading only a first text hears it (the status tool's first text,
/// and the sentence of a plain task's end): `self.motor.move_to completed: 600 — measured: 600
/// (commanded 600)`, `… working (30 of 100) — scheduled, not done yet (commanded 600)`, `…
/// failed: Motor stalled…; safe-stop issued — measured: 120 (…)`. (Text: escaped in string
/// mode.)
fn write_task_sentence(w: &mut Writer<'_>, t: &TaskSnapshot) {
    let working = t.status == TaskStatus::Working;
    w.text(t.tool);
    w.plain(b" ");
    w.plain(t.status.as_str().as_bytes());
    match &t.outcome {
        Some(outcome) if !working => {
            w.plain(b": ");
            write_first_text(w, outcome, &[], 0, stop_note(t.stop));
        }
        _ => {
            write_progress(w, t.progress.filter(|_| working));
            t.started.write_sentence_after(w);
        }
    }
}

/// The log message that tells a plain call's client how its task ended, the call having been
/// answered already: `notifications/message` (logger `task`), its `data` the task id, the tool,
/// the status and the outcome's sentence (`text`, [`write_task_sentence`]), which it returns
/// where it is.
fn write_ended(w: &mut Writer<'_>, e: &Entry) -> Heard {
    w.raw(protocol::TASK_ENDED_NOTIFICATION);
    w.raw(b"\"");
    write_id(w, e.id);
    w.raw(b"\"");
    w.raw(protocol::TOOL);
    w.string(e.view.tool);
    w.raw(protocol::STATUS);
    w.string(e.status.as_str());
    w.raw(protocol::TEXT);
    w.begin_string();
    let at = w.mark();
    write_task_sentence(w, e);
    let len = w.mark() - at;
    w.end_string();
    w.raw(b"}}}");
    Heard {
        outcome: Later::TaskEnded(e.status),
        tool: e.view.tool,
        at,
        len,
    }
}

/// The name of the status tool for clients without task support.
pub const STATUS_TOOL_NAME: &str = "self.tasks.get_status";

#[cfg(feature = "strings")]
const STATUS_PARAMS: &[Param] =
    &[Param::string("task_id", "The task_id returned when the action started").length(1, 24)];

#[cfg(feature = "strings")]
fn status_handler<C>(_: &mut C, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let id = args.str("task_id")?;
    let Some(t) = reply.task(id) else {
        return Err(ToolError::new("Unknown or expired task_id"));
    };
    let working = t.status == TaskStatus::Working;
    reply.report(
        |w| write_task_sentence(w, t),
        |o| {
            o.str("task_id", id)
                .str("tool", t.tool)
                .str("status", t.status.as_str());
            if let Some(p) = t.progress.as_ref().filter(|_| working) {
                o.progress_value("progress", p.progress);
                if let Some(total) = p.total {
                    o.progress_value("total", total);
                }
            }
            o.raw_member(protocol::STARTED, |w| t.started.write_json(w));
            // Read where it is: the outcome and its evidence are not copied onto the stack.
            report_outcome(o, t);
            match t.stop {
                Some(Ok(())) => {
                    o.str("stop", "issued");
                }
                Some(Err(_)) => {
                    o.str("stop", "failed");
                }
                None => {}
            }
        },
    )
}

/// The status tool's members for a task's outcome: its result and evidence, or its failure as a
/// model reads it (with what became of the safe-stop) and the evidence.
#[cfg(feature = "strings")]
fn report_outcome(o: &mut ObjectWriter<'_, '_>, t: &TaskSnapshot) {
    match &t.outcome {
        Some(Ok(out)) => {
            match out.value {
                Value::Bool(b) => o.bool("result", b),
                Value::Int(i) => o.int("result", i),
                #[cfg(feature = "float")]
                Value::Number(n) => o.number("result", n),
                Value::Static(s) => o.str("result", s),
                _ => o,
            };
            if let Some(ev) = &out.evidence {
                o.raw_member(protocol::EVIDENCE, |w| ev.write_json(w));
            }
        }
        Some(Err(err)) => {
            // The failure as a model reads it, with what became of the safe-stop (the `stop`
            // member says it again for programs).
            let m = match (t.error, err.message) {
                (Some(m), _) | (None, crate::result::Message::Static(m)) => Some(m),
                (None, crate::result::Message::Scratch(_)) => None,
            };
            match (m, stop_note(t.stop)) {
                (Some(m), Some(note)) => {
                    o.str_parts("error", &[m, "; ", note]);
                }
                (Some(m), None) => {
                    o.str("error", m);
                }
                (None, Some(note)) => {
                    o.str_parts("error", &["Failed; ", note]);
                }
                (None, None) => {}
            }
            if let Some(ev) = &err.evidence {
                o.raw_member(protocol::EVIDENCE, |w| ev.write_json(w));
            }
        }
        None => {}
    }
}

/// The status tool `self.tasks.get_status` for clients without task support (xiaozhi
/// backends): given a `task_id` from a long-running tool's immediate answer, it reports the
/// status, progress, final result and evidence, and whether a safe-stop was issued. Feature
/// `strings` (its `task_id` is a string parameter).
///
/// ```
/// # struct Board;
/// use mcp_core::{Caps, Config, Server, server::status_tool};
/// static STATUS: mcp_core::Tool<Board> = status_tool();
/// let mut server: Server<'_, Board, Caps<8>> = Server::new(Config::new("b", "1"));
/// server.register(&STATUS).unwrap();
/// ```
#[cfg(feature = "strings")]
pub const fn status_tool<C>() -> Tool<C> {
    Tool::new(
        STATUS_TOOL_NAME,
        "Report the progress and final result of a long-running action, by the task_id it returned.",
        status_handler::<C>,
    )
    .params(STATUS_PARAMS)
    .annotations(crate::registry::Annotations::new().read_only(true))
}

#[cfg(test)]
mod test {
    use super::*;

    fn ts(ms: i64) -> String {
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf);
        write_timestamp(&mut w, ms);
        String::from_utf8(w.written().unwrap().to_vec()).unwrap()
    }

    #[test]
    fn timestamps_are_iso_8601() {
        assert_eq!(ts(0), "\"1970-01-01T00:00:00.000Z\"");
        assert_eq!(ts(1_764_677_400_123), "\"2025-12-02T12:10:00.123Z\"");
        assert_eq!(ts(951_782_400_000), "\"2000-02-29T00:00:00.000Z\"");
        assert_eq!(ts(-1), "\"1969-12-31T23:59:59.999Z\"");
    }

    #[test]
    fn task_ids_parse_strictly() {
        assert_eq!(parse_id("task-00000000000000ff"), Some(255));
        assert_eq!(parse_id("task-ffffffffffffffff"), Some(u64::MAX));
        for bad in [
            "task-",
            "task-1",
            "task-00000000000000FF",
            "task-00000000000000ff0",
            "task-0000000000000g00",
            "TASK-00000000000000ff",
        ] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn task_ids_depend_on_the_key() {
        let mut a: Tasks<heapless::Vec<Entry, 1>> = Tasks::new();
        let mut b: Tasks<heapless::Vec<Entry, 1>> = Tasks::new();
        let (x, y) = (a.next_id((0, 0)), b.next_id((7, 7)));
        assert_ne!(x, y);
        assert_ne!(a.next_id((0, 0)), x);
    }
}
