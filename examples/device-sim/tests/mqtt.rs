//! The real device-sim binary with `--mqtt`: a fleet of simulated devices in one process on a
//! mosquitto started by the test, discovered by their presence and called, and gone (their
//! wills) when the process dies. With `--ui`, the page shows the board the MQTT device drives,
//! and its button confirms what that device holds.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Running, device_sim, log_lines, press_shown, state_until};
use mcp_hal::kits::audio;
use mqtt_fleet::{Broker, Client};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_sim_hosts_a_fleet_on_a_broker() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let mut sim = Running(device_sim(
        &["--mqtt", &url, "--device-id", "sim", "--devices", "12"],
        false,
    ));
    let _log = log_lines(&mut sim.0);
    let client = Client::connect(&broker.url(), "sim-tester").unwrap();
    assert!(
        client.wait_for_online(12, T).await,
        "{:?}",
        client.devices()
    );
    let devices = client.devices();
    assert_eq!(devices.keys().next().map(String::as_str), Some("sim-01"));
    assert_eq!(devices.keys().last().map(String::as_str), Some("sim-12"));
    for (i, (id, p)) in devices.iter().enumerate() {
        assert_eq!(p.server_name, "devices/device-sim");
        let init = client.initialize(id, T).await.unwrap();
        assert_eq!(init["result"]["serverInfo"]["name"], "device-sim");
        let list = client
            .request(id, 1, "tools/list", json!({}), T)
            .await
            .unwrap();
        assert!(
            list["result"]["tools"].as_array().unwrap().len() >= 5,
            "{list}"
        );
        let volume = i64::try_from(i).unwrap() * 5;
        let call = client
            .call_tool(id, 2, audio::NAME, json!({ "volume": volume }), T)
            .await
            .unwrap();
        let evidence = &call["result"]["_meta"]["io.github.mcu-mcp/evidence"];
        assert_eq!(evidence["level"], "read_back", "{call}");
        assert_eq!(evidence["observed"], volume, "{call}");
    }
    // The process dies without a goodbye: the broker publishes every device's will.
    sim.0.kill().unwrap();
    let _ = sim.0.wait();
    assert!(
        client
            .wait_until(T, |d| d.values().all(|p| !p.online))
            .await,
        "{:?}",
        client.devices()
    );
}

/// `--ui` with `--mqtt` drove a board of its own, so the page never saw a call
/// held over MQTT and a press confirmed nothing. One board now: what the MQTT client does shows on
/// the page, the call it made waits on the page, and `POST /sim/button` confirms it, the outcome
/// going to that client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_shows_and_confirms_what_the_mqtt_device_holds() {
    let Some((broker, sim, client)) = confirming_sim("held", "ui-tester").await else {
        return;
    };
    // One board: a volume set over MQTT is the page's volume.
    let call = client
        .call_tool(
            "held",
            1,
            "self.audio_speaker.set_volume",
            json!({"volume":35}),
            T,
        )
        .await
        .unwrap();
    assert_eq!(
        call["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"], "read_back",
        "{call}"
    );
    let s = on_page(&sim, "the volume set over MQTT", |s| {
        s["speaker"]["volume"] == 35
    })
    .await;
    assert_eq!(
        s["device"]["transports"],
        json!([format!("mqtt {} as held", broker.url())])
    );
    // Switching the relay on waits for the device's button, and the page shows it.
    let relay = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"self.relay.set","arguments":{"on":true}}});
    let mut answer = client.expect_answer("held", &json!(2));
    client.send("held", relay.to_string()).await.unwrap();
    let s = on_page(&sim, "the MQTT call waiting on the page", |s| {
        s["confirmation"]["tool"] == "self.relay.set"
    })
    .await;
    assert_eq!(s["confirmation"]["on_device"], true, "{s:#}");
    assert_eq!(s["relay"]["on"], false);
    // The press confirms it.
    let sim2 = sim.clone();
    let (status, v) = tokio::task::spawn_blocking(move || press_shown(&sim2))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(v["answers"]["tool"], "self.relay.set", "{v}");
    on_page(&sim, "the relay on, nothing waiting", |s| {
        s["relay"]["on"] == true && s["confirmation"].is_null()
    })
    .await;
    // The MQTT client hears the outcome: the call's own answer when it was held inside the call,
    // or, after an `awaiting_confirmation` answer, the outcome notification (logger
    // `confirmation`).
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut first = None;
    let outcome = loop {
        if first.is_none()
            && let Ok(a) = answer.try_recv()
        {
            first = Some(a);
        }
        if let Some(a) = &first
            && a["result"]["structuredContent"]["status"] != "awaiting_confirmation"
        {
            break a["result"].clone();
        }
        if let Some(n) = client.notifications("held").into_iter().find(|n| {
            n["method"] == "notifications/message" && n["params"]["logger"] == "confirmation"
        }) {
            let data = &n["params"]["data"];
            assert_eq!(
                (&data["tool"], &data["confirmed"]),
                (&json!("self.relay.set"), &json!(true)),
                "{n}"
            );
            break data["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "no outcome over MQTT within 5 s; answer {first:?}, notifications {:?}",
            client.notifications("held")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        outcome["_meta"]["io.github.mcu-mcp/evidence"]["level"], "measured",
        "{outcome}"
    );
    assert_ne!(outcome["isError"], true, "{outcome}");
}

/// Over MQTT one engine serves every client of the device. Alice declared no
/// elicitation; Bob did. Bob's `initialize` must not make the engine ask Alice's user: her call
/// waits for the device's button. Bob's answer — with the old sequential id, or any — settles
/// nothing of hers, and the outcome of her call goes to her only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_never_answers_another_clients_confirmation() {
    let Some((broker, sim, alice)) = confirming_sim("shared", "alice").await else {
        return;
    };
    let bob = Client::connect(&broker.url(), "bob").unwrap();
    assert!(bob.wait_for_online(1, T).await, "{:?}", bob.devices());
    // Bob declares elicitation at his initialize.
    let init = bob.expect_answer("shared", &json!(0));
    bob.send_control(
        "shared",
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},
            "clientInfo":{"name":"bob","version":"1"}}})
        .to_string(),
    )
    .await
    .unwrap();
    tokio::time::timeout(T, init).await.unwrap().unwrap();
    bob.send(
        "shared",
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
    )
    .await
    .unwrap();

    // Alice asks for a reboot: her user cannot be asked, so the device's button decides.
    let mut answer = alice.expect_answer("shared", &json!(7));
    alice
        .send(
            "shared",
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                "params":{"name":"self.reboot","arguments":{}}})
            .to_string(),
        )
        .await
        .unwrap();
    let s = on_page(&sim, "Alice's reboot waiting on the device", |s| {
        s["confirmation"]["tool"] == "self.reboot"
    })
    .await;
    assert_eq!(s["confirmation"]["on_device"], true, "{s:#}");
    assert!(
        alice
            .notifications("shared")
            .iter()
            .all(|n| n["method"] != "elicitation/create"),
        "Alice was not asked through elicitation"
    );
    // Bob answers "yes" as if it were his question, with the old sequential id and the
    // question's real number: nothing happens.
    let approval = s["confirmation"]["approval"].as_str().unwrap().to_string();
    for id in [json!("confirm-1"), json!(format!("confirm-{approval}"))] {
        bob.send(
            "shared",
            json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept","content":{"confirm":true}}})
                .to_string(),
        )
        .await
        .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let s = on_page(&sim, "still waiting for the button", |s| {
        s["confirmation"]["tool"] == "self.reboot"
    })
    .await;
    assert_eq!(s["reboot"]["scheduled"], 0, "Bob's yes ran nothing: {s:#}");
    assert!(answer.try_recv().is_err(), "Alice has no answer yet");
    // The press decides; the outcome is Alice's call's answer, and Bob hears nothing of it.
    let sim2 = sim.clone();
    let (_, v) = tokio::task::spawn_blocking(move || press_shown(&sim2))
        .await
        .unwrap();
    assert_eq!(v["answers"]["tool"], "self.reboot", "{v}");
    let outcome = tokio::time::timeout(T, answer).await.unwrap().unwrap();
    assert_eq!(outcome["result"].get("isError"), None, "{outcome}");
    assert_eq!(
        outcome["result"]["_meta"]["io.github.mcu-mcp/evidence"]["level"],
        "scheduled"
    );
    assert_eq!(
        bob.answers("shared", &json!(7)),
        0,
        "Bob got Alice's answer"
    );
    assert!(
        bob.notifications("shared")
            .iter()
            .all(|n| n["params"]["logger"] != "confirmation"),
        "{:?}",
        bob.notifications("shared")
    );
}

/// Starts `device-sim --mqtt URL --device-id ID` and collects its stderr lines on a thread.
fn mqtt_sim(url: &str, id: &str) -> (Running, std::sync::mpsc::Receiver<String>) {
    let mut child = device_sim(&["--mqtt", url, "--device-id", id], false);
    let rx = log_lines(&mut child);
    (Running(child), rx)
}

/// A broker (`None`: none on this machine), `device-sim --mqtt URL --device-id ID --confirm` on
/// it with its page (`--ui`) — the device holds a call for its button, which the page presses —
/// and a client `who` that initialized with it.
async fn confirming_sim(id: &'static str, who: &str) -> Option<(Broker, Arc<common::Sim>, Client)> {
    let broker = Broker::for_test()?;
    let url = broker.url();
    let sim = tokio::task::spawn_blocking(move || {
        common::start(&["--mqtt", &url, "--device-id", id, "--confirm"])
    });
    let sim = Arc::new(sim.await.unwrap());
    let client = Client::initialized(&broker.url(), who, id, T)
        .await
        .unwrap();
    Some((broker, sim, client))
}

/// The page's state once `ok` holds (`what` names it), waited for on a blocking thread.
async fn on_page(sim: &Arc<common::Sim>, what: &'static str, ok: fn(&Value) -> bool) -> Value {
    let sim = sim.clone();
    let state = tokio::task::spawn_blocking(move || state_until(&sim, what, ok));
    state.await.unwrap()
}

/// The lines that came within `wait`, until one satisfies `stop`.
fn lines_until(
    rx: &std::sync::mpsc::Receiver<String>,
    wait: Duration,
    stop: impl Fn(&str) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + wait;
    let mut lines = Vec::new();
    while let Ok(l) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let done = stop(&l);
        lines.push(l);
        if done {
            break;
        }
    }
    lines
}

/// `--mqtt mqtt://USER:PASSWORD@HOST:PORT` against a mosquitto with a password file: the right
/// password connects, a wrong one and none are refused by the broker (and retried), and the
/// password shows in no log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_credentials_come_from_the_url() {
    let Some(broker) = Broker::for_test_with_password("dev", "s3cret-pw") else {
        return;
    };
    let port = broker.port();
    let bare = format!("mqtt://127.0.0.1:{port}");
    let connected = format!("device-sim: connected to MQTT broker {bare} as auth-sim");
    for (url, secret) in [
        (format!("mqtt://dev:wrong-pw@127.0.0.1:{port}"), "wrong-pw"),
        (format!("mqtt://dev@127.0.0.1:{port}"), "dev@"),
        (bare.clone(), "\u{0}"),
    ] {
        let (sim, rx) = mqtt_sim(&url, "auth-sim");
        let lines = lines_until(&rx, Duration::from_secs(3), |l| {
            l.contains("disconnected (MQTT:")
        });
        // The broker's CONNACK: "not authorized" (MQTT 5 reason 0x87), not a network failure.
        assert!(
            lines
                .iter()
                .any(|l| l.contains("disconnected (MQTT:") && l.contains("NotAuthorized")),
            "{url}: {lines:#?}"
        );
        assert!(
            !lines.iter().any(|l| l.starts_with(&connected)),
            "{url}: {lines:#?}"
        );
        assert!(!lines.iter().any(|l| l.contains(secret)), "{lines:#?}");
        drop(sim);
    }
    // The right password: connected, and the URL in the log has no credentials.
    let url = format!("mqtt://dev:s3cret-pw@127.0.0.1:{port}");
    connects_never_showing(&url, "auth-sim", &connected, "s3cret-pw");
}

/// `device-sim --mqtt URL --device-id ID` logs `connected` (the broker took its credentials),
/// and no log line until then shows `secret`.
fn connects_never_showing(url: &str, id: &str, connected: &str, secret: &str) {
    let (_sim, rx) = mqtt_sim(url, id);
    let lines = lines_until(&rx, T, |l| l.starts_with(connected));
    assert!(lines.iter().any(|l| l.starts_with(connected)), "{lines:#?}");
    assert!(!lines.iter().any(|l| l.contains(secret)), "{lines:#?}");
}

/// A password with a raw `/` (`mqtt://dev:pa/ss@host`) is the password: the
/// device connects with it (the broker wants it; not to a host named after its first half), and
/// neither the log nor the page's `/sim/state` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_slash_in_the_password_is_taken_and_never_shown() {
    let Some(broker) = Broker::for_test_with_password("dev", "pa/ss?#w") else {
        return;
    };
    let port = broker.port();
    let url = format!("mqtt://dev:pa/ss?#w@127.0.0.1:{port}");
    let connected =
        format!("device-sim: connected to MQTT broker mqtt://127.0.0.1:{port} as slash-sim");
    connects_never_showing(&url, "slash-sim", &connected, "pa/ss");
    let sim = common::start(&["--mqtt", &url, "--device-id", "slash-page"]);
    let state = state_until(&sim, "the MQTT link shown", |s| {
        s.to_string().contains("slash-page")
    });
    let text = state.to_string();
    assert!(!text.contains("pa/ss"), "{text}");
    assert!(!text.contains("dev:"), "{text}");
}

/// Over MQTT a conversation is the client's session: a client that says goodbye takes its
/// question with it — withdrawn from the device at once, and a later press runs nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_clients_question_is_withdrawn() {
    let Some((_broker, sim, client)) = confirming_sim("gone", "leaver").await else {
        return;
    };
    let relay = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"self.relay.set","arguments":{"on":true}}});
    client.send("gone", relay.to_string()).await.unwrap();
    on_page(&sim, "the question on the device", |s| {
        s["confirmation"]["tool"] == "self.relay.set"
    })
    .await;
    client.close().await;
    on_page(&sim, "the question withdrawn", |s| {
        s["confirmation"].is_null()
    })
    .await;
    let ui = sim.ui.clone();
    let pressed = tokio::task::spawn_blocking(move || {
        common::api_at(&ui, "POST", "/sim/button", Some(&json!({}))).1
    })
    .await
    .unwrap();
    assert!(pressed["answers"].is_null(), "{pressed}");
    let s = on_page(&sim, "the relay as it was", |s| s["relay"]["on"] == false).await;
    assert!(s["waiting"].as_array().unwrap().is_empty(), "{s:#}");
}
