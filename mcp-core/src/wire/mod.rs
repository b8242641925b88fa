//! JSON-RPC 2.0 framing: bytes ⇄ typed views. No state, no I/O, no allocation.
//!
//! The modules depend one way, each only on those listed before it (the layer test in
//! `tests/layers.rs` checks it):
//!
//! - `swar`: the bit tricks that read a word of bytes at a time, each beside its plain twin.
//! - `protocol`: the constant fragments of the messages the engine writes, each spelled once.
//! - `check`: the checking pass over untrusted bytes (grammar, UTF-8, escapes, numbers, nesting),
//!   in offsets; what both parsers below run.
//! - [`json`]: borrowed views over checked JSON ([`Json`], [`JsonStr`]); [`Json::parse`] checks a
//!   whole text.
//! - [`frame`]: the same check over a message, indexing the members dispatch needs ([`Frame`]).
//! - [`request`]: classifying a message ([`Message`]: request, notification, response, invalid).
//! - [`writer`]: the escaping, counting [`Writer`] over a caller's buffer.
//! - [`response`]: result and error envelopes.

pub(crate) mod check;
pub mod frame;
pub mod json;
pub(crate) mod protocol;
pub mod request;
pub mod response;
pub(crate) mod swar;
pub mod writer;

pub use frame::{Frame, Member};
pub use json::{Found, Integer, Json, JsonError, JsonStr, Kind};
pub use request::{Id, Invalid, Message, Request};
pub use response::ErrorCode;
pub use writer::{ArrayWriter, ObjectWriter, Writer};
