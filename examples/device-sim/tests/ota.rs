//! `--flash`: a firmware upgrade over MCP on the real device-sim binary, over stdio, across the
//! real restart it arms (the process replaces itself; the client keeps its pipes, as a UART
//! client keeps its wires). The new version then answers — in `serverInfo.version` and as the
//! `measured` evidence of `self.firmware.status` — and an image for another board is rolled back.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::{Lines, start};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn image(board: &str, version: &str, payload: usize) -> Vec<u8> {
    let mut img = vec![0u8; 64];
    let n = mcp_hal::sim::write_image_header(board, version, &mut img).unwrap();
    img.truncate(n);
    img.extend((0..payload).map(|i| (i % 253) as u8));
    img
}

struct Client {
    lines: Lines,
    id: i64,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.lines
            .send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        self.lines
            .next_where(&format!("the answer to {method}"), |v| v["id"] == id)
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ota-test","version":"1"}}),
        );
        self.lines
            .send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        r["result"].clone()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name":tool,"arguments":args}))["result"].clone()
    }

    /// Upgrades to `img` with plain calls (no task support declared): the start answers at
    /// once, the pieces follow, the task status tool tells the end.
    fn upgrade(&mut self, img: &[u8], sha: &str) -> Value {
        let started = self.call(
            "self.upgrade_firmware",
            json!({"size":img.len(),"sha256":sha}),
        );
        assert_eq!(started.get("isError"), None, "{started}");
        assert_eq!(
            started["_meta"]["io.github.mcu-mcp/evidence"]["level"],
            "scheduled"
        );
        let task = started["structuredContent"]["task_id"]
            .as_str()
            .expect("a task id")
            .to_string();
        for (i, piece) in img.chunks(1024).enumerate() {
            let data = base64::engine::general_purpose::STANDARD.encode(piece);
            let r = self.call(
                "self.firmware.write",
                json!({"offset": i * 1024, "data": data}),
            );
            assert_eq!(r.get("isError"), None, "{r}");
        }
        for _ in 0..100 {
            let s = self.call("self.tasks.get_status", json!({"task_id": task}));
            if s["structuredContent"]["status"] != "working" {
                return s;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the upgrade's task did not end");
    }

    /// Waits for the restart the upgrade armed: a fresh process answers `initialize` again.
    fn after_restart(&mut self) -> Value {
        std::thread::sleep(Duration::from_millis(1500));
        let mut last = Value::Null;
        for _ in 0..50 {
            self.id += 1;
            let id = self.id;
            self.lines.send(&json!({"jsonrpc":"2.0","id":id,"method":"initialize",
                "params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ota-test","version":"1"}}}));
            if let Some(v) = self
                .lines
                .next_within(Duration::from_millis(300), |v| v["id"] == id)
            {
                last = v["result"].clone();
                if last["serverInfo"].is_object() {
                    self.lines
                        .send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
                    return last;
                }
            }
        }
        panic!("no answer after the restart: {last}");
    }
}

/// The upgrade on the real binary across its real restart: the trial
/// is visible to a client (the new firmware confirms itself once it has answered a tool call,
/// not on the handshake), an image for another board fails its task before any restart, a trial
/// that restarts before answering a tool call is rolled back and reported as data, and a later
/// upgrade does not change what the status says of that rollback.
#[test]
fn an_upgrade_restarts_into_the_new_firmware_and_a_foreign_image_never_restarts_it() {
    let flash = common::fresh_flash("device-sim-ota");
    let args = [
        "--stdio",
        "--principal",
        "user",
        "--flash",
        flash.to_str().unwrap(),
    ];
    let mut sim = start(&args);
    let pid = sim.child.id();
    let mut c = Client {
        lines: Lines::new(&mut sim),
        id: 0,
    };
    let info = c.initialize();
    let factory = env!("CARGO_PKG_VERSION");
    assert_eq!(info["serverInfo"]["version"], factory);
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(
        s["structuredContent"],
        json!({"running": factory, "boot": "normal"})
    );

    // A wrong hash: the task fails on the read-back, nothing restarts.
    let img = image("device-sim", "7.1.0", 6000);
    let wrong = format!("{:x}", Sha256::digest(b"another image"));
    let failed = c.upgrade(&img, &wrong);
    assert_eq!(failed["structuredContent"]["status"], "failed", "{failed}");
    assert!(
        failed["structuredContent"]["error"]
            .as_str()
            .unwrap()
            .contains("does not match the sha256")
    );

    // The right one: verified, restart, the new version answers.
    let done = c.upgrade(&img, &format!("{:x}", Sha256::digest(&img)));
    assert_eq!(done["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(
        done["structuredContent"]["evidence"]["level"], "read_back",
        "{done}"
    );
    let info = c.after_restart();
    assert_eq!(
        info["serverInfo"]["version"], "7.1.0",
        "the new version answers"
    );
    assert_eq!(sim.child.id(), pid, "the same process, replaced");
    // The handshake does not confirm it: the first tool call sees the trial...
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(
        s["structuredContent"],
        json!({"running":"7.1.0","boot":"trial","attempted":"7.1.0","previous":factory}),
        "{s}"
    );
    assert_eq!(
        s["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "measured"
    );
    // ...and, answered, confirms it.
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(s["structuredContent"]["boot"], "upgraded", "{s}");
    assert_eq!(
        s["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "measured"
    );
    // Kept in the flash at once: a crash now does not roll it back.
    drop(c);
    drop(sim);
    let mut sim = start(&args);
    let pid = sim.child.id();
    let mut c = Client {
        lines: Lines::new(&mut sim),
        id: 0,
    };
    assert_eq!(c.initialize()["serverInfo"]["version"], "7.1.0");
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(s["structuredContent"]["boot"], "upgraded", "{s}");

    // An image for another board, hashed right: the task fails before any restart.
    let foreign = image("esp32-c3", "8.0.0", 100);
    let failed = c.upgrade(&foreign, &format!("{:x}", Sha256::digest(&foreign)));
    assert_eq!(failed["structuredContent"]["status"], "failed", "{failed}");
    let error = failed["structuredContent"]["error"].as_str().unwrap();
    assert!(
        error.contains("it is built for another board")
            && error.contains("the device does not restart"),
        "{error}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(
        s["structuredContent"]["running"], "7.1.0",
        "no restart: {s}"
    );
    assert_eq!(sim.child.id(), pid);

    // 7.2.0 restarts on trial, and the device goes down before it answered a tool call: the
    // next start-up rolls back, and says so as data.
    let next = image("device-sim", "7.2.0", 3000);
    let done = c.upgrade(&next, &format!("{:x}", Sha256::digest(&next)));
    assert_eq!(done["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(c.after_restart()["serverInfo"]["version"], "7.2.0");
    drop(c);
    drop(sim);
    let mut sim = start(&args);
    let mut c = Client {
        lines: Lines::new(&mut sim),
        id: 0,
    };
    assert_eq!(c.initialize()["serverInfo"]["version"], "7.1.0");
    let rolled_back = json!({"running":"7.1.0","boot":"rolled_back","attempted":"7.2.0",
        "previous":"7.1.0","rollback":"not_confirmed"});
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(s.get("isError"), None, "{s}");
    assert_eq!(s["structuredContent"], rolled_back, "{s}");
    assert_eq!(
        s["content"][0]["text"],
        "Firmware 7.2.0 did not come up (it restarted before it confirmed itself); the bootloader rolled back and 7.1.0 runs — measured"
    );
    // A later upgrade writes over 7.2.0's slot: the status still says what happened to 7.2.0.
    let later = image("device-sim", "7.3.0", 3000);
    let started = c.call(
        "self.upgrade_firmware",
        json!({"size":later.len(),"sha256":format!("{:x}", Sha256::digest(&later))}),
    );
    assert_eq!(started.get("isError"), None, "{started}");
    let data = base64::engine::general_purpose::STANDARD.encode(&later[..1024]);
    let r = c.call("self.firmware.write", json!({"offset": 0, "data": data}));
    assert_eq!(r.get("isError"), None, "{r}");
    let s = c.call("self.firmware.status", json!({}));
    assert_eq!(s["structuredContent"]["attempted"], "7.2.0", "{s}");
    assert_eq!(s["structuredContent"]["boot"], "rolled_back");
    assert_eq!(s["structuredContent"]["upgrade"]["received"], 1024);
    drop(sim);
    let _ = std::fs::remove_dir_all(flash.parent().unwrap());
}

/// A flash file whose slot 1 holds `img`, activated (as an upgrade leaves it before its
/// restart), built with the simulator's own store.
fn flash_with_activated(img: &[u8]) -> Vec<u8> {
    use mcp_hal::firmware::FirmwareSlot as _;
    // device-sim's flash: the boot record and two slots of 256 KiB (src/flash.rs).
    let size = mcp_hal::sim::SimFirmware::RECORD + 2 * 256 * 1024;
    let storage: &'static mut [u8] = Box::leak(vec![0u8; size].into_boxed_slice());
    let mut store = mcp_hal::sim::SimFirmware::new("device-sim", env!("CARGO_PKG_VERSION"));
    store.attach(storage);
    store.begin(img.len() as u32).unwrap();
    store.write(0, img).unwrap();
    store.activate().unwrap();
    store.storage().to_vec()
}

#[test]
fn an_image_version_reaches_the_log_escaped_and_capped() {
    // A version made to forge log lines and paint the terminal: a newline, a fake device-sim
    // line, ANSI escapes, a carriage return, a bidi override, and a long tail.
    let evil = format!(
        "7.2.0\ndevice-sim: forged line\x1b[2J\x1b[31mred\r\u{202e}gnp.exe{}",
        "A".repeat(200)
    );
    let flash = common::fresh_flash("device-sim-ota-log");
    let mut img = vec![0u8; 300];
    let n = mcp_hal::sim::write_image_header("device-sim", &evil, &mut img).unwrap();
    img.truncate(n);
    img.extend([0u8; 100]);
    std::fs::write(&flash, flash_with_activated(&img)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args(["--flash", flash.to_str().unwrap(), "--stdio"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(flash.parent().unwrap());
    let log = String::from_utf8(out.stderr).unwrap();
    let line = log
        .lines()
        .find(|l| l.starts_with("device-sim: firmware 7.2.0"))
        .unwrap_or_else(|| panic!("no firmware line in {log:?}"));
    assert!(
        !log.lines()
            .any(|l| l.starts_with("device-sim: forged line")),
        "a forged line: {log:?}"
    );
    for c in ['\x1b', '\r', '\u{202e}'] {
        assert!(!log.contains(c), "{c:?} reached the log: {log:?}");
    }
    assert!(
        line.contains(r"7.2.0\ndevice-sim: forged line\u{1b}[2J\u{1b}[31mred\r\u{202e}gnp.exe"),
        "{line}"
    );
    // Capped: not the whole 200-byte tail, and says so.
    assert!(!line.contains(&"A".repeat(150)), "{line}");
    assert!(line.contains('…'), "{line}");
}
