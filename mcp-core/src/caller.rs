//! Who is calling and where the notifications of a call go: the vocabulary a handler's
//! [`Reply`](crate::Reply) and the [`Server`](crate::Server) share.

use crate::wire::json::JsonStr;

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
