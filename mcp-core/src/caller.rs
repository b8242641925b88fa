//! Who is calling and where the notifications of a call go: the vocabulary a handler's
//! [`Reply`](crate::Reply) and the [`Server`](crate::Server) share.

use crate::wire::json::JsonStr;
use crate::wire::swar::pack;

/// Who is on the other end of a connection, as stated by the firmware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Principal {
    /// An LLM acting through an MCP client.
    Model,
    /// A person (a companion app, a local UI, a maintenance console).
    User,
}

/// Receives the notifications that belong to a request in progress: progress and log messages a
/// handler emits while it runs ([`Reply::progress`](crate::Reply::progress),
/// [`Reply::log`](crate::Reply::log)). Each call gets one complete JSON-RPC notification. A
/// Streamable HTTP transport sends them as SSE events before the response; a stdio or UART
/// transport writes each as a line.
pub trait Notify {
    /// Delivers one notification.
    fn notify(&mut self, message: &[u8]);
}

impl<F: FnMut(&[u8])> Notify for F {
    fn notify(&mut self, message: &[u8]) {
        self(message);
    }
}

/// A log level (RFC 5424 severities, as MCP names them), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named by `s`.
    pub fn parse(s: JsonStr<'_>) -> Option<Self> {
        Self::ALL.into_iter().find(|l| s.eq_str(l.as_str()))
    }
}

impl core::fmt::Debug for dyn Notify + '_ {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Notify")
    }
}

/// Hashes the parts of a call key: `words` (the parts that are numbers, the peer and the call's
/// form) one each, then each of
/// `parts` a word (8 bytes) at a time with its length in the last word, so that `["1", "2x"]` and
/// `["12", "x"]` differ. Every step is a bijection of the state (xor, an odd multiplier, an
/// xor-shift), so two keys that differ in a single word never collide; it is the
/// multiply-xorshift mix of FxHash and the splitmix finalizer, about 8 instructions per 8 bytes
/// (byte-wise FNV-1a, before, cost 4 per byte).
pub(crate) fn call_key(words: [u64; 2], parts: &[&[u8]]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, w: u64| {
        let h = (h ^ w).wrapping_mul(K);
        h ^ (h >> 29)
    };
    let mut h = words.iter().fold(0xCBF2_9CE4_8422_2325, |h, &w| mix(h, w));
    for part in parts {
        let mut words = part.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            h = mix(h, u64::from_le_bytes(b));
        }
        // The last 0-7 bytes (in a part of 8 or more, its last 8: one load), and the part's
        // length in the top byte.
        let rest = words.remainder();
        let last = match part.last_chunk::<8>() {
            _ if rest.is_empty() => 0,
            Some(&w) => u64::from_le_bytes(w),
            None => pack(rest),
        };
        h = mix(h, last ^ ((part.len() as u64) << 56));
    }
    h
}

/// Who sent a message, as the transport knows it: the scope within which a repeated request can
/// be a retransmission.
///
/// | transport | peer |
/// |---|---|
/// | stdio, a UART: one link, one client | [`Peer::ONLY`] (what [`Input::new`](crate::Input::new) sets) |
/// | Streamable HTTP, 2025 sessions | one engine per session, each session named by its id ([`Peer::named`]) so that state on a shared board tells them apart |
/// | xiaozhi WebSocket / MQTT | the backend's `session_id`: [`Peer::named`] (a session resumed after a reconnect is the same peer) |
/// | several clients sharing one engine | one value per connection: [`Peer::new`] |
///
/// On the 2026-07-28 wire a request is its own session: only one carrying an idempotency key
/// (`params._meta["io.github.mcu-mcp/idempotencyKey"]`, a string of at most
/// [`MAX_IDEMPOTENCY_KEY_LEN`](crate::server::MAX_IDEMPOTENCY_KEY_LEN) bytes) can be recognised as a retransmission, and the key joins
/// the peer in the scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Peer(u64);

impl Peer {
    /// The one peer of a point-to-point link.
    pub const ONLY: Peer = Peer(0);

    /// A peer numbered by the transport (a connection counter).
    pub const fn new(id: u64) -> Self {
        Peer(id)
    }

    /// A peer named by bytes it chose or was given (a session id); hashed, so any length will do.
    pub fn named(name: &[u8]) -> Self {
        Peer(call_key([0, 0], &[b"peer", name]))
    }

    /// The number the scope is built from.
    pub const fn get(self) -> u64 {
        self.0
    }
}
