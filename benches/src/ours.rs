//! The mcu-mcp side: a [`Server`] over the device-sim [`Board`], fed a fixed cycle of messages.

use mcp_core::registry::Tool;
use mcp_core::{Caps, Config, Principal, Server};
use serde_json::Value;

use crate::board::Board;
use crate::harness::{Check, Harness, INITIALIZE, Step};

/// The output buffer size: the README's `9 * 1024`.
pub const OUT_LEN: usize = 9 * 1024;

/// Checks the board after a checked cycle.
pub type BoardCheck = fn(&mut Board) -> Result<(), String>;

/// A server with `N` tool slots over a [`Board`], and the message cycle it is fed.
pub struct Ours<const N: usize> {
    server: Server<'static, Board, Caps<N>>,
    board: Board,
    out: Vec<u8>,
    steps: Vec<Step>,
    next: usize,
    check: Check,
    board_check: BoardCheck,
}

impl<const N: usize> core::fmt::Debug for Ours<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ours")
            .field("steps", &self.steps.len())
            .finish_non_exhaustive()
    }
}

/// A server with `tools` registered, already initialized with [`INITIALIZE`] (2025-11-25).
pub fn server<const N: usize>(
    tools: &[&'static Tool<Board>],
) -> (Server<'static, Board, Caps<N>>, Board) {
    let mut server: Server<'static, Board, Caps<N>> =
        Server::new(Config::new("device-sim", "0.1.0"));
    for tool in tools {
        if let Err(e) = server.register(tool) {
            panic!("registering {}: {e:?}", tool.name());
        }
    }
    let mut board = Board::default();
    let mut out = vec![0u8; OUT_LEN];
    let init = INITIALIZE.replace("ID", "0");
    match server.handle(init.as_bytes(), Principal::Model, &mut board, &mut out) {
        Ok(h) if h.len > 0 => {}
        other => panic!("initialize failed: {other:?}"),
    }
    (server, board)
}

impl<const N: usize> Ours<N> {
    /// A harness over `server`, feeding `steps` in a cycle.
    pub fn new(
        (server, board): (Server<'static, Board, Caps<N>>, Board),
        steps: Vec<Step>,
        check: Check,
        board_check: BoardCheck,
    ) -> Self {
        Ours {
            server,
            board,
            out: vec![0u8; OUT_LEN],
            steps,
            next: 0,
            check,
            board_check,
        }
    }
}

/// Handles one message; returns the response bytes.
fn handle<'o, const N: usize>(
    server: &mut Server<'static, Board, Caps<N>>,
    board: &mut Board,
    out: &'o mut [u8],
    message: &[u8],
) -> &'o [u8] {
    let len = match server.handle(message, Principal::Model, board, out) {
        Ok(h) => h.len,
        Err(e) => panic!("handle: {e:?}"),
    };
    out.get(..len).unwrap_or_default()
}

impl<const N: usize> Harness for Ours<N> {
    fn step(&mut self) -> usize {
        let Self {
            server,
            board,
            out,
            steps,
            next,
            ..
        } = self;
        let mut total = 0;
        if let Some(messages) = steps.get(*next) {
            for m in messages {
                total += handle(server, board, out, m).len();
            }
        }
        *next = (*next + 1) % steps.len().max(1);
        total
    }

    fn responses(&mut self, i: usize) -> Vec<Vec<u8>> {
        let Self {
            server,
            board,
            out,
            steps,
            ..
        } = self;
        steps
            .get(i)
            .map(|messages| {
                messages
                    .iter()
                    .map(|m| handle(server, board, out, m).to_vec())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn check(&mut self) -> Result<(), String> {
        for i in 0..self.steps.len() {
            check_step(i, &self.responses(i), self.check)?;
        }
        (self.board_check)(&mut self.board)
    }
}

/// Parses the responses to step `i` and applies `check` to them.
pub fn check_step(i: usize, responses: &[Vec<u8>], check: Check) -> Result<(), String> {
    let parsed = responses
        .iter()
        .map(|r| parse_response(r))
        .collect::<Result<Vec<Value>, String>>()?;
    check(i, &parsed).map_err(|e| format!("step {i}: {e}"))
}

/// Parses response bytes as JSON (an empty response is `null`).
pub fn parse_response(bytes: &[u8]) -> Result<Value, String> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "response is not JSON ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    })
}
