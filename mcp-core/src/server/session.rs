//! What the engine knows of a client: the protocol [`Revision`] it speaks, its [`Session`]
//! (negotiated by `initialize`), and the [`Event`]s the application may act on.

use crate::caller::LogLevel;
use crate::wire::json::JsonStr;

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

/// The stateless revision, served next to the legacy ones.
pub const MODERN_REVISION: &str = "2026-07-28";

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
/// `Session` per client instead — a new client starts from [`Server::new_session`](super::Server::new_session) — lends it with
/// each of that client's messages ([`Input::session`](super::Input::session)) and stores what comes back in
/// [`Handled::session`](super::Handled::session). So one client's `initialize` never changes what the engine assumes of
/// another: its revision, and above all whether the engine may ask *that* client's user to
/// confirm a call. A new client's session is [`Session::default`] (not initialized; the
/// configured log level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Session {
    pub(super) revision: Option<Revision>,
    /// Declared `elicitation` at `initialize` (2025-06-18 or later).
    pub(super) elicits: bool,
    /// Declared `tasks` at `initialize` (2025-11-25 or later): it can follow a long-running call.
    pub(super) tasks: bool,
    /// The level the client asked for (`logging/setLevel`); `None`: the configured one.
    pub(super) log_level: Option<LogLevel>,
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
