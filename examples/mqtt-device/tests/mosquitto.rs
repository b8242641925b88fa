//! The device loop of `mqtt-device` — the code `examples/esp32-wifi --features mqtt` runs —
//! against a real mosquitto, over a tokio TCP stream behind `embedded-io-adapters`, with
//! embassy-time's std driver. The other end is `mqtt-fleet`'s client (rumqttc), which discovers
//! devices by their retained presence.
//!
//! One scenario, a few seconds: presence and discovery, `initialize` on the control topic and
//! calls on the RPC topic, a QoS 1-style resend answered from the engine's cache (nothing runs
//! twice), two clients with the same request id, delivery reported on PUBACK, a full client
//! table refusing with "busy", a client leaving, the keep-alive holding an idle link, the
//! connection cut (the will clears the presence, the device comes back by itself and serves
//! the known clients without a new `initialize`; a resend across the cut runs nothing).
#![allow(clippy::restriction, reason = "a test")]

use std::net::Shutdown;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use embedded_io_adapters::tokio_1::FromTokio;
use mcp_core::server::{Delivery, Input, Peer, Polled, Receipt};
use mqtt_device::{Answer, App, Backoff, Buffers, Connect, Ended, Settings};
use mqtt_fleet::client::real_clients_through_a_flood;
use mqtt_fleet::devices::{Ledger, LedgerEngine, append, ledger_engine};
use mqtt_fleet::{Broker, Client};
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(5);
const DEVICE: &str = "esp-test-1";

/// The test device's memory, as a firmware gathers it: the client table and the buffers.
struct Sizes;

impl Sizes {
    /// Client sessions served at once.
    const CLIENTS: usize = 2;
    /// `initialize`s noted at once.
    const NOTES: usize = 8;
    /// The largest packet the broker may send (a message, its topic and properties).
    const PACKET: usize = 2560;
    /// The largest MCP message.
    const MESSAGE: usize = 2048;
    /// The engine's output.
    const OUT: usize = 3072;
}

/// The engine and its board, as a firmware holds them.
struct Device {
    engine: Box<LedgerEngine>,
    board: Arc<Mutex<Ledger>>,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
}

impl App for Device {
    async fn handle(&mut self, input: Input<'_>, out: &mut [u8]) -> Answer {
        let mut board = self.board.lock().unwrap();
        self.engine
            .handle_with(input, &mut board, out, &mut |_: &[u8]| {})
            .map(Answer::from)
            .unwrap_or_default()
    }

    async fn poll(&mut self, now_ms: u64, out: &mut [u8]) -> Polled {
        self.engine
            .poll_with(now_ms, &mut self.board.lock().unwrap(), out)
    }

    fn delivered(&mut self, receipt: Receipt, delivery: Delivery) {
        self.engine.delivered(receipt, delivery);
        self.deliveries.lock().unwrap().push(delivery);
    }

    fn forget(&mut self, peer: Peer) {
        self.engine.forget_confirmation(peer);
        self.engine.forget_listens(peer);
    }
}

/// TCP to the broker; the test can cut the current connection (both directions shut down: the
/// broker sees the device go without a DISCONNECT and publishes its will).
struct Tcp {
    port: u16,
    current: Arc<Mutex<Option<std::net::TcpStream>>>,
}

impl Connect for Tcp {
    type Conn<'a> = FromTokio<tokio::net::TcpStream>;

    async fn connect(&mut self) -> Option<Self::Conn<'_>> {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .ok()?;
        stream.set_nodelay(true).ok()?;
        let std = stream.into_std().ok()?;
        *self.current.lock().unwrap() = Some(std.try_clone().ok()?);
        Some(FromTokio::new(tokio::net::TcpStream::from_std(std).ok()?))
    }
}

fn cut(current: &Mutex<Option<std::net::TcpStream>>) {
    if let Some(s) = current.lock().unwrap().take() {
        let _ = s.shutdown(Shutdown::Both);
    }
}

/// What the first text of the answer to `append(entry)` says when the ledger is then `len` long.
fn said(len: i64, entry: i64) -> String {
    format!("{len} — read back: {entry}")
}

/// The tool's answer as its first text: the ledger's length and the entry read back.
fn result_text(v: &Value) -> String {
    v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// What the test watches of a running device.
struct Running {
    board: Arc<Mutex<Ledger>>,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    ends: Arc<Mutex<Vec<Ended>>>,
    current: Arc<Mutex<Option<std::net::TcpStream>>>,
    task: tokio::task::JoinHandle<()>,
}

/// Runs the device loop on `local` against the broker on `port`, with the test's timings and
/// `tweak` applied to its settings.
fn spawn_device(
    local: &tokio::task::LocalSet,
    port: u16,
    tweak: impl FnOnce(&mut Settings<'static>) + 'static,
) -> Running {
    let board = Arc::new(Mutex::new(Ledger::default()));
    let deliveries = Arc::new(Mutex::new(Vec::new()));
    let ends = Arc::new(Mutex::new(Vec::<Ended>::new()));
    let current = Arc::new(Mutex::new(None));
    let task = {
        let (board, deliveries, ends, current) = (
            board.clone(),
            deliveries.clone(),
            ends.clone(),
            current.clone(),
        );
        local.spawn_local(async move {
            let mut app = Device {
                engine: ledger_engine(),
                board,
                deliveries,
            };
            let mut tcp = Tcp { port, current };
            let mut settings = Settings::new(DEVICE, "devices/ledger");
            settings.description = "A ledger on a test bench";
            settings.keep_alive = embassy_time::Duration::from_secs(2);
            settings.connect_timeout = embassy_time::Duration::from_secs(2);
            settings.packet_timeout = embassy_time::Duration::from_secs(2);
            settings.client_idle = embassy_time::Duration::from_secs(3600);
            settings.backoff = Backoff::new(
                embassy_time::Duration::from_millis(100),
                embassy_time::Duration::from_millis(400),
            );
            tweak(&mut settings);
            let (mut packet, mut message, mut out) = (
                vec![0u8; Sizes::PACKET],
                vec![0u8; Sizes::MESSAGE],
                vec![0u8; Sizes::OUT],
            );
            let buffers = Buffers {
                packet: &mut packet,
                message: &mut message,
                out: &mut out,
            };
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            let random = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            let on_end = move |why, _wait| ends.lock().unwrap().push(why);
            let r = mqtt_device::run::<_, _, { Sizes::CLIENTS }, { Sizes::NOTES }>(
                &mut tcp, &mut app, &settings, buffers, random, on_end,
            )
            .await;
            panic!("run returned: {r:?}");
        })
    };
    Running {
        board,
        deliveries,
        ends,
        current,
        task,
    }
}

fn broker_port(broker: &Broker) -> u16 {
    broker
        .url()
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_device_on_mosquitto() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    let Running {
        board,
        deliveries,
        ends,
        current,
        task: device,
    } = spawn_device(&local, broker_port(&broker), |_| {});

    local
        .run_until(async {
            let alice = Client::connect(&broker.url(), "alice").unwrap();
            assert!(alice.wait_for_online(1, T).await, "the device's presence");
            let seen = alice.devices()[DEVICE].clone();
            assert_eq!(seen.server_name, "devices/ledger");
            assert_eq!(seen.description, "A ledger on a test bench");

            // A session: initialize on the control topic, answered on alice's RPC topic.
            let init = alice.initialize(DEVICE, T).await.unwrap();
            assert_eq!(init["result"]["serverInfo"]["name"], "ledger", "{init}");
            let listed = alice
                .request(DEVICE, 1, "tools/list", json!({}), T)
                .await
                .unwrap();
            assert_eq!(listed["result"]["tools"][0]["name"], "self.ledger.append");

            // An acting call, then the same request again (a resend): one execution.
            let first = alice
                .request(DEVICE, 2, "tools/call", append(7), T)
                .await
                .unwrap();
            assert_eq!(result_text(&first), said(1, 7), "{first}");
            let again = alice
                .request(DEVICE, 2, "tools/call", append(7), T)
                .await
                .unwrap();
            assert_eq!(again, first, "a resend is answered from the first answer");
            assert_eq!(board.lock().unwrap().entries, [7]);

            // Another client with the same id is another peer: its call runs.
            let bob = Client::connect(&broker.url(), "bob").unwrap();
            assert!(bob.wait_for_online(1, T).await);
            bob.initialize(DEVICE, T).await.unwrap();
            let bobs = bob
                .request(DEVICE, 2, "tools/call", append(8), T)
                .await
                .unwrap();
            assert_eq!(result_text(&bobs), said(2, 8), "{bobs}");
            assert_eq!(board.lock().unwrap().entries, [7, 8]);

            // The broker acknowledged each acting answer (mosquitto: PUBACK Success).
            let written = || {
                deliveries
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|d| **d == Delivery::Written)
                    .count()
            };
            let deadline = tokio::time::Instant::now() + T;
            while written() < 3 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(written(), 3, "{:?}", deliveries.lock().unwrap());

            // Two sessions of two: a third client is refused, with its request id.
            let carol = Client::connect(&broker.url(), "carol").unwrap();
            assert!(carol.wait_for_online(1, T).await);
            let refused = carol.initialize(DEVICE, T).await.unwrap();
            assert_eq!(refused["error"]["code"], -32000, "{refused}");
            assert_eq!(refused["id"], 0);
            // Bob leaves (notifications/disconnected on his presence topic): his place is free.
            bob.close().await;
            let mut admitted = None;
            for _ in 0..50 {
                let v = carol.initialize(DEVICE, T).await.unwrap();
                if v.get("result").is_some() {
                    admitted = Some(v);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(admitted.is_some(), "carol admitted once bob left");

            // An idle link stays up: the device pings within the 2 s keep-alive (mosquitto
            // drops a client silent for 3 s), and hears the PINGRESP.
            tokio::time::sleep(Duration::from_millis(3500)).await;
            assert_eq!(
                alice.devices()[DEVICE].onlines,
                1,
                "no reconnection while idle"
            );
            assert!(
                ends.lock().unwrap().is_empty(),
                "{:?}",
                ends.lock().unwrap()
            );

            // Alice acts once more, then the link is cut before she can know it was answered.
            let before = alice
                .request(DEVICE, 3, "tools/call", append(9), T)
                .await
                .unwrap();
            assert_eq!(result_text(&before), said(3, 9), "{before}");
            cut(&current);
            // The will clears the presence; the device comes back by itself.
            assert!(
                alice
                    .wait_until(T, |d| d[DEVICE].offlines >= 1 && d[DEVICE].onlines >= 2)
                    .await,
                "offline by the will, then online again: {:?}",
                alice.devices()
            );
            assert!(
                matches!(ends.lock().unwrap().first(), Some(Ended::Io)),
                "{:?}",
                ends.lock().unwrap()
            );
            // Alice's session survives: her topics were subscribed again, no new initialize.
            // Her resend of call 3 is answered from the first answer (nothing touched the
            // ledger since); a new call runs.
            let resent = alice
                .request(DEVICE, 3, "tools/call", append(9), T)
                .await
                .unwrap();
            assert_eq!(resent, before);
            let next = alice
                .request(DEVICE, 4, "tools/call", append(10), T)
                .await
                .unwrap();
            assert_eq!(result_text(&next), said(4, 10), "{next}");
            assert_eq!(board.lock().unwrap().entries, [7, 8, 9, 10]);

            alice.close().await;
            carol.close().await;
        })
        .await;
    device.abort();
    drop(broker);
}

/// A hostile client on an open broker, against the firmware's loop:
/// `initialize` messages with invented client ids make no session and cannot keep a real client
/// out; a cleared or forged retained presence is put back by the device.
#[tokio::test(flavor = "current_thread")]
async fn a_device_on_mosquitto_with_a_hostile_client() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    let dev = spawn_device(&local, broker_port(&broker), |_| {});
    local
        .run_until(async {
            let mallory = Client::connect(&broker.url(), "mallory").unwrap();
            assert!(mallory.wait_for_online(1, T).await, "the device's presence");

            // Twenty forged ids on the control topic, none of which ever speaks on its
            // RPC topic; the device holds two sessions. Alice gets in at her first try.
            for i in 0..20 {
                let forged = format!("forged-{i}");
                mallory.forge_initialize(DEVICE, i, &forged).await.unwrap();
            }
            let alice = Client::connect(&broker.url(), "alice").unwrap();
            assert!(alice.wait_for_online(1, T).await);
            let admitted = alice.initialize(DEVICE, T).await.unwrap();
            assert_eq!(
                admitted["result"]["serverInfo"]["name"], "ledger",
                "{admitted}"
            );
            let call = alice
                .request(DEVICE, 1, "tools/call", append(3), T)
                .await
                .unwrap();
            assert_eq!(result_text(&call), said(1, 3), "{call}");
            assert_eq!(dev.board.lock().unwrap().entries, [3]);

            // The retained presence cleared, then forged at once.
            let ledger = "devices/ledger";
            mallory.clear_presence(DEVICE, ledger).await.unwrap();
            assert!(
                alice
                    .wait_until(T, |d| d[DEVICE].offlines >= 1 && d[DEVICE].online)
                    .await,
                "cleared, then restored: {:?}",
                alice.devices()
            );
            mallory
                .forge_presence(DEVICE, ledger, "Not a ledger")
                .await
                .unwrap();
            assert!(
                alice
                    .wait_until(T, |d| d[DEVICE].description == "Not a ledger")
                    .await,
                "{:?}",
                alice.devices()
            );
            assert!(
                alice
                    .wait_until(T, |d| d[DEVICE].description == "A ledger on a test bench")
                    .await,
                "restored: {:?}",
                alice.devices()
            );
            let late = Client::connect(&broker.url(), "newcomer").unwrap();
            assert!(late.wait_for_online(1, T).await);
            assert_eq!(
                late.devices()[DEVICE].description,
                "A ledger on a test bench"
            );
            // No loop: quiet once restored, and the link never dropped.
            let onlines = alice.devices()[DEVICE].onlines;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            assert_eq!(alice.devices()[DEVICE].onlines, onlines);
            assert!(dev.ends.lock().unwrap().is_empty(), "{:?}", dev.ends);
            let call = alice
                .request(DEVICE, 2, "tools/call", append(4), T)
                .await
                .unwrap();
            assert_eq!(result_text(&call), said(2, 4), "{call}");
            alice.close().await;
            mallory.close().await;
            late.close().await;
        })
        .await;
    dev.task.abort();
    drop(broker);
}

/// On the firmware's loop: a sustained flood of forged `initialize` (ten a
/// second from one connection, for ten seconds) while real clients come one after the other:
/// every one is admitted at its first `initialize`, and its call runs.
#[tokio::test(flavor = "current_thread")]
async fn a_sustained_forged_initialize_flood_never_refuses_a_real_client() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let local = tokio::task::LocalSet::new();
    let dev = spawn_device(&local, broker_port(&broker), |_| {});
    local
        .run_until(async {
            let mallory = Client::connect(&broker.url(), "mallory").unwrap();
            assert!(mallory.wait_for_online(1, T).await, "the device's presence");
            let (mallory, calls) =
                real_clients_through_a_flood(&broker.url(), DEVICE, mallory, append, T)
                    .await
                    .unwrap();
            for (k, call) in (0..).zip(&calls) {
                assert_eq!(result_text(call), said(k + 1, k), "real-{k}: {call}");
            }
            assert_eq!(
                dev.board.lock().unwrap().entries,
                (0..10).collect::<Vec<_>>()
            );
            mallory.close().await;
        })
        .await;
    dev.task.abort();
    drop(broker);
}
