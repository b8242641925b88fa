//! The demo board's live resources over stdio, through the real device-sim binary: listed, read,
//! subscribed — and, with nothing moving the readings, no update is ever written (the noise-free
//! simulated sensors stay under their kits' thresholds; the update path itself is tested in
//! `src/sensors.rs` and mcp-hal's `tests/resources.rs`).
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use common::{Running, device_sim, listed, log_lines};
use serde_json::{Value, json};

#[test]
fn the_sensor_resources_over_stdio() {
    let mut child = Running(device_sim(&["--stdio", "--fault", "sensor-nack"], true));
    let _log = log_lines(&mut child.0);
    let child = &mut child.0;
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: i64, method: &str, params: Value| -> Value {
        let msg = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["id"], id, "{line}");
        v
    };
    let init = ask(
        1,
        "initialize",
        json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}),
    );
    assert_eq!(
        init["result"]["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    let list = ask(2, "resources/list", json!({}));
    let uris = listed(&list, "resources", "uri");
    assert_eq!(
        uris,
        [
            "device://sensors/temperature",
            "device://sensors/battery",
            "device://buttons/main"
        ]
    );
    // Under --fault sensor-nack the sensors answer errors; the button its count.
    let t = ask(
        3,
        "resources/read",
        json!({"uri":"device://sensors/temperature"}),
    );
    assert_eq!(
        t["error"]["message"],
        "Resource read failed: The sensor did not acknowledge (I2C NACK)"
    );
    let b = ask(4, "resources/read", json!({"uri":"device://buttons/main"}));
    assert_eq!(b["result"]["contents"][0]["text"], r#"{"presses":0}"#);
    for (id, uri) in [
        (5, "device://sensors/temperature"),
        (6, "device://sensors/battery"),
        (7, "device://buttons/main"),
    ] {
        assert_eq!(
            ask(id, "resources/subscribe", json!({"uri":uri}))["result"],
            json!({})
        );
    }
    // Half a second of clock ticks: nothing changed, nothing is written.
    std::thread::sleep(Duration::from_millis(500));
    let ping = ask(8, "ping", json!({}));
    assert_eq!(ping["result"], json!({}));
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(rest, "");
}
