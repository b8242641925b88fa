//! The xiaozhi MCP endpoint: the real device-sim binary with `--mcp-endpoint`,
//! against an imitation of xinnan-tech's endpoint server and of the backend that calls through
//! it (`imitation`): every page listed, a call with its evidence heard, a held call whose
//! outcome reaches the next request, each close code, a reconnect without `initialize`, the
//! agent session as the conversation, the tools a link offers, the token kept out of logs and
//! out of clear text beyond the LAN.
#![allow(clippy::restriction, reason = "a test")]

mod common;
mod imitation;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Running, api_at};
use imitation::{Failed, Imitation, Opts, heard};
use serde_json::{Value, json};

/// A token as the self-hosted console hands it out: base64 with `+ / =`.
const TOKEN: &str = "Zk9v+YmFy/cXV4=";

/// A device-sim with `--ui`, its log collected.
struct Sim {
    _running: Running,
    log: Arc<Mutex<String>>,
    ui: String,
}

impl Sim {
    fn start(args: &[&str]) -> Sim {
        // A question may be answered as soon as it is shown (tests press at once).
        let quick: &[&str] = match args.contains(&"--confirm") {
            true => &["--press-after-ms", "0"],
            false => &[],
        };
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_device-sim"))
            .args([&["--ui", "127.0.0.1:0"], quick, args].concat())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = common::log_text(&mut child);
        let running = Running(child);
        let ui = common::ui_address(&log);
        Sim {
            _running: running,
            log,
            ui,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn state(&self) -> Value {
        let (status, v) = api_at(&self.ui, "GET", "/sim/state", None);
        assert_eq!(status, 200);
        v
    }

    /// Presses the device's button once the question it shows may be answered.
    async fn press(&self) -> Value {
        let until = Instant::now() + Duration::from_secs(5);
        while self.state()["confirmation"]["press_counts_in_ms"] != 0 {
            assert!(
                Instant::now() < until,
                "no question to press for: {}",
                self.state()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let ui = self.ui.clone();
        tokio::task::spawn_blocking(move || api_at(&ui, "POST", "/sim/button", Some(&json!({}))).1)
            .await
            .unwrap()
    }

    /// Waits until the log says `what`.
    async fn logged(&self, what: &str, within: Duration) {
        let until = Instant::now() + within;
        while !self.log().contains(what) {
            assert!(
                Instant::now() < until,
                "the log never said {what:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn endpoint() -> Imitation {
    Imitation::start(Opts::new(&[(TOKEN, "agent-a"), ("other-token", "agent-b")])).await
}

/// The device's tools for the model, in listing order (`--list-tools`).
fn model_tools(args: &[&str]) -> Vec<String> {
    let out = common::device_sim_output(&[args, &["--list-tools"]].concat());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["audience"] == "model")
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_lists_every_page_and_hears_a_calls_evidence() {
    let e = endpoint().await;
    let url = e.url(TOKEN);
    let sim = Sim::start(&["--mcp-endpoint", &url, "--extra-tools", "40"]);
    e.registered("agent-a", Duration::from_secs(15)).await;
    let mut robot = e.robot("agent-a");
    let init = robot.initialize().await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05", "{init}");
    let tools = robot.list_tools().await.unwrap();
    let names: Vec<String> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, model_tools(&["--extra-tools", "40"]));
    // The first call shares the initialize's id (`<uuid>_n_1`); its answer is its own.
    let answer = robot
        .call("self.audio_speaker.set_volume", json!({"volume": 40}))
        .await
        .unwrap();
    assert_eq!(heard(&answer), "true — read back: 40");
    assert_eq!(answer["id"], 1);
    // Nothing the device sent went nowhere, and the token never reached the log.
    assert_eq!(e.dropped(), Vec::<String>::new());
    assert!(!sim.log().contains("Zk9v"), "{}", sim.log());
    assert!(sim.log().contains("?token=…"), "{}", sim.log());
    let state = sim.state();
    let link = &state["links"][0];
    assert_eq!(link["state"], "connected", "{state}");
    assert_eq!(link["sessions"], 1);
    assert!(!link["url"].as_str().unwrap().contains("Zk9v"));
    let calls = link["calls"].as_array().unwrap();
    assert_eq!(
        calls.last().unwrap()["tool"],
        "self.audio_speaker.set_volume"
    );
    assert_eq!(calls.last().unwrap()["evidence"], "read_back");
}

/// A call that waits for a person is answered within the caller's 30 s ("waiting", saying how
/// the outcome will come), and the outcome — nothing can be sent after an answer through the
/// endpoint — begins the answer to the session's next call, after the link dropped and came
/// back (the session goes on: no new `initialize`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_calls_outcome_reaches_the_next_request_across_a_reconnect() {
    let e = endpoint().await;
    let url = e.url(TOKEN);
    let sim = Sim::start(&["--mcp-endpoint", &url, "--confirm", "--hold-answer", "1"]);
    e.registered("agent-a", Duration::from_secs(15)).await;
    let mut robot = e.robot("agent-a");
    robot.timeout = Duration::from_secs(5);
    robot.initialize().await.unwrap();
    let waiting = robot
        .call("self.relay.set", json!({"on": true}))
        .await
        .unwrap();
    let said = heard(&waiting);
    assert!(
        said.starts_with("Waiting for a person: press the button"),
        "{said}"
    );
    assert!(
        said.contains("it will begin the answer to your next call"),
        "{said}"
    );
    // The endpoint restarts: the link is closed 1012, the device comes back by itself.
    e.close_tool_link("agent-a", 1012, "service restart");
    sim.logged(
        "ended: closed by the endpoint: 1012",
        Duration::from_secs(5),
    )
    .await;
    e.connected(TOKEN, 2, Duration::from_secs(5)).await;
    e.registered("agent-a", Duration::from_secs(5)).await;
    // A person presses the button: the relay switches; nothing is sent (nobody would get it).
    let pressed = sim.press().await;
    assert_eq!(pressed["answers"]["tool"], "self.relay.set", "{pressed}");
    // The same agent session, no initialize: its next call hears the outcome first.
    let next = robot
        .call("self.get_device_status", json!({}))
        .await
        .unwrap();
    let said = heard(&next);
    assert!(
        said.starts_with(
            "Outcome of an earlier call: self.relay.set, confirmed: true — measured: true. This call: "
        ),
        "{said}"
    );
    assert_eq!(sim.state()["relay"]["on"], true);
    // Once.
    let again = robot
        .call("self.get_device_status", json!({}))
        .await
        .unwrap();
    assert!(!heard(&again).contains("earlier call"), "{again}");
    // The device closed each link before it opened the next: never two at once.
    assert_eq!(e.most_open("agent-a"), 1);
}

/// A new `initialize` is a new agent session: the conversation before it ends, and the question
/// it left on the device is withdrawn at once — a press runs nothing, nobody hears of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_agent_session_withdraws_the_question_of_the_last() {
    let e = endpoint().await;
    let url = e.url(TOKEN);
    let sim = Sim::start(&["--mcp-endpoint", &url, "--confirm", "--hold-answer", "0"]);
    e.registered("agent-a", Duration::from_secs(15)).await;
    let mut first = e.robot("agent-a");
    first.initialize().await.unwrap();
    let waiting = first
        .call("self.relay.set", json!({"on": true}))
        .await
        .unwrap();
    assert!(heard(&waiting).starts_with("Waiting for a person"));
    let until = Instant::now() + Duration::from_secs(5);
    while sim.state()["confirmation"].is_null() {
        assert!(Instant::now() < until);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut second = e.robot("agent-a");
    second.initialize().await.unwrap();
    sim.logged("agent session 2 began", Duration::from_secs(5))
        .await;
    // Withdrawn at once: by the device's next turn (20 ms).
    let until = Instant::now() + Duration::from_secs(1);
    while !sim.state()["confirmation"].is_null() {
        assert!(Instant::now() < until, "{}", sim.state());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, pressed) = api_at(&sim.ui, "POST", "/sim/button", Some(&json!({})));
    assert!(pressed["answers"].is_null(), "{pressed}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sim.state()["relay"]["on"], false);
    let next = second
        .call("self.get_device_status", json!({}))
        .await
        .unwrap();
    assert!(!heard(&next).contains("earlier call"), "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_said_once_and_not_retried_in_a_loop() {
    let e = endpoint().await;
    let url = e.url("not-a-token");
    let sim = Sim::start(&["--mcp-endpoint", &url]);
    sim.logged("the endpoint refused the token", Duration::from_secs(10))
        .await;
    assert!(e.closes().iter().any(|(c, _)| *c == 1008));
    assert!(sim.log().contains("reconnecting in"), "{}", sim.log());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        e.connections("not-a-token"),
        1,
        "retried in minutes, not in a loop"
    );
    assert_eq!(sim.state()["links"][0]["state"], "reconnecting");
}

/// Two devices with one token: the endpoint replaces the older link (1000). The device whose
/// link was taken says so and backs off (it does not take the token back at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_link_says_so_and_backs_off() {
    let e = endpoint().await;
    let url = e.url(TOKEN);
    let first = Sim::start(&["--mcp-endpoint", &url]);
    e.connected(TOKEN, 1, Duration::from_secs(15)).await;
    e.registered("agent-a", Duration::from_secs(5)).await;
    let second = Sim::start(&["--mcp-endpoint", &url]);
    first
        .logged("another link uses this token", Duration::from_secs(15))
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        e.connections(TOKEN),
        2,
        "the first backs off: {}\n---\n{}",
        first.log(),
        second.log()
    );
    assert!(
        e.closes()
            .iter()
            .any(|(c, r)| *c == 1000 && r == "新连接替换")
    );
    // As xinnan's endpoint (v0.0.6) does: the replaced link's end unregisters the agent, and the
    // newer link, open, is reachable no more until it reconnects.
    assert_eq!(e.tool_links("agent-a"), 0);
}

/// The endpoint closes a link that misses its pings (1011): the device comes back, and the
/// agent session goes on without `initialize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_that_missed_the_pings_comes_back_and_the_session_goes_on() {
    let e = endpoint().await;
    let url = e.url(TOKEN);
    let sim = Sim::start(&["--mcp-endpoint", &url]);
    e.registered("agent-a", Duration::from_secs(15)).await;
    let mut robot = e.robot("agent-a");
    robot.initialize().await.unwrap();
    e.lose_pongs(true);
    sim.logged(
        "ended: closed by the endpoint: 1011",
        Duration::from_secs(10),
    )
    .await;
    e.lose_pongs(false);
    e.connected(TOKEN, 2, Duration::from_secs(5)).await;
    e.registered("agent-a", Duration::from_secs(5)).await;
    let answer = robot
        .call("self.audio_speaker.set_volume", json!({"volume": 30}))
        .await
        .unwrap();
    assert_eq!(heard(&answer), "true — read back: 30");
    assert_eq!(sim.state()["links"][0]["sessions"], 1, "no new session");
}

/// A page larger than the endpoint takes closes the link with 1009: the device comes back with
/// smaller frames, and the listing goes through every page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_too_big_makes_the_next_link_send_smaller_ones() {
    let mut opts = Opts::new(&[(TOKEN, "agent-a")]);
    opts.max_frame = 20_000;
    let e = Imitation::start(opts).await;
    let url = e.url(TOKEN);
    let args = [
        "--page-bytes",
        "30000",
        "--extra-tools",
        "100",
        "--endpoint-max-frame",
        "32768",
    ];
    let sim = Sim::start(&[&["--mcp-endpoint", &url], &args[..]].concat());
    e.registered("agent-a", Duration::from_secs(15)).await;
    let mut robot = e.robot("agent-a");
    robot.timeout = Duration::from_secs(3);
    robot.initialize().await.unwrap();
    assert_eq!(robot.list_tools().await, Err(Failed::Timeout));
    sim.logged("frames are now at most 16384 bytes", Duration::from_secs(5))
        .await;
    e.registered("agent-a", Duration::from_secs(5)).await;
    let tools = robot.list_tools().await.unwrap();
    assert_eq!(tools.len(), model_tools(&args[..4]).len());
}

/// A link offers the tools it is given; a call to another is refused as an unknown tool.
/// Two links: one device, two agents, each its own client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_link_offers_its_own_tools_to_its_own_agent() {
    let e = endpoint().await;
    let (a, b) = (e.url(TOKEN), e.url("other-token"));
    let sim = Sim::start(&[
        "--mcp-endpoint",
        &a,
        "--mcp-endpoint",
        &b,
        "--endpoint-tools",
        "self.relay.*,self.get_device_status",
    ]);
    e.registered("agent-a", Duration::from_secs(15)).await;
    e.registered("agent-b", Duration::from_secs(5)).await;
    let mut ra = e.robot("agent-a");
    ra.initialize().await.unwrap();
    let names: Vec<String> = ra
        .list_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["self.get_device_status", "self.relay.set"]);
    let refused = ra
        .call("self.audio_speaker.set_volume", json!({"volume": 10}))
        .await
        .unwrap();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let mut rb = e.robot("agent-b");
    rb.initialize().await.unwrap();
    let all = rb.list_tools().await.unwrap();
    assert!(all.len() > names.len());
    let answer = rb
        .call("self.audio_speaker.set_volume", json!({"volume": 10}))
        .await
        .unwrap();
    assert_eq!(heard(&answer), "true — read back: 10");
    let state = sim.state();
    assert_eq!(state["links"].as_array().unwrap().len(), 2);
    assert_eq!(
        state["links"][1]["calls"][0]["tool"],
        "self.audio_speaker.set_volume"
    );
    assert_eq!(state["links"][0]["calls"][0]["outcome"], "error");
}

/// A `ws://` URL to a host beyond this machine and the LAN would send the token in clear: it is
/// refused before any connection.
#[test]
fn a_token_in_clear_beyond_the_lan_is_refused() {
    let out = common::device_sim_output(&[
        "--mcp-endpoint",
        "ws://203.0.113.9:8004/mcp_endpoint/mcp/?token=secret-value",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("would send the token in clear; use wss://"),
        "{err}"
    );
    assert!(!err.contains("secret-value"), "{err}");
}
