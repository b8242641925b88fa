//! The xiaozhi MCP endpoint (MCP 接入点): how a device joins a xiaozhi agent as a tool server
//! without being a voice device.
//!
//! The device connects **out** over WebSocket to the endpoint's URL — on the public service
//! `wss://api.xiaozhi.me/mcp/?token=…` (the agent's console hands it out), self-hosted
//! xinnan-tech's `mcp-endpoint-server` at `ws(s)://HOST:8004/mcp_endpoint/mcp/?token=…` — and
//! answers the plain MCP JSON-RPC that the agent's backend sends through it: one message per
//! text frame, no envelope, no hello. The endpoint rewrites every id to a string
//! (`"<uuid>_n_1"`, `"<uuid>_s_abc_1"`) and back; the engine echoes ids byte for byte, so any
//! shape goes through. This module is the link's rules, sans-IO: the caller owns the socket and
//! the clock.
//!
//! **Agent sessions** ([`Sessions`]). Every agent session of the backend sends `initialize`
//! again on the same link (`initialize` and its first `tools/call` share an id); after the
//! device reconnects, a session already going on sends only `tools/call`. So the client the
//! engine serves is the agent session, from one `initialize` to the next — not the link, which
//! may drop and come back inside one session. Each session is a peer of its own
//! ([`Peer`]): retransmissions, a held call's owner and what it is owed are
//! scoped to it, so a reused id never returns another session's remembered answer. A new
//! `initialize` ends the previous session's conversation
//! ([`Server::end_conversation`](crate::Server::end_conversation)): its question on the device is
//! withdrawn and nothing it was owed goes to the new one. A `tools/call` on a fresh link without
//! `initialize` is served under the 2024-11-05 rules, as every xiaozhi backend's call is.
//!
//! **Only answers get back.** The endpoint forwards a message from the device only when its id
//! names a waiting request; notifications and requests the device starts are dropped. So a
//! link's engine is configured for clients that receive only answers
//! ([`Config::answers_only`](crate::Config::answers_only)): an outcome that comes after a call's
//! answer (a press on a call answered "waiting", a task that ended) begins the first text of
//! that session's next call's answer, and the "waiting" answer says so.
//!
//! **Which tools an agent sees.** An agent's model gets the tools of every endpoint of the agent
//! in one list, and a long list makes it worse at choosing: a link offers the tools its engine
//! has registered, so a device that serves several agents gives each link an engine with the
//! tools that agent needs ([`admits`]: names, or patterns such as `self.relay.*`). A call to a
//! tool the link does not offer is refused as an unknown tool, because for that engine it is. The caller gives up on
//! a call after 30 s ([`CALL_TIMEOUT_MS`]): a hold budget must stay under it
//! ([`check_hold_answer`]), as on the xiaozhi device wire.
//!
//! **Close codes** ([`Policy`]). The endpoint says why it closed: 1008 — the token is refused
//! (missing, not decryptable, no agent): retrying cannot help, so the device says so once and
//! tries again only every few minutes; 1000 "新连接替换" — another link took this token (the
//! endpoint keeps one link per token): the device says so and backs off, and gives up after
//! [`MAX_REPLACED`] replacements in a row, so that two devices sharing a token do not take it
//! from each other forever; 1009 — a frame was too large: the next link sends smaller frames
//! ([`Policy::frame_cap`]); 1011 (no pong in time), 1012 (the endpoint restarts) and any other
//! end: reconnect after a jittered backoff from 1 s doubling to 30 s, back to 1 s after a
//! healthy link ([`HEALTHY_MS`]). The device answers the endpoint's pings, pings a quiet link
//! itself and declares it dead when nothing comes for a bound
//! ([`Keepalive`](super::link::Keepalive)), and closes a link before it opens the next (never
//! two links for one token: the endpoint would replace one with the other).
//!
//! ```
//! use mcp_core::transport::endpoint::{Ended, Next, Policy, Say, Sessions};
//! use mcp_core::{Caps, Config, Principal, Server};
//!
//! let config = Config::new("relay-board", "1.0").answers_only(true);
//! let mut engine: Server<'static, (), Caps<4>> = Server::new(config);
//! let mut sessions = Sessions::new(0);
//! let mut policy = Policy::new();
//! let mut out = [0u8; 1024];
//!
//! // Each text frame from the endpoint:
//! let frame = br#"{"jsonrpc":"2.0","id":"9f1c_n_1","method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}"#;
//! let handled = engine.handle_with(sessions.input(frame, Principal::Model), &mut (), &mut out, &mut |_: &[u8]| {}).unwrap();
//! let len = sessions.handled(&handled, &mut engine, &mut out); // a new agent session
//! assert!(out[..len].starts_with(br#"{"jsonrpc":"2.0","id":"9f1c_n_1","result""#));
//! // send out[..len] as one text frame
//!
//! // The endpoint closed the link with 1008: the token is refused.
//! policy.opened(1_000);
//! let Next::Wait { ms, say } = policy.ended(Ended::Closed(1008), 1_200, 7) else {
//!     unreachable!()
//! };
//! assert!(ms >= 150_000); // minutes, not a loop
//! assert_eq!(say, Some(Say::Refused));
//! ```

use super::link::Reconnect;
pub use super::xiaozhi::{CALL_TIMEOUT_MS, HoldTooLong, check_hold_answer};
use crate::server::{Capacities, Event, Handled, Input, Peer, Principal, Server};

/// The close code of a link another link replaced (the endpoint's reason: "新连接替换").
pub const CLOSE_REPLACED: u16 = 1000;
/// The close code of a refused token (missing, not decryptable, naming no agent).
pub const CLOSE_REFUSED: u16 = 1008;
/// The close code of a frame over the peer's limit (RFC 6455 "message too big").
pub const CLOSE_TOO_BIG: u16 = 1009;
/// The close code of a link that missed the endpoint's pings (no pong in time).
pub const CLOSE_NO_PONG: u16 = 1011;
/// The close code of an endpoint that restarts.
pub const CLOSE_RESTART: u16 = 1012;

/// The largest frame the device sends by default (bytes): well under the 1 MiB at which the
/// agent's backend drops its own link to the endpoint (and with it every tool of the device).
/// The engine writes each answer into a buffer of at most this size, and `tools/list` pages fit
/// it.
pub const DEFAULT_MAX_FRAME: usize = 64 * 1024;
/// The smallest frame cap the device shrinks to after 1009 closes.
pub const MIN_FRAME: usize = 4 * 1024;
/// A link that stayed up this long (ms) was healthy: the next wait starts from the first step
/// again, and runs of refusals and replacements are over. (The endpoint pings every 20 s and
/// gives up on a link after 40 s without a pong.)
pub const HEALTHY_MS: u32 = 30_000;
/// Replacements in a row after which the device stops connecting this link: another device
/// keeps taking its token.
pub const MAX_REPLACED: u32 = 4;

/// Why a link ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Ended {
    /// The endpoint closed it with this code.
    Closed(u16),
    /// It could not be opened (DNS, TCP, TLS, the upgrade), or it failed without a close code
    /// (reset, a dead link, the device's own close).
    Lost,
}

/// What the device says when a link ended (besides the close code itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Say {
    /// The endpoint refused the token (1008): said once per run of refusals.
    Refused,
    /// Another link took this token (1000), for the `times`-th time in a row.
    Replaced {
        /// Replacements in a row.
        times: u32,
    },
    /// Another link took this token [`MAX_REPLACED`] times in a row: this link stays off.
    GaveUp,
    /// A frame was too large (1009): frames are now at most this many bytes.
    Shrunk {
        /// The new cap.
        frame: usize,
    },
}

/// What the device does after a link ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Next {
    /// Wait `ms` (drawn with jitter), then connect again; say `say`, if any.
    Wait {
        /// How long.
        ms: u32,
        /// What to tell the person who reads the log, if anything beyond the close code.
        say: Option<Say>,
    },
    /// Do not connect again; say why.
    Stop(Say),
}

/// When an endpoint link connects again, by how it ended: the close code's meaning, a jittered
/// backoff, and the frame cap. No clock and no randomness of its own: the caller passes its
/// milliseconds and a random number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Policy {
    /// Any other end: 1 s doubling to 30 s, reset by a healthy link.
    reconnect: Reconnect,
    /// 1008: 5 min doubling to 1 h.
    refused: Reconnect,
    /// 1000 replaced: 1 min doubling to 8 min, then stop.
    replaced: Reconnect,
    /// The refusal of this run was said.
    said_refused: bool,
    /// The largest frame to send.
    frame: usize,
    /// When the current link opened.
    opened_ms: Option<u64>,
}

impl Default for Policy {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy {
    /// Nothing ended yet; frames up to [`DEFAULT_MAX_FRAME`].
    pub const fn new() -> Self {
        Policy {
            reconnect: Reconnect::DEFAULT,
            refused: Reconnect::new(300_000, 3_600_000),
            replaced: Reconnect::new(60_000, 480_000),
            said_refused: false,
            frame: DEFAULT_MAX_FRAME,
            opened_ms: None,
        }
    }

    /// Starts with a frame cap of `bytes` (at least [`MIN_FRAME`]).
    #[must_use]
    pub const fn frame_cap_of(mut self, bytes: usize) -> Self {
        self.frame = if bytes < MIN_FRAME { MIN_FRAME } else { bytes };
        self
    }

    /// The largest frame to send now (bytes): the engine's output buffer for this link.
    pub const fn frame_cap(&self) -> usize {
        self.frame
    }

    /// A link opened (the WebSocket upgrade succeeded) at `now_ms`.
    pub fn opened(&mut self, now_ms: u64) {
        self.opened_ms = Some(now_ms);
    }

    /// The link ended at `now_ms`, so: what next. `random` is any random number (the jitter:
    /// each wait is drawn between half of its step and all of it).
    pub fn ended(&mut self, how: Ended, now_ms: u64, random: u32) -> Next {
        let healthy = self
            .opened_ms
            .take()
            .is_some_and(|at| now_ms.saturating_sub(at) >= u64::from(HEALTHY_MS));
        match how {
            Ended::Closed(CLOSE_REFUSED) => {
                let say = (!self.said_refused).then_some(Say::Refused);
                self.said_refused = true;
                Next::Wait {
                    ms: self.refused.ended(false, random),
                    say,
                }
            }
            Ended::Closed(CLOSE_REPLACED) => {
                let ms = self.replaced.ended(false, random);
                let times = self.replaced.failures();
                if times >= MAX_REPLACED {
                    return Next::Stop(Say::GaveUp);
                }
                Next::Wait {
                    ms,
                    say: Some(Say::Replaced { times }),
                }
            }
            other => {
                if healthy {
                    self.said_refused = false;
                    self.refused = Reconnect::new(300_000, 3_600_000);
                    self.replaced = Reconnect::new(60_000, 480_000);
                }
                let say = match other {
                    Ended::Closed(CLOSE_TOO_BIG) => {
                        self.frame = (self.frame / 2).max(MIN_FRAME);
                        Some(Say::Shrunk { frame: self.frame })
                    }
                    _ => None,
                };
                Next::Wait {
                    ms: self.reconnect.ended(healthy, random),
                    say,
                }
            }
        }
    }
}

/// The agent sessions of one endpoint link (see the [module](self)): which peer the engine
/// serves each message as, from one `initialize` to the next. It outlives the link's
/// connections: a session goes on after a reconnect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Sessions {
    link: u64,
    count: u64,
}

impl Sessions {
    /// The sessions of link `link` (a number that tells a device's endpoint links apart: one
    /// device can serve several agents, each link its own client). Session 0 is the one before
    /// any `initialize`: calls without one, after the device started.
    pub const fn new(link: u64) -> Self {
        Sessions { link, count: 0 }
    }

    /// The current agent session, as the engine's peer.
    pub fn peer(&self) -> Peer {
        let mut name = [0u8; 24];
        let (head, rest) = name.split_at_mut(8);
        head.copy_from_slice(b"endpoint");
        let (link, count) = rest.split_at_mut(8);
        link.copy_from_slice(&self.link.to_le_bytes());
        count.copy_from_slice(&self.count.to_le_bytes());
        Peer::named(&name)
    }

    /// How many sessions began with an `initialize` on this link.
    pub const fn count(&self) -> u64 {
        self.count
    }

    /// A message from the endpoint, as the engine takes it: from the current session.
    pub fn input<'i>(&self, message: &'i [u8], principal: Principal) -> Input<'i> {
        Input::new(message, principal).peer(self.peer())
    }

    /// After the engine handled a message ([`input`](Self::input)) and wrote its answer at the
    /// start of `out`: the answer begins with what the session is owed
    /// ([`Server::tell_owed`]); and an `initialize` begins a new agent session, the
    /// conversation of the one before ending ([`Server::end_conversation`]). Returns the
    /// length of the frame to send (`out[..len]`; 0: nothing).
    pub fn handled<C, K: Capacities>(
        &mut self,
        handled: &Handled<'_>,
        engine: &mut Server<'_, C, K>,
        out: &mut [u8],
    ) -> usize {
        let len = engine.tell_owed(self.peer(), out, handled.len);
        if matches!(handled.event, Some(Event::Initialized { .. })) {
            self.initialized(engine);
        }
        len
    }

    /// An `initialize` was answered: a new agent session begins, and the conversation of the
    /// one before ends ([`Server::end_conversation`]). ([`handled`](Self::handled) does this;
    /// a host that hands messages to the engine its own way calls it.)
    pub fn initialized<C, K: Capacities>(&mut self, engine: &mut Server<'_, C, K>) {
        engine.end_conversation(self.peer());
        self.count = self.count.wrapping_add(1);
    }
}

/// `true` when the tool called `name` is among those a link offers (`patterns`): a pattern
/// equal to the name, or one that ends in `*` and whose part before it starts the name
/// (`self.relay.*` admits `self.relay.set`; `*` admits every tool). Bytes are compared as they
/// are. Register on a link's engine the tools it admits: it lists those, and a call to another
/// is refused as an unknown tool.
///
/// ```
/// use mcp_core::transport::endpoint::admits;
/// let only = ["self.relay.*", "self.get_device_status"];
/// assert!(admits(&only, "self.relay.set"));
/// assert!(admits(&only, "self.get_device_status"));
/// assert!(!admits(&only, "self.reboot"));
/// assert!(!admits(&only, "self.get_device_status_extra"));
/// assert!(admits(&["*"], "anything"));
/// ```
pub fn admits(patterns: &[&str], name: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => *p == name,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    fn wait(n: Next) -> (u32, Option<Say>) {
        match n {
            Next::Wait { ms, say } => (ms, say),
            Next::Stop(s) => panic!("stopped: {s:?}"),
        }
    }

    #[test]
    fn a_refused_token_is_said_once_and_retried_only_every_few_minutes() {
        let mut p = Policy::new();
        let mut waits = Vec::new();
        for i in 0..6u64 {
            p.opened(i * 10_000_000);
            let (ms, say) =
                wait(p.ended(Ended::Closed(CLOSE_REFUSED), i * 10_000_000 + 5, u32::MAX));
            assert_eq!(say.is_some(), i == 0, "said once: {say:?}");
            waits.push(ms);
        }
        assert_eq!(
            waits,
            [300_000, 600_000, 1_200_000, 2_400_000, 3_600_000, 3_600_000]
        );
        // Jitter: never less than half the step.
        let mut p = Policy::new();
        assert_eq!(wait(p.ended(Ended::Closed(CLOSE_REFUSED), 0, 0)).0, 150_000);
    }

    #[test]
    fn replaced_links_back_off_and_give_up_so_two_devices_do_not_flip_flop() {
        let mut p = Policy::new();
        let mut seen = Vec::new();
        let next = loop {
            p.opened(0);
            match p.ended(Ended::Closed(CLOSE_REPLACED), 100_000, u32::MAX) {
                Next::Wait { ms, say } => seen.push((ms, say)),
                stop => break stop,
            }
            assert!(seen.len() < 10);
        };
        assert_eq!(
            seen,
            [
                (60_000, Some(Say::Replaced { times: 1 })),
                (120_000, Some(Say::Replaced { times: 2 })),
                (240_000, Some(Say::Replaced { times: 3 })),
            ]
        );
        assert_eq!(next, Next::Stop(Say::GaveUp));
        // A healthy link that ends otherwise starts the count again.
        let mut p = Policy::new();
        p.opened(0);
        wait(p.ended(Ended::Closed(CLOSE_REPLACED), 1, u32::MAX));
        p.opened(10);
        wait(p.ended(
            Ended::Closed(CLOSE_NO_PONG),
            10 + u64::from(HEALTHY_MS),
            u32::MAX,
        ));
        p.opened(100_000);
        let (_, say) = wait(p.ended(Ended::Closed(CLOSE_REPLACED), 100_001, u32::MAX));
        assert_eq!(say, Some(Say::Replaced { times: 1 }));
    }

    #[test]
    fn other_ends_back_off_from_one_second_to_thirty_and_reset_after_a_healthy_link() {
        let mut p = Policy::new();
        let steps: Vec<u32> = [
            Ended::Lost,
            Ended::Closed(CLOSE_RESTART),
            Ended::Closed(CLOSE_NO_PONG),
            Ended::Lost,
            Ended::Lost,
            Ended::Lost,
            Ended::Closed(4000),
        ]
        .into_iter()
        .map(|e| {
            p.opened(0);
            wait(p.ended(e, 10, u32::MAX)).0
        })
        .collect();
        assert_eq!(steps, [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
        p.opened(0);
        assert_eq!(
            wait(p.ended(Ended::Lost, u64::from(HEALTHY_MS), u32::MAX)).0,
            1_000
        );
        // A link never opened is no session.
        assert_eq!(wait(p.ended(Ended::Lost, u64::MAX, u32::MAX)).0, 2_000);
    }

    #[test]
    fn a_frame_too_big_halves_the_cap_down_to_the_floor() {
        let mut p = Policy::new();
        let mut caps = Vec::new();
        for _ in 0..6 {
            let (_, say) = wait(p.ended(Ended::Closed(CLOSE_TOO_BIG), 0, 0));
            caps.push(say);
        }
        assert_eq!(caps[0], Some(Say::Shrunk { frame: 32 * 1024 }));
        assert_eq!(p.frame_cap(), MIN_FRAME);
        assert_eq!(Policy::new().frame_cap_of(10).frame_cap(), MIN_FRAME);
    }

    #[test]
    fn every_initialize_is_a_new_session_and_a_link_keeps_its_own() {
        let a = Sessions::new(0);
        let b = Sessions::new(1);
        assert_ne!(a.peer(), b.peer());
        let mut a2 = a;
        a2.count = 1;
        assert_ne!(a.peer(), a2.peer());
        assert_eq!(a.peer(), Sessions::new(0).peer());
    }
}
