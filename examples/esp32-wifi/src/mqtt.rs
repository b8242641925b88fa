//! MQTT mode (feature `mqtt`): the device serves MCP through an MQTT broker, after EMQX's "MCP
//! over MQTT" convention (topics, presence and routing: `mcp_core::transport::mqtt`).
//!
//! The session logic — CONNECT with a will, the control topic, a topic set per client, retained
//! presence, QoS 1 publishes with the convention's user properties, delivery on PUBACK, the
//! keep-alive, reconnecting forever with capped exponential backoff and jitter — is
//! `mqtt-device` (`examples/mqtt-device`), the same code its tests run against mosquitto on a
//! host. This file gives it an embassy-net TCP socket ([`Tcp`]) and the engine with its board
//! ([`EspApp`]); the limits and timings are in `config::mqtt`.
//!
//! Build-time settings:
//! - `MQTT_BROKER`: `mqtt://192.168.1.10[:1883]` or `mqtt://broker.lan[:1883]` — plain TCP to an
//!   address or a host name (resolved through embassy-net's DNS before every attempt; `mqtts://`
//!   needs a TLS stack, which this firmware does not have yet); `build.rs` refuses anything else,
//!   and a build without it never connects;
//! - `MQTT_USER`, `MQTT_PASSWORD`: the broker's credentials, optional;
//! - `MQTT_DEVICE_ID`: the MQTT client id and `server-id`, optional: `esp32-` and the station MAC
//!   in hex by default;
//! - `MQTT_SERVER_NAME`: the `server-name`, optional: `devices/esp32-wifi` by default.
//!
//! Every client is the model (`Principal::Model`); its MQTT client id is its peer, so the
//! engine's retransmission cache is scoped per client and outlives reconnections (the engine is
//! a static). The engine allocates nothing, and neither does the MQTT client (rust-mqtt without
//! its `alloc` feature: each incoming packet is read into one buffer of
//! `Sizes::MQTT_PACKET` bytes).

use core::fmt::Write as _;

use device_link::url::{Scheme, Url};
use embassy_net::Stack;
use embassy_net::tcp::TcpSocket;
use embassy_time::with_timeout;
use mcp_core::server::{Delivery, Input, Peer, Polled, Receipt};
use mqtt_device::{Answer, App, Backoff, Buffers, Connect, Settings};

use crate::config::Sizes;
use crate::config::mqtt::{
    BACKOFF_FIRST, BACKOFF_MAX, CLIENT_IDLE, CLOSE_TIMEOUT, CONNECT_TIMEOUT, DESCRIPTION,
    HALF_OPEN, KEEP_ALIVE, PACKET_TIMEOUT, POLL_INTERVAL, SERVER_NAME,
};
#[cfg(feature = "tls")]
use crate::tls::{Link, TlsBuffers};
use crate::{Engine, EspBoard};

const BROKER: &str = build_env!("MQTT_BROKER");
const USER: Option<&str> = option_env!("MQTT_USER");
const PASSWORD: &str = build_env!("MQTT_PASSWORD");
const DEVICE_ID: Option<&str> = option_env!("MQTT_DEVICE_ID");
const NAME: &str = build_env!("MQTT_SERVER_NAME", SERVER_NAME);

/// `MCP-META` on CONNECT: what runs here.
const META: &str = concat!(
    r#"{"implementation":"mcu-mcp esp32-wifi","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}"#
);

/// An `mqtt://` URL (or `mqtts://` with the feature `tls`), what `build.rs` lets through.
fn broker_url(text: &str) -> Option<Url<'_>> {
    let tls = cfg!(feature = "tls");
    Url::parse(text)
        .ok()
        .filter(|u| u.scheme == Scheme::Mqtt || (tls && u.scheme == Scheme::Mqtts))
}

/// The default device id: `esp32-` and the station MAC in hex.
fn default_id(mac: [u8; 6]) -> heapless::String<18> {
    let mut s = heapless::String::new();
    let _ = s.push_str("esp32-");
    for b in mac {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The TCP connection to the broker, on embassy-net; one socket at a time, on these buffers.
struct Tcp {
    stack: Stack<'static>,
    broker: Url<'static>,
    rx: [u8; Sizes::MQTT_TCP_BUFFER],
    tx: [u8; Sizes::MQTT_TCP_BUFFER],
    /// The TLS buffers (`mqtts://`).
    #[cfg(feature = "tls")]
    tls: &'static mut TlsBuffers,
}

/// The connection: TCP, or (feature `tls`) TLS over it when the URL says `mqtts://`.
#[cfg(not(feature = "tls"))]
type Conn<'a> = TcpSocket<'a>;
#[cfg(feature = "tls")]
type Conn<'a> = Link<'a, TcpSocket<'a>>;

impl Connect for Tcp {
    type Conn<'a> = Conn<'a>;

    async fn connect(&mut self) -> Option<Conn<'_>> {
        self.stack.wait_link_up().await;
        self.stack.wait_config_up().await;
        let addr = crate::net::resolve(self.stack, self.broker.host).await?;
        let mut socket = TcpSocket::new(self.stack, &mut self.rx, &mut self.tx);
        // Unacknowledged data older than this aborts the connection.
        socket.set_timeout(Some(KEEP_ALIVE));
        socket.connect((addr, self.broker.port)).await.ok()?;
        #[cfg(feature = "tls")]
        {
            // Within mqtt-device's connect timeout, as the TCP connect.
            let secure = self.broker.scheme == Scheme::Mqtts;
            match Link::open(socket, secure, self.broker.host, self.tls).await {
                Ok(link) => Some(link),
                Err(why) => {
                    esp_println::println!("mqtt: TLS refused: {why}");
                    None
                }
            }
        }
        #[cfg(not(feature = "tls"))]
        Some(socket)
    }

    async fn close(conn: &mut Self::Conn<'_>) {
        // A reset: the broker learns at once that the device is gone (and publishes its will).
        #[cfg(feature = "tls")]
        let socket = match conn {
            Link::Plain(s) => s,
            // TLS's close_notify first (bounded), then the reset.
            Link::Tls(t) => {
                if let Ok(Some(mut socket)) = with_timeout(CLOSE_TIMEOUT, t.close()).await {
                    socket.abort();
                    let _ = with_timeout(CLOSE_TIMEOUT, socket.flush()).await;
                }
                return;
            }
        };
        #[cfg(not(feature = "tls"))]
        let socket = conn;
        socket.abort();
        let _ = with_timeout(CLOSE_TIMEOUT, socket.flush()).await;
    }
}

/// The engine and its board, as `mqtt-device` drives them.
struct EspApp {
    engine: &'static mut Engine,
    board: &'static mut EspBoard,
}

impl App for EspApp {
    async fn handle(&mut self, input: Input<'_>, out: &mut [u8]) -> Answer {
        // Notifications a handler emits while it runs (progress) are not sent: no tool on this
        // board emits any. The device reboots a second after answering `self.reboot`.
        self.engine
            .handle_async(input, self.board, out, &mut |_: &[u8]| {}, EspBoard::run)
            .await
            .map(Answer::from)
            .unwrap_or_default()
    }

    async fn poll(&mut self, now_ms: u64, out: &mut [u8]) -> Polled {
        self.engine
            .poll_async(now_ms, self.board, out, EspBoard::run)
            .await
    }

    fn delivered(&mut self, receipt: Receipt, delivery: Delivery) {
        self.engine.delivered(receipt, delivery);
    }

    fn forget(&mut self, peer: Peer) {
        // (This engine serves no live resource; a held call it cannot have: `HOLD` = 0.)
        let _ = peer;
    }
}

/// Serves MCP through the broker, forever.
pub async fn run(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut EspBoard,
    mac: [u8; 6],
) -> ! {
    let Some(broker) = broker_url(BROKER) else {
        // Built without MQTT_BROKER (build.rs refuses an unusable one): nothing to connect to.
        crate::idle().await
    };
    let default = default_id(mac);
    let mut settings = Settings::new(DEVICE_ID.unwrap_or(&default), NAME);
    settings.description = DESCRIPTION;
    settings.meta = Some(META);
    settings.credentials = USER.map(|user| (user, PASSWORD.as_bytes()));
    settings.keep_alive = KEEP_ALIVE;
    settings.connect_timeout = CONNECT_TIMEOUT;
    settings.packet_timeout = PACKET_TIMEOUT;
    settings.poll_interval = POLL_INTERVAL;
    settings.backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_MAX);
    settings.client_idle = CLIENT_IDLE;
    settings.half_open = HALF_OPEN;

    let mut tcp = Tcp {
        stack,
        broker,
        rx: [0; Sizes::MQTT_TCP_BUFFER],
        tx: [0; Sizes::MQTT_TCP_BUFFER],
        #[cfg(feature = "tls")]
        tls: TlsBuffers::take(),
    };
    let mut app = EspApp { engine, board };
    let mut packet = [0u8; Sizes::MQTT_PACKET];
    let mut message = [0u8; Sizes::LINE];
    let mut out = [0u8; Sizes::OUT];
    let buffers = Buffers {
        packet: &mut packet,
        message: &mut message,
        out: &mut out,
    };
    // Returns only for a device id or server name that cannot be used in topics.
    let _ = mqtt_device::run::<_, _, { Sizes::MQTT_CLIENTS }, { Sizes::MQTT_NOTES }>(
        &mut tcp,
        &mut app,
        &settings,
        buffers,
        crate::random,
        |_ended, _wait| {},
    )
    .await;
    crate::idle().await
}
