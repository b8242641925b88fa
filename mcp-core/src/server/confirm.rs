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
use crate::wire::request::Id;
use crate::wire::writer::Writer;

/// The `inputRequests` / `inputResponses` key and the boolean property of the question.
pub(crate) const KEY: &str = "confirm";

/// The confirmation state of a server: at most one call held for a person's answer.
///
/// Kept compact, since a firmware pays for it whether or not a call waits: the held message
/// (`HOLD` bytes) and 32 bytes around it. The question and the tool's name are not stored; they
/// are the registered tool's (`tool` is its index).
pub(crate) struct Confirmations<const B: usize> {
    /// The held call's message, `bytes[..len]`.
    bytes: [u8; B],
    /// When the engine gives up (ms, engine clock).
    deadline_ms: u64,
    peer: Peer,
    /// The number of the last `elicitation/create` sent (its id is `"confirm-<next>"`).
    next: u32,
    /// The held message's length; 0 when no call is held.
    len: u16,
    /// Where the call's id is in `bytes` (start, length), for its refusal.
    id: (u16, u16),
    /// The held tool's index in the registry.
    tool: u16,
    principal: Principal,
    /// `true`: the question went to the client as `elicitation/create` number `next`; `false`:
    /// the answer comes from the device.
    asked: bool,
    /// The device's answer to a held call, reported by the firmware, acted on by `poll`.
    device_answer: Option<bool>,
}

impl<const B: usize> Confirmations<B> {
    pub(crate) const fn new() -> Self {
        Confirmations {
            bytes: [0; B],
            deadline_ms: 0,
            peer: Peer::ONLY,
            next: 0,
            len: 0,
            id: (0, 0),
            tool: 0,
            principal: Principal::Model,
            asked: false,
            device_answer: None,
        }
    }

    /// `true` while a call waits for a person.
    const fn holds(&self) -> bool {
        self.len != 0
    }

    /// The first `len` bytes held (the message, when `len` is the length it was held with).
    fn message_at(&self, len: usize) -> &[u8] {
        self.bytes.get(..len).unwrap_or_default()
    }
}

/// The MAC of a `requestState`: tool, arguments as sent, expiry; keyed by the server's entropy
/// (with its own domain constant: task ids use the same seed).
fn mac(key: (u64, u64), tool: &str, arguments: &[u8], expiry_ms: u64) -> u64 {
    use core::hash::Hasher as _;
    let mut h = siphasher::sip::SipHasher24::new_with_keys(key.0 ^ 0x636f_6e66_6972_6d21, key.1);
    h.write(tool.as_bytes());
    h.write_u8(0xFF);
    h.write(arguments);
    h.write_u8(0xFF);
    h.write_u64(expiry_ms);
    h.finish()
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
        let c = &self.confirm;
        let tool = self
            .registry
            .get(usize::from(c.tool))
            .filter(|_| c.holds())?;
        Some(Pending {
            tool: tool.name(),
            message: tool.confirmation().map_or("", Confirm::message),
            on_device: !c.asked,
            deadline_ms: c.deadline_ms,
        })
    }

    /// The person answered on the device (a button; `false` for a "no" button). The next
    /// [`poll`](Self::poll) runs the held call when `yes`, or drops it, and writes the outcome.
    /// Returns `false` when no call waits for an answer on the device.
    pub fn confirm_on_device(&mut self, yes: bool) -> bool {
        let waits = self.confirm.holds() && !self.confirm.asked;
        if waits {
            self.confirm.device_answer = Some(yes);
        }
        waits
    }

    /// The gate of `tools/call`: after validation, before the handler. `tool` is the tool's
    /// index in the registry.
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site in `prepare`; the call's parts"
    )]
    #[inline(never)]
    pub(super) fn confirm_gate<'o, 'i>(
        &mut self,
        confirm: &Confirm,
        tool: usize,
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
                let name = self.registry.get(tool).map_or("", |t| t.name());
                self.modern_gate(confirm, name, arguments, params, elicits, respond)
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
        let key = self.entropy;
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
                    mac == self::mac(key, tool, arguments, expiry) && self.now_ms <= expiry
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
        let mac = self::mac(key, tool, arguments, expiry);
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
        tool: usize,
        caller: &Caller<'i>,
        respond: Respond<'o, 'i>,
    ) -> Gate<'o, 'i> {
        let error_member = self.effective_revision() == super::Revision::V2024_11_05;
        if self.confirm.holds() {
            return Gate::Answered(respond.result(|w| {
                refusal(w, "Another action is waiting for a person's confirmation; answer that one first. Nothing was done", error_member);
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
            self.confirm.bytes.get_mut(..raw.len()),
        );
        let (Ok(len), Ok(id_start), Ok(id_len), Ok(tool), Some(dst)) = fits else {
            return Gate::Answered(respond.result(|w| {
                refusal(w, "This call is too large for the device to hold while it asks for confirmation; nothing was done", error_member);
            }));
        };
        dst.copy_from_slice(raw);
        let asked = self.client_elicits;
        let timeout = self.config.confirm_timeout_ms;
        let c = &mut self.confirm;
        if asked {
            c.next = c.next.wrapping_add(1);
        }
        (c.len, c.id, c.tool) = (len, (id_start, id_len), tool);
        (c.principal, c.peer, c.asked) = (caller.principal, caller.peer, asked);
        c.deadline_ms = self.now_ms.saturating_add(u64::from(timeout));
        c.device_answer = None;
        let n = c.next;
        let Respond { out, .. } = respond;
        if asked {
            // The request to the client is this message's answer; the call's comes later.
            let mut w = Writer::new(out);
            w.raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"confirm-");
            w.uint(u64::from(n));
            w.raw(b"\",\"method\":\"elicitation/create\",\"params\":{");
            let form = self.effective_revision() >= super::Revision::V2025_11_25;
            write_elicitation_params(&mut w, confirm.message(), form);
            w.raw(b"}}");
            return Gate::Asked(if w.fits() { w.needed() } else { 0 });
        }
        let id = respond.id;
        let (era, info) = (respond.era, respond.info);
        Gate::Answered(super::finish(out, id, "", |w| {
            if let Some(id) = id {
                super::write_result_object(w, id, era, info, "complete", |w| {
                    awaiting(w, confirm.message(), timeout);
                });
            }
        }))
    }

    /// A client's response: the answer to `elicitation/create`, when one is awaited. Called by
    /// `begin` after the message's own dispatch returned.
    #[inline(never)]
    pub(super) fn on_response<'i>(
        &mut self,
        message: &[u8],
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn super::Notify,
    ) -> Handled<'i> {
        let mut handled = Handled::empty();
        if !(self.confirm.holds() && self.confirm.asked) {
            return handled;
        }
        let Ok(root) = Json::parse(message, self.config.max_depth) else {
            return handled;
        };
        let Ok([id, result, error]) = members(Some(root), ["id", "result", "error"]) else {
            return handled;
        };
        let mut want = [0u8; 24];
        let mut w = Writer::new(&mut want);
        w.raw(b"\"confirm-");
        w.uint(u64::from(self.confirm.next));
        w.raw(b"\"");
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
        handled.len = self.settle(answer, ctx, out, notify, &mut handled, false);
        handled
    }

    /// Ends a held call: runs it on `Yes`, else answers why not. `on_device`: the outcome is a
    /// notification (the call was answered already).
    ///
    /// The held message is copied to the end of `out` and dispatched from there, the call's
    /// answer written in front of it: nothing of the size of `HOLD` goes on the stack, and the
    /// answer of a confirmed call has the output buffer less the held message's length.
    pub(super) fn settle(
        &mut self,
        answer: Answer,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn super::Notify,
        handled: &mut Handled<'_>,
        on_device: bool,
    ) -> usize {
        let c = &mut self.confirm;
        if !c.holds() {
            return 0;
        }
        let held = usize::from(c.len);
        let (principal, peer, (id_start, id_len)) = (c.principal, c.peer, c.id);
        c.len = 0;
        c.device_answer = None;
        let tool = self
            .registry
            .get(usize::from(c.tool))
            .map_or("", |t| t.name());
        if answer == Answer::Yes {
            let at = out.len().saturating_sub(held);
            let (head, tail) = out.split_at_mut(at);
            let Some(tail) = tail.get_mut(..held) else {
                return 0;
            };
            tail.copy_from_slice(self.confirm.message_at(held));
            let input = super::Input::new(tail, principal).peer(peer);
            let mut ran = None;
            let n = match self.dispatch_confirmed(input, ctx, head, notify) {
                Ok(h) => {
                    ran = h.ran;
                    handled.receipt = h.receipt;
                    h.len
                }
                Err(_) => 0,
            };
            handled.ran = ran;
            if on_device {
                return wrap_outcome(out, n, tool, true, "");
            }
            return n;
        }
        if on_device {
            return wrap_outcome(out, 0, tool, false, answer.refusal());
        }
        // The call's own response: a refusal, for the id it was sent with.
        let (start, len) = (usize::from(id_start), usize::from(id_len));
        let Some(id) = self.confirm.message_at(held).get(start..start + len) else {
            return 0;
        };
        let id = Id::from_checked_raw(id);
        let info = (self.config.name, self.config.version);
        let error_member = self.effective_revision() == super::Revision::V2024_11_05;
        super::finish(out, Some(id), "", |w| {
            super::write_result_object(w, id, Era::Legacy, info, "complete", |w| {
                refusal(w, answer.refusal(), error_member);
            });
        })
    }

    /// `poll`'s part: a device answer to act on, or a held call that timed out.
    pub(super) fn poll_confirmation(&mut self, ctx: &mut C, out: &mut [u8]) -> usize {
        let c = &self.confirm;
        if !c.holds() {
            return 0;
        }
        let on_device = !c.asked;
        let expired = self.now_ms >= c.deadline_ms;
        let mut handled = Handled::empty();
        let mut ignore = |_: &[u8]| {};
        match (c.device_answer, expired) {
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
