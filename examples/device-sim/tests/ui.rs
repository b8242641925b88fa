//! `--ui`'s JSON API against the real device-sim binary serving Streamable HTTP with
//! `--confirm`: the state it shows, sensors moved and read back through MCP, the button counted,
//! and a call held for the device's button confirmed by a press (the outcome on the session's
//! GET stream, the timeline telling the story). Also the page itself is served, and the API
//! refuses what it should.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use common::{ACCEPT, Events, JSON, api, press_shown, request, start, state, state_until};
use serde_json::{Value, json};

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

/// A call confirmed by a press runs from the host's timer, not from a message;
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
        let (_, v) = press_shown(&sim);
        assert_eq!(v["answers"]["tool"], "self.relay.set", "{v}");
        let done = pending.next_where("B's answer", |m| m["id"] == id);
        assert_eq!(
            done["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], true,
            "{done}"
        );
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
    assert_eq!(
        first["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"], "measured",
        "{first}"
    );
    assert_eq!(
        first["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"],
        false
    );
    confirm_on(7);
    // A sends id 5 again: it runs again (the relay goes off); it is not a replay of "off".
    let again = a.post(&off(5));
    assert_eq!(
        again["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], false,
        "{again}"
    );
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
    assert_eq!(
        again["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], false,
        "{again}"
    );
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
        (&c["tool"], &c["on_device"], &c["shown"]),
        (&json!("self.relay.set"), &json!(true), &json!(true))
    );
    // The question, and which client asks (the name its initialize gave and its session's tag).
    let client = c["client"].as_str().unwrap();
    assert!(
        client.starts_with("client #") && client.ends_with(" \"ui-test\""),
        "{client}"
    );
    assert_eq!(
        c["question"],
        format!("Switch the relay-controlled load on? (asked by {client})")
    );
    assert!(c["expires_in_ms"].as_u64().unwrap() > 20_000);
    assert_eq!(s["relay"]["on"], false);
    // The press confirms it (and says so: no `answers: null` for a press that confirmed); the call's own answer is the outcome, with the relay's measured evidence.
    let (_, v) = press_shown(&sim);
    assert_eq!(v["answers"]["tool"], "self.relay.set", "{v}");
    assert_eq!(v["answers"]["approval"], c["approval"]);
    let outcome = pending.next_where("the call's answer", |m| m["id"] == 4);
    assert_eq!(outcome["result"].get("isError"), None, "{outcome}");
    assert_eq!(
        outcome["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "measured"
    );
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
    // Two rows: the call held while it waits, then its outcome.
    let [held, relay] = relay[..] else {
        panic!("the held relay call and its outcome: {calls:#?}")
    };
    assert_eq!(
        (&held["outcome"], &held["id"], &held["delivery"]),
        (&json!("held"), &json!("4"), &Value::Null),
        "nothing delivered while it is held"
    );
    let seen = [&relay["transport"], &relay["id"], &relay["delivery"]];
    assert_eq!(seen, [&json!("http"), &json!("4"), &json!("written")]);
    assert_eq!(relay["confirmed"], true);
    assert_eq!(
        (&relay["outcome"], &relay["evidence"]),
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
    let s = state_until(&sim, "the question shown", |s| {
        s["confirmation"]["on_device"] == false
    });
    assert_eq!(s["confirmation"]["tool"], "self.reboot");
    // The client's user is asked what the page shows: the question and who asks.
    assert_eq!(ask["params"]["message"], s["confirmation"]["question"]);
    assert_eq!(
        ask["params"]["message"],
        format!(
            "Reboot the device? (asked by {})",
            s["confirmation"]["client"].as_str().unwrap()
        )
    );
    // The person says yes through the client: the call's answer comes on the call's stream.
    mcp.post(&json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"confirm":true}}}));
    let answer = stream.next_where("the call's answer", |m| m["id"] == 5);
    assert_eq!(
        answer["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "scheduled"
    );
    let s = state_until(&sim, "the reboot scheduled", |s| {
        s["reboot"]["scheduled"] == 1 && s["confirmation"].is_null()
    });
    let calls = entries(&s, "call");
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(
        (&calls[0]["outcome"], &calls[0]["text"]),
        (&json!("asked_client"), &ask["params"]["message"])
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

/// A page served by another local server (`http://localhost:3000`) cannot
/// press the button, move the sensors, read the state or call `/mcp`; the page's own origin
/// can, and a request without `Origin` (curl, scripts, SDKs) still works.
#[test]
fn another_local_origin_is_refused_and_the_pages_own_is_accepted() {
    let sim = start(&["--http", "127.0.0.1:0", "--confirm"]);
    let http = sim.http.clone().unwrap();
    let other = ("Origin", "http://localhost:3000");
    let battery = r#"{"battery":20}"#;
    assert_eq!(
        request(&sim.ui, "POST", "/sim/button", &[JSON, other], "{}").0,
        403
    );
    assert_eq!(
        request(&sim.ui, "POST", "/sim/sensor", &[JSON, other], battery).0,
        403
    );
    assert_eq!(request(&sim.ui, "GET", "/sim/state", &[other], "").0, 403);
    assert_eq!(request(&sim.ui, "GET", "/", &[other], "").0, 403);
    assert_eq!(request(&sim.ui, "GET", "/sim/nothing", &[other], "").0, 403);
    // The same host on another port is another origin, whatever its scheme.
    let ui_port = sim.ui.rsplit(':').next().unwrap();
    for origin in [
        format!(
            "http://127.0.0.1:{}",
            u32::from(ui_port.parse::<u16>().unwrap()) + 1
        ),
        format!("https://{}", sim.ui),
        format!("http://{http}"),
    ] {
        let h = [JSON, ("Origin", origin.as_str())];
        assert_eq!(
            request(&sim.ui, "POST", "/sim/button", &h, "{}").0,
            403,
            "{origin}"
        );
    }
    let s = state(&sim);
    assert_eq!(s["button"]["presses"], 0, "a refused press presses nothing");
    assert_eq!(
        s["sensors"]["battery"], 87.0,
        "a refused move moves nothing"
    );
    // The page's own origin.
    let own = format!("http://{}", sim.ui);
    let mine = [JSON, ("Origin", own.as_str())];
    let (status, body) = request(&sim.ui, "POST", "/sim/button", &mine, "{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        request(&sim.ui, "POST", "/sim/sensor", &mine, battery).0,
        200
    );
    assert_eq!(
        request(
            &sim.ui,
            "GET",
            "/sim/state",
            &[("Origin", own.as_str())],
            ""
        )
        .0,
        200
    );
    state_until(&sim, "the press counted", |s| s["button"]["presses"] == 1);
    // /mcp: another local origin, and the UI page's (the page does not call /mcp), are refused;
    // its own origin and no Origin at all are served.
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
        "capabilities":{},"clientInfo":{"name":"ui-test","version":"1"}}})
    .to_string();
    let mcp_own = format!("http://{http}");
    for (origin, want) in [
        (Some("http://localhost:3000"), 403),
        (Some(own.as_str()), 403),
        (Some(mcp_own.as_str()), 200),
        (None, 200),
    ] {
        let mut h = vec![JSON, ACCEPT];
        h.extend(origin.map(|o| ("Origin", o)));
        let (status, body) = request(&http, "POST", "/mcp", &h, &init);
        assert_eq!(status, want, "Origin {origin:?}: {body}");
    }
}

/// Half-sent requests to the UI port cannot take the process's file
/// descriptors (here 64, `ulimit -n`; a machine's 1024 went with 1,100 connections): beyond
/// `--ui-max-connections` they wait in the listen backlog, the UI closes each after
/// `--ui-header-timeout`, `/mcp` keeps answering meanwhile, and the UI answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_to_the_ui_take_neither_mcp_nor_the_ui_down() {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const HALF_SENT: usize = 80;
    let sim = tokio::task::spawn_blocking(|| {
        common::start_with_fd_limit(
            64,
            &[
                "--http",
                "127.0.0.1:0",
                "--ui-max-connections",
                "8",
                "--ui-header-timeout",
                "1",
            ],
        )
    })
    .await
    .unwrap();
    let (ui, http) = (sim.ui.clone(), sim.http.clone().unwrap());
    let started = Instant::now();
    let mut closed = tokio::task::JoinSet::new();
    for _ in 0..HALF_SENT {
        let mut s =
            tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(&ui))
                .await
                .expect("connected (the listen backlog)")
                .unwrap();
        s.write_all(format!("GET /sim/state HTTP/1.1\r\nHost: {ui}\r\n").as_bytes())
            .await
            .unwrap();
        // Each half-sent connection waits for the server to close it.
        closed.spawn(async move {
            let mut buf = [0u8; 512];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return Instant::now(),
                    Ok(_) => {}
                }
            }
        });
    }
    // /mcp answers at once.
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
        "capabilities":{},"clientInfo":{"name":"ui-test","version":"1"}}})
    .to_string();
    let mcp = tokio::task::spawn_blocking(move || {
        request(&http, "POST", "/mcp", &[JSON, ACCEPT], &init).0
    });
    let status = tokio::time::timeout(Duration::from_secs(3), mcp)
        .await
        .expect("initialize on /mcp answered within 3 s while the UI is flooded")
        .unwrap();
    assert_eq!(status, 200);
    // The UI closes half-sent connections after its header timeout.
    let mut first = Vec::new();
    while let Ok(Some(at)) = tokio::time::timeout(
        Duration::from_secs(4).saturating_sub(started.elapsed()),
        closed.join_next(),
    )
    .await
    {
        first.push(at.unwrap());
    }
    assert!(
        first.len() >= 8,
        "the UI closed {} of {HALF_SENT} half-sent requests within 4 s",
        first.len()
    );
    assert!(
        first
            .iter()
            .all(|at| *at >= started + Duration::from_millis(900)),
        "closed before its header timeout"
    );
    // The flood goes away: the UI answers again.
    closed.abort_all();
    drop(closed);
    let ui2 = ui.clone();
    let answered = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::task::spawn_blocking(move || request(&ui2, "GET", "/sim/state", &[], "").0),
    )
    .await
    .expect("the UI answered within 5 s once the flood went")
    .unwrap();
    assert_eq!(answered, 200);
    drop(sim);
}

/// The UI's request bodies are bounded as `/mcp`'s are: one shorter than its `Content-Length`
/// gets 408 after `--ui-header-timeout` and the connection closes; one beyond 4 KiB gets 413.
/// Neither presses anything.
#[test]
fn slow_and_large_bodies_to_the_ui_are_refused() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let sim = start(&["--stdio", "--ui-header-timeout", "0.5"]);
    let started = Instant::now();
    let mut slow = std::net::TcpStream::connect(&sim.ui).unwrap();
    write!(
        slow,
        "POST /sim/button HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{",
        sim.ui
    )
    .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut got = Vec::new();
    let closed = slow.read_to_end(&mut got).is_ok();
    let got = String::from_utf8_lossy(&got);
    assert!(closed, "still open after 3 s: {got:?}");
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let big = format!(r#"{{"temperature": 30{}}}"#, " ".repeat(5000));
    let (status, body) = request(&sim.ui, "POST", "/sim/sensor", &[JSON], &big);
    assert_eq!(status, 413, "{body}");
    let s = state(&sim);
    assert_eq!(s["button"]["presses"], 0);
    assert_eq!(s["sensors"]["temperature"], 21.5);
}

/// As a hostile client does it: two sessions ask to upgrade the
/// firmware (the attacker first, with its image's hash). The device used to show "Upgrade the
/// device's firmware?" twice, and the person's press for the user's upgrade approved the
/// attacker's. Now each question names what it approves (size, first hash digits) and which
/// client asks; the device shows one at a time, and the press's answer names the call it
/// approved. A quick double press answers one question only: the next one is read first.
#[test]
fn each_question_names_what_it_approves_and_a_double_press_answers_one() {
    let flash = common::fresh_flash("device-sim-ui-ota");
    let sim = start(&[
        "--http",
        "127.0.0.1:0",
        "--confirm",
        "--flash",
        flash.to_str().unwrap(),
    ]);
    let http = sim.http.clone().unwrap();
    let open = |name: &str| {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
            "capabilities":{},"clientInfo":{"name":name,"version":"1"}}});
        Session::open_with(&http, &init)
    };
    let (evil, user) = (open("evil-client"), open("claude-ai"));
    let evil_hash = "6".repeat(64);
    let user_hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let upgrade = |id: i64, size: u32, sha: &str| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
            "name":"self.upgrade_firmware","arguments":{"size":size,"sha256":sha}}})
    };
    let evil_call = Events::open(
        &http,
        "POST",
        &evil.headers(),
        &upgrade(1, 6666, &evil_hash).to_string(),
    );
    state_until(&sim, "the attacker's question shown", |s| {
        s["confirmation"]["tool"] == "self.upgrade_firmware"
    });
    let user_call = Events::open(
        &http,
        "POST",
        &user.headers(),
        &upgrade(1, 4096, user_hash).to_string(),
    );
    let s = state_until(&sim, "both waiting", |s| {
        s["waiting"].as_array().is_some_and(|w| w.len() == 2)
    });
    let (first, second) = (&s["waiting"][0], &s["waiting"][1]);
    let text = |w: &Value| w["question"].as_str().unwrap().to_string();
    let (q_evil, q_user) = (text(first), text(second));
    assert!(
        q_evil.starts_with(
            "Upgrade the device's firmware to the 6666-byte image with SHA-256 66666666…? (asked by client #"
        ) && q_evil.ends_with(" \"evil-client\")"),
        "{q_evil}"
    );
    assert!(
        q_user.starts_with(
            "Upgrade the device's firmware to the 4096-byte image with SHA-256 9f86d081…? (asked by client #"
        ) && q_user.ends_with(" \"claude-ai\")"),
        "{q_user}"
    );
    assert_eq!(
        first["client"],
        q_evil[q_evil.find("client #").unwrap()..q_evil.len() - 1]
    );
    // One question at a time: the attacker's (first held) is shown, the user's waits its turn.
    assert_eq!(s["confirmation"]["question"], q_evil);
    assert_eq!(
        (first["shown"].clone(), second["shown"].clone()),
        (json!(true), json!(false))
    );

    // The person presses (for the question shown, which now says whose and which image it is):
    // the press's answer names it. The second half of a quick double press answers nothing.
    let (_, v) = press_shown(&sim);
    assert_eq!(v["answers"]["question"], q_evil, "{v}");
    let (_, again) = api(&sim, "POST", "/sim/button", Some(&json!({})));
    assert_eq!(
        again["answers"],
        Value::Null,
        "the double press's second half: {again}"
    );
    let s = state_until(&sim, "the user's question shown", |s| {
        s["confirmation"]["question"] == q_user.as_str()
    });
    assert_eq!(s["waiting"].as_array().unwrap().len(), 1, "{s:#}");
    assert!(
        s["confirmation"]["press_counts_in_ms"].as_u64().unwrap() > 0,
        "not answerable at once: {s:#}"
    );
    // Read, and pressed for: the user's upgrade.
    let (_, v) = press_shown(&sim);
    assert_eq!(v["answers"]["question"], q_user, "{v}");
    let started = user_call.next_where("the user's upgrade", |m| m["id"] == 1);
    assert_eq!(started["result"].get("isError"), None, "{started}");
    assert_eq!(
        started["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "scheduled"
    );
    let started = evil_call.next_where("the attacker's upgrade", |m| m["id"] == 1);
    assert_eq!(started["result"].get("isError"), None, "{started}");
    user_call.close();
    evil_call.close();
    let _ = std::fs::remove_dir_all(flash.parent().unwrap());
}

/// The timeline tells the whole story of a call held for the device's button, over HTTP: every
/// call names its client (two clients both send id 3: the rows tell them apart), a session's
/// start names its client, the held call has a row while it waits, its outcome carries the
/// call's id, client and question number and comes after the press that answered it, and the
/// client's DELETE ends its session on the timeline.
#[test]
fn the_timeline_names_each_client_and_links_a_held_call_to_its_outcome() {
    let sim = start(&["--http", "127.0.0.1:0", "--confirm"]);
    let http = sim.http.clone().unwrap();
    let open = |name: &str| {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
            "capabilities":{},"clientInfo":{"name":name,"version":"1"}}});
        Session::open_with(&http, &init)
    };
    let (kitchen, phone) = (open("kitchen-tablet"), open("phone"));
    let volume = |v: i64| json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":v}}});
    kitchen.post(&volume(30));
    phone.post(&volume(40));
    let s = state_until(&sim, "both calls", |s| entries(s, "call").len() >= 2);
    let calls = entries(&s, "call");
    let clients: Vec<&str> = calls
        .iter()
        .map(|c| c["client"].as_str().unwrap())
        .collect();
    assert!(
        clients[0].starts_with("client #") && clients[0].ends_with(" \"kitchen-tablet\""),
        "{calls:#?}"
    );
    assert!(
        clients[1].starts_with("client #") && clients[1].ends_with(" \"phone\""),
        "{calls:#?}"
    );
    assert_eq!(
        (&calls[0]["id"], &calls[1]["id"]),
        (&json!("3"), &json!("3"))
    );
    let kitchen_label = clients[0].to_string();
    // Each session's start names its client.
    let started: Vec<_> = entries(&s, "session")
        .into_iter()
        .filter(|e| e["event"] == "started")
        .collect();
    assert_eq!(started.len(), 2, "{s:#}");
    assert_eq!(started[0]["client"], kitchen_label.as_str());
    assert_eq!(started[0]["transport"], "http");

    // A call held for the button has its row while it waits: held, with its client, its id and
    // the question's number.
    let relay = json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"self.relay.set","arguments":{"on":true}}});
    let pending = Events::open(&http, "POST", &kitchen.headers(), &relay.to_string());
    let s = state_until(&sim, "the held call's row and its question", |s| {
        entries(s, "call").iter().any(|e| e["outcome"] == "held") && !s["confirmation"].is_null()
    });
    let approval = s["confirmation"]["approval"].clone();
    let held = entries(&s, "call")
        .into_iter()
        .find(|e| e["outcome"] == "held")
        .unwrap()
        .clone();
    assert_eq!(
        (
            &held["tool"],
            &held["id"],
            &held["client"],
            &held["approval"]
        ),
        (
            &json!("self.relay.set"),
            &json!("4"),
            &json!(kitchen_label),
            &approval
        ),
        "{held:#}"
    );
    assert!(
        held["text"]
            .as_str()
            .unwrap()
            .starts_with("Switch the relay-controlled load on?")
    );
    assert_eq!(s["confirmation"]["id"], "4", "the question names its call");
    // The press answers it; the outcome row names the call it ends and the press, after it.
    let (_, v) = press_shown(&sim);
    assert_eq!(v["answers"]["tool"], "self.relay.set", "{v}");
    pending.next_where("the call's answer", |m| m["id"] == 4);
    let s = state_until(&sim, "the outcome's row", |s| {
        entries(s, "call")
            .iter()
            .any(|e| e["outcome"] == "ok" && e["tool"] == "self.relay.set")
    });
    let press = entries(&s, "press").into_iter().last().unwrap().clone();
    let outcome = entries(&s, "call")
        .into_iter()
        .find(|e| e["outcome"] == "ok" && e["tool"] == "self.relay.set")
        .unwrap()
        .clone();
    assert_eq!(
        (
            &outcome["id"],
            &outcome["client"],
            &outcome["approval"],
            &outcome["confirmed"]
        ),
        (&json!("4"), &json!(kitchen_label), &approval, &json!(true)),
        "{outcome:#}"
    );
    assert_eq!(press["approval"], approval, "{press:#}");
    assert_eq!(outcome["press"], press["number"], "{outcome:#} {press:#}");
    assert!(
        outcome["seq"].as_u64() > press["seq"].as_u64(),
        "the outcome after the press"
    );
    assert!(outcome["t_ms"].as_u64() >= press["t_ms"].as_u64());
    pending.close();

    // The client ends its session.
    let (status, _) = request(&http, "DELETE", "/mcp", &kitchen.headers(), "");
    assert_eq!(status, 200);
    let s = state_until(&sim, "the session's end", |s| {
        entries(s, "session").iter().any(|e| e["event"] == "ended")
    });
    let ended = entries(&s, "session")
        .into_iter()
        .find(|e| e["event"] == "ended")
        .unwrap()
        .clone();
    assert_eq!(ended["client"], kitchen_label.as_str(), "{ended:#}");
    assert!(
        ended["text"].as_str().unwrap().contains("DELETE"),
        "{ended:#}"
    );
}

/// Every simulated device of the demo board is on the page and in `/sim/state`: the fan (its
/// commanded duty and its tachometer) and the camera (frames taken) too.
#[test]
fn every_device_of_the_board_is_on_the_page() {
    let sim = start(&["--http", "127.0.0.1:0"]);
    let http = sim.http.clone().unwrap();
    let (_, page) = request(&sim.ui, "GET", "/", &[], "");
    for device in mcp_hal::sim::SimBoard::DEVICES {
        assert!(
            page.contains(&format!("data-device=\"{device}\"")),
            "no tile for the {device}"
        );
    }
    let mcp = Session::open(&http);
    mcp.post(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.fan.set_speed","arguments":{"percent":40}}}));
    mcp.post(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"self.camera.capture","arguments":{"width":16,"height":16}}}));
    let s = state_until(&sim, "the fan at speed", |s| s["fan"]["rpm"] == 1200);
    assert_eq!(s["fan"]["duty"], 40, "{s:#}");
    assert_eq!(s["camera"]["frames"], 1, "{s:#}");
}

/// A call over MQTT is on the timeline as a call over HTTP is (with its client), and so are the
/// MQTT client's session start and, when it says goodbye, its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtt_call_and_its_session_are_on_the_timeline() {
    use mqtt_fleet::{Broker, Client};
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let sim = tokio::task::spawn_blocking(move || {
        common::start(&["--mqtt", &url, "--device-id", "tl", "--confirm"])
    });
    let sim = std::sync::Arc::new(sim.await.unwrap());
    let t = std::time::Duration::from_secs(10);
    let client = Client::connect(&broker.url(), "tablet-1").unwrap();
    assert!(client.wait_for_online(1, t).await);
    let init = client.expect_answer("tl", &json!(0));
    client
        .send_control(
            "tl",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":V,
                "capabilities":{},"clientInfo":{"name":"kitchen-tablet","version":"1"}}})
            .to_string(),
        )
        .await
        .unwrap();
    tokio::time::timeout(t, init).await.unwrap().unwrap();
    client
        .send(
            "tl",
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
        )
        .await
        .unwrap();
    let call = client
        .call_tool(
            "tl",
            3,
            "self.audio_speaker.set_volume",
            json!({"volume": 35}),
            t,
        )
        .await
        .unwrap();
    assert_eq!(call["result"].get("isError"), None, "{call}");
    let on_page = |what: &'static str, ok: fn(&Value) -> bool| {
        let sim = sim.clone();
        tokio::task::spawn_blocking(move || state_until(&sim, what, ok))
    };
    let s = on_page("the MQTT call", |s| {
        entries(s, "call").iter().any(|e| e["transport"] == "mqtt")
    })
    .await
    .unwrap();
    let row = entries(&s, "call")
        .into_iter()
        .find(|e| e["transport"] == "mqtt")
        .unwrap()
        .clone();
    let label = row["client"].as_str().unwrap().to_string();
    assert!(
        label.starts_with("client #") && label.ends_with(" \"kitchen-tablet\""),
        "{row:#}"
    );
    assert_eq!(
        (&row["tool"], &row["id"], &row["outcome"], &row["evidence"]),
        (
            &json!("self.audio_speaker.set_volume"),
            &json!("3"),
            &json!("ok"),
            &json!("read_back")
        )
    );
    let started = entries(&s, "session")
        .into_iter()
        .find(|e| e["event"] == "started")
        .cloned();
    assert_eq!(
        started.map(|e| e["client"].clone()),
        Some(json!(label)),
        "{s:#}"
    );
    // The broker's acknowledgement of the answer comes after the call's row: it is filled in.
    let s = on_page("the answer's delivery", |s| {
        entries(s, "call")
            .iter()
            .any(|e| e["transport"] == "mqtt" && e["delivery"] == "written")
    })
    .await
    .unwrap();
    assert_eq!(entries(&s, "call").len(), 1, "{s:#}");
    client.close().await;
    let s = on_page("the MQTT session's end", |s| {
        entries(s, "session").iter().any(|e| e["event"] == "ended")
    })
    .await
    .unwrap();
    let ended = entries(&s, "session")
        .into_iter()
        .find(|e| e["event"] == "ended")
        .unwrap()
        .clone();
    assert_eq!(
        (&ended["client"], &ended["transport"]),
        (&json!(label), &json!("mqtt")),
        "{ended:#}"
    );
}

/// A long-running action for a client that cannot follow a task is held inside the call: its row
/// says so while the motor moves, and the answer that comes when it ends is on the timeline as
/// that call's outcome (the same id and client).
#[test]
fn a_call_held_for_its_action_gets_its_outcome_row() {
    let sim = start(&["--http", "127.0.0.1:0"]);
    let http = sim.http.clone().unwrap();
    let mcp = Session::open(&http);
    let call = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":300}}});
    let stream = Events::open(&http, "POST", &mcp.headers(), &call.to_string());
    let answer = stream.next_where("the move's answer", |m| m["id"] == 9);
    assert_eq!(answer["result"].get("isError"), None, "{answer}");
    let s = state_until(&sim, "the motor call's outcome", |s| {
        entries(s, "call").iter().any(|e| e["outcome"] == "ok")
    });
    let calls = entries(&s, "call");
    let [held, done] = calls[..] else {
        panic!("the held call and its outcome: {calls:#?}")
    };
    assert_eq!(held["outcome"], "held", "{calls:#?}");
    assert_eq!(
        (
            &done["tool"],
            &done["id"],
            &done["client"],
            &done["evidence"]
        ),
        (
            &held["tool"],
            &json!("9"),
            &held["client"],
            &json!("measured")
        ),
        "{calls:#?}"
    );
}
