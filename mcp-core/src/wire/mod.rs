//! JSON-RPC 2.0 framing: bytes ⇄ typed views. No state, no I/O, no allocation.
//!
//! - [`json`]: the strict JSON checker and borrowed views ([`Json`], [`JsonStr`]).
//! - [`frame`]: the checking pass that also indexes a message ([`Frame`]).
//! - [`request`]: classifying a message ([`Message`]: request, notification, response, invalid).
//! - [`writer`]: the escaping, counting [`Writer`] over a caller's buffer.
//! - [`escape`]: a peer's or an image's text, escaped and capped for a log line or a display
//!   (also `transport::escape`).
//! - [`response`]: result and error envelopes.
//! - `protocol`: the constant fragments of the messages the engine writes, each spelled once.
//! - `swar`: the bit tricks that read a word of bytes at a time, each beside its plain twin.

pub mod escape;
pub mod frame;
pub mod json;
pub(crate) mod protocol;
pub mod request;
pub mod response;
pub(crate) mod swar;
pub mod writer;

pub use frame::{Found, Frame, Member};
pub use json::{Integer, Json, JsonError, JsonStr, Kind};
pub use request::{Id, Invalid, Message, Request};
pub use response::ErrorCode;
pub use writer::{ArrayWriter, ObjectWriter, Writer};
