//! `mcp-call` against the real device-sim binary over each wire: stdio (the command spawned),
//! Streamable HTTP (a bearer token; OAuth with `oauth-dev-server` and a login; a person's yes
//! by `--yes` and by the device's button; a watch), MCP over MQTT on mosquitto (the one device
//! picked, two refused, one named; credentials in the URL; `mqtts://` with a test CA). What it
//! prints and its exit status are what a shell sees.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use clap::Parser as _;
use common::{
    Running, api, device_sim, exchange, header, log_lines, press_shown, start, start_http, state,
};
use mcp_call::{Cli, Exit, OpenUrl};
use mqtt_fleet::Broker;
use serde_json::json;

const SIM: &str = env!("CARGO_BIN_EXE_device-sim");

/// What a run of `mcp-call ARGS` printed, and how it ended.
#[derive(Debug)]
struct Ran {
    exit: Exit,
    out: String,
    err: String,
}

/// A token store of this test's own (never the user's).
fn store(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcp-call-test-{}-{name}.json", std::process::id()))
}

/// `mcp-call --timeout 20 ARGS`, with a token store that holds nothing unless ARGS name one.
async fn mcp_call_opening(args: &[&str], open: OpenUrl) -> Ran {
    let empty = store("empty");
    let mut line = vec!["mcp-call", "--timeout", "20"];
    if !args.contains(&"--token-store") {
        line.extend(["--token-store", empty.to_str().unwrap()]);
    }
    let cli = Cli::try_parse_from(line.iter().chain(args)).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = mcp_call::run(cli, &mut out, &mut err, &open).await;
    Ran {
        exit,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
    }
}

async fn mcp_call(args: &[&str]) -> Ran {
    mcp_call_opening(args, Box::new(|_| {})).await
}

fn stdio(extra: &str) -> String {
    format!("stdio:{SIM} --stdio {extra}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_it_lists_calls_and_says_how_a_call_failed() {
    let target = stdio("");
    let list = mcp_call(&[&target, "list"]).await;
    assert_eq!(list.exit, Exit::Done, "{list:?}");
    assert!(
        list.out.lines().any(
            |l| l.starts_with("self.audio_speaker.set_volume(volume: integer)  Set the volume")
        ),
        "{list:?}"
    );
    assert!(
        list.out
            .lines()
            .any(|l| l.starts_with("self.relay.set(on: boolean)")),
        "{list:?}"
    );

    let call = mcp_call(&[
        &target,
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":40}"#,
    ])
    .await;
    assert_eq!(call.exit, Exit::Done, "{call:?}");
    assert_eq!(
        call.out,
        "true — read back: 40\nevidence: {\"level\":\"read_back\",\"commanded\":40,\"observed\":40}\n"
    );

    // A read-back that disagrees: the tool failed, and says what it read.
    let clamped = stdio("--fault codec-clamp");
    let failed = mcp_call(&[
        &clamped,
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":90}"#,
    ])
    .await;
    assert_eq!(failed.exit, Exit::Failed, "{failed:?}");
    assert!(
        failed
            .out
            .starts_with("The codec reports a different volume than commanded — read back: "),
        "{failed:?}"
    );
    assert!(
        failed
            .out
            .contains("evidence: {\"level\":\"read_back\",\"commanded\":90,"),
        "{failed:?}"
    );

    // Refused by the device: a wrong argument (a tool result), an unknown tool (a JSON-RPC error).
    let wrong = mcp_call(&[
        &target,
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":"loud"}"#,
    ])
    .await;
    assert_eq!(wrong.exit, Exit::Failed, "{wrong:?}");
    assert!(wrong.out.contains("\"volume\""), "{wrong:?}");
    let unknown = mcp_call(&[&target, "call", "self.nothing"]).await;
    assert_eq!(unknown.exit, Exit::Failed, "{unknown:?}");
    assert!(unknown.err.contains("error -32602"), "{unknown:?}");

    // The command line itself: arguments that are no JSON object.
    let bad = mcp_call(&[&target, "call", "self.relay.set", "[true]"]).await;
    assert_eq!(bad.exit, Exit::Unusable, "{bad:?}");
    assert!(bad.err.contains("must be a JSON object"), "{bad:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_followed_to_its_measured_outcome() {
    let target = stdio("--hold-answer 0");
    let moved = mcp_call(&[&target, "call", "self.motor.move_to", r#"{"position":300}"#]).await;
    assert_eq!(moved.exit, Exit::Done, "{moved:?}");
    let lines: Vec<&str> = moved.out.lines().collect();
    assert!(lines[0].contains("started as task task-"), "{moved:?}");
    assert!(lines[1].contains("\"level\":\"scheduled\""), "{moved:?}");
    assert_eq!(
        lines[2],
        "self.motor.move_to completed: 300 — measured: 300 steps (within ±2 steps)"
    );
    assert!(
        lines[3]
            .starts_with("evidence: {\"level\":\"measured\",\"commanded\":300,\"observed\":300"),
        "{moved:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_token_is_asked_for_and_taken() {
    let (_sim, addr) = start_http(&["--token", "device-token-1"]);
    let url = format!("http://{addr}/mcp");
    let refused = mcp_call(&[
        &url,
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":20}"#,
    ])
    .await;
    assert_eq!(refused.exit, Exit::Unusable, "{refused:?}");
    assert!(
        refused.err.contains("the endpoint wants a token (401)"),
        "{refused:?}"
    );
    assert!(refused.err.contains("--token"), "{refused:?}");
    let wrong = mcp_call(&[&url, "--token", "not-it", "list"]).await;
    assert_eq!(wrong.exit, Exit::Unusable, "{wrong:?}");
    assert!(wrong.err.contains("refused the token"), "{wrong:?}");

    let file = store("token-file");
    std::fs::write(&file, "device-token-1\n").unwrap();
    let call = mcp_call(&[
        &url,
        "--token-file",
        file.to_str().unwrap(),
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":20}"#,
    ])
    .await;
    assert_eq!(call.exit, Exit::Done, "{call:?}");
    assert!(call.out.starts_with("true — read back: 20\n"), "{call:?}");
    let _ = std::fs::remove_file(file);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_person_says_yes_by_flag_or_by_the_button() {
    let sim = start(&["--http", "127.0.0.1:0", "--confirm", "--hold-answer", "0"]);
    let url = format!("http://{}/mcp", sim.http.as_deref().unwrap());

    let yes = mcp_call(&[&url, "--yes", "call", "self.relay.set", r#"{"on":true}"#]).await;
    assert_eq!(yes.exit, Exit::Done, "{yes:?}");
    assert!(
        yes.err
            .contains("the device asks: Switch the relay-controlled load on?"),
        "{yes:?}"
    );
    assert!(yes.err.contains("answered yes (--yes)"), "{yes:?}");
    assert_eq!(
        yes.out,
        "true — measured: true\nevidence: {\"level\":\"measured\",\"commanded\":true,\"observed\":true}\n"
    );
    assert_eq!(state(&sim)["relay"]["on"], true, "{:#}", state(&sim));
    let off = mcp_call(&[&url, "call", "self.relay.set", r#"{"on":false}"#]).await;
    assert_eq!(off.exit, Exit::Done, "{off:?}");

    // Without --yes the client cannot be asked: the call waits for the device's button, and
    // mcp-call for the outcome.
    let url2 = url.clone();
    let call = tokio::spawn(async move {
        mcp_call(&[&url2, "call", "self.relay.set", r#"{"on":true}"#]).await
    });
    let sim = tokio::task::spawn_blocking(move || {
        let (status, _) = press_shown(&sim);
        assert_eq!(status, 200);
        sim
    })
    .await
    .unwrap();
    let pressed = call.await.unwrap();
    assert_eq!(pressed.exit, Exit::Done, "{pressed:?}");
    let lines: Vec<&str> = pressed.out.lines().collect();
    assert!(
        lines[0].starts_with("Waiting for a person: press the button on the device"),
        "{pressed:?}"
    );
    assert_eq!(lines[1], "true — measured: true", "{pressed:?}");
    assert!(
        pressed.err.contains("waiting up to 20 s for the outcome"),
        "{pressed:?}"
    );
    assert_eq!(state(&sim)["relay"]["on"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_watch_prints_what_a_sensor_publishes() {
    let sim = start(&["--http", "127.0.0.1:0"]);
    let url = format!("http://{}/mcp", sim.http.as_deref().unwrap());
    let watch = tokio::spawn(async move { mcp_call(&[&url, "watch", "--for", "4"]).await });
    let sim = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(1500));
        let (status, _) = api(
            &sim,
            "POST",
            "/sim/sensor",
            Some(&json!({"temperature": 33.5})),
        );
        assert_eq!(status, 200);
        sim
    })
    .await
    .unwrap();
    let watched = watch.await.unwrap();
    drop(sim);
    assert_eq!(watched.exit, Exit::Done, "{watched:?}");
    assert!(
        watched.err.contains("resource(s) subscribed"),
        "{watched:?}"
    );
    assert!(
        watched
            .out
            .contains("updated device://sensors/temperature: {\"celsius\":33.5}"),
        "{watched:?}"
    );
}

/// A browser that opens the login page, presses `decision` ("allow" or "deny") and follows the
/// redirect back to mcp-call.
fn browser(decision: &'static str) -> OpenUrl {
    Box::new(move |url: String| {
        tokio::task::spawn_blocking(move || {
            let rest = url.strip_prefix("http://").unwrap();
            let (addr, path) = rest.split_at(rest.find('/').unwrap());
            let (status, _, page) = exchange(addr, "GET", path, &[], "");
            assert_eq!(status, 200, "{page}");
            let login = page.split("name=\"login\" value=\"").nth(1).unwrap();
            let login = &login[..login.find('"').unwrap()];
            let form = format!("login={login}&decision={decision}");
            let (status, headers, _) = exchange(
                addr,
                "POST",
                "/authorize",
                &[("Content-Type", "application/x-www-form-urlencoded")],
                &form,
            );
            assert_eq!(status, 303);
            let back = header(&headers, "location")
                .unwrap()
                .strip_prefix("http://")
                .unwrap()
                .to_string();
            let (addr, path) = back.split_at(back.find('/').unwrap());
            let (status, _, _) = exchange(addr, "GET", path, &[], "");
            assert_eq!(status, 200);
        });
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_login_at_the_dev_server_then_calls() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(mcp_call::authz::serve(listener, issuer.clone()));
    let (_sim, addr) = tokio::task::spawn_blocking(move || {
        start_http(&["--oauth-issuer", &issuer, "--oauth-scope", "mcp:tools"])
    })
    .await
    .unwrap();
    let url = format!("http://{addr}/mcp");
    let store = store("oauth");
    let _ = std::fs::remove_file(&store);
    let kept = store.to_str().unwrap();
    let call_on = [
        &url,
        "--token-store",
        kept,
        "call",
        "self.relay.set",
        r#"{"on":true}"#,
    ];
    let login_args = [&url, "--token-store", kept, "login"];

    let refused = mcp_call(&call_on).await;
    assert_eq!(refused.exit, Exit::Unusable, "{refused:?}");
    assert!(
        refused
            .err
            .contains(&format!("log in with `mcp-call {url} login`")),
        "{refused:?}"
    );

    let denied = mcp_call_opening(&login_args, browser("deny")).await;
    assert_eq!(denied.exit, Exit::Unusable, "{denied:?}");
    assert!(denied.err.contains("access_denied"), "{denied:?}");

    let login = mcp_call_opening(&login_args, browser("allow")).await;
    assert_eq!(login.exit, Exit::Done, "{login:?}");
    assert!(login.err.contains("log in on this page"), "{login:?}");
    assert!(login.err.contains("logged in"), "{login:?}");

    let call = mcp_call(&call_on).await;
    assert_eq!(call.exit, Exit::Done, "{call:?}");
    assert!(call.out.starts_with("true — measured: true\n"), "{call:?}");
    let _ = std::fs::remove_file(&store);
}

/// device-sim serving MQTT on `broker` as `id`, and its log (kept read, or the process would
/// die writing to a closed pipe).
fn mqtt_device(broker: &str, id: &str, extra: &[&str]) -> (Running, Receiver<String>) {
    let mut sim = Running(device_sim(
        &[&["--mqtt", broker, "--device-id", id], extra].concat(),
        false,
    ));
    let log = log_lines(&mut sim.0);
    (sim, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mqtt_the_one_device_is_picked_and_two_are_named() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let _solo = mqtt_device(&url, "solo", &["--confirm"]);
    let call = mcp_call(&[
        &url,
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":30}"#,
    ])
    .await;
    assert_eq!(call.exit, Exit::Done, "{call:?}");
    assert!(call.err.contains("the one device online: solo"), "{call:?}");
    assert_eq!(
        call.out,
        "true — read back: 30\nevidence: {\"level\":\"read_back\",\"commanded\":30,\"observed\":30}\n"
    );
    let yes = mcp_call(&[&url, "--yes", "call", "self.relay.set", r#"{"on":true}"#]).await;
    assert_eq!(yes.exit, Exit::Done, "{yes:?}");
    assert!(yes.err.contains("answered yes (--yes)"), "{yes:?}");
    assert!(yes.out.starts_with("true — measured: true\n"), "{yes:?}");

    let _second = mqtt_device(&url, "second", &[]);
    let client = mqtt_fleet::Client::connect(&url, "mcp-call-test-watcher").unwrap();
    assert!(client.wait_for_online(2, Duration::from_secs(10)).await);
    client.close().await;
    let two = mcp_call(&[&url, "list"]).await;
    assert_eq!(two.exit, Exit::Unusable, "{two:?}");
    assert!(two.err.contains("2 devices online"), "{two:?}");
    assert!(two.err.contains("(second, solo)"), "{two:?}");
    let named = format!("{url}/second");
    let list = mcp_call(&[&named, "list"]).await;
    assert_eq!(list.exit, Exit::Done, "{list:?}");
    assert!(
        list.out.contains("self.audio_speaker.set_volume"),
        "{list:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mqtt_with_credentials_in_the_url() {
    let Some(broker) = Broker::for_test_with_password("dev-user", "p@ss/word") else {
        return;
    };
    let port = broker.port();
    let with = format!("mqtt://dev-user:p@ss/word@127.0.0.1:{port}");
    let _dev = mqtt_device(&with, "locked", &[]);
    let call = mcp_call(&[
        &format!("{with}/locked"),
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":35}"#,
    ])
    .await;
    assert_eq!(call.exit, Exit::Done, "{call:?}");
    assert!(call.out.starts_with("true — read back: 35"), "{call:?}");
    let without = mcp_call(&["--timeout", "3", &broker.url(), "list"]).await;
    assert_eq!(without.exit, Exit::Unusable, "{without:?}");
    assert!(without.err.contains("the broker link:"), "{without:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mqtts_with_a_test_ca() {
    let Some((broker, ca)) = Broker::for_test_tls("mcp-call-broker-ca") else {
        return;
    };
    let tls = broker.tls_url().unwrap();
    let ca_file = ca.pem.to_str().unwrap().to_string();
    let _dev = mqtt_device(&tls, "tls-dev", &["--ca-file", &ca_file]);
    let call = mcp_call(&[
        "--ca-file",
        &ca_file,
        &tls,
        "call",
        "self.audio_speaker.set_volume",
        r#"{"volume":45}"#,
    ])
    .await;
    assert_eq!(call.exit, Exit::Done, "{call:?}");
    assert!(call.out.starts_with("true — read back: 45\n"), "{call:?}");
    // Without the CA: refused, and it says why.
    let refused = mcp_call(&["--timeout", "3", &tls, "list"]).await;
    assert_eq!(refused.exit, Exit::Unusable, "{refused:?}");
    assert!(
        refused.err.contains("certificate refused — unknown issuer"),
        "{refused:?}"
    );
}
