//! The engine's configuration: [`Config`] and its builder, and the user-only tool policy.

use crate::caller::LogLevel;
use crate::wire::json::DEFAULT_MAX_DEPTH;

/// What happens when the model calls a user-only tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum UserToolPolicy {
    /// Refuse it (the default). User-only tools are left out of the model's `tools/list` unless
    /// the client asks with `withUserTools: true` (xiaozhi's backend does, to show a person what
    /// the device can do), and are refused at the model's `tools/call` either way.
    Enforce,
    /// Let the model call user-only tools (xiaozhi's behaviour: it only hides them).
    ///
    /// **Risk:** a model that learns a user-only tool's name (from a prompt injection, a log, an
    /// earlier listing with `withUserTools`) can then reboot or reconfigure the device without a
    /// person asking for it. Use only where every model-facing connection is trusted.
    AllowModel,
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
    /// How long a question must have been on the device before a press answers it (ms; feature
    /// `confirm`), and how soon after the previous press a press is a bounce that answers
    /// nothing: a person reads the question first, and the second half of a quick double press
    /// never approves the question that came up in between. Default 1000.
    pub confirm_min_shown_ms: u32,
    /// The least time a person has to answer on the device once the client was told that the
    /// call waits (ms; feature `confirm`): a call answered "press the button within N s" — at
    /// once, or when [`hold_answer_ms`](Self::hold_answer_ms) ran out — waits at least this long
    /// from then, and N says so. Time counts from when the person can hear the question, not
    /// from when the call came (20 s by default).
    pub heard_margin_ms: u32,
    /// Every client of this engine receives only the answers to its own requests: an MCP
    /// endpoint relays a call's answer back to the agent that made it and drops every other
    /// message (notifications, requests the device starts). What the engine learns after a
    /// call's answer — a press on a call answered "waiting", a refusal or timeout after it, a
    /// long-running action that ended after its call was answered — is then **owed**: kept, and
    /// told first in the first text of that client's next tool call's answer (`Outcome of an
    /// earlier call: … This call: …`), instead of a notification nobody would receive; a
    /// "waiting" answer says so. Default `false`.
    pub answers_only: bool,
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
            confirm_min_shown_ms: 1_000,
            heard_margin_ms: 20_000,
            answers_only: false,
            #[cfg(feature = "resources")]
            resources: &[],
            #[cfg(feature = "resources")]
            prompts: &[],
        }
    }

    setters! {
        /// Publishes static text resources. Feature `resources`.
        #[cfg(feature = "resources")]
        resources(v: &'static [crate::registry::Resource]) => resources = v;
        /// Publishes static prompts. Feature `resources`.
        #[cfg(feature = "resources")]
        prompts(v: &'static [crate::registry::Prompt]) => prompts = v;
        /// Sets how long a person has to answer a confirmation (ms).
        confirm_timeout(ms: u32) => confirm_timeout_ms = ms;
        /// Sets how long a waiting call (for the device's button, or a long-running action) may
        /// keep its answer back (ms; see [`hold_answer_ms`](Self::hold_answer_ms)).
        hold_answer(ms: u32) => hold_answer_ms = ms;
        /// Sets how long a question must be on the device before a press answers it, and the
        /// bounce time of the button (ms; see [`confirm_min_shown_ms`](Self::confirm_min_shown_ms)).
        confirm_min_shown(ms: u32) => confirm_min_shown_ms = ms;
        /// Sets the least time a person has once the client heard that the call waits (ms; see
        /// [`heard_margin_ms`](Self::heard_margin_ms)).
        heard_margin(ms: u32) => heard_margin_ms = ms;
        /// Says that every client receives only the answers to its own requests (see
        /// [`answers_only`](Self::answers_only)).
        answers_only(yes: bool) => answers_only = yes;
        /// Sets the log level in force before the client sets one.
        log_level(v: Option<LogLevel>) => log_level = v;
        /// Sets the `pollInterval` suggested to clients for tasks (ms).
        task_poll_interval(ms: u32) => task_poll_interval_ms = ms;
        /// Sets the `tools/list` page budget.
        page_bytes(v: usize) => page_bytes = v;
        /// Sets the user-only tool policy.
        user_tools(v: UserToolPolicy) => user_tools = v;
        /// Sets the JSON nesting limit.
        max_depth(v: u8) => max_depth = v;
        /// Sets the `initialize` instructions.
        instructions(v: &'static str) => instructions = Some(v);
    }

    /// Sets the default task `ttl` and the longest one granted (ms).
    pub const fn task_ttl(mut self, default_ms: u32, max_ms: u32) -> Self {
        self.task_ttl_ms = default_ms;
        self.task_ttl_max_ms = max_ms;
        self
    }
}
