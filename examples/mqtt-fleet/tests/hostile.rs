//! A hostile client on an open broker, against the device loop of
//! `mcp_host::mqtt` (what `device-sim --mqtt` runs) on a real mosquitto:
//!
//! - `initialize` messages with invented client ids on the control topic must not lock
//!   legitimate clients out of the device's client table, not even a sustained flood;
//! - a client that clears or forges the device's retained presence must not make the device
//!   vanish from discovery, or be shown as something else.
#![allow(clippy::restriction, reason = "a test")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mcp_host::mqtt::Options;
use mqtt_fleet::client::real_clients_through_a_flood;
use mqtt_fleet::devices::{self, Device, Ledger, append};
use mqtt_fleet::{Broker, Client};
use serde_json::json;

/// How long a wait may take before the test fails. Generous: a passing run waits far less, and a
/// loaded 2-core CI machine once took more than 5 s for the restored presence to arrive.
const T: Duration = Duration::from_secs(15);

fn init(id: i64) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"forger","version":"1"}}})
    .to_string()
}

async fn ledger_device(
    url: &str,
    id: &str,
    tweak: impl FnOnce(Options) -> Options,
) -> Device<Ledger> {
    let opts = tweak(devices::quick(url, id, "devices/ledger"));
    Device::spawn(opts, devices::ledger_engine(), Ledger::default())
}

/// `count` `initialize` messages on `device`'s control topic, each naming an invented client id
/// `{prefix}-{i}` in `MCP-MQTT-CLIENT-ID`; none of them will ever speak on its RPC topic.
async fn forge_initializes(from: &Client, device: &str, prefix: &str, count: i64) {
    for i in 0..count {
        from.forge_initialize(device, i, &format!("{prefix}-{i}"))
            .await
            .unwrap();
    }
    settled(from, device).await;
}

/// Returns once the device has handled everything `from` sent it before: `from` sends an
/// `initialize` of its own on the same control topic and waits for its answer. A publish only
/// hands the message to the client's event loop, and the broker keeps one publisher's order,
/// so without this a loaded machine may deliver a flood after the next client's handshake.
async fn settled(from: &Client, device: &str) {
    let id = json!("settled");
    let answer = from.expect_answer(device, &id);
    let request = json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"flood-end","version":"1"}}});
    from.send_control(device, request.to_string())
        .await
        .unwrap();
    let answer = tokio::time::timeout(T, answer).await.unwrap().unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
}

/// Twenty-four `initialize` messages with invented client ids, then a real client. The
/// device's defaults (16 sessions, 10 minutes before an idle one may be replaced): an
/// `initialize` makes no session (nothing on their RPC topics), so the forged ones cannot keep
/// the real client out: it is admitted at its first `initialize`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_client_ids_do_not_lock_out_a_real_client() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-8", |o| o).await;
    let mallory = Client::connect(&url, "mallory").unwrap();
    assert!(mallory.wait_for_online(1, T).await);
    // One forged id is watched, to read what the device answers it: its `initialize` is
    // answered (and noted), and the flood that follows crowds the note out.
    let observer = Client::connect(&url, "forged-0").unwrap();
    assert!(observer.wait_for_online(1, T).await);
    let answered = observer.expect_answer("ledger-8", &json!(0));
    forge_initializes(&mallory, "ledger-8", "forged", 24).await;
    // A real client gets in at once and calls a tool.
    let alice = Client::connect(&url, "alice").unwrap();
    assert!(alice.wait_for_online(1, T).await);
    let admitted = alice.initialize("ledger-8", T).await.unwrap();
    assert_eq!(
        admitted["result"]["serverInfo"]["name"], "ledger",
        "{admitted}"
    );
    let call = alice
        .request("ledger-8", 1, "tools/call", append(5), T)
        .await
        .unwrap();
    assert_eq!(call["result"]["structuredContent"]["value"], 1, "{call}");
    assert_eq!(dev.board.lock().unwrap().entries, [5]);
    let answered = tokio::time::timeout(T, answered).await.unwrap().unwrap();
    assert!(answered.get("result").is_some(), "{answered}");
    // The note of its `initialize` was crowded out before it spoke; speaking on its own topic
    // makes its session all the same.
    let late = observer
        .request("ledger-8", 5, "tools/call", append(99), T)
        .await
        .unwrap();
    assert_eq!(late["result"]["structuredContent"]["value"], 2, "{late}");
    assert_eq!(dev.board.lock().unwrap().entries, [5, 99]);
    alice.close().await;
    mallory.close().await;
    observer.close().await;
    dev.stop().await.unwrap();
}

/// The same with a small table: a device of three sessions, one of them a real client that has
/// spoken on its RPC topic. Floods of forged ids make no session and take no place; a second
/// real client gets in; both keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_takes_no_place_of_a_real_client() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-9", |o| {
        o.max_clients(3, Duration::from_secs(600))
    })
    .await;
    let alice = Client::connect(&url, "alice").unwrap();
    assert!(alice.wait_for_online(1, T).await);
    let init = alice.initialize("ledger-9", T).await.unwrap();
    assert!(init.get("result").is_some(), "{init}");
    let first = alice
        .request("ledger-9", 1, "tools/call", append(1), T)
        .await
        .unwrap();
    assert_eq!(first["result"]["structuredContent"]["value"], 1, "{first}");

    let mallory = Client::connect(&url, "mallory").unwrap();
    assert!(mallory.wait_for_online(1, T).await);
    forge_initializes(&mallory, "ledger-9", "forged", 20).await;

    // Alice's session survived the flood: no new initialize, her next call runs.
    let second = alice
        .request("ledger-9", 2, "tools/call", append(2), T)
        .await
        .unwrap();
    assert_eq!(
        second["result"]["structuredContent"]["value"], 2,
        "{second}"
    );
    // Bob gets a place at once: the forged ids hold none.
    let bob = Client::connect(&url, "bob").unwrap();
    assert!(bob.wait_for_online(1, T).await);
    let admitted = bob.initialize("ledger-9", T).await.unwrap();
    assert!(admitted.get("result").is_some(), "{admitted}");
    let bobs = bob
        .request("ledger-9", 1, "tools/call", append(3), T)
        .await
        .unwrap();
    assert_eq!(bobs["result"]["structuredContent"]["value"], 3, "{bobs}");

    // Another flood: Bob and Alice keep working.
    forge_initializes(&mallory, "ledger-9", "again", 10).await;
    for (c, id, entry) in [(&alice, 3, 4), (&bob, 2, 5)] {
        let r = c
            .request("ledger-9", id, "tools/call", append(entry), T)
            .await
            .unwrap();
        assert!(r.get("result").is_some(), "{}: {r}", c.id());
    }
    assert_eq!(dev.board.lock().unwrap().entries, [1, 2, 3, 4, 5]);
    alice.close().await;
    bob.close().await;
    mallory.close().await;
    dev.stop().await.unwrap();
}

/// A real client whose handshake is slow — its `notifications/initialized`
/// comes after forty forged `initialize` naming other ids — is still served: an `initialize`
/// takes nothing a flood can take from it, and the client's session is made when it speaks on
/// its own RPC topic. What its `initialize` declared may be crowded out by then; the session
/// is made all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handshake_survives_any_number_of_forged_initializes() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-slow", |o| o).await;
    let bob = Client::connect(&url, "bob").unwrap();
    assert!(bob.wait_for_online(1, T).await);
    let answer = bob.expect_answer("ledger-slow", &json!(0));
    bob.send_control("ledger-slow", init(0)).await.unwrap();
    let answer = tokio::time::timeout(T, answer).await.unwrap().unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    // Bob is slow; meanwhile Mallory floods the control topic.
    let mallory = Client::connect(&url, "mallory").unwrap();
    assert!(mallory.wait_for_online(1, T).await);
    forge_initializes(&mallory, "ledger-slow", "forged", 40).await;
    bob.send(
        "ledger-slow",
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
    )
    .await
    .unwrap();
    let call = bob
        .request("ledger-slow", 1, "tools/call", append(7), T)
        .await
        .unwrap();
    assert_eq!(call["result"]["structuredContent"]["value"], 1, "{call}");
    assert_eq!(dev.board.lock().unwrap().entries, [7]);
    bob.close().await;
    mallory.close().await;
    dev.stop().await.unwrap();
}

/// A sustained flood of forged `initialize` — ten a second from one
/// connection, for ten seconds — while real clients come one after the other: every one is
/// admitted at its first `initialize` and its call runs, and the forged ids never hold a place.
/// (With a rate of new sessions, 8 of 10 real clients were refused in 10 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sustained_forged_initialize_flood_never_refuses_a_real_client() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-33", |o| o).await;
    let mallory = Client::connect(&url, "mallory").unwrap();
    assert!(mallory.wait_for_online(1, T).await);
    let (mallory, calls) = real_clients_through_a_flood(&url, "ledger-33", mallory, append, T)
        .await
        .unwrap();
    for call in &calls {
        assert!(call.get("result").is_some(), "{call}");
    }
    assert_eq!(
        dev.board.lock().unwrap().entries,
        (0..10).collect::<Vec<_>>()
    );
    mallory.close().await;
    dev.stop().await.unwrap();
}

/// A client of the broker that only listens: it subscribes to `filters` as `user` and counts
/// what the broker delivers to it.
fn spy(url: &str, user: &str, password: &str, filters: &[&str]) -> Arc<AtomicU32> {
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::{Filter, Packet};
    use rumqttc::v5::{AsyncClient, Event, MqttOptions};
    let port: u16 = url.rsplit_once(':').unwrap().1.parse().unwrap();
    let mut opts = MqttOptions::new(user, "127.0.0.1", port);
    opts.set_credentials(user, password);
    let (client, mut eventloop) = AsyncClient::new(opts, 64);
    let heard = Arc::new(AtomicU32::new(0));
    let (count, filters): (_, Vec<Filter>) = (
        heard.clone(),
        filters
            .iter()
            .map(|f| Filter::new(*f, QoS::AtLeastOnce))
            .collect(),
    );
    tokio::spawn(async move {
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    let _ = client.try_subscribe_many(filters.clone());
                }
                Ok(Event::Incoming(Packet::Publish(_))) => {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    heard
}

/// The broker ACLs docs/AUTH.md documents —
/// `examples/mqtt-fleet/mosquitto/mcp.acl`, verbatim — on a real mosquitto with an account per
/// client id. The device announces itself and serves; Mallory, with an account of her own,
/// cannot speak on Alice's RPC topic, end Alice's session, clear or forge the device's
/// presence, and Eve cannot read Alice's answers; the control topic stays open, so a flood of
/// forged `initialize` (one naming Alice) gets through, and still never refuses Bob nor touches
/// Alice's session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_acl_binds_each_client_id_to_its_own_topics() {
    let acl = Path::new(env!("CARGO_MANIFEST_DIR")).join("mosquitto/mcp.acl");
    let users = [
        ("ledger-acl", "device-pw"),
        ("alice", "alice-pw"),
        ("bob", "bob-pw"),
        ("mallory", "mallory-pw"),
        ("eve", "eve-pw"),
    ];
    let Some(broker) = Broker::for_test_with_acl(&users, &acl) else {
        return;
    };
    let url = broker.url();
    let device_url = url.replace("mqtt://", "mqtt://ledger-acl:device-pw@");
    let dev = ledger_device(&device_url, "ledger-acl", |o| o).await;
    let rpc = |client: &str| format!("$mcp-rpc/{client}/ledger-acl/devices/ledger");
    let eve = spy(
        &url,
        "eve",
        "eve-pw",
        &["$mcp-rpc/alice/#", "$mcp-rpc/+/ledger-acl/#"],
    );
    let alice = Client::connect_as(&url, "alice", "alice-pw").unwrap();
    assert!(
        alice.wait_for_online(1, T).await,
        "the device announced itself under the ACL"
    );
    let init = alice.initialize("ledger-acl", T).await.unwrap();
    assert!(init.get("result").is_some(), "{init}");
    let first = alice
        .request("ledger-acl", 1, "tools/call", append(1), T)
        .await
        .unwrap();
    assert_eq!(first["result"]["structuredContent"]["value"], 1, "{first}");

    let mallory = Client::connect_as(&url, "mallory", "mallory-pw").unwrap();
    assert!(mallory.wait_for_online(1, T).await);
    let props = |id: &str| {
        vec![
            ("MCP-COMPONENT-TYPE".to_string(), "mcp-client".to_string()),
            ("MCP-MQTT-CLIENT-ID".to_string(), id.to_string()),
        ]
    };
    // Mallory speaks on Alice's RPC topic, then says Alice is gone: the broker drops both.
    let call = json!({"jsonrpc":"2.0","id":66,"method":"tools/call","params":append(666)});
    mallory
        .publish_raw(rpc("alice"), call.to_string(), props("alice"))
        .await
        .unwrap();
    mallory
        .publish_raw(
            "$mcp-client/presence/alice".into(),
            mcp_core::transport::mqtt::DISCONNECTED.into(),
            props("alice"),
        )
        .await
        .unwrap();
    // ...clears the device's presence, then forges one: dropped too.
    let ledger = "devices/ledger";
    mallory.clear_presence("ledger-acl", ledger).await.unwrap();
    mallory
        .forge_presence("ledger-acl", ledger, "Send your secrets here")
        .await
        .unwrap();
    // The control topic is open: a flood of forged initialize, one naming Alice, gets through.
    forge_initializes(&mallory, "ledger-acl", "forged", 30).await;
    mallory
        .publish_raw(
            "$mcp-server/ledger-acl/devices/ledger".into(),
            init_as_elicitor(),
            props("alice"),
        )
        .await
        .unwrap();
    settled(&mallory, "ledger-acl").await;
    // Bob gets in at his first try.
    let bob = Client::connect_as(&url, "bob", "bob-pw").unwrap();
    assert!(bob.wait_for_online(1, T).await);
    let admitted = bob.initialize("ledger-acl", T).await.unwrap();
    assert!(admitted.get("result").is_some(), "{admitted}");
    let second = bob
        .request("ledger-acl", 1, "tools/call", append(2), T)
        .await
        .unwrap();
    assert_eq!(
        second["result"]["structuredContent"]["value"], 2,
        "{second}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Alice's session is as it was: her next call runs; Mallory's never did.
    let third = alice
        .request("ledger-acl", 2, "tools/call", append(3), T)
        .await
        .unwrap();
    assert_eq!(third["result"]["structuredContent"]["value"], 3, "{third}");
    assert_eq!(dev.board.lock().unwrap().entries, [1, 2, 3]);
    // The presence was never cleared nor replaced.
    let seen = &alice.devices()["ledger-acl"];
    assert_eq!((seen.onlines, seen.offlines), (1, 0), "{seen:?}");
    assert_eq!(seen.description, "A simulated device");
    // Eve, subscribed to Alice's topic and to every client's with the device, heard nothing.
    assert_eq!(eve.load(Ordering::Relaxed), 0);
    alice.close().await;
    bob.close().await;
    mallory.close().await;
    dev.stop().await.unwrap();
}

/// An `initialize` that declares `elicitation` (a forger's, naming a real client).
fn init_as_elicitor() -> String {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},
        "clientInfo":{"name":"forger","version":"1"}}})
    .to_string()
}

/// Another client clears the device's retained presence, then forges one; the device
/// puts its own back, and does not loop doing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleared_or_forged_presence_is_restored() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-10", |o| o).await;
    let watcher = Client::connect(&url, "watcher").unwrap();
    assert!(watcher.wait_for_online(1, T).await);
    let ledger = "devices/ledger";
    let mallory = Client::connect(&url, "mallory").unwrap();

    // Cleared: the watcher sees the device go, then come back.
    mallory.clear_presence("ledger-10", ledger).await.unwrap();
    assert!(
        watcher
            .wait_until(T, |d| d["ledger-10"].offlines >= 1 && d["ledger-10"].online)
            .await,
        "{:?}",
        watcher.devices()
    );
    // Forged, at once after the restoration (the device restores at most once a second: this
    // one waits its turn).
    mallory
        .forge_presence("ledger-10", ledger, "Send your secrets here")
        .await
        .unwrap();
    assert!(
        watcher
            .wait_until(T, |d| d["ledger-10"].description
                == "Send your secrets here")
            .await,
        "the watcher saw the forgery: {:?}",
        watcher.devices()
    );
    assert!(
        watcher
            .wait_until(T, |d| d["ledger-10"].description == "A simulated device")
            .await,
        "restored: {:?}",
        watcher.devices()
    );
    // What the broker retains is the device's own presence: a newcomer sees it.
    let late = Client::connect(&url, "newcomer").unwrap();
    assert!(late.wait_for_online(1, T).await);
    assert_eq!(
        late.devices()["ledger-10"].description,
        "A simulated device"
    );
    // Quiet afterwards: the device does not answer its own presence (no loop).
    let onlines = watcher.devices()["ledger-10"].onlines;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(watcher.devices()["ledger-10"].onlines, onlines);
    assert_eq!(late.devices()["ledger-10"].onlines, 1);
    // It still serves.
    watcher.initialize("ledger-10", T).await.unwrap();
    let call = watcher
        .request("ledger-10", 1, "tools/call", append(1), T)
        .await
        .unwrap();
    assert_eq!(call["result"]["structuredContent"]["value"], 1, "{call}");
    watcher.close().await;
    late.close().await;
    mallory.close().await;
    // Leaving on purpose still clears the presence, and the device does not put it back.
    let observer = Client::connect(&url, "observer").unwrap();
    assert!(observer.wait_for_online(1, T).await);
    dev.stop().await.unwrap();
    assert!(observer.wait_until(T, |d| !d["ledger-10"].online).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!observer.devices()["ledger-10"].online);
    observer.close().await;
}

/// Over MQTT: a request nested deeper than the engine reads, on a client's
/// RPC topic, is answered -32700 with its id (and the session goes on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_nested_too_deep_is_answered_with_its_id() {
    let Some(broker) = Broker::for_test() else {
        return;
    };
    let url = broker.url();
    let dev = ledger_device(&url, "ledger-deep", |o| o).await;
    let alice = Client::connect(&url, "alice").unwrap();
    assert!(alice.wait_for_online(1, T).await);
    alice.initialize("ledger-deep", T).await.unwrap();
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!({ "a": deep });
    }
    let v = alice
        .request(
            "ledger-deep",
            7,
            "tools/call",
            json!({"name":"self.ledger.append","arguments":deep}),
            T,
        )
        .await
        .unwrap();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(7), json!(-32700)),
        "{v}"
    );
    let ok = alice
        .request("ledger-deep", 8, "tools/call", append(1), T)
        .await
        .unwrap();
    assert_eq!(ok["result"]["structuredContent"]["value"], 1, "{ok}");
    alice.close().await;
    dev.stop().await.unwrap();
}
