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
    /// The name it gave in `initialize` (`clientInfo.name`), as a device may show it (feature
    /// `confirm`: the questions a person is asked name the client).
    #[cfg(feature = "confirm")]
    pub(super) client: ClientName,
}

impl Session {
    /// Not initialized; the configured log level.
    pub(crate) const NEW: Session = Session {
        revision: None,
        elicits: false,
        tasks: false,
        log_level: None,
        #[cfg(feature = "confirm")]
        client: ClientName::NONE,
    };

    /// The name the client gave in its `initialize` (`clientInfo.name`), escaped and capped
    /// for a display (feature `confirm`).
    #[cfg(feature = "confirm")]
    pub const fn client(&self) -> &ClientName {
        &self.client
    }

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

/// The name a client gave itself (`clientInfo.name` of its `initialize`), short and safe enough
/// for a device's display and a spoken question: each character a display must not carry is
/// escaped as [`escaped`](crate::wire::escape::escaped) does (controls, bidi controls,
/// characters that show nothing), a `"` as `\"` (the name is shown in quotes, which it cannot
/// close), and what does not fit [`ClientName::MAX_LEN`] bytes is cut, `…` in its place. It is
/// the client's own claim, not proof of who it is: a question shows it after a tag of the
/// client's session ([`ClientLabel`](super::ClientLabel)).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClientName {
    pub(super) bytes: [u8; ClientName::MAX_LEN],
    pub(super) len: u8,
}

impl ClientName {
    /// The most bytes a name keeps.
    pub const MAX_LEN: usize = 24;
    /// No name (a client that did not initialize, or gave none).
    pub const NONE: ClientName = ClientName {
        bytes: [0; ClientName::MAX_LEN],
        len: 0,
    };

    /// `name`, escaped and capped.
    pub fn new(name: JsonStr<'_>) -> Self {
        // The common case (`claude-ai`, `python-sdk`): printable ASCII sent without escapes,
        // which needs no escape either: its bytes, cut when long.
        let raw = name.raw();
        if raw
            .iter()
            .all(|&b| (b' '..=b'~').contains(&b) && b != b'\\' && b != b'"')
        {
            return Self::plain(raw);
        }
        Self::escaped(name)
    }

    /// Printable ASCII: the bytes as they are, at most `MAX_LEN - 3` of them, then `…`.
    fn plain(raw: &[u8]) -> Self {
        let mut out = ClientName::NONE;
        let room = ClientName::MAX_LEN - '…'.len_utf8();
        let (kept, cut) = match raw.get(..room) {
            Some(head) if raw.len() > room => (head, true),
            _ => (raw, false),
        };
        if let Some(dst) = out.bytes.get_mut(..kept.len()) {
            dst.copy_from_slice(kept);
        }
        let mut len = kept.len();
        if cut && let Some(dst) = out.bytes.get_mut(len..len + '…'.len_utf8()) {
            dst.copy_from_slice("…".as_bytes());
            len += '…'.len_utf8();
        }
        out.len = len as u8;
        out
    }

    /// Any other name: decoded, each character a display must not carry escaped, whole
    /// characters (and whole escapes) while they fit.
    fn escaped(name: JsonStr<'_>) -> Self {
        /// One character as shown: itself, or its escape (`\u{10ffff}` at the longest).
        #[derive(Default)]
        struct Shown {
            bytes: [u8; 12],
            len: usize,
        }
        impl core::fmt::Write for Shown {
            fn write_str(&mut self, s: &str) -> core::fmt::Result {
                let dst = self.bytes.get_mut(self.len..self.len + s.len());
                dst.ok_or(core::fmt::Error)?.copy_from_slice(s.as_bytes());
                self.len += s.len();
                Ok(())
            }
        }
        let mut out = ClientName::NONE;
        // Whole characters (and whole escapes) while they and a `…` after them still fit.
        let room = ClientName::MAX_LEN - '…'.len_utf8();
        let mut at = 0;
        let mut cut = false;
        for c in name.chars() {
            let mut one = Shown::default();
            let _ = match c {
                '"' => core::fmt::Write::write_str(&mut one, "\\\""),
                c => crate::wire::escape::write_char(&mut one, c),
            };
            let piece = one.bytes.get(..one.len).unwrap_or_default();
            match out.bytes.get_mut(at..at + piece.len()) {
                Some(dst) if at + piece.len() <= room => {
                    dst.copy_from_slice(piece);
                    at += piece.len();
                }
                _ => {
                    cut = true;
                    break;
                }
            }
        }
        if cut && let Some(dst) = out.bytes.get_mut(at..at + '…'.len_utf8()) {
            dst.copy_from_slice("…".as_bytes());
            at += '…'.len_utf8();
        }
        out.len = at as u8;
        out
    }

    /// The name (empty: none).
    pub fn as_str(&self) -> &str {
        let bytes = self.bytes.get(..usize::from(self.len)).unwrap_or_default();
        core::str::from_utf8(bytes).unwrap_or_default()
    }

    /// `true` when the client gave no name.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl core::fmt::Debug for ClientName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
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
