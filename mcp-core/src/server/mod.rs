//! Session state and dispatch: the engine's one entry point, [`Server::handle`].
//!
//! `handle` takes one message's bytes, the caller's [`Principal`], the application context and an
//! output buffer, and writes zero or one response into the buffer. It owns no clock, no socket
//! and no executor, and allocates nothing on the steady-state `tools/call` path.
//!
//! ```
//! use mcp_core::{Args, Caps, Config, Output, Principal, Reply, Server, ToolResult};
//! use mcp_core::registry::Tool;
//! use mcp_core::schema::Param;
//!
//! struct Device { volume: i64 }
//! fn set_volume(dev: &mut Device, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
//!     dev.volume = args.int("volume")?;
//!     Ok(Output::bool(true))
//! }
//! const SET_VOLUME: Tool<Device> = Tool::new("self.audio_speaker.set_volume", "Set the volume", set_volume)
//!     .params(&[Param::integer("volume", "Volume in percent").range(0, 100)]);
//!
//! let mut server: Server<'_, Device, Caps<4>> = Server::new(Config::new("demo", "0.1.0"));
//! server.register(&SET_VOLUME).unwrap();
//! let mut dev = Device { volume: 0 };
//! let mut out = [0u8; 1024];
//! let msg = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}}"#;
//! let n = server.handle(msg, Principal::Model, &mut dev, &mut out).unwrap().len;
//! assert_eq!(dev.volume, 40);
//! assert!(out[..n].starts_with(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"true"}]"#));
//! ```

//! # Where things are
//! One file per concept: [`Config`] (config.rs); the client's [`Session`], its [`Revision`] and
//! the [`Event`]s (session.rs); one message in, [`Input`], and what came of it, [`Handled`]
//! (message.rs); the [`Server`] and its public methods (this file); how much it holds,
//! [`Capacities`] (capacities.rs); what every method reads of a request — its era (era.rs) and
//! its `params` members (params.rs) — and what the dispatch's stages hand each other (flow.rs);
//! dispatch — checking a message, sorting it into its era and routing it to its method
//! (dispatch.rs), the refusals made before any method runs (refusal.rs), writing an answer
//! (respond.rs); the methods — `initialize` and `server/discover` (initialize.rs), `tools/list`
//! (list.rs), `tools/call` (prepare.rs, then call.rs), tasks and `poll` (tasks.rs), resources and
//! prompts (live.rs, resources.rs), confirmation (confirm.rs) — and the retransmission cache
//! (cache.rs). Unit tests sit in `tests/`. The files are layers, each using only those before it
//! in the order `mcp-core/tests/layers.rs` keeps.

mod cache;
mod call;
mod capacities;
mod config;
#[cfg(feature = "confirm")]
mod confirm;
mod conversation;
mod dispatch;
mod era;
mod flow;
mod initialize;
mod list;
#[cfg(feature = "resources")]
mod live;
mod message;
mod params;
mod prepare;
mod refusal;
#[cfg(feature = "resources")]
mod resources;
mod respond;
mod session;
mod tasks;

pub use crate::caller::{LogLevel, Notify, Principal};
pub use crate::result::{TaskLookup, TaskSnapshot, TaskStatus};
pub use cache::{CallRecord, Delivery, MAX_IDEMPOTENCY_KEY_LEN, Peer, Receipt};
pub use call::Call;
#[doc(hidden)]
pub use capacities::Named;
pub use capacities::{Capacities, Caps};
pub use config::{Config, UserToolPolicy};
#[cfg(feature = "confirm")]
pub use confirm::{Approval, ClientLabel, HOLD_RECORD, Pending, Question};
pub use message::{HandleError, Handled, Input, MIN_OUT_LEN, Status};
#[cfg(feature = "resources")]
pub use resources::MAX_LIVE_RESOURCES;
pub use session::{ClientName, Event, MODERN_REVISION, Revision, Session, Vision};
#[cfg(feature = "strings")]
pub use tasks::status_tool;
pub use tasks::{Heard, Later, MAX_PROGRESS_TOKEN_LEN, Polled, STATUS_TOOL_NAME};

use crate::ToolResult;
use crate::registry::{RegisterError, RegistryView, Tool};
use crate::wire::frame::Member;
use cache::RecentCalls;

/// The engine: configuration, the tool table, and session state.
///
/// `K` names its capacities ([`Capacities`]; by default [`Caps<16>`](Caps): 16 tools, 2 task
/// slots, 4 remembered answers of 448 bytes, 4 live resources, 1 listen stream, 352 bytes for a
/// held call). The whole server lives in one value (a `static` is fine); what it costs in RAM:
/// [`Capacities`].
pub struct Server<'t, C: 't, K: Capacities = Caps<16>> {
    config: Config,
    /// A call held for a person's confirmation (feature `confirm`).
    #[cfg(feature = "confirm")]
    confirm: confirm::Confirmations<K>,
    registry: K::Tools<'t, C>,
    /// Live resources, their subscriptions and the 2026-07-28 listen streams (feature
    /// `resources`).
    #[cfg(feature = "resources")]
    live: live::Live<'t, C, K>,
    /// The session of the client whose message is being handled: the engine's own client's, or
    /// one a transport lent with the message ([`Input::session`]) while that message is handled.
    session: Session,
    cache: RecentCalls<K>,
    tasks: K::Tasks,
    /// The caller's clock as of the last `poll` (ms).
    now_ms: u64,
    /// The clock at the last advance of the task table (`u64::MAX`: none yet; a plain `u64`
    /// with a sentinel, not an `Option`: 8 bytes less).
    last_advance: u64,
    unix_offset_ms: i64,
    /// Incremented per handler call; stamps the scratch spans of that call.
    call_seq: u32,
    /// The key of task ids and confirmation states ([`set_entropy`](Self::set_entropy)).
    entropy: (u64, u64),
}

impl<C, K: Capacities> core::fmt::Debug for Server<'_, C, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.config)
            .field("registry", &&*self.registry)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// Registers a tool (see [`RegistryView::register`]). A long-running tool needs task slots
    /// ([`Capacities::TASKS`] > 0).
    pub fn register(&mut self, tool: &'t Tool<C>) -> Result<&mut Self, RegisterError> {
        if K::TASKS == 0 && tool.task_hooks().is_some() {
            return Err(RegisterError {
                tool: tool.name(),
                kind: crate::registry::RegisterErrorKind::NoTaskTable,
            });
        }
        #[cfg(not(feature = "confirm"))]
        if tool.confirmation().is_some() {
            return Err(RegisterError {
                tool: tool.name(),
                kind: crate::registry::RegisterErrorKind::NoConfirmation,
            });
        }
        #[cfg(feature = "confirm")]
        if !confirm::Confirmations::<K>::ON && tool.confirmation().is_some() {
            return Err(RegisterError {
                tool: tool.name(),
                kind: crate::registry::RegisterErrorKind::NoHold,
            });
        }
        self.registry.register(tool)?;
        Ok(self)
    }

    /// Registers every tool of a set, in order; stops at the first error (the tools before it
    /// stay registered).
    ///
    /// A set is a `&'static [&'static Tool<C>]`, best kept as an associated const of the board:
    /// that works for a board generic over its drivers too, where a `static` cannot be generic
    /// and `&kit()` would be a temporary.
    ///
    /// ```
    /// use mcp_core::{Args, Caps, Config, Output, Reply, Server, Tool, ToolResult};
    ///
    /// trait Codec { fn set(&mut self, v: i64); }
    /// struct Board<C> { codec: C }
    /// fn set_volume<C: Codec>(b: &mut Board<C>, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    ///     b.codec.set(a.int("volume")?);
    ///     Ok(Output::bool(true))
    /// }
    /// fn ping<C>(_: &mut Board<C>, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    ///     Ok(Output::bool(true))
    /// }
    ///
    /// impl<C: Codec + 'static> Board<C> {
    ///     /// Every tool of this board, for any codec.
    ///     const TOOLS: &'static [&'static Tool<Self>] = &[
    ///         &Tool::new("self.audio_speaker.set_volume", "Set the volume", set_volume::<C>)
    ///             .params(&[mcp_core::Param::integer("volume", "Volume").range(0, 100)]),
    ///         &Tool::new("self.ping", "Ping", ping::<C>),
    ///     ];
    /// }
    ///
    /// fn engine<C: Codec + 'static>() -> Server<'static, Board<C>, Caps<8>> {
    ///     let mut server = Server::new(Config::new("board", "1.0"));
    ///     server.register_all(Board::<C>::TOOLS).expect("the tool set fits");
    ///     server
    /// }
    /// # struct Es8311;
    /// # impl Codec for Es8311 { fn set(&mut self, _: i64) {} }
    /// assert_eq!(engine::<Es8311>().registry().len(), 2);
    /// ```
    ///
    /// # Errors
    /// The first tool's [`RegisterError`].
    pub fn register_all(&mut self, tools: &[&'t Tool<C>]) -> Result<&mut Self, RegisterError> {
        for tool in tools {
            self.register(tool)?;
        }
        Ok(self)
    }

    /// The tool table.
    pub fn registry(&self) -> &RegistryView<'t, C> {
        &self.registry
    }

    /// The configuration.
    pub const fn config(&self) -> &Config {
        &self.config
    }

    /// The revision negotiated by the last `initialize` of the engine's own client, if any.
    pub const fn revision(&self) -> Option<Revision> {
        self.session.revision
    }

    /// The revision whose rules apply now: the negotiated one, or 2024-11-05 for clients that call
    /// tools without initializing (xiaozhi backends do).
    pub fn effective_revision(&self) -> Revision {
        self.session.effective_revision()
    }

    /// A session for a new client of a transport that serves several clients with this engine
    /// (see [`Session`]): not initialized, the configured log level ([`Session::default`]).
    pub const fn new_session(&self) -> Session {
        Session::NEW
    }

    /// Something outside this engine changed what `tool` acts on (a physical control, a local
    /// UI, another engine driving the same board): its remembered answers no longer describe the
    /// device, so a later retransmission runs again instead of being answered with stale
    /// evidence. Returns how many answers were dropped (0 also for an unknown tool).
    pub fn touched(&mut self, tool: &str) -> usize {
        match self.registry.tools().position(|t| t.name() == tool) {
            Some(index) => self.cache.touch(index),
            None => 0,
        }
    }

    /// Records what became of a remembered answer (see [`Handled::receipt`]): written out by the
    /// transport, or lost with the link. Returns `false` when the entry has since been replaced.
    ///
    /// What a transport can report: a UART or stdio write that returned (written; the peer may
    /// still miss it), a WebSocket or TCP send that returned (written into the local send
    /// buffer, not acknowledged by the peer), a send that failed or a link that was already down
    /// (lost). No transport here can prove that the peer received an answer: only a later
    /// request from that peer does.
    pub fn delivered(&mut self, receipt: Receipt, delivery: Delivery) -> bool {
        self.cache.delivered(receipt, delivery)
    }

    /// What the transport last reported about a remembered answer, while it is remembered.
    pub fn delivery(&self, receipt: Receipt) -> Option<Delivery> {
        self.cache.delivery(receipt)
    }

    /// The acting calls remembered for retransmissions, oldest first, with what became of their
    /// answers (for a diagnostics page or a log).
    pub fn recent_calls(&self) -> impl Iterator<Item = CallRecord> + '_ {
        let registry = &self.registry;
        self.cache
            .records(move |i| registry.get(i).map_or("", |t| t.name()))
    }

    /// `true` while a long-running action this engine started is still working (a task whose
    /// status is `working`): a transport that ends sessions to make room must not end this one,
    /// or the action would go on with nobody able to follow or cancel it.
    pub fn has_running_tasks(&self) -> bool {
        self.tasks.any_working()
    }

    /// `true` while this engine holds a call for a person's answer: a question shown on the
    /// device or asked through the client, or a yes whose call runs at the next
    /// [`poll`](Self::poll). A transport that ends sessions to make room must not end this one,
    /// as it would not end one with [running tasks](Self::has_running_tasks): the question
    /// would vanish, and the press meant for it would answer nothing. Always `false` without
    /// the feature `confirm`.
    pub fn holds_call(&self) -> bool {
        #[cfg(feature = "confirm")]
        {
            self.confirm.holds()
        }
        #[cfg(not(feature = "confirm"))]
        {
            false
        }
    }

    /// Handles one message and writes zero or one response at the start of `out`.
    ///
    /// `principal` is who is on this connection; `ctx` is passed to tool handlers. Returns the
    /// response length (0 for notifications and peer responses) and any [`Event`].
    ///
    /// # Errors
    /// [`HandleError::OutputTooSmall`] when `out` is shorter than [`MIN_OUT_LEN`]; nothing is
    /// processed then. Every other problem is answered in the output.
    ///
    /// # DoS warning
    /// Work is linear in the message length (one checking pass, then borrowed views).
    pub fn handle<'i>(
        &mut self,
        input: &'i [u8],
        principal: Principal,
        ctx: &mut C,
        out: &mut [u8],
    ) -> Result<Handled<'i>, HandleError> {
        self.handle_with(Input::new(input, principal), ctx, out, &mut |_: &[u8]| {})
    }

    /// [`handle`](Self::handle) for transports that know more about the message: `input` says
    /// whether the transport requires the 2026-07-28 rules (an HTTP request whose headers name
    /// that revision), and `notify` receives the notifications a handler emits while it runs
    /// (progress, log messages), in order, before the response is written.
    pub fn handle_with<'i>(
        &mut self,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> Result<Handled<'i>, HandleError> {
        // Without `AWAIT` nothing is parked: an async tool is refused in `call`.
        self.begin::<false>(input, ctx, out, notify, None)
    }

    /// [`handle_with`](Self::handle_with) for firmware whose tools are async (an embassy program
    /// driving its I2C with `embedded_hal_async`). Everything before and after the handler is the
    /// same code as the blocking path — validation, the retransmission cache, tasks, rendering —
    /// and nothing is allocated; for a tool built with [`Tool::new_async`] the engine awaits
    /// `run(ctx, call)`, where `call` names the tool and carries its validated arguments and
    /// reply. Blocking tools run as usual.
    ///
    /// The message is dispatched when this is *called*; the returned future holds only what the
    /// async handler needs while it waits (its arguments, the reply, the answer's parts: about
    /// 1 KiB on riscv32 besides the handler's own future), so that an executor keeping it does
    /// not also keep the dispatch's frames.
    ///
    /// ```
    /// use mcp_core::{Call, Caps, Config, Input, Output, Principal, Server, Tool, ToolResult};
    /// use mcp_core::schema::Param;
    ///
    /// struct Board { volume: i64 }
    /// impl Board {
    ///     async fn set_volume(&mut self, v: i64) -> Result<(), ()> { self.volume = v; Ok(()) }
    /// }
    /// const SET_VOLUME: Tool<Board> = Tool::new_async("self.audio_speaker.set_volume", "Set the volume")
    ///     .params(&[Param::integer("volume", "Volume in percent").range(0, 100)]);
    ///
    /// async fn serve(server: &mut Server<'_, Board, Caps<4>>, board: &mut Board, msg: &[u8], out: &mut [u8]) -> usize {
    ///     let input = Input::new(msg, Principal::Model);
    ///     let handled = server
    ///         .handle_async(input, board, out, &mut |_: &[u8]| {}, async |board: &mut Board, call: Call<'_, '_>| {
    ///             match call.tool {
    ///                 "self.audio_speaker.set_volume" => {
    ///                     let v = call.args.int("volume")?;
    ///                     board.set_volume(v).await.map_err(|()| mcp_core::ToolError::new("codec NACK"))?;
    ///                     Ok(Output::bool(true))
    ///                 }
    ///                 _ => Err(mcp_core::ToolError::new("no such async tool")),
    ///             }
    ///         })
    ///         .await;
    ///     handled.map_or(0, |h| h.len)
    /// }
    /// # let mut server: Server<'_, Board, Caps<4>> = Server::new(Config::new("demo", "1"));
    /// # server.register(&SET_VOLUME).unwrap();
    /// # let mut board = Board { volume: 0 };
    /// # let mut out = [0u8; 1024];
    /// # let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}}"#;
    /// # fn block_on<F: core::future::Future>(f: F) -> F::Output {
    /// #     let mut f = core::pin::pin!(f);
    /// #     let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    /// #     loop {
    /// #         if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; }
    /// #     }
    /// # }
    /// # let n = block_on(serve(&mut server, &mut board, msg, &mut out));
    /// # assert_eq!(board.volume, 40);
    /// # assert!(out[..n].starts_with(br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"true"}]"#));
    /// ```
    ///
    /// # Errors
    /// As [`handle`](Self::handle).
    pub fn handle_async<'a, 'i, F>(
        &'a mut self,
        input: Input<'i>,
        ctx: &'a mut C,
        out: &'a mut [u8],
        notify: &'a mut dyn Notify,
        run: F,
    ) -> impl core::future::Future<Output = Result<Handled<'i>, HandleError>>
    where
        F: AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
    {
        self.dispatch_async(input, ctx, out, notify, run)
    }
}

/// The `_meta` member that makes a 2026-07-28 request recognisable when it is sent again: a
/// string the client chooses per request (a UUID), at most [`MAX_IDEMPOTENCY_KEY_LEN`] bytes.
/// The same key with the same id, tool and arguments, and nothing in between that touched the
/// tool, is answered from the first call's answer instead of running again.
pub const IDEMPOTENCY_KEY: &str = Member::IdempotencyKey.key();

#[cfg(test)]
mod tests;
