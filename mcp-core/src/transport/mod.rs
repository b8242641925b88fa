//! Framing helpers. Sockets, UARTs and WebSockets belong to the firmware; these functions only
//! cut and wrap messages.
//!
//! - [`stdio`]: one JSON message per line (UART, USB serial, a process's stdin/stdout).
//! - [`xiaozhi`]: the xiaozhi envelope `{"session_id":…,"type":"mcp","payload":{…}}`.
//! - [`endpoint`]: the xiaozhi MCP endpoint (MCP 接入点): plain JSON-RPC per WebSocket text
//!   frame, its agent sessions, its close codes and when to connect again.
//! - [`link`]: what every outbound link shares: reconnection with backoff, the keep-alive.
//! - [`http`]: Streamable HTTP rules (routing both eras, header and Origin checks, SSE events).
//! - [`auth`]: bearer tokens on the HTTP endpoint (constant-time check, the 401 challenge, the
//!   protected-resource metadata document).
//! - [`mqtt`]: MCP over MQTT (EMQX's convention): topics, presence payloads, who sent a message.
//! - [`escape`]: a peer's or an image's text, escaped and capped for a log line.
//! - `jwt` (feature `jwt`): OAuth access tokens (JWT, ES256/RS256) checked against an
//!   authorization server's keys, issuer, this resource as audience, expiry and scope.

pub mod auth;
pub mod endpoint;
pub use crate::wire::escape;
pub mod http;
#[cfg(feature = "jwt")]
pub mod jwt;
pub mod link;
pub mod mqtt;
pub mod stdio;
pub mod xiaozhi;
