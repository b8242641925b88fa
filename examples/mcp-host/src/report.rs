//! What the host tells the application about the traffic it carries, read off the bytes the
//! engine wrote: which client made a call, which tool it ran and what its answer says (outcome,
//! evidence level, text), that a call is held for a person, how a confirmation ended, which
//! session started, which resource update went out. For logs and live views (device-sim's `--ui`
//! timeline); the engine's answers themselves are never changed.
//!
//! **One place.** Every transport hands a message to an engine through [`handle`] (mcp-host's
//! own through its message runner, device-sim's stdio loop directly), and every message an
//! engine's `poll` emits is read by [`emitted`]: a transport added later reports its calls, held
//! calls, outcomes and session starts without code of its own. What a transport alone knows —
//! what became of an answer, when a session ends — it reports as [`HostEvent::Delivered`] and
//! [`HostEvent::SessionEnded`].
//!
//! Everything here parses with mcp-core's borrowed JSON views and gives up quietly on anything
//! unexpected: a report is a summary, never a reason to fail a message.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_core::server::{Delivery, HandleError, Handled, Input, Notify, Peer};
use mcp_core::wire::json::{DEFAULT_MAX_DEPTH, Json, Kind};
use mcp_core::{Capacities, Server};

use crate::{Asked, HostEvent};

/// The longest `text` of a report, in characters.
pub const MAX_TEXT: usize = 200;

/// What a `tools/call` came to, read off its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallReport {
    /// This report's number, rising in the process: what became of its answer, when the
    /// transport learns it later, names it ([`HostEvent::Delivered`]).
    pub number: u64,
    /// The transport that carried it (`"http"`, `"http-2026"`, `"xiaozhi-ws"`, `"mqtt"`,
    /// `"stdio"`, …).
    pub transport: &'static str,
    /// Which client made the call, as the device names it next to a question: the name the
    /// client gave in its `initialize` and the device's tag of its session, four hex digits
    /// (`python-sdk #3fa2`, `an unnamed client #3fa2`; [`mcp_core::server::ClientLabel`]). The
    /// name is the client's own claim, escaped and capped by the engine; the tag tells two
    /// clients of the same name apart.
    pub client: String,
    /// The request's id as sent (raw JSON). An outcome that comes after the call (a person's
    /// answer, a timeout) carries the id of the call it ends, the one its
    /// [`Held`](Outcome::Held) report had.
    pub id: String,
    /// The tool called.
    pub tool: String,
    /// What the answer says.
    pub outcome: Outcome,
    /// The evidence level the answer states (`not_applied`, `unknown`, `scheduled`, `applied`, `read_back`, `measured`),
    /// from the result's `_meta` (`io.github.mcu-mcp/evidence`) or a task status's
    /// `structuredContent.evidence`.
    pub evidence: Option<String>,
    /// The answer's first text (or the error message, or the question asked), at most
    /// [`MAX_TEXT`] characters.
    pub text: String,
    /// A person's answer decided it: `Some(true)` the call ran after a yes, `Some(false)` it was
    /// refused (declined, dismissed, no answer in time). `None`: nobody was asked (yet).
    pub confirmed: Option<bool>,
    /// A retransmission answered from the first answer, without running again.
    pub replay: bool,
    /// What became of the answer, when the transport knows (`None`: not yet, or never; a
    /// transport that learns it later says so with [`HostEvent::Delivered`]).
    pub delivery: Option<Delivery>,
    /// The number of the question a person is asked about the call
    /// ([`mcp_core::server::Approval`]): on the report that the call is held (or asked, or
    /// answered that it waits) and on the report of its outcome, and on the press that answered
    /// it ([`crate::Pressed`]). `None`: nobody is asked.
    pub approval: Option<u64>,
    /// The MCP endpoint link that carried it, when there are several
    /// ([`HostEvent::Endpoint`]'s `link`).
    pub link: Option<usize>,
}

/// A call whose answer is held back until its long-running action ends (a client that can
/// neither follow a task nor wait without an answer gets the outcome as the answer): what the
/// report of that answer names when `poll` writes it.
#[derive(Debug)]
struct Awaited {
    engine: usize,
    peer: Peer,
    transport: &'static str,
    id: String,
    tool: String,
    client: String,
}

/// The calls held for their actions, oldest first; at most [`AWAITED`] (an answer never written
/// — its client gone — is forgotten with time).
static AWAITED_CALLS: Mutex<VecDeque<Awaited>> = Mutex::new(VecDeque::new());

/// The most calls held for their actions remembered at once.
const AWAITED: usize = 64;

fn awaited() -> std::sync::MutexGuard<'static, VecDeque<Awaited>> {
    AWAITED_CALLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Which engine, for as long as it lives: its address. The reports of its held calls' answers
/// are matched by it ([`Polled::engine`]).
pub fn engine_key<C, K: Capacities>(engine: &Server<'_, C, K>) -> usize {
    core::ptr::from_ref(engine).addr()
}

/// The next [`CallReport::number`].
fn next_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What an answer to a `tools/call` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// A result that did not fail (no `isError`, or `isError: false`).
    Ok,
    /// A result, `isError: true` (the tool failed, a bad argument on ≥ 2025-11-25, a refusal).
    Failed,
    /// A JSON-RPC error (unknown tool, invalid params on older revisions, …), with its code.
    Error(i64),
    /// Its answer is held back (no answer yet): the call waits for a person's yes on the
    /// device, or for a long-running action to end; the answer is the outcome, reported when it
    /// comes.
    Held,
    /// Answered that it waits for a person's yes on the device (the answer says "press the
    /// button"); the outcome follows.
    AwaitingConfirmation,
    /// The device asked the client's user first (`elicitation/create`); the call's own answer
    /// comes later.
    AskedClient,
    /// 2026-07-28 `input_required`: the client is to ask its user and call again.
    InputRequired,
    /// A task was created; the result comes later.
    Task,
}

impl Outcome {
    /// The outcome as a word: `ok`, `failed`, `error`, `held`, `awaiting_confirmation`,
    /// `asked_client`, `input_required`, `task`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Error(_) => "error",
            Outcome::Held => "held",
            Outcome::AwaitingConfirmation => "awaiting_confirmation",
            Outcome::AskedClient => "asked_client",
            Outcome::InputRequired => "input_required",
            Outcome::Task => "task",
        }
    }
}

/// A call waiting for a person's answer on one of the host's engines.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waiting {
    /// The question's number ([`mcp_core::server::Approval`]).
    pub approval: u64,
    /// The tool that waits.
    pub tool: &'static str,
    /// The id of the call that waits (raw JSON, as its client sent it).
    pub id: String,
    /// The question, as the device shows it: what the call approves (from its arguments) and
    /// which client asks ([`mcp_core::Server::question`]).
    pub question: String,
    /// Which client asks: its session's tag and the name it gave (`client #3fa2 "python-sdk"`).
    pub client: String,
    /// `true`: the answer must come from the device (its button); `false`: the client asks.
    pub on_device: bool,
    /// Since when the device shows this question (host clock, ms): a press after it answers
    /// it. `None`: not shown (another question is shown first, or the client asks).
    pub shown_since: Option<u64>,
    /// How long until the engine gives up, from when the event was sent.
    pub expires_in: Duration,
    /// How long until a press answers it, from when the event was sent: a question is read
    /// before it is answered ([`Pending::min_shown_ms`](mcp_core::server::Pending::min_shown_ms) after it was shown), and a press that
    /// soon after the previous one is a bounce. `None` while it is not shown.
    pub press_counts_in: Option<Duration>,
    /// The same as a time (host clock, ms).
    pub press_counts_from: Option<u64>,
    /// When the engine gives up (engine clock, ms): it moves when the client hears that the call
    /// waits (the person's time counts from then).
    pub deadline_ms: u64,
}

impl Waiting {
    /// Whether the lists `a` and `b` show a person the same: the same questions, each shown
    /// since the same time, a press counting from the same time, the same deadline (a deadline
    /// that moved — the person's time counts from when the client heard that the call waits —
    /// is a change). The times left (`expires_in`, `press_counts_in`) do not count.
    pub fn same_shown(a: &[Waiting], b: &[Waiting]) -> bool {
        let key = |w: &Waiting| {
            (
                w.approval,
                w.shown_since,
                w.press_counts_from,
                w.deadline_ms,
            )
        };
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| key(x) == key(y))
    }

    /// What waits, as of `now_ms` (the engine's clock), shown on the device since `shown_since`.
    pub fn new(asked: &crate::Asked, now_ms: u64, shown_since: Option<u64>) -> Self {
        let p = &asked.pending;
        Waiting {
            approval: p.approval.get(),
            tool: p.tool,
            id: asked.id.clone(),
            question: asked.question.clone(),
            client: p.client.to_string(),
            on_device: p.on_device,
            shown_since,
            expires_in: Duration::from_millis(p.deadline_ms.saturating_sub(now_ms)),
            press_counts_in: None,
            press_counts_from: None,
            deadline_ms: p.deadline_ms,
        }
        .counts_from(
            shown_since.map(|since| since.saturating_add(u64::from(p.min_shown_ms))),
            now_ms,
        )
    }

    /// From `from_ms` on (host clock) a press answers it.
    pub(crate) fn counts_from(mut self, from_ms: Option<u64>, now_ms: u64) -> Self {
        self.press_counts_from = from_ms;
        self.press_counts_in =
            from_ms.map(|from| Duration::from_millis(from.saturating_sub(now_ms)));
        self
    }
}

fn member<'a>(v: Option<Json<'a>>, name: &str) -> Option<Json<'a>> {
    v?.members()?.find(|(k, _)| k.eq_str(name)).map(|(_, v)| v)
}

fn string(v: Option<Json<'_>>) -> Option<String> {
    v?.as_str().map(|s| s.to_cow().into_owned())
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_TEXT).collect();
    if s.chars().nth(MAX_TEXT).is_some() {
        out.push('…');
    }
    out
}

/// The first `text` item of a result's `content`.
fn first_text(result: Option<Json<'_>>) -> Option<String> {
    member(result, "content")?.elements()?.find_map(|item| {
        let is_text = member(Some(item), "type").and_then(|t| t.as_str())?;
        if !is_text.eq_str("text") {
            return None;
        }
        string(member(Some(item), "text"))
    })
}

fn evidence_level(result: Option<Json<'_>>) -> Option<String> {
    let level = |e| string(member(e, "level"));
    level(member(
        member(result, "_meta"),
        "io.github.mcu-mcp/evidence",
    ))
    .or_else(|| level(member(member(result, "structuredContent"), "evidence")))
}

/// Reads an answer to a `tools/call` (a response, or the `elicitation/create` the device sent
/// instead): its outcome, evidence level and text.
pub fn read_answer(answer: &[u8]) -> Option<(Outcome, Option<String>, String)> {
    let root = Some(Json::parse(answer, DEFAULT_MAX_DEPTH).ok()?);
    if let Some(method) = member(root, "method").and_then(|m| m.as_str()) {
        if !method.eq_str("elicitation/create") {
            return None;
        }
        let question = string(member(member(root, "params"), "message")).unwrap_or_default();
        return Some((Outcome::AskedClient, None, short(&question)));
    }
    if let Some(error) = member(root, "error") {
        let code = member(Some(error), "code")
            .and_then(|c| c.as_text().parse().ok())
            .unwrap_or(0);
        let message = string(member(Some(error), "message")).unwrap_or_default();
        return Some((Outcome::Error(code), None, short(&message)));
    }
    let result = member(root, "result");
    result?;
    let typed = member(result, "resultType").and_then(|t| t.as_str());
    if typed.is_some_and(|t| t.eq_str("input_required")) {
        let question = member(
            member(member(member(result, "inputRequests"), "confirm"), "params"),
            "message",
        );
        return Some((
            Outcome::InputRequired,
            None,
            short(&string(question).unwrap_or_default()),
        ));
    }
    if let Some(task) = member(result, "task") {
        let id = string(member(Some(task), "taskId")).unwrap_or_default();
        return Some((Outcome::Task, None, short(&format!("task {id}"))));
    }
    let status = member(member(result, "structuredContent"), "status").and_then(|s| s.as_str());
    let text = short(&first_text(result).unwrap_or_default());
    if status.is_some_and(|s| s.eq_str("awaiting_confirmation")) {
        return Some((Outcome::AwaitingConfirmation, None, text));
    }
    let failed = member(result, "isError").and_then(|e| e.as_bool()) == Some(true);
    let outcome = if failed { Outcome::Failed } else { Outcome::Ok };
    Some((outcome, evidence_level(result), text))
}

/// The tool a `tools/call` request names, and its id (raw JSON); `None` for anything else.
pub fn tools_call(request: &[u8]) -> Option<(String, String)> {
    let root = Some(Json::parse(request, DEFAULT_MAX_DEPTH).ok()?);
    let method = member(root, "method")?.as_str()?;
    if !method.eq_str("tools/call") {
        return None;
    }
    let id = String::from_utf8_lossy(member(root, "id")?.raw()).into_owned();
    let tool = string(member(member(root, "params"), "name"))?;
    Some((tool, id))
}

/// The id (raw JSON) of a response, when `msg` is one (a message with an id and no method).
pub(crate) fn response_id(msg: &[u8]) -> Option<String> {
    let root = Some(Json::parse(msg, DEFAULT_MAX_DEPTH).ok()?);
    if member(root, "method").is_some() {
        return None;
    }
    Some(String::from_utf8_lossy(member(root, "id")?.raw()).into_owned())
}

/// What the application hears of one message an engine handled ([`handle`]): the call it made or
/// settled, and the session it started. The transport reports them once it has handed the answer
/// over (with what became of it, when it knows).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reported {
    /// A `tools/call` answered, held or asked about, or a client's answer that settled the call
    /// held for its user.
    pub call: Option<CallReport>,
    /// An `initialize` that started a session ([`HostEvent::Initialized`]).
    pub started: Option<HostEvent>,
}

impl Reported {
    /// The events, in order (the session before its calls); `delivery` goes on the call.
    pub fn events(self, delivery: Option<Delivery>) -> impl Iterator<Item = HostEvent> {
        let call = self.call.map(|mut c| {
            c.delivery = delivery.or(c.delivery);
            HostEvent::Call(c)
        });
        self.started.into_iter().chain(call)
    }
}

/// Hands one message to `engine` ([`Server::handle_with`]) — the one place every transport gives
/// an engine a message and gets its answer — and reads what the application hears of it
/// ([`Reported`]): which client made a `tools/call` ([`Server::client_label`] of `input`'s peer and
/// lent session), what its answer says, that it is held for a person (its answer waits: a
/// [`Held`](Outcome::Held) report with the question), a call held for the client's user that the
/// client's answer settled (reported with that call's id and client), and an `initialize` that
/// started a session. `transport` names the wire in the reports.
///
/// # Errors
/// As [`Server::handle_with`] (an output buffer below [`mcp_core::MIN_OUT_LEN`]).
pub fn handle<'i, C, K: Capacities>(
    engine: &mut Server<'_, C, K>,
    input: Input<'i>,
    ctx: &mut C,
    out: &mut [u8],
    notify: &mut dyn Notify,
    transport: &'static str,
) -> Result<(Handled<'i>, Reported), HandleError> {
    // A client's answer may settle a call held for its user: remember which.
    let before = Asked::of(engine);
    let mut h = engine.handle_with(input, ctx, out, notify)?;
    // A client that receives only answers hears first what it is owed.
    if engine.config().answers_only {
        h.len = engine.tell_owed(input.peer, out, h.len);
    }
    let answer = out.get(..h.len).unwrap_or_default();
    let client = engine
        .client_label(input.peer, h.session.as_ref())
        .to_string();
    let after = Asked::of(engine);
    let held_now = after
        .as_ref()
        .filter(|a| before.as_ref().map(|b| b.pending.approval) != Some(a.pending.approval));
    let call = match tools_call(input.bytes) {
        Some((tool, id)) => {
            let read = read_answer(answer).or_else(|| {
                let text = held_now.map_or_else(
                    || "the answer waits for the action to end".to_string(),
                    |a| short(&a.question),
                );
                h.deferred.then_some((Outcome::Held, None, text))
            });
            if read.as_ref().is_some_and(|r| r.0 == Outcome::Held) && held_now.is_none() {
                let mut calls = awaited();
                if calls.len() == AWAITED {
                    calls.pop_front();
                }
                calls.push_back(Awaited {
                    engine: engine_key(engine),
                    peer: input.peer,
                    transport,
                    id: id.clone(),
                    tool: tool.clone(),
                    client: client.clone(),
                });
            }
            read.map(|(outcome, evidence, text)| CallReport {
                number: next_number(),
                transport,
                client,
                id,
                tool,
                outcome,
                evidence,
                text,
                confirmed: None,
                replay: h.replay.is_some(),
                delivery: None,
                approval: held_now.map(|a| a.pending.approval.get()),
                link: None,
            })
        }
        None => before
            .filter(|b| !b.pending.on_device && after.as_ref() != Some(b))
            .and_then(|b| settled_report(transport, &b, answer)),
    };
    let started = match h.event {
        Some(mcp_core::Event::Initialized { revision, vision }) => Some(HostEvent::Initialized {
            revision,
            vision_url: vision.map(|v| v.url.to_cow().into_owned()),
            transport,
            client: engine
                .client_label(input.peer, h.session.as_ref())
                .to_string(),
        }),
        _ => None,
    };
    Ok((h, Reported { call, started }))
}

/// The report of what became of the held call `held`, read off `answer`: its own answer (a
/// response), settled by a person's answer through the client or on the device, or by a
/// timeout; or the engine's `notifications/message` with logger `confirmation` (`data: {tool,
/// confirmed, reason?, result? | error?}`) when the call was answered before (that it waits).
/// It carries the held call's id, client and question number; `None` for another message.
pub fn settled_report(transport: &'static str, held: &Asked, answer: &[u8]) -> Option<CallReport> {
    let (outcome, evidence, text, confirmed) = match confirmation_outcome(answer) {
        Some(outcome) => outcome,
        None => {
            response_id(answer)?;
            let (outcome, evidence, text) = read_answer(answer)?;
            let confirmed = match outcome {
                Outcome::AwaitingConfirmation => None,
                Outcome::Ok | Outcome::Task => Some(true),
                _ => Some(false),
            };
            (outcome, evidence, text, confirmed)
        }
    };
    Some(CallReport {
        number: next_number(),
        transport,
        client: held.pending.client.to_string(),
        id: held.id.clone(),
        tool: held.pending.tool.to_string(),
        outcome,
        evidence,
        text,
        confirmed,
        replay: false,
        delivery: None,
        approval: Some(held.pending.approval.get()),
        link: None,
    })
}

/// The outcome a `notifications/message` with logger `confirmation` carries: outcome, evidence,
/// text, and whether the person said yes; `None` for any other message.
fn confirmation_outcome(msg: &[u8]) -> Option<(Outcome, Option<String>, String, Option<bool>)> {
    let root = Some(Json::parse(msg, DEFAULT_MAX_DEPTH).ok()?);
    if !member(root, "method")?
        .as_str()?
        .eq_str("notifications/message")
    {
        return None;
    }
    let params = member(root, "params");
    if !member(params, "logger")?.as_str()?.eq_str("confirmation") {
        return None;
    }
    let data = member(params, "data");
    let confirmed = member(data, "confirmed")?.as_bool()?;
    let (outcome, evidence, text) = match (member(data, "result"), member(data, "error")) {
        (Some(result), _) => {
            let failed = member(Some(result), "isError").and_then(|e| e.as_bool()) == Some(true);
            let outcome = if failed { Outcome::Failed } else { Outcome::Ok };
            let text = short(&first_text(Some(result)).unwrap_or_default());
            (outcome, evidence_level(Some(result)), text)
        }
        (None, Some(error)) => {
            let code = member(Some(error), "code")
                .and_then(|c| c.as_text().parse().ok())
                .unwrap_or(0);
            let message = string(member(Some(error), "message")).unwrap_or_default();
            (Outcome::Error(code), None, short(&message))
        }
        (None, None) => {
            let reason = string(member(data, "reason")).unwrap_or_default();
            (Outcome::Failed, None, short(&reason))
        }
    };
    Some((outcome, evidence, text, Some(confirmed)))
}

/// Where a message an engine's `poll` emitted comes from ([`emitted`]).
#[derive(Debug, Clone, Copy)]
pub struct Polled<'a> {
    /// The engine ([`engine_key`]).
    pub engine: usize,
    /// The client it is for ([`mcp_core::Polled::to`]).
    pub to: Option<Peer>,
    /// The call the engine held for a person before the poll ([`Asked::of`]).
    pub held_before: Option<&'a Asked>,
    /// And after it.
    pub held_after: Option<&'a Asked>,
}

/// What the application hears of one message an engine's `poll` emitted (`from`): a resource
/// update ([`HostEvent::Updated`]); what became of the call held for a person before the poll —
/// its outcome (a person's answer on the device or through the client, a timeout), or that it is
/// answered as waiting —; or the answer of a call held for its long-running action
/// ([`HostEvent::Call`], with that call's id and client, and the question's number for a held
/// question); `None` for anything else. `delivered`: the message went to a stream or a socket.
pub fn emitted(
    transport: &'static str,
    from: &Polled<'_>,
    msg: &[u8],
    delivered: bool,
) -> Option<HostEvent> {
    if let Some((uri, subscription)) = resource_update(msg) {
        return Some(HostEvent::Updated {
            transport,
            uri,
            subscription: subscription.map(|s| String::from_utf8_lossy(&s).into_owned()),
            delivered,
        });
    }
    let delivery = Some(crate::delivery(delivered));
    let id = response_id(msg);
    // A message about the held call: its outcome, a refusal, or that it still waits on the
    // device (a response with its id, or the outcome's notification).
    if let Some(held) = from.held_before {
        let still = from
            .held_after
            .is_some_and(|a| a.pending.approval == held.pending.approval);
        let about = id.as_ref().is_none_or(|id| *id == held.id);
        if about
            && (!still || msg_is_awaiting(msg))
            && let Some(mut r) = settled_report(transport, held, msg)
        {
            r.delivery = delivery;
            return Some(HostEvent::Call(r));
        }
    }
    // The answer of a call held for its action.
    let (id, to) = (id?, from.to?);
    let call = {
        let mut calls = awaited();
        let at = calls.iter().position(|a| {
            a.engine == from.engine && a.peer == to && a.transport == transport && a.id == id
        })?;
        calls.remove(at)?
    };
    let (outcome, evidence, text) = read_answer(msg)?;
    Some(HostEvent::Call(CallReport {
        number: next_number(),
        transport,
        client: call.client,
        id: call.id,
        tool: call.tool,
        outcome,
        evidence,
        text,
        confirmed: None,
        replay: false,
        delivery,
        approval: None,
        link: None,
    }))
}

/// The answer of a call still held for the device (`structuredContent.status`
/// `awaiting_confirmation`).
fn msg_is_awaiting(msg: &[u8]) -> bool {
    matches!(
        read_answer(msg),
        Some((Outcome::AwaitingConfirmation, _, _))
    )
}

/// A `notifications/resources/updated`: its URI and the listen stream it is tagged with
/// (`_meta["io.modelcontextprotocol/subscriptionId"]`, raw JSON), if any.
pub fn resource_update(msg: &[u8]) -> Option<(String, Option<Vec<u8>>)> {
    let root = Some(Json::parse(msg, DEFAULT_MAX_DEPTH).ok()?);
    if !member(root, "method")?
        .as_str()?
        .eq_str("notifications/resources/updated")
    {
        return None;
    }
    let params = member(root, "params");
    let uri = string(member(params, "uri"))?;
    Some((uri, subscription(params)))
}

/// `_meta["io.modelcontextprotocol/subscriptionId"]` of a notification's params (raw JSON).
fn subscription(params: Option<Json<'_>>) -> Option<Vec<u8>> {
    let id = member(
        member(params, "_meta"),
        "io.modelcontextprotocol/subscriptionId",
    )?;
    matches!(id.kind(), Kind::String | Kind::Number).then(|| id.raw().to_vec())
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test

    use super::*;

    #[test]
    fn answers_are_read_for_outcome_evidence_and_text() {
        let call = br#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}}"#;
        let ok = br#"{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"true \u2014 read back: 40"}],"_meta":{"io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}}}}"#;
        assert_eq!(
            tools_call(call).unwrap(),
            ("self.audio_speaker.set_volume".into(), r#""a-1""#.into())
        );
        assert_eq!(
            read_answer(ok).unwrap(),
            (
                Outcome::Ok,
                Some("read_back".into()),
                "true — read back: 40".into()
            )
        );
        let held = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Waiting for a person"}],"structuredContent":{"status":"awaiting_confirmation","question":"Reboot the device?"}}}"#;
        assert_eq!(read_answer(held).unwrap().0, Outcome::AwaitingConfirmation);
        let err = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool"}}"#;
        assert_eq!(
            read_answer(err).unwrap(),
            (Outcome::Error(-32602), None, "Unknown tool".into())
        );
        let asked = br#"{"jsonrpc":"2.0","id":"confirm-1","method":"elicitation/create","params":{"message":"Reboot the device?","requestedSchema":{}}}"#;
        assert_eq!(
            read_answer(asked).unwrap(),
            (Outcome::AskedClient, None, "Reboot the device?".into())
        );
        let status = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"status":"completed","evidence":{"level":"measured"}}}}"#;
        assert_eq!(read_answer(status).unwrap().1.as_deref(), Some("measured"));
        assert!(tools_call(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).is_none());
    }

    #[test]
    fn confirmation_outcomes_and_updates_are_recognised() {
        let yes = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"notice","logger":"confirmation","data":{"tool":"self.reboot","confirmed":true,"result":{"content":[{"type":"text","text":"true"}],"_meta":{"io.github.mcu-mcp/evidence":{"level":"scheduled"}}}}}}"#;
        let (outcome, evidence, _, confirmed) = confirmation_outcome(yes).unwrap();
        assert_eq!(
            (confirmed, outcome, evidence.as_deref()),
            (Some(true), Outcome::Ok, Some("scheduled"))
        );
        let no = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"notice","logger":"confirmation","data":{"tool":"self.reboot","confirmed":false,"reason":"Not confirmed: no answer in time; nothing was done"}}}"#;
        let (outcome, _, text, confirmed) = confirmation_outcome(no).unwrap();
        assert_eq!((confirmed, outcome), (Some(false), Outcome::Failed));
        assert!(text.starts_with("Not confirmed"));
        let tagged = br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l-1"},"uri":"device://sensors/battery"}}"#;
        assert_eq!(
            resource_update(tagged).unwrap(),
            (
                "device://sensors/battery".into(),
                Some(br#""l-1""#.to_vec())
            )
        );
        let plain =
            br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}"#;
        assert_eq!(resource_update(plain).unwrap(), ("x".into(), None));
        assert!(confirmation_outcome(plain).is_none());
    }
}
