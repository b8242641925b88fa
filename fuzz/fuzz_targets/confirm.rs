//! Confirm flows (a person's yes is a security boundary): several clients of one
//! engine (`Peer::named`, each with its `Session` lent by the driver as a transport does), or
//! one point-to-point client; tools that ask first (one always, one by `Confirm::when`) and one
//! that does not; `initialize` with and without elicitation; calls (from the model or a person,
//! retransmitted, too long to hold); answers to the question (yes, no, cancel, errors, malformed)
//! with its id, another client's, an older, altered or guessed one; presses of the button for
//! the shown question or an older one, before, at or after it was shown and around its deadline;
//! polls at the edges of the timeout and the answer budget; 2026-07-28 retries with the
//! `requestState` echoed, altered, reused or made up; forgotten clients; raw messages.
//!
//! Every step is checked against the reference model `mcp_fuzz::approvals` (see there for the
//! oracle).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::confirm::Flow;

fuzz_target!(|data: &[u8]| {
    Flow::run(data);
});
