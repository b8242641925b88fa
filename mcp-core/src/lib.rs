//! # mcp-core
//!
//! A `no_std` engine for the device side of the [Model Context Protocol](https://modelcontextprotocol.io):
//! a microcontroller registers tools; any MCP client (a xiaozhi backend, Claude, the official SDKs)
//! lists and calls them.
//!
//! A tool returning `true` proves only that a callback returned. This crate keeps apart what a
//! device actually knows about a call: the tool was **listed** (complete, paginated
//! `tools/list`), the request was **accepted** (strict validation against the very schema that was
//! listed), the handler **executed** (a business value, kept apart from `isError`), and what
//! **evidence** the hardware gave that the effect happened ([`Evidence`]: `scheduled`, `applied`,
//! `read_back`, `measured`).
//!
//! ## Layers
//! | module | what | state |
//! |---|---|---|
//! | [`wire`] | JSON checking, borrowed views, JSON-RPC framing, the output [`Writer`](wire::Writer) | none |
//! | [`schema`] | parameter specs → `inputSchema` and the validator ([`Args`]) | none |
//! | [`caller`] | who calls ([`Principal`]), log levels, where notifications go ([`Notify`]) | none |
//! | [`result`] | what handlers return: [`Output`], [`ToolError`], [`Evidence`]; task vocabulary; rendering | none |
//! | [`registry`] | the [`Tool`] builder and the bounded tool table | tools |
//! | [`server`] | session state and dispatch ([`Server::handle`]) | session |
//! | [`transport`] | framing helpers: stdio lines, the xiaozhi envelope, Streamable HTTP rules | none |
//! | `testing` | a small MCP client for host tests (feature `testing`, std) | a client's |
//!
//! Each layer uses only the ones above it in this table.
//!
//! The engine is sans-IO: bytes in, bytes out, into a buffer the caller owns. It has no clock and
//! no executor, and nothing in it allocates: escaped string arguments are decoded into the
//! caller's output buffer. Without the feature `alloc` (off by default) the crate does not link
//! `alloc` at all, so a firmware needs no global allocator.
//!
//! ## Quick start
//! ```
//! use mcp_core::{Args, Caps, Config, Evidence, Level, Output, Principal, Reading, Reply, Server, ToolResult};
//! use mcp_core::registry::Tool;
//! use mcp_core::schema::Param;
//!
//! struct Device { codec_register: u8 }
//!
//! fn set_volume(dev: &mut Device, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
//!     let volume = args.int("volume")?;            // validated: an integer in 0..=100
//!     dev.codec_register = volume as u8;            // write the (simulated) codec register
//!     let observed = i64::from(dev.codec_register); // ... and read it back
//!     let evidence = Evidence::new(Level::ReadBack)
//!         .commanded(Reading::Int(volume))
//!         .observed(Reading::Int(observed));
//!     Ok(Output::bool(true).with_evidence(evidence))
//! }
//!
//! const SET_VOLUME: Tool<Device> =
//!     Tool::new("self.audio_speaker.set_volume", "Set the speaker volume", set_volume)
//!         .params(&[Param::integer("volume", "Volume in percent").range(0, 100)]);
//!
//! let mut server: Server<'_, Device, Caps<8>> = Server::new(Config::new("my-device", "1.0.0"));
//! server.register(&SET_VOLUME).unwrap();
//!
//! let mut device = Device { codec_register: 0 };
//! let mut out = [0u8; 1024];
//! let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call",
//!     "params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}}"#;
//! let n = server.handle(request, Principal::Model, &mut device, &mut out).unwrap().len;
//! let response = core::str::from_utf8(&out[..n]).unwrap();
//! // The evidence in one sentence a model hears, and as data where the SDKs keep it.
//! assert!(response.contains("true — read back: 40"));
//! assert!(response.contains(
//!     r#""_meta":{"io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}}"#
//! ));
//! ```
//!
//! ## Features
#![doc = document_features::document_features!()]
//!
//! The defaults are the full engine. A firmware that needs the smallest image turns them off
//! (`default-features = false`) and names what it uses; on the ESP32-C3 example firmware
//! (`examples/esp32-serial`, opt-level `z`, fat LTO) that saved about 26 KiB of flash without
//! `float` (no float parser or printer), 8 KiB without `modern` and 3 KiB without `resources`.
//! Without them:
//! - **`float`**: nothing Number-typed can be declared or returned. Integer parameters still
//!   accept every integral spelling (`50`, `5e1`, `50.0`: parsed digit by digit, no float
//!   involved), and reject `50.5` or `"50"` with the usual error. Task progress
//!   ([`Progress`], still `f64`) is written with at most six decimals.
//! - **`modern`**: every request follows the legacy rules (`initialize` negotiation of
//!   2024-11-05 to 2025-11-25; `params._meta` is not interpreted). `server/discover` is an
//!   unknown method (-32601; the SDKs then fall back to `initialize`), and a transport that
//!   requires 2026-07-28 ([`Input::stateless`]) gets -32602 (HTTP 400).
//! - **`resources`**: `resources/*` and `prompts/*` are unknown methods (-32601).
//! - **`strings`**: a tool takes booleans and numbers only: no `Param::string`, no `enum` or
//!   length keywords, no `Args::str`; nothing is decoded into the output buffer, and the status
//!   tool for clients without task support (whose `task_id` is a string) is not there. Ids,
//!   tool names, cursors and every other string of the protocol are read as before.
//!
//! `ParamType`, `Literal` and `Reading` have their `Number` variant only with `float`
//! (`ParamType` and `Literal` their `String` and `Str` one only with `strings`): code that must
//! build both ways matches them with a wildcard arm.
//!
//! Long-running tools (MCP Tasks) are not a feature but a size: a [`Server`] with no task slots
//! ([`Caps<N, 0>`](Caps), [`Capacities::TASKS`] = 0) has no task table, refuses long-running
//! tools at registration, does not offer `tasks/*`, and links no task code (about 17 KiB on the
//! same firmware, together with mcp-hal's kits without their `tasks` feature).
//!
//! ## Capacities
//! A [`Server`]'s type names how much it holds: `Server<'t, C, K>`, where `K` is a [`Caps`]
//! (`Caps<16>` by default: 16 tools, the rest at defaults that fit a typical board), or any
//! capacities named with [`caps!`]. Code over every server is generic over one parameter,
//! `K: Capacities` (see [`server::Capacities`]).
//!
//! ## Minimum supported Rust version
//! Rust 1.88 (the MSRV of `heapless` 0.9; edition 2024). Raising it is a minor-version change,
//! noted in the changelog.
#![cfg_attr(not(any(test, feature = "std")), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::allow_attributes_without_reason)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(all(feature = "log", feature = "defmt"))]
compile_error!("features `log` and `defmt` are mutually exclusive");

/// Builder methods that set one field each and return the value (`const fn`, so that what they
/// build can be a `const`): `name(v: T) => field = value;`, each with its own docs and attributes.
macro_rules! setters {
    ($($(#[$attr:meta])* $name:ident($v:ident: $ty:ty) => $field:ident = $value:expr;)*) => {
        $(
            $(#[$attr])*
            pub const fn $name(mut self, $v: $ty) -> Self {
                self.$field = $value;
                self
            }
        )*
    };
}

pub mod caller;
mod fmt;
pub mod registry;
pub mod result;
pub mod schema;
pub mod server;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transport;
pub mod wire;

#[cfg(test)]
mod test_support;

/// The Rust of this crate's README, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct Readme;

/// The Rust of `docs/HEARD.md` (a xiaozhi firmware's main loop), compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/HEARD.md")]
pub struct HeardDoc;

pub use registry::{
    Annotations, Audience, Confirm, Handler, RegisterError, Registry, TaskSupport, Tool,
};
#[cfg(feature = "resources")]
pub use registry::{Prompt, PromptArgument, Resource};
pub use result::{
    Base64, ContentWriter, Evidence, Level, Output, Progress, Reading, Reply, StopHook, TaskHooks,
    TaskInfo, TaskPoll, ToolError, ToolResult,
};
pub use schema::{Args, Param};
pub use server::{
    Call, Capacities, Caps, Config, Event, HandleError, Handled, Input, LogLevel, MIN_OUT_LEN,
    Notify, Polled, Principal, Revision, Server, Session, UserToolPolicy, Vision,
};

/// [`Caps`] with its capacities **named**, each one left out taking its default:
/// `caps!(tools = 16, hold = 0)` is `Caps<16, 2, 4, 448, 4, 1, 0>` (where setting the last
/// parameter means spelling all of them).
///
/// | name | what | default |
/// |---|---|---|
/// | `tools` | tool capacity (required) | — |
/// | `tasks` | long-running actions tracked at once (0: no MCP Tasks) | 2 |
/// | `cache` | recent calls kept for retransmissions (0: none) | 4 |
/// | `cache_bytes` | bytes of each kept answer | 448 |
/// | `resources` | live resources (feature `resources`) | 4 |
/// | `listen` | 2026-07-28 listen streams (feature `resources`) | 1 |
/// | `hold` | bytes for a call held for a person's confirmation: its record (`server::HOLD_RECORD`) and its message (feature `confirm`; 0: none) | 352 |
///
/// The names may come in any order; a name this table does not have, or one named twice, does not
/// compile, nor does leaving out `tools`. The values are constants (over a const generic `N`,
/// write `Caps<N, …>` itself). What each costs in RAM: [`Capacities`].
///
/// ```
/// use mcp_core::{Caps, Config, Server, caps};
///
/// struct Board;
/// // A UART firmware: 8 tools, no task table, nothing held for a person.
/// let engine: Server<'static, Board, caps!(tools = 8, tasks = 0, hold = 0)> =
///     Server::new(Config::new("uart-device", "1.0"));
/// let spelled: Server<'static, Board, Caps<8, 0, 4, 448, 4, 1, 0>> = engine;
/// # let _ = spelled;
/// ```
#[macro_export]
macro_rules! caps {
    ($($name:ident = $value:expr),+ $(,)?) => {
        $crate::caps!(@of $crate::server::Named { $($name: $value,)+ ..$crate::server::Named::DEFAULT })
    };
    (@of $named:expr) => {
        $crate::Caps<{ $named.tools() }, { $named.tasks }, { $named.cache }, { $named.cache_bytes },
            { $named.resources }, { $named.listen }, { $named.hold }>
    };
}

/// The [`Server`] type over capacities named as in [`caps!`], the tools' lifetime too:
/// `server_type!(Board; tools = 16, hold = 0)` is `Server<'static, Board, caps!(tools = 16,
/// hold = 0)>`, and `lifetime = 'a` sets the lifetime (default `'static`).
///
/// ```
/// use mcp_core::{Caps, Config, Server, server_type};
///
/// struct Board;
/// type Engine = server_type!(Board; tools = 8, tasks = 0, hold = 0);
/// let engine: Engine = Server::new(Config::new("uart-device", "1.0"));
/// let spelled: Server<'static, Board, Caps<8, 0, 4, 448, 4, 1, 0>> = engine;
/// # let _ = spelled;
/// ```
#[macro_export]
macro_rules! server_type {
    ($ctx:ty; $($named:tt)*) => {
        $crate::server_type!(@lifetime [$ctx] ['static] [] $($named)*)
    };
    // Takes `lifetime = 'a` out; every other name goes to `caps!`.
    (@lifetime [$c:ty] [$lt:lifetime] [$($kept:tt)*] lifetime = $v:lifetime $(, $($rest:tt)*)?) => {
        $crate::server_type!(@lifetime [$c] [$v] [$($kept)*] $($($rest)*)?)
    };
    (@lifetime [$c:ty] [$lt:lifetime] [$($kept:tt)*] $name:ident = $v:expr $(, $($rest:tt)*)?) => {
        $crate::server_type!(@lifetime [$c] [$lt] [$($kept)* $name = $v,] $($($rest)*)?)
    };
    (@lifetime [$c:ty] [$lt:lifetime] [$($kept:tt)*]) => {
        $crate::Server<$lt, $c, $crate::caps!($($kept)*)>
    };
}
