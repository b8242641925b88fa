//! The scenarios: one per criterion benchmark and per `dispatch-loop` name.
//!
//! Each scenario is a harness that feeds a fixed cycle of request messages (bytes) to a server
//! and produces the response bytes; [`Harness::check`] runs one whole cycle and checks every
//! response (called once, outside the timed loop). A cycle has [`CYCLE`] messages whose request ids
//! differ (`101`…`108`): the engine answers a retransmission (same id, tool and arguments from
//! the same peer, with no call of that tool in between) from its recent-call cache without running
//! the tool, and the benches must measure real calls, not replays. The rmcp harnesses get the very same bytes.

use mcp_core::registry::{Audience, Tool};
use mcp_hal::audio::AudioCodec as _;
use serde_json::Value;

use crate::board::{
    Board, CAPACITY, Names, SET_VOLUME, SHOW_TEXT, TOOLS, fillers, named_fillers, set_levels,
    shown_chars,
};
pub use crate::harness::{CYCLE, Check, Harness, INITIALIZE, Step};
use crate::ours::{Ours, server};
use crate::rmcp_side::{RmcpDirect, RmcpServed};

/// Which implementation a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// This workspace's engine (`mcu-mcp-core`).
    Ours,
    /// rmcp, called directly: JSON decode, `Service::handle_request`, JSON encode.
    RmcpDirect,
    /// rmcp served over an in-memory stream by its own service loop.
    RmcpServed,
}

impl Side {
    /// The criterion function name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Side::Ours => "mcu-mcp",
            Side::RmcpDirect => "rmcp-direct",
            Side::RmcpServed => "rmcp-served",
        }
    }
}

/// A named scenario.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// The criterion group.
    pub group: &'static str,
    /// The criterion function within the group.
    pub function: &'static str,
    /// Which implementation runs.
    pub side: Side,
    /// One line: what is fed.
    pub about: &'static str,
    make: fn() -> Box<dyn Harness>,
}

impl Scenario {
    /// `group/function`, the criterion benchmark id and the `dispatch-loop` name.
    pub fn id(&self) -> String {
        format!("{}/{}", self.group, self.function)
    }

    /// A fresh harness (servers built and initialized).
    pub fn make(&self) -> Box<dyn Harness> {
        (self.make)()
    }
}

/// Finds a scenario by its id; a bare group name means its `mcu-mcp` function.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| {
        s.id() == name || (s.group == name && s.side == Side::Ours && s.function == "mcu-mcp")
    })
}

/// Builds the cycle: `f(k)` for `k` in `0..CYCLE`, with `"ID"` replaced by `101 + k`.
fn cycle(f: impl Fn(usize) -> String) -> Vec<Step> {
    (0..CYCLE)
        .map(|k| vec![f(k).replace("ID", &(101 + k).to_string()).into_bytes()])
        .collect()
}

/// Builds a `tools/call` request.
fn call(name: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
    )
}

/// The volume commanded by step `k` of the valid-call cycle.
pub fn volume_of(k: usize) -> i64 {
    40 + k as i64
}

fn set_volume_messages() -> Vec<Step> {
    cycle(|k| {
        call(
            SET_VOLUME.name(),
            &format!(r#"{{"volume":{}}}"#, volume_of(k)),
        )
    })
}

fn initialize_messages() -> Vec<Step> {
    cycle(|_| INITIALIZE.to_string())
}

fn ping_messages() -> Vec<Step> {
    cycle(|_| r#"{"jsonrpc":"2.0","id":ID,"method":"ping"}"#.to_string())
}

fn out_of_range_messages() -> Vec<Step> {
    cycle(|_| call(SET_VOLUME.name(), r#"{"volume":150}"#))
}

fn unknown_tool_messages() -> Vec<Step> {
    cycle(|_| call("self.light.set_color", r#"{"color":"red"}"#))
}

/// The escaped text: exactly 200 bytes between the quotes, with `\uXXXX` escapes.
pub fn escaped_text() -> String {
    let chunk = r"Gr\u00fc\u00dfe \u4f60\u597d ";
    let mut s = String::new();
    while s.len() + chunk.len() <= 200 {
        s.push_str(chunk);
    }
    while s.len() < 200 {
        s.push('.');
    }
    s
}

/// The characters of [`escaped_text`] once decoded.
pub fn escaped_text_chars() -> usize {
    let decoded: String = match serde_json::from_str(&format!("\"{}\"", escaped_text())) {
        Ok(s) => s,
        Err(e) => panic!("escaped text: {e}"),
    };
    decoded.chars().count()
}

// ---- expectations (checked once per harness, outside the timed loop) ----

fn field<'v>(v: &'v Value, path: &[&str]) -> Result<&'v Value, String> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .ok_or_else(|| format!("no {} in {v}", path.join(".")))
}

fn one(responses: &[Value]) -> Result<&Value, String> {
    match responses {
        [r] => Ok(r),
        _ => Err(format!("expected one response, got {}", responses.len())),
    }
}

/// jsonrpc 2.0 and the request id of step `i`.
fn envelope(i: usize, r: &Value) -> Result<(), String> {
    if r.get("jsonrpc") != Some(&Value::from("2.0")) || r.get("id") != Some(&Value::from(101 + i)) {
        return Err(format!("bad envelope (id {}): {r}", 101 + i));
    }
    Ok(())
}

fn expect_initialize(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    if field(r, &["result", "protocolVersion"])? != "2025-11-25" {
        return Err(format!("revision not echoed: {r}"));
    }
    field(r, &["result", "capabilities", "tools"])?;
    field(r, &["result", "serverInfo", "name"])?;
    Ok(())
}

fn expect_ping(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    match field(r, &["result"])? {
        Value::Object(m) if m.is_empty() => Ok(()),
        other => Err(format!("ping result {other}")),
    }
}

fn tool_names(page: &Value) -> Result<Vec<String>, String> {
    let tools = field(page, &["result", "tools"])?
        .as_array()
        .ok_or("tools is not an array")?;
    tools
        .iter()
        .map(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("tool without name: {t}"))
        })
        .collect()
}

fn expect_first_page(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    let names = tool_names(r)?;
    let want = model_visible(TOOLS);
    if names != want {
        return Err(format!("listed {names:?}, want {want:?}"));
    }
    if r.pointer("/result/nextCursor").is_some() {
        return Err("the device-sim tool set fits one page".into());
    }
    Ok(())
}

/// The names the model sees, in order (user-only tools, here `self.reboot`, are not listed).
fn model_visible(tools: &[&'static Tool<Board>]) -> Vec<&'static str> {
    tools
        .iter()
        .filter(|t| t.audience() == Audience::Model)
        .map(|t| t.name())
        .collect()
}

fn all_64_tools() -> Vec<&'static Tool<Board>> {
    TOOLS
        .iter()
        .copied()
        .chain(fillers().iter().copied().take(64 - TOOLS.len()))
        .collect()
}

fn expect_all_pages(_: usize, responses: &[Value]) -> Result<(), String> {
    let mut names = Vec::new();
    for (p, page) in responses.iter().enumerate() {
        names.extend(tool_names(page)?);
        let more = page.pointer("/result/nextCursor").is_some();
        if more != (p + 1 < responses.len()) {
            return Err(format!("page {p}: nextCursor {more}"));
        }
    }
    let want = model_visible(&all_64_tools());
    if names != want {
        return Err(format!(
            "walked {} tools, want {} in order",
            names.len(),
            want.len()
        ));
    }
    if responses.len() < 2 {
        return Err("64 tools should need more than one page".into());
    }
    Ok(())
}

/// The valid `set_volume` answer, for either implementation: `true` with the evidence in its
/// first text (what a xiaozhi backend hands the model), not an error (rmcp writes `isError:
/// false`; mcu-mcp leaves it out).
fn expect_set_volume_common(i: usize, r: &Value) -> Result<(), String> {
    envelope(i, r)?;
    let v = volume_of(i);
    let text = format!("true — read back: {v}");
    if !matches!(
        r.pointer("/result/isError"),
        None | Some(Value::Bool(false))
    ) || r.pointer("/result/content/0/text") != Some(&Value::from(text))
        || r.pointer("/result/structuredContent/value") != Some(&Value::Bool(true))
    {
        return Err(format!("not a successful true: {r}"));
    }
    Ok(())
}

fn expect_set_volume(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    expect_set_volume_common(i, r)?;
    if r.pointer("/result/isError").is_some() {
        return Err(format!("a success written with `isError`: {r}"));
    }
    let v = volume_of(i);
    let e = field(r, &["result", "_meta", "io.github.mcu-mcp/evidence"])?;
    if e.get("level") != Some(&Value::from("read_back"))
        || e.get("commanded") != Some(&Value::from(v))
        || e.get("observed") != Some(&Value::from(v))
    {
        return Err(format!("evidence {e}, want read_back {v}/{v}"));
    }
    Ok(())
}

/// rmcp carries the evidence in `_meta` (its result type has no other place for it).
fn expect_set_volume_rmcp(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    expect_set_volume_common(i, r)?;
    let v = volume_of(i);
    let e = field(r, &["result", "_meta", "evidence"])?;
    if e.get("level") != Some(&Value::from("read_back"))
        || e.get("commanded") != Some(&Value::from(v))
        || e.get("observed") != Some(&Value::from(v))
    {
        return Err(format!("evidence {e}, want read_back {v}/{v}"));
    }
    Ok(())
}

fn expect_show_text(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    let n = escaped_text_chars();
    if r.pointer("/result/isError").is_some()
        || r.pointer("/result/structuredContent/value") != Some(&Value::from(n))
    {
        return Err(format!("want {n} characters shown: {r}"));
    }
    Ok(())
}

fn expect_out_of_range(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    let text = r
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if r.pointer("/result/isError") != Some(&Value::Bool(true)) || !text.contains("volume") {
        return Err(format!("want isError naming the argument: {r}"));
    }
    Ok(())
}

fn expect_unknown_tool(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    if r.pointer("/error/code") != Some(&Value::from(-32602)) || r.get("result").is_some() {
        return Err(format!("want a -32602 error: {r}"));
    }
    Ok(())
}

fn expect_parse_error(_: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    if r.pointer("/error/code") != Some(&Value::from(-32700)) || r.get("id") != Some(&Value::Null) {
        return Err(format!("want a -32700 error with id null: {r}"));
    }
    Ok(())
}

fn board_untouched(b: &mut Board) -> Result<(), String> {
    match b.sim.codec.volume() {
        Ok(v) if b.sim.codec.writes() == 0 => {
            let _ = v;
            Ok(())
        }
        other => Err(format!(
            "the codec was written ({} writes, {other:?})",
            b.sim.codec.writes()
        )),
    }
}

fn board_volume_set(b: &mut Board) -> Result<(), String> {
    let want = volume_of(CYCLE - 1);
    match b.sim.codec.volume() {
        Ok(v) if i64::from(v) == want => Ok(()),
        other => Err(format!("codec volume {other:?}, want {want}")),
    }
}

fn board_text_shown(_: &mut Board) -> Result<(), String> {
    let shown = shown_chars();
    if shown == escaped_text_chars() {
        Ok(())
    } else {
        Err(format!("shown {shown} characters"))
    }
}

fn no_board_check(_: &mut Board) -> Result<(), String> {
    Ok(())
}

// ---- the scenarios ----

fn ours_initialize() -> Box<dyn Harness> {
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        initialize_messages(),
        expect_initialize,
        no_board_check,
    ))
}

fn ours_ping() -> Box<dyn Harness> {
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        ping_messages(),
        expect_ping,
        no_board_check,
    ))
}

fn ours_first_page() -> Box<dyn Harness> {
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        cycle(|_| r#"{"jsonrpc":"2.0","id":ID,"method":"tools/list"}"#.to_string()),
        expect_first_page,
        no_board_check,
    ))
}

fn ours_all_pages() -> Box<dyn Harness> {
    let tools = all_64_tools();
    let (mut server, mut board) = server::<64>(&tools);
    // Walk once to learn the cursors (they are opaque, but fixed for a given tool table).
    let mut steps = Vec::new();
    let mut out = vec![0u8; crate::ours::OUT_LEN];
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor
            .as_ref()
            .map(|c| format!(r#","params":{{"cursor":"{c}"}}"#))
            .unwrap_or_default();
        let message = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"{params}}}"#);
        let len = match server.handle(
            message.as_bytes(),
            mcp_core::Principal::Model,
            &mut board,
            &mut out,
        ) {
            Ok(h) => h.len,
            Err(e) => panic!("tools/list: {e:?}"),
        };
        steps.push(message.into_bytes());
        let page = match crate::ours::parse_response(out.get(..len).unwrap_or_default()) {
            Ok(p) => p,
            Err(e) => panic!("tools/list: {e}"),
        };
        cursor = page
            .pointer("/result/nextCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if cursor.is_none() || steps.len() > 64 {
            break;
        }
    }
    Box::new(Ours::new(
        (server, board),
        vec![steps],
        expect_all_pages,
        no_board_check,
    ))
}

fn ours_set_volume() -> Box<dyn Harness> {
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        set_volume_messages(),
        expect_set_volume,
        board_volume_set,
    ))
}

fn ours_escaped() -> Box<dyn Harness> {
    let tools: Vec<&'static Tool<Board>> = TOOLS.iter().copied().chain([&SHOW_TEXT]).collect();
    Box::new(Ours::<{ CAPACITY + 1 }>::new(
        server(&tools),
        cycle(|_| {
            call(
                SHOW_TEXT.name(),
                &format!(r#"{{"text":"{}"}}"#, escaped_text()),
            )
        }),
        expect_show_text,
        board_text_shown,
    ))
}

fn ours_out_of_range() -> Box<dyn Harness> {
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        out_of_range_messages(),
        expect_out_of_range,
        board_untouched,
    ))
}

fn ours_unknown_tool() -> Box<dyn Harness> {
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        unknown_tool_messages(),
        expect_unknown_tool,
        board_untouched,
    ))
}

fn ours_parse_error() -> Box<dyn Harness> {
    // A frame cut short: the whole message is scanned before the error is found.
    Box::new(Ours::<CAPACITY>::new(
        server(TOOLS),
        cycle(|_| {
            let full = call(SET_VOLUME.name(), r#"{"volume":40}"#);
            full.get(..full.len() - 2).unwrap_or_default().to_string()
        }),
        expect_parse_error,
        board_untouched,
    ))
}

/// `n - 1` fillers first, `set_volume` last: the worst place for a lookup by name.
fn with_tools<const N: usize>() -> Box<dyn Harness> {
    let tools: Vec<&'static Tool<Board>> = fillers()
        .iter()
        .copied()
        .take(N - 1)
        .chain([&SET_VOLUME])
        .collect();
    Box::new(Ours::<N>::new(
        server(&tools),
        set_volume_messages(),
        expect_set_volume,
        board_volume_set,
    ))
}

/// `set_volume` alone: the cost a lookup by name is held against.
fn only_tool() -> Box<dyn Harness> {
    Box::new(Ours::<1>::new(
        server(&[&SET_VOLUME]),
        set_volume_messages(),
        expect_set_volume,
        board_volume_set,
    ))
}

/// 255 fillers named as `names` says, `set_volume` the 256th.
fn with_256_tools(names: Names) -> Box<dyn Harness> {
    let tools: Vec<&'static Tool<Board>> = named_fillers(names)
        .iter()
        .copied()
        .chain([&SET_VOLUME])
        .collect();
    Box::new(Ours::<256>::new(
        server(&tools),
        set_volume_messages(),
        expect_set_volume,
        board_volume_set,
    ))
}

/// The value of argument `a` (0-based) in step `k` of the argument-count cycle.
fn level_of(k: usize, a: usize) -> i64 {
    (10 * a + k) as i64
}

/// `bench.set_levels` called with all of its `n` integer arguments, in declaration order.
fn levels_messages(n: usize) -> Vec<Step> {
    cycle(|k| {
        let args: Vec<String> = (0..n)
            .map(|a| format!(r#""level_{:02}":{}"#, a + 1, level_of(k, a)))
            .collect();
        call("bench.set_levels", &format!("{{{}}}", args.join(",")))
    })
}

/// The sum of the step's levels, `applied`.
fn expect_levels<const N: usize>(i: usize, responses: &[Value]) -> Result<(), String> {
    let r = one(responses)?;
    envelope(i, r)?;
    let sum: i64 = (0..N).map(|a| level_of(i, a)).sum();
    if r.pointer("/result/isError").is_some()
        || r.pointer("/result/structuredContent/value") != Some(&Value::from(sum))
    {
        return Err(format!("want the sum {sum}: {r}"));
    }
    Ok(())
}

/// A server with the device-sim tool set and `bench.set_levels` of `N` arguments, fed calls
/// with all of them.
fn with_arguments<const N: usize>() -> Box<dyn Harness> {
    let levels: &'static Tool<Board> = Box::leak(Box::new(set_levels::<N>()));
    let tools: Vec<&'static Tool<Board>> = TOOLS.iter().copied().chain([levels]).collect();
    Box::new(Ours::<{ CAPACITY + 1 }>::new(
        server(&tools),
        levels_messages(N),
        expect_levels::<N>,
        no_board_check,
    ))
}

fn rmcp_direct(messages: fn() -> Vec<Step>, check: Check) -> Box<dyn Harness> {
    Box::new(RmcpDirect::new(messages(), check))
}

fn rmcp_served(messages: fn() -> Vec<Step>, check: Check) -> Box<dyn Harness> {
    Box::new(RmcpServed::new(messages(), check))
}

/// Every scenario, in report order.
pub fn all() -> Vec<Scenario> {
    use Side::{Ours as O, RmcpDirect as D, RmcpServed as S};
    let s = |group, side: Side, about, make| Scenario {
        group,
        function: side.as_str(),
        side,
        about,
        make,
    };
    let t = |function, about, make| Scenario {
        group: "call_set_volume_tools",
        function,
        side: O,
        about,
        make,
    };
    let a = |function, about, make| Scenario {
        group: "call_arguments",
        function,
        side: O,
        about,
        make,
    };
    vec![
        s(
            "initialize",
            O,
            "initialize (2025-11-25), device-sim tool set",
            ours_initialize,
        ),
        s(
            "initialize",
            D,
            "initialize (2025-11-25), rmcp with set_volume",
            || rmcp_direct(initialize_messages, expect_initialize),
        ),
        s("ping", O, "ping", ours_ping),
        s("ping", D, "ping", || {
            rmcp_direct(ping_messages, expect_ping)
        }),
        s("ping", S, "ping", || {
            rmcp_served(ping_messages, expect_ping)
        }),
        s(
            "tools_list_first_page",
            O,
            "tools/list, device-sim tool set (the demo board's tools, one page)",
            ours_first_page,
        ),
        s(
            "tools_list_all_pages_64",
            O,
            "tools/list page walk, 64 tools (8000-byte pages)",
            ours_all_pages,
        ),
        s(
            "call_set_volume",
            O,
            "tools/call set_volume valid, device-sim tool set",
            ours_set_volume,
        ),
        s("call_set_volume", D, "tools/call set_volume valid", || {
            rmcp_direct(set_volume_messages, expect_set_volume_rmcp)
        }),
        s("call_set_volume", S, "tools/call set_volume valid", || {
            rmcp_served(set_volume_messages, expect_set_volume_rmcp)
        }),
        s(
            "call_escaped_string",
            O,
            "tools/call show_text, 200-byte string with \\uXXXX escapes",
            ours_escaped,
        ),
        s(
            "call_out_of_range",
            O,
            "tools/call set_volume volume=150 (validation failure)",
            ours_out_of_range,
        ),
        s(
            "call_out_of_range",
            D,
            "tools/call set_volume volume=150 (validation failure)",
            || rmcp_direct(out_of_range_messages, expect_out_of_range),
        ),
        s(
            "call_unknown_tool",
            O,
            "tools/call of an unregistered tool",
            ours_unknown_tool,
        ),
        s(
            "call_unknown_tool",
            D,
            "tools/call of an unregistered tool",
            || rmcp_direct(unknown_tool_messages, expect_unknown_tool),
        ),
        s(
            "parse_error",
            O,
            "a tools/call frame cut short (-32700)",
            ours_parse_error,
        ),
        t(
            "1",
            "tools/call set_volume valid, the only tool registered",
            only_tool,
        ),
        t(
            "4",
            "tools/call set_volume valid, 4 tools registered (set_volume last)",
            with_tools::<4>,
        ),
        t(
            "16",
            "tools/call set_volume valid, 16 tools registered (set_volume last)",
            with_tools::<16>,
        ),
        t(
            "64",
            "tools/call set_volume valid, 64 tools registered (set_volume last)",
            with_tools::<64>,
        ),
        t(
            "256",
            "tools/call set_volume valid, 256 tools of varied names (set_volume last)",
            || with_256_tools(Names::Varied),
        ),
        t(
            "256_prefix",
            "tools/call set_volume valid, 256 tools named self.audio_speaker.set_v… (set_volume last)",
            || with_256_tools(Names::SharedPrefix),
        ),
        a(
            "1",
            "tools/call of a tool with 1 integer argument",
            with_arguments::<1>,
        ),
        a(
            "2",
            "tools/call of a tool with 2 integer arguments",
            with_arguments::<2>,
        ),
        a(
            "4",
            "tools/call of a tool with 4 integer arguments",
            with_arguments::<4>,
        ),
        a(
            "8",
            "tools/call of a tool with 8 integer arguments",
            with_arguments::<8>,
        ),
        a(
            "9",
            "tools/call of a tool with 9 integer arguments",
            with_arguments::<9>,
        ),
        a(
            "16",
            "tools/call of a tool with 16 integer arguments",
            with_arguments::<16>,
        ),
    ]
}
