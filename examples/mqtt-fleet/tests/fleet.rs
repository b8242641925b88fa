//! MCP over MQTT on a real mosquitto: discovery by presence, calls on per-client RPC topics,
//! redelivered requests, delivery reports, departures, and the checks on peers' ids.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // a test

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::server::Delivery;
use mcp_hal::sim::DemoBoard;
use mcp_host::HostEvent;
use mcp_host::mqtt::Options;
use mqtt_fleet::devices::{self, Device, Ledger};
use mqtt_fleet::{Broker, CallError, Client};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(5);

/// The broker, or `None` (and a clear message) when mosquitto cannot be had on this machine.
fn broker() -> Option<Broker> {
    match Broker::start() {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("SKIPPED: no MQTT broker: {e}");
            None
        }
    }
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
            .request(
                id,
                2,
                "tools/call",
                json!({"name":"self.audio_speaker.set_volume","arguments":{"volume":volume}}),
                T,
            )
            .await
            .unwrap();
        let r = result(&call);
        assert_eq!(r["isError"], false, "{r}");
        let evidence = &r["evidence"];
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
