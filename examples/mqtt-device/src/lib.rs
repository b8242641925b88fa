//! The device side of MCP over MQTT, for firmwares: one mcp-core engine served through an MQTT
//! broker after EMQX's "MCP over MQTT" convention (topics, presence and routing are
//! `mcp_core::transport::mqtt`'s; its module docs cite the specification).
//!
//! `no_std`, no allocator: the MQTT client is [`rust_mqtt`] 0.6 (MQTT 5: user properties, will,
//! No Local, Maximum Packet Size) over any `embedded-io-async` stream — an embassy-net
//! `TcpSocket` on the device, a tokio `TcpStream` behind `embedded-io-adapters` in this crate's
//! tests — with time from embassy-time. Every buffer is the caller's ([`Buffers`]); the tables
//! are bounded by const generics.
//!
//! # What [`run`] does
//! Forever: [`Connect::connect`] a stream, then MQTT `CONNECT` with clean start, session expiry
//! 0, the device id as client id (the `server-id`), the user properties
//! `MCP-COMPONENT-TYPE: mcp-server` (and `MCP-META` when given), the keep-alive, the largest
//! packet the device accepts (Maximum Packet Size: the broker drops larger messages for it), and
//! a **will**: an empty retained message on the presence topic, so that a device that vanishes
//! leaves the list of devices by itself. On every connection it
//!
//! 1. subscribes to its control topic `$mcp-server/{server-id}/{server-name}` (QoS 1) and to
//!    every client's RPC topic with it, `$mcp-rpc/+/{server-id}/{server-name}` (No Local);
//! 2. subscribes again to the two topics of every client session it still serves (the broker
//!    forgot them with the old connection): `$mcp-client/presence/{client}`,
//!    `$mcp-client/capability/{client}`;
//! 3. publishes its retained presence, `notifications/server/online` ([`Settings::description`]),
//!    then subscribes to that presence topic itself (No Local).
//!
//! An `initialize` on the control topic names its client in the `MCP-MQTT-CLIENT-ID` user
//! property: the device answers on its RPC topic and notes what it declared (no session yet).
//! Every later message of the session travels on the RPC topic; the first one makes the
//! session: the client takes one of the `CLIENTS` places
//! (`mcp_core::transport::mqtt::Sessions`) and the device subscribes to its presence and
//! capability topics. A client that says `notifications/disconnected` (on its presence topic: its will
//! says so when it vanishes) is forgotten and unsubscribed. Everything is published with QoS 1
//! and the user properties `MCP-COMPONENT-TYPE: mcp-server`, `MCP-MQTT-CLIENT-ID: {server-id}`.
//!
//! # Clients it cannot trust
//! On a broker without access rules anyone may publish anywhere and name any client id in an
//! `initialize` (`mcp_core::transport::mqtt`, "An open broker", says what that allows and which
//! broker rules stop it). So:
//!
//! - an `initialize` makes no session and holds no place: it is answered and what it declared is
//!   noted ([`run`]'s `NOTES` of them, [`Settings::half_open`] of life, the oldest giving way); a
//!   client's session is made when it first speaks on its own RPC topic (a real client sends
//!   `notifications/initialized` there at once; an invented id never speaks), with what its
//!   `initialize` declared while noted, else as a client that declared nothing. A flood of
//!   forged `initialize` costs one answer each and no subscription, and never refuses, ends
//!   nor delays a real client, however slow. With every place in use, a newcomer is refused
//!   with `mcp_core::transport::mqtt::write_busy` ("all N client sessions are in use") until a
//!   session has been idle for [`Settings::client_idle`];
//! - a message on its own presence topic that is anything but its own presence, byte for byte
//!   (an empty retained message that removed it from discovery, a forged "online"), makes it
//!   publish its presence again, retained: at once, then at most once a second
//!   (`PresenceGuard`), the last one always after the last message heard.
//!
//! # Retransmissions and delivery
//! Each message goes to the engine with `Input::peer` set from the client's MQTT client id
//! (`ClientId::peer`): a request redelivered by QoS 1, or sent again by the client after a
//! reconnect on the same RPC topic, is answered from the engine's record of recent calls instead
//! of running twice, and two clients that both use `id: 1` never get each other's answers. An
//! acting call's answer is reported to the engine ([`App::delivered`]) when the broker
//! acknowledges it: `Written` on a PUBACK with reason Success, `Lost` on any other reason code
//! (mosquitto 2.0 acknowledges with success even with no subscriber; EMQX says "no matching
//! subscribers"), or when the link fails before the PUBACK. Nothing is resent after a reconnect
//! (a clean session has no in-flight state): the client's retransmission gets the remembered
//! answer.
//!
//! # What the engine emits by itself
//! [`App::poll`] (`Server::poll_with` or `poll_async`: resource updates, task status and
//! progress, deferred `tasks/result`, a held call's answer or outcome) is called every
//! [`Settings::poll_interval`] and after every message, while the link is up; each message goes
//! where `mcp_core::transport::mqtt::route` says: resource updates and list changes on the
//! capability topic `$mcp-server/capability/{server-id}/{server-name}`, for every client;
//! everything else on the RPC topic of the client it is for (`Polled::to`: the client that made
//! the call), and only there — dropped when that client is gone. While the link is down the engine
//! is not polled: what it owes stays owed until the next connection.
//!
//! # One session per client
//! Every client of the device shares its one engine, but not its session: the table keeps a
//! `mcp_core::Session` per client (its negotiated revision, whether it declared `elicitation`)
//! and lends it with each of that client's messages, so one client's `initialize` never changes
//! what the engine assumes of another — above all whether it may ask *that* client's user to
//! confirm a call. A client that is forgotten takes a call it left waiting for a person with it
//! ([`App::forget`]).
//!
//! # Links fail
//! - **Reconnect forever**, after [`Backoff`]: `first` doubling up to `max`, each wait drawn
//!   between half of it and all of it with the caller's random bits. A connection that got its
//!   CONNACK resets the count.
//! - **Bounded attempts**: the stream and the CONNACK within [`Settings::connect_timeout`].
//! - **Keep-alive**: a PINGREQ after half the keep-alive without sending or hearing anything; a
//!   broker silent for a whole keep-alive (no PINGRESP, nothing else) is a dead link. A packet
//!   whose header came must arrive whole, and a publish must go out, within
//!   [`Settings::packet_timeout`].
//! - **Sized to the device**: the broker is told the largest packet accepted
//!   ([`Buffers::packet`]'s length); a message whose payload does not fit [`Buffers::message`] is
//!   dropped unanswered.
//!
//! # For firmware authors
//! Implement [`Connect`] for your network stack (a TCP connect to the broker; TLS would go here)
//! and [`App`] for your engine and board (`Server::handle_async`, `Server::poll`,
//! `Server::delivered`), give [`run`] the buffers, and spawn it. `examples/esp32-wifi` (feature
//! `mqtt`) does it over embassy-net.
#![cfg_attr(not(test), no_std)]

pub mod backoff;
mod session;

use core::future::Future;

use embassy_time::{Duration, Timer};
use mcp_core::server::{Delivery, Handled, Input, Peer, Polled, Receipt};
use mcp_core::transport::mqtt::{NameError, ServerTopics, Sessions};
use mcp_core::{Principal, Session};

pub use backoff::Backoff;
pub use session::{Ended, MAX_CLIENTS};

/// What the device does with MCP messages: the engine and its board.
pub trait App {
    /// Handles one message (`Server::handle_async`, or `Server::handle_with`): the answer, if
    /// any, goes to the start of `out`. `input` names its client (`Input::peer`) and lends that
    /// client's session (`Input::session`); give back `Handled::session` in [`Answer::session`].
    fn handle(&mut self, input: Input<'_>, out: &mut [u8]) -> impl Future<Output = Answer>;

    /// Writes at most one message the engine owes into `out` (`Server::poll_async`, or
    /// `Server::poll_with`), and says whom it is for (`Polled::to`): a held call's answer, a
    /// task's status go to the client that made the call, and only there.
    fn poll(&mut self, now_ms: u64, out: &mut [u8]) -> impl Future<Output = Polled>;

    /// What became of a remembered answer (`Server::delivered`).
    fn delivered(&mut self, receipt: Receipt, delivery: Delivery);

    /// The client `peer` is gone: a call it left waiting for a person, and its listen streams,
    /// end with it (`Server::forget_confirmation`, `Server::forget_listens`).
    fn forget(&mut self, peer: Peer);
}

/// What [`App::handle`] produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answer {
    /// The answer's length at the start of `out` (0: nothing to send).
    pub len: usize,
    /// The receipt of a remembered answer (`Handled::receipt`): its delivery is reported.
    pub receipt: Option<Receipt>,
    /// The client's session after the message (`Handled::session`), kept for its next one.
    pub session: Option<Session>,
}

impl From<Handled<'_>> for Answer {
    /// What the engine handled (`Server::handle_async`, `Server::handle_with`), to give back:
    /// `.map(Answer::from).unwrap_or_default()` answers nothing for a message it refused.
    fn from(handled: Handled<'_>) -> Self {
        Answer {
            len: handled.len,
            receipt: handled.receipt,
            session: handled.session,
        }
    }
}

/// Opens the stream to the broker.
pub trait Connect {
    /// A connection (it may borrow the connector's buffers).
    type Conn<'a>: embedded_io_async::Read + embedded_io_async::Write
    where
        Self: 'a;

    /// Connects to the broker; `None` when it cannot (the caller backs off and tries again).
    /// [`run`] bounds it with [`Settings::connect_timeout`].
    fn connect(&mut self) -> impl Future<Output = Option<Self::Conn<'_>>>;

    /// Closes a connection that [`run`] is done with (after a failure, or the broker's
    /// DISCONNECT); it is dropped afterwards. By default nothing more than the drop.
    fn close(conn: &mut Self::Conn<'_>) -> impl Future<Output = ()> {
        let _ = conn;
        async {}
    }
}

/// The device's identity on the broker and the link's timings.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// The device id: its MQTT client id and `server-id` (checked by `check_id`).
    pub server_id: &'a str,
    /// The `server-name`, a `/`-separated type path (`devices/esp32-wifi`).
    pub server_name: &'a str,
    /// The short description in the presence message.
    pub description: &'a str,
    /// `MCP-META` on CONNECT (a JSON object as text), if any.
    pub meta: Option<&'a str>,
    /// MQTT user name and password, if the broker wants them.
    pub credentials: Option<(&'a str, &'a [u8])>,
    /// Who is on the other end (every client of the device).
    pub principal: Principal,
    /// The MQTT keep-alive (whole seconds, 1 to 65535; the broker may impose another).
    pub keep_alive: Duration,
    /// The longest the stream and the CONNACK may take.
    pub connect_timeout: Duration,
    /// The longest a packet may take to arrive once its header came, and a publish to go out.
    pub packet_timeout: Duration,
    /// How often the engine is polled while the link is quiet.
    pub poll_interval: Duration,
    /// The waits between connection attempts.
    pub backoff: Backoff,
    /// How long a client session must have been idle before a new client may take its place.
    pub client_idle: Duration,
    /// How long what an `initialize` declared is noted for its client to speak on its RPC topic.
    pub half_open: Duration,
}

impl<'a> Settings<'a> {
    /// The device `server_id` offering `server_name`: no description, no credentials, the model
    /// on the other end, a 30 s keep-alive, 10 s to connect, 10 s per packet, the engine polled
    /// every 50 ms, backoff from 1 s doubling to 30 s, a session idle for 10 minutes
    /// replaceable, what an `initialize` declared noted 10 s.
    pub const fn new(server_id: &'a str, server_name: &'a str) -> Self {
        Settings {
            server_id,
            server_name,
            description: "",
            meta: None,
            credentials: None,
            principal: Principal::Model,
            keep_alive: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            packet_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_millis(50),
            backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(30)),
            client_idle: Duration::from_secs(600),
            half_open: Duration::from_millis(mcp_core::transport::mqtt::HALF_OPEN_MS),
        }
    }
}

/// The caller's memory for [`run`].
#[derive(Debug)]
pub struct Buffers<'b> {
    /// Where each incoming packet's fields (topic, properties, payload) are read: its length is
    /// the Maximum Packet Size the broker is told. A payload of `message.len()` bytes needs about
    /// its length plus the topic ([`mcp_core::transport::mqtt::MAX_TOPIC_LEN`]) plus the user
    /// properties (a few hundred bytes).
    pub packet: &'b mut [u8],
    /// Each MCP message is copied here out of `packet` before the engine sees it: the largest
    /// message accepted.
    pub message: &'b mut [u8],
    /// The engine's output (at least `mcp_core::MIN_OUT_LEN`): the largest answer, and the
    /// presence message.
    pub out: &'b mut [u8],
}

/// Serves `app` through the broker `connector` reaches, reconnecting forever (see the crate
/// docs). `random` gives the bits of the backoff's jitter (a hardware RNG on a device);
/// `ended` hears why each connection ended and how long the device waits before the next one
/// (for a log).
///
/// The firmware sizes the client table: `CLIENTS` sessions served at once (1 to
/// [`MAX_CLIENTS`]), and `NOTES` `initialize`s noted at once (what one declared, until its
/// client speaks on its RPC topic; about 90 bytes each): a flood of forged `initialize` at F per
/// second keeps a real client's note for `NOTES / F` seconds (0.8 s for 8 notes at ten a
/// second); past it the client is still served, as one that declared nothing.
///
/// # Errors
/// Only a `server_id` or `server_name` that cannot be used in topics: then it returns at once.
pub async fn run<C: Connect, A: App, const CLIENTS: usize, const NOTES: usize>(
    connector: &mut C,
    app: &mut A,
    settings: &Settings<'_>,
    mut buffers: Buffers<'_>,
    mut random: impl FnMut() -> u64,
    mut ended: impl FnMut(Ended, Duration),
) -> Result<core::convert::Infallible, NameError> {
    let me = ServerTopics::new(settings.server_id, settings.server_name)?;
    let mut clients: Sessions<CLIENTS, NOTES> = Sessions::new(
        settings.client_idle.as_millis(),
        settings.half_open.as_millis(),
    );
    let mut failures = 0u32;
    loop {
        let mut connected = false;
        let why = session::session(
            connector,
            app,
            settings,
            me,
            &mut buffers,
            &mut clients,
            &mut connected,
        )
        .await;
        failures = if connected {
            1
        } else {
            failures.saturating_add(1)
        };
        let wait = settings.backoff.delay(failures, random());
        ended(why, wait);
        Timer::after(wait).await;
    }
}
