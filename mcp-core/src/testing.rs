//! A small MCP client for host tests of a firmware's tools (feature `testing`, std): it drives a
//! [`Server`] directly — no transport, no JSON written by hand — the way a client would.
//!
//! A [`Client`] owns the engine and the board it serves (look at them with
//! [`server`](Client::server) and [`board`](Client::board)) and speaks any revision:
//! [`initialize`](Client::initialize) at 2024-11-05 … 2025-11-25, or at 2026-07-28, where every
//! request then carries the stateless `_meta` (revision and client capabilities). It lists tools
//! across all pages, calls them with JSON arguments and hands back an [`Answer`]: the message
//! the engine wrote, with typed views of a tool result (`isError`, the first text,
//! `structuredContent`, the evidence) and of a question put to a person. It answers such a
//! question as the client's user would ([`accept`](Client::accept) /
//! [`decline`](Client::decline): an `elicitation/create` response, or the 2026-07-28 retry with
//! `requestState` and `inputResponses`), presses the device's button
//! ([`press`](Client::press)), and polls the engine on a test clock
//! ([`advance`](Client::advance)) for tasks, held calls and resource updates.
//!
//! ```
//! # #[cfg(all(feature = "confirm", feature = "modern"))] {
//! use mcp_core::testing::Client;
//! use mcp_core::{Args, Caps, Config, Confirm, Evidence, Level, Output, Param, Reading, Reply, Server, Tool, ToolResult};
//! use serde_json::json;
//!
//! #[derive(Default)]
//! struct Board { door_open: bool }
//!
//! fn door(board: &mut Board, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
//!     board.door_open = args.bool("open")?;
//!     let evidence = Evidence::new(Level::Applied).commanded(Reading::Bool(board.door_open));
//!     Ok(Output::bool(true).with_evidence(evidence))
//! }
//! const DOOR: Tool<Board> = Tool::new("self.garage_door.set", "Open or close the garage door", door)
//!     .params(&[Param::boolean("open", "true opens the door")])
//!     .confirm(Confirm::new("Open the garage door?").when(|a| a.bool("open") == Ok(true)));
//!
//! let mut server: Server<'static, Board, Caps<4>> = Server::new(Config::new("garage", "1.0"));
//! server.register(&DOOR).unwrap();
//! let mut client = Client::new(server, Board::default()).with_elicitation();
//! client.initialize("2025-11-25");
//! assert_eq!(client.list_tools().len(), 1);
//!
//! // Closing needs no yes.
//! let closed = client.call("self.garage_door.set", json!({"open": false}));
//! assert!(!closed.is_error());
//! assert_eq!(closed.text(), "true — applied, not verified (commanded false)");
//!
//! // Opening asks the client's user first; nothing moves before the answer.
//! let asked = client.call("self.garage_door.set", json!({"open": true}));
//! assert!(asked.question().unwrap().starts_with("Open the garage door? (asked by "));
//! assert!(!client.board().door_open);
//! let opened = client.accept(&asked);
//! assert_eq!(opened.evidence(), Some(&json!({"level": "applied", "commanded": true})));
//! assert!(client.board().door_open);
//!
//! // The same on the stateless wire: an `input_required` result, then the retry.
//! client.initialize("2026-07-28");
//! let asked = client.call("self.garage_door.set", json!({"open": true}));
//! assert_eq!(asked.result_type(), Some("input_required"));
//! assert!(client.decline(&asked).text().starts_with("Not confirmed"));
//! # }
//! ```
//!
//! A client without elicitation (a xiaozhi backend, 2024-11-05) gets the question on the
//! device, whose button the test presses:
//!
//! ```
//! # #[cfg(feature = "confirm")] {
//! # use mcp_core::testing::Client;
//! # use mcp_core::{Args, Caps, Config, Confirm, Output, Reply, Server, Tool, ToolResult};
//! # use serde_json::json;
//! # fn reboot(n: &mut u32, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult { *n += 1; Ok(Output::bool(true)) }
//! const REBOOT: Tool<u32> = Tool::new("self.reboot", "Reboot", reboot).confirm(Confirm::new("Reboot?"));
//! let mut server: Server<'static, u32, Caps<4>> = Server::new(Config::new("dev", "1"));
//! server.register(&REBOOT).unwrap();
//! let mut client = Client::new(server, 0);
//! client.initialize("2024-11-05");
//! // The call's answer is held back while the device asks (`Config::hold_answer_ms`).
//! let held = client.call("self.reboot", json!({}));
//! assert!(held.deferred);
//! assert_eq!(client.server().confirmation().map(|p| p.message), Some("Reboot?"));
//! let done = client.press(true);
//! assert_eq!(done.text(), "true");
//! assert_eq!(*client.board(), 1);
//! # }
//! ```
//!
//! Async tools ([`Tool::new_async`](crate::Tool::new_async), mcp-hal's `kits::asynch`) are served
//! the way the firmware serves them: [`Client::new_async`] takes the handler the firmware passes
//! to [`Server::handle_async`] and [`Server::poll_async`].
//!
//! Everything here panics, as `assert!` does, when the engine does something a client cannot
//! read (an answer that is not JSON, an output buffer too small): it is for tests.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a test helper: what a client cannot read fails the test, as assert! does"
)]
#![allow(
    clippy::indexing_slicing,
    reason = "serde_json's `value[key]` reads `Null` for a member that is not there"
)]

use core::fmt;
use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use serde_json::{Map, Value, json};

use crate::server::{
    Call, Capacities, Caps, HandleError, Handled, Input, MODERN_REVISION, Notify, Peer, Polled,
    Principal, Server, Session,
};
use crate::wire::frame::Member;
use crate::{Level, ToolResult};

/// Where a result carries its evidence as data: its `_meta`, under this key.
const EVIDENCE_KEY: &str = "io.github.mcu-mcp/evidence";

/// The 2026-07-28 tasks extension's key in the client's capabilities.
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How many polls one [`Client::poll`] makes at most before it decides the engine keeps writing
/// forever (a bug the test should see, not hang on).
const MAX_POLLS: usize = 10_000;

/// How a [`Client`] hands a message to its [`Server`]: [`Blocking`] or [`Async`].
pub trait Runner<C> {
    /// Handles one message ([`Server::handle_with`] or [`Server::handle_async`]).
    ///
    /// # Errors
    /// As [`Server::handle`].
    fn handle<'i, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> Result<Handled<'i>, HandleError>;

    /// Polls once ([`Server::poll_with`] or [`Server::poll_async`]).
    fn poll<K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        now_ms: u64,
        ctx: &mut C,
        out: &mut [u8],
    ) -> Polled;
}

/// Blocking tools only: [`Server::handle_with`] and [`Server::poll_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Blocking;

impl<C> Runner<C> for Blocking {
    fn handle<'i, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> Result<Handled<'i>, HandleError> {
        server.handle_with(input, ctx, out, notify)
    }

    fn poll<K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        now_ms: u64,
        ctx: &mut C,
        out: &mut [u8],
    ) -> Polled {
        server.poll_with(now_ms, ctx, out)
    }
}

/// Async tools too: [`Server::handle_async`] and [`Server::poll_async`] with the firmware's
/// handler `F`, each future polled to the end at once (a no-op waker: a bus transfer that is
/// pending is polled again).
#[derive(Debug, Clone, Copy)]
pub struct Async<F>(pub F);

impl<C, F> Runner<C> for Async<F>
where
    F: AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
{
    fn handle<'i, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> Result<Handled<'i>, HandleError> {
        block_on(server.handle_async(input, ctx, out, notify, &mut self.0))
    }

    fn poll<K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        now_ms: u64,
        ctx: &mut C,
        out: &mut [u8],
    ) -> Polled {
        block_on(server.poll_async(now_ms, ctx, out, &mut self.0))
    }
}

/// Polls `f` until it is ready, with a waker that does nothing.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// What a firmware's main loop does each turn besides polling the engine
/// ([`Client::with_main_loop`]).
pub type MainLoop<'t, C, K> = fn(&mut Server<'t, C, K>, &mut C, u64);

/// A client of one [`Server`] serving one board, for host tests (see the [module](self)).
///
/// `K` is the server's capacities, `R` how it is driven ([`Blocking`], or [`Async`] from
/// [`Client::new_async`]).
pub struct Client<'t, C, K: Capacities = Caps<16>, R: Runner<C> = Blocking> {
    server: Server<'t, C, K>,
    board: C,
    runner: R,
    out: Vec<u8>,
    principal: Principal,
    peer: Peer,
    /// `Some`: each peer's own session, lent with its messages (a transport that serves several
    /// clients with one engine).
    sessions: Option<Vec<(Peer, Session)>>,
    /// Every request carries the 2026-07-28 `_meta`.
    stateless: bool,
    elicitation: bool,
    tasks: bool,
    next_id: i64,
    now_ms: u64,
    step_ms: u64,
    main_loop: Option<MainLoop<'t, C, K>>,
    /// Messages polled on the way to something else, returned by the next poll.
    unread: Vec<Answer>,
}

impl<C, K: Capacities, R: Runner<C>> fmt::Debug for Client<'_, C, K, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.server)
            .field("principal", &self.principal)
            .field("stateless", &self.stateless)
            .field("now_ms", &self.now_ms)
            .finish_non_exhaustive()
    }
}

impl<'t, C, K: Capacities> Client<'t, C, K, Blocking> {
    /// A client of `server`, whose tools act on `board`: the model is calling
    /// ([`Principal::Model`]), from the engine's only peer, with no capabilities, not initialized
    /// (a xiaozhi backend calls tools so), the test clock at 0.
    pub fn new(server: Server<'t, C, K>, board: C) -> Self {
        Client::with_runner(server, board, Blocking)
    }
}

impl<'t, C, K: Capacities, F> Client<'t, C, K, Async<F>>
where
    F: AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
{
    /// [`new`](Client::new) for a firmware whose tools are async: `run` is the handler the
    /// firmware passes to [`Server::handle_async`] (`mcp_hal::dispatch_kits!` over its kits).
    ///
    /// ```
    /// use mcp_core::testing::Client;
    /// use mcp_core::{Call, Caps, Config, Output, Server, Tool, ToolResult};
    /// use serde_json::json;
    ///
    /// struct Board { volume: i64 }
    /// const SET_VOLUME: Tool<Board> = Tool::new_async("self.audio_speaker.set_volume", "Set the volume")
    ///     .params(&[mcp_core::Param::integer("volume", "Volume in percent").range(0, 100)]);
    ///
    /// async fn run(board: &mut Board, call: Call<'_, '_>) -> ToolResult {
    ///     board.volume = call.args.int("volume")?; // an I2C write awaited here
    ///     Ok(Output::bool(true))
    /// }
    ///
    /// let mut server: Server<'static, Board, Caps<4>> = Server::new(Config::new("amp", "1"));
    /// server.register(&SET_VOLUME).unwrap();
    /// let mut client = Client::new_async(server, Board { volume: 0 }, run);
    /// assert!(!client.call("self.audio_speaker.set_volume", json!({"volume": 40})).is_error());
    /// assert_eq!(client.board().volume, 40);
    /// ```
    pub fn new_async(server: Server<'t, C, K>, board: C, run: F) -> Self {
        Client::with_runner(server, board, Async(run))
    }
}

impl<'t, C, K: Capacities, R: Runner<C>> Client<'t, C, K, R> {
    /// A client driving `server` through `runner`.
    pub fn with_runner(server: Server<'t, C, K>, board: C, runner: R) -> Self {
        Client {
            server,
            board,
            runner,
            out: vec![0; 16 * 1024],
            principal: Principal::Model,
            peer: Peer::ONLY,
            sessions: None,
            stateless: false,
            elicitation: false,
            tasks: false,
            next_id: 1,
            now_ms: 0,
            step_ms: 10,
            main_loop: None,
            unread: Vec::new(),
        }
    }

    /// Declares `elicitation` (from its next [`initialize`](Self::initialize); on the 2026-07-28
    /// wire with every request): the engine asks this client's user to confirm a call.
    #[must_use]
    pub fn with_elicitation(mut self) -> Self {
        self.elicitation = true;
        self
    }

    /// Declares tasks (2025-11-25 `tasks`, the 2026-07-28 tasks extension): the client follows
    /// a long-running call as a task, so the engine holds no answer back for it.
    #[must_use]
    pub fn with_tasks(mut self) -> Self {
        self.tasks = true;
        self
    }

    /// Who is calling (default [`Principal::Model`]).
    #[must_use]
    pub fn with_principal(mut self, principal: Principal) -> Self {
        self.principal = principal;
        self
    }

    /// Sends as `peer`, each peer with a session of its own lent with its messages
    /// ([`Input::peer`], [`Input::session`]): a client of a transport that serves several with
    /// one engine (MCP over MQTT). [`set_peer`](Self::set_peer) switches between them.
    #[must_use]
    pub fn with_peer(mut self, peer: Peer) -> Self {
        self.peer = peer;
        self.sessions = Some(Vec::new());
        self
    }

    /// What the firmware's main loop does besides polling the engine, run whenever the test
    /// clock moves: `main_loop(server, board, now_ms)` gives the board's simulated devices the
    /// time (a motor moves, a relay settles) and publishes what its sensor watches report.
    ///
    /// ```
    /// # use mcp_core::testing::Client;
    /// # use mcp_core::{Caps, Config, Server};
    /// struct Board { now_ms: u64, temperature_changed: bool }
    /// let server: Server<'static, Board, Caps<4>> = Server::new(Config::new("b", "1"));
    /// let board = Board { now_ms: 0, temperature_changed: false };
    /// let mut client = Client::new(server, board).with_main_loop(|server, board, now| {
    ///     board.now_ms = now;
    ///     # #[cfg(feature = "resources")]
    ///     if board.temperature_changed {
    ///         server.publish("device://sensors/temperature"); // feature `resources`
    ///     }
    /// });
    /// client.advance(100);
    /// assert_eq!(client.board().now_ms, 100);
    /// ```
    #[must_use]
    pub fn with_main_loop(mut self, main_loop: MainLoop<'t, C, K>) -> Self {
        self.main_loop = Some(main_loop);
        self
    }

    /// The steps [`advance`](Self::advance) moves the clock in, polling after each (default
    /// 10 ms, a main loop's pace).
    #[must_use]
    pub fn with_step(mut self, step_ms: u64) -> Self {
        self.step_ms = step_ms.max(1);
        self
    }

    /// The output buffer's size (default 16 KiB).
    #[must_use]
    pub fn with_out_len(mut self, len: usize) -> Self {
        self.out = vec![0; len];
        self
    }

    /// Who is calling from now on.
    pub fn set_principal(&mut self, principal: Principal) {
        self.principal = principal;
    }

    /// Which peer sends from now on ([`Input::peer`]): another client of the same engine. With
    /// [`with_peer`](Self::with_peer) each peer keeps its own session (a new one for a peer not
    /// seen before); otherwise the engine's own session serves every peer, as on a link that
    /// tells peers apart but keeps no session per peer.
    pub fn set_peer(&mut self, peer: Peer) {
        self.peer = peer;
    }

    /// The engine.
    pub fn server(&self) -> &Server<'t, C, K> {
        &self.server
    }

    /// The engine, to change it between messages.
    pub fn server_mut(&mut self) -> &mut Server<'t, C, K> {
        &mut self.server
    }

    /// The board the tools act on.
    pub fn board(&self) -> &C {
        &self.board
    }

    /// The board, to change it between messages (a fault, a sensor reading).
    pub fn board_mut(&mut self) -> &mut C {
        &mut self.board
    }

    /// The engine and the board back.
    pub fn into_parts(self) -> (Server<'t, C, K>, C) {
        (self.server, self.board)
    }

    /// The test clock (ms).
    pub const fn now(&self) -> u64 {
        self.now_ms
    }

    /// Starts a session at `revision`. At 2024-11-05 … 2025-11-25 that is `initialize` with the
    /// client's capabilities, then `notifications/initialized`; its answer is returned. At
    /// 2026-07-28 (stateless: no handshake) every later request carries the `_meta` with the
    /// revision and the capabilities, and this sends `server/discover`, whose answer is returned.
    ///
    /// A revision the engine does not speak is sent as given (the engine answers with its own).
    pub fn initialize(&mut self, revision: &str) -> Answer {
        self.stateless = revision == MODERN_REVISION;
        if self.stateless {
            return self.request("server/discover", json!({}));
        }
        let params = json!({
            "protocolVersion": revision,
            "capabilities": self.capabilities(),
            "clientInfo": {"name": "mcp_core::testing", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = self.request("initialize", params);
        self.notify("notifications/initialized", json!({}));
        answer
    }

    /// The client's capabilities, as its revision spells them.
    fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        if self.elicitation {
            caps.insert("elicitation".into(), json!({}));
        }
        if self.tasks {
            let (key, value) = if self.stateless {
                ("extensions", json!({ TASKS_EXTENSION: {} }))
            } else {
                ("tasks", json!({"requests": {"tools": {"call": {}}}}))
            };
            caps.insert(key.into(), value);
        }
        Value::Object(caps)
    }

    /// The request `method` with `params` (on the 2026-07-28 wire with its `_meta` added to any
    /// `_meta` the params carry); its answer.
    pub fn request(&mut self, method: &str, params: Value) -> Answer {
        let id = self.next_id;
        self.next_id += 1;
        let message =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": self.with_meta(params)});
        self.send(&message)
    }

    /// The notification `method` with `params`; what the engine wrote (normally nothing).
    pub fn notify(&mut self, method: &str, params: Value) -> Answer {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": self.with_meta(params)});
        self.send(&message)
    }

    /// `params` with the 2026-07-28 `_meta` when the client speaks that revision.
    fn with_meta(&self, mut params: Value) -> Value {
        if self.stateless
            && let Some(object) = params.as_object_mut()
        {
            let meta = object
                .entry(Member::Meta.key())
                .or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(Member::ProtocolVersion.key().into(), json!(MODERN_REVISION));
                meta.insert(Member::ClientCapabilities.key().into(), self.capabilities());
            }
        }
        params
    }

    /// Sends `message` as it is; the answer.
    pub fn send(&mut self, message: &Value) -> Answer {
        let mut answer = self.send_bytes(message.to_string().as_bytes());
        answer.sent = Some(message.clone());
        answer
    }

    /// Sends raw bytes (a malformed message, a byte-exact retransmission); the answer.
    ///
    /// # Panics
    /// When the output buffer is too small for any answer, or what the engine wrote is not JSON.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> Answer {
        let mut input = Input::new(bytes, self.principal).peer(self.peer);
        let peer = self.peer;
        if let Some(sessions) = &self.sessions {
            let session = sessions
                .iter()
                .find(|(p, _)| *p == peer)
                .map_or_else(|| self.server.new_session(), |(_, s)| *s);
            input = input.session(session);
        }
        let mut notes = Vec::new();
        let mut notify = |note: &[u8]| notes.push(parse(note));
        let handled = self
            .runner
            .handle(
                &mut self.server,
                input,
                &mut self.board,
                &mut self.out,
                &mut notify,
            )
            .expect("the output buffer holds an answer");
        if let (Some(sessions), Some(session)) = (&mut self.sessions, handled.session) {
            match sessions.iter_mut().find(|(p, _)| *p == peer) {
                Some(kept) => kept.1 = session,
                None => sessions.push((peer, session)),
            }
        }
        let written = self
            .out
            .get(..handled.len)
            .expect("the answer is in the buffer");
        Answer {
            message: if written.is_empty() {
                Value::Null
            } else {
                parse(written)
            },
            deferred: handled.deferred,
            notes,
            ran: handled.ran,
            replayed: handled.replay.is_some(),
            sent: None,
        }
    }

    /// `tools/call` of `tool` with `arguments`; its answer.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Answer {
        self.call_with(tool, arguments, json!({}))
    }

    /// [`call`](Self::call) with more members in `params`: `{"task": {}}` (a 2025-11-25 task),
    /// `{"_meta": {"progressToken": 1}}`.
    pub fn call_with(&mut self, tool: &str, arguments: Value, extra: Value) -> Answer {
        let mut params = json!({"name": tool, "arguments": arguments});
        merge(&mut params, extra);
        self.request("tools/call", params)
    }

    /// Every tool the engine lists, following `nextCursor` to the last page.
    ///
    /// # Panics
    /// When a page is not a `tools/list` result, or a cursor comes back (the listing would never
    /// end).
    pub fn list_tools(&mut self) -> Vec<Value> {
        self.list_tools_with(json!({}))
    }

    /// [`list_tools`](Self::list_tools) with more `params` on every page
    /// (`{"withUserTools": true}`).
    pub fn list_tools_with(&mut self, params: Value) -> Vec<Value> {
        let mut tools = Vec::new();
        let mut cursors = Vec::new();
        let mut page = params.clone();
        loop {
            let answer = self.request("tools/list", page);
            let result = answer
                .message
                .get("result")
                .unwrap_or_else(|| panic!("tools/list failed: {answer}"));
            let listed = result["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("a tools/list result without tools: {answer}"));
            tools.extend(listed.iter().cloned());
            let Some(cursor) = result.get("nextCursor").and_then(Value::as_str) else {
                return tools;
            };
            assert!(
                !cursors.iter().any(|c| c == cursor),
                "tools/list gave the cursor {cursor:?} twice"
            );
            cursors.push(cursor.to_string());
            page = params.clone();
            merge(&mut page, json!({"cursor": cursor}));
        }
    }

    /// Answers the question `asked` put to the client's user with yes (`accept` with
    /// `confirm: true`); the call's answer (see [`respond`](Self::respond)).
    pub fn accept(&mut self, asked: &Answer) -> Answer {
        self.respond(
            asked,
            json!({"action": "accept", "content": {"confirm": true}}),
        )
    }

    /// Answers the question `asked` with `decline`; the call's answer.
    pub fn decline(&mut self, asked: &Answer) -> Answer {
        self.respond(asked, json!({"action": "decline"}))
    }

    /// Answers the question `asked` with `cancel` (the person dismissed it); the call's answer.
    pub fn cancel(&mut self, asked: &Answer) -> Answer {
        self.respond(asked, json!({"action": "cancel"}))
    }

    /// Answers the question `asked` put to the client's user with `result` (an `ElicitResult`:
    /// `{"action": "accept", "content": {...}}`), the way the question came:
    /// - an `elicitation/create` request (2025-06-18 and later): its response;
    /// - a 2026-07-28 `input_required` result: the call again, under a new id, with the result's
    ///   `requestState` and `result` under each key of its `inputRequests`.
    ///
    /// Returns the call's answer. An async tool approved this way runs at the engine's next
    /// poll: when the response itself is answered with nothing, the client polls once.
    ///
    /// # Panics
    /// When `asked` is neither form of question.
    pub fn respond(&mut self, asked: &Answer, result: Value) -> Answer {
        if asked.message["method"] == "elicitation/create" {
            let response = json!({"jsonrpc": "2.0", "id": asked.message["id"], "result": result});
            let answer = self.send(&response);
            if answer.message.is_null() {
                return self.outcome();
            }
            return answer;
        }
        let asked_result = asked
            .result()
            .filter(|r| r["resultType"] == "input_required");
        let (Some(asked_result), Some(request)) = (asked_result, asked.sent.as_ref()) else {
            panic!("no question to answer in {asked}");
        };
        let mut responses = Map::new();
        for key in asked_result["inputRequests"]
            .as_object()
            .map(|requests| requests.keys())
            .into_iter()
            .flatten()
        {
            responses.insert(key.clone(), result.clone());
        }
        let mut retry = request.clone();
        retry["id"] = json!(self.next_id);
        self.next_id += 1;
        retry["params"]["requestState"] = asked_result["requestState"].clone();
        retry["params"]["inputResponses"] = Value::Object(responses);
        self.send(&retry)
    }

    /// Polls once for the outcome of a held call, keeping anything else for the next poll.
    fn outcome(&mut self) -> Answer {
        let mut polled = self.poll_now();
        match polled.iter().position(Answer::is_outcome) {
            Some(at) => {
                let outcome = polled.remove(at);
                self.unread.extend(polled);
                outcome
            }
            None => {
                self.unread.extend(polled);
                Answer::nothing()
            }
        }
    }

    /// Moves the test clock `ms` forward in steps ([`with_step`](Self::with_step)), polling the
    /// engine after each; every message it wrote (task progress and outcomes, held answers,
    /// resource updates), in order.
    pub fn advance(&mut self, ms: u64) -> Vec<Answer> {
        let until = self.now_ms.saturating_add(ms);
        let mut written = core::mem::take(&mut self.unread);
        while self.now_ms < until {
            self.set_now((self.now_ms + self.step_ms).min(until));
            written.extend(self.poll_now());
        }
        written
    }

    /// Polls the engine at the current time until it owes nothing more; every message written.
    pub fn poll(&mut self) -> Vec<Answer> {
        let mut written = core::mem::take(&mut self.unread);
        written.extend(self.poll_now());
        written
    }

    /// Sets the test clock, and runs the [main loop](Self::with_main_loop) at that time, without
    /// polling the engine.
    pub fn set_now(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
        if let Some(main_loop) = self.main_loop {
            main_loop(&mut self.server, &mut self.board, now_ms);
        }
    }

    fn poll_now(&mut self) -> Vec<Answer> {
        let mut written = Vec::new();
        for _ in 0..MAX_POLLS {
            let polled = self.runner.poll(
                &mut self.server,
                self.now_ms,
                &mut self.board,
                &mut self.out,
            );
            let Some(bytes) = self.out.get(..polled.len).filter(|b| !b.is_empty()) else {
                return written;
            };
            written.push(Answer {
                message: parse(bytes),
                deferred: false,
                notes: Vec::new(),
                ran: polled.ran,
                replayed: false,
                sent: None,
            });
        }
        panic!(
            "the engine still writes after {MAX_POLLS} polls at {} ms",
            self.now_ms
        );
    }
}

#[cfg(feature = "confirm")]
impl<C, K: Capacities, R: Runner<C>> Client<'_, C, K, R> {
    /// A person presses the device's button (`yes`, or a "no" button): the firmware's
    /// [`Server::confirm_on_device`] for the question the device shows, as soon as a press counts
    /// for it ([`Pending::press_from_ms`](crate::server::Pending::press_from_ms): shown for the
    /// engine's minimum, default 1 s, and that long after the previous press; the time passes,
    /// the engine polled; a poll shows the question first if none has yet); then the engine is
    /// polled and the held call's
    /// outcome returned — the call's own held answer, or the `notifications/message` (logger
    /// `confirmation`) that follows an answer already given; [`Answer::result`] reads either.
    ///
    /// # Panics
    /// When no question waits for an answer on the device, or the press is not taken.
    pub fn press(&mut self, yes: bool) -> Answer {
        let shows = |c: &Self| c.server.confirmation().filter(|p| p.on_device);
        let pending = shows(self).expect("a question waits on the device");
        if pending.shown_ms.is_none() {
            let polled = self.poll_now();
            self.unread.extend(polled);
        }
        // The person reads the question first: a press counts once it was shown for the
        // engine's minimum and that long after the previous press (the time passes, polled).
        let from = shows(self)
            .and_then(|p| p.press_from_ms)
            .unwrap_or(self.now_ms);
        if from > self.now_ms {
            let polled = self.advance(from - self.now_ms);
            self.unread.extend(polled);
        }
        assert!(
            self.server
                .confirm_on_device(pending.approval, yes, self.now_ms),
            "the press at {} ms was not taken: {pending:?}",
            self.now_ms
        );
        self.outcome()
    }
}

/// Merges the members of `extra` into the object `into` (objects member by member).
fn merge(into: &mut Value, extra: Value) {
    match (into, extra) {
        (Value::Object(into), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(into.entry(key).or_insert(Value::Null), value);
            }
        }
        (into, extra) => *into = extra,
    }
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "the engine wrote something that is not JSON ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    })
}

/// One message the engine wrote, parsed, with typed views of what a test asks of it.
///
/// The views of a tool result (`is_error`, `text`, `structured`, `evidence`) read
/// [`result`](Self::result): the response's `result`, or the result a confirmation's
/// `notifications/message` carries for a call answered before the person did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Answer {
    /// The message (a response, a notification, or a request such as `elicitation/create`);
    /// `Null` when nothing was written.
    pub message: Value,
    /// The request's answer comes later ([`Handled::deferred`]): a call held for a person, or for
    /// its outcome.
    pub deferred: bool,
    /// What the handler emitted while it ran (progress, log messages), in order.
    pub notes: Vec<Value>,
    /// The tool whose handler ran for this message, if one did.
    pub ran: Option<&'static str>,
    /// The answer is a replay of a retransmission's first answer: nothing ran again.
    pub replayed: bool,
    /// The message this answers, as sent (`None` for what a poll wrote, or raw bytes).
    pub sent: Option<Value>,
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.message, f)
    }
}

impl Answer {
    const fn nothing() -> Self {
        Answer {
            message: Value::Null,
            deferred: false,
            notes: Vec::new(),
            ran: None,
            replayed: false,
            sent: None,
        }
    }

    /// A held call's outcome: a response, or a confirmation's notification.
    fn is_outcome(&self) -> bool {
        self.message.get("id").is_some() && self.message.get("method").is_none()
            || self.message["params"]["logger"] == "confirmation"
    }

    /// `true` when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.message.is_null()
    }

    /// The method of a notification or request the engine wrote.
    pub fn method(&self) -> Option<&str> {
        self.message["method"].as_str()
    }

    /// The tool result: the response's `result`, or the `result` in a confirmation's
    /// `notifications/message` (`params.data.result`).
    pub fn result(&self) -> Option<&Value> {
        self.message
            .get("result")
            .or_else(|| self.message["params"]["data"].get("result"))
    }

    fn tool_result(&self) -> &Value {
        self.result()
            .unwrap_or_else(|| panic!("not a tool result: {self}"))
    }

    /// `isError` of the tool result.
    ///
    /// # Panics
    /// When the answer is not a tool result (a JSON-RPC error, nothing): a test that expects a
    /// tool's failure must not pass on a protocol error.
    pub fn is_error(&self) -> bool {
        self.tool_result()["isError"] == true
    }

    /// The first text content of the tool result: its business value and evidence in a
    /// sentence.
    ///
    /// # Panics
    /// When the answer is not a tool result with a text content.
    pub fn text(&self) -> &str {
        let result = self.tool_result();
        result["content"]
            .as_array()
            .and_then(|blocks| blocks.iter().find(|b| b["type"] == "text"))
            .and_then(|b| b["text"].as_str())
            .unwrap_or_else(|| panic!("a tool result without text: {self}"))
    }

    /// The tool result's `structuredContent`.
    pub fn structured(&self) -> Option<&Value> {
        self.result()?.get("structuredContent")
    }

    /// The tool result's evidence as data (`{"level": …, "commanded": …, "observed": …}`), where
    /// the result carries it: its `_meta`, under `io.github.mcu-mcp/evidence`.
    pub fn evidence(&self) -> Option<&Value> {
        self.result()?.get("_meta")?.get(EVIDENCE_KEY)
    }

    /// The evidence level.
    ///
    /// # Panics
    /// When the evidence names a level this crate does not know.
    pub fn level(&self) -> Option<Level> {
        let named = self.evidence()?["level"].as_str()?;
        let levels = [
            Level::Unknown,
            Level::NotApplied,
            Level::Scheduled,
            Level::Applied,
            Level::ReadBack,
            Level::Measured,
        ];
        let level = levels.into_iter().find(|l| l.as_str() == named);
        Some(level.unwrap_or_else(|| panic!("an unknown evidence level in {self}")))
    }

    /// The 2026-07-28 `resultType` (`complete`, `input_required`, `task`).
    pub fn result_type(&self) -> Option<&str> {
        self.result()?["resultType"].as_str()
    }

    /// The JSON-RPC error, if the answer is one.
    pub fn error(&self) -> Option<&Value> {
        self.message.get("error")
    }

    /// The JSON-RPC error's code (-32602, -32601, …).
    pub fn error_code(&self) -> Option<i64> {
        self.error()?["code"].as_i64()
    }

    /// The JSON-RPC error's message.
    pub fn error_message(&self) -> Option<&str> {
        self.error()?["message"].as_str()
    }

    /// The question put to the client's user: an `elicitation/create` request's message, or
    /// the one an `input_required` result asks.
    pub fn question(&self) -> Option<&str> {
        if self.method() == Some("elicitation/create") {
            return self.message["params"]["message"].as_str();
        }
        let requests = self.result()?["inputRequests"].as_object()?;
        requests
            .values()
            .find_map(|r| r["params"]["message"].as_str())
    }

    /// The task a call started: `task.taskId` (2025-11-25), `taskId` (2026-07-28) or, for a
    /// client that follows no task, `structuredContent.task_id`.
    pub fn task_id(&self) -> Option<&str> {
        let result = self.result()?;
        result["task"]["taskId"]
            .as_str()
            .or_else(|| result["taskId"].as_str())
            .or_else(|| result["structuredContent"]["task_id"].as_str())
    }
}
