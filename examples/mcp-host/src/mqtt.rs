//! The MQTT client mode: a device serves MCP through an MQTT broker, after EMQX's "MCP over
//! MQTT" convention (the topics, presence and routing are `mcp_core::transport::mqtt`'s; its
//! module docs cite the specification and say why this convention).
//!
//! The device connects out to the broker with MQTT 5 (clean start, session expiry 0), its device
//! id as MQTT client id (the `server-id`), the user property `MCP-COMPONENT-TYPE: mcp-server`,
//! and a **will**: an empty retained message on its presence topic, so that a device that
//! vanishes leaves the list of devices by itself. On every connection it
//!
//! 1. subscribes to its control topic `$mcp-server/{server-id}/{server-name}` (QoS 1) and to
//!    every client's RPC topic with it, `$mcp-rpc/+/{server-id}/{server-name}` (No Local);
//! 2. subscribes again to the topics of every client session it still serves (the broker forgot
//!    them with the old connection): `$mcp-client/presence/{client}`,
//!    `$mcp-client/capability/{client}`;
//! 3. publishes its retained presence (`notifications/server/online`) — discovery for every
//!    client subscribed to `$mcp-server/presence/+/#` — then subscribes to that presence topic
//!    itself (No Local), to hear another client clear or forge it;
//! 4. sends what it owed while the link was down ([`Options::offline_queue`]).
//!
//! An `initialize` on the control topic names its client in the `MCP-MQTT-CLIENT-ID` user
//! property; the device answers on that client's RPC topic. Every later message of the session
//! travels on the RPC topic; the first one completes the handshake, and the device then
//! subscribes to the client's presence and capability topics. A client that publishes
//! `notifications/disconnected` on its presence topic (its will says so when it vanishes) is
//! forgotten. Everything is published with QoS 1 and the convention's user properties.
//!
//! # Clients it cannot trust
//! On a broker without access rules anyone may publish anywhere, and the client id in an
//! `initialize` is whatever its sender wrote (`mcp_core::transport::mqtt`, "An open broker",
//! says what that allows and which broker rules stop it). So:
//!
//! - an `initialize` makes no session and holds no place (`mcp_core::transport::mqtt::Sessions`):
//!   it is answered, and what it declared is noted ([`HALF_OPEN`] notes, [`Options::half_open`]
//!   of life, the oldest giving way); a client's session — one of the
//!   [`Options::max_clients`] places — is made when it first speaks on its own RPC topic (a real
//!   client sends `notifications/initialized` there at once; an id invented on the control topic
//!   never speaks), with what its `initialize` declared while that is noted, else as a client
//!   that declared nothing. A flood of forged `initialize` costs the device one answer each and
//!   no subscription; it never refuses, ends nor delays a real client, however slow its
//!   handshake. With every place in use, a newcomer is refused ("all N client sessions are in
//!   use") until one has been idle for [`Options::client_idle`];
//! - when a message on its own presence topic is anything but its own presence, byte for byte
//!   (an empty retained message that removed it from discovery, another "online" that shows it
//!   as something else), the device publishes its presence again, retained: at once, and at most
//!   once a second (`mcp_core::transport::mqtt::PRESENCE_RESTORE_MS`; the last one always after
//!   the last message heard), so a peer that keeps clearing it cannot make it loop. When it
//!   leaves on purpose it clears its presence itself and handles no message after that.
//!
//! # One engine per device
//! The engine lives as long as [`run`], across reconnections, as it does on a firmware. Clients
//! are told apart by their MQTT client id (`Peer::named`): a request that arrives twice — a QoS 1
//! redelivery, or the client sending it again after a reconnect, on the same RPC topic — is
//! answered from the first answer and never runs twice, and two clients that both use `id: 1`
//! never get each other's answers. Each client keeps its own `mcp_core::Session` (its revision,
//! whether it declared `elicitation`), lent to the engine with each of its messages: one client's
//! `initialize` never changes what the engine assumes of another. What the engine emits on its
//! own (`Server::poll_with`: a held call's answer or outcome, task status, progress, deferred
//! `tasks/result`) goes to the client it is for (`Polled::to`), and only there; resource updates
//! and list changes go to the capability topic, for everyone. A forgotten client's held call and
//! listen streams end with it.
//!
//! # Delivery
//! An acting call's answer is reported to the engine (`Server::delivered`) and as
//! [`HostEvent::Answered`] when the broker acknowledges it: **written** on a PUBACK with success
//! (the broker took it over for the subscribers of the RPC topic); **lost** when the link failed
//! before the PUBACK (rumqttc drops what a clean session did not get acknowledged), when an
//! answer owed while offline was pushed out of the queue, or on a PUBACK that says no one was
//! subscribed (the client had gone; brokers such as EMQX say so, mosquitto 2.0 acknowledges with
//! success regardless). Nothing on the device can tell that the client itself read it. rumqttc reports
//! each publish's packet id as it writes it (`Outgoing::Publish`) and each PUBACK; the device
//! matches them in order (one task per device issues every publish).
//!
//! # Links fail
//! rumqttc's event loop connects (within [`Options::connect_timeout`]) and pings
//! ([`Options::keep_alive`]: a broker silent for one and a half keep-alives is a dead link); on
//! any failure the device waits (capped exponential backoff with jitter, [`Backoff`]) and
//! connects again, forever, and the poll timer keeps running meanwhile. The broker is told the
//! largest packet the device accepts ([`Options::max_message`], MQTT 5 Maximum Packet Size): it
//! does not deliver a larger one.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use mcp_core::Capacities;
use mcp_core::server::{Delivery, Peer};
use mcp_core::transport::mqtt::{
    self as conv, Busy, ClientId, Incoming, MAX_TOPIC_LEN, Opened, PresenceGuard, Route,
    ServerTopics, Sessions, Spoke,
};
use mcp_core::wire::json::{DEFAULT_MAX_DEPTH, Json};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, LastWill, Packet, PubAckReason, PublishProperties};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions};
use rumqttc::{NetworkOptions, Outgoing, TlsConfiguration, Transport};

pub use crate::link::Backoff;
use crate::link::{Link, link_builders};
use crate::{Board, Clock, Engine, HostEvent, Run, Step, lock, primed};

/// The default limit of one incoming MQTT packet: four xiaozhi `tools/list` pages, as over
/// WebSocket ([`crate::xiaozhi::DEFAULT_MAX_MESSAGE`]).
pub const DEFAULT_MAX_MESSAGE: usize = crate::xiaozhi::DEFAULT_MAX_MESSAGE;

/// The shortest keep-alive rumqttc accepts (a shorter one is raised to it).
pub const MIN_KEEP_ALIVE: Duration = Duration::from_secs(5);

/// The most QoS 1 publishes in flight (unacknowledged) each way on a device's connection.
pub const MAX_INFLIGHT: u16 = 16;

/// The most client sessions a device may keep ([`Options::max_clients`]).
pub const MAX_CLIENTS: usize = 64;

/// Noted `initialize`s a device keeps (what one declared, until its client speaks on its RPC
/// topic): a flood of forged `initialize` at F per second keeps a real client's note for
/// `HALF_OPEN / F` seconds (1.6 s at ten a second); past it the client is still served, as one
/// that declared nothing.
pub const HALF_OPEN: usize = 16;

/// Settings of one device's MQTT client: the [`Link`] settings every outbound link has
/// (readable here through `Deref`), and MQTT's own.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// The broker: `mqtt://HOST:PORT` (or `tcp://`; port 1883 when absent), or
    /// `mqtts://HOST:PORT` (or `ssl://`; port 8883 when absent) for TLS with [`Link::tls`]'s
    /// roots, the certificate checked against `HOST`. Optionally with credentials,
    /// `mqtt://USER:PASSWORD@HOST:PORT`, used when [`credentials`](Self::credentials) is `None`:
    /// everything up to the last `@` is the user info (a broker URL has no path), so a raw `/`,
    /// `?`, `#` or `@` in the password is taken as it is; `%XX` escapes are decoded. Events,
    /// logs and `Debug` show the broker without them ([`redacted`]).
    pub broker: String,
    /// The device id: its MQTT client id and `server-id`.
    pub server_id: String,
    /// The `server-name` (a `/`-separated type path, e.g. `devices/demo-board`).
    pub server_name: String,
    /// The short description in the presence message.
    pub description: String,
    /// Extra metadata in the presence message (a JSON object), if any.
    pub meta: Option<String>,
    /// MQTT user name and password, if the broker wants them (else those of the broker URL,
    /// if it has any).
    pub credentials: Option<(String, String)>,
    /// What every link has: principal (every client of the device), buffers, events,
    /// reconnection, the connect timeout (TCP, TLS and CONNACK; whole seconds, at least 1), the
    /// largest MQTT packet the broker may send the device, TLS.
    pub link: Link,
    /// The MQTT keep-alive: a ping when idle this long; a broker silent for 1.5 times it is a
    /// dead link. At least [`MIN_KEEP_ALIVE`] (rumqttc's floor).
    pub keep_alive: Duration,
    /// The most client sessions served at once (clients that completed their handshake; at
    /// most [`MAX_CLIENTS`]). A new client beyond it takes the place of the one idle longest if
    /// that one has been idle for [`Options::client_idle`]; otherwise it is refused with an
    /// error. A client's `initialize` takes no place: its first message on its RPC topic does.
    pub max_clients: usize,
    /// How long a client session must have been idle before a new client may take its place.
    pub client_idle: Duration,
    /// How long what an `initialize` declared is noted for its client to speak on its RPC topic:
    /// a real client speaks within a round trip.
    pub half_open: Duration,
    /// How many messages are kept while the link is down, to send once it is back (the oldest
    /// is dropped first).
    pub offline_queue: usize,
}

crate::link::deref_link!(Options);

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("broker", &redacted(&self.broker))
            .field("server_id", &self.server_id)
            .field("server_name", &self.server_name)
            .field("link", &self.link)
            .field("keep_alive", &self.keep_alive)
            .field("max_clients", &self.max_clients)
            .field("half_open", &self.half_open)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Defaults for a device `server_id` on `broker`: server name `devices/mcu-mcp`,
    /// [`Link::new`]'s (the model on the other end, 16 KiB responses, a 20 ms tick, no
    /// reconnection, a 10 s connect timeout, the system's roots), a 15 s keep-alive, packets of
    /// at most [`DEFAULT_MAX_MESSAGE`] bytes, 16 clients (one idle for 10 minutes may be
    /// replaced), what an `initialize` declared noted 10 s, 64 messages kept while offline.
    pub fn new(broker: impl Into<String>, server_id: impl Into<String>) -> Self {
        Options {
            broker: broker.into(),
            server_id: server_id.into(),
            server_name: "devices/mcu-mcp".into(),
            description: "A device serving MCP tools".into(),
            meta: None,
            credentials: None,
            link: Link::new(DEFAULT_MAX_MESSAGE),
            keep_alive: Duration::from_secs(15),
            max_clients: 16,
            client_idle: Duration::from_secs(600),
            half_open: Duration::from_millis(conv::HALF_OPEN_MS),
            offline_queue: 64,
        }
    }

    link_builders!();

    /// Sets the server name and the description in the presence message.
    pub fn server_name(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.server_name = name.into();
        self.description = description.into();
        self
    }

    /// Sets the number of client sessions (at most [`MAX_CLIENTS`]) and how long one must be
    /// idle to be replaced.
    pub fn max_clients(mut self, n: usize, idle: Duration) -> Self {
        self.max_clients = n;
        self.client_idle = idle;
        self
    }

    crate::link::setters! {
        /// Sets the MQTT keep-alive.
        keep_alive(t: Duration);
        /// Sets how long what an `initialize` declared is noted.
        half_open(life: Duration);
    }
}

/// Why the client stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The broker URL, the device id or the server name cannot be used.
    Options(String),
    /// The link failed (without [`Options::reconnect`]).
    Connection(ConnectionError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Options(e) => write!(f, "MQTT: {e}"),
            Error::Connection(e) => write!(f, "{}", link_error(e)),
        }
    }
}

/// A link failure as logs show it: a refused certificate says why (see [`crate::tls::explain`]).
fn link_error(e: &ConnectionError) -> String {
    match crate::tls::explain(e) {
        Some(why) => format!("MQTT: {why}"),
        None => format!("MQTT: {e}"),
    }
}

impl std::error::Error for Error {}

/// A topic the checked names always fit ([`MAX_TOPIC_LEN`]).
fn owned(topic: Result<&str, conv::BufferTooSmall>) -> String {
    topic.map(str::to_owned).unwrap_or_default()
}

/// The URL's `user:password@` (percent-decoded; the password empty when absent) and the URL
/// without it. The user info is everything between `://` and the **last** `@`: a broker URL has
/// no path, so a raw `/`, `?`, `#` or `@` in a password is part of it, never the end of the
/// host. A broken `%` escape is refused with a message that quotes nothing of it.
fn userinfo(url: &str) -> Result<(String, Option<(String, String)>), Error> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok((url.to_string(), None));
    };
    let Some((info, host)) = rest.rsplit_once('@') else {
        return Ok((url.to_string(), None));
    };
    let (user, password) = info.split_once(':').unwrap_or((info, ""));
    let decode = |s: &str| {
        percent_decode(s).ok_or_else(|| {
            Error::Options(
                "bad percent-encoding in the broker URL's user name or password (write % as %25)"
                    .into(),
            )
        })
    };
    let credentials = (decode(user)?, decode(password)?);
    Ok((format!("{scheme}://{host}"), Some(credentials)))
}

/// `%XX` escapes decoded; `None` for a broken escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            let hex = std::str::from_utf8(&hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// A broker URL as events and logs may show it: without the credentials in it (a password in
/// `mqtt://user:password@host` must not reach a log).
pub fn redacted(url: &str) -> String {
    match userinfo(url) {
        Ok((bare, Some(_))) => bare,
        Ok((bare, None)) => bare,
        Err(_) => "(a broker URL with unreadable credentials)".into(),
    }
}

/// A broker URL, read: where to connect, whether over TLS, and the credentials it carries. The
/// one reading of [`Options::broker`]'s form, for a device and for a client
/// (`mqtt_fleet::Client`, `mcp-call`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokerUrl {
    /// The host name or address (an IPv6 literal without its brackets).
    pub host: String,
    /// The port (1883 by default, 8883 over TLS).
    pub port: u16,
    /// `mqtts://` or `ssl://`: TLS, the certificate checked against [`host`](Self::host).
    pub tls: bool,
    /// The URL's user name and password, percent-decoded.
    pub credentials: Option<(String, String)>,
}

impl fmt::Debug for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BrokerUrl")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("user", &self.credentials.as_ref().map(|(u, _)| u))
            .finish_non_exhaustive()
    }
}

impl BrokerUrl {
    /// Reads `url` as [`Options::broker`] says.
    ///
    /// # Errors
    /// Not an `mqtt(s)://` URL, no host, a bad port, a path, a broken `%` escape in the
    /// credentials (the message quotes nothing of them).
    pub fn parse(url: &str) -> Result<Self, Error> {
        let (bare, credentials) = userinfo(url)?;
        let (host, port, tls) = broker_address(&bare)?;
        Ok(BrokerUrl {
            host,
            port,
            tls,
            credentials,
        })
    }

    /// rumqttc's options for the MQTT client id `id` at this broker: over TLS with `tls`'s
    /// roots when the URL says so, with the URL's credentials. The caller adds the rest
    /// (keep-alive, will, properties).
    ///
    /// # Errors
    /// The TLS setting cannot be used (an unreadable CA file, no roots).
    pub fn mqtt_options(
        &self,
        id: impl Into<String>,
        tls: &crate::tls::Tls,
    ) -> Result<MqttOptions, Error> {
        let mut mqtt = MqttOptions::new(id, self.host.clone(), self.port);
        if self.tls {
            let config = tls
                .client_config()
                .map_err(|e| Error::Options(e.to_string()))?;
            mqtt.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(config)));
        }
        if let Some((user, password)) = &self.credentials {
            mqtt.set_credentials(user.clone(), password.clone());
        }
        Ok(mqtt)
    }
}

/// `mqtt://host:port` → (host, port, TLS?); `mqtts://` (or `ssl://`) is TLS, port 8883 by
/// default.
fn broker_address(url: &str) -> Result<(String, u16, bool), Error> {
    let (rest, tls) = if let Some(r) = url
        .strip_prefix("mqtt://")
        .or_else(|| url.strip_prefix("tcp://"))
    {
        (r, false)
    } else if let Some(r) = url
        .strip_prefix("mqtts://")
        .or_else(|| url.strip_prefix("ssl://"))
    {
        (r, true)
    } else {
        return Err(Error::Options(format!(
            "the broker URL must be mqtt://HOST:PORT or mqtts://HOST:PORT, not {url:?}"
        )));
    };
    let rest = rest.trim_end_matches('/');
    let default_port = if tls { 8883 } else { 1883 };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            let port = p
                .parse::<u16>()
                .map_err(|_| Error::Options(format!("bad port in {url:?}")))?;
            (h.trim_start_matches('[').trim_end_matches(']'), port)
        }
        _ => (rest, default_port),
    };
    if host.is_empty() {
        return Err(Error::Options(format!("no host in {url:?}")));
    }
    if host.contains(['/', '?', '#', ' ']) {
        return Err(Error::Options(format!("a broker URL has no path: {url:?}")));
    }
    Ok((host.to_string(), port, tls))
}

/// The device's topics, as strings.
struct Topics {
    control: String,
    presence: String,
    capability: String,
}

/// An answer whose fate the engine or the application waits to hear about.
type Tracked = crate::Handed;

/// A message waiting for the link.
struct Queued {
    topic: String,
    payload: Bytes,
    retain: bool,
    tracked: Option<Tracked>,
}

/// Everything one device's task keeps.
struct Device<'o, C: 'static, K: Capacities> {
    opts: &'o Options,
    me: ServerTopics<'o>,
    topics: Topics,
    online: Bytes,
    client: AsyncClient,
    engine: Arc<Mutex<Box<Engine<C, K>>>>,
    board: Arc<Mutex<C>>,
    clock: Clock,
    out_len: usize,
    connected: bool,
    /// The client sessions, and what recent `initialize`s declared: what the engine knows of each client (its
    /// revision, whether it asks its user), lent to the shared engine with each of its messages.
    clients: Sessions<MAX_CLIENTS, HALF_OPEN>,
    /// How the application knows each client with a session ([`crate::CallReport::client`]),
    /// for the report that its session ended.
    labels: HashMap<String, String>,
    /// Whether the retained presence is still the device's own.
    presence: PresenceGuard,
    /// Publishes handed to rumqttc, in order, until it names their packet id.
    handed: VecDeque<Option<Tracked>>,
    /// What the device's button answers, and what the application was told waits.
    display: crate::Display,
    /// A publish rumqttc holds back until its packet id is free (`Outgoing::AwaitAck`).
    collided: Option<(u16, Option<Tracked>)>,
    /// Publishes written, waiting for their PUBACK.
    inflight: HashMap<u16, Tracked>,
    offline: VecDeque<Queued>,
}

/// Connects to the broker and serves MCP, forever with [`Options::reconnect`] (only bad options
/// end it), else until the link fails.
///
/// # Errors
/// Bad options; without reconnection also the first link failure.
pub async fn run<C: Board, K: Capacities>(
    opts: &Options,
    engine: Box<Engine<C, K>>,
    board: Arc<Mutex<C>>,
) -> Result<(), Error> {
    run_until(opts, engine, board, std::future::pending()).await
}

/// As [`run`], until `stop` completes: then the device clears its presence (an empty retained
/// message, as the convention asks of a server that leaves) and disconnects.
///
/// # Errors
/// As [`run`].
pub async fn run_until<C: Board, K: Capacities>(
    opts: &Options,
    engine: Box<Engine<C, K>>,
    board: Arc<Mutex<C>>,
    stop: impl Future<Output = ()>,
) -> Result<(), Error> {
    let me = ServerTopics::new(&opts.server_id, &opts.server_name).map_err(|e| {
        Error::Options(format!(
            "device id {:?} / server name {:?}: {e}",
            opts.server_id, opts.server_name
        ))
    })?;
    let broker = BrokerUrl::parse(&opts.broker)?;
    let mut buf = [0u8; MAX_TOPIC_LEN];
    let topics = Topics {
        control: owned(me.control(&mut buf)),
        presence: owned(me.presence(&mut buf)),
        capability: owned(me.capability(&mut buf)),
    };
    let meta = match &opts.meta {
        Some(m) => Some(
            Json::parse(m.as_bytes(), DEFAULT_MAX_DEPTH)
                .ok()
                .filter(|j| j.members().is_some())
                .ok_or_else(|| Error::Options("the presence meta is not a JSON object".into()))?,
        ),
        None => None,
    };
    let mut online = vec![
        0u8;
        512 + opts.server_name.len()
            + 6 * opts.description.len()
            + opts.meta.as_ref().map_or(0, String::len)
    ];
    let n = conv::write_online(&mut online, &opts.server_name, &opts.description, meta)
        .map_err(|e| Error::Options(e.to_string()))?;
    online.truncate(n);

    let mut mqtt = broker.mqtt_options(opts.server_id.clone(), &opts.tls)?;
    mqtt.set_keep_alive(opts.keep_alive.max(MIN_KEEP_ALIVE))
        .set_clean_start(true)
        .set_session_expiry_interval(Some(0))
        .set_connection_timeout(opts.connect_timeout.as_secs().max(1))
        .set_max_packet_size(Some(u32::try_from(opts.max_message).unwrap_or(u32::MAX)))
        // What a device holds in flight, both ways: rumqttc sizes its table of unacknowledged
        // publishes by this (its default, 65,535, costs megabytes per connection), and the
        // broker sends no more unacknowledged requests than the Receive Maximum.
        .set_outgoing_inflight_upper_limit(MAX_INFLIGHT)
        .set_receive_maximum(Some(MAX_INFLIGHT))
        .set_user_properties(vec![
            (conv::COMPONENT_TYPE.into(), conv::SERVER_COMPONENT.into()),
            (
                conv::META.into(),
                format!(
                    r#"{{"implementation":"mcu-mcp mcp-host","version":"{}"}}"#,
                    env!("CARGO_PKG_VERSION")
                ),
            ),
        ])
        .set_last_will(LastWill::new(
            topics.presence.clone(),
            conv::OFFLINE.to_vec(),
            QoS::AtLeastOnce,
            true,
            None,
        ));
    // Requests and answers are small and latency-bound: no Nagle delay.
    let mut net = NetworkOptions::new();
    net.set_tcp_nodelay(true);
    net.set_connection_timeout(opts.connect_timeout.as_secs().max(1));
    mqtt.set_network_options(net);
    if let Some((user, password)) = &opts.credentials {
        mqtt.set_credentials(user.clone(), password.clone());
    }
    let (client, mut eventloop) = AsyncClient::new(mqtt, 256);

    let clock = Clock::new();
    let out_len = opts.out_len.max(mcp_core::MIN_OUT_LEN);
    let engine = primed(engine, &board, clock.now_ms(), out_len).await;
    let presses = lock(&board).confirm_presses();
    let mut dev = Device {
        opts,
        me,
        topics,
        online: Bytes::from(online),
        client,
        engine,
        board,
        clock,
        out_len,
        connected: false,
        clients: Sessions::new(
            u64::try_from(opts.client_idle.as_millis()).unwrap_or(u64::MAX),
            u64::try_from(opts.half_open.as_millis()).unwrap_or(u64::MAX),
        )
        .limit(opts.max_clients),
        presence: PresenceGuard::new(),
        handed: VecDeque::new(),
        display: crate::Display::new(presses),
        collided: None,
        inflight: HashMap::new(),
        offline: VecDeque::new(),
        labels: HashMap::new(),
    };
    let mut ticks = tokio::time::interval(opts.tick.max(Duration::from_millis(1)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(stop);
    let mut failures = 0u32;
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        // Waiting out the backoff: the engine keeps running, what it owes is queued.
        if let Some(at) = retry_at.take() {
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => break,
                    _ = ticks.tick() => dev.tick(),
                    () = &mut stop => return Ok(()),
                }
            }
        }
        // One poll of the event loop, never cancelled (a connection attempt or a read dropped
        // half-way would be started again from scratch); the timer runs beside it.
        let event = {
            let poll = eventloop.poll();
            tokio::pin!(poll);
            loop {
                tokio::select! {
                    ev = &mut poll => break Some(ev),
                    _ = ticks.tick() => dev.tick(),
                    () = &mut stop => break None,
                }
            }
        };
        let Some(event) = event else {
            dev.leave(&mut eventloop).await;
            return Ok(());
        };
        match event {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                failures = 0;
                dev.on_connect();
            }
            Ok(Event::Incoming(Packet::Publish(p))) => dev.on_publish(p).await,
            Ok(Event::Incoming(Packet::PubAck(ack))) => dev.on_puback(ack.pkid, ack.reason),
            Ok(Event::Outgoing(Outgoing::Publish(pkid))) => dev.on_written(pkid),
            Ok(Event::Outgoing(Outgoing::AwaitAck(pkid))) => {
                let front = dev.handed.pop_front().flatten();
                dev.collided = Some((pkid, front));
            }
            Ok(_) => {}
            Err(e) => {
                dev.on_link_lost();
                let Some(backoff) = opts.reconnect else {
                    return Err(Error::Connection(e));
                };
                failures = failures.saturating_add(1);
                let wait = crate::xiaozhi::jitter(backoff.delay(failures));
                if let Some(hook) = &opts.on_event {
                    hook(&HostEvent::Disconnected {
                        reason: link_error(&e),
                        retry_in: Some(wait),
                    });
                }
                retry_at = Some(tokio::time::Instant::now() + wait);
            }
        }
    }
}

impl<C: Board, K: Capacities> Device<'_, C, K> {
    /// The link is up: subscribe, announce, send what waited.
    fn on_connect(&mut self) {
        self.connected = true;
        // Every client's RPC topic at once (No Local): an `initialize` costs no subscription.
        let mut buf = [0u8; MAX_TOPIC_LEN];
        let mut rpc = Filter::new(owned(self.me.rpc_filter(&mut buf)), QoS::AtLeastOnce);
        rpc.nolocal = true;
        let mut filters = vec![
            Filter::new(self.topics.control.clone(), QoS::AtLeastOnce),
            rpc,
        ];
        let known: Vec<String> = self.clients.confirmed().map(str::to_owned).collect();
        for id in &known {
            if let Ok(c) = ClientId::new(id) {
                filters.extend(self.client_filters(c));
            }
        }
        for chunk in filters.chunks(32) {
            let _ = self.client.try_subscribe_many(chunk.to_vec());
        }
        let (presence, online) = (self.topics.presence.clone(), self.online.clone());
        self.publish(presence.clone(), online, true, None);
        self.presence.published(self.clock.now_ms());
        // After the presence: the retained message the broker hands back is the device's own.
        // No Local: its own publishes there (the presence, the empty one when it leaves) are
        // not delivered back; only another client's are.
        let mut watch = Filter::new(presence, QoS::AtLeastOnce);
        watch.nolocal = true;
        let _ = self.client.try_subscribe_many([watch]);
        while let Some(q) = self.offline.pop_front() {
            self.publish(q.topic, q.payload, q.retain, q.tracked);
        }
        if let Some(hook) = &self.opts.on_event {
            hook(&HostEvent::Connected {
                to: format!(
                    "MQTT broker {} as {}",
                    redacted(&self.opts.broker),
                    self.opts.server_id
                ),
            });
        }
    }

    /// The two subscriptions of a client session (its RPC topic is in the device's filter for
    /// every client's).
    fn client_filters(&self, c: ClientId<'_>) -> [Filter; 2] {
        let mut buf = [0u8; MAX_TOPIC_LEN];
        let presence = Filter::new(
            owned(self.me.client_presence(c, &mut buf)),
            QoS::AtLeastOnce,
        );
        let capability = Filter::new(
            owned(self.me.client_capability(c, &mut buf)),
            QoS::AtLeastOnce,
        );
        [presence, capability]
    }

    fn rpc_topic(&self, c: ClientId<'_>) -> String {
        let mut buf = [0u8; MAX_TOPIC_LEN];
        owned(self.me.rpc(c, &mut buf))
    }

    /// The link failed: rumqttc drops every request it had not written and, with a clean
    /// session, everything unacknowledged. Each tracked answer among them is lost.
    fn on_link_lost(&mut self) {
        self.connected = false;
        let lost: Vec<Tracked> = self
            .handed
            .drain(..)
            .flatten()
            .chain(self.collided.take().and_then(|(_, t)| t))
            .chain(self.inflight.drain().map(|(_, t)| t))
            .collect();
        for t in lost {
            self.report(t, Delivery::Lost);
        }
    }

    /// rumqttc wrote the oldest publish it was handed, as packet `pkid`.
    fn on_written(&mut self, pkid: u16) {
        let tracked = match self.collided.take() {
            Some((id, t)) if id == pkid => t,
            other => {
                self.collided = other;
                self.handed.pop_front().flatten()
            }
        };
        if let Some(t) = tracked {
            self.inflight.insert(pkid, t);
        }
    }

    /// The broker acknowledged packet `pkid`.
    fn on_puback(&mut self, pkid: u16, reason: PubAckReason) {
        if let Some(t) = self.inflight.remove(&pkid) {
            self.report(t, crate::delivery(reason == PubAckReason::Success));
        }
    }

    fn report(&self, t: Tracked, delivery: Delivery) {
        t.delivered(&self.engine, self.opts.on_event.as_ref(), delivery);
    }

    /// Publishes (QoS 1, with the convention's user properties), or queues while offline.
    ///
    /// Whether it was handed to the MQTT client now.
    fn publish(
        &mut self,
        topic: String,
        payload: Bytes,
        retain: bool,
        tracked: Option<Tracked>,
    ) -> bool {
        if !self.connected {
            if self.offline.len() >= self.opts.offline_queue.max(1)
                && let Some(old) = self.offline.pop_front().and_then(|q| q.tracked)
            {
                self.report(old, Delivery::Lost);
            }
            self.offline.push_back(Queued {
                topic,
                payload,
                retain,
                tracked,
            });
            return false;
        }
        let props = PublishProperties {
            user_properties: vec![
                (conv::COMPONENT_TYPE.into(), conv::SERVER_COMPONENT.into()),
                (conv::MQTT_CLIENT_ID.into(), self.opts.server_id.clone()),
            ],
            ..PublishProperties::default()
        };
        match self.client.try_publish_with_properties(
            topic,
            QoS::AtLeastOnce,
            retain,
            payload,
            props,
        ) {
            Ok(()) => {
                self.handed.push_back(tracked);
                true
            }
            Err(_) => {
                if let Some(t) = tracked {
                    self.report(t, Delivery::Lost);
                }
                false
            }
        }
    }

    /// The timer: the board's clock and the resources it says changed (published on the
    /// engine), a press of the button, then everything the engine owes, each message to the
    /// client it is for; and the presence, if another client cleared or forged it.
    fn tick(&mut self) {
        self.restore_presence();
        let now = self.clock.now_ms();
        let mut out = vec![0u8; self.out_len];
        let hook = self.opts.on_event.clone();
        let turn = self
            .display
            .turn(&self.engine, &self.board, now, &mut out, hook.as_ref());
        for msg in &turn.msgs {
            let handed = self.emit(msg);
            if let (Some(hook), Some(event)) = (
                &self.opts.on_event,
                crate::observe("mqtt", &turn, msg, handed),
            ) {
                hook(&event);
            }
        }
    }

    /// Publishes something the engine emitted by itself, where the convention routes it: an
    /// answer, a task's status or a held call's outcome only to the client it is for (never to
    /// whoever spoke last). Whether it was handed to the MQTT client (not dropped, not only
    /// queued offline).
    fn emit(&mut self, msg: &crate::Emitted) -> bool {
        let tracked = msg.receipt.map(|receipt| Tracked {
            receipt: Some(receipt),
            ran: msg.ran,
            ..Tracked::default()
        });
        let topic = match conv::route(&msg.bytes) {
            Route::Capability => self.topics.capability.clone(),
            Route::Rpc => {
                let client = msg.to.and_then(|peer| {
                    let id = self.clients.by_peer(peer)?;
                    ClientId::new(id).ok().map(|c| self.rpc_topic(c))
                });
                match client {
                    Some(topic) => topic,
                    None => {
                        if let Some(t) = tracked {
                            self.report(t, Delivery::Lost);
                        }
                        return false;
                    }
                }
            }
        };
        self.publish(topic, msg.bytes.clone(), false, tracked)
    }

    /// A message from the broker.
    async fn on_publish(&mut self, p: rumqttc::v5::mqttbytes::v5::Publish) {
        let Ok(topic) = std::str::from_utf8(&p.topic) else {
            return;
        };
        let Some(incoming) = self.me.parse(topic) else {
            return;
        };
        match incoming {
            Incoming::Control => {
                let sender = p.properties.as_ref().and_then(|props| {
                    props
                        .user_properties
                        .iter()
                        .find(|(k, _)| k == conv::MQTT_CLIENT_ID)
                        .map(|(_, v)| v.as_str())
                });
                let Some(Ok(client)) = sender.map(ClientId::new) else {
                    // Without a usable sender id there is no topic to answer on.
                    return;
                };
                let client = client.as_str().to_owned();
                if let Some(session) = self.admit(&client, &p.payload) {
                    self.serve(client, p.payload, session, true).await;
                }
            }
            Incoming::Rpc(client) => {
                let client = client.as_str().to_owned();
                if conv::is_disconnected(&p.payload) {
                    self.forget(&client);
                    return;
                }
                if let Some(session) = self.spoke(&client, &p.payload) {
                    self.serve(client, p.payload, session, false).await;
                }
            }
            Incoming::ClientPresence(client) => {
                // Anyone may publish this on an open broker (see `mcp_core::transport::mqtt`,
                // "An open broker"); the convention has the client's will say it, so it is
                // believed.
                if conv::is_disconnected(&p.payload) {
                    let client = client.as_str().to_owned();
                    self.forget(&client);
                }
            }
            // The device uses no client capability (roots, sampling).
            Incoming::ClientCapability(_) => {}
            // Another client cleared or overwrote the device's presence (its own publishes are
            // not delivered back: No Local; and none is handled once it leaves).
            Incoming::Presence => {
                if self.presence.heard(&p.payload, &self.online) {
                    self.restore_presence();
                }
            }
        }
    }

    /// Publishes the presence again (retained) if it is not the device's own any more and the
    /// last one went out at least `PRESENCE_RESTORE_MS` ago; otherwise the timer comes back to
    /// it.
    fn restore_presence(&mut self) {
        if self.connected && self.presence.due(self.clock.now_ms()) {
            let (presence, online) = (self.topics.presence.clone(), self.online.clone());
            self.publish(presence, online, true, None);
        }
    }

    /// An `initialize` on the control topic: the session to lend the engine for it (what the
    /// engine makes of it is noted), or a refusal answered on the client's RPC topic (`None`).
    /// No session is made and nothing is subscribed for it.
    fn admit(&mut self, client: &str, payload: &[u8]) -> Option<mcp_core::Session> {
        let c = ClientId::new(client).ok()?;
        match self.clients.initialize(c, self.clock.now_ms()) {
            Opened::HalfOpen { .. } => Some(self.clients.half_open_session(client)),
            Opened::Refused(why) => {
                self.refuse(client, payload, why);
                None
            }
        }
    }

    /// A message on a client's RPC topic (the subscription has No Local: never the device's
    /// echo): the session to serve it in, made when the client first speaks (then subscribe to
    /// its topics, and end the session it replaced); or a refusal answered on its RPC topic
    /// (`None`).
    fn spoke(&mut self, client: &str, payload: &[u8]) -> Option<mcp_core::Session> {
        let c = ClientId::new(client).ok()?;
        let initialized = conv::is_initialized(payload);
        match self.clients.spoke(c, initialized, self.clock.now_ms()) {
            Spoke::Served { session, .. } => Some(session),
            Spoke::Promoted { session, replaced } => {
                if let Some(old) = replaced {
                    self.ended(&old, "ended by the device to make room for a new session");
                }
                let filters = self.client_filters(c);
                let _ = self.client.try_subscribe_many(filters);
                Some(session)
            }
            Spoke::Refused(why) => {
                self.refuse(client, payload, why);
                None
            }
        }
    }

    /// Answers a request the device does not serve in a session (see [`Busy`]).
    fn refuse(&mut self, client: &str, payload: &[u8], why: Busy) {
        let Ok(c) = ClientId::new(client) else { return };
        // An id is at most 128 bytes (`wire::request::MAX_ID_LEN`): 256 bytes always fit.
        let mut answer = vec![0u8; 256];
        let n = conv::write_busy(&mut answer, payload, why).unwrap_or(0);
        if n == 0 {
            return;
        }
        answer.truncate(n);
        let topic = self.rpc_topic(c);
        self.publish(topic, Bytes::from(answer), false, None);
    }

    /// Ends a client session: unsubscribe from its topics; a call it left waiting for a person
    /// and its listen streams end with it.
    fn forget(&mut self, client: &str) {
        if self.clients.forget(client) {
            self.ended(client, "ended by the client (disconnected)");
        }
    }

    /// A client's session is over (forgotten, or its place taken: `why`): the engine forgets
    /// what it held for it, its topics are unsubscribed, and the application hears of it.
    fn ended(&mut self, client: &str, why: &'static str) {
        if let (Some(label), Some(hook)) = (self.labels.remove(client), &self.opts.on_event) {
            hook(&HostEvent::SessionEnded {
                transport: "mqtt",
                client: label,
                reason: why,
            });
        }
        if let Ok(c) = ClientId::new(client) {
            {
                let mut engine = lock(&self.engine);
                // Its conversation ends: its question withdrawn, nothing of it sent to anyone.
                engine.end_conversation(c.peer());
            }
            for f in self.client_filters(c) {
                let _ = self.client.try_unsubscribe(f.path);
            }
        }
    }

    /// Hands one message of `client` to the engine, in `session` (for an `initialize`:
    /// `opening`, what the engine makes of it is noted), and publishes what it produces.
    async fn serve(
        &mut self,
        client: String,
        payload: Bytes,
        session: mcp_core::Session,
        opening: bool,
    ) {
        let Ok(c) = ClientId::new(&client) else {
            return;
        };
        let peer: Peer = c.peer();
        let rpc = self.rpc_topic(c);
        let session = Some(session);
        let how = Run {
            principal: self.opts.principal,
            stateless: false,
            out_len: self.out_len,
            prime_at: None,
            peer,
            report_delivery: false,
            touch: None,
            events: self.opts.on_event.clone(),
            transport: "mqtt",
            session,
        };
        let mut rx = crate::run(self.engine.clone(), self.board.clone(), payload, how);
        while let Some(step) = rx.recv().await {
            match step {
                Step::Note(n) => {
                    let topic = match conv::route(&n) {
                        Route::Capability => self.topics.capability.clone(),
                        Route::Rpc => rpc.clone(),
                    };
                    self.publish(topic, n, false, None);
                }
                Step::Done(d) => {
                    if let Some(after) = d.session {
                        if opening {
                            self.clients.set_half_open_session(&client, *after);
                        } else {
                            let label = lock(&self.engine).client_label(peer, Some(&*after));
                            self.labels.insert(client.clone(), label.to_string());
                            self.clients.set_session(&client, *after);
                        }
                    }
                    let tracked = d.handed.tracked();
                    if d.bytes.is_empty() {
                        continue;
                    }
                    self.publish(rpc.clone(), d.bytes, false, tracked);
                }
            }
        }
    }

    /// Leaves on purpose: clear the presence, disconnect, and let the event loop write both;
    /// then wait for the broker to close the connection.
    ///
    /// Closing the socket as soon as the DISCONNECT is written is not enough: the broker's
    /// PUBACK for the empty presence may already sit unread in the device's receive buffer, and
    /// closing a socket with unread data resets it (RST). A broker that reads the reset before
    /// the DISCONNECT sees a lost link and publishes the will too: a second empty presence (a
    /// client would count the device leaving twice). The broker closes the connection once it
    /// has read the DISCONNECT (and discarded the will); reading until then (the PUBACK with it)
    /// ends the link cleanly. A broker that does not close is given up on after the timeout.
    async fn leave(&mut self, eventloop: &mut EventLoop) {
        if !self.connected {
            return;
        }
        let (presence, offline) = (
            self.topics.presence.clone(),
            Bytes::from_static(conv::OFFLINE),
        );
        self.publish(presence, offline, true, None);
        let _ = self.client.try_disconnect();
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            // Until the broker closes the link (an error: the end of the stream).
            while eventloop.poll().await.is_ok() {}
        })
        .await;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A password with a raw `/` (or `?`, `#`, `@`, a space) is the
    /// password — taken whole, and never shown in what logs and `/sim/state` print.
    #[test]
    fn raw_reserved_characters_in_the_password_are_taken_and_never_shown() {
        let creds = |u: &str, p: &str| Some((u.to_string(), p.to_string()));
        assert_eq!(
            userinfo("mqtt://u:pa/ss@host:1883").unwrap(),
            ("mqtt://host:1883".into(), creds("u", "pa/ss"))
        );
        for password in ["pa/ss", "pa?ss", "pa#ss", "pa ss", "pa@ss", "pa/s@s?#"] {
            let url = format!("mqtt://user:{password}@broker.example:8883");
            let (bare, got) = userinfo(&url).unwrap();
            assert_eq!(got, creds("user", password), "{url}");
            assert_eq!(bare, "mqtt://broker.example:8883");
            let shown = redacted(&url);
            assert!(!shown.contains("pa"), "{shown}");
            assert!(!shown.contains("user"), "{shown}");
        }
        // A broken escape: refused, and what is shown holds nothing of it.
        let shown = redacted("mqtt://u:pa/%zz@h");
        assert!(!shown.contains("pa"), "{shown}");
    }

    #[test]
    fn broker_urls() {
        assert_eq!(
            broker_address("mqtt://127.0.0.1:1884").unwrap(),
            ("127.0.0.1".into(), 1884, false)
        );
        assert_eq!(
            broker_address("tcp://broker/").unwrap(),
            ("broker".into(), 1883, false)
        );
        assert_eq!(
            broker_address("mqtt://[::1]:1883").unwrap(),
            ("::1".into(), 1883, false)
        );
        assert_eq!(
            broker_address("mqtts://broker.example").unwrap(),
            ("broker.example".into(), 8883, true)
        );
        assert_eq!(
            broker_address("ssl://localhost:18883").unwrap(),
            ("localhost".into(), 18883, true)
        );
        assert!(broker_address("mqtt://h:1/path").is_err());
        assert!(broker_address("http://x").is_err());
        assert!(broker_address("mqtt://:1883").is_err());
        assert!(broker_address("mqtt://h:99999").is_err());
    }

    #[test]
    fn credentials_in_broker_urls() {
        let creds = |u: &str, p: &str| Some((u.to_string(), p.to_string()));
        assert_eq!(
            userinfo("mqtt://dev:s3cret@127.0.0.1:1884").unwrap(),
            ("mqtt://127.0.0.1:1884".into(), creds("dev", "s3cret"))
        );
        assert_eq!(
            userinfo("mqtt://dev%40site:p%3Aw%2F@broker/").unwrap(),
            ("mqtt://broker/".into(), creds("dev@site", "p:w/"))
        );
        assert_eq!(
            userinfo("mqtts://dev:s3cret@broker.example:8883").unwrap(),
            ("mqtts://broker.example:8883".into(), creds("dev", "s3cret"))
        );
        assert_eq!(
            userinfo("tcp://only-user@[::1]:1883").unwrap(),
            ("tcp://[::1]:1883".into(), creds("only-user", ""))
        );
        // The last @ of the authority ends the user info (an unescaped @ in the password).
        assert_eq!(
            userinfo("mqtt://u:p@ss@h:1").unwrap(),
            ("mqtt://h:1".into(), creds("u", "p@ss"))
        );
        // Everything up to the last @ is the user info: a broker URL has no path.
        assert_eq!(
            userinfo("mqtt://h:1/a@b").unwrap(),
            ("mqtt://b".into(), creds("h", "1/a"))
        );
        assert_eq!(userinfo("mqtt://h").unwrap(), ("mqtt://h".into(), None));
        assert!(userinfo("mqtt://u:%zz@h").is_err());
        assert!(userinfo("mqtt://u:%4@h").is_err());
        assert!(userinfo("mqtt://u:%ff@h").is_err());
        assert_eq!(
            redacted("mqtt://dev:s3cret@10.0.0.1:1883"),
            "mqtt://10.0.0.1:1883"
        );
        assert_eq!(redacted("mqtt://10.0.0.1"), "mqtt://10.0.0.1");
        assert!(!redacted("mqtt://u:%zz@h").contains("zz"));
    }
}
