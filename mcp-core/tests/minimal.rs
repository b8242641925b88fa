//! The engine a minimal firmware builds: whatever features are on, and without a task table.
//! `cargo test --workspace` runs it with the default features; CI also runs it with
//! `--no-default-features` (no `float`, `modern`, `resources`), where the answers that depend on a
//! feature change as documented in the crate docs.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::schema::Param;
use mcp_core::server::Status;
use mcp_core::{Args, Caps, Config, Input, Output, Principal, Reply, Server, Tool, ToolResult};

struct Device {
    volume: i64,
}

fn set_volume(dev: &mut Device, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    dev.volume = args.int("volume")?;
    Ok(Output::bool(true))
}

static SET_VOLUME: Tool<Device> = Tool::new("set_volume", "Set the volume", set_volume)
    .params(&[Param::integer("volume", "Volume in percent").range(0, 100)]);

/// No task table, no retransmission cache.
type Minimal = Server<'static, Device, Caps<4, 0, 0, 0>>;

fn server() -> Minimal {
    let mut s = Minimal::new(Config::new("minimal", "1.0"));
    s.register(&SET_VOLUME).expect("registers");
    s
}

/// Sends `msg` and returns the response text and its HTTP status class.
fn send(s: &mut Minimal, dev: &mut Device, msg: &str, stateless: bool) -> (String, Status) {
    let mut out = [0u8; 2048];
    let input = Input::new(msg.as_bytes(), Principal::Model).stateless(stateless);
    let h = s
        .handle_with(input, dev, &mut out, &mut |_: &[u8]| {})
        .expect("buffer is large enough");
    (
        String::from_utf8(out[..h.len].to_vec()).expect("UTF-8"),
        h.status,
    )
}

fn call(s: &mut Minimal, dev: &mut Device, id: u32, volume: &str) -> String {
    let msg = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"set_volume","arguments":{{"volume":{volume}}}}}}}"#
    );
    send(s, dev, &msg, false).0
}

#[test]
fn integer_arguments_in_any_integral_spelling_without_floats() {
    let (mut s, mut dev) = (server(), Device { volume: 0 });
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;
    assert!(
        send(&mut s, &mut dev, init, false)
            .0
            .contains("\"protocolVersion\":\"2025-11-25\"")
    );
    for (id, spelling, value) in [
        (1, "50", 50),
        (2, "5e1", 50),
        (3, "50.0", 50),
        (4, "0.4e2", 40),
    ] {
        let r = call(&mut s, &mut dev, id, spelling);
        assert!(r.contains(r#""text":"true""#), "{spelling}: {r}");
        assert_eq!(dev.volume, value, "{spelling}");
    }
    for (id, spelling, why) in [
        (5, "50.5", "expected an integer from 0 to 100"),
        (6, "\"50\"", "expected an integer from 0 to 100"),
        (7, "1e400", "expected an integer from 0 to 100"),
        (8, "101", "expected an integer from 0 to 100"),
    ] {
        let r = call(&mut s, &mut dev, id, spelling);
        assert!(
            r.contains(r#""isError":true"#) && r.contains(why),
            "{spelling}: {r}"
        );
        assert_eq!(dev.volume, 40, "{spelling} must not run the tool");
    }
}

#[test]
fn no_task_table_means_no_tasks_methods() {
    let (mut s, mut dev) = (server(), Device { volume: 0 });
    let mut out = [0u8; 512];
    assert_eq!(s.poll(1_000, &mut dev, &mut out), 0);
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/list"}"#;
    assert!(send(&mut s, &mut dev, list, false).0.contains("-32601"));
}

#[test]
fn feature_dependent_methods() {
    let (mut s, mut dev) = (server(), Device { volume: 0 });
    let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (r, status) = send(&mut s, &mut dev, discover, false);
    if cfg!(feature = "modern") {
        assert!(r.contains("\"supportedVersions\""), "{r}");
    } else {
        assert!(r.contains("-32601"), "{r}");
        assert_eq!(status, Status::Ok);
    }

    // A transport that requires 2026-07-28, with a legacy body.
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let (r, status) = send(&mut s, &mut dev, ping, true);
    assert!(r.contains("-32602"), "{r}");
    assert_eq!(status, Status::BadRequest);

    // No resources or prompts are published: unknown either way.
    let resources = r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#;
    assert!(
        send(&mut s, &mut dev, resources, false)
            .0
            .contains("-32601")
    );
}
