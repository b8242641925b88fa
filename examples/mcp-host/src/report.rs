//! What the host tells the application about the traffic it carries, read off the bytes the
//! engine wrote: which tool a call ran and what its answer says (outcome, evidence level, text),
//! how a confirmation ended, which resource update went out. For logs and live views (device-sim's
//! `--ui` timeline); the engine's answers themselves are never changed.
//!
//! Everything here parses with mcp-core's borrowed JSON views and gives up quietly on anything
//! unexpected: a report is a summary, never a reason to fail a message.

use std::time::Duration;

use mcp_core::server::{Delivery, Pending};
use mcp_core::wire::json::{DEFAULT_MAX_DEPTH, Json, Kind};

use crate::HostEvent;

/// The longest `text` of a report, in characters.
pub const MAX_TEXT: usize = 200;

/// What a `tools/call` came to, read off its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallReport {
    /// The transport that carried it (`"http"`, `"http-2026"`, `"xiaozhi-ws"`, `"stdio"`, …).
    pub transport: &'static str,
    /// The request's id as sent (raw JSON); empty when the outcome came as a notification (a
    /// confirmation given on the device: the call was answered already).
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
    /// What became of the answer, when the transport knows.
    pub delivery: Option<Delivery>,
}

/// What an answer to a `tools/call` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// A result, `isError: false`.
    Ok,
    /// A result, `isError: true` (the tool failed, a bad argument on ≥ 2025-11-25, a refusal).
    Failed,
    /// A JSON-RPC error (unknown tool, invalid params on older revisions, …), with its code.
    Error(i64),
    /// Held for a person's yes on the device (the answer says "press the button").
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
    /// The outcome as a word: `ok`, `failed`, `error`, `awaiting_confirmation`,
    /// `asked_client`, `input_required`, `task`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Error(_) => "error",
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
    /// The question, as the device shows it: what the call approves (from its arguments) and
    /// which client asks ([`mcp_core::Server::question`]).
    pub question: String,
    /// Which client asks: the name it gave and its session's tag (`python-sdk #3fa2`).
    pub client: String,
    /// `true`: the answer must come from the device (its button); `false`: the client asks.
    pub on_device: bool,
    /// Since when the device shows this question (host clock, ms): a press after it answers
    /// it. `None`: not shown (another question is shown first, or the client asks).
    pub shown_since: Option<u64>,
    /// How long until the engine gives up, from when the event was sent.
    pub expires_in: Duration,
    /// How long until a press answers it, from when the event was sent: a question is read
    /// before it is answered ([`Pending::min_shown_ms`] after it was shown), and a press that
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

/// The report of a `tools/call` `request` answered with `answer`; `None` when `request` is not
/// a `tools/call` or the answer is empty.
pub fn call_report(transport: &'static str, request: &[u8], answer: &[u8]) -> Option<CallReport> {
    let (tool, id) = tools_call(request)?;
    let (outcome, evidence, text) = read_answer(answer)?;
    Some(CallReport {
        transport,
        id,
        tool,
        outcome,
        evidence,
        text,
        confirmed: None,
        replay: false,
        delivery: None,
    })
}

/// The report of a held call's own answer (`answer`, a response), settled by a person's answer
/// through the client or by a timeout: `tool` is the call that was held.
pub fn settled_report(transport: &'static str, tool: &str, answer: &[u8]) -> Option<CallReport> {
    let id = response_id(answer)?;
    let (outcome, evidence, text) = read_answer(answer)?;
    Some(CallReport {
        transport,
        id,
        tool: tool.to_string(),
        confirmed: match outcome {
            Outcome::AwaitingConfirmation => None,
            Outcome::Ok | Outcome::Task => Some(true),
            _ => Some(false),
        },
        outcome,
        evidence,
        text,
        replay: false,
        delivery: None,
    })
}

/// The outcome of a confirmation given on the device (or timed out there): the engine's
/// `notifications/message` with logger `confirmation` (`data: {tool, confirmed, reason?,
/// result? | error?}`); `None` for any other message.
pub fn confirmation_report(transport: &'static str, msg: &[u8]) -> Option<CallReport> {
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
    let tool = string(member(data, "tool"))?;
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
    Some(CallReport {
        transport,
        id: String::new(),
        tool,
        outcome,
        evidence,
        text,
        confirmed: Some(confirmed),
        replay: false,
        delivery: None,
    })
}

/// What the application hears of one message an engine's `poll` emitted: a resource update
/// ([`HostEvent::Updated`]), a confirmation's outcome on the device, or a held call's own answer
/// — settled through the client or timed out — ([`HostEvent::Call`]); `None` for anything
/// else. `held_before` / `held_after`: the engine's
/// [`confirmation`](mcp_core::Server::confirmation) before and after the poll; `delivered`: the
/// message went to a stream or a socket.
pub fn emitted(
    transport: &'static str,
    held_before: Option<Pending>,
    held_after: Option<Pending>,
    msg: &[u8],
    delivered: bool,
) -> Option<HostEvent> {
    let delivery = Some(if delivered {
        Delivery::Written
    } else {
        Delivery::Lost
    });
    if let Some((uri, subscription)) = resource_update(msg) {
        return Some(HostEvent::Updated {
            transport,
            uri,
            subscription: subscription.map(|s| String::from_utf8_lossy(&s).into_owned()),
            delivered,
        });
    }
    if let Some(mut r) = confirmation_report(transport, msg) {
        r.delivery = delivery;
        return Some(HostEvent::Call(r));
    }
    // A response while a held call ended: that call's own answer (its outcome, a refusal, or
    // that it still waits on the device).
    let held = held_before?;
    if held_after.is_some_and(|p| p.approval == held.approval && !msg_is_awaiting(msg)) {
        return None;
    }
    let mut r = settled_report(transport, held.tool, msg)?;
    r.delivery = delivery;
    Some(HostEvent::Call(r))
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
        let ok = br#"{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"true \u2014 read back: 40 (commanded 40)"}],"isError":false,"_meta":{"io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}}}}"#;
        let r = call_report("http", call, ok).unwrap();
        assert_eq!(r.tool, "self.audio_speaker.set_volume");
        assert_eq!(r.id, r#""a-1""#);
        assert_eq!(r.outcome, Outcome::Ok);
        assert_eq!(r.evidence.as_deref(), Some("read_back"));
        assert_eq!(r.text, "true — read back: 40 (commanded 40)");
        let held = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Waiting for a person"}],"structuredContent":{"status":"awaiting_confirmation","question":"Reboot the device?"},"isError":false}}"#;
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
        let status = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"status":"completed","evidence":{"level":"measured"}},"isError":false}}"#;
        assert_eq!(read_answer(status).unwrap().1.as_deref(), Some("measured"));
        assert!(call_report("http", br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, ok).is_none());
    }

    #[test]
    fn confirmation_outcomes_and_updates_are_recognised() {
        let yes = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"notice","logger":"confirmation","data":{"tool":"self.reboot","confirmed":true,"result":{"content":[{"type":"text","text":"true"}],"isError":false,"_meta":{"io.github.mcu-mcp/evidence":{"level":"scheduled"}}}}}}"#;
        let r = confirmation_report("stdio", yes).unwrap();
        assert_eq!(
            (
                r.tool.as_str(),
                r.confirmed,
                r.outcome,
                r.evidence.as_deref()
            ),
            ("self.reboot", Some(true), Outcome::Ok, Some("scheduled"))
        );
        let no = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"notice","logger":"confirmation","data":{"tool":"self.reboot","confirmed":false,"reason":"Not confirmed: no answer in time; nothing was done"}}}"#;
        let r = confirmation_report("stdio", no).unwrap();
        assert_eq!((r.confirmed, r.outcome), (Some(false), Outcome::Failed));
        assert!(r.text.starts_with("Not confirmed"));
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
        assert!(confirmation_report("stdio", plain).is_none());
    }
}
