//! Live resources and the device speaking first: `resources/read` of a reading, subscriptions per
//! revision (`resources/subscribe` in a session, `subscriptions/listen` on the 2026-07-28 wire),
//! `Server::publish` and the notifications `Server::poll` writes.

use serde_json::{Value as J, json};

use crate::registry::LiveResource;
use crate::server::*;
use crate::{Output, Reply, ToolResult};

#[derive(Default)]
struct Sensors {
    millicelsius: i64,
    presses: i64,
    broken: bool,
}

fn temperature(s: &mut Sensors, r: &mut Reply<'_>) -> ToolResult {
    if s.broken {
        return Err(r.error(format_args!("sensor at 0x{:x} did not answer", 0x48)));
    }
    let t = s.millicelsius;
    r.json(|o| {
        o.int("millicelsius", t);
    })
}

fn presses(s: &mut Sensors, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::int(s.presses))
}

const TEMP_URI: &str = "device://sensors/temperature";
const BUTTON_URI: &str = "device://buttons/main";
static TEMPERATURE: LiveResource<Sensors> =
    LiveResource::new(TEMP_URI, "temperature", "application/json", temperature)
        .description("Board temperature");
static BUTTON: LiveResource<Sensors> =
    LiveResource::new(BUTTON_URI, "button", "text/plain", presses);

type S = Server<'static, Sensors, Caps<4, 2, 4, 384, 4, 2>>;

fn server() -> S {
    let mut s = S::new(Config::new("sensors", "1"));
    s.register_resource(&TEMPERATURE)
        .unwrap()
        .register_resource(&BUTTON)
        .unwrap();
    s
}

struct Dev {
    s: S,
    sensors: Sensors,
    out: Vec<u8>,
}

impl Dev {
    fn new() -> Self {
        Dev {
            s: server(),
            sensors: Sensors::default(),
            out: vec![0; 2048],
        }
    }

    fn send(&mut self, msg: &J) -> (Option<J>, bool) {
        let bytes = msg.to_string();
        let input = Input::new(bytes.as_bytes(), Principal::Model);
        super::exchange(&mut self.s, input, &mut self.sensors, &mut self.out)
    }

    fn ask(&mut self, msg: J) -> J {
        self.send(&msg).0.expect("an answer")
    }

    /// A message from one of several clients of this engine.
    #[cfg(feature = "modern")]
    fn send_from(&mut self, peer: Peer, msg: &J) -> (Option<J>, bool) {
        let bytes = msg.to_string();
        let input = Input::new(bytes.as_bytes(), Principal::Model).peer(peer);
        super::exchange(&mut self.s, input, &mut self.sensors, &mut self.out)
    }

    /// Everything `poll` owes now, with whom each message is for.
    #[cfg(feature = "modern")]
    fn drain_to(&mut self) -> Vec<(J, Option<Peer>)> {
        let mut msgs = Vec::new();
        loop {
            let p = self.s.poll_with(0, &mut self.sensors, &mut self.out);
            if p.len == 0 {
                return msgs;
            }
            msgs.push((serde_json::from_slice(&self.out[..p.len]).unwrap(), p.to));
        }
    }

    /// Everything `poll` owes now.
    fn drain(&mut self) -> Vec<J> {
        let mut msgs = Vec::new();
        loop {
            let n = self.s.poll(0, &mut self.sensors, &mut self.out);
            if n == 0 {
                return msgs;
            }
            msgs.push(serde_json::from_slice(&self.out[..n]).unwrap());
        }
    }
}

fn req(id: i64, method: &str, params: J) -> J {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

fn updated(uri: &str) -> J {
    json!({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":uri}})
}

#[test]
fn a_live_resource_is_listed_and_read_from_the_device_each_time() {
    let mut d = Dev::new();
    let init = d.ask(req(
        0,
        "initialize",
        json!({"protocolVersion":"2025-06-18","capabilities":{}}),
    ));
    assert_eq!(
        init["result"]["capabilities"]["resources"],
        json!({"subscribe": true})
    );
    let list = d.ask(req(1, "resources/list", json!({})));
    assert_eq!(
        list["result"]["resources"],
        json!([
            {"uri":TEMP_URI,"name":"temperature","description":"Board temperature","mimeType":"application/json"},
            {"uri":BUTTON_URI,"name":"button","mimeType":"text/plain"}
        ])
    );
    d.sensors.millicelsius = 21_500;
    let read = d.ask(req(2, "resources/read", json!({"uri":TEMP_URI})));
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri":TEMP_URI,"mimeType":"application/json","text":"{\"millicelsius\":21500}"}])
    );
    d.sensors.presses = 3;
    let read = d.ask(req(3, "resources/read", json!({"uri":BUTTON_URI})));
    assert_eq!(read["result"]["contents"][0]["text"], "3");
    // A reader's failure is a JSON-RPC error with its message; unknown URIs are not found.
    d.sensors.broken = true;
    let err = d.ask(req(4, "resources/read", json!({"uri":TEMP_URI})));
    assert_eq!(err["error"]["code"], -32603);
    assert_eq!(
        err["error"]["message"],
        "Resource read failed: sensor at 0x48 did not answer"
    );
    let err = d.ask(req(5, "resources/read", json!({"uri":"device://nope"})));
    assert_eq!(err["error"]["code"], -32002);
    assert_eq!(err["error"]["data"], json!({"uri":"device://nope"}));
}

/// A reader that answers with content blocks (an image) is served as `blob` contents; before,
/// `resources/read` answered an empty `text`.
#[test]
fn a_live_resource_read_as_an_image_is_served_as_a_blob() {
    fn snapshot(_: &mut Sensors, r: &mut Reply<'_>) -> ToolResult {
        r.image("image/png", b"\x89PNG")
    }
    fn annotated(_: &mut Sensors, r: &mut Reply<'_>) -> ToolResult {
        r.content(|c| {
            c.text("frame 7, \"cam\" 0").audio("audio/wav", b"RIFF");
        })
    }
    static SNAPSHOT: LiveResource<Sensors> = LiveResource::new(
        "device://camera/snapshot",
        "snapshot",
        "image/png",
        snapshot,
    );
    static ANNOTATED: LiveResource<Sensors> = LiveResource::new(
        "device://camera/annotated",
        "annotated",
        "text/plain",
        annotated,
    );
    let mut d = Dev::new();
    d.s.register_resource(&SNAPSHOT)
        .unwrap()
        .register_resource(&ANNOTATED)
        .unwrap();
    let read = d.ask(req(
        1,
        "resources/read",
        json!({"uri":"device://camera/snapshot"}),
    ));
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri":"device://camera/snapshot","mimeType":"image/png","blob":"iVBORw=="}])
    );
    let read = d.ask(req(
        2,
        "resources/read",
        json!({"uri":"device://camera/annotated"}),
    ));
    assert_eq!(
        read["result"]["contents"],
        json!([
            {"uri":"device://camera/annotated","mimeType":"text/plain","text":"frame 7, \"cam\" 0"},
            {"uri":"device://camera/annotated","mimeType":"audio/wav","blob":"UklGRg=="}
        ])
    );
    // The same on the 2026-07-28 wire, with its caching hints.
    #[cfg(feature = "modern")]
    {
        let read = d.ask(modern(
            json!(3),
            "resources/read",
            json!({"uri":"device://camera/snapshot"}),
        ));
        assert_eq!(read["result"]["contents"][0]["blob"], "iVBORw==", "{read}");
        assert_eq!(read["result"]["resultType"], "complete");
    }
}

#[test]
fn a_session_gets_updates_only_for_what_it_subscribed_to() {
    let mut d = Dev::new();
    // Published before anyone subscribed: nothing is owed.
    assert!(d.s.publish(TEMP_URI));
    assert!(!d.s.publish("device://nope"));
    assert!(d.drain().is_empty());
    assert_eq!(
        d.ask(req(1, "resources/subscribe", json!({"uri":TEMP_URI}))),
        json!({"jsonrpc":"2.0","id":1,"result":{}})
    );
    d.s.publish(TEMP_URI);
    d.s.publish(TEMP_URI); // a second change before the drain: one notification
    d.s.publish(BUTTON_URI); // not subscribed
    assert_eq!(d.drain(), vec![updated(TEMP_URI)]);
    assert!(d.drain().is_empty());
    // The firmware subscribes a client that cannot (a xiaozhi backend).
    assert!(d.s.subscribe(BUTTON_URI));
    d.s.publish(BUTTON_URI);
    d.s.publish(TEMP_URI);
    assert_eq!(d.drain(), vec![updated(TEMP_URI), updated(BUTTON_URI)]);
    // Unsubscribed: a pending update is dropped too.
    d.s.publish(TEMP_URI);
    d.ask(req(2, "resources/unsubscribe", json!({"uri":TEMP_URI})));
    assert!(d.drain().is_empty());
    let err = d.ask(req(
        3,
        "resources/subscribe",
        json!({"uri":"device://nope"}),
    ));
    assert_eq!(err["error"]["code"], -32002);
}

#[cfg(feature = "modern")]
fn modern(id: J, method: &str, mut params: J) -> J {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

#[cfg(feature = "modern")]
#[test]
fn a_listen_stream_is_acknowledged_tagged_and_ended_by_the_client() {
    let mut d = Dev::new();
    let listen = modern(
        json!("listen-1"),
        "subscriptions/listen",
        json!({"notifications":{"resourceSubscriptions":[TEMP_URI,"device://nope"],"toolsListChanged":true}}),
    );
    let (ack, deferred) = d.send(&listen);
    assert!(
        deferred,
        "the listen request's response comes when the stream ends"
    );
    assert_eq!(
        ack.unwrap(),
        json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{
            "_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},
            "notifications":{"resourceSubscriptions":[TEMP_URI]}}})
    );
    // A second stream at once, for the button, with a numeric id.
    let (ack, _) = d.send(&modern(
        json!(7),
        "subscriptions/listen",
        json!({"notifications":{"resourceSubscriptions":[BUTTON_URI]}}),
    ));
    assert_eq!(
        ack.unwrap()["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    d.s.publish(TEMP_URI);
    d.s.publish(BUTTON_URI);
    let tagged = |id: J, uri: &str| {
        json!({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{
            "_meta":{"io.modelcontextprotocol/subscriptionId":id},"uri":uri}})
    };
    assert_eq!(
        d.drain(),
        vec![
            tagged(json!("listen-1"), TEMP_URI),
            tagged(json!(7), BUTTON_URI)
        ]
    );
    // Both slots taken: a third stream is refused, clearly.
    let (busy, _) = d.send(&modern(
        json!(8),
        "subscriptions/listen",
        json!({"notifications":{}}),
    ));
    assert_eq!(busy.unwrap()["error"]["code"], -32603);
    // The client ends the first stream (stdio: notifications/cancelled).
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen-1"}});
    assert_eq!(d.send(&cancel).0, None);
    d.s.publish(TEMP_URI);
    assert!(d.drain().is_empty());
    // An HTTP transport ends the other when the client closes its stream.
    assert!(d.s.cancelled(Peer::ONLY, b"7"));
    assert!(!d.s.cancelled(Peer::ONLY, b"7"));
    // A malformed filter is refused; resources/subscribe is gone on this wire.
    let (bad, _) = d.send(&modern(
        json!(9),
        "subscriptions/listen",
        json!({"notifications":{"resourceSubscriptions":TEMP_URI}}),
    ));
    assert_eq!(bad.unwrap()["error"]["code"], -32602);
    let (gone, _) = d.send(&modern(
        json!(10),
        "resources/subscribe",
        json!({"uri":TEMP_URI}),
    ));
    assert_eq!(gone.unwrap()["error"]["code"], -32601);
}

/// Listen ids are each client's own. Two clients may both listen with id 1;
/// each one's updates are for it; one client's `notifications/cancelled` (or a closed stream)
/// with the other's id ends nothing of the other's, and reusing another client's id takes
/// nothing over.
#[cfg(all(feature = "modern", test))]
#[test]
fn listen_streams_belong_to_the_client_that_opened_them() {
    let mut d = Dev::new();
    let (alice, bob) = (Peer::named(b"alice"), Peer::named(b"bob"));
    let listen = |uri: &str| {
        modern(
            json!(1),
            "subscriptions/listen",
            json!({"notifications":{"resourceSubscriptions":[uri]}}),
        )
    };
    let (ack, _) = d.send_from(alice, &listen(TEMP_URI));
    assert_eq!(
        ack.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    let (ack, _) = d.send_from(bob, &listen(BUTTON_URI));
    assert_eq!(
        ack.unwrap()["method"],
        "notifications/subscriptions/acknowledged",
        "bob's id 1 is not alice's"
    );
    // The same id again from the same client is refused.
    let (again, _) = d.send_from(alice, &listen(BUTTON_URI));
    assert_eq!(again.unwrap()["error"]["code"], -32602);
    d.s.publish(TEMP_URI);
    d.s.publish(BUTTON_URI);
    let updates = d.drain_to();
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[0].0["params"]["uri"], TEMP_URI);
    assert_eq!(updates[0].1, Some(alice));
    assert_eq!(updates[1].0["params"]["uri"], BUTTON_URI);
    assert_eq!(updates[1].1, Some(bob));
    // Bob cancels "his" id 1: alice's stream lives on.
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    assert_eq!(d.send_from(bob, &cancel).0, None);
    d.s.publish(TEMP_URI);
    d.s.publish(BUTTON_URI);
    let updates = d.drain_to();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].1, Some(alice));
    // A transport closing bob's stream again ends nothing; alice's ends with hers.
    assert!(!d.s.cancelled(bob, b"1"));
    assert!(d.s.cancelled(alice, b"1"));
    // A client that is gone leaves no stream behind.
    d.send_from(bob, &listen(BUTTON_URI));
    assert_eq!(d.s.forget_listens(alice), 0);
    assert_eq!(d.s.forget_listens(bob), 1);
    d.s.publish(BUTTON_URI);
    assert!(d.drain_to().is_empty());
}

/// A live resource is read from the device each time, so a 2026-07-28 client must not cache it:
/// its read says `ttlMs: 0` (the Python SDK's `Client` caches `resources/read` by the hints, and
/// served a temperature 5 minutes stale when the read carried the listing's 300 s). The listing
/// itself stays cacheable.
#[cfg(feature = "modern")]
#[test]
fn a_live_reading_is_never_cacheable_on_the_2026_wire() {
    let mut d = Dev::new();
    d.sensors.millicelsius = 21_500;
    let (read, _) = d.send(&modern(json!(1), "resources/read", json!({"uri":TEMP_URI})));
    let read = read.unwrap();
    assert_eq!(
        read["result"]["contents"][0]["text"],
        "{\"millicelsius\":21500}"
    );
    assert_eq!(read["result"]["resultType"], "complete");
    assert_eq!(read["result"]["ttlMs"], 0, "{read}");
    assert_eq!(read["result"]["cacheScope"], "private", "{read}");
    d.sensors.millicelsius = 40_000;
    let (again, _) = d.send(&modern(json!(2), "resources/read", json!({"uri":TEMP_URI})));
    assert_eq!(
        again.unwrap()["result"]["contents"][0]["text"],
        "{\"millicelsius\":40000}"
    );
    let (list, _) = d.send(&modern(json!(3), "resources/list", json!({})));
    let list = list.unwrap();
    assert_eq!(list["result"]["ttlMs"], 300_000);
    assert_eq!(list["result"]["cacheScope"], "public");
}

#[test]
fn without_live_resources_nothing_about_subscriptions_is_offered() {
    let mut s: S = S::new(Config::new("plain", "1"));
    let mut sensors = Sensors::default();
    let mut out = [0u8; 1024];
    let msg = br#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"x"}}"#;
    let n = s
        .handle(msg, Principal::Model, &mut sensors, &mut out)
        .unwrap()
        .len;
    let v: J = serde_json::from_slice(&out[..n]).unwrap();
    assert_eq!(v["error"]["code"], -32601);
    // Registration refuses a second resource at the same URI, and a full table.
    let mut s = server();
    assert!(s.register_resource(&TEMPERATURE).is_err());
    let mut tiny: Server<'static, Sensors, Caps<4, 2, 4, 384, 1, 1>> =
        Server::new(Config::new("t", "1"));
    tiny.register_resource(&TEMPERATURE).unwrap();
    assert!(tiny.register_resource(&BUTTON).is_err());
}
