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

mod cache;
mod call;
mod capacities;
#[cfg(feature = "confirm")]
mod confirm;
mod list;
#[cfg(feature = "resources")]
mod resources;
mod tasks;

pub use crate::caller::{LogLevel, Notify, Principal};
pub use crate::result::{TaskLookup, TaskSnapshot, TaskStatus};
pub use cache::{CallRecord, Delivery, MAX_IDEMPOTENCY_KEY_LEN, Peer, Receipt};
pub use capacities::{Capacities, Caps};
#[cfg(feature = "resources")]
pub use resources::MAX_LIVE_RESOURCES;
pub use tasks::{MAX_PROGRESS_TOKEN_LEN, Polled, STATUS_TOOL_NAME, status_tool};

use core::cell::Cell;

use crate::ToolResult;
use crate::registry::{RegisterError, RegistryView, Tool};
use crate::wire::frame::{Found, Frame, Member};
#[cfg(feature = "modern")]
use crate::wire::json::Kind;
use crate::wire::json::{DEFAULT_MAX_DEPTH, Json, JsonError, JsonStr};
use crate::wire::protocol;
use crate::wire::request::{Id, Message, Request};
use crate::wire::response::{ErrorCode, NO_DATA, error_into, open_result_object, write_error};
use crate::wire::writer::Writer;
use cache::RecentCalls;
pub use call::Call;
use call::{Flow, Parked};
#[cfg(feature = "confirm")]
pub use confirm::{Approval, HOLD_RECORD, Pending};

/// What happens when the model calls a user-only tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UserToolPolicy {
    /// Refuse it (the default). User-only tools are left out of `tools/list` unless the client
    /// asks with `withUserTools: true` (xiaozhi's backend does, to show a person what the device
    /// can do), and are refused at the model's `tools/call` either way.
    Enforce,
    /// Let the model call user-only tools (xiaozhi's behaviour: it only hides them).
    ///
    /// **Risk:** a model that learns a user-only tool's name (from a prompt injection, a log, an
    /// earlier listing with `withUserTools`) can then reboot or reconfigure the device without a
    /// person asking for it. Use only where every model-facing connection is trusted.
    AllowModel,
}

/// An MCP protocol revision this engine speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Revision {
    /// 2024-11-05 (xiaozhi backends).
    V2024_11_05,
    /// 2025-03-26.
    V2025_03_26,
    /// 2025-06-18.
    V2025_06_18,
    /// 2025-11-25.
    V2025_11_25,
}

impl Revision {
    /// The newest revision spoken.
    pub const LATEST: Revision = Revision::V2025_11_25;
    /// Every revision spoken, oldest first.
    pub const ALL: [Revision; 4] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ];

    /// The revision's date string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
        }
    }

    /// The revision named by `s`, if spoken.
    pub fn parse(s: JsonStr<'_>) -> Option<Self> {
        Self::ALL.into_iter().find(|r| s.eq_str(r.as_str()))
    }

    /// From 2025-11-25 on, invalid tool arguments are a tool result with `isError: true` (so the
    /// model can correct itself); before, a -32602 error.
    pub fn reports_validation_as_tool_error(self) -> bool {
        self >= Revision::V2025_11_25
    }
}

/// Engine configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// `serverInfo.name`.
    pub name: &'static str,
    /// `serverInfo.version`.
    pub version: &'static str,
    /// `instructions` returned by `initialize`, if any.
    pub instructions: Option<&'static str>,
    /// Byte budget of one `tools/list` result (xiaozhi's is 8000).
    pub page_bytes: usize,
    /// What happens when the model calls a user-only tool.
    pub user_tools: UserToolPolicy,
    /// Deepest JSON nesting accepted in a message.
    pub max_depth: u8,
    /// How long a task is kept after creation when the client asks for no `ttl` (ms).
    pub task_ttl_ms: u32,
    /// The longest `ttl` granted (ms); longer requests are shortened.
    pub task_ttl_max_ms: u32,
    /// The `pollInterval` suggested to clients (ms).
    pub task_poll_interval_ms: u32,
    /// The log level in force before the client sets one with `logging/setLevel` (`None`: send no
    /// log messages until asked).
    pub log_level: Option<LogLevel>,
    /// The `ttlMs` caching hint of 2026-07-28 list results (ms), and of reads of static
    /// resources. A live resource's read is always `ttlMs: 0` (a reading is stale at once).
    pub list_ttl_ms: u32,
    /// How long a person has to answer a confirmation (ms; feature `confirm`).
    pub confirm_timeout_ms: u32,
    /// How long a call may keep its own answer back while it waits — for the device's button
    /// (feature `confirm`), or for a long-running action (a task) — for a client that can
    /// neither ask its user nor follow a task (ms): within it the answer is the real outcome with
    /// its evidence (a xiaozhi backend hands the model only the call's answer, and waits 30 s
    /// for it); past it, the call is answered that it waits or what was started, and the outcome
    /// follows as a notification or through the status tool. 0: answer at once.
    pub hold_answer_ms: u32,
    /// Static text resources (`resources/list`, `resources/read`). Feature `resources`.
    #[cfg(feature = "resources")]
    pub resources: &'static [crate::registry::Resource],
    /// Static prompts (`prompts/list`, `prompts/get`). Feature `resources`.
    #[cfg(feature = "resources")]
    pub prompts: &'static [crate::registry::Prompt],
}

impl Config {
    /// Defaults: 8000-byte pages, user-only tools enforced, nesting limit
    /// [`DEFAULT_MAX_DEPTH`].
    pub const fn new(name: &'static str, version: &'static str) -> Self {
        Config {
            name,
            version,
            instructions: None,
            page_bytes: 8000,
            user_tools: UserToolPolicy::Enforce,
            max_depth: DEFAULT_MAX_DEPTH,
            task_ttl_ms: 300_000,
            task_ttl_max_ms: 3_600_000,
            task_poll_interval_ms: 500,
            log_level: None,
            list_ttl_ms: 300_000,
            confirm_timeout_ms: 30_000,
            hold_answer_ms: 25_000,
            #[cfg(feature = "resources")]
            resources: &[],
            #[cfg(feature = "resources")]
            prompts: &[],
        }
    }

    /// Publishes static text resources. Feature `resources`.
    #[cfg(feature = "resources")]
    pub const fn resources(mut self, v: &'static [crate::registry::Resource]) -> Self {
        self.resources = v;
        self
    }

    /// Publishes static prompts. Feature `resources`.
    #[cfg(feature = "resources")]
    pub const fn prompts(mut self, v: &'static [crate::registry::Prompt]) -> Self {
        self.prompts = v;
        self
    }

    /// Sets how long a person has to answer a confirmation (ms).
    pub const fn confirm_timeout(mut self, ms: u32) -> Self {
        self.confirm_timeout_ms = ms;
        self
    }

    /// Sets how long a waiting call (for the device's button, or a long-running action) may keep
    /// its answer back (ms; see [`hold_answer_ms`](Self::hold_answer_ms)).
    pub const fn hold_answer(mut self, ms: u32) -> Self {
        self.hold_answer_ms = ms;
        self
    }

    /// Sets the log level in force before the client sets one.
    pub const fn log_level(mut self, v: Option<LogLevel>) -> Self {
        self.log_level = v;
        self
    }

    /// Sets the `pollInterval` suggested to clients for tasks (ms).
    pub const fn task_poll_interval(mut self, ms: u32) -> Self {
        self.task_poll_interval_ms = ms;
        self
    }

    /// Sets the default task `ttl` and the longest one granted (ms).
    pub const fn task_ttl(mut self, default_ms: u32, max_ms: u32) -> Self {
        self.task_ttl_ms = default_ms;
        self.task_ttl_max_ms = max_ms;
        self
    }

    /// Sets the `tools/list` page budget.
    pub const fn page_bytes(mut self, v: usize) -> Self {
        self.page_bytes = v;
        self
    }

    /// Sets the user-only tool policy.
    pub const fn user_tools(mut self, v: UserToolPolicy) -> Self {
        self.user_tools = v;
        self
    }

    /// Sets the JSON nesting limit.
    pub const fn max_depth(mut self, v: u8) -> Self {
        self.max_depth = v;
        self
    }

    /// Sets the `initialize` instructions.
    pub const fn instructions(mut self, v: &'static str) -> Self {
        self.instructions = Some(v);
        self
    }
}

/// xiaozhi's `capabilities.vision` from `initialize`: where the device may post camera images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vision<'i> {
    /// The explain endpoint URL (decode with [`JsonStr::decode_into`], or `JsonStr::to_cow` with the
    /// feature `alloc`).
    pub url: JsonStr<'i>,
    /// The bearer token for it.
    pub token: JsonStr<'i>,
}

/// What the engine knows of one client: the revision its `initialize` settled on, whether it
/// declared `elicitation` (so that a confirmation can be asked of its user), and the log level it
/// asked for (`logging/setLevel`).
///
/// A point-to-point link (a UART, stdio, a xiaozhi backend, one Streamable HTTP session per
/// engine) has one client, and the engine keeps its session itself. A transport that serves
/// several clients with **one** engine (MCP over MQTT: every client of a device) keeps one
/// `Session` per client instead — a new client starts from [`Server::new_session`] — lends it with
/// each of that client's messages ([`Input::session`]) and stores what comes back in
/// [`Handled::session`]. So one client's `initialize` never changes what the engine assumes of
/// another: its revision, and above all whether the engine may ask *that* client's user to
/// confirm a call. A new client's session is [`Session::default`] (not initialized; the
/// configured log level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Session {
    revision: Option<Revision>,
    /// Declared `elicitation` at `initialize` (2025-06-18 or later).
    elicits: bool,
    /// Declared `tasks` at `initialize` (2025-11-25 or later): it can follow a long-running call.
    tasks: bool,
    /// The level the client asked for (`logging/setLevel`); `None`: the configured one.
    log_level: Option<LogLevel>,
}

impl Session {
    /// Not initialized; the configured log level.
    pub(crate) const NEW: Session = Session {
        revision: None,
        elicits: false,
        tasks: false,
        log_level: None,
    };

    /// The revision the client's `initialize` settled on, if it sent one.
    pub const fn revision(&self) -> Option<Revision> {
        self.revision
    }

    /// The client declared `elicitation`: a confirmation can be asked of its user.
    pub const fn elicits(&self) -> bool {
        self.elicits
    }

    /// The client declared `tasks`: it can follow a long-running call as a task.
    pub const fn tasks(&self) -> bool {
        self.tasks
    }

    /// The revision whose rules apply: the negotiated one, or 2024-11-05 for a client that calls
    /// tools without initializing (xiaozhi backends do).
    pub fn effective_revision(&self) -> Revision {
        self.revision.unwrap_or(Revision::V2024_11_05)
    }
}

/// Something the application may want to act on, borrowed from the input message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<'i> {
    /// A client initialized a session.
    Initialized {
        /// The negotiated revision.
        revision: Revision,
        /// xiaozhi's vision capability, when the client sent one.
        vision: Option<Vision<'i>>,
    },
}

/// One incoming message, for [`Server::handle_with`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Input<'i> {
    /// The message bytes.
    pub bytes: &'i [u8],
    /// Who is on the other end.
    pub principal: Principal,
    /// The transport requires the 2026-07-28 (stateless) rules even if the body does not say so
    /// (its `MCP-Protocol-Version` header names that revision): a body without the required
    /// `_meta` is then refused with -32602 instead of being served as a legacy request.
    pub stateless: bool,
    /// Who sent it, as the transport tells peers apart: the scope of retransmissions.
    pub peer: Peer,
    /// The client's session, when the transport keeps one per client ([`Session`]); `None`: the
    /// engine's own (a point-to-point link).
    pub session: Option<Session>,
    /// A held call dispatched again after a person said yes.
    pub(crate) confirmed: bool,
}

impl<'i> Input<'i> {
    /// A message from `principal`, era decided by its body.
    pub const fn new(bytes: &'i [u8], principal: Principal) -> Self {
        Input {
            bytes,
            principal,
            stateless: false,
            peer: Peer::ONLY,
            session: None,
            confirmed: false,
        }
    }

    /// Lends the sending client's session (a transport serving several clients with one engine;
    /// see [`Session`]). The session after the message comes back in [`Handled::session`].
    pub const fn session(mut self, session: Session) -> Self {
        self.session = Some(session);
        self
    }

    /// Names the peer (default [`Peer::ONLY`]: a point-to-point link).
    pub const fn peer(mut self, peer: Peer) -> Self {
        self.peer = peer;
        self
    }

    /// Requires the 2026-07-28 rules.
    pub const fn stateless(mut self, yes: bool) -> Self {
        self.stateless = yes;
        self
    }
}

/// What [`Server::handle`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Handled<'i> {
    /// Length of the response written at the start of the output buffer (0: send nothing now).
    pub len: usize,
    /// An event for the application, if any.
    pub event: Option<Event<'i>>,
    /// The HTTP status class the specification mandates for this response.
    pub status: Status,
    /// The request followed the 2026-07-28 (stateless) rules.
    pub modern: bool,
    /// A request was accepted but its answer comes later from [`Server::poll`] (a parked
    /// `tasks/result`, a call held for a person's yes or for its outcome); a Streamable HTTP
    /// transport keeps the response stream open for it.
    pub deferred: bool,
    /// The tool whose handler ran for this message, if one did. A host whose other engines act
    /// on the same board passes it to their [`Server::touched`], so that none of them answers a
    /// later retransmission with evidence this call made stale.
    pub ran: Option<&'static str>,
    /// The remembered answer of an acting call (run now, or replayed): tell the engine what
    /// became of it with [`Server::delivered`].
    pub receipt: Option<Receipt>,
    /// `Some` when the answer is a replay: the request was a retransmission and nothing ran
    /// again. The value is what the transport had reported about the first answer.
    pub replay: Option<Delivery>,
    /// The client's session after this message, when the input lent one ([`Input::session`]):
    /// keep it for the client's next message.
    pub session: Option<Session>,
}

impl Handled<'_> {
    /// Nothing written, nothing to report.
    pub(crate) const fn empty() -> Self {
        Handled {
            len: 0,
            event: None,
            status: Status::Ok,
            modern: false,
            deferred: false,
            ran: None,
            receipt: None,
            replay: None,
            session: None,
        }
    }
}

/// [`Server::handle`] could not write even an error response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HandleError {
    /// The output buffer is smaller than [`MIN_OUT_LEN`].
    #[error("output buffer smaller than {MIN_OUT_LEN} bytes")]
    OutputTooSmall,
}

/// The smallest output buffer [`Server::handle`] accepts: enough for any error response,
/// including one that echoes a [`MAX_ID_LEN`](crate::wire::request::MAX_ID_LEN)-byte id.
pub const MIN_OUT_LEN: usize = 320;

/// The engine: configuration, the tool table, and session state.
///
/// `K` names its capacities ([`Capacities`]; by default [`Caps<16>`](Caps): 16 tools, 2 task
/// slots, 4 remembered answers of 384 bytes, 4 live resources, 1 listen stream, 352 bytes for a
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
    live: resources::Live<'t, C, K>,
    /// The session of the client whose message is being handled: the engine's own client's, or
    /// one a transport lent with the message ([`Input::session`]) while that message is handled.
    session: Session,
    cache: RecentCalls<K>,
    tasks: K::Tasks,
    /// The caller's clock as of the last `poll` (ms).
    now_ms: u64,
    last_advance: Option<u64>,
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

/// Where a request's effects go, handed down the dispatch as one (by reference: built once in
/// [`Server::dispatch`]'s frame): the application's context (tools act on it), the sink for
/// notifications (progress, log messages), the facts the caller gets back, and the slot an async
/// tool's call is parked in (`None`: the caller cannot await one).
pub(crate) struct Effects<'e, 'i, 't, C> {
    pub(crate) ctx: &'e mut C,
    pub(crate) notify: &'e mut dyn Notify,
    pub(crate) handled: &'e mut Handled<'i>,
    pub(crate) park: Option<&'e mut Option<Parked<'i, 't, C>>>,
}

/// Who is calling: the principal the firmware states and the peer the transport tells apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller<'i> {
    pub(crate) principal: Principal,
    pub(crate) peer: Peer,
    /// The whole message, for a call held while a person is asked.
    #[cfg_attr(not(feature = "confirm"), allow(dead_code))]
    pub(crate) raw: &'i [u8],
    /// A person already confirmed this call (it is being dispatched again).
    #[cfg_attr(not(feature = "confirm"), allow(dead_code))]
    pub(crate) confirmed: bool,
}

/// The protocol era a request follows: legacy (a session negotiated by `initialize`, or none),
/// or 2026-07-28 (everything stated per request in `params._meta`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Era<'i> {
    Legacy,
    #[cfg_attr(not(feature = "modern"), allow(dead_code))]
    Modern(Modern<'i>),
}

/// What a 2026-07-28 request states about itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Modern<'i> {
    /// `io.modelcontextprotocol/clientCapabilities` declares the tasks extension.
    pub(crate) tasks: bool,
    /// `io.modelcontextprotocol/logLevel`.
    pub(crate) log_level: Option<LogLevel>,
    /// `progressToken`.
    pub(crate) progress_token: Option<Json<'i>>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub(crate) caps: Option<Json<'i>>,
    /// [`IDEMPOTENCY_KEY`]: the client's word that a repeated request is a retransmission.
    pub(crate) idempotency_key: Option<JsonStr<'i>>,
    /// Without the feature `modern` no request follows the 2026-07-28 rules: this field makes
    /// [`Era::Modern`] uninhabited, so every branch for that era compiles away.
    #[cfg(not(feature = "modern"))]
    #[allow(dead_code)]
    pub(crate) never: core::convert::Infallible,
}

impl Era<'_> {
    pub(crate) const fn is_modern(&self) -> bool {
        matches!(self, Era::Modern(_))
    }
}

/// The HTTP status class the specification mandates for a response, for transports that have one
/// (Streamable HTTP); stdio and UART transports ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Status {
    /// 200 (or 202 when there is no response).
    Ok,
    /// 400: a malformed 2026-07-28 request, an unsupported version, a missing capability.
    BadRequest,
    /// 404: an unknown or removed method on the 2026-07-28 path.
    NotFound,
}

/// Where a response goes: the output buffer, the id to echo, the era's extra members, and where
/// to report the HTTP status class.
struct Respond<'o, 'i> {
    out: &'o mut [u8],
    id: Option<Id<'i>>,
    era: Era<'i>,
    info: (&'static str, &'static str),
    status: &'o Cell<Status>,
}

impl Respond<'_, '_> {
    fn error(self, code: ErrorCode, mut message: impl FnMut(&mut Writer<'_>)) -> usize {
        self.error_dyn(code, &mut message, None)
    }

    /// [`error`](Self::error) whose message is one piece of text: one closure for all of them
    /// (each closure passed to `error` is a function of its own in the firmware).
    fn error_text(self, code: ErrorCode, message: &str) -> usize {
        self.error(code, |w| w.text(message))
    }

    /// [`error`](Self::error) whose message is these pieces of text, in order.
    fn error_parts(self, code: ErrorCode, parts: &[&str]) -> usize {
        self.error(code, |w| parts.iter().for_each(|p| w.text(p)))
    }

    fn error_with(
        self,
        code: ErrorCode,
        mut message: impl FnMut(&mut Writer<'_>),
        data: Option<impl FnMut(&mut Writer<'_>)>,
    ) -> usize {
        match data {
            Some(mut data) => self.error_dyn(code, &mut message, Some(&mut data)),
            None => self.error_dyn(code, &mut message, None),
        }
    }

    /// The one instance of the error writer: the message and data writers come as trait
    /// objects, so that the envelope is compiled once, not once per message (and its frame is
    /// paid only while an error is written).
    #[inline(never)]
    fn error_dyn(
        self,
        code: ErrorCode,
        message: &mut dyn FnMut(&mut Writer<'_>),
        data: Option<&mut dyn FnMut(&mut Writer<'_>)>,
    ) -> usize {
        if self.era.is_modern() {
            self.status.set(match code {
                ErrorCode::MethodNotFound => Status::NotFound,
                ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion => Status::BadRequest,
                _ => self.status.get(),
            });
        }
        let id = self.id;
        finish(self.out, id, "", |w| {
            write_error(w, id, code, message, data)
        })
    }

    /// Writes a result object: `members` writes the members (without braces); the era's own
    /// members follow.
    fn result(self, members: impl FnMut(&mut Writer<'_>)) -> usize {
        self.result_typed("complete", members)
    }

    fn result_typed(self, result_type: &str, mut members: impl FnMut(&mut Writer<'_>)) -> usize {
        self.result_dyn(result_type, &mut members)
    }

    /// The one instance of the result writer (see [`error_dyn`](Self::error_dyn)).
    #[inline(never)]
    fn result_dyn(self, result_type: &str, members: &mut dyn FnMut(&mut Writer<'_>)) -> usize {
        let Some(id) = self.id else { return 0 };
        let (era, info) = (self.era, self.info);
        finish(self.out, Some(id), "", |w| {
            write_result_object(w, id, era, info, result_type, members);
        })
    }
}

/// Writes `{` members, then for 2026-07-28 `resultType` and the server identity, `}`.
pub(crate) fn write_object(
    w: &mut Writer<'_>,
    era: Era<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    members: impl FnOnce(&mut Writer<'_>),
) {
    w.raw(b"{");
    let start = w.mark();
    members(w);
    object_tail(w, era, info, result_type, start);
    w.raw(b"}");
}

/// `write_result(w, id, |w| write_object(w, era, info, result_type, members))`, with the
/// constant pieces around the object joined: `,"result":{` is one, the closing `}}` another.
pub(crate) fn write_result_object(
    w: &mut Writer<'_>,
    id: Id<'_>,
    era: Era<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    members: impl FnOnce(&mut Writer<'_>),
) {
    open_result_object(w, id);
    let start = w.mark();
    members(w);
    object_tail(w, era, info, result_type, start);
    w.raw(b"}}");
}

/// What 2026-07-28 adds at the end of a result object that holds `start..` so far:
/// `resultType` and the server identity.
#[inline]
fn object_tail(
    w: &mut Writer<'_>,
    era: Era<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    start: usize,
) {
    if era.is_modern() {
        modern_tail(w, info, result_type, start);
    }
}

/// [`object_tail`] for 2026-07-28.
fn modern_tail(
    w: &mut Writer<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    start: usize,
) {
    w.raw(if w.mark() != start {
        protocol::RESULT_TYPE
    } else {
        protocol::first(protocol::RESULT_TYPE)
    });
    w.string(result_type);
    w.raw(protocol::SERVER_INFO_META_OPEN);
    w.string(info.0);
    w.raw(protocol::VERSION);
    w.string(info.1);
    w.raw(b"}}");
}

/// Renders a response; if it does not fit, replaces it with a short -32603 error that does.
/// `ran` is appended to that error's message (for `tools/call`: the tool did run).
fn finish(
    out: &mut [u8],
    id: Option<Id<'_>>,
    ran: &str,
    render: impl FnOnce(&mut Writer<'_>),
) -> usize {
    let mut w = Writer::new(out);
    render(&mut w);
    if w.fits() {
        return w.needed();
    }
    let needed = w.needed();
    too_large(out, id, needed, ran)
}

/// [`finish`]'s answer when the response needs `needed` bytes and `out` holds fewer: a -32603
/// error that says so (formatted here, once, out of every caller's frame).
#[cold]
#[inline(never)]
fn too_large(out: &mut [u8], id: Option<Id<'_>>, needed: usize, ran: &str) -> usize {
    let cap = out.len();
    // (Written piece by piece: no `core::fmt` in the firmware for it.)
    let mut message = |w: &mut Writer<'_>| {
        w.text("Response too large for the device's output buffer (");
        w.uint(needed as u64);
        w.text(" > ");
        w.uint(cap as u64);
        w.text(" bytes)");
        w.text(ran);
    };
    error_into(out, id, ErrorCode::InternalError, &mut message)
}

/// The -32700 answer to bytes that are not a JSON message (formatting the error is kept out of
/// the dispatch's frame).
#[cold]
#[inline(never)]
fn parse_error(out: &mut [u8], e: JsonError) -> usize {
    crate::fmt::debug!("parse error");
    finish(out, None, "", |w| {
        // `JsonError`'s `Display`, written piece by piece: no `core::fmt` in the firmware for it.
        let message = |w: &mut Writer<'_>| {
            w.text("Parse error: ");
            let (what, at) = match e {
                JsonError::Utf8(at) => ("invalid UTF-8 at byte ", at),
                JsonError::Syntax(at) => ("invalid JSON at byte ", at),
                JsonError::TooDeep(d) => {
                    w.text("JSON nested deeper than ");
                    w.uint(d.into());
                    w.text(" levels");
                    return;
                }
                JsonError::Empty => return w.text("empty message"),
            };
            w.text(what);
            w.uint(at as u64);
        };
        write_error(w, None, ErrorCode::ParseError, message, NO_DATA);
    })
}

fn params_object<'i>(req: &Request<'i>) -> Result<Option<Json<'i>>, &'static str> {
    match req.params {
        None => Ok(None),
        Some(p) if p.members().is_some() => Ok(Some(p)),
        Some(_) => Err("Invalid params: params must be an object"),
    }
}

/// The values of members the checking pass recorded; `None` when one of them is repeated.
pub(crate) fn once<'i, const K: usize>(found: [Found<'i>; K]) -> Option<[Option<Json<'i>>; K]> {
    let mut values = [None; K];
    for (value, f) in values.iter_mut().zip(found) {
        match f {
            Found::Repeated => return None,
            f => *value = f.once(),
        }
    }
    Some(values)
}

/// Looks up members of a params object; a duplicate of a looked-up member is an error.
fn members<'i, const K: usize>(
    params: Option<Json<'i>>,
    names: [&str; K],
) -> Result<[Option<Json<'i>>; K], &'static str> {
    let mut found = [None; K];
    members_into(params, &names, &mut found).map(|()| found)
}

/// [`members`] for any number of names: one copy of the code, not one per `K`.
fn members_into<'i>(
    params: Option<Json<'i>>,
    names: &[&str],
    found: &mut [Option<Json<'i>>],
) -> Result<(), &'static str> {
    let Some(members) = params.and_then(|p| p.members()) else {
        return Ok(());
    };
    for (key, value) in members {
        if let Some(i) = names.iter().position(|n| key.eq_str(n)) {
            let slot = found.get_mut(i).ok_or("Invalid params")?;
            if slot.is_some() {
                return Err("Invalid params: duplicate member");
            }
            *slot = Some(value);
        }
    }
    Ok(())
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

    /// Dispatches one message: answers it, or (`AWAIT`: a caller that can await, given `park`)
    /// parks an async tool's call there. The blocking path (`AWAIT = false`) is compiled without
    /// the parking code: none of its frames holds room for a parked call.
    ///
    /// A client's response (the answer to a question this engine asked) is acted on here, after
    /// [`dispatch`](Self::dispatch) returned: a confirmed call it releases is dispatched again,
    /// and this way that second dispatch does not sit on the stack below the first one's frame.
    pub(crate) fn begin<'i, const AWAIT: bool>(
        &mut self,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
        park: Option<&mut Option<Parked<'i, 't, C>>>,
    ) -> Result<Handled<'i>, HandleError> {
        if out.len() < MIN_OUT_LEN {
            return Err(HandleError::OutputTooSmall);
        }
        // A transport that keeps one session per client lends it for this message.
        let own = input
            .session
            .map(|lent| core::mem::replace(&mut self.session, lent));
        let mut handled = match self.dispatch::<AWAIT>(input, ctx, out, notify, park) {
            Some(handled) => handled,
            // (Only a server that can hold a call asks a client anything.)
            #[cfg(feature = "confirm")]
            None if confirm::Confirmations::<K>::ON => {
                self.answered::<AWAIT>(&input, ctx, out, notify)
            }
            None => Handled::empty(),
        };
        if let Some(own) = own {
            handled.session = Some(core::mem::replace(&mut self.session, own));
        }
        Ok(handled)
    }

    /// A client's response: an answer to a question this engine asked. A yes runs the call now
    /// on the blocking path (`AWAIT = false`); on the async path the call stays approved and the
    /// next [`poll_async`](Self::poll_async) runs it (its answer is owed: `Handled::deferred`).
    #[cfg(feature = "confirm")]
    #[inline(never)]
    fn answered<'i, const AWAIT: bool>(
        &mut self,
        input: &Input<'_>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> Handled<'i> {
        let mut handled = self.on_response(input, out);
        if self.confirm.approved() {
            if AWAIT {
                handled.deferred = true;
            } else {
                let p = self.run_approved(ctx, out, notify);
                (handled.len, handled.ran, handled.receipt) = (p.len, p.ran, p.receipt);
            }
        }
        handled
    }

    /// Checks and indexes one message and answers it; `None` for a client's response, which
    /// [`begin`](Self::begin) hands to the confirmation code.
    ///
    /// Its frame holds the message's index ([`Frame`]) for the whole dispatch; whatever else is
    /// large and not on every message's path (formatting a parse error, the confirmation code)
    /// is kept out of it.
    #[inline(never)]
    fn dispatch<'i, const AWAIT: bool>(
        &mut self,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
        park: Option<&mut Option<Parked<'i, 't, C>>>,
    ) -> Option<Handled<'i>> {
        let Input {
            bytes: input,
            principal,
            stateless,
            peer,
            confirmed,
            ..
        } = input;
        let status = Cell::new(Status::Ok);
        let mut handled = Handled::empty();
        let info = (self.config.name, self.config.version);
        let respond = |out, id, era| Respond {
            out,
            id,
            era,
            info,
            status: &status,
        };
        // One pass checks the whole message and indexes what dispatch reads.
        let mut frame = Frame::new();
        if let Err(e) = frame.index(input, self.config.max_depth) {
            handled.len = parse_error(out, e);
            return Some(handled);
        }
        handled.len = match frame.message() {
            #[cfg(feature = "resources")]
            Message::Notification { method, params }
                if method.eq_str("notifications/cancelled") =>
            {
                self.on_cancelled(peer, params);
                0
            }
            // A client's response: the answer to a question this engine asked, if any.
            Message::Response => return None,
            Message::Notification { .. } => 0,
            Message::Invalid { id, why } => respond(out, id, Era::Legacy)
                .error(ErrorCode::InvalidRequest, |w| w.text(why.message())),
            Message::Request(req) => {
                let frame = &frame;
                let (era, refusal) = classify(frame, stateless);
                handled.modern = era.is_modern();
                let respond = respond(out, Some(req.id), era);
                match refusal {
                    Some(refusal) => refusal.answer(respond),
                    None => {
                        let caller = Caller {
                            principal,
                            peer,
                            raw: input,
                            confirmed,
                        };
                        let mut effects = Effects {
                            ctx,
                            notify,
                            handled: &mut handled,
                            park,
                        };
                        let flow = self.request::<AWAIT>(req, frame, caller, respond, &mut effects);
                        match flow {
                            Flow::Len(len) => {
                                handled.deferred = handled.deferred || len == 0;
                                len
                            }
                            Flow::Parked => 0,
                        }
                    }
                }
            }
        };
        handled.status = status.get();
        Some(handled)
    }

    #[inline(never)]
    fn request<'i, const AWAIT: bool>(
        &mut self,
        req: Request<'i>,
        frame: &Frame<'i>,
        caller: Caller,
        respond: Respond<'_, 'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
    ) -> Flow {
        let m = req.method;
        let era = respond.era;
        // The methods of each wire, the hottest first (a call, a ping, a listing). A method this
        // build cannot serve is not in its tables (without the feature `resources`, without a
        // task table): it is unknown there, as it would be refused anyway.
        const LEGACY: &[(&str, Route)] = &[
            ("tools/call", Route::Call),
            ("ping", Route::Ping),
            ("tools/list", Route::List),
            ("initialize", Route::Initialize),
            ("logging/setLevel", Route::SetLevel),
            #[cfg(feature = "resources")]
            ("resources/list", Route::Resources),
            #[cfg(feature = "resources")]
            ("resources/templates/list", Route::Resources),
            #[cfg(feature = "resources")]
            ("resources/read", Route::Resources),
            #[cfg(feature = "resources")]
            ("resources/subscribe", Route::Resources),
            #[cfg(feature = "resources")]
            ("resources/unsubscribe", Route::Resources),
            #[cfg(feature = "resources")]
            ("prompts/list", Route::Resources),
            #[cfg(feature = "resources")]
            ("prompts/get", Route::Resources),
            #[cfg(feature = "resources")]
            ("completion/complete", Route::Resources),
        ];
        const LEGACY_TASKS: &[(&str, Route)] = &[
            ("tasks/get", Route::Task),
            ("tasks/result", Route::Task),
            ("tasks/list", Route::Task),
            ("tasks/cancel", Route::Task),
        ];
        const MODERN: &[(&str, Route)] = &[
            ("tools/call", Route::Call),
            ("tools/list", Route::List),
            ("server/discover", Route::Discover),
            #[cfg(feature = "resources")]
            ("resources/list", Route::Resources),
            #[cfg(feature = "resources")]
            ("resources/templates/list", Route::Resources),
            #[cfg(feature = "resources")]
            ("resources/read", Route::Resources),
            #[cfg(feature = "resources")]
            ("subscriptions/listen", Route::Resources),
            #[cfg(feature = "resources")]
            ("prompts/list", Route::Resources),
            #[cfg(feature = "resources")]
            ("prompts/get", Route::Resources),
            #[cfg(feature = "resources")]
            ("completion/complete", Route::Resources),
        ];
        const MODERN_TASKS: &[(&str, Route)] = &[
            ("tasks/get", Route::Task),
            ("tasks/update", Route::Task),
            ("tasks/cancel", Route::Task),
        ];
        let (methods, tasks) = if era.is_modern() {
            (MODERN, MODERN_TASKS)
        } else {
            (LEGACY, LEGACY_TASKS)
        };
        // Names are unique in each era: find the name (comparing bytes unless the name was sent
        // with escapes); a resource or prompt method is then asked whether it is offered.
        let escaped = frame.has_escapes(Member::Method);
        let find = |table: &'static [(&'static str, Route)]| {
            table.iter().find(|(n, _)| match escaped {
                false => m.raw() == n.as_bytes(),
                true => m.eq_str(n),
            })
        };
        let known = find(methods).or_else(|| if K::TASKS > 0 { find(tasks) } else { None });
        #[cfg(feature = "resources")]
        let known =
            known.filter(|&&(n, route)| route != Route::Resources || self.offers_resources(n));
        let Some(&(method, route)) = known else {
            return Flow::Len(respond.error(ErrorCode::MethodNotFound, |w| {
                w.text("Method not found: ");
                w.decoded(m, 64);
            }));
        };
        let params = match params_object(&req) {
            Ok(p) => p,
            Err(msg) => {
                return Flow::Len(respond.error_text(ErrorCode::InvalidParams, msg));
            }
        };
        Flow::Len(match route {
            Route::Call => {
                return self.call::<AWAIT>(req.id, frame, caller, respond, effects);
            }
            Route::Ping => respond.result(|_| {}),
            Route::List => self.list(params, respond),
            Route::Initialize => self.initialize(params, respond, &mut effects.handled.event),
            #[cfg(feature = "modern")]
            Route::Discover => self.discover(respond),
            Route::SetLevel => match members(params, ["level"])
                .map(|[l]| l.and_then(|l| l.as_str()).and_then(LogLevel::parse))
            {
                Ok(Some(level)) => {
                    self.session.log_level = Some(level);
                    respond.result(|_| {})
                }
                _ => respond.error_text(ErrorCode::InvalidParams, BAD_LOG_LEVEL),
            },
            #[cfg(feature = "resources")]
            Route::Resources => {
                let Effects { ctx, handled, .. } = effects;
                self.resources(method, params, caller, ctx, respond, handled)
            }
            // Tasks (and, without the features, what is never offered).
            _ => self.task_method(method, params, respond, effects.ctx, caller.peer),
        })
    }

    /// `false` for a `resources/*` or `prompts/*` method when there are no resources or prompts,
    /// and for the subscription methods without live resources. (Without the feature
    /// `resources` these methods are not in the method tables.)
    #[cfg(feature = "resources")]
    fn offers_resources(&self, method: &str) -> bool {
        let (resources, prompts, live) = (
            !self.config.resources.is_empty() || self.has_live_resources(),
            !self.config.prompts.is_empty(),
            self.has_live_resources(),
        );
        let subscription = matches!(
            method,
            "resources/subscribe" | "resources/unsubscribe" | "subscriptions/listen"
        );
        (resources || !method.starts_with("resources/"))
            && (prompts || !method.starts_with("prompts/"))
            && (live || !subscription)
            && (method != "completion/complete" || self.completes())
    }

    /// `true` when a prompt has arguments: `completion/complete` is offered for them.
    #[cfg(feature = "resources")]
    fn completes(&self) -> bool {
        self.config
            .prompts
            .iter()
            .any(|p| !p.argument_list().is_empty())
    }

    /// Capabilities, as members of the `capabilities` object.
    fn write_capabilities(&self, w: &mut Writer<'_>, era: Era<'_>) {
        let has_tasks = K::TASKS > 0 && self.registry.tools().any(|t| t.task_hooks().is_some());
        w.raw(protocol::TOOLS_AND_LOGGING);
        #[cfg(feature = "resources")]
        if self.has_live_resources() {
            w.raw(protocol::RESOURCES_SUBSCRIBE);
        } else if !self.config.resources.is_empty() {
            w.raw(protocol::RESOURCES);
        }
        #[cfg(feature = "resources")]
        if !self.config.prompts.is_empty() {
            w.raw(protocol::PROMPTS);
        }
        #[cfg(feature = "resources")]
        if self.completes() {
            w.raw(protocol::COMPLETIONS);
        }
        match era {
            Era::Modern(_) if has_tasks => w.raw(protocol::TASKS_EXTENSION),
            Era::Legacy if has_tasks && self.effective_revision() >= Revision::V2025_11_25 => {
                w.raw(protocol::TASKS);
            }
            _ => {}
        }
    }

    #[cfg(feature = "modern")]
    fn discover(&mut self, respond: Respond<'_, '_>) -> usize {
        let era = respond.era;
        let config = &self.config;
        respond.result(|w| {
            w.raw(protocol::SUPPORTED_VERSIONS);
            write_supported_versions(w);
            w.raw(protocol::CAPABILITIES_OPEN);
            self.write_capabilities(w, era);
            w.raw(b"}");
            if let Some(text) = config.instructions {
                w.raw(protocol::INSTRUCTIONS);
                w.string(text);
            }
            write_cache_hints(w, config.list_ttl_ms);
        })
    }

    /// `initialize`: the revision, the client's capabilities, the server's answer. (Not inlined:
    /// its locals stay out of the dispatch's frame.)
    #[inline(never)]
    fn initialize<'i>(
        &mut self,
        params: Option<Json<'i>>,
        respond: Respond<'_, 'i>,
        event: &mut Option<Event<'i>>,
    ) -> usize {
        let [version, capabilities] = match members(params, ["protocolVersion", "capabilities"]) {
            Ok(m) => m,
            Err(msg) => return respond.error_text(ErrorCode::InvalidParams, msg),
        };
        let Some(version) = version.and_then(|v| v.as_str()) else {
            return respond.error_text(
                ErrorCode::InvalidParams,
                "Invalid params: initialize needs protocolVersion (a string)",
            );
        };
        // A legacy handshake never settles on 2026-07-28 (it has no handshake).
        let revision = Revision::parse(version).unwrap_or(Revision::LATEST);
        self.session.revision = Some(revision);
        // Elicitation (2025-06-18 on): a confirmation can be asked of the client's user.
        let declared = |name: &str| {
            capabilities
                .and_then(|c| members(Some(c), [name]).ok())
                .is_some_and(|[e]| e.is_some_and(|e| e.members().is_some()))
        };
        self.session.elicits = revision >= Revision::V2025_06_18 && declared("elicitation");
        // A client that follows tasks needs no answer held back for a long-running call.
        self.session.tasks = revision >= Revision::V2025_11_25 && declared("tasks");
        let vision = capabilities
            .and_then(|c| members(Some(c), ["vision"]).ok())
            .and_then(|[v]| members(v, ["url", "token"]).ok())
            .and_then(|[url, token]| {
                Some(Vision {
                    url: url?.as_str()?,
                    token: token?.as_str()?,
                })
            });
        *event = Some(Event::Initialized { revision, vision });
        let config = &self.config;
        let era = respond.era;
        respond.result(|w| {
            w.raw(protocol::PROTOCOL_VERSION);
            w.string(revision.as_str());
            w.raw(protocol::CAPABILITIES_OPEN);
            self.write_capabilities(w, era);
            w.raw(protocol::SERVER_INFO_OPEN);
            w.string(config.name);
            w.raw(protocol::VERSION);
            w.string(config.version);
            w.raw(b"}");
            if let Some(text) = config.instructions {
                w.raw(protocol::INSTRUCTIONS);
                w.string(text);
            }
        })
    }
}

/// The most bytes the 2026-07-28 members add to a `tools/list` result: `resultType`, the server
/// identity (each character escaped at most 6 bytes long) and the caching hints.
#[cfg(feature = "modern")]
pub(crate) const fn modern_reserve(config: &Config) -> usize {
    // `,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"",
    // "version":""}},"ttlMs":4294967295,"cacheScope":"public"`, without the name and version.
    const FIXED: usize = protocol::joined_len(&[
        protocol::RESULT_TYPE,
        br#""complete""#,
        protocol::SERVER_INFO_META_OPEN,
        br#""""#,
        protocol::VERSION,
        br#"""}}"#,
        protocol::TTL_MS,
        b"4294967295",
        protocol::CACHE_SCOPE_PUBLIC,
    ]);
    FIXED + 6 * (config.name.len() + config.version.len())
}

/// The `_meta` member that makes a 2026-07-28 request recognisable when it is sent again: a
/// string the client chooses per request (a UUID), at most [`MAX_IDEMPOTENCY_KEY_LEN`] bytes.
/// The same key with the same id, tool and arguments, and nothing in between that touched the
/// tool, is answered from the first call's answer instead of running again.
pub const IDEMPOTENCY_KEY: &str = Member::IdempotencyKey.key();

#[cfg(feature = "modern")]
const BAD_IDEMPOTENCY_KEY: &str = "Invalid params: io.github.mcu-mcp/idempotencyKey must be a non-empty string of at most 128 bytes";

const BAD_LOG_LEVEL: &str = "Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency";

/// The stateless revision, served next to the legacy ones.
pub const MODERN_REVISION: &str = "2026-07-28";

/// `["2026-07-28","2025-11-25",…]`: every revision this engine speaks, newest first.
#[cfg(feature = "modern")]
fn write_supported_versions(w: &mut Writer<'_>) {
    w.raw(br#"[""#);
    w.raw(MODERN_REVISION.as_bytes());
    for r in Revision::ALL.iter().rev() {
        w.raw(br#"",""#);
        w.raw(r.as_str().as_bytes());
    }
    w.raw(br#""]"#);
}

/// `,"ttlMs":N,"cacheScope":"public"` for cacheable 2026-07-28 results (the tool set is the same
/// for every client, so it may be shared).
pub(crate) fn write_cache_hints(w: &mut Writer<'_>, ttl_ms: u32) {
    w.raw(protocol::TTL_MS);
    w.uint(u64::from(ttl_ms));
    w.raw(protocol::CACHE_SCOPE_PUBLIC);
}

/// Why a 2026-07-28 request is refused before dispatch.
enum Refusal<'i> {
    /// A required `_meta` field is missing or malformed: -32602, HTTP 400.
    Meta(&'static str),
    /// The requested version is not spoken: -32022 with the supported list, HTTP 400.
    #[cfg(feature = "modern")]
    Version(JsonStr<'i>),
    /// Only the lifetime, without the feature `modern`.
    #[cfg(not(feature = "modern"))]
    #[allow(dead_code)]
    Never(
        core::marker::PhantomData<JsonStr<'i>>,
        core::convert::Infallible,
    ),
}

/// What [`Server::request`] does with a method it knows, found with its name (the name is not
/// compared again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Call,
    Ping,
    List,
    Initialize,
    Discover,
    SetLevel,
    Task,
    #[cfg(feature = "resources")]
    Resources,
}

impl Refusal<'_> {
    #[inline(never)]
    fn answer(self, respond: Respond<'_, '_>) -> usize {
        match self {
            Refusal::Meta(msg) => {
                respond.status.set(Status::BadRequest);
                respond.error_text(ErrorCode::InvalidParams, msg)
            }
            #[cfg(not(feature = "modern"))]
            Refusal::Never(_, never) => match never {},
            #[cfg(feature = "modern")]
            Refusal::Version(requested) => respond.error_with(
                ErrorCode::UnsupportedProtocolVersion,
                |w| w.text("Unsupported protocol version"),
                Some(|w: &mut Writer<'_>| {
                    w.raw(protocol::SUPPORTED_OPEN);
                    write_supported_versions(w);
                    w.raw(protocol::REQUESTED);
                    w.json_str(requested);
                    w.raw(b"}");
                }),
            ),
        }
    }
}

/// Without the feature `modern` every request is a legacy one (`params._meta` is not read); a
/// transport that requires the 2026-07-28 rules gets -32602 (HTTP 400).
#[cfg(not(feature = "modern"))]
fn classify<'i>(_: &Frame<'i>, stateless: bool) -> (Era<'i>, Option<Refusal<'i>>) {
    let refusal = stateless.then_some(Refusal::Meta(
        "Invalid params: this device does not speak the 2026-07-28 protocol revision",
    ));
    (Era::Legacy, refusal)
}

/// Sorts a request into its era from `params._meta` (or the transport's word), and checks what
/// 2026-07-28 requires there. (Not inlined: its temporaries stay out of the dispatch's frame.)
#[cfg(feature = "modern")]
#[inline(never)]
fn classify<'i>(frame: &Frame<'i>, stateless: bool) -> (Era<'i>, Option<Refusal<'i>>) {
    const NO_META: &str = "Invalid params: a 2026-07-28 request needs params._meta with \
                           io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities";
    if !stateless && frame.get(Member::Meta) == Found::Absent {
        // The common case: no `_meta`, no transport rule: a legacy request.
        return (Era::Legacy, None);
    }
    let modern_refusal = |msg| {
        let m = Modern {
            tasks: false,
            log_level: None,
            progress_token: None,
            caps: None,
            idempotency_key: None,
        };
        (Era::Modern(m), Some(Refusal::Meta(msg)))
    };
    // The checking pass recorded `params._meta`'s members (those of an object, once each).
    let Some([version, caps, level, token, key]) = once(
        [
            Member::ProtocolVersion,
            Member::ClientCapabilities,
            Member::LogLevel,
            Member::ProgressToken,
            Member::IdempotencyKey,
        ]
        .map(|m| frame.get(m)),
    )
    .filter(|_| frame.get(Member::Meta) != Found::Repeated) else {
        return if stateless {
            modern_refusal(NO_META)
        } else {
            (Era::Legacy, None)
        };
    };
    let Some(version) = version else {
        return if stateless {
            modern_refusal(NO_META)
        } else {
            (Era::Legacy, None)
        };
    };
    let mut modern = Modern {
        tasks: false,
        log_level: None,
        progress_token: None,
        caps: None,
        idempotency_key: None,
    };
    let refuse = |r| (Era::Modern(modern), Some(r));
    let Some(version) = version.as_str() else {
        return refuse(Refusal::Meta(
            "Invalid params: io.modelcontextprotocol/protocolVersion must be a string",
        ));
    };
    let Some(caps) = caps.filter(|c| c.members().is_some()) else {
        return refuse(Refusal::Meta(
            "Invalid params: _meta needs io.modelcontextprotocol/clientCapabilities (an object)",
        ));
    };
    if !version.eq_str(MODERN_REVISION) {
        return refuse(Refusal::Version(version));
    }
    let mut idempotency_key = None;
    if let Some(key) = key {
        match key.as_str() {
            Some(k) if !k.raw().is_empty() && k.raw().len() <= MAX_IDEMPOTENCY_KEY_LEN => {
                idempotency_key = Some(k);
            }
            _ => return refuse(Refusal::Meta(BAD_IDEMPOTENCY_KEY)),
        }
    }
    if let Some(level) = level {
        match level.as_str().and_then(LogLevel::parse) {
            Some(l) => modern.log_level = Some(l),
            None => return refuse(Refusal::Meta(BAD_LOG_LEVEL)),
        }
    }
    modern.caps = Some(caps);
    modern.idempotency_key = idempotency_key;
    modern.tasks = members(Some(caps), ["extensions"])
        .ok()
        .and_then(|[e]| {
            members(
                e.filter(|e| e.members().is_some()),
                ["io.modelcontextprotocol/tasks"],
            )
            .ok()
        })
        .is_some_and(|[t]| t.is_some());
    modern.progress_token = token.filter(|t| {
        t.raw().len() <= MAX_PROGRESS_TOKEN_LEN
            && (t.kind() == Kind::String || t.is_plain_integer())
    });
    (Era::Modern(modern), None)
}

#[cfg(test)]
mod test;

#[cfg(test)]
mod test_tasks;

#[cfg(test)]
mod test_modern;

#[cfg(test)]
mod test_async;

#[cfg(test)]
#[cfg(feature = "resources")]
mod test_resources;

#[cfg(test)]
#[cfg(feature = "resources")]
mod test_prompts;

#[cfg(test)]
#[cfg(feature = "confirm")]
mod test_confirm;
