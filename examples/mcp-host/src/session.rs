//! Legacy (2025) sessions: one engine each, and the SSE streams of the session with their event
//! store.
//!
//! A stream is opened by a POST whose answer is streamed (notifications first, a parked
//! `tasks/result`, or a tool configured to close its stream early) or by a standalone GET. On a
//! resumable session (2025-11-25 and later) every event gets an id `<stream>-<seq>` and is kept
//! (bounded), the stream starts with a priming event (an id, `retry:`, empty data), and a GET with
//! `Last-Event-ID` replays the events after that id *on that stream only*, then stays attached
//! until the stream's response has been sent. Older sessions get plain events (older clients
//! choke on an empty `data:`).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Instant;

use bytes::Bytes;
use mcp_core::transport::http::write_sse_event;
use mcp_core::wire::json::{DEFAULT_MAX_DEPTH, Json};
use mcp_core::{Capacities, Revision};
use tokio::sync::mpsc;

use crate::{Engine, EventHook, HostEvent, lock};

/// Events kept per stream for replay.
const MAX_EVENTS: usize = 128;
/// Streams kept per session (finished ones are dropped first).
const MAX_STREAMS: usize = 32;

/// One legacy session.
pub(crate) struct Session<C: 'static, K: Capacities> {
    pub(crate) id: String,
    pub(crate) engine: Arc<Mutex<Box<Engine<C, K>>>>,
    pub(crate) state: Mutex<State>,
    /// Requests of this session being served now (see [`Session::busy`]).
    inflight: AtomicUsize,
}

/// Counts a request as in flight on its session while it lives.
pub(crate) struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<C: 'static, K: Capacities> Session<C, K> {
    pub(crate) fn new(id: String, engine: Box<Engine<C, K>>) -> Self {
        Session {
            id,
            engine: Arc::new(Mutex::new(engine)),
            state: Mutex::new(State::new()),
            inflight: AtomicUsize::new(0),
        }
    }

    /// Ends the session — its streams close — and tells the application why.
    pub(crate) fn end(&self, hook: Option<&EventHook>, reason: &'static str) {
        lock(&self.state).close();
        if let Some(hook) = hook {
            let peer = mcp_core::server::Peer::named(self.id.as_bytes());
            let client = lock(&self.engine).client_label(peer, None).to_string();
            hook(&HostEvent::SessionEnded {
                transport: "http",
                client,
                reason,
            });
        }
    }

    /// Marks a request of this session as in flight until the guard is dropped.
    pub(crate) fn busy(&self) -> Busy<'_> {
        self.inflight.fetch_add(1, Ordering::Relaxed);
        Busy(&self.inflight)
    }

    /// `true` when ending this session loses nothing anyone is using: no request in flight, no
    /// connection reading one of its streams, no answer still to come, no long-running action
    /// still working in its engine, and no call held there for a person's answer (its question
    /// would vanish from the device, and the press meant for it answer nothing). An engine busy
    /// with a handler counts as in use.
    pub(crate) fn is_idle(&self) -> bool {
        if self.inflight.load(Ordering::Relaxed) > 0 {
            return false;
        }
        {
            let state = lock(&self.state);
            if state.has_live() || state.has_pending() {
                return false;
            }
        }
        let free = |e: &Engine<C, K>| !e.has_running_tasks() && !e.holds_call();
        match self.engine.try_lock() {
            Ok(engine) => free(&engine),
            Err(TryLockError::Poisoned(p)) => free(&p.into_inner()),
            Err(TryLockError::WouldBlock) => false,
        }
    }

    /// Event ids, priming events and replay: sessions on 2025-11-25 or later.
    pub(crate) fn resumable(&self) -> bool {
        lock(&self.state)
            .revision
            .is_some_and(|r| r >= Revision::V2025_11_25)
    }
}

/// A stream's frames, as the HTTP body reads them.
pub(crate) type Frames = mpsc::UnboundedReceiver<Bytes>;

struct Stream {
    resumable: bool,
    events: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    live: Option<mpsc::UnboundedSender<Bytes>>,
    /// The response was sent: a stream attached later ends after the replay.
    finished: bool,
    /// The session's standalone (GET) stream, which never finishes.
    standalone: bool,
}

/// The mutable part of a session.
pub(crate) struct State {
    pub(crate) revision: Option<Revision>,
    pub(crate) last_seen: Instant,
    streams: HashMap<u64, Stream>,
    next_stream: u64,
    /// Request id (raw JSON) → the stream its deferred response goes to.
    waiters: HashMap<Vec<u8>, u64>,
    /// Deferred responses that came before their waiter was registered.
    orphans: HashMap<Vec<u8>, Bytes>,
}

impl State {
    fn new() -> Self {
        State {
            revision: None,
            last_seen: Instant::now(),
            streams: HashMap::new(),
            next_stream: 1,
            waiters: HashMap::new(),
            orphans: HashMap::new(),
        }
    }

    /// Opens a stream; a resumable one starts with the priming event.
    pub(crate) fn open(
        &mut self,
        resumable: bool,
        retry_ms: u32,
        standalone: bool,
    ) -> (u64, Frames) {
        self.prune();
        let k = self.next_stream;
        self.next_stream += 1;
        let (tx, rx) = mpsc::unbounded_channel();
        if resumable {
            let id = format!("{k}-0");
            let _ = tx.send(frame(Some(&id), Some(retry_ms), b""));
        }
        if standalone {
            // One standalone stream per session: a new GET replaces the old one.
            for s in self.streams.values_mut().filter(|s| s.standalone) {
                s.live = None;
                s.standalone = false;
                s.finished = true;
            }
        }
        self.streams.insert(
            k,
            Stream {
                resumable,
                events: VecDeque::new(),
                next_seq: 1,
                live: Some(tx),
                finished: false,
                standalone,
            },
        );
        (k, rx)
    }

    /// Drops finished streams nobody reads, oldest first, beyond the limit.
    fn prune(&mut self) {
        while self.streams.len() >= MAX_STREAMS {
            let victim = self
                .streams
                .iter()
                .filter(|(_, s)| s.live.is_none() && !s.standalone)
                .map(|(k, _)| *k)
                .min();
            match victim {
                Some(k) => {
                    self.streams.remove(&k);
                }
                None => return,
            }
        }
    }

    /// Sends (and, when resumable, stores) one message on stream `k`. The last message of a POST
    /// stream (`last`) ends it.
    pub(crate) fn push(&mut self, k: u64, data: &[u8], last: bool) {
        let Some(s) = self.streams.get_mut(&k) else {
            return;
        };
        let seq = s.next_seq;
        s.next_seq += 1;
        let id = s.resumable.then(|| format!("{k}-{seq}"));
        let f = frame(id.as_deref(), None, data);
        if s.resumable {
            if s.events.len() == MAX_EVENTS {
                s.events.pop_front();
            }
            s.events.push_back((seq, f.clone()));
        }
        if let Some(live) = &s.live
            && live.send(f).is_err()
        {
            s.live = None;
        }
        if last {
            s.finished = true;
            s.live = None;
        }
    }

    /// Closes the connection of stream `k` without ending the stream (SSE polling): what comes
    /// later is stored for a GET with `Last-Event-ID`.
    pub(crate) fn detach(&mut self, k: u64) {
        if let Some(s) = self.streams.get_mut(&k) {
            s.live = None;
        }
    }

    /// Ends stream `k` (a POST whose answer turned out to be empty).
    pub(crate) fn finish(&mut self, k: u64) {
        if let Some(s) = self.streams.get_mut(&k) {
            s.finished = true;
            s.live = None;
        }
    }

    /// Resumes stream `k` after event `seq`: replays what came since, and stays attached while
    /// the stream is unfinished. `None` if the stream is unknown (expired, or not this session's).
    pub(crate) fn resume(&mut self, k: u64, seq: u64) -> Option<Frames> {
        let s = self.streams.get_mut(&k)?;
        let (tx, rx) = mpsc::unbounded_channel();
        for (_, f) in s.events.iter().filter(|(n, _)| *n > seq) {
            let _ = tx.send(f.clone());
        }
        if !s.finished {
            // A reconnection replaces the connection that was lost.
            s.live = Some(tx);
        }
        Some(rx)
    }

    /// The deferred response to request `id` goes to stream `k`.
    pub(crate) fn wait(&mut self, id: Vec<u8>, k: u64) {
        match self.orphans.remove(&id) {
            Some(msg) => self.push(k, &msg, true),
            None => {
                self.waiters.insert(id, k);
            }
        }
    }

    /// Routes a message the engine's `poll` emitted: a response to the stream waiting for its
    /// id, a notification to the standalone stream (dropped when none is open: each message goes
    /// to one stream only, never broadcast). `false` when it was dropped.
    pub(crate) fn route(&mut self, msg: &[u8]) -> bool {
        match response_id(msg) {
            Some(id) => match self.waiters.remove(&id) {
                Some(k) => {
                    self.push(k, msg, true);
                    true
                }
                None => {
                    self.orphans.insert(id, Bytes::copy_from_slice(msg));
                    true
                }
            },
            None => {
                let standalone = self
                    .streams
                    .iter()
                    .find(|(_, s)| s.standalone)
                    .map(|(k, _)| *k);
                match standalone {
                    Some(k) => {
                        self.push(k, msg, false);
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// Sends an SSE comment on every open connection, so that dead ones are noticed.
    pub(crate) fn keepalive(&mut self) {
        for s in self.streams.values_mut() {
            if let Some(live) = &s.live
                && live.send(Bytes::from_static(b": keepalive\n\n")).is_err()
            {
                s.live = None;
            }
        }
    }

    /// `true` while some connection reads a stream of this session (one whose reader is gone
    /// no longer counts, even before a write has failed on it).
    pub(crate) fn has_live(&self) -> bool {
        self.streams
            .values()
            .any(|s| s.live.as_ref().is_some_and(|l| !l.is_closed()))
    }

    /// `true` while an answer of this session is still to come: a POST stream that has not sent
    /// its response (a handler running, a parked `tasks/result`, a close-early result the client
    /// will fetch with `Last-Event-ID`).
    pub(crate) fn has_pending(&self) -> bool {
        !self.waiters.is_empty() || self.streams.values().any(|s| !s.finished && !s.standalone)
    }

    /// Ends every stream (the session is over).
    pub(crate) fn close(&mut self) {
        self.streams.clear();
        self.waiters.clear();
        self.orphans.clear();
    }
}

/// One SSE event.
pub(crate) fn frame(id: Option<&str>, retry_ms: Option<u32>, data: &[u8]) -> Bytes {
    let mut out = vec![0u8; data.len() + 64];
    let n = write_sse_event(&mut out, id, retry_ms, data);
    out.truncate(n);
    Bytes::from(out)
}

/// The id (raw JSON) of a response; `None` for a notification or a request.
fn response_id(msg: &[u8]) -> Option<Vec<u8>> {
    let root = Json::parse(msg, DEFAULT_MAX_DEPTH).ok()?;
    let mut id = None;
    for (k, v) in root.members()? {
        if k.eq_str("method") {
            return None;
        }
        if k.eq_str("id") {
            id = Some(v.raw().to_vec());
        }
    }
    id
}

/// Parses a `Last-Event-ID` of this host: `<stream>-<seq>`.
pub(crate) fn parse_event_id(v: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(v).ok()?.trim();
    let (k, seq) = s.split_once('-')?;
    Some((k.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test

    use super::*;

    fn drain(rx: &mut Frames) -> Vec<String> {
        let mut v = Vec::new();
        while let Ok(f) = rx.try_recv() {
            v.push(String::from_utf8(f.to_vec()).unwrap());
        }
        v
    }

    #[test]
    fn resumable_streams_prime_store_and_replay_only_their_own_events() {
        let mut s = State::new();
        let (a, mut rx_a) = s.open(true, 500, false);
        let (b, _rx_b) = s.open(true, 500, false);
        assert_eq!(drain(&mut rx_a), ["id: 1-0\nretry: 500\ndata: \n\n"]);
        s.detach(a);
        s.push(a, br#"{"jsonrpc":"2.0","method":"n"}"#, false);
        s.push(b, br#"{"jsonrpc":"2.0","method":"other"}"#, false);
        s.wait(b"7".to_vec(), a);
        s.route(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        let mut replay = s.resume(a, 0).unwrap();
        assert_eq!(
            drain(&mut replay),
            [
                "id: 1-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n",
                "id: 1-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"
            ]
        );
        // Finished: the replay channel ends.
        assert!(replay.try_recv().is_err());
        assert_eq!(drain(&mut s.resume(a, 1).unwrap()).len(), 1);
        assert!(s.resume(99, 0).is_none());
    }

    #[test]
    fn early_responses_wait_for_their_waiter_and_notifications_need_a_get_stream() {
        let mut s = State::new();
        s.route(br#"{"jsonrpc":"2.0","id":"x","result":{}}"#);
        let (k, mut rx) = s.open(false, 0, false);
        s.wait(br#""x""#.to_vec(), k);
        assert_eq!(
            drain(&mut rx),
            ["data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\n\n"]
        );
        // No GET stream: dropped, not broadcast to POST streams.
        let (_, mut post) = s.open(true, 1, false);
        drain(&mut post);
        s.route(br#"{"jsonrpc":"2.0","method":"notifications/tasks/status"}"#);
        assert!(drain(&mut post).is_empty());
        let (_, mut get) = s.open(true, 1, true);
        drain(&mut get);
        s.route(br#"{"jsonrpc":"2.0","method":"notifications/tasks/status"}"#);
        assert_eq!(drain(&mut get).len(), 1);
        assert_eq!(parse_event_id(b" 12-3 "), Some((12, 3)));
        assert_eq!(parse_event_id(b"x-3"), None);
    }
}
