//! Human confirmation (feature `confirm`): a person's yes before a tool acts
//! ([`Tool::confirm`](crate::Tool::confirm)), obtained the way the client allows.
//!
//! - **2025-06-18 / 2025-11-25 with `elicitation`** (declared at `initialize`): the call is held
//!   (its message bytes, up to `HOLD`), and the engine writes an `elicitation/create` request —
//!   form mode, one boolean — as the answer to the call's message (`Handled::deferred`: the call's
//!   own response comes later). The client's response is a message like any other: on `accept`
//!   with `true` the held call is dispatched again, confirmed, and its response is the answer to
//!   the client's response message (a transport routes it by the id inside, as it routes a parked
//!   `tasks/result`); on `decline`, `cancel`, an error or no answer within
//!   [`Config::confirm_timeout_ms`](super::Config) nothing runs and the call's response says so.
//! - **2026-07-28 with `elicitation`** in the request's capabilities: nothing is held. The call
//!   is answered `resultType: "input_required"` with the same question and a `requestState` that
//!   binds the tool, the exact `arguments` bytes and an expiry under a keyed MAC (SipHash-2-4,
//!   keyed by [`Server::set_entropy`](super::Server::set_entropy)); the client retries with the
//!   same arguments, the state and `inputResponses.confirm`. A state that fails verification is
//!   -32602; a client without elicitation gets -32021 naming it.
//! - **Without elicitation** (xiaozhi backends, 2024-11-05, clients that did not declare it): the
//!   call is held and answered at once with a result the model can read aloud ("Press the button
//!   on the device within 30 s to confirm: Reboot the device?"; `structuredContent.status`
//!   `awaiting_confirmation`). The firmware reports the button with
//!   [`Server::confirm_on_device`](super::Server::confirm_on_device); the next
//!   [`poll`](super::Server::poll) runs the held call (or not) and writes the outcome as a
//!   `notifications/message` (logger `confirmation`) with the call's result.
//!
//! One call can wait for a person at a time: a second one meanwhile is refused, saying so.

use super::{Caller, Era, Handled, Peer, Principal, Respond, members};
use crate::registry::Confirm;
use crate::wire::json::{Json, JsonStr, Kind};
use crate::wire::writer::Writer;

/// The `inputRequests` / `inputResponses` key and the boolean property of the question.
pub(crate) const KEY: &str = "confirm";

/// A call held for a person's answer.
pub(crate) struct Held<const B: usize> {
    bytes: [u8; B],
    len: usize,
    principal: Principal,
    peer: Peer,
    tool: &'static str,
    message: &'static str,
    /// `Some(n)`: `elicitation/create` went out with id `"confirm-n"`; `None`: on the device.
    elicitation: Option<u32>,
    /// When the engine gives up (ms, engine clock).
    deadline_ms: u64,
}

/// The confirmation state of a server.
pub(crate) struct Confirmations<const B: usize> {
    held: Option<Held<B>>,
    /// The device's answer to a held call, reported by the firmware, acted on by `poll`.
    device_answer: Option<bool>,
    next: u32,
    key: (u64, u64),
}

impl<const B: usize> Confirmations<B> {
    pub(crate) const fn new() -> Self {
        Confirmations {
            held: None,
            device_answer: None,
            next: 0,
            key: (0, 0),
        }
    }

    pub(crate) fn set_key(&mut self, seed: [u8; 16]) {
        let (a, b) = seed.split_at(8);
        let word = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
        self.key = (word(a) ^ 0x636f_6e66_6972_6d21, word(b));
    }

    /// The MAC of a `requestState`: tool, arguments as sent, expiry.
    fn mac(&self, tool: &str, arguments: &[u8], expiry_ms: u64) -> u64 {
        use core::hash::Hasher as _;
        let mut h = siphasher::sip::SipHasher24::new_with_keys(self.key.0, self.key.1);
        h.write(tool.as_bytes());
        h.write_u8(0xFF);
        h.write(arguments);
        h.write_u8(0xFF);
        h.write_u64(expiry_ms);
        h.finish()
    }
}

/// What a person is being asked, for a firmware's display (see
/// [`Server::confirmation`](super::Server::confirmation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pending {
    /// The tool that waits.
    pub tool: &'static str,
    /// The question.
    pub message: &'static str,
    /// `true`: the answer must come from the device ([`Server::confirm_on_device`](super::Server::confirm_on_device));
    /// `false`: the client asks the person.
    pub on_device: bool,
    /// When the engine gives up (engine clock, ms).
    pub deadline_ms: u64,
}

/// What the gate decided about a call.
pub(crate) enum Gate<'o, 'i> {
    /// Run it.
    Pass(Respond<'o, 'i>),
    /// Answered (held for the device, asked again, refused): the length written.
    Answered(usize),
    /// The question went to the client (`elicitation/create`): the length written; the call's
    /// own response comes later.
    Asked(usize),
}

/// `{"type":"object","properties":{"confirm":{"type":"boolean",…}},"required":["confirm"]}`.
fn write_schema(w: &mut Writer<'_>, message: &str) {
    w.raw(b"{\"type\":\"object\",\"properties\":{\"confirm\":{\"type\":\"boolean\",\"title\":\"Confirm\",\"description\":");
    w.string(message);
    w.raw(b",\"default\":false}},\"required\":[\"confirm\"]}");
}

/// The params of `elicitation/create` (no braces around): message and schema.
fn write_elicitation_params(w: &mut Writer<'_>, message: &str, form_mode: bool) {
    if form_mode {
        w.raw(b"\"mode\":\"form\",");
    }
    w.raw(b"\"message\":");
    w.string(message);
    w.raw(b",\"requestedSchema\":");
    write_schema(w, message);
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
        }
    }
}

/// Writes the `requestState` for a call: `v1.<expiry hex>.<mac hex>`.
fn write_state(w: &mut Writer<'_>, expiry_ms: u64, mac: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hex = |w: &mut Writer<'_>, v: u64| {
        for i in 0..16 {
            let n = ((v >> (60 - 4 * i)) & 0xF) as usize;
            w.raw(HEX.get(n..=n).unwrap_or(b"0"));
        }
    };
    w.raw(b"\"v1.");
    hex(w, expiry_ms);
    w.raw(b".");
    hex(w, mac);
    w.raw(b"\"");
}

/// Reads a `requestState` written by [`write_state`].
fn read_state(s: JsonStr<'_>) -> Option<(u64, u64)> {
    let raw = s.raw();
    if raw.len() != 36 || raw.get(..3)? != b"v1." || raw.get(19)? != &b'.' {
        return None;
    }
    let hex = |b: &[u8]| -> Option<u64> {
        let text = core::str::from_utf8(b).ok()?;
        if !text.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        u64::from_str_radix(text, 16).ok()
    };
    Some((hex(raw.get(3..19)?)?, hex(raw.get(20..36)?)?))
}

impl<
    't,
    C,
    const N: usize,
    const TASKS: usize,
    const CACHE: usize,
    const CACHE_BYTES: usize,
    const RES: usize,
    const LISTEN: usize,
    const HOLD: usize,
> super::Server<'t, C, N, TASKS, CACHE, CACHE_BYTES, RES, LISTEN, HOLD>
{
    /// The call waiting for a person's answer, if any (for a display: "Press the button to
    /// confirm: Reboot the device?").
    pub fn confirmation(&self) -> Option<Pending> {
        self.confirm.held.as_ref().map(|h| Pending {
            tool: h.tool,
            message: h.message,
            on_device: h.elicitation.is_none(),
            deadline_ms: h.deadline_ms,
        })
    }

    /// The person answered on the device (a button; `false` for a "no" button). The next
    /// [`poll`](Self::poll) runs the held call when `yes`, or drops it, and writes the outcome.
    /// Returns `false` when no call waits for an answer on the device.
    pub fn confirm_on_device(&mut self, yes: bool) -> bool {
        match &self.confirm.held {
            Some(h) if h.elicitation.is_none() => {
                self.confirm.device_answer = Some(yes);
                true
            }
            _ => false,
        }
    }

    /// The gate of `tools/call`: after validation, before the handler.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site in `prepare`; the call's parts"
    )]
    pub(super) fn confirm_gate<'o, 'i>(
        &mut self,
        confirm: &Confirm,
        tool: &'static str,
        arguments: Option<Json<'i>>,
        params: Option<Json<'i>>,
        caller: &Caller<'i>,
        respond: Respond<'o, 'i>,
    ) -> Gate<'o, 'i> {
        if caller.confirmed || caller.principal == Principal::User {
            return Gate::Pass(respond);
        }
        match respond.era {
            Era::Modern(m) => {
                let elicits = m.caps.and_then(|c| c.members()).is_some_and(|mut c| {
                    c.any(|(k, v)| k.eq_str("elicitation") && v.kind() == Kind::Object)
                });
                self.modern_gate(confirm, tool, arguments, params, elicits, respond)
            }
            Era::Legacy => self.hold(confirm, tool, caller, respond),
        }
    }

    /// 2026-07-28: `input_required` with a signed state, or the retry that carries the answer.
    fn modern_gate<'o, 'i>(
        &mut self,
        confirm: &Confirm,
        tool: &'static str,
        arguments: Option<Json<'i>>,
        params: Option<Json<'i>>,
        elicits: bool,
        respond: Respond<'o, 'i>,
    ) -> Gate<'o, 'i> {
        if !elicits {
            return Gate::Answered(respond.error_with(
                super::ErrorCode::MissingRequiredClientCapability,
                |w| {
                    w.text("Missing required client capability: elicitation (this tool asks a person first: ");
                    w.text(confirm.message());
                    w.text(")");
                },
                Some(|w: &mut Writer<'_>| w.raw(b"{\"requiredCapabilities\":{\"elicitation\":{}}}")),
            ));
        }
        let arguments = arguments.map_or(&b""[..], |a| a.raw());
        let Ok([state, responses]) = members(params, ["requestState", "inputResponses"]) else {
            return Gate::Answered(respond.error(super::ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: duplicate member");
            }));
        };
        if let Some(state) = state {
            let verified = state
                .as_str()
                .and_then(read_state)
                .filter(|&(expiry, mac)| {
                    mac == self.confirm.mac(tool, arguments, expiry) && self.now_ms <= expiry
                });
            if verified.is_none() {
                return Gate::Answered(respond.error(super::ErrorCode::InvalidParams, |w| {
                    w.text("Invalid params: requestState failed verification or expired; call the tool again without it");
                }));
            }
            let answer = members(responses.filter(|r| r.kind() == Kind::Object), [KEY])
                .ok()
                .and_then(|[a]| a);
            match answer.map(|a| Answer::read(Some(a))) {
                Some(Answer::Yes) => return Gate::Pass(respond),
                Some(other) => {
                    return Gate::Answered(respond.result(|w| refusal(w, other.refusal(), false)));
                }
                // A valid state without the answer: ask again.
                None => {}
            }
        }
        let expiry = self
            .now_ms
            .saturating_add(u64::from(self.config.confirm_timeout_ms));
        let mac = self.confirm.mac(tool, arguments, expiry);
        Gate::Answered(respond.result_typed("input_required", |w| {
            w.raw(
                b"\"inputRequests\":{\"confirm\":{\"method\":\"elicitation/create\",\"params\":{",
            );
            write_elicitation_params(w, confirm.message(), true);
            w.raw(b"}}},\"requestState\":");
            write_state(w, expiry, mac);
        }))
    }

    /// Legacy revisions: hold the call, and ask the client (elicitation) or the device.
    fn hold<'o, 'i>(
        &mut self,
        confirm: &Confirm,
        tool: &'static str,
        caller: &Caller<'i>,
        respond: Respond<'o, 'i>,
    ) -> Gate<'o, 'i> {
        let error_member = self.effective_revision() == super::Revision::V2024_11_05;
        if self.confirm.held.is_some() {
            return Gate::Answered(respond.result(|w| {
                refusal(w, "Another action is waiting for a person's confirmation; answer that one first. Nothing was done", error_member);
            }));
        }
        let raw = caller.raw;
        let mut bytes = [0u8; HOLD];
        let Some(dst) = bytes.get_mut(..raw.len()) else {
            return Gate::Answered(respond.result(|w| {
                refusal(w, "This call is too large for the device to hold while it asks for confirmation; nothing was done", error_member);
            }));
        };
        dst.copy_from_slice(raw);
        let elicits = self.client_elicits;
        let elicitation = elicits.then(|| {
            self.confirm.next = self.confirm.next.wrapping_add(1);
            self.confirm.next
        });
        let timeout = self.config.confirm_timeout_ms;
        self.confirm.held = Some(Held {
            bytes,
            len: raw.len(),
            principal: caller.principal,
            peer: caller.peer,
            tool,
            message: confirm.message(),
            elicitation,
            deadline_ms: self.now_ms.saturating_add(u64::from(timeout)),
        });
        self.confirm.device_answer = None;
        let Respond { out, .. } = respond;
        match elicitation {
            Some(n) => {
                // The request to the client is this message's answer; the call's comes later.
                let mut w = Writer::new(out);
                w.raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"confirm-");
                w.uint(u64::from(n));
                w.raw(b"\",\"method\":\"elicitation/create\",\"params\":{");
                let form = self.effective_revision() >= super::Revision::V2025_11_25;
                write_elicitation_params(&mut w, confirm.message(), form);
                w.raw(b"}}");
                Gate::Asked(if w.fits() { w.needed() } else { 0 })
            }
            None => {
                let id = respond.id;
                let (era, info) = (respond.era, respond.info);
                Gate::Answered(super::finish(out, id, "", |w| {
                    if let Some(id) = id {
                        crate::wire::response::write_result(w, id, |w| {
                            super::write_object(w, era, info, "complete", |w| {
                                awaiting(w, confirm.message(), timeout);
                            });
                        });
                    }
                }))
            }
        }
    }

    /// A client's response: the answer to `elicitation/create`, when one is awaited.
    pub(super) fn on_response(
        &mut self,
        message: &[u8],
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn super::Notify,
        handled: &mut Handled<'_>,
    ) -> usize {
        let Some(n) = self.confirm.held.as_ref().and_then(|h| h.elicitation) else {
            return 0;
        };
        let Ok(root) = Json::parse(message, self.config.max_depth) else {
            return 0;
        };
        let Ok([id, result, error]) = members(Some(root), ["id", "result", "error"]) else {
            return 0;
        };
        let mut want = [0u8; 24];
        let mut w = Writer::new(&mut want);
        w.raw(b"\"confirm-");
        w.uint(u64::from(n));
        w.raw(b"\"");
        let matches = w
            .written()
            .zip(id)
            .is_some_and(|(want, id)| id.raw() == want);
        if !matches {
            return 0;
        }
        let answer = if error.is_some() {
            Answer::Cancel
        } else {
            Answer::read(result)
        };
        self.settle(answer, ctx, out, notify, handled, false)
    }

    /// Ends a held call: runs it on `Yes`, else answers why not. `on_device`: the outcome is a
    /// notification (the call was answered already).
    pub(super) fn settle(
        &mut self,
        answer: Answer,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn super::Notify,
        handled: &mut Handled<'_>,
        on_device: bool,
    ) -> usize {
        let Some(held) = self.confirm.held.take() else {
            return 0;
        };
        self.confirm.device_answer = None;
        let bytes = held.bytes.get(..held.len).unwrap_or_default();
        if answer == Answer::Yes {
            let input = super::Input::new(bytes, held.principal).peer(held.peer);
            let mut ran = None;
            let n = match self.dispatch_confirmed(input, ctx, out, notify) {
                Ok(h) => {
                    ran = h.ran;
                    handled.receipt = h.receipt;
                    h.len
                }
                Err(_) => 0,
            };
            handled.ran = ran;
            if on_device {
                return wrap_outcome(out, n, held.tool, true, "");
            }
            return n;
        }
        if on_device {
            return wrap_outcome(out, 0, held.tool, false, answer.refusal());
        }
        // The call's own response: a refusal, for the id it was sent with.
        let Ok(crate::wire::request::Message::Request(req)) =
            crate::wire::request::Message::parse(bytes, self.config.max_depth)
        else {
            return 0;
        };
        let id = req.id;
        let info = (self.config.name, self.config.version);
        let error_member = self.effective_revision() == super::Revision::V2024_11_05;
        super::finish(out, Some(id), "", |w| {
            crate::wire::response::write_result(w, id, |w| {
                super::write_object(w, Era::Legacy, info, "complete", |w| {
                    refusal(w, answer.refusal(), error_member);
                });
            });
        })
    }

    /// `poll`'s part: a device answer to act on, or a held call that timed out.
    pub(super) fn poll_confirmation(&mut self, ctx: &mut C, out: &mut [u8]) -> usize {
        let Some(held) = &self.confirm.held else {
            return 0;
        };
        let on_device = held.elicitation.is_none();
        let expired = self.now_ms >= held.deadline_ms;
        let mut handled = Handled::empty();
        let mut ignore = |_: &[u8]| {};
        match (self.confirm.device_answer, expired) {
            (Some(yes), _) if on_device => {
                let answer = if yes { Answer::Yes } else { Answer::No };
                self.settle(answer, ctx, out, &mut ignore, &mut handled, true)
            }
            (_, true) => self.settle(
                Answer::Timeout,
                ctx,
                out,
                &mut ignore,
                &mut handled,
                on_device,
            ),
            _ => 0,
        }
    }
}

/// A refusal result's members: the reason, `isError: true`; with `error_member` (2024-11-05) the
/// reason again as `error`, where xiaozhi's backends read a failed call's reason (as
/// `render_result_for` writes it for any failed call).
fn refusal(w: &mut Writer<'_>, why: &str, error_member: bool) {
    w.raw(b"\"content\":[{\"type\":\"text\",\"text\":");
    w.string(why);
    w.raw(b"}],\"isError\":true");
    if error_member {
        w.raw(b",\"error\":");
        w.string(why);
    }
}

/// The immediate answer of a call held for the device's button.
fn awaiting(w: &mut Writer<'_>, question: &str, timeout_ms: u32) {
    w.raw(b"\"content\":[{\"type\":\"text\",\"text\":");
    w.begin_string();
    w.text("Waiting for a person: press the button on the device within ");
    w.uint(u64::from(timeout_ms / 1000));
    w.text(" s to confirm: ");
    w.text(question);
    w.text(" Nothing has been done yet.");
    w.end_string();
    w.raw(b"}],\"structuredContent\":{\"status\":\"awaiting_confirmation\",\"confirm_on_device_within_s\":");
    w.uint(u64::from(timeout_ms / 1000));
    w.raw(b",\"question\":");
    w.string(question);
    w.raw(b"},\"isError\":false");
}

/// Turns the held call's outcome into a `notifications/message` (the call was answered already):
/// `out[..n]` holds the call's response when it ran.
fn wrap_outcome(out: &mut [u8], n: usize, tool: &str, confirmed: bool, why: &str) -> usize {
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
    let mut w = Writer::new(head);
    w.raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"notice\",\"logger\":\"confirmation\",\"data\":{\"tool\":");
    w.string(tool);
    w.raw(b",\"confirmed\":");
    w.bool(confirmed);
    if !why.is_empty() {
        w.raw(b",\"reason\":");
        w.string(why);
    }
    if len > 0 {
        w.raw(if is_result {
            b",\"result\":"
        } else {
            b",\"error\":"
        });
        w.raw(moved.get(..len).unwrap_or_default());
    }
    w.raw(b"}}}");
    if w.fits() { w.needed() } else { 0 }
}
