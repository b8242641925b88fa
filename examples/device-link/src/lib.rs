//! What a device needs to reach a service, in `no_std` Rust without an allocator, and tested on
//! the host: the same code runs in `examples/esp32-wifi` (ESP32-C3) and in `mcp-host`.
//!
//! - [`url`]: the URLs a device takes (`ws`, `wss`, `mqtt`, `mqtts`, `http`, `https`): scheme and
//!   TLS, host (an address, or a DNS name to resolve and to check the certificate against),
//!   port, path; user info taken whole and never shown.
//! - [`ota`]: xiaozhi's OTA/config check: the request a device posts (its headers and JSON
//!   description), and the answer it reads (where to connect and with which token, an
//!   activation code to show, a newer firmware, the server's time).
#![cfg_attr(not(test), no_std)]

pub mod ota;
pub mod url;

pub use url::{Host, Scheme, Url, UrlError};
