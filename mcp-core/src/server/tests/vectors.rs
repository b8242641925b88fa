//! Byte-exact request/response vectors for the engine.

use crate::registry::Annotations;
use crate::schema::Param;
use crate::server::*;
use crate::wire::writer::Writer;
use crate::{Args, Evidence, Level, Output, Reading, Reply, ToolError, ToolResult};

#[derive(Default)]
struct Dev {
    register: i64,
    theme: &'static str,
    calls: usize,
    reboots: usize,
    /// What the last `test.frame` call's reply had room for.
    room: usize,
}

fn status(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    let (v, t) = (d.register, d.theme);
    r.json(|o| {
        o.object("audio_speaker", |o| {
            o.int("volume", v);
        });
        o.object("screen", |o| {
            o.str("theme", t);
        });
    })
}

fn set_volume(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    let v = a.int("volume")?;
    d.register = v;
    let e = Evidence::new(Level::ReadBack)
        .commanded(Reading::Int(v))
        .observed(Reading::Int(d.register));
    Ok(Output::bool(true).with_evidence(e))
}

#[cfg(feature = "strings")]
fn set_theme(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    d.theme = if a.str("theme")? == "dark" {
        "dark"
    } else {
        "light"
    };
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Applied)))
}

fn reboot(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    d.reboots += 1;
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

#[cfg(feature = "strings")]
fn echo(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    let text = a.str("text")?;
    if text == "fail" {
        return Err(r.error(format_args!("refused: {text}")));
    }
    r.text(format_args!("{text}"))
}

fn is_off(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    Ok(Output::bool(false))
}

fn broken(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    Err(ToolError::new("codec did not acknowledge").with_evidence(Evidence::new(Level::Applied)))
}

fn big(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    r.text(format_args!("{}", "x".repeat(300)))
}

fn huge(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    r.text(format_args!("{}", "x".repeat(5000)))
}

fn photo(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    r.image("image/png", b"\x89PNG")
}

#[cfg(feature = "alloc")]
#[derive(serde::Serialize)]
struct Info {
    model: &'static str,
    channels: [u8; 2],
}

#[cfg(feature = "alloc")]
fn info(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    r.serialize(&Info {
        model: "sim \"1\"",
        channels: [1, 2],
    })
}

const PHOTO: Tool<Dev> = Tool::new("test.photo", "Photo", photo);

/// What `test.frame` keeps free for its caption's evidence sentence and the `evidence` member.
const FRAME_MARGIN: usize = 150;

/// `bytes` bytes of an image streamed in pieces of 5, after a caption; with `check`, refused
/// when [`Reply::content_room`] says they cannot fit.
fn frame(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.room = r.content_room();
    let n = usize::try_from(a.int("bytes")?).unwrap_or(0);
    if a.bool("check")? && crate::ContentWriter::image_len("image/png", n) + FRAME_MARGIN > d.room {
        return Err(ToolError::new(
            "The frame is too large for this device's answer",
        ));
    }
    let data: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
    let measured = Evidence::new(Level::Measured);
    r.captioned(
        |w| {
            w.text("frame of ");
            w.uint(n as u64);
            w.text(" bytes");
        },
        |c| {
            c.image_with("image/png", |b| {
                for piece in data.chunks(5) {
                    b.write(piece);
                }
            });
        },
    )
    .map(|o| o.with_evidence(measured))
}

const FRAME: Tool<Dev> = Tool::new("test.frame", "Frame", frame).params(&[
    Param::integer("bytes", "Image bytes").range(0, 100_000),
    Param::boolean("check", "Refuse what cannot fit"),
]);
#[cfg(feature = "alloc")]
const INFO: Tool<Dev> = Tool::new("test.info", "Info", info);

const STATUS: Tool<Dev> = Tool::new("self.get_device_status", "Device status", status)
    .annotations(Annotations::new().read_only(true));
const VOLUME: Tool<Dev> = Tool::new("self.audio_speaker.set_volume", "Set volume", set_volume)
    .params(&[Param::integer("volume", "Volume").range(0, 100)]);
#[cfg(feature = "strings")]
const THEME: Tool<Dev> = Tool::new("self.screen.set_theme", "Set theme", set_theme)
    .params(&[Param::string("theme", "Theme").one_of(&["light", "dark"])]);
const REBOOT: Tool<Dev> = Tool::new("self.reboot", "Reboot", reboot).user_only();
#[cfg(feature = "strings")]
const ECHO: Tool<Dev> =
    Tool::new("test.echo", "Echo", echo).params(&[Param::string("text", "Text").length(0, 1000)]);
const IS_OFF: Tool<Dev> = Tool::new("test.is_off", "False", is_off);
const BROKEN: Tool<Dev> = Tool::new("test.broken", "Fails", broken);
const BIG: Tool<Dev> = Tool::new("test.big", "Big", big);
const HUGE: Tool<Dev> = Tool::new("test.huge", "Huge", huge);

type S = Server<'static, Dev, Caps<16>>;

/// The test tools, in registration order (the two with string parameters with feature
/// `strings`).
fn tools() -> Vec<&'static Tool<Dev>> {
    [
        &[&STATUS, &VOLUME][..],
        #[cfg(feature = "strings")]
        &[&THEME][..],
        &[&REBOOT][..],
        #[cfg(feature = "strings")]
        &[&ECHO][..],
        &[&IS_OFF, &BROKEN, &BIG, &HUGE][..],
    ]
    .concat()
}

fn server() -> S {
    let mut s = S::new(Config::new("sim", "1.0"));
    for t in tools() {
        s.register(t).unwrap();
    }
    s
}

struct Session {
    server: S,
    dev: Dev,
    principal: Principal,
    out: Vec<u8>,
}

impl Session {
    fn new() -> Self {
        Session {
            server: server(),
            dev: Dev::default(),
            principal: Principal::Model,
            out: vec![0; 4096],
        }
    }

    fn send(&mut self, msg: &str) -> String {
        let h = self
            .server
            .handle(msg.as_bytes(), self.principal, &mut self.dev, &mut self.out)
            .unwrap();
        let text = String::from_utf8(self.out[..h.len].to_vec()).unwrap();
        if h.len > 0 {
            let v: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(v["jsonrpc"], "2.0", "{text}");
        }
        text
    }

    /// Sends `msg` from `peer`; returns the answer and what the engine said about the call.
    fn send_from(&mut self, peer: Peer, msg: &str) -> (String, Facts) {
        let h = self
            .server
            .handle_with(
                Input::new(msg.as_bytes(), self.principal).peer(peer),
                &mut self.dev,
                &mut self.out,
                &mut |_: &[u8]| {},
            )
            .unwrap();
        let facts = Facts {
            ran: h.ran,
            receipt: h.receipt,
            replay: h.replay,
        };
        (
            String::from_utf8(self.out[..h.len].to_vec()).unwrap(),
            facts,
        )
    }

    fn json(&mut self, msg: &str) -> serde_json::Value {
        serde_json::from_str(&self.send(msg)).unwrap()
    }

    fn init(&mut self, rev: &str) {
        self.send(&format!(r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{rev}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#));
    }

    /// A session initialized at `rev`; `None`: never initialized (the 2026-07-28 stateless way).
    fn at(rev: Option<&str>) -> Self {
        let mut s = Session::new();
        if let Some(rev) = rev {
            s.init(rev);
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Facts {
    ran: Option<&'static str>,
    receipt: Option<Receipt>,
    replay: Option<Delivery>,
}

/// `server`'s answer to `msg`, written into `out` as by a firmware, parsed.
fn answer_in(server: &mut S, dev: &mut Dev, msg: &[u8], out: &mut [u8]) -> serde_json::Value {
    let n = server.handle(msg, Principal::Model, dev, out).unwrap().len;
    serde_json::from_slice(&out[..n]).unwrap()
}

fn call(id: &str, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

#[test]
fn ping_and_ids_are_echoed_byte_exact() {
    let mut s = Session::new();
    assert_eq!(
        s.send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    assert_eq!(
        s.send(r#"{"jsonrpc":"2.0","id":"a\"\u00e9\\","method":"ping","params":{}}"#),
        r#"{"jsonrpc":"2.0","id":"a\"\u00e9\\","result":{}}"#
    );
    assert_eq!(
        s.send(r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#),
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"result":{}}"#
    );
    assert_eq!(
        s.send(r#"{"id":0,"jsonrpc":"2.0","method":"ping"}"#),
        r#"{"jsonrpc":"2.0","id":0,"result":{}}"#
    );
}

/// A method the server cannot serve is unknown: the task methods without a task table, the
/// resource and prompt methods without resources or prompts (and, without the feature
/// `resources`, not even in the method table).
#[test]
fn methods_a_server_cannot_serve_are_unknown() {
    let mut no_tasks: Server<'static, Dev, Caps<4, 0>> = Server::new(Config::new("sim", "1.0"));
    no_tasks.register(&VOLUME).unwrap();
    let mut dev = Dev::default();
    let mut out = vec![0; 1024];
    let mut send = |msg: &str| {
        let h = no_tasks.handle(msg.as_bytes(), Principal::Model, &mut dev, &mut out);
        String::from_utf8(out[..h.unwrap().len].to_vec()).unwrap()
    };
    for method in [
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "resources/list",
        "resources/read",
        "prompts/get",
    ] {
        let msg = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{}}}}"#);
        assert_eq!(
            send(&msg),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":-32601,"message":"Method not found: {method}"}}}}"#
            ),
        );
    }
    // With a task table the task methods are served (an empty list).
    let mut s = Session::new();
    let listed = s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{}}"#);
    assert!(listed.contains(r#""result":{"tasks":[]"#), "{listed}");
}

#[test]
fn protocol_errors() {
    let mut s = Session::new();
    let cases = [
        (
            "{",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at byte 1"}}"#,
        ),
        (
            "",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: empty message"}}"#,
        ),
        (
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batches are not supported; send one message at a time"}}"#,
        ),
        (
            "42",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message must be a JSON object"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}"#,
        ),
        (
            r#"{"id":3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: jsonrpc must be \"2.0\""}}"#,
        ),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: jsonrpc must be \"2.0\""}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":["ping"]}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Invalid Request: method must be a string"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"server/discover"}"#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: server/discover"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"re\"sources/list"}"#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: re\"sources/list"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: params must be an object"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: tools/call needs a tool name (a string)"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: duplicate member"}}"#,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.nope","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Unknown tool: self.nope"}}"#,
        ),
    ];
    for (msg, expected) in cases {
        assert_eq!(s.send(msg), expected, "for {msg}");
    }
    let deep = "[".repeat(40) + &"]".repeat(40);
    assert_eq!(
        s.send(&deep),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: JSON nested deeper than 32 levels"}}"#
    );
    assert_eq!(s.dev.calls, 0);
}

#[test]
fn notifications_and_peer_responses_get_no_answer() {
    let mut s = Session::new();
    for msg in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"ping","params":5}"#,
        r#"{"method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#,
    ] {
        assert_eq!(s.send(msg), "", "{msg}");
    }
    assert_eq!(s.dev.calls, 0, "a notification never runs a tool");
}

#[test]
fn initialize_negotiates() {
    let mut s = Session::new();
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("", "2025-11-25"),
    ] {
        let msg = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{asked}","capabilities":{{}},"clientInfo":{{"name":"c","version":"1"}}}}}}"#
        );
        assert_eq!(
            s.send(&msg),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"{answered}","capabilities":{{"tools":{{}},"logging":{{}}}},"serverInfo":{{"name":"sim","version":"1.0"}}}}}}"#
            )
        );
    }
    assert_eq!(s.server.revision(), Some(Revision::V2025_11_25));
    assert_eq!(
        s.send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":5}}"#),
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: initialize needs protocolVersion (a string)"}}"#
    );
    assert_eq!(
        s.send(r#"{"jsonrpc":"2.0","id":2,"method":"initialize"}"#),
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: initialize needs protocolVersion (a string)"}}"#
    );
}

#[test]
fn initialize_hands_xiaozhi_vision_to_the_application() {
    let mut server = server();
    let mut dev = Dev::default();
    let mut out = [0u8; 1024];
    let msg = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"vision":{"url":"http://x/v1/explain","token":"t\u00f6k"}},"clientInfo":{"name":"xiaozhi-backend","version":"1"}}}"#;
    let h = server
        .handle(msg, Principal::Model, &mut dev, &mut out)
        .unwrap();
    let Some(Event::Initialized {
        revision,
        vision: Some(v),
    }) = h.event
    else {
        panic!("{:?}", h.event)
    };
    assert_eq!(revision, Revision::V2024_11_05);
    assert_eq!(v.url.chars().collect::<String>(), "http://x/v1/explain");
    assert_eq!(v.token.chars().collect::<String>(), "tök");
}

#[test]
fn tools_work_before_initialize_like_xiaozhi_backends() {
    let mut s = Session::new();
    let list = s.json(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let names: Vec<_> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let expected: Vec<_> = tools()
        .iter()
        .map(|t| t.name())
        .filter(|&n| n != "self.reboot")
        .collect();
    assert_eq!(names, expected);
    assert!(list["result"].get("nextCursor").is_none());
    assert_eq!(
        s.send(&call(
            "1",
            "self.audio_speaker.set_volume",
            r#"{"volume":40}"#
        )),
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","#,
            r#""text":"true — read back: 40"}],"#,
            r#""structuredContent":{"value":true},"#,
            // The evidence as data, where the SDKs keep it: `_meta`.
            r#""_meta":{"io.github.mcu-mcp/evidence":{"level":"read_back","commanded":40,"observed":40}}}}"#
        )
    );
    assert_eq!(s.dev.register, 40);
}

#[test]
fn business_values_are_apart_from_failure() {
    let mut s = Session::new();
    assert_eq!(
        s.send(&call("1", "test.is_off", "{}")),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"false"}],"structuredContent":{"value":false}}}"#
    );
    assert_eq!(
        s.send(&call("2", "test.broken", "{}")),
        concat!(
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"codec did not acknowledge — applied, not verified"}],"#,
            r#""isError":true,"error":"codec did not acknowledge — applied, not verified","#,
            r#""_meta":{"io.github.mcu-mcp/evidence":{"level":"applied"}}}}"#
        )
    );
    // Before 2025-06-18 sessions (xiaozhi's 2024-11-05, or no initialize), a failure also
    // carries its reason as `error`, where xiaozhi backends read it.
    #[cfg(feature = "strings")]
    echo_failures_and_text(&mut s);
    s.dev.register = 7;
    assert_eq!(
        s.send(&call("5", "self.get_device_status", "{}")),
        concat!(
            r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"audio_speaker\":{\"volume\":7},\"screen\":{\"theme\":\"\"}}"}],"#,
            r#""structuredContent":{"audio_speaker":{"volume":7},"screen":{"theme":""}}}}"#
        )
    );
}

/// A handler's failure and text (`business_values_are_apart_from_failure`, with a string tool).
#[cfg(feature = "strings")]
fn echo_failures_and_text(s: &mut Session) {
    assert_eq!(
        s.send(&call("3", "test.echo", r#"{"text":"fail"}"#)),
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"refused: fail"}],"isError":true,"error":"refused: fail"}}"#
    );
    let mut modern = Session::new();
    modern.init("2025-11-25");
    assert_eq!(
        modern.send(&call("3", "test.echo", r#"{"text":"fail"}"#)),
        r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"refused: fail"}],"isError":true}}"#
    );
    assert_eq!(
        s.send(&call("4", "test.echo", r#"{"text":"a\"b\u00e9"}"#)),
        r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"a\"bé"}],"structuredContent":{"value":"a\"bé"}}}"#
    );
}

#[test]
fn validation_failures_follow_the_negotiated_revision_and_never_run_the_handler() {
    let bad = [
        (
            r#"{"volume":150}"#,
            r#"Invalid argument \"volume\": expected an integer from 0 to 100, got 150"#,
        ),
        (
            r#"{"volume":"50"}"#,
            r#"Invalid argument \"volume\": expected an integer from 0 to 100, got \"50\""#,
        ),
        (
            r#"{"volume":50.5}"#,
            r#"Invalid argument \"volume\": expected an integer from 0 to 100, got 50.5"#,
        ),
        (
            r#"{}"#,
            r#"Missing required argument \"volume\": expected an integer from 0 to 100"#,
        ),
        (
            r#"{"volume":1,"volume":2}"#,
            r#"Duplicate argument \"volume\""#,
        ),
        (
            r#"{"volume":1,"x":2}"#,
            r#"Unknown argument \"x\"; expected: volume"#,
        ),
    ];
    for rev in [
        None,
        Some("2024-11-05"),
        Some("2025-03-26"),
        Some("2025-06-18"),
        Some("2025-11-25"),
    ] {
        let mut s = Session::at(rev);
        for (args, msg) in bad {
            let got = s.send(&call("9", "self.audio_speaker.set_volume", args));
            let expected = if rev == Some("2025-11-25") {
                format!(
                    r#"{{"jsonrpc":"2.0","id":9,"result":{{"content":[{{"type":"text","text":"{msg}"}}],"isError":true}}}}"#
                )
            } else {
                // The message a xiaozhi backend speaks as it is ends with what happened.
                format!(
                    r#"{{"jsonrpc":"2.0","id":9,"error":{{"code":-32602,"message":"{msg}; nothing was changed"}}}}"#
                )
            };
            assert_eq!(got, expected, "{rev:?} {args}");
        }
        assert_eq!(s.dev.calls, 0);
        assert_eq!(s.dev.register, 0);
    }
}

/// The names in a `tools/list` answer.
fn listed(list: &serde_json::Value) -> Vec<&str> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[test]
fn with_user_tools_lists_user_only_tools_on_every_revision_and_the_model_still_cannot_call_them() {
    // xiaozhi's backend asks with `withUserTools: true` to show a person the user-only tools
    // (xiaozhi-esp32 lists them to whoever asks): they are listed, annotated, on any
    // revision, whoever the principal is; a call from the model is still refused.
    let meta = r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let mut revisions: Vec<(Option<&str>, &str)> = vec![
        (None, ""),
        (Some("2024-11-05"), ""),
        (Some("2025-03-26"), ""),
        (Some("2025-06-18"), ""),
        (Some("2025-11-25"), ""),
    ];
    if cfg!(feature = "modern") {
        revisions.push((None, meta));
    }
    for (rev, meta) in revisions {
        for principal in [Principal::Model, Principal::User] {
            let mut s = Session::new();
            s.principal = principal;
            if let Some(rev) = rev {
                s.init(rev);
            }
            let ask = |params: &str| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{params}{meta}}}}}"#
                )
            };
            let list = s.json(&ask(r#""withUserTools":true"#));
            let names = listed(&list);
            assert!(
                names.contains(&"self.reboot"),
                "{rev:?} {meta} {principal:?}: {list}"
            );
            let reboot =
                &list["result"]["tools"][names.iter().position(|n| *n == "self.reboot").unwrap()];
            assert_eq!(
                reboot["annotations"]["audience"],
                serde_json::json!(["user"])
            );
            // xiaozhi's own form: an empty cursor and the flag.
            let list = s.json(&ask(r#""cursor":"","withUserTools":true"#));
            assert!(listed(&list).contains(&"self.reboot"), "{list}");
            // Without the flag (or with anything but `true`) the user-only tools are hidden from
            // the model, and listed to a person all the same.
            for params in [r#""withUserTools":false"#, r#""cursor":"""#] {
                let list = s.json(&ask(params));
                assert_eq!(
                    listed(&list).contains(&"self.reboot"),
                    principal == Principal::User,
                    "{params}: {list}"
                );
            }
        }
    }
    let mut s = Session::new();
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"withUserTools":true}}"#);
    assert_eq!(
        s.send(&call("3", "self.reboot", "{}")),
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Tool self.reboot is only available to the user, not to the model"}}"#
    );
    assert_eq!(s.dev.reboots, 0);
}

#[test]
fn user_only_tools_by_principal_and_policy() {
    let mut s = Session::new();
    // Without `withUserTools` the model's listing has no user-only tool.
    let list = s.json(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert!(!listed(&list).contains(&"self.reboot"), "{list}");
    s.principal = Principal::User;
    let list =
        s.json(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"withUserTools":true}}"#);
    let reboot = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "self.reboot")
        .unwrap();
    assert_eq!(
        reboot["annotations"]["audience"],
        serde_json::json!(["user"])
    );
    // A person's client sees the tools meant for them whether it asks with the flag or not:
    // the listing follows the caller's principal (a tool a client may call is a tool it sees).
    for params in [
        "",
        r#","params":{}"#,
        r#","params":{"withUserTools":false}"#,
        r#","params":{"withUserTools":"true"}"#,
        r#","params":{"withUserTools":1}"#,
        r#","params":{"withUserTools":null}"#,
    ] {
        let list = s.json(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"{params}}}"#
        ));
        let reboot = list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "self.reboot")
            .unwrap_or_else(|| panic!("{params}: {list}"));
        assert_eq!(
            reboot["annotations"]["audience"],
            serde_json::json!(["user"])
        );
    }
    // The model's listing still leaves them out unless asked with exactly `true`.
    s.principal = Principal::Model;
    for not_true in [r#"false"#, r#""true""#, "1", "null"] {
        let list = s.json(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"withUserTools":{not_true}}}}}"#));
        assert!(
            list["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["name"] != "self.reboot"),
            "{not_true}"
        );
    }
    assert_eq!(
        s.send(&call("3", "self.reboot", "{}")),
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Tool self.reboot is only available to the user, not to the model"}}"#
    );
    assert_eq!(s.dev.reboots, 0);
    s.principal = Principal::User;
    assert!(
        s.send(&call("4", "self.reboot", "{}"))
            .contains(r#""_meta":{"io.github.mcu-mcp/evidence":{"level":"scheduled"}}"#)
    );
    assert_eq!(s.dev.reboots, 1);

    let mut relaxed = Session::new();
    relaxed.server = S::new(Config::new("sim", "1.0").user_tools(UserToolPolicy::AllowModel));
    relaxed.server.register(&REBOOT).unwrap();
    assert!(
        !relaxed
            .send(&call("1", "self.reboot", "{}"))
            .contains(r#""isError""#)
    );
    assert_eq!(relaxed.dev.reboots, 1);
}

#[test]
fn retransmissions_are_answered_from_the_cache() {
    let mut s = Session::new();
    let first = s.send(&call(
        "1",
        "self.audio_speaker.set_volume",
        r#"{"volume":40}"#,
    ));
    s.dev.register = 0; // if it ran again, the register would be 40 again
    let again = s.send(&call(
        "1",
        "self.audio_speaker.set_volume",
        r#"{"volume":40}"#,
    ));
    assert_eq!(first, again);
    assert_eq!(s.dev.calls, 1);
    assert_eq!(s.dev.register, 0);
    // xiaozhi reuses ids: same id, different arguments is a new call.
    s.send(&call(
        "1",
        "self.audio_speaker.set_volume",
        r#"{"volume":41}"#,
    ));
    assert_eq!((s.dev.calls, s.dev.register), (2, 41));
    // Same id and arguments, different tool: new call.
    s.send(&call("1", "test.is_off", r#"{"volume":41}"#));
    // (that one fails validation and does not count)
    assert_eq!(s.dev.calls, 2);
    // Rejected calls are not cached: fixing nothing and resending re-validates.
    let bad = call("7", "self.audio_speaker.set_volume", r#"{"volume":400}"#);
    assert_eq!(s.send(&bad), s.send(&bad));
    // The window is the last 4 executed calls.
    for i in 10..15 {
        s.send(&call(&i.to_string(), "test.is_off", "{}"));
    }
    s.send(&call(
        "1",
        "self.audio_speaker.set_volume",
        r#"{"volume":40}"#,
    ));
    assert_eq!(s.dev.register, 40, "evicted from the window: runs again");
}

const SET_VOLUME: &str = "self.audio_speaker.set_volume";

#[test]
fn an_id_match_alone_is_not_a_retransmission() {
    // One peer whose ids restart (a xiaozhi backend after a reconnect, a client that always
    // sends id 1): 40, 60, 40. The third is a new request: the volume ends at 40, not 60.
    let mut s = Session::new();
    for v in [40, 60, 40] {
        let r = s.json(&call("1", SET_VOLUME, &format!(r#"{{"volume":{v}}}"#)));
        assert_eq!(
            r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], v,
            "{r}"
        );
    }
    assert_eq!((s.dev.calls, s.dev.register), (3, 40));
}

#[test]
fn a_retransmission_is_the_same_request_from_the_same_peer_with_nothing_in_between() {
    let (a, b) = (Peer::new(1), Peer::named(b"backend-session-7"));
    let volume = |v: i64| call("1", SET_VOLUME, &format!(r#"{{"volume":{v}}}"#));
    let mut s = Session::new();
    let (first, facts) = s.send_from(a, &volume(40));
    assert_eq!(facts.ran, Some(SET_VOLUME));
    assert_eq!(facts.replay, None);
    let receipt = facts.receipt.expect("an acting call is remembered");

    // Calls that do not touch the tool in between: another tool, a read-only status.
    s.send_from(a, &call("2", "test.is_off", "{}"));
    s.send_from(a, &call("3", "self.get_device_status", "{}"));
    s.dev.register = 0; // if it ran again, the register would be 40 again
    let (again, facts) = s.send_from(a, &volume(40));
    assert_eq!(again, first);
    assert_eq!(
        facts,
        Facts {
            ran: None,
            receipt: Some(receipt),
            replay: Some(Delivery::Pending)
        }
    );
    assert_eq!(s.dev.register, 0);

    // Another peer with the same id and arguments is another request.
    s.dev.register = 0;
    let (_, facts) = s.send_from(b, &volume(40));
    assert_eq!((facts.ran, facts.replay), (Some(SET_VOLUME), None));
    assert_eq!(s.dev.register, 40);

    // Peer b touched the tool: peer a's repeat runs again (b's 60 must not hide behind a's
    // cached "observed 40").
    s.send_from(b, &volume(60));
    let (r, facts) = s.send_from(a, &volume(40));
    assert_eq!(facts.ran, Some(SET_VOLUME));
    assert!(r.contains(r#""observed":40"#), "{r}");
    assert_eq!(s.dev.register, 40);
    // ... and b's retransmission of its 60 too: a touched the tool since.
    let (r, facts) = s.send_from(b, &volume(60));
    assert_eq!(facts.ran, Some(SET_VOLUME));
    assert!(r.contains(r#""observed":60"#), "{r}");
}

#[test]
fn a_change_the_engine_did_not_see_drops_the_remembered_answers() {
    let mut s = Session::new();
    let msg = call("1", SET_VOLUME, r#"{"volume":40}"#);
    s.send(&msg);
    s.dev.register = 55; // someone turned the knob
    assert_eq!(s.server.touched(SET_VOLUME), 1);
    assert_eq!(s.server.touched("no.such.tool"), 0);
    let r = s.json(&msg);
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"],
        40
    );
    assert_eq!(s.dev.calls, 2);
}

#[test]
fn delivery_is_recorded_and_a_lost_answer_is_delivered_again() {
    let mut s = Session::new();
    let peer = Peer::named(b"s-1");
    let msg = call("5", "self.reboot", "{}");
    s.principal = Principal::User;
    let (first, facts) = s.send_from(peer, &msg);
    let receipt = facts.receipt.unwrap();
    assert_eq!(s.server.delivery(receipt), Some(Delivery::Pending));
    // The link went down before the answer was written.
    assert!(s.server.delivered(receipt, Delivery::Lost));
    let (again, facts) = s.send_from(peer, &msg);
    assert_eq!(again, first);
    assert_eq!(facts.replay, Some(Delivery::Lost));
    assert_eq!(s.dev.reboots, 1, "executed once");
    assert!(s.server.delivered(receipt, Delivery::Written));
    let records: Vec<_> = s.server.recent_calls().collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].tool, "self.reboot");
    assert_eq!(records[0].delivery, Delivery::Written);
    assert_eq!(records[0].replays, 1);
    assert!(!records[0].task);
    // Refused and read-only calls leave no record and no receipt.
    let (_, facts) = s.send_from(peer, &call("6", SET_VOLUME, r#"{"volume":400}"#));
    assert_eq!(
        facts,
        Facts {
            ran: None,
            receipt: None,
            replay: None
        }
    );
    let (_, facts) = s.send_from(peer, &call("7", "self.get_device_status", "{}"));
    assert_eq!(facts.ran, Some("self.get_device_status"));
    assert_eq!(facts.receipt, None);
    assert_eq!(s.server.recent_calls().count(), 1);
}

#[cfg(feature = "modern")]
#[test]
fn a_stateless_request_is_a_retransmission_only_with_an_idempotency_key() {
    let modern = |id: &str, v: i64, key: Option<&str>| {
        let key = key.map_or(String::new(), |k| {
            format!(r#","io.github.mcu-mcp/idempotencyKey":"{k}""#)
        });
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{SET_VOLUME}","arguments":{{"volume":{v}}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}{key}}}}}}}"#
        )
    };
    let mut s = Session::new();
    // Two clients, both at id 1, no key: each request runs.
    s.send(&modern("1", 40, None));
    s.send(&modern("1", 40, None));
    assert_eq!(s.dev.calls, 2);
    // With a key: the repeat is answered from the first answer.
    let first = s.send(&modern("1", 40, Some("9b2e-1")));
    s.dev.register = 0;
    assert_eq!(s.send(&modern("1", 40, Some("9b2e-1"))), first);
    assert_eq!((s.dev.calls, s.dev.register), (3, 0));
    // Another key is another request.
    s.send(&modern("1", 40, Some("9b2e-2")));
    assert_eq!((s.dev.calls, s.dev.register), (4, 40));
    // A key that is not a short non-empty string is refused before anything runs.
    for bad in ["\"\"", "7", &format!("\"{}\"", "k".repeat(129))] {
        let msg = modern("2", 10, None).replace(
            r#""io.modelcontextprotocol/clientCapabilities":{}"#,
            &format!(r#""io.modelcontextprotocol/clientCapabilities":{{}},"io.github.mcu-mcp/idempotencyKey":{bad}"#),
        );
        let r = s.json(&msg);
        assert_eq!(r["error"]["code"], -32602, "{bad}: {r}");
    }
    assert_eq!(s.dev.calls, 4);
}

#[test]
fn a_response_that_does_not_fit_is_replaced_not_truncated() {
    let mut server = server();
    let mut dev = Dev::default();
    let mut out = [0u8; MIN_OUT_LEN + 200];
    let msg = call("1", "test.big", "{}");
    let n = server
        .handle(msg.as_bytes(), Principal::Model, &mut dev, &mut out)
        .unwrap()
        .len;
    let text = String::from_utf8(out[..n].to_vec()).unwrap();
    assert_eq!(dev.calls, 1);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], -32603);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("; the tool did run"),
        "{text}"
    );
    // ... and the retransmission is not run again.
    let n2 = server
        .handle(msg.as_bytes(), Principal::Model, &mut dev, &mut out)
        .unwrap()
        .len;
    assert_eq!(dev.calls, 1);
    assert_eq!(&out[..n2], text.as_bytes());

    // A result too large even for the handler's scratch area: the handler learns it and says so.
    let v = answer_in(
        &mut server,
        &mut dev,
        call("3", "test.huge", "{}").as_bytes(),
        &mut out,
    );
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(
        v["result"]["content"][0]["text"],
        "The tool ran, but its result is too large for the device's output buffer"
    );

    // A list page is cut to the buffer it is written into: fewer tools, and a cursor to the
    // rest (a transport that must send small frames lends a small buffer).
    let v = answer_in(
        &mut server,
        &mut dev,
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        &mut out,
    );
    assert_eq!(v["id"], 2);
    let listed = v["result"]["tools"].as_array().unwrap().len();
    assert!(listed >= 1 && listed < server.registry().len(), "{v}");
    assert!(v["result"]["nextCursor"].is_string(), "{v}");
}

#[cfg(feature = "strings")]
#[test]
fn the_smallest_buffer_holds_every_error() {
    let mut server = server();
    let mut dev = Dev::default();
    let mut out = [0u8; MIN_OUT_LEN];
    let id = format!(
        "\"{}\"",
        "\\\"".repeat((crate::wire::request::MAX_ID_LEN - 2) / 2)
    );
    let msg = call(
        &id,
        "test.echo",
        &format!(r#"{{"text":"{}"}}"#, "y".repeat(150)),
    );
    let v = answer_in(&mut server, &mut dev, msg.as_bytes(), &mut out);
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert_eq!(
        v["id"].as_str().unwrap().len(),
        (crate::wire::request::MAX_ID_LEN - 2) / 2
    );
    assert_eq!(dev.calls, 1);
    assert!(
        server
            .handle(
                b"{}",
                Principal::Model,
                &mut dev,
                &mut [0u8; MIN_OUT_LEN - 1]
            )
            .is_err()
    );
}

/// An error that quotes a client's string (an unknown method or tool) is still that error in the
/// smallest buffer beside the longest id, however the string expands when escaped: the quote is
/// cut to the room left, never the answer replaced by -32603.
#[test]
fn the_smallest_buffer_holds_every_quoting_error() {
    let mut server = server();
    let mut dev = Dev::default();
    let mut out = [0u8; MIN_OUT_LEN];
    let id = format!("\"{}\"", "i".repeat(crate::wire::request::MAX_ID_LEN - 2));
    let garbage = "\\u0001\\\"".repeat(120);
    let unknown_method = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{garbage}"}}"#);
    let v = answer_in(&mut server, &mut dev, unknown_method.as_bytes(), &mut out);
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let unknown_tool = call(&id, &garbage, "{}");
    let v = answer_in(&mut server, &mut dev, unknown_tool.as_bytes(), &mut out);
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Unknown tool: \u{1}\""), "{message:?}");
    assert_eq!(dev.calls, 0);
}

#[test]
fn pagination_by_byte_budget() {
    // Small pages over 8 tools; concatenated pages are every visible tool once, in order.
    for budget in [600, 700, 900, 1500, 8000] {
        let mut s = Session::new();
        s.principal = Principal::User;
        s.server = S::new(Config::new("sim", "1.0").page_bytes(budget));
        for t in tools() {
            s.server.register(t).unwrap();
        }
        for (principal, with_user) in [
            (Principal::Model, false),
            (Principal::Model, true),
            (Principal::User, false),
        ] {
            s.principal = principal;
            let mut names = Vec::new();
            let mut cursor: Option<String> = None;
            let mut pages = 0;
            loop {
                let params = match &cursor {
                    Some(c) => format!(r#"{{"cursor":"{c}","withUserTools":{with_user}}}"#),
                    None => format!(r#"{{"withUserTools":{with_user}}}"#),
                };
                let text = s.send(&format!(
                    r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{params}}}"#
                ));
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                let result = serde_json::to_string(&v["result"]).unwrap();
                assert!(
                    result.len() <= budget,
                    "page of {} > {budget}",
                    result.len()
                );
                let tools = v["result"]["tools"].as_array().unwrap();
                assert!(!tools.is_empty());
                names.extend(
                    tools
                        .iter()
                        .map(|t| t["name"].as_str().unwrap().to_string()),
                );
                pages += 1;
                match v["result"].get("nextCursor") {
                    Some(c) => {
                        let c = c.as_str().unwrap().to_string();
                        assert_ne!(Some(&c), cursor.as_ref());
                        cursor = Some(c);
                    }
                    None => break,
                }
            }
            let user = with_user || principal == Principal::User;
            let expected: Vec<_> = tools()
                .iter()
                .map(|t| t.name())
                .filter(|&n| user || n != "self.reboot")
                .collect();
            assert_eq!(names, expected, "budget {budget}");
            if budget <= 900 {
                assert!(pages > 1, "budget {budget}: {pages} pages");
            }
            if budget == 8000 {
                assert_eq!(pages, 1);
            }
        }
    }
}

#[test]
fn unknown_cursors_are_invalid_params() {
    let mut s = Session::new();
    for cursor in [r#""self.reboot""#, r#""00010000""#, r#"" ""#, "5", "null"] {
        assert_eq!(
            s.send(&format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{"cursor":{cursor}}}}}"#
            )),
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: unknown cursor (start again without one)"}}"#,
            "{cursor}"
        );
    }
}

#[test]
fn arguments_that_are_not_an_object_are_a_malformed_request() {
    for rev in [
        None,
        Some("2024-11-05"),
        Some("2025-06-18"),
        Some("2025-11-25"),
    ] {
        let mut s = Session::at(rev);
        for args in ["[]", "[1]", r#""x""#, "1", "true"] {
            assert_eq!(
                s.send(&call("9", "self.audio_speaker.set_volume", args)),
                r#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Invalid params: arguments must be an object"}}"#,
                "{rev:?} {args}"
            );
        }
        // `null` is an absent object: here a missing required argument, reported per revision.
        let missing = s.json(&call("9", "self.audio_speaker.set_volume", "null"));
        let text = missing.to_string();
        assert!(text.contains("Missing required argument"), "{text}");
        assert_eq!(s.dev.calls, 0);
    }
}

#[test]
fn an_empty_cursor_is_the_first_page() {
    // xiaozhi's devices and backends start a listing with `"cursor":""`.
    let mut s = Session::new();
    s.principal = Principal::User;
    let plain =
        s.json(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"withUserTools":true}}"#);
    for params in [
        r#"{"cursor":"","withUserTools":true}"#,
        r#"{"withUserTools":true,"cursor":""}"#,
    ] {
        let page = s.json(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{params}}}"#
        ));
        assert_eq!(page, plain, "{params}");
    }
    let first = s.json(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":""}}"#);
    assert_eq!(
        first["result"]["tools"][0]["name"],
        "self.get_device_status"
    );
}

#[cfg(feature = "strings")]
#[test]
fn python_style_json_with_spaces_and_unicode_escapes() {
    // xinnan's backend: json.dumps defaults (", " and ": " separators, ensure_ascii=True).
    let mut s = Session::new();
    assert_eq!(
        s.send(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "00010000"}}"#),
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: unknown cursor (start again without one)"}}"#
    );
    let r = s.json(
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "self.screen.set\u005ftheme", "arguments": {"theme": "d\u0061rk"}}}"#,
    );
    assert_eq!(r["result"].get("isError"), None, "{r}");
    assert_eq!(s.dev.theme, "dark");
    let r = s.json(
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test.echo", "arguments": {"text": "\u4f60\u597d\ud83d\ude00"}}}"#,
    );
    assert_eq!(r["result"]["content"][0]["text"], "你好😀");
}

#[test]
fn image_and_serialized_results() {
    let mut s = Session::new();
    s.server.register(&PHOTO).unwrap();
    assert_eq!(
        s.send(&call("1", "test.photo", "{}")),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"iVBORw==","mimeType":"image/png"}]}}"#
    );
    #[cfg(feature = "alloc")]
    s.server.register(&INFO).unwrap();
    #[cfg(feature = "alloc")]
    assert_eq!(
        s.send(&call("2", "test.info", "{}")),
        concat!(
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"{\"model\":\"sim \\\"1\\\"\",\"channels\":[1,2]}"}],"#,
            r#""structuredContent":{"model":"sim \"1\"","channels":[1,2]}}}"#
        )
    );
}

/// A captioned, streamed image: the caption and the evidence are the first text, the image
/// follows; `content_room` is exact about the envelope, and a handler that checks it refuses
/// before the engine's generic "too large" error would answer.
#[test]
fn captioned_streamed_images_fit_or_are_refused_first() {
    let b64 = |n: usize| {
        let data: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        let mut buf = vec![0u8; crate::result::base64_len(n)];
        let mut w = Writer::new(&mut buf);
        crate::result::base64(&mut w, &data);
        String::from_utf8(w.written().unwrap().to_vec()).unwrap()
    };
    let mut s = Session::new();
    s.server.register(&FRAME).unwrap();
    let args = |n: usize, check: bool| format!(r#"{{"bytes":{n},"check":{check}}}"#);
    assert_eq!(
        s.send(&call("1", "test.frame", &args(4, true))),
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"frame of 4 bytes — measured"},"#,
            r#"{"type":"image","data":"AAcOFQ==","mimeType":"image/png"}],"#,
            r#""_meta":{"io.github.mcu-mcp/evidence":{"level":"measured"}}}}"#
        )
    );
    assert_eq!(b64(4), "AAcOFQ==");

    // The room is what the buffer holds twice, less the envelope: an answer without blocks is
    // exactly the envelope.
    for id in ["2", r#""a-much-longer-id-of-the-kind-some-clients-send""#] {
        let empty = s.send(&call(id, "test.frame", &args(0, true)));
        let v: serde_json::Value = serde_json::from_str(&empty).unwrap();
        let blocks = v["result"]["content"].to_string().len() - 2;
        // What is rendered once (not counted in the room): the evidence as data.
        let evidence = r#","_meta":{"io.github.mcu-mcp/evidence":{"level":"measured"}}"#.len();
        assert_eq!(
            s.dev.room,
            (4096 - (empty.len() - blocks - evidence)) / 2,
            "{empty}"
        );
    }

    // The largest frame the check admits is answered in full; one group more is refused by the
    // tool, with its own message. (The room depends on the id's length: ids of one digit here.)
    s.send(&call("3", "test.frame", &args(0, true)));
    let room = s.dev.room;
    let max = (0..4096)
        .rev()
        .find(|&n| crate::ContentWriter::image_len("image/png", n) + FRAME_MARGIN <= room)
        .unwrap();
    let v = s.json(&call("3", "test.frame", &args(max, true)));
    assert_eq!(v["result"].get("isError"), None, "{v}");
    assert_eq!(v["result"]["content"][1]["data"], b64(max).as_str());
    let v = s.json(&call("4", "test.frame", &args(max + 3, true)));
    assert_eq!(
        v["result"]["content"][0]["text"],
        "The frame is too large for this device's answer"
    );
    assert_eq!(v["result"]["isError"], true);
    // Without the check, a frame well past the room runs into the engine's generic error.
    let v = s.json(&call("5", "test.frame", &args(max + 300, false)));
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Response too large"),
        "{v}"
    );
}

#[test]
fn read_only_tools_are_never_answered_from_the_cache() {
    let mut s = Session::new();
    let status = call("5", "self.get_device_status", "{}");
    let first = s.json(&status);
    s.dev.register = 9;
    let second = s.json(&status);
    assert_eq!(
        first["result"]["structuredContent"]["audio_speaker"]["volume"],
        0
    );
    assert_eq!(
        second["result"]["structuredContent"]["audio_speaker"]["volume"],
        9
    );
    assert_eq!(s.dev.calls, 2);
}

fn chatty(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.calls += 1;
    for step in 1..=3 {
        r.progress(f64::from(step), Some(3.0), Some("moving"));
    }
    r.log(
        crate::LogLevel::Debug,
        Some("chatty"),
        format_args!("debug {}", 1),
    );
    r.log(
        crate::LogLevel::Warning,
        None,
        format_args!("hot: {}\u{b0}C", 71),
    );
    r.content(|c| {
        c.text("done")
            .image("image/png", b"\x89PNG")
            .audio("audio/wav", b"RIFF");
    })
}

const CHATTY: Tool<Dev> = Tool::new("test.chatty", "Talks while it works", chatty);

#[test]
fn handlers_send_progress_and_log_messages_before_the_response() {
    let mut server = server();
    server.register(&CHATTY).unwrap();
    let mut dev = Dev::default();
    let mut out = vec![0u8; 4096];
    let mut sent: Vec<String> = Vec::new();
    let msg = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test.chatty","arguments":{},"_meta":{"progressToken":"tok"}}}"#;
    // No log level set: no log messages; progress follows the token.
    let n = server
        .handle_with(
            Input::new(msg, Principal::Model),
            &mut dev,
            &mut out,
            &mut |m: &[u8]| sent.push(String::from_utf8(m.to_vec()).unwrap()),
        )
        .unwrap()
        .len;
    assert_eq!(
        sent,
        [1, 2, 3].map(|i| format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"tok","progress":{i},"total":3,"message":"moving"}}}}"#
        ))
    );
    assert_eq!(
        core::str::from_utf8(&out[..n]).unwrap(),
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"},"#,
            r#"{"type":"image","data":"iVBORw==","mimeType":"image/png"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]"#,
            r#"}}"#
        )
    );
    // logging/setLevel: warning and above.
    sent.clear();
    let mut s = |m: &[u8]| sent.push(String::from_utf8(m.to_vec()).unwrap());
    let n = server
        .handle_with(
            Input::new(
                br#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}"#,
                Principal::Model,
            ),
            &mut dev,
            &mut out,
            &mut s,
        )
        .unwrap()
        .len;
    assert_eq!(&out[..n], br#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
    let no_token = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test.chatty","arguments":{}}}"#;
    server
        .handle_with(
            Input::new(no_token, Principal::Model),
            &mut dev,
            &mut out,
            &mut s,
        )
        .unwrap();
    assert_eq!(
        sent,
        [
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"hot: 71°C"}}"#
        ]
    );
    for bad in [r#"{"level":"verbose"}"#, r#"{"level":3}"#, "{}"] {
        let m = format!(r#"{{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{bad}}}"#);
        let n = server
            .handle(m.as_bytes(), Principal::Model, &mut dev, &mut out)
            .unwrap()
            .len;
        assert!(
            core::str::from_utf8(&out[..n]).unwrap().contains("-32602"),
            "{bad}"
        );
    }
}

#[cfg(feature = "strings")]
#[test]
fn escaped_strings_are_decoded_into_the_buffer_tail_or_refused_before_the_handler() {
    let mut server = server();
    let mut dev = Dev::default();
    // 400 × `\u00e9` decodes to 800 bytes: fits a 1200-byte buffer (the echo comes back whole)...
    let text = r"\u00e9".repeat(400);
    let msg = call("1", "test.echo", &format!(r#"{{"text":"{text}"}}"#));
    let mut out = [0u8; 1200];
    let v = answer_in(&mut server, &mut dev, msg.as_bytes(), &mut out);
    assert_eq!(dev.calls, 1);
    // The decoded text reached the handler whole; its echo does not fit in front of it, which
    // the handler learns as a full scratch area (never a truncated text).
    assert_eq!(v["result"]["isError"], true, "{v}");
    let echoed = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(echoed.contains("too large"), "{echoed}");

    let msg = call("3", "test.echo", &format!(r#"{{"text":"{text}"}}"#));
    let mut out = [0u8; 4096];
    let v = answer_in(&mut server, &mut dev, msg.as_bytes(), &mut out);
    assert_eq!(dev.calls, 2);
    assert_eq!(v["result"]["content"][0]["text"], "é".repeat(400), "{v}");

    // ... but not a 600-byte buffer: refused before the handler runs, with a well-formed result.
    let msg = call("2", "test.echo", &format!(r#"{{"text":"{text}"}}"#));
    let mut out = [0u8; 600];
    let v = answer_in(&mut server, &mut dev, msg.as_bytes(), &mut out);
    assert_eq!(dev.calls, 2, "the handler must not run");
    assert_eq!(v["result"]["isError"], true);
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Arguments too long"),
        "{v}"
    );
}

/// A server that cannot hold a call (`HOLD = 0`, the choice of a firmware without confirmed
/// tools, or no larger than the held call's record) refuses a tool that asks a person first, at registration, and says why.
#[cfg(feature = "confirm")]
#[test]
fn a_confirmed_tool_needs_hold_room() {
    const ASKS: Tool<Dev> = Tool::new("self.asks", "Asks first", set_volume)
        .confirm(crate::registry::Confirm::new("Go ahead?"));
    let mut none: Server<'static, Dev, Caps<2, 0, 0, 0, 0, 0, 0>> =
        Server::new(Config::new("t", "1"));
    let err = none.register(&ASKS).map(|_| ()).unwrap_err();
    assert_eq!(err.tool, "self.asks");
    assert_eq!(err.kind, crate::registry::RegisterErrorKind::NoHold);
    assert!(err.to_string().contains("HOLD > HOLD_RECORD"), "{err}");
    // A tool that asks nothing registers there; a server with room takes the confirmed one.
    assert!(none.register(&VOLUME).is_ok());
    // Nor where HOLD is only the record, with no room for the message.
    const REC: usize = crate::server::HOLD_RECORD;
    let mut record: Server<'static, Dev, Caps<2, 0, 0, 0, 0, 0, REC>> =
        Server::new(Config::new("t", "1"));
    let err = record.register(&ASKS).map(|_| ()).unwrap_err();
    assert_eq!(err.kind, crate::registry::RegisterErrorKind::NoHold);
    let mut some: Server<'static, Dev, Caps<2, 0, 0, 0, 0, 0, { REC + 64 }>> =
        Server::new(Config::new("t", "1"));
    assert!(some.register(&ASKS).is_ok());
}

/// The confirmation state is the `HOLD` bytes and nothing else: `HOLD = 0` costs no RAM, and
/// each byte of `HOLD` costs one.
#[cfg(feature = "confirm")]
#[test]
fn hold_is_the_whole_cost_of_confirmation() {
    type S<const HOLD: usize> = Server<'static, Dev, Caps<2, 0, 0, 0, 0, 0, HOLD>>;
    assert_eq!(
        core::mem::size_of::<crate::server::confirm::Confirmations<Caps<2, 0, 0, 0, 0, 0, 0>>>(),
        0
    );
    assert_eq!(
        core::mem::size_of::<S<256>>() - core::mem::size_of::<S<0>>(),
        256
    );
    // The default holds a call of 221 bytes (the record keeps the client's name, the last
    // press, who is owed an outcome after its answer, and 2026-07-28 approvals with `modern`).
    let message = 352 - crate::server::HOLD_RECORD;
    assert_eq!(message, if cfg!(feature = "modern") { 221 } else { 253 });
}

/// The parse error's message, written piece by piece (no `core::fmt`), says what `JsonError`'s
/// `Display` says, for every kind of error; and the over-long response error names its sizes.
#[test]
fn piecewise_messages_match_their_formatted_text() {
    use crate::server::respond::{parse_error, too_large};
    use crate::wire::json::JsonError;
    for e in [
        JsonError::Utf8(3),
        JsonError::Syntax(1234),
        JsonError::TooDeep(128),
        JsonError::Empty,
    ] {
        let mut out = [0u8; 256];
        let n = parse_error(&mut out, None, e);
        let want = format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32700,"message":"Parse error: {e}"}}}}"#
        );
        assert_eq!(core::str::from_utf8(&out[..n]).unwrap(), want);
    }
    let mut out = [0u8; 256];
    let n = too_large(&mut out, None, 5000, "; the tool did run");
    let text = core::str::from_utf8(&out[..n]).unwrap();
    assert!(
        text.contains(
            "Response too large for the device's output buffer (5000 > 256 bytes); the tool did run"
        ),
        "{text}"
    );
}

/// One rule for every failure: a failure whose evidence names no commanded
/// value (a kit's `not applied` from a driver that knows only its own error) gets the call's
/// first parameter's validated value — a number, a boolean or a declared choice, never the
/// client's free-form text — and says it in the first text and, for xiaozhi, in `error`.
#[test]
fn a_failure_names_what_the_call_commanded() {
    fn refuse(_: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
        Err(
            ToolError::new("The device did not acknowledge (I2C NACK); nothing was changed")
                .with_evidence(Evidence::new(Level::NotApplied)),
        )
    }
    fn bug(_: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
        Err(ToolError::new("Tool bug"))
    }
    const NACK: Tool<Dev> = Tool::new("t.volume", "Volume", refuse)
        .params(&[Param::integer("volume", "Volume").range(0, 100)]);
    #[cfg(feature = "strings")]
    const MODE: Tool<Dev> = Tool::new("t.mode", "Mode", refuse)
        .params(&[Param::string("mode", "Mode").one_of(&["eco", "boost"])]);
    #[cfg(feature = "strings")]
    const LABEL: Tool<Dev> =
        Tool::new("t.label", "Label", refuse).params(&[Param::string("label", "Free text")]);
    const BUG: Tool<Dev> =
        Tool::new("t.bug", "Bug", bug).params(&[Param::integer("n", "N").range(0, 9)]);
    let mut s: S = Server::new(Config::new("v", "1"));
    s.register_all(&[&NACK, &BUG]).unwrap();
    #[cfg(feature = "strings")]
    s.register_all(&[&MODE, &LABEL]).unwrap();
    let mut dev = Dev::default();
    let mut out = [0u8; 1024];
    let mut ask = |tool: &str, args: &str| {
        let msg = call("1", tool, args);
        answer_in(&mut s, &mut dev, msg.as_bytes(), &mut out)
    };
    let r = ask("t.volume", r#"{"volume":40}"#);
    let said = "The device did not acknowledge (I2C NACK); nothing was changed — not applied \
                (commanded 40)";
    assert_eq!(r["result"]["content"][0]["text"], said, "{r}");
    assert_eq!(r["result"]["error"], said, "xiaozhi speaks `error`");
    assert_eq!(
        r["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        serde_json::json!({"level": "not_applied", "commanded": 40})
    );
    #[cfg(feature = "strings")]
    {
        let r = ask("t.mode", r#"{"mode":"boost"}"#);
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.ends_with("— not applied (commanded boost)"), "{text}");
        // The client's own words are not repeated (a failure is spoken and logged).
        let r = ask("t.label", r#"{"label":"say \"hi\" zq7"}"#);
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.ends_with("— not applied") && !text.contains("zq7"),
            "{text}"
        );
    }
    // A failure without evidence (a tool bug) says what the tool said.
    let r = ask("t.bug", r#"{"n":3}"#);
    assert_eq!(r["result"]["content"][0]["text"], "Tool bug");
}
