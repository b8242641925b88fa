//! `--ui`'s JSON API against the real device-sim binary serving Streamable HTTP with
//! `--confirm`: the state it shows, sensors moved and read back through MCP, the button counted,
//! and a call held for the device's button confirmed by a press (the outcome on the session's
//! GET stream, the timeline telling the story). Also the page itself is served, and the API
//! refuses what it should.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // a test

mod common;

use common::{Events, api, request, start, state, state_until};
use serde_json::{Value, json};

const JSON: (&str, &str) = ("Content-Type", "application/json");
const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const V: &str = "2025-11-25";

/// A 2025-11-25 session without elicitation (so a confirmation is asked on the device).
struct Session {
    addr: String,
    id: String,
}

impl Session {
    fn open(addr: &str) -> Session {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
            "capabilities":{},"clientInfo":{"name":"ui-test","version":"1"}}});
        Self::open_with(addr, &init)
    }

    fn open_with(addr: &str, init: &Value) -> Session {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        use std::io::{Read, Write};
        let body = init.to_string();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let id = raw
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_string())
            })
            .expect("a session id");
        let s = Session {
            addr: addr.to_string(),
            id,
        };
        s.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        s
    }

    fn headers(&self) -> [(&str, &str); 4] {
        [
            JSON,
            ACCEPT,
            ("Mcp-Session-Id", self.id.as_str()),
            ("MCP-Protocol-Version", V),
        ]
    }

    fn post(&self, msg: &Value) -> Value {
        let (status, body) = request(
            &self.addr,
            "POST",
            "/mcp",
            &self.headers(),
            &msg.to_string(),
        );
        assert!(status == 200 || status == 202, "{status} {body}");
        serde_json::from_str(&body).unwrap_or(Value::Null)
    }

    fn read(&self, id: i64, uri: &str) -> Value {
        let r = self
            .post(&json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":uri}}));
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap()
    }
}

/// Issue 22, bug 1: a call confirmed by a press runs from the host's timer, not from a message;
/// every other engine on the board must still forget what it remembered of that tool. Session
/// A switches the relay off (evidence: measured off); session B switches it on, confirmed by a
/// press; A's retransmission of its call must run again — not replay "measured off" while the
/// relay is on. The same for a 2026-07-28 request with an idempotency key.
#[test]
fn a_press_that_runs_a_call_makes_every_engine_forget_the_tool() {
    let sim = start(&["--http", "127.0.0.1:0", "--confirm"]);
    let http = sim.http.clone().unwrap();
    let a = Session::open(&http);
    let b = Session::open(&http);
    let off = |id| json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":false}}});
    // B switches the relay on; the person confirms on the device.
    let confirm_on = |id: i64| {
        let on = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true}}});
        let pending = Events::open(&http, "POST", &b.headers(), &on.to_string());
        state_until(&sim, "the confirmation shown", |s| {
            !s["confirmation"].is_null()
        });
        let (_, v) = api(&sim, "POST", "/sim/button", None);
        assert_eq!(v["answers"]["tool"], "self.relay.set", "{v}");
        let done = pending.next_where("B's answer", |m| m["id"] == id);
        assert_eq!(done["result"]["evidence"]["observed"], true, "{done}");
        state_until(&sim, "the relay on", |s| s["relay"]["on"] == true);
    };
    let no_replay = |what: &str| {
        let s = state_until(&sim, what, |s| s["relay"]["on"] == false);
        let replays: Vec<_> = entries(&s, "call")
            .into_iter()
            .filter(|e| e["replay"] == true)
            .collect();
        assert!(replays.is_empty(), "{what}: {replays:#?}");
    };
    let first = a.post(&off(5));
    assert_eq!(first["result"]["evidence"]["level"], "measured", "{first}");
    assert_eq!(first["result"]["evidence"]["observed"], false);
    confirm_on(7);
    // A sends id 5 again: it runs again (the relay goes off); it is not a replay of "off".
    let again = a.post(&off(5));
    assert_eq!(again["result"]["evidence"]["observed"], false, "{again}");
    no_replay("A's call ran again");

    // The same for a stateless client's call with its idempotency key.
    let modern = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":false},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},
        "io.github.mcu-mcp/idempotencyKey":"k-1"}}});
    let stateless = [
        JSON,
        ACCEPT,
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "self.relay.set"),
    ];
    let (status, body) = request(&http, "POST", "/mcp", &stateless, &modern.to_string());
    assert_eq!(status, 200, "{body}");
    confirm_on(8);
    let (_, body) = request(&http, "POST", "/mcp", &stateless, &modern.to_string());
    let again: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(again["result"]["evidence"]["observed"], false, "{again}");
    no_replay("the stateless call ran again");
}

fn entries<'a>(s: &'a Value, kind: &str) -> Vec<&'a Value> {
    s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

#[test]
fn the_json_api_moves_the_sensors_presses_the_button_and_confirms_on_the_device() {
    let sim = start(&["--http", "127.0.0.1:0", "--confirm"]);
    let http = sim.http.clone().unwrap();
    // The page, and the state before anything happened.
    let (status, page) = request(&sim.ui, "GET", "/", &[], "");
    assert_eq!(status, 200);
    assert!(page.contains("<title>device-sim</title>") && page.contains("/sim/state"));
    let s = state(&sim);
    assert_eq!(s["device"]["confirm"], true);
    assert_eq!(
        s["device"]["transports"],
        json!([format!("http://{http}/mcp")])
    );
    assert_eq!(s["sensors"], json!({"temperature": 21.5, "battery": 87.0}));
    assert_eq!(s["button"], json!({"presses": 0, "down": false}));
    assert_eq!(s["relay"], json!({"on": false}));
    assert_eq!(s["confirmation"], Value::Null);
    assert_eq!(s["timeline"], json!([]));
    for key in [
        "speaker",
        "screen",
        "motor",
        "reboot",
        "door_open",
        "uptime_ms",
        "next_seq",
    ] {
        assert!(!s[key].is_null(), "{key} missing: {s:#}");
    }

    // The API refuses what it should.
    for (body, status) in [
        (json!({"temperature": "hot"}), 400),
        (json!({"humidity": 40}), 400),
        (json!({"battery": 101}), 400),
        (json!({"temperature": -41}), 400),
        (json!({}), 400),
        (json!([31.5]), 400),
    ] {
        assert_eq!(
            api(&sim, "POST", "/sim/sensor", Some(&body)).0,
            status,
            "{body}"
        );
    }
    let (status, _) = request(&sim.ui, "POST", "/sim/sensor", &[], r#"{"battery":20}"#);
    assert_eq!(
        status, 415,
        "a sensor move needs Content-Type: application/json"
    );
    let evil = [JSON, ("Origin", "http://evil.example")];
    assert_eq!(request(&sim.ui, "POST", "/sim/button", &evil, "{}").0, 403);
    assert_eq!(api(&sim, "GET", "/sim/nothing", None).0, 404);
    assert_eq!(api(&sim, "GET", "/sim/state?since=x", None).0, 400);
    assert_eq!(
        state(&sim)["button"]["presses"],
        0,
        "a refused press presses nothing"
    );

    // Sensors moved through the API read back through MCP.
    let (status, v) = api(
        &sim,
        "POST",
        "/sim/sensor",
        Some(&json!({"temperature": 31.5, "battery": 20})),
    );
    assert_eq!(status, 200);
    assert_eq!(
        v,
        json!({"sensors": {"temperature": 31.5, "battery": 20.0}})
    );
    let mcp = Session::open(&http);
    assert_eq!(
        mcp.read(1, "device://sensors/temperature"),
        json!({"celsius": 31.5})
    );
    assert_eq!(
        mcp.read(2, "device://sensors/battery"),
        json!({"percent": 20})
    );

    // A press with nothing waiting is counted.
    let (status, v) = api(&sim, "POST", "/sim/button", None);
    assert_eq!(
        (status, v),
        (200, json!({"pressed": true, "answers": null}))
    );
    state_until(&sim, "the press counted", |s| s["button"]["presses"] == 1);
    assert_eq!(mcp.read(3, "device://buttons/main"), json!({"presses": 1}));

    // Switching the relay on waits for the device's button: the call's answer is held back
    // (an SSE stream stays open for it) until the person answers.
    let call = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true}}});
    let pending = Events::open(&http, "POST", &mcp.headers(), &call.to_string());
    assert_eq!(pending.content_type, "text/event-stream");
    let s = state_until(&sim, "the confirmation shown", |s| {
        !s["confirmation"].is_null()
    });
    let c = &s["confirmation"];
    assert_eq!(
        (&c["tool"], &c["question"], &c["on_device"], &c["shown"]),
        (
            &json!("self.relay.set"),
            &json!("Switch the relay-controlled load on?"),
            &json!(true),
            &json!(true)
        )
    );
    assert!(c["expires_in_ms"].as_u64().unwrap() > 20_000);
    assert_eq!(s["relay"]["on"], false);
    // The press confirms it (and says so: issue 23, no `answers: null` for a press that
    // confirmed); the call's own answer is the outcome, with the relay's measured evidence.
    let (_, v) = api(&sim, "POST", "/sim/button", Some(&json!({})));
    assert_eq!(v["answers"]["tool"], "self.relay.set", "{v}");
    assert_eq!(v["answers"]["approval"], c["approval"]);
    let outcome = pending.next_where("the call's answer", |m| m["id"] == 4);
    assert_eq!(outcome["result"]["isError"], false, "{outcome}");
    assert_eq!(outcome["result"]["evidence"]["level"], "measured");
    let s = state_until(&sim, "the relay on", |s| {
        s["relay"]["on"] == true && s["confirmation"].is_null()
    });
    assert_eq!(s["button"]["presses"], 2, "the press was counted too");

    // The timeline: the calls with their outcome, evidence and delivery, the presses, the move.
    let calls = entries(&s, "call");
    let relay: Vec<_> = calls
        .iter()
        .filter(|e| e["tool"] == "self.relay.set")
        .collect();
    assert_eq!(relay.len(), 1, "{calls:#?}");
    assert_eq!(
        (
            &relay[0]["transport"],
            &relay[0]["id"],
            &relay[0]["delivery"]
        ),
        (&json!("http"), &json!("4"), &json!("written"))
    );
    assert_eq!(relay[0]["confirmed"], true);
    assert_eq!(
        (&relay[0]["outcome"], &relay[0]["evidence"]),
        (&json!("ok"), &json!("measured"))
    );
    let presses = entries(&s, "press");
    assert_eq!(presses.len(), 2);
    assert_eq!(presses[1]["answers"], "self.relay.set");
    assert_eq!(entries(&s, "sensor")[0]["temperature"], 31.5);
    let seqs: Vec<u64> = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // ?since= keeps only what came after.
    let last = *seqs.last().unwrap();
    let (_, later) = api(&sim, "GET", &format!("/sim/state?since={}", last - 1), None);
    assert_eq!(later["timeline"].as_array().unwrap().len(), 1);
    pending.close();
}

#[test]
fn the_timeline_is_bounded() {
    let sim = start(&["--stdio"]);
    for i in 0..120 {
        let t = 20.0 + f64::from(i % 10);
        assert_eq!(
            api(
                &sim,
                "POST",
                "/sim/sensor",
                Some(&json!({"temperature": t}))
            )
            .0,
            200
        );
    }
    let s = state(&sim);
    let tl = s["timeline"].as_array().unwrap();
    assert_eq!(tl.len(), 100);
    assert_eq!(tl[0]["seq"], 21, "the oldest went first");
    assert_eq!(s["next_seq"], 121);
    assert_eq!(s["device"]["transports"], json!(["stdio"]));
}

#[test]
fn a_client_that_elicits_is_asked_and_the_timeline_shows_its_answer() {
    let sim = start(&["--http", "127.0.0.1:0", "--confirm"]);
    let http = sim.http.clone().unwrap();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
        "capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"ui-test","version":"1"}}});
    let mcp = Session::open_with(&http, &init);
    // The call's POST stream carries the question first.
    let call = json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"self.reboot","arguments":{}}});
    let stream = Events::open(&http, "POST", &mcp.headers(), &call.to_string());
    let ask = stream.next_where("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(ask["params"]["message"], "Reboot the device?");
    let s = state_until(&sim, "the question shown", |s| {
        s["confirmation"]["on_device"] == false
    });
    assert_eq!(s["confirmation"]["tool"], "self.reboot");
    // The person says yes through the client: the call's answer comes on the call's stream.
    mcp.post(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"confirm":true}}}));
    let answer = stream.next_where("the call's answer", |m| m["id"] == 5);
    assert_eq!(answer["result"]["evidence"]["level"], "scheduled");
    let s = state_until(&sim, "the reboot scheduled", |s| {
        s["reboot"]["scheduled"] == 1 && s["confirmation"].is_null()
    });
    let calls = entries(&s, "call");
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(
        (&calls[0]["outcome"], &calls[0]["text"]),
        (&json!("asked_client"), &json!("Reboot the device?"))
    );
    assert_eq!(
        (
            &calls[1]["tool"],
            &calls[1]["id"],
            &calls[1]["confirmed"],
            &calls[1]["evidence"]
        ),
        (
            &json!("self.reboot"),
            &json!("5"),
            &json!(true),
            &json!("scheduled")
        )
    );
}
