//! Conversations: what a client that can receive nothing after an answer is owed, and what ends
//! when a client's conversation ends.
//!
//! **Later outcomes, for a client that receives only answers.** Some clients hear nothing but
//! the answers to their own requests: an MCP endpoint relays a call's answer back to the agent
//! that made it and drops every notification and every message the device starts. Such a
//! link's engine is built with [`Config::answers_only`].
//! What the engine learns after such a client's call was answered — a press on a call answered
//! "waiting for a person", a refusal or a timeout after it, a long-running action that ended
//! after its call was answered "started" — cannot be sent to it. So it is **owed**: the
//! outcome's sentence (the tool, what came of it, the value and the evidence: the same sentence
//! a `notifications/message` of the outcome would carry) is kept, and the first text of that
//! client's next tool call's answer begins with it —
//! `Outcome of an earlier call: self.relay.set, confirmed: true — measured: true (commanded
//! true). This call: true — read back: 40` — and, at 2024-11-05, so does the
//! `error` of a failed one (a xiaozhi backend speaks it): [`Server::tell_owed`], which the
//! transport applies to each answer it sends such a client. Nothing runs twice for it; the
//! outcome goes to no other client; the answer that carried it is the one remembered for
//! retransmissions without it (a replay carries what is still owed). The "waiting" answer and
//! the "started as task" answer tell the model so. An error answer (an unknown tool, a
//! malformed request) carries nothing: what is owed waits for a tool result.
//!
//! Where it is kept: a held call's outcome in the held call's bytes (`HOLD`, after the message
//! of a call held meanwhile; cut with `…` when the room is short, dropped when a call to hold
//! needs the room), a task's in its task entry (until the task's `ttl`).
//!
//! **The end of a conversation.** A conversation is what a transport says it is: a xiaozhi
//! device's connection (a new hello is a new one), an MCP endpoint's agent session (from one
//! `initialize` to the next, outliving a dropped link), an HTTP or MQTT client's MCP session.
//! When it ends the transport calls [`Server::end_conversation`]: the question its held call
//! put to a person is withdrawn (a later press runs nothing), and nothing it was owed or would
//! have been sent — an outcome, a task's status or progress, a parked answer, a listen stream —
//! goes to it or to anyone else.

#[cfg(doc)]
use super::Config;
use super::params::members;
use super::{Capacities, Peer, Server};
use crate::wire::json::{DEFAULT_MAX_DEPTH, Json};
use crate::wire::writer::Writer;

/// Before each owed outcome's sentence in the first text.
pub(crate) const EARLIER: &str = "Outcome of an earlier call: ";
/// After it.
const EARLIER_END: &str = ". ";
/// Before the answer's own first text, once something owed was told.
const THIS_CALL: &str = "This call: ";

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// Something is owed to `peer` (an outcome that came after its call's answer). Always
    /// `false` for an engine that neither holds calls nor runs tasks.
    pub(super) fn owes(&self, peer: Peer) -> bool {
        #[cfg(feature = "confirm")]
        if super::confirm::Confirmations::<K>::ON
            && self.confirm.owed().is_some_and(|(owner, _)| owner == peer)
        {
            return true;
        }
        K::TASKS > 0 && self.tasks.owes(peer)
    }

    /// The answer `out[..len]` goes to `peer`, a client that receives only answers
    /// ([`Config::answers_only`](super::Config::answers_only)): when it is a tool result and
    /// something is owed to `peer`, its first text (and a 2024-11-05 failure's `error`) now
    /// begins with what is owed, which is no longer owed. Returns the answer's length now. When
    /// the answer is not a tool result, or the buffer has no room for the words, nothing changes:
    /// what is owed waits for the next answer.
    ///
    /// A transport whose clients receive only answers calls it on the answer to every message
    /// ([`handle_with`](Self::handle_with), [`handle_async`](Self::handle_async)) before it
    /// sends it — the MCP endpoint's `transport::endpoint::Sessions::handled` does; what
    /// [`poll_with`](Self::poll_with) writes has it already. (Kept off the dispatch itself, which
    /// every message of every transport goes through.)
    #[inline(never)]
    pub fn tell_owed(&mut self, peer: Peer, out: &mut [u8], len: usize) -> usize {
        if !self.owes(peer) {
            return len;
        }
        let Some((text_at, error_at)) = out.get(..len).and_then(text_spots) else {
            return len;
        };
        // The words, written after the answer (a string token: its quotes are dropped).
        let Some(room) = out.get_mut(len..) else {
            return len;
        };
        let mut w = Writer::new(room);
        w.begin_string();
        #[cfg(feature = "confirm")]
        if let Some((_, sentence)) = self.confirm.owed().filter(|(owner, _)| *owner == peer) {
            w.text(EARLIER);
            w.plain(sentence);
            w.text(EARLIER_END);
        }
        if K::TASKS > 0 {
            self.tasks.write_owed(peer, &mut w, EARLIER, EARLIER_END);
        }
        w.text(THIS_CALL);
        w.end_string();
        let written = w.needed();
        if !w.fits() || written < 2 {
            return len;
        }
        let told = written - 2;
        out.copy_within(len + 1..len + 1 + told, len);
        let mut total = match insert(out, text_at, len, told) {
            Some(total) => total,
            None => return len,
        };
        if let Some(error_at) = error_at {
            let at = if error_at >= text_at {
                error_at + told
            } else {
                error_at
            };
            if total + told <= out.len() {
                out.copy_within(text_at..text_at + told, total);
                total = insert(out, at, total, told).unwrap_or(total);
            }
        }
        #[cfg(feature = "confirm")]
        if self.confirm.owed().is_some_and(|(owner, _)| owner == peer) {
            self.confirm.clear_owed();
        }
        if K::TASKS > 0 {
            self.tasks.clear_owed(peer);
        }
        total
    }

    /// The conversation of the client `peer` ended — on the xiaozhi device wire a connection (a
    /// new hello is a new one), on an MCP endpoint an agent session (one `initialize` to the
    /// next), on Streamable HTTP and MQTT the MCP session: the call it left waiting for a
    /// person is dropped — its
    /// question withdrawn from the device, a later press runs nothing — and nothing it was owed
    /// or would have been sent goes to it or to anyone else: an outcome kept for its next
    /// answer, a task's status, progress or parked answer (the task itself runs on, readable
    /// through the status tool), a listen stream. Returns whether anything was dropped.
    ///
    /// ```
    /// # use mcp_core::{Caps, Config, Server};
    /// # use mcp_core::server::Peer;
    /// let mut engine: Server<'static, (), Caps<4>> = Server::new(Config::new("d", "1"));
    /// // The link's agent session 1 ended (a new `initialize` began session 2).
    /// assert!(!engine.end_conversation(Peer::new(1)), "nothing was held or owed");
    /// ```
    pub fn end_conversation(&mut self, peer: Peer) -> bool {
        #[allow(unused_mut, reason = "changed with the features confirm and resources")]
        let mut ended = K::TASKS > 0 && self.tasks.forget_owner(peer);
        #[cfg(feature = "confirm")]
        {
            let owed = self.confirm.owed().is_some_and(|(owner, _)| owner == peer);
            ended |= self.forget_confirmation(peer) || owed;
        }
        #[cfg(feature = "resources")]
        {
            ended |= self.forget_listens(peer) > 0;
        }
        ended
    }
}

/// Moves the `n` bytes at `out[end..end + n]` to `at`, the bytes from `at` on after them;
/// returns the new end (`end + n`).
fn insert(out: &mut [u8], at: usize, end: usize, n: usize) -> Option<usize> {
    out.get_mut(at..end + n)?.rotate_right(n);
    Some(end + n)
}

/// Where, in a tool result's answer, its first text's content starts, and its `error` string's
/// (2024-11-05 failures carry one); `None` for any other answer.
fn text_spots(answer: &[u8]) -> Option<(usize, Option<usize>)> {
    let root = Json::parse(answer, DEFAULT_MAX_DEPTH).ok()?;
    let [result] = members(Some(root), ["result"]).ok()?;
    let [content, error] = members(result, ["content", "error"]).ok()?;
    let first = content?.elements()?.next()?;
    let [text] = members(Some(first), ["text"]).ok()?;
    let offset = |raw: &[u8]| (raw.as_ptr() as usize).checked_sub(answer.as_ptr() as usize);
    let text_at = offset(text?.as_str()?.raw())?;
    let error_at = error.and_then(|e| e.as_str()).and_then(|e| offset(e.raw()));
    Some((text_at, error_at))
}
