//! The real device-sim binary with `--mqtt`: a fleet of simulated devices in one process on a
//! mosquitto started by the test, discovered by their presence and called, and gone (their
//! wills) when the process dies.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)] // a test

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mqtt_fleet::{Broker, Client};
use serde_json::json;

struct Sim(Child);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_sim_hosts_a_fleet_on_a_broker() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let mut sim = Sim(Command::new(env!("CARGO_BIN_EXE_device-sim"))
        .args([
            "--mqtt",
            &broker.url(),
            "--device-id",
            "sim",
            "--devices",
            "12",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start device-sim"));
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
            .request(
                id,
                2,
                "tools/call",
                json!({"name":"self.audio_speaker.set_volume","arguments":{"volume":volume}}),
                T,
            )
            .await
            .unwrap();
        let evidence = &call["result"]["evidence"];
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
