//! Faults on a real mosquitto: the broker killed and restarted mid-run, a device's connection
//! dropped mid-call, a link gone silent. No call executes twice, every call is answered or
//! reported lost, and the devices come back by themselves.
#![allow(clippy::restriction, reason = "a test")]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_core::server::Delivery;
use mcp_host::HostEvent;
use mqtt_fleet::devices::{
    self, Device, Ledger, answered, append, eventually, ledger_device, recorder,
};
use mqtt_fleet::{Broker, CallError, Client};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const T: Duration = Duration::from_secs(5);

fn broker() -> Option<Broker> {
    Broker::for_test()
}

/// One proxied connection: its task, "swallow what the device sends", "silence both ways".
type Conn = (JoinHandle<()>, Arc<AtomicBool>, Arc<AtomicBool>);

/// A TCP proxy between devices and the broker, whose connections the test can cut or silence.
struct Proxy {
    port: u16,
    conns: Arc<Mutex<Vec<Conn>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns: Arc<Mutex<Vec<_>>> = Arc::default();
        let list = conns.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((down, _)) = listener.accept().await else {
                    return;
                };
                let Ok(up) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                // `drop_up`: bytes from the device are swallowed; `silent`: both ways.
                let drop_up = Arc::new(AtomicBool::new(false));
                let silent = Arc::new(AtomicBool::new(false));
                let (d, s) = (drop_up.clone(), silent.clone());
                let task = tokio::spawn(async move {
                    let (mut dr, mut dw) = down.into_split();
                    let (mut ur, mut uw) = up.into_split();
                    let s2 = s.clone();
                    let to_broker = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = match dr.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            if d.load(Ordering::SeqCst) || s.load(Ordering::SeqCst) {
                                continue;
                            }
                            if uw.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    let to_device = async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = match ur.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            if s2.load(Ordering::SeqCst) {
                                continue;
                            }
                            if dw.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    };
                    tokio::select! {
                        () = to_broker => {}
                        () = to_device => {}
                    }
                });
                list.lock().unwrap().push((task, drop_up, silent));
            }
        });
        Proxy {
            port,
            conns,
            accept,
        }
    }

    fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// Swallows what the connected devices send from now on (their answers, acks, pings).
    fn swallow_upstream(&self) {
        for (_, d, _) in self.conns.lock().unwrap().iter() {
            d.store(true, Ordering::SeqCst);
        }
    }

    /// Silences the current connections both ways (a dead Wi-Fi link: no FIN, no RST).
    fn silence(&self) {
        for (_, _, s) in self.conns.lock().unwrap().iter() {
            s.store(true, Ordering::SeqCst);
        }
    }

    /// Drops every current connection (the sockets close); new ones are accepted as before.
    fn cut(&self) {
        for (task, _, _) in self.conns.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    fn connections(&self) -> usize {
        self.conns.lock().unwrap().len()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// No entry twice in any ledger; every answered call's entry exactly once in its device's.
fn check_ledgers(
    fleet: &BTreeMap<String, Device<Ledger>>,
    outcomes: &[(String, i64, Result<Value, CallError>)],
) -> (usize, usize) {
    let mut answered = 0;
    let mut lost = 0;
    for (id, dev) in fleet {
        let entries = dev.board.lock().unwrap().entries.clone();
        let distinct: BTreeSet<_> = entries.iter().collect();
        assert_eq!(
            distinct.len(),
            entries.len(),
            "{id} ran a call twice: {entries:?}"
        );
        for (d, entry, outcome) in outcomes.iter().filter(|(d, ..)| d == id) {
            let times = entries.iter().filter(|e| *e == entry).count();
            match outcome {
                Ok(v) => {
                    assert!(v.get("result").is_some(), "{d} {entry}: {v}");
                    assert_eq!(
                        v["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], *entry,
                        "{v}"
                    );
                    assert_eq!(times, 1, "{d}: answered call {entry} ran {times} times");
                    answered += 1;
                }
                Err(CallError::Lost) => {
                    assert!(times <= 1, "{d}: lost call {entry} ran {times} times");
                    lost += 1;
                }
                Err(e) => panic!("{d} {entry}: {e}"),
            }
        }
    }
    (answered, lost)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_killed_and_restarted_mid_run() {
    let Some(mut broker) = broker() else { return };
    let url = broker.url();
    let ids: Vec<String> = (0..3).map(|i| format!("ledger-{i}")).collect();
    let fleet: BTreeMap<String, Device<Ledger>> = ids
        .iter()
        .map(|id| {
            let opts = devices::quick(&url, id, "devices/ledger");
            (
                id.clone(),
                Device::spawn(opts, devices::ledger_engine(), Ledger::default()),
            )
        })
        .collect();
    let client = Arc::new(Client::connect(&url, "survivor").unwrap());
    assert!(client.wait_for_online(3, T).await);
    for id in &ids {
        client.initialize(id, T).await.unwrap();
    }
    // Calls one after the other, round-robin over the devices, each sent again (same id, same
    // bytes) every 400 ms while unanswered, for up to 10 s.
    let caller = {
        let (client, ids) = (client.clone(), ids.clone());
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for k in 0..60i64 {
                let id = &ids[usize::try_from(k).unwrap() % ids.len()];
                let r = client
                    .call(
                        id,
                        k + 1,
                        "tools/call",
                        append(k),
                        25,
                        Duration::from_millis(400),
                    )
                    .await;
                outcomes.push((id.clone(), k, r));
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            outcomes
        })
    };
    tokio::time::sleep(Duration::from_millis(600)).await;
    broker.kill();
    let killed = Instant::now();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    broker.restart().unwrap();
    // Every device announces itself again on the new broker (it kept no retained message).
    assert!(
        client
            .wait_until(Duration::from_secs(15), |d| {
                d.len() == 3 && d.values().all(|p| p.online && p.onlines >= 2)
            })
            .await,
        "{:?}",
        client.devices()
    );
    let back = killed.elapsed();
    let outcomes = caller.await.unwrap();
    let (answered, lost) = check_ledgers(&fleet, &outcomes);
    eprintln!(
        "broker restart: {answered} calls answered, {lost} reported lost, devices back {} ms after the kill, client reconnected {} times",
        back.as_millis(),
        client.connections()
    );
    assert_eq!(answered + lost, 60);
    assert!(answered >= 55, "{answered} of 60 answered");
    for d in fleet.into_values() {
        d.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_connection_dropped_mid_call_comes_back_and_the_call_runs_once() {
    let Some(broker) = broker() else { return };
    let proxy = Proxy::start(broker.port()).await;
    let (hook, events) = recorder();
    let dev = ledger_device(&proxy.url(), "ledger-p", |o| o.on_event(hook));
    let client = Client::initialized(&broker.url(), "patient", "ledger-p", T)
        .await
        .unwrap();
    let ok = client
        .call_tool("ledger-p", 1, "self.ledger.append", json!({"entry": 1}), T)
        .await
        .unwrap();
    assert_eq!(
        ok["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"],
        1
    );

    // The request reaches the device and runs; its answer (and its PUBACK) never leave.
    proxy.swallow_upstream();
    let lost = client
        .request(
            "ledger-p",
            2,
            "tools/call",
            append(2),
            Duration::from_millis(500),
        )
        .await;
    assert_eq!(lost, Err(CallError::Lost));
    assert_eq!(dev.board.lock().unwrap().entries, [1, 2]);
    // The link drops: the broker publishes the device's will (offline), the device reports the
    // unacknowledged answer lost and comes back by itself.
    proxy.cut();
    assert!(
        client
            .wait_until(T, |d| d["ledger-p"].offlines >= 1
                && d["ledger-p"].online
                && d["ledger-p"].onlines >= 2)
            .await,
        "{:?}",
        client.devices()
    );
    assert!(eventually(T, || proxy.connections() == 1).await);
    assert!(
        answered(&events).contains(&(Some("self.ledger.append"), None, Delivery::Lost)),
        "{:?}",
        answered(&events)
    );
    // The client sends the call again, in the same session (no new initialize): answered from
    // the first answer; nothing runs twice.
    let again = client
        .call(
            "ledger-p",
            2,
            "tools/call",
            append(2),
            10,
            Duration::from_millis(500),
        )
        .await
        .unwrap();
    assert_eq!(
        again["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"], 2,
        "{again}"
    );
    assert_eq!(dev.board.lock().unwrap().entries, [1, 2]);
    assert!(
        eventually(T, || answered(&events).contains(&(
            None,
            Some(Delivery::Lost),
            Delivery::Written
        )))
        .await,
        "{:?}",
        answered(&events)
    );
    let next = client
        .call_tool("ledger-p", 3, "self.ledger.append", json!({"entry": 3}), T)
        .await
        .unwrap();
    assert_eq!(next["result"]["structuredContent"]["value"], 3);
    assert_eq!(dev.board.lock().unwrap().entries, [1, 2, 3]);
    dev.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_link_is_found_dead_by_the_keep_alive_and_the_device_reconnects() {
    let Some(broker) = broker() else { return };
    let proxy = Proxy::start(broker.port()).await;
    let (hook, events) = recorder();
    let dev = ledger_device(&proxy.url(), "ledger-s", |o| o.on_event(hook));
    let client = Client::initialized(&broker.url(), "observer", "ledger-s", T)
        .await
        .unwrap();
    // The handshake completed (a call answered) before the link goes quiet: a session the
    // device keeps across the reconnection.
    let first = client
        .request("ledger-s", 0, "tools/call", append(8), T)
        .await
        .unwrap();
    assert!(first.get("result").is_some(), "{first}");
    // No FIN, no RST: the link just stops carrying anything.
    proxy.silence();
    let start = Instant::now();
    let disconnected = || {
        events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, HostEvent::Disconnected { .. }))
    };
    assert!(
        eventually(Duration::from_secs(20), disconnected).await,
        "never noticed"
    );
    let noticed = start.elapsed();
    assert!(
        client
            .wait_until(T, |d| d["ledger-s"].online && d["ledger-s"].onlines >= 2)
            .await,
        "{:?}",
        client.devices()
    );
    eprintln!("silent link noticed after {} ms", noticed.as_millis());
    // 5 s keep-alive: a ping after 5 s, the link dead when the next one finds it unanswered.
    assert!(noticed <= Duration::from_secs(16), "{noticed:?}");
    let ok = client
        .call_tool("ledger-s", 1, "self.ledger.append", json!({"entry": 9}), T)
        .await
        .unwrap();
    assert_eq!(
        ok["result"]["_meta"]["io.github.mcu-mcp/evidence"]["observed"],
        9
    );
    dev.stop().await.unwrap();
}
