//! What a device needs to reach a service, in `no_std` Rust and tested on the host: the same
//! code runs in `examples/esp32-wifi` (ESP32-C3) and in `mcp-host`.
//!
//! - [`url`]: the URLs a device takes (`ws`, `wss`, `mqtt`, `mqtts`, `http`, `https`): scheme and
//!   TLS, host (an address, or a DNS name to resolve and to check the certificate against),
//!   port, path; user info taken whole and never shown.
//! - [`ota`]: xiaozhi's OTA/config check: the request a device posts (its headers and JSON
//!   description), and the answer it reads (where to connect and with which token, an
//!   activation code to show, a newer firmware, the server's time).
//! - [`sntp`]: the SNTP request and the checks on its answer (the clock certificates need).
//! - [`shown`]: text from the wire escaped for a log line (mcp-core's escaper, capped at 64).
//! - [`cert`]: what can be said of a refused certificate (whether it signs itself).
//! - `tls` (feature `tls`, needs an allocator): a TLS 1.3 client over any `embedded-io-async`
//!   stream with the server's certificate checked in full (rustls-webpki), cancel-safe reads.
#![cfg_attr(not(test), no_std)]

#[cfg(feature = "tls")]
extern crate alloc;

pub mod cert;
pub mod ota;
pub mod shown;
pub mod sntp;
#[cfg(feature = "tls")]
pub mod tls;
pub mod url;

pub use url::{Host, Scheme, Url, UrlError};
