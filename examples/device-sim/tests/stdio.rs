//! Drives the real device-sim binary over its stdin/stdout, as an MCP client would.
#![allow(clippy::restriction, reason = "a test")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct Sim {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Sim {
    fn start(args: &[&str]) -> Sim {
        let mut child = Command::new(env!("CARGO_BIN_EXE_device-sim"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start device-sim");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Sim {
            child,
            stdin,
            stdout,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(line.ends_with('\n'), "no complete line: {line:?}");
        line.trim_end().to_string()
    }

    fn ask(&mut self, msg: &str) -> Value {
        self.send_raw(format!("{msg}\n").as_bytes());
        let line = self.line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    fn finish(mut self) -> String {
        drop(self.stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        assert!(self.child.wait().unwrap().success());
        rest
    }
}

/// The demo board's tools the model may see, in listing order (its table, without the user-only
/// ones).
fn model_tools() -> Vec<&'static str> {
    mcp_hal::sim::DemoBoard::<mcp_hal::sim::SimTime>::TOOLS
        .iter()
        .filter(|t| t.audience() != mcp_core::Audience::User)
        .map(|t| t.name())
        .collect()
}

fn call(id: i64, name: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}).to_string()
}

/// The names of the tools a `tools/list` answer lists.
fn tool_names(list: &Value) -> Vec<&str> {
    let tools = list["result"]["tools"].as_array().unwrap();
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn a_xiaozhi_backend_session_over_stdio() {
    let mut sim = Sim::start(&["--stdio"]);
    // xinnan's order: initialize id 1 (2024-11-05, vision), tools/list id 2, calls from id 1.
    let init = sim.ask(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"vision":{"url":"http://127.0.0.1:8003/mcp/vision/explain","token":"abc"}},"clientInfo":{"name":"xiaozhi-mqtt-client","version":"1.0.0"}}}"#);
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(init["result"]["serverInfo"]["name"], "device-sim");
    let list = sim.ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let names = tool_names(&list);
    assert_eq!(names, model_tools());
    let set = sim.ask(&call(
        1,
        "self.audio_speaker.set_volume",
        json!({"volume": 35}),
    ));
    // The first text (all a xiaozhi backend hands the model) carries the evidence.
    assert_eq!(set["result"]["content"][0]["text"], "true — read back: 35");
    assert_eq!(set["result"].get("isError"), None);
    assert_eq!(
        set["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level": "read_back", "commanded": 35, "observed": 35})
    );
    let status = sim.ask(&call(2, "self.get_device_status", json!({})));
    assert_eq!(
        status["result"]["structuredContent"]["audio_speaker"]["volume"],
        35
    );
    let text: Value =
        serde_json::from_str(status["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, status["result"]["structuredContent"]);
    // 2024-11-05: invalid arguments are a -32602 error.
    let bad = sim.ask(&call(
        3,
        "self.audio_speaker.set_volume",
        json!({"volume": 101}),
    ));
    assert_eq!(bad["error"]["code"], -32602);
    assert_eq!(
        bad["error"]["message"],
        r#"Invalid argument "volume": expected an integer from 0 to 100, got 101; nothing was changed"#
    );
    // The volume did not change.
    let status = sim.ask(&call(4, "self.get_device_status", json!({})));
    assert_eq!(
        status["result"]["structuredContent"]["audio_speaker"]["volume"],
        35
    );
    // A notification gets no line; the next request's answer comes next.
    sim.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    assert_eq!(
        sim.ask(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#),
        json!({"jsonrpc":"2.0","id":9,"result":{}})
    );
    assert_eq!(sim.finish(), "");
}

#[test]
fn malformed_input_gets_well_formed_errors() {
    let mut sim = Sim::start(&["--stdio"]);
    sim.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\"\r\n");
    let v: Value = serde_json::from_str(&sim.line()).unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    sim.send_raw(b"\xff\xfe\n");
    let v: Value = serde_json::from_str(&sim.line()).unwrap();
    assert_eq!(v["error"]["code"], -32700);
    sim.send_raw(b"\n\r\n   \n");
    let v = sim.ask(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    assert_eq!(v["error"]["code"], -32600);
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    assert_eq!(sim.ask(&deep)["error"]["code"], -32700);
    let v = sim.ask(r#"{"jsonrpc":"2.0","id":"\u00e9\"x","method":"server/discover"}"#);
    assert_eq!(v["id"], "é\"x");
    assert_eq!(v["error"]["code"], -32601);
    // CRLF line endings are fine.
    sim.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\r\n");
    assert_eq!(sim.line(), r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
    assert_eq!(sim.finish(), "");
}

/// `params` nested `depth` objects deep.
fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!({ "a": v });
    }
    v
}

/// A request nested deeper than the engine reads is answered -32700 with
/// its id, on stdio and inside the xiaozhi envelope (whose own level no longer hides the
/// payload); a frame nobody can read gets -32700 with `id: null` in an envelope, not silence.
#[test]
fn deep_requests_are_answered_with_their_id_on_stdio_and_in_the_xiaozhi_envelope() {
    let deep = |id: Value| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"self.get_device_status","arguments":nested(40)}})
    };
    let mut sim = Sim::start(&["--stdio"]);
    sim.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#);
    let v = sim.ask(&deep(json!(7)).to_string());
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(7), json!(-32700))
    );
    sim.finish();

    let mut sim = Sim::start(&["--envelope", "xiaozhi"]);
    let _hello = sim.line();
    sim.send_raw(b"{\"type\":\"hello\",\"transport\":\"websocket\",\"session_id\":\"s-1\"}\n");
    // The payload at depth 40 + 1 for the envelope.
    let v =
        sim.ask(&json!({"session_id":"s-1","type":"mcp","payload":deep(json!("x"))}).to_string());
    assert_eq!(v["type"], "mcp", "{v}");
    assert_eq!(v["session_id"], "s-1");
    assert_eq!(v["payload"]["id"], "x", "{v}");
    assert_eq!(v["payload"]["error"]["code"], -32700);
    // Deeper than anything can be read: answered all the same, with id null.
    let unreadable = json!({"session_id":"s-1","type":"mcp","payload":{"jsonrpc":"2.0","id":9,
        "method":"ping","params":nested(200)}});
    let v = sim.ask(&unreadable.to_string());
    assert_eq!(v["type"], "mcp", "{v}");
    assert_eq!(v["payload"]["id"], Value::Null);
    assert_eq!(v["payload"]["error"]["code"], -32700);
    // Still serving.
    let v = sim.ask(
        r#"{"session_id":"s-1","type":"mcp","payload":{"jsonrpc":"2.0","id":2,"method":"ping"}}"#,
    );
    assert_eq!(v["payload"]["id"], 2);
    sim.finish();
}

#[test]
fn modern_clients_get_tool_errors_and_paging() {
    let mut sim = Sim::start(&["--stdio", "--extra-tools", "40", "--page-bytes", "4000"]);
    sim.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = sim.ask(
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":params}).to_string(),
        );
        assert!(page["result"].to_string().len() <= 4000);
        names.extend(
            page["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string()),
        );
        pages += 1;
        match page["result"].get("nextCursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages}");
    // Every tool of the demo board's table the model may see, in order, then the fillers.
    let expected: Vec<String> = model_tools()
        .into_iter()
        .map(str::to_string)
        .chain((1..=40).map(|i| format!("self.extra.filler_{i:03}")))
        .collect();
    assert_eq!(names, expected);
    let bad = sim.ask(&call(5, "self.screen.set_theme", json!({"theme": "blue"})));
    assert_eq!(bad["result"]["isError"], true);
    assert_eq!(
        bad["result"]["content"][0]["text"],
        r#"Invalid argument "theme": expected one of "light", "dark", got "blue""#
    );
    sim.finish();
}

#[test]
fn user_principal_and_user_tools() {
    let mut sim = Sim::start(&["--stdio", "--principal", "user"]);
    let list = sim
        .ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"withUserTools":true}}"#);
    let reboot = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "self.reboot")
        .unwrap()
        .clone();
    assert_eq!(reboot["annotations"]["audience"], json!(["user"]));
    // A person's client lists them without asking for them: what it may call, it sees.
    let list = sim.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert!(
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "self.reboot" && t["annotations"]["audience"] == json!(["user"])),
        "{list}"
    );
    let r = sim.ask(&call(1, "self.reboot", json!({})));
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "scheduled"
    );
    sim.finish();

    // The model (the default principal, without --confirm): xiaozhi's backend asks with
    // withUserTools to show a person the user-only tools, so they are listed, and the model's
    // call is still refused.
    let mut sim = Sim::start(&["--stdio"]);
    let list = sim
        .ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"withUserTools":true}}"#);
    let names = tool_names(&list);
    assert!(names.contains(&"self.reboot"), "{list}");
    let list = sim.ask(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert!(!list.to_string().contains("self.reboot"), "{list}");
    let r = sim.ask(&call(1, "self.reboot", json!({})));
    assert_eq!(r["error"]["code"], -32602);
    sim.finish();
}

#[test]
fn xiaozhi_envelope() {
    let mut sim = Sim::start(&["--envelope", "xiaozhi"]);
    let hello: Value = serde_json::from_str(&sim.line()).unwrap();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["features"]["mcp"], true);
    // MCP before the hello exchange completes, without session_id, is served.
    let v = sim.ask(r#"{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#);
    assert_eq!(
        v,
        json!({"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{}}})
    );
    sim.send_raw(b"{\"type\":\"hello\",\"transport\":\"websocket\",\"session_id\":\"s-42\",\"audio_params\":{}}\n");
    // Non-MCP messages and string payloads are ignored; the next answer is the ping's.
    sim.send_raw(b"{\"session_id\":\"s-42\",\"type\":\"listen\",\"state\":\"start\"}\n");
    sim.send_raw(b"{\"session_id\":\"s-42\",\"type\":\"mcp\",\"payload\":\"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":7,\\\"method\\\":\\\"ping\\\"}\"}\n");
    let v = sim.ask(&json!({"session_id":"s-42","type":"mcp","payload":{"jsonrpc":"2.0","id":2,"method":"tools/list"}}).to_string());
    assert_eq!(v["session_id"], "s-42");
    assert_eq!(v["type"], "mcp");
    assert_eq!(
        v["payload"]["result"]["tools"].as_array().unwrap().len(),
        model_tools().len()
    );
    let v = sim.ask(&json!({"session_id":"s-42","type":"mcp","payload":{"jsonrpc":"2.0","method":"notifications/initialized"}}).to_string().replace("notifications/initialized", "ping\",\"id\":\"x"));
    assert_eq!(v["payload"]["id"], "x");
    sim.finish();
}

#[test]
fn demo_transcript() {
    let out = Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        r#""io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}"#,
        r#""structuredContent":{"audio_speaker":{"volume":40},"screen":{"brightness":80,"theme":"light"},"relay":{"on":false}"#,
        // The status tool's report of the finished move.
        r#""evidence":{"level":"measured","commanded":600,"observed":600,"tolerance":2,"unit":"steps"}"#,
        r#"Invalid argument \"volume\": expected an integer from 0 to 100, got \"loud\""#,
        r#""message":"Tool self.reboot is only available to the user, not to the model""#,
        r#""io.github.mcu-mcp/evidence":{"level":"scheduled"}"#,
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[test]
fn faults_change_the_evidence() {
    let out = Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--fault", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = list
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "codec-nack",
            "codec-clamp",
            "codec-quantized",
            "readback-mismatch",
            "relay-stuck",
            "motor-stall",
            "queue-full",
            "slow",
            "sensor-nack"
        ]
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--fault", "gremlins"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));

    let mut sim = Sim::start(&["--stdio", "--fault", "codec-clamp", "--fault", "queue-full"]);
    let r = sim.ask(&call(
        1,
        "self.audio_speaker.set_volume",
        json!({"volume": 90}),
    ));
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"read_back","commanded":90,"observed":63})
    );
    let r = sim.ask(&call(2, "self.motor.move_to", json!({"position": 10})));
    assert_eq!(r["result"]["isError"], true);
    // A failure says what was commanded and that nothing took effect.
    assert_eq!(
        r["result"]["content"][0]["text"],
        "The device is busy: its action queue is full; nothing was started — not applied \
         (commanded 10 steps)"
    );
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"not_applied","commanded":10,"unit":"steps"})
    );
    sim.finish();

    // A stuck relay declares 20 ms: the call waits them out and fails at once, naming both.
    let mut sim = Sim::start(&["--stdio", "--fault", "relay-stuck"]);
    let r = sim.ask(&call(1, "self.relay.set", json!({"on": true})));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["structuredContent"].is_null(), "no task: {r}");
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":true,"observed":false})
    );
    sim.finish();

    let mut sim = Sim::start(&["--stdio", "--door-open"]);
    let r = sim.ask(&call(1, "self.relay.set", json!({"on": true})));
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Refused by interlock \"door-closed\": the door sensor reads open; the relay was not \
         switched — not applied (commanded true)"
    );
    sim.finish();
}

#[test]
fn a_motor_task_over_stdio_in_real_time() {
    let mut sim = Sim::start(&["--stdio"]);
    sim.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#);
    // 100 units at 250 units/s: 0.4 s.
    let created = sim.ask(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":100},"task":{},"_meta":{"progressToken":"mv"}}})
            .to_string(),
    );
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    // tasks/result is parked; the device answers it by itself when the move ends.
    sim.send_raw(
        format!(
            "{}\n",
            json!({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":task}})
        )
        .as_bytes(),
    );
    let mut progress = 0;
    let result = loop {
        let v: Value = serde_json::from_str(&sim.line()).unwrap();
        match v["method"].as_str() {
            Some("notifications/progress") => progress += 1,
            Some("notifications/tasks/status") => assert_eq!(v["params"]["status"], "completed"),
            _ => break v,
        }
    };
    assert!(progress > 0);
    assert_eq!(result["id"], 2);
    assert_eq!(
        result["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":100,"observed":100,"tolerance":2,"unit":"steps"})
    );
    sim.finish();
}

/// A 64-step codec confirms 40 % as the nearest step it has, within its declared
/// tolerance, and the status reports the same step.
#[test]
fn a_quantized_codec_confirms_the_nearest_step() {
    let mut sim = Sim::start(&["--stdio", "--fault", "codec-quantized"]);
    sim.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#);
    let r = sim.ask(&call(
        1,
        "self.audio_speaker.set_volume",
        json!({"volume": 40}),
    ));
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(r["result"]["structuredContent"], json!({"value": true}));
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"read_back","commanded":40,"observed":39,"tolerance":2})
    );
    assert_eq!(
        r["result"]["content"][0]["text"],
        "true — read back: 39 (commanded 40, within ±2)"
    );
    let status = sim.ask(&call(2, "self.get_device_status", json!({})));
    assert_eq!(
        status["result"]["structuredContent"]["audio_speaker"]["volume"],
        39
    );
    sim.finish();
}

/// A stalled move issues the safe-stop and says so, in the 2026-07-28 extension
/// form (`tasks/get` with the status message and the result) and to a client without task
/// support (the status tool).
#[test]
fn a_stalled_move_says_the_safe_stop_was_issued() {
    const NOTE: &str = "safe-stop issued";
    const STALLED: &str = "The actuator stopped before reaching its target";
    let mut sim = Sim::start(&["--stdio", "--fault", "motor-stall"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    });
    // 100 steps, stalling at 40: 160 ms.
    let created = sim.ask(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.motor.move_to","arguments":{"position":100},"_meta":meta}})
            .to_string(),
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_string();
    let mut got = Value::Null;
    for id in 2..200 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        got = sim.ask(
            &json!({"jsonrpc":"2.0","id":id,"method":"tasks/get","params":{"taskId":task,"_meta":meta}})
                .to_string(),
        );
        if got["result"]["status"] != "working" {
            break;
        }
    }
    let g = &got["result"];
    assert_eq!(g["status"], "completed", "{got}");
    assert!(
        g["statusMessage"].as_str().unwrap().ends_with(NOTE),
        "{got}"
    );
    assert_eq!(g["result"]["isError"], true, "{got}");
    assert_eq!(
        g["result"]["content"][0]["text"],
        format!(
            "{STALLED} — measured: 40 steps (commanded 100 steps, not within ±2 steps); {NOTE}"
        )
        .as_str()
    );
    assert_eq!(
        g["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":100,"observed":40,"tolerance":2,"unit":"steps"})
    );

    // Without task support (a xiaozhi backend): the plain call's answer is held back until the
    // move ends, and is its outcome: the stall, and that the safe-stop was issued (also as
    // `error`, where xiaozhi's backend reads a failed call's reason).
    sim.ask(r#"{"jsonrpc":"2.0","id":300,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}"#);
    let r = sim.ask(&call(301, "self.motor.move_to", json!({"position": 0})));
    assert_eq!(r["id"], 301, "{r}");
    let r = &r["result"];
    assert_eq!(r["isError"], true, "{r}");
    // What the model hears (the first text, and `error`): the stall, where the encoder measured
    // it, and the safe-stop.
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with(STALLED) && text.ends_with(NOTE), "{r}");
    assert!(text.contains(" — measured: "), "{r}");
    assert_eq!(r["error"], r["content"][0]["text"], "{r}");
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"]["level"], "measured",
        "{r}"
    );
    sim.finish();
}
