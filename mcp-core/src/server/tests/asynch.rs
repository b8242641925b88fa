//! The async handler path: [`Server::handle_async`] runs the same checks, cache and rendering as
//! the blocking path around an awaited handler; an async tool through the blocking path fails
//! with a message saying why, and nothing runs.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use crate::schema::Param;
use crate::server::*;
use crate::{Args, Evidence, Level, Output, Reading, Reply, ToolError, ToolResult};

/// Polls a future to completion; `pending` counts the `Pending`s seen (each await point of an
/// async driver that is not ready at once).
fn block_on<F: Future>(f: F, pending: &mut u32) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => *pending += 1,
        }
    }
}

/// A future that is pending once, as an I2C transfer waiting for its interrupt is.
struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: core::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

#[derive(Default)]
struct Codec {
    register: i64,
    writes: u32,
    blocking_calls: u32,
}

impl Codec {
    async fn write(&mut self, v: i64) {
        YieldOnce(false).await;
        self.register = v;
        self.writes += 1;
    }
    async fn read(&mut self) -> i64 {
        YieldOnce(false).await;
        self.register
    }
}

async fn set_volume(codec: &mut Codec, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let v = args.int("volume")?;
    if v == 13 {
        return Err(reply.error(format_args!("the codec refuses {v}")));
    }
    codec.write(v).await;
    let observed = codec.read().await;
    Ok(Output::bool(true).with_evidence(
        Evidence::new(Level::ReadBack)
            .commanded(Reading::Int(v))
            .observed(Reading::Int(observed)),
    ))
}

fn status(codec: &mut Codec, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    codec.blocking_calls += 1;
    let v = codec.register;
    r.json(|o| {
        o.int("volume", v);
    })
}

const VOLUME: Tool<Codec> = Tool::new_async("self.audio_speaker.set_volume", "Set the volume")
    .params(&[Param::integer("volume", "Volume").range(0, 100)]);
const STATUS: Tool<Codec> = Tool::new("self.get_device_status", "Status", status)
    .annotations(crate::Annotations::new().read_only(true));

fn server() -> Server<'static, Codec, Caps<4>> {
    let mut s = Server::new(Config::new("async", "1"));
    s.register(&VOLUME).unwrap().register(&STATUS).unwrap();
    s
}

fn call(id: u32, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

/// Sends `msg` through `handle_async`, with `run` for the async tools; returns the answer and how
/// often the handler suspended.
fn send_with(
    s: &mut Server<'static, Codec, Caps<4>>,
    codec: &mut Codec,
    msg: &str,
    run: impl AsyncFnMut(&mut Codec, Call<'_, '_>) -> ToolResult,
) -> (String, u32) {
    let mut out = [0u8; 2048];
    let mut pending = 0;
    let handled = block_on(
        s.handle_async(
            Input::new(msg.as_bytes(), Principal::Model),
            codec,
            &mut out,
            &mut |_: &[u8]| {},
            run,
        ),
        &mut pending,
    )
    .unwrap();
    (
        String::from_utf8(out[..handled.len].to_vec()).unwrap(),
        pending,
    )
}

/// Sends `msg` through `handle_async`, the volume being the async tool; returns the answer and
/// how often the handler suspended.
fn send_async(
    s: &mut Server<'static, Codec, Caps<4>>,
    codec: &mut Codec,
    msg: &str,
) -> (String, u32) {
    send_with(
        s,
        codec,
        msg,
        async |codec: &mut Codec, call: Call<'_, '_>| match call.tool {
            "self.audio_speaker.set_volume" => set_volume(codec, call.args, call.reply).await,
            _ => Err(ToolError::new("no such async tool")),
        },
    )
}

#[test]
fn an_async_tool_is_awaited_between_the_same_checks_as_a_blocking_one() {
    let (mut s, mut codec) = (server(), Codec::default());
    let (answer, pending) = send_async(
        &mut s,
        &mut codec,
        &call(1, VOLUME.name(), r#"{"volume":40}"#),
    );
    assert_eq!(
        answer,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"true — read back: 40"}],"structuredContent":{"value":true},"_meta":{"io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}}}}"#
    );
    assert_eq!(pending, 2, "the handler suspended at each bus transfer");
    // Validation refuses before the handler: nothing is awaited, nothing written.
    let (answer, pending) = send_async(
        &mut s,
        &mut codec,
        &call(2, VOLUME.name(), r#"{"volume":"50"}"#),
    );
    assert!(answer.contains(r#""code":-32602"#), "{answer}");
    assert_eq!((pending, codec.writes), (0, 1));
    // A retransmission is answered from the first answer without awaiting anything.
    let (again, pending) = send_async(
        &mut s,
        &mut codec,
        &call(1, VOLUME.name(), r#"{"volume":40}"#),
    );
    assert!(again.contains(r#""observed":40"#));
    assert_eq!((pending, codec.writes), (0, 1));
    // A failure with a scratch message.
    let (answer, _) = send_async(
        &mut s,
        &mut codec,
        &call(3, VOLUME.name(), r#"{"volume":13}"#),
    );
    assert!(
        answer.contains(r#""text":"the codec refuses 13""#),
        "{answer}"
    );
    assert!(answer.contains(r#""isError":true"#));
    // Blocking tools run as usual through the async path.
    let (answer, pending) = send_async(&mut s, &mut codec, &call(4, STATUS.name(), "{}"));
    assert!(
        answer.contains(r#""structuredContent":{"volume":40}"#),
        "{answer}"
    );
    assert_eq!((pending, codec.blocking_calls), (0, 1));
    // Other methods too.
    let (answer, _) = send_async(
        &mut s,
        &mut codec,
        r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    );
    assert_eq!(answer, r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
}

#[test]
fn an_async_tool_through_the_blocking_path_fails_and_nothing_runs() {
    let (mut s, mut codec) = (server(), Codec::default());
    let mut out = [0u8; 1024];
    let msg = call(1, VOLUME.name(), r#"{"volume":40}"#);
    let h = s
        .handle(msg.as_bytes(), Principal::Model, &mut codec, &mut out)
        .unwrap();
    let answer = core::str::from_utf8(&out[..h.len]).unwrap();
    assert!(answer.contains("Server::handle_async"), "{answer}");
    assert!(answer.contains(r#""isError":true"#));
    assert_eq!((h.ran, codec.writes), (None, 0));
}

/// An async tool that asks a person first runs after the yes, on every path a yes can
/// come by — the client's user (elicitation, through `handle_async`), the device's button
/// (through `poll_async`) and the 2026-07-28 retry (through `handle_async`) — and through the
/// blocking `poll` it is refused saying which path it needs.
#[cfg(feature = "confirm")]
mod confirmed {
    use super::*;
    use crate::registry::Confirm;

    const GARAGE: Tool<Codec> = Tool::new_async("self.garage.open", "Open the garage door")
        .params(&[Param::integer("volume", "Stand-in argument").range(0, 100)])
        .confirm(Confirm::new("Open the garage door?"));

    fn server() -> Server<'static, Codec, Caps<4>> {
        let mut s = Server::new(
            Config::new("async", "1")
                .hold_answer(0)
                .confirm_min_shown(0),
        );
        s.register(&GARAGE).unwrap();
        s.set_entropy([3; 16]);
        s
    }

    /// The async handler of this board: the garage door is the codec's register here.
    async fn run(codec: &mut Codec, call: Call<'_, '_>) -> ToolResult {
        match call.tool {
            "self.garage.open" => set_volume(codec, call.args, call.reply).await,
            _ => Err(ToolError::new("no such async tool")),
        }
    }

    fn send(s: &mut Server<'static, Codec, Caps<4>>, codec: &mut Codec, msg: &str) -> String {
        send_with(s, codec, msg, run).0
    }

    fn poll(
        s: &mut Server<'static, Codec, Caps<4>>,
        codec: &mut Codec,
        now: u64,
    ) -> (String, Polled) {
        let mut out = [0u8; 2048];
        let mut pending = 0;
        let p = block_on(s.poll_async(now, codec, &mut out, run), &mut pending);
        (String::from_utf8(out[..p.len].to_vec()).unwrap(), p)
    }

    fn init(s: &mut Server<'static, Codec, Caps<4>>, codec: &mut Codec, rev: &str, caps: &str) {
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{rev}","capabilities":{caps},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        );
        assert!(send(s, codec, &msg).contains("serverInfo"));
    }

    #[test]
    fn after_the_clients_yes() {
        let (mut s, mut codec) = (server(), Codec::default());
        init(&mut s, &mut codec, "2025-06-18", r#"{"elicitation":{}}"#);
        let ask = send(
            &mut s,
            &mut codec,
            &call(5, GARAGE.name(), r#"{"volume":40}"#),
        );
        let ask: serde_json::Value = serde_json::from_str(&ask).unwrap();
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(codec.writes, 0);
        let yes = serde_json::json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"confirm":true}}});
        // The yes approves the call; the next poll runs it, and its answer is for the caller.
        assert_eq!(send(&mut s, &mut codec, &yes.to_string()), "");
        assert_eq!(codec.writes, 0);
        let (done, p) = poll(&mut s, &mut codec, 10);
        assert_eq!((p.ran, p.to), (Some("self.garage.open"), Some(Peer::ONLY)));
        assert!(
            done.starts_with(r#"{"jsonrpc":"2.0","id":5,"result""#),
            "{done}"
        );
        assert!(!done.contains(r#""isError""#), "{done}");
        assert!(done.contains(r#""level":"read_back""#), "{done}");
        assert_eq!((codec.writes, codec.register), (1, 40));
    }

    #[test]
    fn after_the_button() {
        let (mut s, mut codec) = (server(), Codec::default());
        init(&mut s, &mut codec, "2024-11-05", "{}");
        let waits = send(
            &mut s,
            &mut codec,
            &call(6, GARAGE.name(), r#"{"volume":30}"#),
        );
        assert!(waits.contains("awaiting_confirmation"), "{waits}");
        poll(&mut s, &mut codec, 100);
        let shown = s.confirmation().unwrap();
        assert!(s.confirm_on_device(shown.approval, true, 150));
        let (outcome, p) = poll(&mut s, &mut codec, 200);
        assert!(outcome.contains(r#""confirmed":true"#), "{outcome}");
        assert!(!outcome.contains(r#""isError""#), "{outcome}");
        assert_eq!(p.ran, Some("self.garage.open"));
        assert_eq!((codec.writes, codec.register), (1, 30));
    }

    #[cfg(feature = "modern")]
    #[test]
    fn after_the_stateless_retry() {
        let (mut s, mut codec) = (server(), Codec::default());
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;
        let first = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"self.garage.open","arguments":{{"volume":20}},{meta}}}}}"#
        );
        let r: serde_json::Value = serde_json::from_str(&send(&mut s, &mut codec, &first)).unwrap();
        let state = r["result"]["requestState"].as_str().unwrap();
        let retry = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"self.garage.open","arguments":{{"volume":20}},"requestState":"{state}","inputResponses":{{"confirm":{{"action":"accept","content":{{"confirm":true}}}}}},{meta}}}}}"#
        );
        let done = send(&mut s, &mut codec, &retry);
        assert!(!done.contains(r#""isError""#), "{done}");
        assert_eq!((codec.writes, codec.register), (1, 20));
    }

    #[test]
    fn the_blocking_poll_says_which_path_an_async_tool_needs() {
        let (mut s, mut codec) = (server(), Codec::default());
        init(&mut s, &mut codec, "2024-11-05", "{}");
        send(
            &mut s,
            &mut codec,
            &call(7, GARAGE.name(), r#"{"volume":30}"#),
        );
        let mut out = [0u8; 2048];
        s.poll(100, &mut codec, &mut out);
        let shown = s.confirmation().unwrap();
        assert!(s.confirm_on_device(shown.approval, true, 150));
        let n = s.poll(200, &mut codec, &mut out);
        let outcome = core::str::from_utf8(&out[..n]).unwrap();
        assert!(outcome.contains("Server::poll_async"), "{outcome}");
        assert_eq!(codec.writes, 0, "nothing ran");
    }
}
