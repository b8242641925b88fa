//! What every scenario's harness is, whichever implementation it runs: the steps, the checks,
//! the cycle and the `initialize` sent first (the implementations' modules and the scenarios'
//! table all build on it).

use serde_json::Value;

/// Messages handled by one iteration (one message, or a `tools/list` page walk).
pub type Step = Vec<Vec<u8>>;

/// Checks the responses of step `i` of the cycle.
pub type Check = fn(usize, &[Value]) -> Result<(), String>;

/// How many distinct messages a cycle has (more than the engine's 4 remembered calls).
pub const CYCLE: usize = 8;

/// The `initialize` request sent first to every server (`ID` is replaced by the request id).
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-client","version":"1.0.0"}}}"#;

/// One benchmark's harness.
pub trait Harness {
    /// Handles the next step of the cycle; returns the number of response bytes produced.
    fn step(&mut self) -> usize;
    /// The response bytes to step `i` of the cycle, one per message (not timed; for checks and
    /// `dispatch-loop --show`).
    fn responses(&mut self, i: usize) -> Vec<Vec<u8>>;
    /// Runs one whole cycle and checks every response.
    ///
    /// # Errors
    /// What was wrong with which response.
    fn check(&mut self) -> Result<(), String>;
}
