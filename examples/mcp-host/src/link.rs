//! What every outbound link shares — the xiaozhi WebSocket client ([`crate::xiaozhi`]), the MQTT
//! client ([`crate::mqtt`]) and the xiaozhi OTA/config check ([`crate::ota`]): who is on the
//! other end, the engine's buffer, the poll tick, the event hook, reconnection, the connect
//! timeout, the largest message accepted, and TLS ([`Tls`]).
//!
//! Each link's `Options` holds one [`Link`] (its field `link`, readable through `Deref`) and
//! gets the same builder methods for it from one macro, so a setting has one name, one default
//! and one meaning on every link.

use std::fmt;
use std::time::Duration;

use mcp_core::Principal;
use mcp_core::transport::xiaozhi::Reconnect;

use crate::EventHook;
use crate::tls::Tls;

/// How a client reconnects after the link fails: capped exponential backoff with jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backoff {
    /// The wait after the first failure.
    pub first: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Backoff {
    /// 1 s after the first failure, doubling up to 30 s.
    pub const DEFAULT: Backoff = Backoff {
        first: Duration::from_secs(1),
        max: Duration::from_secs(30),
    };

    /// A backoff from `first` doubling up to `max`.
    pub const fn new(first: Duration, max: Duration) -> Self {
        Backoff { first, max }
    }

    /// The wait after `failures` consecutive failures (1: the first), before jitter (to the
    /// millisecond).
    pub fn delay(&self, failures: u32) -> Duration {
        Duration::from_millis(self.policy().step(failures).into())
    }

    /// The same rule in mcp-core's terms (milliseconds; a longer wait than `u32::MAX` ms is
    /// capped there).
    pub(crate) fn policy(&self) -> Reconnect {
        Reconnect::new(ms(self.first), ms(self.max))
    }
}

/// A duration in whole milliseconds, at most `u32::MAX`.
pub(crate) fn ms(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

/// The settings every outbound link has.
#[derive(Clone)]
#[non_exhaustive]
pub struct Link {
    /// Who is on the other end (every client of the link).
    pub principal: Principal,
    /// The engine's output buffer (bytes).
    pub out_len: usize,
    /// How often the engine is polled.
    pub tick: Duration,
    /// Receives host events, for logging.
    pub on_event: Option<EventHook>,
    /// Reconnect after the link fails or the peer closes it (`None`: return instead).
    pub reconnect: Option<Backoff>,
    /// The longest a connection attempt (TCP, TLS and the protocol's handshake) may take.
    pub connect_timeout: Duration,
    /// The largest message the peer may send (bytes).
    pub max_message: usize,
    /// The roots a `wss://`, `mqtts://` or `https://` peer's certificate must chain to.
    pub tls: Tls,
}

impl Link {
    /// The model on the other end, 16 KiB responses, a 20 ms tick, no event hook, no
    /// reconnection, a 10 s connect timeout, messages of at most `max_message` bytes, the
    /// system's roots.
    pub fn new(max_message: usize) -> Self {
        Link {
            principal: Principal::Model,
            out_len: 16 * 1024,
            tick: Duration::from_millis(20),
            on_event: None,
            reconnect: None,
            connect_timeout: Duration::from_secs(10),
            max_message,
            tls: Tls::system(),
        }
    }
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("principal", &self.principal)
            .field("out_len", &self.out_len)
            .field("tick", &self.tick)
            .field("reconnect", &self.reconnect)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message", &self.max_message)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// Builder methods that each set one field: `tick(t: Duration);` (after its doc comment) is
/// `pub fn tick(mut self, t: Duration) -> Self { self.tick = t; self }`. `= expr` stores that
/// instead of the argument (`on_event(hook: EventHook) = Some(hook);`), and a leading
/// `in link:` sets the fields of `self.link`.
macro_rules! setters {
    (in $part:ident: $($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) $(= $value:expr)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.$part.$name = $crate::link::setters!(@value $arg $(, $value)?);
                self
            }
        )*
    };
    (@value $arg:ident) => { $arg };
    (@value $arg:ident, $value:expr) => { $value };
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) $(= $value:expr)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.$name = $crate::link::setters!(@value $arg $(, $value)?);
                self
            }
        )*
    };
}

pub(crate) use setters;

/// The builder methods of the [`Link`] settings, for an `Options` type with a field `link`.
macro_rules! link_builders {
    () => {
        $crate::link::setters! { in link:
            /// Sets who is on the other end.
            principal(p: mcp_core::Principal);
            /// Sets the output buffer size.
            out_len(bytes: usize);
            /// Sets the poll interval.
            tick(t: std::time::Duration);
            /// Sets the event hook.
            on_event(hook: $crate::EventHook) = Some(hook);
            /// Reconnects forever after a failure or a close, waiting as `backoff` says.
            reconnect(backoff: $crate::link::Backoff) = Some(backoff);
            /// Sets the connect (and handshake) timeout.
            connect_timeout(t: std::time::Duration);
            /// Sets the largest message the peer may send (bytes).
            max_message(bytes: usize);
            /// Sets the roots a TLS peer's certificate must chain to.
            tls(tls: $crate::tls::Tls);
        }
    };
}

pub(crate) use link_builders;

/// `Deref` to its [`Link`] settings for an `Options` type with a field `link`: what every link
/// shares reads as the options' own (`opts.tick`).
macro_rules! deref_link {
    ($options:ty) => {
        impl std::ops::Deref for $options {
            type Target = $crate::link::Link;
            fn deref(&self) -> &Self::Target {
                &self.link
            }
        }
    };
}

pub(crate) use deref_link;
