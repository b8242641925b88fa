//! Deterministic hostile input: mutated messages (bit flips, cuts, splices, deep nesting, odd
//! escapes) never panic the engine, and each gets either nothing (a notification) or exactly one
//! well-formed JSON-RPC 2.0 response that fits the buffer. A handler only runs on arguments that
//! pass validation.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

mod common;

use mcp_core::registry::Tool;
use mcp_core::{Args, Caps, Config, Param, Principal, Reply, Server, ToolResult};
use serde_json::Value;

#[derive(Default)]
struct Dev {
    calls: usize,
}

fn act(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    // Validation guarantees these: a handler bug would show as a panic here.
    let v = a.int("volume").unwrap();
    assert!((0..=100).contains(&v));
    #[cfg(feature = "strings")]
    let (t, l) = {
        let t = a.str("theme").unwrap();
        assert!(t == "light" || t == "dark");
        let l = a.opt_str("label").unwrap().unwrap_or("");
        assert!(l.chars().count() <= 8);
        (t, l)
    };
    #[cfg(not(feature = "strings"))]
    let (t, l) = ("", "");
    r.json(|o| {
        o.int("volume", v).str("theme", t).str("label", l);
    })
}

fn slow(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    Ok(mcp_core::Output::task(1))
}

fn slow_poll(_: &mut Dev, t: &mcp_core::TaskInfo) -> mcp_core::TaskPoll {
    if t.now_ms > t.started_ms {
        mcp_core::TaskPoll::Done(Ok(mcp_core::Output::bool(true)))
    } else {
        mcp_core::TaskPoll::Working(None)
    }
}

const TOOLS: [Tool<Dev>; 3] = [
    Tool::new("self.slow", "Slow", slow).long_running(
        mcp_core::TaskSupport::Optional,
        mcp_core::TaskHooks {
            poll: slow_poll,
            stop: None,
            timeout_ms: 1000,
        },
    ),
    Tool::new("self.act", "Act", act).params(&[
        Param::integer("volume", "v").range(0, 100),
        #[cfg(feature = "strings")]
        Param::string("theme", "t").one_of(&["light", "dark"]),
        #[cfg(feature = "strings")]
        Param::string("label", "l").length(0, 8).optional(),
    ]),
    Tool::new("self.user", "User", act).user_only(),
];

const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.act","arguments":{"volume":50,"theme":"dark","label":"k\u00e9"}}}"#,
    r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/list","params":{"cursor":"00010000","withUserTools":true}}"#,
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"vision":{"url":"u","token":"t"}}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
    r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"self.act","arguments":{"volume":5,"theme":"light"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/logLevel":"debug","progressToken":"p"}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"self.slow","arguments":{},"task":{"ttl":100}}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"task-0123456789abcdef","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"tasks/cancel","params":{"taskId":"task-0123456789abcdef"}}"#,
];

use common::Rng;

const PIECES: &[&str] = &[
    "\"",
    "\\",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "1e999",
    "-0",
    "1.5",
    "\\u0000",
    "\\ud800",
    "\\udc00",
    "\u{1F600}",
    "\"id\":",
    "\"volume\":",
    "9223372036854775808",
    " ",
    "\n",
    "\"jsonrpc\":\"2.0\"",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut m = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(m.len() + 1);
        match rng.below(6) {
            0 if !m.is_empty() => {
                let i = at.min(m.len() - 1);
                m[i] ^= 1 << rng.below(8);
            }
            1 => m.truncate(at),
            2 => {
                let piece = PIECES[rng.below(PIECES.len())];
                m.splice(at..at, piece.bytes());
            }
            3 if !m.is_empty() => {
                let end = (at + rng.below(8)).min(m.len());
                m.drain(at.min(end)..end);
            }
            4 => {
                let depth = rng.below(200);
                let nest: Vec<u8> = "["
                    .repeat(depth)
                    .bytes()
                    .chain("]".repeat(depth).bytes())
                    .collect();
                m.splice(at..at, nest);
            }
            _ => {
                let other = SEEDS[rng.below(SEEDS.len())].as_bytes();
                let from = rng.below(other.len());
                m.splice(at..at, other[from..].iter().copied());
            }
        }
    }
    m
}

fn check_response(input: &[u8], out: &[u8]) {
    let v: Value = serde_json::from_slice(out).unwrap_or_else(|e| {
        panic!(
            "invalid JSON out ({e}) for input {:?}: {:?}",
            String::from_utf8_lossy(input),
            String::from_utf8_lossy(out)
        )
    });
    assert_eq!(v["jsonrpc"], "2.0");
    let has_result = v.get("result").is_some();
    let has_error = v.get("error").is_some();
    assert!(has_result ^ has_error, "{v}");
    assert!(v.get("id").is_some(), "{v}");
    assert!(
        v["id"].is_null() || v["id"].is_string() || v["id"].is_i64() || v["id"].is_u64(),
        "{v}"
    );
    if has_error {
        assert!(v["error"]["code"].is_i64(), "{v}");
        assert!(v["error"]["message"].is_string(), "{v}");
    }
}

#[test]
fn mutated_messages_get_one_well_formed_answer_or_none() {
    let mut server: Server<'_, Dev, Caps<4>> = Server::new(Config::new("t", "1").page_bytes(600));
    for t in &TOOLS {
        server.register(t).unwrap();
    }
    let mut dev = Dev::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = vec![0u8; 1024];
    let (mut answered, mut silent) = (0, 0);
    for i in 0..30_000 {
        let seed = SEEDS[i % SEEDS.len()].as_bytes();
        let msg = mutate(&mut rng, seed);
        let principal = if rng.below(2) == 0 {
            Principal::Model
        } else {
            Principal::User
        };
        let n = server
            .handle(&msg, principal, &mut dev, &mut out)
            .unwrap()
            .len;
        assert!(n <= out.len());

        if n == 0 {
            silent += 1;
        } else {
            answered += 1;
            check_response(&msg, &out[..n]);
        }
        // Let tasks advance (after the answer was checked: poll reuses the buffer); whatever the
        // engine owes must be well-formed too.
        if i % 7 == 0 {
            loop {
                let m = server.poll(i as u64, &mut dev, &mut out);
                if m == 0 {
                    break;
                }
                let v: Value = serde_json::from_slice(&out[..m]).unwrap();
                assert_eq!(v["jsonrpc"], "2.0");
            }
        }
    }
    println!(
        "{answered} answered, {silent} silent, {} handler calls",
        dev.calls
    );
    assert!(
        answered > 20_000 && silent > 100,
        "the mutations exercise both paths"
    );
}

/// `params` nested `depth` levels deep (objects all the way down).
fn nested(depth: usize) -> String {
    let mut v = String::from("1");
    for _ in 0..depth {
        v = format!(r#"{{"a":{v}}}"#);
    }
    v
}

/// Every request with an id gets an answer, also one nested deeper than
/// the engine reads: -32700 with its id when the message can still be checked (up to the
/// checker's own limit), with `id: null` beyond it; a notification or a client's response that
/// is too deep gets nothing.
#[test]
fn a_request_nested_too_deep_is_answered_with_its_id() {
    let mut server: Server<'_, Dev, Caps<4>> = Server::new(Config::new("t", "1"));
    for t in &TOOLS {
        server.register(t).unwrap();
    }
    let mut dev = Dev::default();
    let mut out = vec![0u8; 1024];
    let mut send = |msg: &str| {
        let n = server
            .handle(msg.as_bytes(), Principal::Model, &mut dev, &mut out)
            .unwrap()
            .len;
        (n > 0).then(|| serde_json::from_slice::<Value>(&out[..n]).unwrap())
    };
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;
    assert!(send(init).unwrap()["result"].is_object());
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    for (id, params) in [
        (
            "7",
            format!(r#"{{"name":"self.act","arguments":{}}}"#, nested(40)),
        ),
        (r#""x\"y""#, format!(r#"{{"deep":{}}}"#, nested(40))),
        ("8", format!(r#"{{"deep":{},{meta}}}"#, nested(40))),
        ("9", format!(r#"{{"deep":{}}}"#, nested(120))),
    ] {
        let msg =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#);
        let v = send(&msg).unwrap_or_else(|| panic!("no answer to id {id}"));
        check_response(
            msg.as_bytes(),
            serde_json::to_string(&v).unwrap().as_bytes(),
        );
        assert_eq!(v["id"], serde_json::from_str::<Value>(id).unwrap(), "{v}");
        assert_eq!(v["error"]["code"], -32700, "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("nested deeper than 32"), "{message}");
    }
    // The id member after the deep part is read as well.
    let msg = format!(
        r#"{{"jsonrpc":"2.0","method":"ping","params":{},"id":"late"}}"#,
        nested(50)
    );
    assert_eq!(send(&msg).unwrap()["id"], "late");
    // Beyond what the checker can follow: the id cannot be read safely.
    let msg = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"ping","params":{}}}"#,
        nested(200)
    );
    let v = send(&msg).unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (Value::Null, serde_json::json!(-32700))
    );
    // A deep notification and a deep response: nothing to answer.
    let msg = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{}}}"#,
        nested(40)
    );
    assert_eq!(send(&msg), None);
    let msg = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{}}}"#, nested(40));
    assert_eq!(send(&msg), None);
    // A deep message that is no valid request but has an id: answered with it.
    let msg = format!(r#"{{"id":11,"method":"ping","params":{}}}"#, nested(40));
    assert_eq!(send(&msg).unwrap()["id"], 11);
    assert_eq!(dev.calls, 0);
}
