//! MCP over MQTT on a real mosquitto: discovery by presence, calls on per-client RPC topics,
//! redelivered requests, delivery reports, departures, and the checks on peers' ids.
#![allow(clippy::restriction, reason = "a test")]

use std::time::Duration;

use mcp_core::server::Delivery;
use mcp_hal::kits::audio;
use mcp_hal::sim::DemoBoard;
use mqtt_fleet::devices::{self, Device, answered, append, eventually, ledger_device, recorder};
use mqtt_fleet::{Broker, CallError, Client};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(5);

fn broker() -> Option<Broker> {
    Broker::for_test()
}

fn result(answer: &Value) -> &Value {
    assert!(answer.get("error").is_none(), "an error: {answer}");
    &answer["result"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_discovers_every_device_by_presence_and_calls_each() {
    let Some(broker) = broker() else { return };
    let url = broker.url();
    let fleet: Vec<Device<DemoBoard>> = (0..5)
        .map(|i| {
            let opts = devices::quick(&url, &format!("dev-{i}"), "devices/demo-board");
            Device::spawn(opts, devices::demo_engine(), DemoBoard::default())
        })
        .collect();
    // A client that arrives after the devices learns of them from the retained presence.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let client = Client::connect(&url, "fleet-client-1").unwrap();
    assert!(client.wait_for_online(5, T).await, "{:?}", client.devices());
    let seen = client.devices();
    assert_eq!(
        seen.keys().cloned().collect::<Vec<_>>(),
        ["dev-0", "dev-1", "dev-2", "dev-3", "dev-4"]
    );
    for (i, (id, p)) in seen.iter().enumerate() {
        assert_eq!(p.server_name, "devices/demo-board");
        assert_eq!(p.description, "A simulated device");
        let init = client.initialize(id, T).await.unwrap();
        assert_eq!(result(&init)["serverInfo"]["name"], "demo-board");
        let list = client
            .request(id, 1, "tools/list", json!({}), T)
            .await
            .unwrap();
        let names: Vec<&str> = result(&list)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"self.audio_speaker.set_volume"),
            "{names:?}"
        );
        let volume = 10 + 10 * i64::try_from(i).unwrap();
        let call = client
            .call_tool(id, 2, audio::NAME, json!({ "volume": volume }), T)
            .await
            .unwrap();
        let r = result(&call);
        assert_eq!(r.get("isError"), None, "{r}");
        let evidence = &r["_meta"]["io.github.mcu-mcp/evidence"];
        assert_eq!(evidence["level"], "read_back", "{r}");
        assert_eq!(evidence["commanded"], volume);
        assert_eq!(evidence["observed"], volume);
    }
    // Each device's own codec register holds what was sent to it, and only that.
    for (i, d) in fleet.iter().enumerate() {
        let v = d.board.lock().unwrap().sim.codec.stored_volume().get();
        assert_eq!(i64::from(v), 10 + 10 * i64::try_from(i).unwrap());
    }
    client.close().await;
    for d in fleet {
        d.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_request_runs_once_and_clients_are_told_apart_by_their_mqtt_id() {
    let Some(broker) = broker() else { return };
    let url = broker.url();
    let (hook, events) = recorder();
    let dev = ledger_device(&url, "ledger-1", |o| o.on_event(hook));
    let a = Client::initialized(&url, "client-a", "ledger-1", T)
        .await
        .unwrap();

    // QoS 1 may deliver a request twice: the same bytes arrive again.
    let request =
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":append(7)}).to_string();
    let first = a.expect_answer("ledger-1", &json!(1));
    a.send("ledger-1", request.clone()).await.unwrap();
    a.send("ledger-1", request).await.unwrap();
    let first = tokio::time::timeout(T, first).await.unwrap().unwrap();
    assert!(
        eventually(Duration::from_secs(2), || a.answers("ledger-1", &json!(1))
            == 2)
        .await,
        "two answers"
    );
    assert_eq!(result(&first)["structuredContent"]["value"], 1);
    assert_eq!(dev.board.lock().unwrap().entries, [7], "ran once");

    // Another client on the same device also starts its ids at 1: its call runs, and neither
    // gets the other's answer.
    let b = Client::initialized(&url, "client-b", "ledger-1", T)
        .await
        .unwrap();
    let answer = b
        .call_tool("ledger-1", 1, "self.ledger.append", json!({"entry": 8}), T)
        .await
        .unwrap();
    assert_eq!(
        result(&answer)["_meta"]["io.github.mcu-mcp/evidence"]["observed"],
        8
    );
    assert_eq!(dev.board.lock().unwrap().entries, [7, 8]);
    assert_eq!(a.answers("ledger-1", &json!(1)), 2, "a got nothing of b's");

    // The device reported both runs written (the broker acknowledged them), and the duplicate as
    // a replay, written too; when it was replayed, the first answer's PUBACK had usually not
    // come yet (pending), or it had (written).
    assert!(
        eventually(Duration::from_secs(2), || answered(&events).len() == 3).await,
        "{:?}",
        answered(&events)
    );
    let reports = answered(&events);
    assert!(reports.contains(&(Some("self.ledger.append"), None, Delivery::Written)));
    assert_eq!(
        reports
            .iter()
            .filter(|r| matches!(
                r,
                (
                    None,
                    Some(Delivery::Pending | Delivery::Written),
                    Delivery::Written
                )
            ))
            .count(),
        1,
        "{reports:?}"
    );
    a.close().await;
    b.close().await;
    dev.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_from_peers_are_checked_and_a_full_client_table_says_so() {
    let Some(broker) = broker() else { return };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-3", |o| {
        o.max_clients(1, Duration::from_secs(600))
    });
    let c = Client::connect(&url, "checker").unwrap();
    assert!(c.wait_for_online(1, T).await);
    let init = |id: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}).to_string()
    };
    let control = "$mcp-server/ledger-3/devices/ledger".to_string();
    // No sender id, and ids that would inject topic levels or wildcards: not served, and no
    // subscription is made from them (the device would otherwise listen on other topics).
    for bad in [
        None,
        Some("a/+"),
        Some("#"),
        Some("x/ledger-3/devices"),
        Some(""),
    ] {
        let mut props = vec![("MCP-COMPONENT-TYPE".to_string(), "mcp-client".to_string())];
        if let Some(b) = bad {
            props.push(("MCP-MQTT-CLIENT-ID".to_string(), b.to_string()));
        }
        c.publish_raw(control.clone(), init(9), props)
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The one client session the device allows.
    let answer = c.initialize("ledger-3", T).await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    // A second client: the table is full and its one session is not idle: a clear error.
    let other = Client::connect(&url, "latecomer").unwrap();
    assert!(other.wait_for_online(1, T).await);
    let refused = other.initialize("ledger-3", T).await.unwrap();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("busy")
    );
    // The first session still works.
    let ok = c
        .call_tool("ledger-3", 1, "self.ledger.append", json!({"entry": 1}), T)
        .await
        .unwrap();
    assert_eq!(result(&ok)["structuredContent"]["value"], 1);
    // When it leaves (notifications/disconnected on its presence topic), the latecomer fits.
    // Its presence and the latecomer's `initialize` come from two publishers, in either order:
    // the latecomer asks again while it is told "busy", as a client would.
    c.close().await;
    let deadline = tokio::time::Instant::now() + T;
    let now = loop {
        let now = other.initialize("ledger-3", T).await.unwrap();
        if now.get("result").is_some() || tokio::time::Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(now.get("result").is_some(), "{now}");
    other.close().await;
    dev.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_leaves_clears_its_presence() {
    let Some(broker) = broker() else { return };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-4", |o| o);
    let c = Client::connect(&url, "watcher").unwrap();
    assert!(c.wait_for_online(1, T).await);
    dev.stop().await.unwrap();
    assert!(
        c.wait_until(T, |d| d
            .get("ledger-4")
            .is_some_and(|p| !p.online && p.offlines == 1))
            .await,
        "{:?}",
        c.devices()
    );
    // Nothing retained is left: a newcomer sees no device.
    let late = Client::connect(&url, "newcomer").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(late.devices().is_empty(), "{:?}", late.devices());
    // It left once: its own empty presence and not its will as well (the broker publishes the
    // will too when the link is reset before it reads the DISCONNECT).
    assert_eq!(c.devices()["ledger-4"].offlines, 1, "{:?}", c.devices());
    assert_eq!(
        c.request(
            "ledger-4",
            1,
            "tools/call",
            append(1),
            Duration::from_millis(300)
        )
        .await,
        Err(CallError::Lost)
    );
}
