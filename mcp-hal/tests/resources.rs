//! The resource kits (temperature, battery, button) through a real `mcp_core::Server`
//! on the demo board: listed, read from the simulated devices, subscribed, published after a
//! change by the kits' policies — and not flooded by a noisy sensor or a bouncing button. The
//! async side: the same resources answered from the last sample, polled through sensors whose
//! reads are `Pending` once.
//!
//! The checks on the demo board need the feature `tasks`, without which `sim::DemoBoard` does not
//! exist (its tool set has the long-running `self.motor.move_to`); the watches, the async twins
//! and a board of one's own are checked in every build.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]

mod common;

use common::{YieldOnce, block_on};

#[cfg(feature = "tasks")]
use mcp_core::testing::Client;
use mcp_core::{Caps, Config, Server};
use mcp_hal::ErrorType;
use mcp_hal::asynch::sensor::{Button as AsyncButton, Sensor as AsyncSensor, Unit};
#[cfg(feature = "tasks")]
use mcp_hal::kits::battery;
use mcp_hal::kits::{Watch, button, temperature};
use mcp_hal::publish::Policy;
#[cfg(feature = "tasks")]
use mcp_hal::sim::{DemoBoard, Fault};
use mcp_hal::sim::{Faults, SimButton, SimThermometer};
#[cfg(feature = "tasks")]
use mcp_hal::{ErrorKind, Percent};
#[cfg(feature = "tasks")]
use serde_json::{Value, json};

/// A 2025-06-18 client of the demo board, its resources registered; its main loop gives the
/// board the time and publishes what the kits' watches report, every 10 ms.
#[cfg(feature = "tasks")]
type Device = Client<'static, DemoBoard, Caps<16>>;

#[cfg(feature = "tasks")]
fn device(resources: &'static [&'static mcp_core::registry::LiveResource<DemoBoard>]) -> Device {
    let mut server = Server::new(Config::new("sensors", "1"));
    server.register_all(DemoBoard::TOOLS).unwrap();
    for r in resources {
        server.register_resource(r).unwrap();
    }
    let mut d = Client::new(server, DemoBoard::default()).with_main_loop(|server, board, now| {
        board.sim.set_time(now);
        for uri in board.poll_resources(now) {
            assert!(server.publish(uri));
        }
    });
    d.initialize("2025-06-18");
    // The first turn takes the baselines.
    d.set_now(0);
    assert!(d.poll().is_empty());
    d
}

/// The contents text of a resource, or the error.
#[cfg(feature = "tasks")]
fn read(d: &mut Device, uri: &str) -> Result<String, Value> {
    let r = d.request("resources/read", json!({"uri": uri}));
    match r.result() {
        Some(res) => {
            assert_eq!(res["contents"][0]["uri"], uri);
            assert_eq!(res["contents"][0]["mimeType"], "application/json");
            Ok(res["contents"][0]["text"].as_str().unwrap().to_owned())
        }
        None => Err(r.error().unwrap().clone()),
    }
}

/// Runs the main loop every 10 ms until `until`; every update written, with its time.
#[cfg(feature = "tasks")]
fn run_until(d: &mut Device, until: u64) -> Vec<(u64, String)> {
    let mut all = Vec::new();
    while d.now() < until {
        for m in d.advance(10) {
            assert_eq!(m.method(), Some("notifications/resources/updated"), "{m}");
            let uri = m.message["params"]["uri"].as_str().unwrap().to_owned();
            all.push((d.now(), uri));
        }
    }
    all
}

#[cfg(feature = "tasks")]
#[test]
fn the_three_resources_are_listed_and_read_from_the_devices() {
    let mut d = device(DemoBoard::RESOURCES);
    let list = d.request("resources/list", json!({}));
    let listed: Vec<(&str, &str, &str)> = list.result().unwrap()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert!(r["description"].as_str().is_some());
            (
                r["uri"].as_str().unwrap(),
                r["name"].as_str().unwrap(),
                r["mimeType"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (
                "device://sensors/temperature",
                "temperature",
                "application/json"
            ),
            ("device://sensors/battery", "battery", "application/json"),
            ("device://buttons/main", "button", "application/json"),
        ]
    );
    assert_eq!(
        read(&mut d, temperature::URI).unwrap(),
        r#"{"celsius":21.5}"#
    );
    assert_eq!(read(&mut d, battery::URI).unwrap(), r#"{"percent":87}"#);
    assert_eq!(read(&mut d, button::URI).unwrap(), r#"{"presses":0}"#);
    // Read at each request: a new value shows at once, without a poll; fractions and signs are
    // exact decimals.
    d.board_mut().sim.thermometer.set_millicelsius(-3_125);
    assert_eq!(
        read(&mut d, temperature::URI).unwrap(),
        r#"{"celsius":-3.125}"#
    );
    d.board_mut().sim.battery.set_millipercent(42_500);
    assert_eq!(read(&mut d, battery::URI).unwrap(), r#"{"percent":42.5}"#);
    // The contents are JSON a client can parse.
    let t: Value = serde_json::from_str(&read(&mut d, temperature::URI).unwrap()).unwrap();
    assert_eq!(t, json!({"celsius": -3.125}));
    // A sensor that NACKs: the resource answers an error with the reason; the button still works.
    d.board_mut()
        .sim
        .set_faults(Faults::only(Fault::SensorNack));
    for uri in [temperature::URI, battery::URI] {
        let e = read(&mut d, uri).unwrap_err();
        assert_eq!(e["code"], -32603);
        assert_eq!(
            e["message"],
            "Resource read failed: The sensor did not acknowledge (I2C NACK)"
        );
    }
    assert_eq!(read(&mut d, button::URI).unwrap(), r#"{"presses":0}"#);
}

#[cfg(feature = "tasks")]
#[test]
fn a_change_is_published_once_to_a_subscriber_and_noise_never() {
    let mut d = device(DemoBoard::RESOURCES);
    assert_eq!(
        *d.request("resources/subscribe", json!({"uri": temperature::URI}))
            .result()
            .unwrap(),
        json!({})
    );
    // A noisy ADC (±0.2 °C) for a minute: nothing to say.
    d.board_mut().sim.thermometer.set_noise(200);
    assert_eq!(run_until(&mut d, 60_000), []);
    // 25 °C: one update, at the next tick; then steady (noise and all) for a minute: nothing.
    d.board_mut().sim.thermometer.set_millicelsius(25_000);
    assert_eq!(
        run_until(&mut d, 120_000),
        [(60_010, temperature::URI.to_owned())]
    );
    // The client reads the new value on the update.
    let t: Value = serde_json::from_str(&read(&mut d, temperature::URI).unwrap()).unwrap();
    assert!((t["celsius"].as_f64().unwrap() - 25.0).abs() <= 0.2, "{t}");
    // The battery and the button change too, but this session did not subscribe to them.
    d.board_mut()
        .sim
        .battery
        .set_percent(Percent::new(20).unwrap());
    let now = d.now();
    d.board_mut().sim.button.press(now);
    assert_eq!(run_until(&mut d, 130_000), []);
    assert_eq!(d.board_mut().watch.button.count(), 1);
    // Unsubscribed: the next change is not written.
    d.request("resources/unsubscribe", json!({"uri": temperature::URI}));
    d.board_mut().sim.thermometer.set_millicelsius(30_000);
    assert_eq!(run_until(&mut d, 140_000), []);
}

#[cfg(feature = "tasks")]
#[test]
fn a_noisy_sensor_cannot_flood_the_link() {
    let mut d = device(DemoBoard::RESOURCES);
    d.server_mut().subscribe(temperature::URI);
    // Noise of ±2 °C, far beyond the 0.5 °C threshold, for 60 s of 10 ms ticks (6000 samples):
    // at most one update per second (the policy's minimum interval).
    d.board_mut().sim.thermometer.set_noise(2_000);
    let updates = run_until(&mut d, 60_000);
    assert!(
        (30..=60).contains(&updates.len()),
        "{} updates",
        updates.len()
    );
    assert!(updates.windows(2).all(|w| w[1].0 - w[0].0 >= 1000));
    // A sensor that fails publishes nothing, and the next good reading is compared with the
    // last published one.
    d.board_mut().sim.thermometer.set_noise(0);
    d.board_mut()
        .sim
        .set_faults(Faults::only(Fault::SensorNack));
    assert_eq!(run_until(&mut d, 70_000), []);
    let last = d.board_mut().watch.temperature.gate().reference().unwrap();
    assert_eq!(
        d.board_mut().watch.temperature.latest().unwrap().value,
        Err(ErrorKind::NoAcknowledge)
    );
    d.board_mut().sim.set_faults(Faults::NONE);
    d.board_mut().sim.thermometer.set_millicelsius(last);
    assert_eq!(run_until(&mut d, 80_000), []);
}

#[cfg(feature = "tasks")]
#[test]
fn each_press_is_published_and_the_count_read() {
    let mut d = device(DemoBoard::RESOURCES);
    d.request("resources/subscribe", json!({"uri": button::URI}));
    // Three clicks in quick succession (they queue, 200 ms apart, each bouncing): three
    // presses counted, one update each (the policy allows one per 200 ms).
    for _ in 0..3 {
        let now = d.now();
        d.board_mut().sim.button.press(now);
    }
    let updates = run_until(&mut d, 2_000);
    assert_eq!(updates.len(), 3, "{updates:?}");
    assert!(updates.iter().all(|(_, uri)| uri == button::URI));
    assert_eq!(read(&mut d, button::URI).unwrap(), r#"{"presses":3}"#);
    // Held down for a second: one press, not one per sample.
    d.board_mut().sim.button.hold(true);
    let held = run_until(&mut d, 3_000);
    d.board_mut().sim.button.hold(false);
    let after = run_until(&mut d, 4_000);
    assert_eq!((held.len(), after.len()), (1, 0));
    assert_eq!(read(&mut d, button::URI).unwrap(), r#"{"presses":4}"#);
}

#[test]
fn a_heartbeat_policy_publishes_a_steady_value() {
    // A board of one's own: a thermometer and a watch with a 5 s heartbeat.
    struct Board {
        thermometer: SimThermometer,
    }
    impl temperature::HasThermometer for Board {
        type Thermometer = SimThermometer;
        fn thermometer(&mut self) -> &mut SimThermometer {
            &mut self.thermometer
        }
    }
    static TEMPERATURE: mcp_core::registry::LiveResource<Board> = temperature::resource();
    let mut server: Server<'static, Board, Caps<4>> = Server::new(Config::new("b", "1"));
    server.register_resource(&TEMPERATURE).unwrap();
    server.subscribe(temperature::URI);
    let mut board = Board {
        thermometer: SimThermometer::new(Faults::NONE),
    };
    let mut watch: Watch = temperature::watch().policy(temperature::POLICY.heartbeat_ms(5_000));
    let mut out = [0u8; 512];
    let mut at = Vec::new();
    for now in (0..=20_000).step_by(100) {
        if let Some(uri) = watch.poll(now, &mut board.thermometer) {
            server.publish(uri);
        }
        while server.poll(now, &mut board, &mut out) > 0 {
            at.push(now);
        }
    }
    assert_eq!(at, [5_000, 10_000, 15_000, 20_000]);
}

/// An async sensor or button whose every read is `Pending` once (a bus transfer waiting for its
/// interrupt), over a blocking sim device.
struct Pend<T> {
    inner: T,
    pending: u32,
}

impl<T: ErrorType> ErrorType for Pend<T> {
    type Error = T::Error;
}

impl<T: mcp_hal::sensor::Sensor> AsyncSensor for Pend<T> {
    fn unit(&self) -> Unit {
        self.inner.unit()
    }
    async fn read(&mut self) -> Result<i32, Self::Error> {
        YieldOnce::default().await;
        self.pending += 1;
        self.inner.read()
    }
}

impl<T: mcp_hal::sensor::Button> AsyncButton for Pend<T> {
    async fn is_pressed(&mut self) -> Result<bool, Self::Error> {
        YieldOnce::default().await;
        self.pending += 1;
        self.inner.is_pressed()
    }
}

#[test]
fn the_async_watch_awaits_a_pending_read_and_publishes_by_the_same_policy() {
    let mut sensor = Pend {
        inner: SimThermometer::new(Faults::NONE),
        pending: 0,
    };
    let mut button = Pend {
        inner: SimButton::new(Faults::NONE),
        pending: 0,
    };
    let mut watch = temperature::watch();
    let mut blocking = temperature::watch();
    let mut presses = button::Presses::new();
    let mut published = Vec::new();
    sensor.inner.set_noise(200);
    let mut reference = SimThermometer::new(Faults::NONE);
    reference.set_noise(200);
    for now in (0..10_000u64).step_by(10) {
        if now == 4_000 {
            sensor.inner.set_millicelsius(30_000);
            reference.set_millicelsius(30_000);
            button.inner.press(now);
        }
        button.inner.set_time(now);
        let (uri, pending) = block_on(watch.poll_async(now, &mut sensor));
        assert_eq!(pending, 1, "suspended once, then done");
        // The blocking watch over the same readings decides the same.
        assert_eq!(uri, blocking.poll(now, &mut reference));
        published.extend(uri.map(|u| (now, u)));
        let (uri, pending) = block_on(presses.poll_async(now, &mut button));
        assert_eq!(pending, 1);
        published.extend(uri.map(|u| (now, u)));
    }
    assert_eq!(sensor.pending, 1000);
    assert_eq!(
        published,
        // The press is sampled from 4000 and steady 20 ms later.
        [(4_000, temperature::URI), (4_020, button::URI)]
    );
    assert_eq!(presses.count(), 1);
    assert_eq!(watch.latest(), blocking.latest());
}

#[cfg(feature = "tasks")]
#[test]
fn async_resources_answer_the_last_sample_like_the_blocking_ones() {
    let mut blocking = device(DemoBoard::RESOURCES);
    // The async board polls through the async twins.
    let mut asynch = device(DemoBoard::ASYNC_RESOURCES).with_main_loop(|server, board, now| {
        board.sim.set_time(now);
        let (uris, _) = block_on(board.poll_resources_async(now));
        for uri in uris {
            server.publish(uri);
        }
    });
    for d in [&mut blocking, &mut asynch] {
        let now = d.now();
        let sim = &mut d.board_mut().sim;
        sim.thermometer.set_millicelsius(18_250);
        sim.battery.set_percent(Percent::new(64).unwrap());
        sim.button.press(now);
    }
    // Until polled, the async board answers its last sample (the baseline).
    assert_eq!(
        read(&mut asynch, temperature::URI).unwrap(),
        r#"{"celsius":21.5}"#
    );
    run_until(&mut blocking, 1_000);
    run_until(&mut asynch, 1_000);
    for uri in [temperature::URI, battery::URI, button::URI] {
        assert_eq!(read(&mut blocking, uri), read(&mut asynch, uri), "{uri}");
    }
    assert_eq!(
        read(&mut asynch, battery::URI).unwrap(),
        r#"{"percent":64}"#
    );
    // A failed sample is the async resource's error, with the same message.
    let nack = Faults::only(Fault::SensorNack);
    asynch.board_mut().sim.set_faults(nack);
    asynch.advance(10);
    blocking.board_mut().sim.set_faults(nack);
    assert_eq!(
        read(&mut blocking, temperature::URI),
        read(&mut asynch, temperature::URI)
    );
    // Before any sample at all: a clear error.
    let mut fresh = Server::new(Config::new("fresh", "1"));
    fresh
        .register_resource(DemoBoard::ASYNC_RESOURCES[0])
        .unwrap();
    let mut fresh: Device = Client::new(fresh, DemoBoard::default());
    let r = fresh.request("resources/read", json!({"uri": temperature::URI}));
    assert_eq!(
        r.error_message(),
        Some("Resource read failed: The sensor has not been read yet")
    );
}

#[test]
fn a_custom_policy_and_uri() {
    // The same kit types serve a second thermometer at a URI of one's own.
    let mut w = Watch::new("device://sensors/outdoor", Policy::new(2_000));
    let mut t = SimThermometer::new(Faults::NONE);
    assert_eq!(w.poll(0, &mut t), None);
    t.set_millicelsius(23_000);
    assert_eq!(w.poll(10, &mut t), None);
    t.set_millicelsius(24_000);
    assert_eq!(w.poll(20, &mut t), Some("device://sensors/outdoor"));
    assert_eq!(w.uri(), "device://sensors/outdoor");
}
