//! Engine bugs found by stress and fault tests, each as the smallest test that failed before
//! its fix; they stay as regression tests. Run them with
//! `cargo test -p mcu-mcp-core --test findings`.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::registry::{TaskSupport, Tool};
use mcp_core::{
    Args, Caps, Config, Evidence, Level, Output, Principal, Reading, Reply, Server, TaskHooks,
    TaskInfo, TaskPoll, ToolResult,
};

fn start(_: &mut (), _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::task(0))
}

/// Finishes 100 ms after the start.
fn poll(_: &mut (), t: &TaskInfo) -> TaskPoll {
    if t.now_ms >= t.started_ms + 100 {
        TaskPoll::Done(Ok(Output::bool(true)))
    } else {
        TaskPoll::Working(None)
    }
}

static SLOW: Tool<()> = Tool::new("t.slow", "A long-running action", start).long_running(
    TaskSupport::Optional,
    TaskHooks {
        poll,
        stop: None,
        timeout_ms: 10_000,
    },
);

fn handle(server: &mut Server<'static, (), Caps<4>>, msg: &str) -> String {
    let mut out = [0u8; 2048];
    let n = server
        .handle(msg.as_bytes(), Principal::Model, &mut (), &mut out)
        .unwrap()
        .len;
    String::from_utf8(out[..n].to_vec()).unwrap()
}

/// `Server::poll` with a buffer too small for the deferred `tasks/result` answer consumes the
/// parked request and returns 0 ("nothing owed"): the answer is lost for good, and a later poll
/// with a large buffer has nothing to send. A request then never gets a response (and the client
/// waits forever). Expected: the answer stays owed until a buffer that fits is offered (or `poll`
/// refuses buffers below a documented minimum, as `handle` does below `MIN_OUT_LEN`).
#[test]

fn a_parked_result_is_not_lost_when_the_poll_buffer_is_too_small() {
    let mut server: Server<'static, (), Caps<4>> = Server::new(Config::new("f", "1"));
    server.register(&SLOW).unwrap();
    let created = handle(
        &mut server,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t.slow","arguments":{},"task":{}}}"#,
    );
    let v: serde_json::Value = serde_json::from_str(&created).unwrap();
    let task = v["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let parked = handle(
        &mut server,
        &format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{{"taskId":"{task}"}}}}"#
        ),
    );
    assert_eq!(parked, "", "parked until the task ends");

    // The task ends; the firmware polls with a small buffer (a status notification fits 64 bytes
    // no better than the result: nothing is written).
    let mut small = [0u8; 64];
    assert_eq!(server.poll(200, &mut (), &mut small), 0);

    // Later, with room: the answer to request 2 must still come.
    let mut big = [0u8; 4096];
    let mut answered = false;
    for now in [300, 400, 500] {
        loop {
            let n = server.poll(now, &mut (), &mut big);
            if n == 0 {
                break;
            }
            let m: serde_json::Value = serde_json::from_slice(&big[..n]).unwrap();
            answered |= m["id"] == 2;
        }
    }
    assert!(
        answered,
        "the parked tasks/result request 2 never got an answer"
    );
}

/// Like mcp-hal's `audio::set_volume` on a codec that declares a settle time: the write is
/// applied, the read-back not there yet, so the call answers with a task.
fn set_volume(_: &mut (), a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let v = a.int("volume")?;
    Ok(Output::task(v).with_evidence(Evidence::new(Level::Applied).commanded(Reading::Int(v))))
}

static SET_VOLUME: Tool<()> = Tool::new(
    "self.audio_speaker.set_volume",
    "Set the volume",
    set_volume,
)
.params(&[mcp_core::Param::integer("volume", "Volume").range(0, 100)])
.long_running(
    TaskSupport::Optional,
    TaskHooks {
        poll,
        stop: None,
        timeout_ms: 10_000,
    },
);

/// With the default cache (then `CACHE_BYTES` = 384), the engine's own answer to a plain call of a
/// long-running tool (task id, `poll_with`, and the start evidence twice: about 450 bytes for
/// the audio kit) is too large to keep, so a retransmission of that call — what a xiaozhi backend
/// does after a lost answer — is answered with -32603 "its response is too large to replay"
/// instead of the original answer: the client never learns the task id it needs to poll. The
/// action is not repeated (at-most-once holds); the answer is lost. Found by the soak (416 of
/// 11,079 retransmissions). Expected: the retransmission gets the original bytes, as the
/// retransmission rule in `docs/DESIGN.md` ("Retransmissions") says (or the default cache slot
/// fits the engine's own task-start answer).
#[test]

fn a_retransmitted_task_start_is_answered_from_the_cache_with_default_sizes() {
    // The task-start answer at once (a client that can follow no task otherwise gets the answer
    // held back until the action ends: `Config::hold_answer_ms`).
    let mut server: Server<'static, (), Caps<4>> =
        Server::new(Config::new("device", "1.0.0").hold_answer(0));
    server.register(&SET_VOLUME).unwrap();
    let call = r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":68}}}"#;
    let first = handle(&mut server, call);
    assert!(first.contains(r#""task_id""#), "{first}");
    let again = handle(&mut server, call);
    assert_eq!(
        again,
        first,
        "a {}-byte answer was not replayed",
        first.len()
    );
}
