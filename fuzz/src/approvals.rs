//! A reference model of a person's yes (`docs/CONFIRMATION.md`, the module docs of
//! `mcp_core::server::confirm`), written from those rules, not from the engine's code.
//!
//! The `confirm` target hands every message, poll, press and forgotten client to the engine and
//! then to [`Approvals`], with what it saw ([`Seen`], [`Polled`]): the bytes written, the handler
//! runs, whom a polled message is for, the question the device shows
//! ([`Server::confirmation`](mcp_core::Server::confirmation)) and the sending client's session.
//! The model keeps its own account of the one call held for a person, the questions asked, the
//! 2026-07-28 states issued and spent, and asserts:
//!
//! - a tool that asks first runs from the model only after a yes: its owner's elicitation answer
//!   with the question's id, a press that [`Server::confirm_on_device`] took for the shown
//!   question (strictly after it was shown, shown for the minimum, not within the minimum of the
//!   previous press, before the deadline), or a 2026-07-28 retry with a
//!   state the engine issued for that tool and those argument bytes, unexpired and unspent, and a
//!   yes; at most once per approval (a run ends the hold; a spent state never runs again), never
//!   after a decline, a cancel, a malformed answer, an error, a timeout or a forgotten client,
//!   and never from another client's answer;
//! - a yes the rules accept does run it (or, for a retransmission of a call that ran, replays);
//! - every answer or outcome of a held call is addressed to its owner ([`Polled::to`], or the
//!   answer to the owner's own response) and carries the call's id byte for byte; an answer from
//!   anyone else gets nothing;
//! - each question has a new number, its `elicitation/create` id is `"confirm-<16 hex>"` of it,
//!   and what the device shows ([`Pending`]) is the held call: owner, tool, question, where it is
//!   answered, since when it is shown and its deadline, which client asks (the name its
//!   `initialize` gave, capped; one tag per client); the question's text — in the elicitation,
//!   in a waiting answer — is the tool's question filled from the call's arguments and names that
//!   client;
//! - a client's elicitation support is its own (its session says what its `initialize` said);
//! - every message is one well-formed JSON-RPC 2.0 message.
//!
//! [`Server::confirm_on_device`]: mcp_core::Server::confirm_on_device

use mcp_core::schema::Param;
use mcp_core::server::{Peer, Pending};
use mcp_core::{Principal, Revision};

use crate::model::{self, Val};
use crate::{Expect, J, Response, check_outgoing, check_response, classify, entries, json_str};

/// The longest call the fuzz server can hold (its `HOLD`).
pub const HOLD: usize = 256;
/// The revision whose requests carry everything in `params._meta`.
pub const MODERN: &str = "2026-07-28";
/// How many used 2026-07-28 approvals the engine remembers (`CONFIRMATION.md`: when every record
/// is still live a further approval is refused).
pub const SPENT: usize = 4;
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const IDEMPOTENCY_KEY: &str = "io.github.mcu-mcp/idempotencyKey";

/// What the model knows of a tool of the fuzz device.
pub struct ToolModel {
    pub name: &'static str,
    pub params: &'static [Param],
    /// The question's template, for a tool that asks first.
    pub question: Option<&'static str>,
    /// The question a call with these (validated) values asks: the template filled in.
    pub asked: fn(&[Val]) -> String,
    /// Whether a call with these (validated) values asks (`Confirm::when`).
    pub asks: fn(&[Val]) -> bool,
}

/// One run of a handler, as the device recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The tool's index in the device's table.
    pub tool: usize,
    /// The `on` argument the handler read, for a tool that has it.
    pub on: Option<bool>,
}

/// What the engine did with one message.
pub struct Seen<'a> {
    pub out: &'a [u8],
    pub deferred: bool,
    /// `Handled::replay` is `Some`: answered as a retransmission.
    pub replay: bool,
    /// `Handled::ran`.
    pub ran: Option<&'static str>,
    /// The handler runs during the message.
    pub runs: &'a [Run],
    /// The question the device shows afterwards.
    pub pending: Option<Pending>,
    /// The sending client's session after the message, when the transport lent one.
    pub elicits: Option<bool>,
}

/// One message `poll_with` wrote.
pub struct Polled {
    pub bytes: Vec<u8>,
    pub to: Option<Peer>,
    pub ran: Option<&'static str>,
}

/// How a person's answer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    Yes,
    No,
    Cancel,
    Malformed,
}

/// A call held for a person.
#[derive(Debug, Clone)]
pub struct Held {
    pub owner: Peer,
    pub tool: usize,
    /// The held message's length.
    pub len: usize,
    /// The call's id, its exact text.
    pub id: String,
    pub args: Option<String>,
    pub run: Run,
    /// Asked of the owner's user (`elicitation/create`); otherwise on the device.
    pub asked: bool,
    pub approval: u64,
    /// The `elicitation/create` id's exact text, when asked.
    pub token: Option<String>,
    pub shown: Option<u64>,
    pub deadline: u64,
    /// The call's own answer is still owed, at the latest by then.
    pub owed: Option<u64>,
    pub device_answer: Option<bool>,
    /// Which client asks, as its `initialize` named it when the call was held (`None`: not
    /// known to the model).
    pub label: Option<String>,
}

/// A 2026-07-28 state the engine issued.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The `requestState` value's exact text (with its quotes).
    pub token: String,
    pub tool: usize,
    pub args: Option<String>,
    pub expiry: u64,
}

/// A call whose handler ran: a later retransmission of it may be answered from the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RanCall {
    peer: Peer,
    tool: usize,
    id: String,
    args: Option<String>,
    /// `None`: legacy; `Some(key)`: 2026-07-28 with that idempotency key.
    modern: Option<Option<String>>,
}

/// What the 2026-07-28 rules decide about a call that asks first.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Grant {
    NoElicitation,
    Duplicate,
    BadState,
    Ask,
    Refused,
    Used,
    Full,
    Run(String, u64),
}

/// The model.
pub struct Approvals {
    tools: &'static [ToolModel],
    timeout: u64,
    budget: u64,
    /// The least time a person has once the client heard that the call waits
    /// (`Config::heard_margin_ms`, the default: the target does not set it).
    margin: u64,
    /// The output buffer every message is written into.
    out_len: usize,
    /// Messages go through `handle_async`: a client's yes approves the held call, and the next
    /// `poll_async` runs it (the yes itself is answered by nothing).
    asynch: bool,
    /// The engine's clock: the latest time `poll` was given.
    pub now: u64,
    /// Each client's elicitation support (`None`: not known to the model); a client not listed
    /// has none.
    elicits: Vec<(Peer, Option<bool>)>,
    /// The name each client's `initialize` gave, as a device shows it (`None`: not known).
    names: Vec<(Peer, Option<String>)>,
    /// The tag each client's questions carry, as first seen.
    tags: Vec<(Peer, u16)>,
    /// A press counts only this long after its question was shown, and not this soon after the
    /// previous press (ms).
    min_shown: u64,
    /// When the button was last pressed (every press handed to the engine).
    last_press: Option<u64>,
    pub held: Option<Held>,
    /// Every approval number seen.
    pub approvals: Vec<u64>,
    /// Every `elicitation/create` id issued (exact text) and to whom.
    pub elicitation_ids: Vec<(String, Peer)>,
    pub states: Vec<Issued>,
    /// Spent states and their expiry.
    spent: Vec<(String, u64)>,
    ran: Vec<RanCall>,
    /// Runs of tools that ask first, from a person's yes (for the report).
    pub confirmed_runs: u32,
}

/// The members of an object, by exact text; `Err` when `key` is repeated.
fn unique<'a>(
    members: &'a [(String, Box<serde_json::value::RawValue>)],
    key: &str,
) -> Result<Option<&'a str>, ()> {
    let mut found = members
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.get());
    let first = found.next();
    if found.next().is_some() {
        return Err(());
    }
    Ok(first)
}

/// [`unique`] over a tree.
fn unique_j<'a>(members: &'a [(String, J)], key: &str) -> Result<Option<&'a J>, ()> {
    let mut found = members.iter().filter(|(k, _)| k == key).map(|(_, v)| v);
    let first = found.next();
    if found.next().is_some() {
        return Err(());
    }
    Ok(first)
}

/// An `ElicitResult` (`{action, content: {confirm}}`), as the question asked it: `accept` with
/// the boolean `confirm` true is a yes, false or `decline` a no, `cancel` a dismissal; anything
/// else (not an object, a repeated member, content without the boolean) is not understood.
pub fn read_answer(result: &J) -> Said {
    let Some(m) = result.as_object() else {
        return Said::Malformed;
    };
    let (Ok(action), Ok(content)) = (unique_j(m, "action"), unique_j(m, "content")) else {
        return Said::Malformed;
    };
    match action.and_then(J::as_str) {
        Some("accept") => {
            let confirm = content
                .and_then(J::as_object)
                .map(|c| unique_j(c, "confirm"));
            match confirm {
                Some(Ok(Some(J::Bool(true)))) => Said::Yes,
                Some(Ok(Some(J::Bool(false)))) => Said::No,
                _ => Said::Malformed,
            }
        }
        Some("decline") => Said::No,
        Some("cancel") => Said::Cancel,
        _ => Said::Malformed,
    }
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `isError: true` in a tool result, or a JSON-RPC error.
fn refused(r: &Response) -> bool {
    r.code.is_some()
        || r.result
            .as_ref()
            .is_some_and(|res| res["isError"] == J::Bool(true))
}

/// `true` when `s` is `v2.` and three dot-separated fields of 16 lower-case hex digits.
fn state_format(s: &str) -> Option<u64> {
    let rest = s.strip_prefix("v2.")?;
    let parts: Vec<&str> = rest.split('.').collect();
    let hex = |p: &str| p.len() == 16 && p.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    (parts.len() == 3 && parts.iter().all(|p| hex(p)))
        .then(|| u64::from_str_radix(parts[0], 16).ok())?
}

impl Approvals {
    pub fn new(
        tools: &'static [ToolModel],
        timeout_ms: u32,
        budget_ms: u32,
        out_len: usize,
        asynch: bool,
        min_shown_ms: u32,
    ) -> Self {
        Approvals {
            names: Vec::new(),
            tags: Vec::new(),
            min_shown: u64::from(min_shown_ms),
            last_press: None,
            tools,
            out_len,
            asynch,
            timeout: u64::from(timeout_ms),
            margin: u64::from(mcp_core::Config::new("", "").heard_margin_ms),
            budget: u64::from(budget_ms.min(timeout_ms)),
            now: 0,
            elicits: Vec::new(),
            held: None,
            approvals: Vec::new(),
            elicitation_ids: Vec::new(),
            states: Vec::new(),
            spent: Vec::new(),
            ran: Vec::new(),
            confirmed_runs: 0,
        }
    }

    /// The name a client gave, as a device shows it (the names the target sends are plain
    /// ASCII): a `"` as `\"` — it is shown in quotes it must not close —, at most 21 bytes of
    /// whole escapes, `…` after when cut; empty without one.
    fn label_of(&self, peer: Peer) -> Option<String> {
        // Never initialized: no name. `None` in the list: not known to the model.
        let name = match self.names.iter().find(|(p, _)| *p == peer) {
            None => String::new(),
            Some((_, n)) => n.clone()?,
        };
        let mut shown = String::new();
        for c in name.chars() {
            let piece = if c == '"' {
                "\\\"".to_string()
            } else {
                c.to_string()
            };
            if shown.len() + piece.len() > 21 {
                shown.push('…');
                break;
            }
            shown.push_str(&piece);
        }
        Some(shown)
    }

    /// The tag of `peer`'s questions: the same every time.
    fn check_tag(&mut self, peer: Peer, tag: u16) {
        match self.tags.iter().find(|(p, _)| *p == peer) {
            Some(&(_, t)) => assert_eq!(t, tag, "one tag per client"),
            None => self.tags.push((peer, tag)),
        }
    }

    /// The full text of the held call's question, when the model knows the asking client's
    /// name (the tag as the engine shows it, checked stable per client).
    fn question_text(
        &mut self,
        h_tool: usize,
        args: &Option<String>,
        label: Option<String>,
        peer: Peer,
        tag: u16,
    ) -> Option<String> {
        self.check_tag(peer, tag);
        let label = label?;
        let values = self.values(h_tool, args);
        let asked = (self.tools[h_tool].asked)(&values);
        // The device's tag first, where no name can come before it; the name after, quoted.
        Some(match label.is_empty() {
            true => format!("{asked} (asked by client #{tag:04x})"),
            false => format!("{asked} (asked by client #{tag:04x} \"{label}\")"),
        })
    }

    /// The validated values of a call's arguments (as sent).
    fn values(&self, tool: usize, args: &Option<String>) -> Vec<Val> {
        model::validate(self.tools[tool].params, args.as_deref()).unwrap_or_default()
    }

    fn set_name(&mut self, peer: Peer, name: Option<String>) {
        match self.names.iter_mut().find(|(p, _)| *p == peer) {
            Some(entry) => entry.1 = name,
            None => self.names.push((peer, name)),
        }
    }

    fn elicits_of(&self, peer: Peer) -> Option<bool> {
        self.elicits
            .iter()
            .find(|(p, _)| *p == peer)
            .map_or(Some(false), |(_, e)| *e)
    }

    fn set_elicits(&mut self, peer: Peer, e: Option<bool>) {
        match self.elicits.iter_mut().find(|(p, _)| *p == peer) {
            Some(entry) => entry.1 = e,
            None => self.elicits.push((peer, e)),
        }
    }

    /// The handler's run for a call of `tool` with these values.
    fn run_of(&self, tool: usize, values: &[Val]) -> Run {
        let on = self.tools[tool]
            .params
            .iter()
            .position(|p| p.name() == "on")
            .and_then(|i| match values.get(i) {
                Some(Val::Bool(b)) => Some(*b),
                _ => None,
            });
        Run { tool, on }
    }

    /// One message from `peer`, and what the engine did with it.
    pub fn message(&mut self, peer: Peer, principal: Principal, msg: &[u8], seen: &Seen<'_>) {
        assert!(
            seen.runs.len() <= 1,
            "one message ran {:?}: {}",
            seen.runs,
            show(msg)
        );
        assert_eq!(
            seen.ran,
            seen.runs.first().map(|r| self.tools[r.tool].name),
            "Handled::ran says what ran: {}",
            show(msg)
        );
        match classify(msg) {
            Expect::ParseError(id) => {
                let r = check_response(seen.out);
                assert_eq!(
                    (r.code, r.id.as_str()),
                    (Some(-32700), id.as_deref().unwrap_or("null")),
                    "{}",
                    show(msg)
                );
                assert!(seen.runs.is_empty());
            }
            Expect::Invalid(id) => {
                let r = check_response(seen.out);
                assert_eq!(r.code, Some(-32600), "{}", show(msg));
                assert_eq!(r.id, id.as_deref().unwrap_or("null"));
                assert!(seen.runs.is_empty());
            }
            Expect::Silent => {
                let members = entries(msg).expect("a message is an object");
                if members.iter().any(|(k, _)| k == "id") {
                    self.response(peer, msg, &members, seen);
                } else {
                    assert!(
                        seen.out.is_empty(),
                        "answered a notification: {}",
                        show(msg)
                    );
                    assert!(
                        seen.runs.is_empty(),
                        "a notification ran a tool: {}",
                        show(msg)
                    );
                }
            }
            Expect::Answer { id, method, params } => match method.as_str() {
                "tools/call" => self.call(peer, principal, &id, params.as_deref(), msg, seen),
                "initialize" => {
                    self.initialize(peer, &id, params.as_deref(), seen);
                }
                _ => {
                    assert!(seen.runs.is_empty(), "{method} ran a tool");
                    let r = check_response(seen.out);
                    assert_eq!(r.id, id, "id echo: {}", show(msg));
                }
            },
        }
        if let Some(e) = seen.elicits {
            match self.elicits_of(peer) {
                Some(m) => assert_eq!(
                    e,
                    m,
                    "the client's session says elicitation {e}, its initialize said {m}: {}",
                    show(msg)
                ),
                None => self.set_elicits(peer, Some(e)),
            }
        }
        self.check_pending(seen.pending, msg);
    }

    /// `initialize`: the client's revision, and its elicitation support, are its own.
    fn initialize(&mut self, peer: Peer, id: &str, params: Option<&str>, seen: &Seen<'_>) {
        assert!(seen.runs.is_empty());
        let r = check_response(seen.out);
        assert_eq!(r.id, id);
        let members = params.and_then(|p| entries(p.as_bytes()));
        if members
            .as_ref()
            .is_some_and(|m| m.iter().any(|(k, _)| k == "_meta"))
        {
            // Not plainly legacy: learnt from the session, when there is one.
            self.set_elicits(peer, None);
            self.set_name(peer, None);
            return;
        }
        let members = members.unwrap_or_default();
        let (Ok(version), Ok(caps)) = (
            unique(&members, "protocolVersion"),
            unique(&members, "capabilities"),
        ) else {
            assert_eq!(r.code, Some(-32602), "duplicate members");
            return;
        };
        let Some(version) = version.and_then(json_str) else {
            assert_eq!(r.code, Some(-32602), "no protocolVersion string");
            return;
        };
        let known = Revision::ALL
            .iter()
            .copied()
            .find(|rev| rev.as_str() == version);
        let revision = known.unwrap_or(Revision::LATEST);
        let result = r.result.as_ref().expect("initialize succeeds");
        assert_eq!(result["protocolVersion"].as_str(), Some(revision.as_str()));
        let declared = caps
            .and_then(J::parse_str)
            .and_then(|c| {
                c.as_object().map(|m| {
                    unique_j(m, "elicitation")
                        .ok()
                        .flatten()
                        .is_some_and(J::is_object)
                })
            })
            .unwrap_or(false);
        self.set_elicits(peer, Some(revision >= Revision::V2025_06_18 && declared));
        // The name it gave (the target sends plain ASCII names, or none, or not a string); a
        // `clientInfo` given twice names nobody.
        let name = unique(&members, "clientInfo")
            .ok()
            .flatten()
            .and_then(J::parse_str)
            .and_then(|c| {
                c.as_object()
                    .and_then(|m| unique_j(m, "name").ok().flatten().cloned())
            })
            .and_then(|n| n.as_str().map(str::to_string));
        let plain = name
            .as_deref()
            .is_none_or(|n| n.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'\\'));
        self.set_name(peer, plain.then(|| name.unwrap_or_default()));
    }

    fn call(
        &mut self,
        peer: Peer,
        principal: Principal,
        id: &str,
        params: Option<&str>,
        msg: &[u8],
        seen: &Seen<'_>,
    ) {
        let no_run = |why: &str| {
            assert!(seen.runs.is_empty(), "{why} ran a tool: {}", show(msg));
        };
        let members = params.and_then(|p| entries(p.as_bytes()));
        let response = |seen: &Seen<'_>| {
            let r = check_response(seen.out);
            assert_eq!(r.id, id, "id echo: {}", show(msg));
            r
        };
        let Some(members) = members else {
            no_run("a tools/call without params");
            response(seen);
            return;
        };
        let (Ok(Some(name)), Ok(arguments)) =
            (unique(&members, "name"), unique(&members, "arguments"))
        else {
            no_run("a malformed tools/call");
            response(seen);
            return;
        };
        let Some(tool) = json_str(name).and_then(|n| self.tools.iter().position(|t| t.name == n))
        else {
            no_run("an unknown tool");
            response(seen);
            return;
        };
        let args = arguments.map(str::to_string);
        let Ok(values) = model::validate(self.tools[tool].params, args.as_deref()) else {
            no_run("a call with invalid arguments");
            assert!(
                refused(&response(seen)),
                "invalid arguments answered as a success"
            );
            return;
        };
        let run = self.run_of(tool, &values);
        let t = &self.tools[tool];
        let asks = principal == Principal::Model && t.question.is_some() && (t.asks)(&values);
        let meta = unique(&members, "_meta");
        // The retransmission scope: legacy calls by id; 2026-07-28 ones by idempotency key.
        let era = meta
            .ok()
            .flatten()
            .and_then(J::parse_str)
            .filter(|m| m.get(PROTOCOL_VERSION).and_then(J::as_str) == Some(MODERN))
            .map(|m| {
                m.get(IDEMPOTENCY_KEY)
                    .and_then(J::as_str)
                    .map(str::to_string)
            });
        let record = RanCall {
            peer,
            tool,
            id: id.to_string(),
            args: args.clone(),
            modern: era,
        };
        if !asks {
            // Nothing to ask: it may run (or be answered from the cache, or refused on `_meta`).
            if let Some(r) = seen.runs.first() {
                assert_eq!(*r, run, "ran another call: {}", show(msg));
                self.ran.push(record);
            }
            if meta.is_ok_and(|m| m.is_some()) {
                check_response(seen.out);
            } else {
                response(seen);
            }
            return;
        }
        let legacy = members.iter().all(|(k, _)| {
            matches!(
                k.as_str(),
                "name" | "arguments" | "requestState" | "inputResponses"
            )
        }) && ["requestState", "inputResponses"]
            .iter()
            .all(|k| unique(&members, k).is_ok());
        if legacy {
            // Plainly legacy (a `requestState` means nothing there): held, never run.
            no_run("a call that asks first, without a yes,");
            if seen.replay {
                assert!(
                    self.ran.contains(&record),
                    "replayed a call that never ran: {}",
                    show(msg)
                );
                response(seen);
                return;
            }
            if self.held.is_some() || msg.len() > HOLD {
                assert!(
                    refused(&response(seen)),
                    "neither held nor refused: {}",
                    show(msg)
                );
                return;
            }
            self.hold(peer, tool, id, args, run, msg, seen);
            return;
        }
        self.meta_call(peer, tool, id, args, run, &members, record, msg, seen);
    }

    /// A call that asks first, now held: what the device shows, and what the caller hears.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &mut self,
        peer: Peer,
        tool: usize,
        id: &str,
        args: Option<String>,
        run: Run,
        msg: &[u8],
        seen: &Seen<'_>,
    ) {
        let p = seen
            .pending
            .unwrap_or_else(|| panic!("a call that asks first was not held: {}", show(msg)));
        let asked = match self.elicits_of(peer) {
            Some(e) => e,
            None => {
                self.set_elicits(peer, Some(!p.on_device));
                !p.on_device
            }
        };
        let approval = p.approval.get();
        assert!(
            !self.approvals.contains(&approval),
            "an approval number came back: {approval:016x}"
        );
        self.approvals.push(approval);
        let deadline = self.now + self.timeout;
        let owed = (!asked && self.budget > 0).then(|| (self.now + self.budget).min(deadline));
        // Answered at once that it waits: the person's time counts from now, at least the margin.
        let deadline = match !asked && owed.is_none() {
            true => deadline.max(self.now + self.margin),
            false => deadline,
        };
        let mut token = None;
        let label = self.label_of(peer);
        let question = self.question_text(tool, &args, label.clone(), peer, p.client.tag);
        if asked {
            assert!(seen.deferred, "the call's answer comes later");
            token = Some(self.check_elicitation(seen.out, approval, question.as_deref(), peer));
        } else if owed.is_some() {
            assert!(
                seen.out.is_empty() && seen.deferred,
                "held inside the call: {}",
                show(seen.out)
            );
        } else {
            let r = check_response(seen.out);
            assert_eq!(r.id, id);
            let res = r.result.expect("a result");
            assert_eq!(res.get("isError"), None);
            assert_eq!(
                res["structuredContent"]["status"].as_str(),
                Some("awaiting_confirmation"),
                "{res}"
            );
            check_question(&res, question.as_deref());
        }
        self.held = Some(Held {
            owner: peer,
            tool,
            len: msg.len(),
            id: id.to_string(),
            args,
            run,
            asked,
            approval,
            token,
            shown: None,
            deadline,
            owed,
            device_answer: None,
            label,
        });
    }

    /// `elicitation/create` for `approval`: one well-formed request with the question.
    fn check_elicitation(
        &mut self,
        out: &[u8],
        approval: u64,
        question: Option<&str>,
        peer: Peer,
    ) -> String {
        let v = J::parse(out).unwrap_or_else(|| panic!("not JSON: {}", show(out)));
        let members = entries(out).expect("an object");
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["jsonrpc", "id", "method", "params"], "{}", show(out));
        assert_eq!(v["jsonrpc"].as_str(), Some("2.0"));
        assert_eq!(v["method"].as_str(), Some("elicitation/create"));
        let token = members[1].1.get().to_string();
        assert_eq!(
            token,
            format!("\"confirm-{approval:016x}\""),
            "the question's id names its approval"
        );
        assert!(
            !self.elicitation_ids.iter().any(|(t, _)| *t == token),
            "an elicitation id came back: {token}"
        );
        self.elicitation_ids.push((token.clone(), peer));
        // The question names what the call approves and which client asks.
        let message = v["params"]["message"].as_str().expect("a message");
        if let Some(question) = question {
            assert_eq!(message, question);
        }
        assert!(message.contains(" (asked by "), "{message}");
        assert!(v["params"]["requestedSchema"]["properties"]["confirm"].is_object());
        token
    }

    /// A call that asks first and carries `_meta`: the 2026-07-28 rules when it is a plain
    /// 2026-07-28 request (as the target writes them), otherwise only what is safe.
    #[allow(clippy::too_many_arguments)]
    fn meta_call(
        &mut self,
        peer: Peer,
        tool: usize,
        id: &str,
        args: Option<String>,
        run: Run,
        members: &[(String, Box<serde_json::value::RawValue>)],
        record: RanCall,
        msg: &[u8],
        seen: &Seen<'_>,
    ) {
        let meta = unique(members, "_meta")
            .ok()
            .flatten()
            .and_then(J::parse_str);
        let strict = meta.as_ref().and_then(J::as_object).is_some_and(|m| {
            let keys_ok = m.iter().all(|(k, _)| {
                matches!(
                    k.as_str(),
                    PROTOCOL_VERSION | CLIENT_CAPABILITIES | IDEMPOTENCY_KEY
                )
            });
            let once = [PROTOCOL_VERSION, CLIENT_CAPABILITIES, IDEMPOTENCY_KEY]
                .iter()
                .all(|k| unique_j(m, k).is_ok());
            let key_ok = unique_j(m, IDEMPOTENCY_KEY).ok().flatten().is_none_or(|k| {
                k.as_str()
                    .is_some_and(|s| !s.is_empty() && s.len() <= 128 && !s.contains('\\'))
            });
            keys_ok
                && once
                && key_ok
                && unique_j(m, PROTOCOL_VERSION) == Ok(Some(&J::Str(MODERN.into())))
                && unique_j(m, CLIENT_CAPABILITIES)
                    .ok()
                    .flatten()
                    .is_some_and(J::is_object)
        }) && members.iter().all(|(k, _)| {
            matches!(
                k.as_str(),
                "name" | "arguments" | "_meta" | "requestState" | "inputResponses"
            )
        });
        let modern = meta
            .as_ref()
            .and_then(|m| m.get(PROTOCOL_VERSION))
            .and_then(J::as_str)
            == Some(MODERN);
        let grant = self.grant(tool, &args, members, meta.as_ref());
        if seen.replay {
            assert!(seen.runs.is_empty());
            assert!(
                self.ran.contains(&record) && record.modern != Some(None),
                "replayed a call that never ran (or has no idempotency key): {}",
                show(msg)
            );
            check_response(seen.out);
            return;
        }
        match (seen.runs.first(), &grant) {
            (Some(r), Grant::Run(token, expiry)) if modern => {
                assert_eq!(*r, run);
                self.spent.push((token.clone(), *expiry));
                self.ran.push(record);
                self.confirmed_runs += 1;
            }
            (Some(_), _) => panic!(
                "a call that asks first ran without a yes (2026-07-28 rules: {grant:?}): {}",
                show(msg)
            ),
            (None, Grant::Run(..)) if strict => {
                panic!(
                    "a fresh 2026-07-28 state with a yes did not run: {}",
                    show(msg)
                )
            }
            (None, _) => {}
        }
        if strict {
            let r = check_response(seen.out);
            assert_eq!(r.id, id);
            let result_type = r
                .result
                .as_ref()
                .and_then(|res| res["resultType"].as_str().map(str::to_string));
            match &grant {
                Grant::NoElicitation => assert_eq!(r.code, Some(-32021), "{}", show(seen.out)),
                Grant::Duplicate | Grant::BadState | Grant::Used => {
                    assert_eq!(r.code, Some(-32602), "{grant:?}: {}", show(seen.out));
                }
                Grant::Full | Grant::Refused => {
                    assert!(
                        refused(&r) && r.code.is_none(),
                        "{grant:?}: {}",
                        show(seen.out)
                    );
                }
                Grant::Run(..) => {
                    assert!(!refused(&r), "{}", show(seen.out));
                    assert_eq!(result_type.as_deref(), Some("complete"));
                }
                Grant::Ask => {
                    assert_eq!(
                        result_type.as_deref(),
                        Some("input_required"),
                        "{}",
                        show(seen.out)
                    );
                }
            }
            assert!(
                seen.pending.is_none() || self.held.is_some(),
                "a 2026-07-28 call was held"
            );
        } else if self.held.is_none() && seen.pending.is_some() {
            // A legacy call after all (`_meta` without the 2026-07-28 version): held.
            assert!(!modern, "a 2026-07-28 call was held: {}", show(msg));
            assert!(msg.len() <= HOLD, "held a call longer than HOLD");
            self.hold(peer, tool, id, args.clone(), run, msg, seen);
        } else if !seen.out.is_empty() {
            check_response(seen.out);
        }
        // Whatever the era, a state the engine hands out is recorded as issued.
        if let Some(token) = entries(seen.out)
            .and_then(|m| m.into_iter().find(|(k, _)| k == "result"))
            .and_then(|(_, res)| entries(res.get().as_bytes()))
            .and_then(|res| res.into_iter().rev().find(|(k, _)| k == "requestState"))
            .map(|(_, v)| v.get().to_string())
        {
            let text = json_str(&token).expect("a string");
            let expiry = state_format(&text).unwrap_or_else(|| panic!("a requestState {text:?}"));
            assert!(
                modern,
                "a requestState outside 2026-07-28: {}",
                show(seen.out)
            );
            assert_eq!(expiry, self.now + self.timeout, "the state's expiry");
            assert!(
                !self.states.iter().any(|s| s.token == token),
                "a requestState came back: {token}"
            );
            self.states.push(Issued {
                token,
                tool,
                args,
                expiry,
            });
        }
    }

    /// The 2026-07-28 rules for a call that asks first (`CONFIRMATION.md`, confirm.rs docs).
    fn grant(
        &self,
        tool: usize,
        args: &Option<String>,
        members: &[(String, Box<serde_json::value::RawValue>)],
        meta: Option<&J>,
    ) -> Grant {
        let elicits = meta
            .and_then(|m| m.get(CLIENT_CAPABILITIES))
            .and_then(J::as_object)
            .is_some_and(|c| c.iter().any(|(k, v)| k == "elicitation" && v.is_object()));
        if !elicits {
            return Grant::NoElicitation;
        }
        let (Ok(state), Ok(responses)) = (
            unique(members, "requestState"),
            unique(members, "inputResponses"),
        ) else {
            return Grant::Duplicate;
        };
        let Some(state) = state else {
            return Grant::Ask;
        };
        let Some(issued) = self.states.iter().find(|s| {
            s.token == state && s.tool == tool && s.args == *args && self.now <= s.expiry
        }) else {
            return Grant::BadState;
        };
        let answer = responses.and_then(J::parse_str).and_then(|r| {
            r.as_object()
                .and_then(|m| unique_j(m, "confirm").ok().flatten().cloned())
        });
        match answer.map(|a| read_answer(&a)) {
            None => Grant::Ask,
            Some(Said::Yes) => {
                // The engine keeps a record in whole seconds, rounded up, plus one: its slot
                // stays taken up to two seconds past the state's expiry (never shorter).
                let live = |(_, e): &&(String, u64)| {
                    (e.div_ceil(1000) + 1).saturating_mul(1000) >= self.now
                };
                if self
                    .spent
                    .iter()
                    .filter(live)
                    .any(|(t, _)| *t == issued.token)
                {
                    Grant::Used
                } else if self.spent.iter().filter(live).count() >= SPENT {
                    Grant::Full
                } else {
                    Grant::Run(issued.token.clone(), issued.expiry)
                }
            }
            Some(_) => Grant::Refused,
        }
    }

    /// A client's response: the answer to the held question only when it is the owner's, with
    /// the question's id.
    fn response(
        &mut self,
        peer: Peer,
        msg: &[u8],
        members: &[(String, Box<serde_json::value::RawValue>)],
        seen: &Seen<'_>,
    ) {
        let id = unique(members, "id")
            .ok()
            .flatten()
            .expect("a response has one id");
        let (result, error) = (unique(members, "result"), unique(members, "error"));
        let answers = self.held.as_ref().is_some_and(|h| {
            h.asked
                && h.device_answer.is_none()
                && h.owner == peer
                && h.token.as_deref() == Some(id)
        }) && result.is_ok()
            && error.is_ok();
        if !answers {
            assert!(
                seen.out.is_empty() && seen.runs.is_empty(),
                "a response that answers nothing had an effect: {} -> {}",
                show(msg),
                show(seen.out)
            );
            return;
        }
        let said = match (result, error) {
            (_, Ok(Some(_))) => Said::Cancel,
            (Ok(Some(r)), _) => read_answer(&J::parse_str(r).expect("valid")),
            _ => Said::Malformed,
        };
        if said == Said::Yes && self.asynch {
            // Approved: the call waits for the next poll, which runs it (or, without room for
            // its answer, refuses it) and answers the caller.
            assert!(
                seen.out.is_empty() && seen.runs.is_empty(),
                "an async yes is answered by the next poll: {} -> {}",
                show(msg),
                show(seen.out)
            );
            self.held.as_mut().expect("held").device_answer = Some(true);
            return;
        }
        let h = self.held.take().expect("held");
        let r = check_response(seen.out);
        assert_eq!(
            r.id, h.id,
            "the answer to the owner's response is the held call's"
        );
        if said == Said::Yes && self.room(&h) {
            self.ran_after_yes(&h, seen.runs, msg);
            assert!(!refused(&r) || seen.runs.is_empty(), "{}", show(seen.out));
        } else {
            assert!(seen.runs.is_empty(), "ran after {said:?}: {}", show(msg));
            assert!(
                refused(&r),
                "a {said:?} answered as a success: {}",
                show(seen.out)
            );
        }
    }

    /// A held call runs with its message copied to the end of the output buffer and its answer
    /// written in front of it: a yes that leaves less than `MIN_OUT_LEN` there is refused,
    /// saying so (nothing runs).
    fn room(&self, h: &Held) -> bool {
        self.out_len.saturating_sub(h.len) >= mcp_core::MIN_OUT_LEN
    }

    /// After a yes the held call runs once (or is answered from the cache: an identical call
    /// of the owner ran meanwhile).
    fn ran_after_yes(&mut self, h: &Held, runs: &[Run], what: &[u8]) {
        let record = RanCall {
            peer: h.owner,
            tool: h.tool,
            id: h.id.clone(),
            args: h.args.clone(),
            modern: None,
        };
        match runs {
            [r] => {
                assert_eq!(*r, h.run, "after a yes another call ran: {}", show(what));
                self.ran.push(record);
                self.confirmed_runs += 1;
            }
            [] => assert!(
                self.ran.contains(&record),
                "a yes did not run the held call: {}",
                show(what)
            ),
            _ => unreachable!(),
        }
    }

    /// `poll_with` at `now`, until it wrote nothing: `msgs` is what it wrote, `runs` what ran.
    pub fn poll(&mut self, now: u64, msgs: &[Polled], runs: &[Run], pending: Option<Pending>) {
        self.now = self.now.max(now);
        for m in msgs {
            check_outgoing(&m.bytes);
        }
        let what = format!("poll at {now}");
        let Some(h) = self.held.as_mut() else {
            assert!(
                msgs.is_empty() && runs.is_empty(),
                "{what}: nothing was owed, yet {}",
                msgs.first().map_or(String::new(), |m| show(&m.bytes))
            );
            self.check_pending(pending, what.as_bytes());
            return;
        };
        if !h.asked && h.shown.is_none() {
            h.shown = Some(self.now);
        }
        let h = h.clone();
        let settled = match (h.device_answer, self.now >= h.deadline) {
            (Some(yes), _) => Some(yes),
            (None, true) => Some(false),
            (None, false) => None,
        };
        match settled {
            None => {
                assert!(runs.is_empty(), "{what}: ran without an answer");
                if h.owed.is_some_and(|u| self.now >= u) {
                    assert_eq!(msgs.len(), 1, "{what}: the owed answer");
                    let m = &msgs[0];
                    assert_eq!(m.to, Some(h.owner), "the answer goes to the caller");
                    let r = check_response(&m.bytes);
                    assert_eq!(r.id, h.id);
                    let res = r.result.expect("a result");
                    assert_eq!(
                        res["structuredContent"]["status"].as_str(),
                        Some("awaiting_confirmation"),
                        "{res}"
                    );
                    // The question, its arguments read again from the held message.
                    let tag = pending.map_or(0, |p| p.client.tag);
                    let question =
                        self.question_text(h.tool, &h.args, h.label.clone(), h.owner, tag);
                    check_question(&res, question.as_deref());
                    // The client heard that it waits: the person has at least the margin from now.
                    let held = self.held.as_mut().expect("held");
                    held.owed = None;
                    held.deadline = held.deadline.max(self.now + self.margin);
                } else {
                    assert!(msgs.is_empty(), "{what}: wrote {}", show(&msgs[0].bytes));
                }
            }
            Some(yes) => {
                self.held = None;
                let yes = yes && self.room(&h);
                if yes {
                    self.ran_after_yes(&h, runs, what.as_bytes());
                } else {
                    assert!(runs.is_empty(), "{what}: ran after a no or a timeout");
                }
                assert_eq!(msgs.len(), 1, "{what}: one outcome");
                let m = &msgs[0];
                assert_eq!(m.to, Some(h.owner), "the outcome goes to the caller only");
                assert_eq!(m.ran, runs.first().map(|r| self.tools[r.tool].name));
                let ran = !runs.is_empty();
                if h.asked || h.owed.is_some() {
                    let r = check_response(&m.bytes);
                    assert_eq!(r.id, h.id, "the call's own answer");
                    assert_eq!(refused(&r), !yes, "{}", show(&m.bytes));
                } else {
                    let v = J::parse(&m.bytes).expect("JSON");
                    assert_eq!(v["method"].as_str(), Some("notifications/message"));
                    let data = &v["params"]["data"];
                    assert_eq!(v["params"]["logger"].as_str(), Some("confirmation"));
                    assert_eq!(data["tool"].as_str(), Some(self.tools[h.tool].name));
                    assert_eq!(data["confirmed"], J::Bool(yes), "{v}");
                    if ran {
                        assert_eq!(data["result"].get("isError"), None, "{v}");
                    }
                }
            }
        }
        self.check_pending(pending, what.as_bytes());
    }

    /// A press at `pressed` answering `approval`; `taken` is what `confirm_on_device` returned.
    /// Taken only for the question the device shows, strictly after it was shown and once it was
    /// shown for the minimum, not within the minimum of the previous press (a bounce, or the
    /// second half of a double press), and before the engine gives up on it.
    pub fn press(&mut self, approval: u64, yes: bool, pressed: u64, taken: bool) {
        let min = self.min_shown;
        let bounce = self
            .last_press
            .is_some_and(|last| min > 0 && pressed < last + min);
        self.last_press = Some(pressed);
        let expected = !bounce
            && self.held.as_ref().is_some_and(|h| {
                !h.asked
                    && h.device_answer.is_none()
                    && h.approval == approval
                    && h.shown.is_some_and(|s| pressed > s && pressed - s >= min)
                    && pressed < h.deadline
            });
        assert_eq!(
            taken, expected,
            "press at {pressed} for {approval:016x} (held: {:?})",
            self.held
        );
        if taken {
            self.held.as_mut().expect("held").device_answer = Some(yes);
        }
    }

    /// `forget_confirmation(peer)` returned `gone`.
    pub fn forget(&mut self, peer: Peer, gone: bool, pending: Option<Pending>) {
        let expected = self.held.as_ref().is_some_and(|h| h.owner == peer);
        assert_eq!(gone, expected, "forget_confirmation");
        if gone {
            self.held = None;
        }
        self.check_pending(pending, b"forget");
    }

    /// What the device shows is the held call.
    pub fn check_pending(&self, pending: Option<Pending>, after: &[u8]) {
        match (&self.held, pending) {
            (None, None) => {}
            // Approved by its client on the async path: no longer a question.
            (Some(h), None) if h.asked && h.device_answer == Some(true) => {}
            (Some(h), Some(p)) => {
                let t = &self.tools[h.tool];
                assert_eq!(p.approval.get(), h.approval, "after {}", show(after));
                assert_eq!(p.tool, t.name);
                assert_eq!(Some(p.message), t.question);
                assert_eq!(p.on_device, !h.asked, "after {}", show(after));
                assert_eq!(
                    p.shown_ms,
                    h.shown.filter(|_| !h.asked),
                    "shown since, after {}",
                    show(after)
                );
                assert_eq!(p.deadline_ms, h.deadline, "deadline, after {}", show(after));
                assert_eq!(p.owner, h.owner, "owner, after {}", show(after));
                assert_eq!(u64::from(p.min_shown_ms), self.min_shown);
                if let Some(label) = &h.label {
                    let name = p.client.name.as_str();
                    assert_eq!(name, label, "the client's name, after {}", show(after));
                }
                if let Some(&(_, tag)) = self.tags.iter().find(|(p, _)| *p == h.owner) {
                    assert_eq!(p.client.tag, tag, "one tag per client");
                }
            }
            (h, p) => panic!(
                "the model holds {h:?}, the engine shows {p:?}, after {}",
                show(after)
            ),
        }
    }

    /// The state of the model's hold, for the target's choices (deadline, owed-by).
    pub fn times(&self) -> Option<(u64, Option<u64>, Option<u64>)> {
        self.held.as_ref().map(|h| (h.deadline, h.owed, h.shown))
    }
}

/// A waiting answer's `structuredContent.question` (and its first text) say the question.
fn check_question(res: &J, question: Option<&str>) {
    let said = res["structuredContent"]["question"]
        .as_str()
        .expect("the question");
    assert!(said.contains(" (asked by "), "{said}");
    if let Some(q) = question {
        assert_eq!(said, q);
        let text = match res.get("content") {
            Some(J::Arr(items)) => items.first().and_then(|i| i["text"].as_str()),
            _ => None,
        };
        let text = text.expect("a first text");
        assert!(text.contains(q), "{text}");
    }
}
