//! A device with one tool of every kind, and [`Session`]: a server that checks every exchange
//! against the oracles of this crate.

use crate::{
    Expect, J, KNOWN_METHODS, check_outgoing, check_response, classify, entries, json_str, model,
};
use mcp_core::registry::{Annotations, TaskSupport, Tool};
use mcp_core::schema::Param;
#[cfg(feature = "full")]
use mcp_core::server::status_tool;
use mcp_core::{
    Args, Caps, Config, Evidence, Level, Output, Principal, Progress, Reply, Server, TaskHooks,
    TaskInfo, TaskPoll, ToolError, ToolResult,
};

/// The device: counts handler runs, per tool.
#[derive(Debug, Default)]
pub struct Dev {
    /// Handler runs, by tool index in [`TOOLS`].
    pub runs: [u32; 8],
    /// Safe-stops issued.
    pub stops: u32,
}

const ACT_PARAMS: &[Param] = &[
    Param::integer("volume", "Volume").range(0, 100),
    // (String parameters: the full engine only; the minimal one has none.)
    #[cfg(feature = "full")]
    Param::string("theme", "Theme")
        .one_of(&["light", "dark", "d\u{e9}j\u{e0}"])
        .default_str("light"),
    #[cfg(feature = "full")]
    Param::string("label", "Label").length(0, 8).optional(),
    #[cfg(feature = "full")]
    Param::number("gain", "Gain")
        .range_f64(-1.5, 2.5)
        .optional(),
    // The minimal engine has no `Param::number`: an integer in its place, which takes any
    // integral spelling (`5e1`, `20.0`, `-0`, `0.15e2`) and refuses fractional ones.
    #[cfg(not(feature = "full"))]
    Param::integer("gain", "Gain").range(-15, 25).optional(),
    Param::boolean("on", "On").default_bool(false),
    Param::integer("big", "Any i64").optional(),
];

/// Asserts inside the handler what validation promised (a broken promise panics here).
fn act(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.runs[0] += 1;
    let v = a.int("volume").expect("required integer");
    assert!((0..=100).contains(&v), "volume {v} escaped its range");
    #[cfg(feature = "full")]
    let (t, l) = {
        let t = a.str("theme").expect("defaulted string");
        assert!(
            ["light", "dark", "d\u{e9}j\u{e0}"].contains(&t),
            "theme {t:?}"
        );
        let l = a.opt_str("label").expect("declared");
        assert!(l.is_none_or(|l| l.chars().count() <= 8), "label {l:?}");
        (t, l)
    };
    #[cfg(not(feature = "full"))]
    let (t, l) = ("light", None::<&str>);
    #[cfg(feature = "full")]
    {
        let g = a.opt_number("gain").expect("declared");
        assert!(g.is_none_or(|g| (-1.5..=2.5).contains(&g)), "gain {g:?}");
    }
    #[cfg(not(feature = "full"))]
    {
        let g = a.opt_int("gain").expect("declared");
        assert!(g.is_none_or(|g| (-15..=25).contains(&g)), "gain {g:?}");
    }
    let on = a.bool("on").expect("defaulted bool");
    let _ = a.opt_int("big").expect("declared");
    r.json(|o| {
        o.int("volume", v).str("theme", t).bool("on", on);
        if let Some(l) = l {
            o.str("label", l);
        }
    })
}

fn user(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.runs[1] += 1;
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

fn read(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.runs[2] += 1;
    let k = a.opt_int("k").expect("declared");
    assert!(k.is_none_or(|k| k >= -5), "k {k:?}");
    r.text(format_args!("k={k:?}"))
}

fn start(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.runs[3] += 1;
    let steps = a.int("steps").expect("required");
    assert!((0..=3).contains(&steps), "steps {steps}");
    if steps == 0 {
        return Ok(Output::int(0).with_evidence(Evidence::new(Level::Measured)));
    }
    if steps == 1 && a.bool("fail").expect("defaulted") {
        return Err(ToolError::new("refused to start"));
    }
    Ok(Output::task(steps))
}

fn poll(_: &mut Dev, t: &TaskInfo) -> TaskPoll {
    let need = (t.data as u64) * 100;
    let done = t.now_ms.saturating_sub(t.started_ms);
    if done >= need {
        TaskPoll::Done(Ok(
            Output::int(t.data).with_evidence(Evidence::new(Level::Measured))
        ))
    } else {
        TaskPoll::Working(Some(Progress {
            progress: done as f64,
            total: Some(need as f64),
        }))
    }
}

fn stop(d: &mut Dev, _: &TaskInfo) -> Result<(), ToolError> {
    d.stops += 1;
    Ok(())
}

fn big(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.runs[4] += 1;
    let n = a.int("n").expect("required");
    let n = usize::try_from(n).expect("validated 0..=3000");
    r.text(format_args!("{:\u{e9}<1$}", "", n))
}

fn plain(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.runs[5] += 1;
    Ok(Output::bool(false))
}

/// The tools, in registration order; [`Dev::runs`] is indexed by this order. (The status
/// tool's `task_id` is a string parameter: the full engine only.)
pub static TOOLS: &[Tool<Dev>] = &[
    Tool::new("t.act", "An action with every parameter type", act).params(ACT_PARAMS),
    Tool::new("t.user", "A user-only action", user).user_only(),
    Tool::new("t.read", "A read", read)
        .params(&[Param::integer("k", "k").min(-5).optional()])
        .annotations(Annotations::new().read_only(true)),
    Tool::new("t.task", "A long-running action", start)
        .params(&[
            Param::integer("steps", "steps").range(0, 3),
            Param::boolean("fail", "fail").default_bool(false),
        ])
        .long_running(
            TaskSupport::Optional,
            TaskHooks {
                poll,
                stop: Some(stop),
                timeout_ms: 250,
            },
        ),
    Tool::new("t.big", "An answer of n characters", big)
        .params(&[Param::integer("n", "n").range(0, 3000)]),
    Tool::new("t.plain", "No parameters", plain),
    #[cfg(feature = "full")]
    status_tool(),
];

/// The handler-run counter index for a tool name, if the tool counts its runs.
fn counter(name: &str) -> Option<usize> {
    TOOLS
        .iter()
        .position(|t| t.name() == name)
        .filter(|&i| i < 6)
}

/// Prompts with arguments (`prompts/get` fills them in, `completion/complete` offers values).
#[cfg(feature = "full")]
static PROMPTS: [mcp_core::Prompt; 2] = [
    mcp_core::Prompt::new("p.intro", "No arguments", "A {lamp}."),
    mcp_core::Prompt::new("p.check", "Two arguments", "Check {part}{mood} {").arguments(&[
        mcp_core::PromptArgument::new("part", "part")
            .required()
            .values(&["relay", "Reboot", "r\u{e9}lais"]),
        mcp_core::PromptArgument::new("mood", "mood"),
    ]),
];

/// The server type under test: 8 tools, 2 task slots, 4 cached calls of 448 bytes.
pub type Srv = Server<'static, Dev, Caps<8>>;

/// A fresh server with every tool registered.
pub fn server(page_bytes: usize) -> Srv {
    let config = Config::new("fuzz", "1").page_bytes(page_bytes);
    #[cfg(feature = "full")]
    let config = config.prompts(&PROMPTS);
    let mut s = Srv::new(config);
    for t in TOOLS {
        s.register(t).expect("the fuzz tools register");
    }
    s
}

/// A server, its device, and what the checker knows of the session.
pub struct Session {
    pub server: Srv,
    pub dev: Dev,
    pub now: u64,
    /// Raw ids of parked `tasks/result` requests, answered later from `poll`.
    pub parked: Vec<String>,
    /// Messages are handed over with `Input::stateless(true)` (an HTTP request routed to the
    /// 2026-07-28 rules by its headers).
    pub stateless: bool,
}

impl Session {
    pub fn new(page_bytes: usize) -> Self {
        Session {
            server: server(page_bytes),
            dev: Dev::default(),
            now: 0,
            parked: Vec::new(),
            stateless: false,
        }
    }

    /// Hands one message to the engine with an output buffer of `out_len` bytes and checks the
    /// answer. Returns the response length.
    pub fn exchange(&mut self, msg: &[u8], principal: Principal, out_len: usize) -> usize {
        let mut out = vec![0u8; out_len];
        let before = self.dev.runs;
        let handled = self
            .server
            .handle(msg, principal, &mut self.dev, &mut out)
            .expect("the buffer is at least MIN_OUT_LEN");
        let n = handled.len;
        assert!(
            n <= out_len,
            "response length {n} beyond the buffer {out_len}"
        );
        self.check(msg, &out[..n], before, principal, handled.deferred);
        n
    }

    /// Checks the answer `out` to `msg`; `before` is the run counters before the call;
    /// `deferred`: the engine said the answer is owed, and a later `poll` writes it
    /// (`Handled::deferred`).
    pub fn check(
        &mut self,
        msg: &[u8],
        out: &[u8],
        before: [u32; 8],
        principal: Principal,
        deferred: bool,
    ) {
        let expect = classify(msg);
        let ran: Vec<usize> = (0..8).filter(|&i| self.dev.runs[i] != before[i]).collect();
        assert!(ran.len() <= 1, "one message ran several handlers: {ran:?}");
        let show = || String::from_utf8_lossy(msg).into_owned();
        if let Some(&i) = ran.first() {
            assert_eq!(
                self.dev.runs[i],
                before[i] + 1,
                "a handler ran twice for one message"
            );
        }
        match &expect {
            Expect::Silent => {
                assert!(
                    out.is_empty(),
                    "answered a notification/response {}",
                    show()
                );
                assert!(ran.is_empty(), "a notification ran a tool: {}", show());
            }
            Expect::ParseError(id) => {
                let r = check_response(out);
                assert_eq!(r.code, Some(-32700), "for {}", show());
                assert_eq!(r.id, id.as_deref().unwrap_or("null"), "for {}", show());
                assert!(ran.is_empty());
            }
            Expect::Invalid(id) => {
                let r = check_response(out);
                assert_eq!(r.code, Some(-32600), "for {}", show());
                assert_eq!(
                    r.id,
                    id.as_deref().unwrap_or("null"),
                    "id echo for {}",
                    show()
                );
                assert!(ran.is_empty());
            }
            Expect::Answer { id, method, params } => {
                if out.is_empty() {
                    // Owed, and written by `poll`: a parked `tasks/result`, or the answer to a
                    // long-running call held for its outcome (a client without tasks).
                    assert!(deferred, "a request got no answer: {}", show());
                    assert!(
                        matches!(method.as_str(), "tasks/result" | "tools/call"),
                        "{method} deferred: {}",
                        show()
                    );
                    if method == "tasks/result" {
                        assert!(ran.is_empty());
                    } else if let Some(&i) = ran.first() {
                        assert!(
                            TOOLS[i].task_hooks().is_some(),
                            "a deferred call ran {}: {}",
                            TOOLS[i].name(),
                            show()
                        );
                    }
                    self.parked.push(id.clone());
                    return;
                }
                assert!(!deferred, "answered and deferred: {}", show());
                let r = check_response(out);
                assert_eq!(&r.id, id, "id echo for {}", show());
                #[cfg(feature = "full")]
                {
                    let has_meta = params
                        .as_deref()
                        .and_then(|p| entries(p.as_bytes()))
                        .is_some_and(|p| p.iter().any(|(k, _)| k == "_meta"));
                    if (self.stateless || has_meta) && meta_refusal(&r) {
                        // Refused on its `_meta` before the method is looked at.
                        assert!(ran.is_empty(), "a refused request ran a tool: {}", show());
                        return;
                    }
                }
                // The minimal engine (no `modern`) serves every request by the legacy rules and
                // does not read `params._meta`; a transport that requires 2026-07-28
                // (`Input::stateless`) gets -32602 before the method is looked at.
                #[cfg(not(feature = "full"))]
                {
                    if self.stateless {
                        assert_eq!(r.code, Some(-32602), "stateless without modern: {}", show());
                        assert!(ran.is_empty(), "a refused request ran a tool: {}", show());
                        return;
                    }
                    assert_ne!(
                        r.code,
                        Some(-32022),
                        "no protocol-version refusal without modern: {}",
                        show()
                    );
                }
                if !KNOWN_METHODS.contains(&method.as_str()) {
                    assert_eq!(r.code, Some(-32601), "unknown method {method:?}");
                }
                if method == "tools/call" {
                    self.check_call(params.as_deref(), &r, &ran, principal, msg);
                } else {
                    assert!(ran.is_empty(), "{method} ran a tool");
                }
            }
        }
    }

    fn check_call(
        &self,
        params: Option<&str>,
        r: &crate::Response,
        ran: &[usize],
        principal: Principal,
        msg: &[u8],
    ) {
        let show = || String::from_utf8_lossy(msg).into_owned();
        let members = params.and_then(|p| entries(p.as_bytes()));
        let unique = |name: &str| -> Option<Option<String>> {
            let mut found = members
                .iter()
                .flatten()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.get().to_string());
            let first = found.next();
            if found.next().is_some() {
                return None;
            }
            Some(first)
        };
        let (Some(Some(name)), Some(arguments)) = (unique("name"), unique("arguments")) else {
            assert!(
                ran.is_empty(),
                "a malformed tools/call ran a tool: {}",
                show()
            );
            return;
        };
        let Some(name) = json_str(&name) else {
            assert!(ran.is_empty());
            return;
        };
        let Some(tool) = TOOLS.iter().find(|t| t.name() == name) else {
            assert_eq!(r.code, Some(-32602), "unknown tool {name:?}");
            assert!(ran.is_empty());
            return;
        };
        if let Some(&i) = ran.first() {
            assert_eq!(counter(&name), Some(i), "tool {name} ran handler {i}");
        }
        if tool.audience() == mcp_core::Audience::User && principal == Principal::Model {
            assert!(ran.is_empty(), "the model ran a user-only tool: {}", show());
            assert_eq!(r.code, Some(-32602));
        }
        let verdict = model::validate(tool.param_specs(), arguments.as_deref());
        if let Err(problem) = verdict {
            assert!(
                ran.is_empty(),
                "handler ran on invalid arguments ({problem:?}): {}",
                show()
            );
            let is_error = r
                .result
                .as_ref()
                .is_some_and(|res| res["isError"] == J::Bool(true));
            assert!(
                r.code.is_some() || is_error,
                "invalid arguments ({problem:?}) answered as a success: {}",
                show()
            );
        }
        if let Some(res) = &r.result {
            if res.get("task").is_none() {
                // A failure says `isError: true`; a success leaves the member out.
                assert!(
                    matches!(res.get("isError"), None | Some(J::Bool(true))),
                    "a CallToolResult's isError is true or absent: {res}"
                );
                assert!(
                    res["content"].is_array(),
                    "a CallToolResult has content: {res}"
                );
            }
        }
    }

    /// Advances the engine's clock by `step_ms` and drains what it owes, checking each message.
    pub fn poll(&mut self, step_ms: u64, out_len: usize) {
        self.now += step_ms;
        let mut out = vec![0u8; out_len];
        for _ in 0..16 {
            let n = self.server.poll(self.now, &mut self.dev, &mut out);
            if n == 0 {
                return;
            }
            assert!(n <= out.len());
            if let Some(r) = check_outgoing(&out[..n]) {
                let Some(i) = self.parked.iter().position(|p| *p == r.id) else {
                    panic!(
                        "poll answered an id nobody waits for: {}",
                        String::from_utf8_lossy(&out[..n])
                    );
                };
                self.parked.remove(i);
            }
        }
        panic!("poll kept emitting");
    }
}

/// A 2026-07-28 request refused before dispatch, as the engine documents: `_meta` missing or
/// malformed (-32602, naming `_meta` or the bad member) or another revision requested (-32022).
/// The method and the tool are not looked at then.
#[cfg(feature = "full")]
fn meta_refusal(r: &crate::Response) -> bool {
    match r.code {
        Some(-32022) => true,
        Some(-32602) => r.message.as_deref().is_some_and(|m| {
            m.contains("_meta")
                || m.contains("io.modelcontextprotocol/")
                || m.starts_with("Invalid params: level must be")
        }),
        _ => false,
    }
}

/// Splits a fuzz input into a control byte and messages separated by `0xFF` (never inside valid
/// UTF-8, so never inside a JSON message).
pub fn split(data: &[u8]) -> (u8, Vec<&[u8]>) {
    match data.split_first() {
        None => (0, Vec::new()),
        Some((&c, rest)) => (c, rest.split(|&b| b == 0xFF).take(12).collect()),
    }
}

/// Output buffer sizes chosen by the control byte (the smallest is `MIN_OUT_LEN`).
pub const OUT_LENS: [usize; 4] = [mcp_core::MIN_OUT_LEN, 600, 1500, 9000];
/// Page budgets chosen by the control byte.
pub const PAGE_BYTES: [usize; 4] = [900, 1400, 2500, 8000];

#[cfg(test)]
mod test {
    use super::*;

    /// The minimal build's `gain` is an integer: the model takes its integral spellings and
    /// refuses fractional ones, as the engine documents without `float`.
    #[cfg(not(feature = "full"))]
    #[test]
    fn minimal_gain_is_an_integer_in_any_integral_spelling() {
        use crate::model::{Problem, Val, validate};
        let gain = ACT_PARAMS.iter().position(|p| p.name() == "gain").unwrap();
        for (spelling, value) in [
            ("20", 20),
            ("2e1", 20),
            ("20.0", 20),
            ("-0", 0),
            ("0.15e2", 15),
        ] {
            let args = format!(r#"{{"volume":1,"gain":{spelling}}}"#);
            let values = validate(ACT_PARAMS, Some(&args)).unwrap();
            assert_eq!(values[gain], Val::Int(value), "{spelling}");
        }
        for (spelling, problem) in [
            ("1.5", Problem::NotAnInteger),
            ("-1.6e1", Problem::OutOfRange),
            ("2.05e1", Problem::NotAnInteger),
            ("26", Problem::OutOfRange),
            ("1e400", Problem::OutOfRange),
            ("\"20\"", Problem::WrongType),
        ] {
            let args = format!(r#"{{"volume":1,"gain":{spelling}}}"#);
            assert_eq!(
                validate(ACT_PARAMS, Some(&args)),
                Err((problem, Some(gain))),
                "{spelling}"
            );
        }
    }

    /// Every fuzz tool registers in the configuration being built.
    #[test]
    fn the_device_registers() {
        let _ = server(900);
    }
}

/// The model of a message nested deeper than the engine reads, against the engine: requests and invalid messages with a valid id get -32700 with it, notifications
/// and responses nothing, what the checker cannot follow `null`.
#[cfg(test)]
mod deep {
    use super::*;
    use crate::{Expect, classify};

    fn nest(depth: usize) -> String {
        "[".repeat(depth) + &"]".repeat(depth)
    }

    #[test]
    fn the_model_and_the_engine_agree_on_deep_messages() {
        let cases = [
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"a":{}}}}}"#,
                    nest(40)
                ),
                Expect::ParseError(Some("7".into())),
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","params":{{"a":{}}},"method":"ping","id":"x"}}"#,
                    nest(40)
                ),
                Expect::ParseError(Some(r#""x""#.into())),
            ),
            (
                format!(r#"{{"id":3,"method":"ping","params":{}}}"#, nest(40)),
                Expect::ParseError(Some("3".into())),
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","method":"n","params":{}}}"#, nest(40)),
                Expect::Silent,
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, nest(40)),
                Expect::Silent,
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}}"#,
                    nest(200)
                ),
                Expect::ParseError(None),
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}} x"#,
                    nest(40)
                ),
                Expect::ParseError(None),
            ),
            (nest(40), Expect::ParseError(None)),
        ];
        for (msg, expected) in cases {
            assert_eq!(classify(msg.as_bytes()), expected, "{msg}");
            let mut s = Session::new(8000);
            let mut out = vec![0u8; 2000];
            let before = s.dev.runs;
            let h = s
                .server
                .handle(
                    msg.as_bytes(),
                    mcp_core::Principal::Model,
                    &mut s.dev,
                    &mut out,
                )
                .unwrap();
            s.check(
                msg.as_bytes(),
                &out[..h.len],
                before,
                mcp_core::Principal::Model,
                h.deferred,
            );
        }
    }
}
