//! What several integration tests share: talking JSON to a server of any capacities (the
//! helper a firmware author writes too: generic over `K: Capacities`, not over nine numbers).
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "each test binary uses part of it; a test"
)]

use mcp_core::{Capacities, Principal, Server};
use serde_json::{Value, json};

/// Sends one message to `server` from `principal`; the answer, parsed (`None`: nothing written).
pub fn send<C, K: Capacities>(
    server: &mut Server<'_, C, K>,
    principal: Principal,
    board: &mut C,
    out: &mut [u8],
    msg: &Value,
) -> Option<Value> {
    let bytes = msg.to_string();
    let n = server
        .handle(bytes.as_bytes(), principal, board, out)
        .unwrap()
        .len;
    (n > 0).then(|| serde_json::from_slice(&out[..n]).unwrap())
}

/// A JSON-RPC request `method` with `params`, numbered `id`.
pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `tools/call` of `tool` with `args`, numbered `id`; the answer's `result`.
pub fn call<C, K: Capacities>(
    server: &mut Server<'_, C, K>,
    principal: Principal,
    board: &mut C,
    out: &mut [u8],
    (id, tool, args): (i64, &str, Value),
) -> Value {
    let msg = request(id, "tools/call", json!({"name": tool, "arguments": args}));
    send(server, principal, board, out, &msg).unwrap()["result"].clone()
}
