//! MCP over MQTT with a real broker: a fleet of simulated devices on mosquitto, and a
//! client that finds every one of them by its presence and calls it.
//!
//! - [`broker`]: mosquitto started from a config file of its own on an ephemeral loopback port,
//!   killed and restarted on demand (installed with apt-get when missing and possible).
//! - [`certs`]: a test CA and the server certificates it issues (valid, expired, for another
//!   name), for the broker's TLS listener and the simulator's TLS tests.
//! - [`client`]: a fleet client of EMQX's "MCP over MQTT" convention (discovery, `initialize`,
//!   calls with retransmission).
//! - [`devices`]: simulated devices in this process, each with its own board, engine and MQTT
//!   connection through `mcp_host::mqtt` (what `device-sim --mqtt URL --devices N` runs).
//!
//! The fault tests are in `tests/`; the fleet benchmark is the binary `fleet-bench`
//! (BENCHMARKS.md has its figures and commands).

pub mod broker;
pub mod certs;
pub mod client;
pub mod devices;

pub use broker::Broker;
pub use client::{CallError, Client, Presence};
