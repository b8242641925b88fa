//! MCP over MQTT, sans-IO: topic names, presence payloads and routing for a device that serves
//! MCP through an MQTT broker. The MQTT client (a socket, TLS, the MQTT packets) belongs to the
//! firmware or the host; these functions only name topics, check names and write payloads, into
//! buffers the caller owns.
//!
//! # The convention: EMQX's "MCP over MQTT"
//! The topics follow the published *MCP over MQTT* specification (EMQX / the `mqtt-ai` project:
//! <https://docs.emqx.com/en/emqx/latest/emqx-ai/mcp-over-mqtt/specification.html>, the
//! revision read against MCP 2025-06-18; implemented by `mqtt-ai/paho-mcp-over-mqtt` and
//! `mqtt-ai/esp-mcp-over-mqtt`). A device is an MCP *server*: its MQTT client id is the
//! `server-id` (the device id), and it offers a `server-name` (a `/`-separated type path such as
//! `devices/demo-board`):
//!
//! | topic | who publishes | what |
//! |---|---|---|
//! | `$mcp-server/presence/{server-id}/{server-name}` | the device, **retained** | `notifications/server/online` ([`write_online`]); an empty payload (also the will) when it goes. The device listens to it too ([`PresenceGuard`]) |
//! | `$mcp-server/{server-id}/{server-name}` | clients | control: `initialize`, the sender's id in the `MCP-MQTT-CLIENT-ID` user property |
//! | `$mcp-rpc/{mcp-client-id}/{server-id}/{server-name}` | both (subscribe with *No Local*) | every other request, response and notification of that client's session |
//! | `$mcp-server/capability/{server-id}/{server-name}` | the device | `notifications/*/list_changed`, `notifications/resources/updated` ([`route`]) |
//! | `$mcp-client/presence/{mcp-client-id}` | the client (also its will) | `notifications/disconnected` ([`is_disconnected`]) |
//! | `$mcp-client/capability/{mcp-client-id}` | the client | the client's `list_changed` notifications |
//!
//! MQTT 5 with QoS 1 for everything, session expiry 0, and the user properties
//! `MCP-COMPONENT-TYPE: mcp-server` ([`COMPONENT_TYPE`], [`SERVER_COMPONENT`]) on CONNECT and on
//! every PUBLISH, with `MCP-MQTT-CLIENT-ID` ([`MQTT_CLIENT_ID`]) on every PUBLISH.
//!
//! A client discovers every device on a broker by subscribing to `$mcp-server/presence/+/#`
//! ([`PRESENCE_FILTER`]): the broker hands it each device's retained presence, and every later
//! arrival and departure ([`ServerTopics::from_presence`], [`parse_presence`]).
//!
//! **Why this one.** The design (`docs/DESIGN.md`, "Peers and protocol revisions") keeps wire
//! compatibility with xiaozhi where the peer is a xiaozhi backend, and MCP for every other client. xiaozhi's MQTT control channel carries the
//! very envelope of its WebSocket (`{"session_id":…,"type":"mcp","payload":…}`,
//! [`super::xiaozhi`]) on the one publish topic its OTA answer configures, for the one backend the
//! device belongs to: it has no presence, no discovery and no per-client topics, so a fleet client
//! could not find devices through it, and nothing in it needs a helper beyond the envelope that
//! already exists. EMQX's convention is the published one that has what a fleet needs: retained
//! presence with a will for discovery, and a topic per client session so that the broker's ACLs
//! and the device can tell clients apart. A firmware on a xiaozhi backend keeps using
//! [`super::xiaozhi`] over MQTT; one on a fleet broker uses this module.
//!
//! # Retransmissions
//! The `mcp-client-id` in the RPC topic names the session: [`ClientId::peer`] is the
//! [`Peer`] to hand the engine ([`Input::peer`](crate::Input::peer)), so a request redelivered
//! by QoS 1 (or sent again by the client after a reconnect, on the same topic) is answered from
//! the first answer instead of running twice, and two clients that both use `id: 1` never see
//! each other's answers.
//!
//! # For firmware authors
//! The firmware owns the MQTT client and one engine. It needs an MQTT **5** client that can set a
//! will, user properties (on CONNECT and PUBLISH, and read them on an incoming PUBLISH: the
//! `initialize` names its sender only there), the No Local subscription option and a Maximum
//! Packet Size. On each connection: subscribe to [`ServerTopics::control`] and to every client's
//! RPC topic with this server ([`ServerTopics::rpc_filter`], No Local), subscribe again to the
//! two topics of every client session it keeps ([`ServerTopics::client_presence`],
//! [`ServerTopics::client_capability`]: the broker forgot them with the old connection), then
//! publish [`write_online`] retained on [`ServerTopics::presence`], then subscribe to that
//! presence topic (No Local). For each message, [`ServerTopics::parse`] the topic, ask
//! [`Sessions`] whose session it is, hand the payload to the engine with [`ClientId::peer`] and
//! that session, and publish the answer (QoS 1) on that client's RPC topic; report it delivered
//! when its PUBACK arrives. `mcp_host::mqtt` (in `examples/mcp-host`) is this loop on a
//! host, `examples/mqtt-device` on a firmware (no_std, no allocator).
//!
//! # An open broker
//! The convention has no authentication of its own: on a broker without access rules any client
//! may publish on any topic, and the `MCP-MQTT-CLIENT-ID` user property that names an
//! `initialize`'s sender is whatever the sender wrote. And the control topic stays open to every
//! client even under access rules: that is where a client starts. A server therefore
//!
//! - keeps its client sessions in [`Sessions`]: an `initialize` makes no session and holds no
//!   place — it is answered, and what it declared is noted for a short time ([`HALF_OPEN_MS`]);
//!   a client's session is made when it first speaks on its own RPC topic
//!   (`notifications/initialized` follows every `initialize`). So a flood of `initialize`,
//!   with invented ids or naming a real client, never refuses, ends nor delays a real client,
//!   however slow its handshake (at worst it crowds out the note of what that client
//!   declared); a full table of sessions refuses a newcomer ([`write_busy`], [`Busy::Full`])
//!   and gives a place only when a session has been idle long;
//! - subscribes to every client's RPC topic with it at once ([`ServerTopics::rpc_filter`], No
//!   Local), so that an `initialize` costs no subscription: the presence and capability
//!   topics of a client are subscribed once it spoke on its RPC topic;
//! - listens to its own presence topic and puts its presence back when another client clears
//!   or overwrites it ([`PresenceGuard`], at most once every [`PRESENCE_RESTORE_MS`]).
//!
//! What it cannot do on an open broker: tell a client from someone who uses its id. Anyone may
//! publish on `$mcp-rpc/{id}/…` (so "completed its handshake" means that *someone* spoke there,
//! and a flood that does so keeps its places until idle for long) and send
//! `notifications/disconnected` on `$mcp-client/presence/{id}` (the server then ends that
//! client's session, as it must when the client's will says so). Nor does it hear a forged
//! presence larger than the Maximum Packet Size it gave the broker: an MQTT 5 broker drops such a
//! message for it without a word, so that forgery stays until the device next connects. Those
//! are the broker's to prevent, with access rules that bind a client id to its own topics — a
//! client writes only `$mcp-rpc/{its id}/…` and `$mcp-client/*/{its id}`, a server only its own
//! presence and capability topics and its side of the RPC topics — over client ids the broker
//! authenticates. `docs/AUTH.md` ("MQTT: who may publish where") has such a mosquitto ACL file,
//! tested on mosquitto (`examples/mqtt-fleet/tests/hostile.rs`): under it a forged id can
//! neither complete a handshake nor end a session, and the presence cannot be touched. The
//! control topic stays open, so an `initialize` may still name a known client's id: the server
//! answers it on that client's RPC topic and keeps the client's session as it was until the
//! client itself completes a new handshake.
//!
//! # Untrusted input
//! Topic names come from the broker and client ids from peers. Every id and name is checked
//! ([`check_id`], [`check_server_name`]) before it is put into a topic, logged or echoed: at
//! most [`MAX_ID_LEN`] / [`MAX_SERVER_NAME_LEN`] bytes of printable ASCII, never `+` or `#` (MQTT
//! wildcards: a subscription built from `a/+` would reach other devices) and, in an id, never
//! `/` (a client named `x/dev-2/devices` would otherwise address another device's topics).
//!
//! ```
//! use mcp_core::transport::mqtt::{ClientId, Incoming, ServerTopics};
//!
//! let me = ServerTopics::new("dev-0001", "devices/demo-board").unwrap();
//! let mut buf = [0u8; 128];
//! assert_eq!(me.presence(&mut buf).unwrap(), "$mcp-server/presence/dev-0001/devices/demo-board");
//!
//! // A request arrives on a client's RPC topic: who sent it?
//! let topic = "$mcp-rpc/c0ffee/dev-0001/devices/demo-board";
//! let Some(Incoming::Rpc(client)) = me.parse(topic) else { panic!() };
//! assert_eq!(client.as_str(), "c0ffee");
//! // The answer goes back on the same topic.
//! assert_eq!(me.rpc(client, &mut buf).unwrap(), topic);
//! // Another device's topics, and injected wildcards, are not ours.
//! assert_eq!(me.parse("$mcp-rpc/c0ffee/dev-0002/devices/demo-board"), None);
//! assert!(ClientId::new("a/+").is_err());
//! ```

mod sessions;

pub use sessions::{HALF_OPEN_MS, Id, Opened, Sessions, Spoke, owned};

use crate::server::Peer;
use crate::wire::json::{DEFAULT_MAX_DEPTH, Json, JsonStr, MAX_DEPTH_LIMIT};
use crate::wire::protocol::{self, join};
use crate::wire::request::Message;
use crate::wire::writer::Writer;

/// The longest `server-id` or `mcp-client-id` (bytes). A UUID is 36; MQTT 3.1.1 brokers only
/// promise 23-byte client ids, MQTT 5 brokers accept more.
pub const MAX_ID_LEN: usize = 64;
/// The longest `server-name` (bytes).
pub const MAX_SERVER_NAME_LEN: usize = 128;
/// The longest topic these helpers build: an RPC topic with the longest ids and name. A buffer of
/// this size holds any of them.
pub const MAX_TOPIC_LEN: usize =
    RPC_PREFIX.len() + MAX_ID_LEN + 1 + MAX_ID_LEN + 1 + MAX_SERVER_NAME_LEN;

/// What clients subscribe to in order to discover every server on the broker: each one's
/// retained presence, then every arrival and departure.
pub const PRESENCE_FILTER: &str = "$mcp-server/presence/+/#";

/// The user property naming the sender's role, on CONNECT and on every PUBLISH.
pub const COMPONENT_TYPE: &str = "MCP-COMPONENT-TYPE";
/// [`COMPONENT_TYPE`] of a server (a device).
pub const SERVER_COMPONENT: &str = "mcp-server";
/// [`COMPONENT_TYPE`] of a client.
pub const CLIENT_COMPONENT: &str = "mcp-client";
/// The user property carrying the sender's MQTT client id on every PUBLISH; on the control topic
/// it is the only place a server learns who sent an `initialize`.
pub const MQTT_CLIENT_ID: &str = "MCP-MQTT-CLIENT-ID";
/// The user property with the component's metadata (a JSON object) on CONNECT.
pub const META: &str = "MCP-META";
/// The user property with which a broker may tell a server (in CONNACK) which `server-name` to
/// use.
pub const SUGGESTED_SERVER_NAME: &str = "MCP-SERVER-NAME";

/// The notification a client publishes on its presence topic (and sets as its will) when it
/// goes, and either side may send on the RPC topic to end one session.
pub const DISCONNECTED: &str = r#"{"jsonrpc":"2.0","method":"notifications/disconnected"}"#;

/// The presence payload of a server that went offline: empty (it clears the retained message).
pub const OFFLINE: &[u8] = b"";

const SERVER_PREFIX: &str = "$mcp-server/";
const PRESENCE_PREFIX: &str = "$mcp-server/presence/";
const CAPABILITY_PREFIX: &str = "$mcp-server/capability/";
const RPC_PREFIX: &str = "$mcp-rpc/";
const CLIENT_PRESENCE_PREFIX: &str = "$mcp-client/presence/";
const CLIENT_CAPABILITY_PREFIX: &str = "$mcp-client/capability/";

/// Why an id or a server name cannot be used in a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum NameError {
    /// Empty, or (a server name) with an empty level: `a//b`, `/a`, `a/`.
    #[error("empty, or an empty topic level")]
    Empty,
    /// Longer than [`MAX_ID_LEN`] or [`MAX_SERVER_NAME_LEN`] bytes.
    #[error("too long")]
    TooLong,
    /// A character other than printable ASCII (`!` to `~`), an MQTT wildcard (`+`, `#`), or (in
    /// an id) a level separator `/`.
    #[error("a wildcard, a level separator, or a character that is not printable ASCII")]
    BadChar,
    /// A server id that would make its control topic read as another topic (`presence`,
    /// `capability`).
    #[error("a server id that collides with a topic of the convention")]
    Reserved,
}

/// The caller's buffer is too small for the topic or payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[error("buffer too small: {needed} bytes needed")]
pub struct BufferTooSmall {
    /// The bytes the output needs.
    pub needed: usize,
}

/// Checks a `server-id` or `mcp-client-id`: 1 to [`MAX_ID_LEN`] bytes of printable ASCII other
/// than space, `/`, `+` and `#`. (The specification allows any string without `/`, `+`, `#`;
/// a device refuses the rest too, because it repeats ids in topics and logs.)
pub fn check_id(id: &str) -> Result<(), NameError> {
    if id.is_empty() {
        return Err(NameError::Empty);
    }
    if id.len() > MAX_ID_LEN {
        return Err(NameError::TooLong);
    }
    if id.bytes().all(|b| plain(b) && b != b'/') {
        Ok(())
    } else {
        Err(NameError::BadChar)
    }
}

/// Checks a `server-name`: 1 to [`MAX_SERVER_NAME_LEN`] bytes, levels separated by `/`, each
/// level non-empty printable ASCII other than space, `+` and `#`.
pub fn check_server_name(name: &str) -> Result<(), NameError> {
    if name.len() > MAX_SERVER_NAME_LEN {
        return Err(NameError::TooLong);
    }
    for level in name.split('/') {
        if level.is_empty() {
            return Err(NameError::Empty);
        }
        if !level.bytes().all(plain) {
            return Err(NameError::BadChar);
        }
    }
    Ok(())
}

/// Printable ASCII without space and the MQTT wildcards.
const fn plain(b: u8) -> bool {
    matches!(b, b'!'..=b'~') && b != b'+' && b != b'#'
}

/// An MQTT client id a peer named, checked ([`check_id`]): safe to put into a topic, a log line
/// or an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClientId<'a>(&'a str);

impl<'a> ClientId<'a> {
    /// Checks `id` ([`check_id`]).
    pub fn new(id: &'a str) -> Result<Self, NameError> {
        check_id(id).map(|()| ClientId(id))
    }

    /// Checks an id that arrived as bytes (an MQTT user property's value).
    pub fn from_bytes(id: &'a [u8]) -> Result<Self, NameError> {
        // The check admits ASCII only; anything else fails it either way.
        let text = core::str::from_utf8(id).map_err(|_| NameError::BadChar)?;
        Self::new(text)
    }

    /// The id.
    pub const fn as_str(&self) -> &'a str {
        self.0
    }

    /// The engine's peer for this client's session: the scope of its retransmissions
    /// ([`Input::peer`](crate::Input::peer)).
    pub fn peer(&self) -> Peer {
        Peer::named(self.0.as_bytes())
    }
}

/// Where a message arrived, relative to one server ([`ServerTopics::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Incoming<'t> {
    /// The server's control topic: an `initialize` (or another control message). The sender's
    /// id is in the [`MQTT_CLIENT_ID`] user property, not the topic.
    Control,
    /// A client's RPC topic with this server: a request, a notification or a response of that
    /// client's session.
    Rpc(ClientId<'t>),
    /// A client's presence topic: [`is_disconnected`] tells whether it left.
    ClientPresence(ClientId<'t>),
    /// A client's capability topic (its `list_changed` notifications).
    ClientCapability(ClientId<'t>),
    /// The server's own presence topic ([`ServerTopics::presence`]): a server that subscribes to
    /// it (with No Local) hears another client clear or overwrite its retained presence, and puts
    /// its own back ([`PresenceGuard`]).
    Presence,
}

/// One server's identity on the broker — its `server-id` and `server-name`, both checked — and
/// the topics built from them.
///
/// Topics are written into the caller's buffer ([`MAX_TOPIC_LEN`] bytes always suffice) and
/// returned as `&str` borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ServerTopics<'a> {
    id: &'a str,
    name: &'a str,
}

impl<'a> ServerTopics<'a> {
    /// A server `server_id` (its MQTT client id: for a device, the device id) offering
    /// `server_name`. Both are checked ([`check_id`], [`check_server_name`]); a server id of
    /// `presence` or `capability` is refused, since its control topic would read as a presence
    /// or capability topic.
    pub fn new(server_id: &'a str, server_name: &'a str) -> Result<Self, NameError> {
        check_id(server_id)?;
        if server_id == "presence" || server_id == "capability" {
            return Err(NameError::Reserved);
        }
        check_server_name(server_name)?;
        Ok(ServerTopics {
            id: server_id,
            name: server_name,
        })
    }

    /// The server named by a presence topic (`$mcp-server/presence/{server-id}/{server-name}`),
    /// as a client sees it during discovery; `None` for another topic or an id or name that does
    /// not pass the checks.
    pub fn from_presence(topic: &'a str) -> Option<Self> {
        let (id, name) = topic.strip_prefix(PRESENCE_PREFIX)?.split_once('/')?;
        Self::new(id, name).ok()
    }

    /// The `server-id`.
    pub const fn server_id(&self) -> &'a str {
        self.id
    }

    /// The `server-name`.
    pub const fn server_name(&self) -> &'a str {
        self.name
    }

    /// `$mcp-server/{server-id}/{server-name}`: where clients send `initialize`.
    pub fn control<'o>(&self, out: &'o mut [u8]) -> Result<&'o str, BufferTooSmall> {
        join(out, &[SERVER_PREFIX, self.id, "/", self.name])
    }

    /// `$mcp-server/presence/{server-id}/{server-name}`: the retained presence, and the will.
    pub fn presence<'o>(&self, out: &'o mut [u8]) -> Result<&'o str, BufferTooSmall> {
        join(out, &[PRESENCE_PREFIX, self.id, "/", self.name])
    }

    /// `$mcp-server/capability/{server-id}/{server-name}`: list-changed and resource-updated
    /// notifications.
    pub fn capability<'o>(&self, out: &'o mut [u8]) -> Result<&'o str, BufferTooSmall> {
        join(out, &[CAPABILITY_PREFIX, self.id, "/", self.name])
    }

    /// `$mcp-rpc/{mcp-client-id}/{server-id}/{server-name}`: one client's session with this
    /// server, both directions.
    pub fn rpc<'o>(
        &self,
        client: ClientId<'_>,
        out: &'o mut [u8],
    ) -> Result<&'o str, BufferTooSmall> {
        join(out, &[RPC_PREFIX, client.0, "/", self.id, "/", self.name])
    }

    /// `$mcp-rpc/+/{server-id}/{server-name}`: every client's RPC topic with this server, to
    /// subscribe to once (with No Local): a client's first message there — the one that
    /// makes its session — reaches the server without a subscription of its own, so an
    /// `initialize` costs none ([`Sessions`]).
    pub fn rpc_filter<'o>(&self, out: &'o mut [u8]) -> Result<&'o str, BufferTooSmall> {
        join(out, &[RPC_PREFIX, "+/", self.id, "/", self.name])
    }

    /// `$mcp-client/presence/{mcp-client-id}`: a server subscribes to it for each client it
    /// serves, to learn when the client goes.
    pub fn client_presence<'o>(
        &self,
        client: ClientId<'_>,
        out: &'o mut [u8],
    ) -> Result<&'o str, BufferTooSmall> {
        join(out, &[CLIENT_PRESENCE_PREFIX, client.0])
    }

    /// `$mcp-client/capability/{mcp-client-id}`: the client's list-changed notifications.
    pub fn client_capability<'o>(
        &self,
        client: ClientId<'_>,
        out: &'o mut [u8],
    ) -> Result<&'o str, BufferTooSmall> {
        join(out, &[CLIENT_CAPABILITY_PREFIX, client.0])
    }

    /// What an incoming topic is to this server; `None` for a topic that is not one of its own
    /// (another server's, a malformed one, a client id that fails [`check_id`]).
    pub fn parse<'t>(&self, topic: &'t str) -> Option<Incoming<'t>> {
        if let Some(server) = topic.strip_prefix(PRESENCE_PREFIX) {
            return self.is_me(server).then_some(Incoming::Presence);
        }
        if let Some(client) = topic.strip_prefix(CLIENT_PRESENCE_PREFIX) {
            return ClientId::new(client).ok().map(Incoming::ClientPresence);
        }
        if let Some(client) = topic.strip_prefix(CLIENT_CAPABILITY_PREFIX) {
            return ClientId::new(client).ok().map(Incoming::ClientCapability);
        }
        if let Some(rest) = topic.strip_prefix(RPC_PREFIX) {
            let (client, server) = rest.split_once('/')?;
            let client = ClientId::new(client).ok()?;
            return self.is_me(server).then_some(Incoming::Rpc(client));
        }
        let server = topic.strip_prefix(SERVER_PREFIX)?;
        self.is_me(server).then_some(Incoming::Control)
    }

    /// `{server-id}/{server-name}` is this server.
    fn is_me(&self, s: &str) -> bool {
        s.split_once('/')
            .is_some_and(|(id, name)| id == self.id && name == self.name)
    }
}

/// Writes `parts` one after the other into `out`.
fn join<'o>(out: &'o mut [u8], parts: &[&str]) -> Result<&'o str, BufferTooSmall> {
    let needed = parts.iter().map(|p| p.len()).sum();
    let dst = out.get_mut(..needed).ok_or(BufferTooSmall { needed })?;
    let mut at = 0;
    for part in parts {
        if let Some(d) = dst.get_mut(at..at + part.len()) {
            d.copy_from_slice(part.as_bytes());
        }
        at += part.len();
    }
    // Whole `&str`s were copied: the bytes are UTF-8.
    core::str::from_utf8(dst).map_err(|_| BufferTooSmall { needed })
}

/// Writes the retained presence payload of a server that comes online:
/// `{"jsonrpc":"2.0","method":"notifications/server/online","params":{"server_name":…,
/// "description":…,"meta":…}}`. `description` says briefly what the device offers (the
/// specification asks for a short one: clients read tool details with `tools/list`); `meta`
/// (permissions, a firmware version, …) is written when it is a JSON object. Returns the length.
///
/// ```
/// use mcp_core::transport::mqtt::write_online;
/// let mut out = [0u8; 160];
/// let n = write_online(&mut out, "devices/lamp", "A lamp", None).unwrap();
/// assert_eq!(
///     &out[..n],
///     br#"{"jsonrpc":"2.0","method":"notifications/server/online","params":{"server_name":"devices/lamp","description":"A lamp"}}"#
/// );
/// ```
pub fn write_online(
    out: &mut [u8],
    server_name: &str,
    description: &str,
    meta: Option<Json<'_>>,
) -> Result<usize, BufferTooSmall> {
    let mut w = Writer::new(out);
    w.raw(protocol::SERVER_ONLINE_NOTIFICATION);
    w.string(server_name);
    w.raw(protocol::DESCRIPTION);
    w.string(description);
    if let Some(meta) = meta.filter(|m| m.members().is_some()) {
        w.raw(protocol::META);
        w.raw(meta.raw());
    }
    w.raw(b"}}");
    if w.fits() {
        Ok(w.needed())
    } else {
        Err(BufferTooSmall { needed: w.needed() })
    }
}

/// A presence message, as a client reads it during discovery ([`parse_presence`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Presence<'p> {
    /// `notifications/server/online`: the server is there.
    Online {
        /// `params.server_name`, if it is a string.
        server_name: Option<JsonStr<'p>>,
        /// `params.description`, if it is a string.
        description: Option<JsonStr<'p>>,
    },
    /// An empty payload: the server left (or its will was published).
    Offline,
}

/// Reads a payload from a server presence topic; `None` for anything that is neither an online
/// notification nor empty.
pub fn parse_presence(payload: &[u8]) -> Option<Presence<'_>> {
    if payload.is_empty() {
        return Some(Presence::Offline);
    }
    let Ok(Message::Notification { method, params }) = Message::parse(payload, DEFAULT_MAX_DEPTH)
    else {
        return None;
    };
    if !method.eq_str("notifications/server/online") {
        return None;
    }
    let (mut server_name, mut description) = (None, None);
    for (k, v) in params.and_then(|p| p.members()).into_iter().flatten() {
        if k.eq_str("server_name") {
            server_name = v.as_str();
        } else if k.eq_str("description") {
            description = v.as_str();
        }
    }
    Some(Presence::Online {
        server_name,
        description,
    })
}

/// `true` when a payload from a client presence (or RPC) topic says the client left:
/// `notifications/disconnected` ([`DISCONNECTED`]), or an empty payload (a cleared retained
/// message).
pub fn is_disconnected(payload: &[u8]) -> bool {
    payload.is_empty()
        || matches!(
            Message::parse(payload, DEFAULT_MAX_DEPTH),
            Ok(Message::Notification { method, .. }) if method.eq_str("notifications/disconnected")
        )
}

/// `true` when `payload` is `notifications/initialized`: the message with which a client
/// completes its handshake ([`Sessions::spoke`]).
pub fn is_initialized(payload: &[u8]) -> bool {
    matches!(
        Message::parse(payload, DEFAULT_MAX_DEPTH),
        Ok(Message::Notification { method, .. }) if method.eq_str("notifications/initialized")
    )
}

/// The JSON-RPC error code of [`write_busy`]: -32000, from the range JSON-RPC leaves to servers.
pub const BUSY_CODE: i32 = -32000;

/// Why a server does not serve a client's message in a session ([`write_busy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Busy {
    /// Every one of its `sessions` client sessions is in use, and none may be replaced.
    Full {
        /// The client sessions the server holds.
        sessions: usize,
    },
}

/// Writes the refusal of a request that a server does not serve in a session (an `initialize`
/// on the control topic, or a client's first message on its RPC topic, when every place is in
/// use), to publish on
/// that client's RPC topic, with the request's id echoed byte for byte:
///
/// - [`Busy::Full`]: `{"jsonrpc":"2.0","id":…,"error":{"code":-32000,"message":"Device busy: all N client sessions are in use; try again later"}}`.
///
/// Returns the length, 0 when `request` is not a request (a notification or a message that does
/// not parse is not answered).
///
/// ```
/// use mcp_core::transport::mqtt::{Busy, write_busy};
/// let mut out = [0u8; 160];
/// let req = br#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#;
/// let n = write_busy(&mut out, req, Busy::Full { sessions: 4 }).unwrap();
/// assert!(out[..n].starts_with(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"#));
/// ```
pub fn write_busy(out: &mut [u8], request: &[u8], why: Busy) -> Result<usize, BufferTooSmall> {
    // As deep as the checker can follow: the id of a request nested deeper than an engine reads
    // is still echoed.
    let Ok(Message::Request(req)) = Message::parse(request, MAX_DEPTH_LIMIT) else {
        return Ok(0);
    };
    let mut w = Writer::new(out);
    w.raw(protocol::RESPONSE_HEAD);
    w.raw(req.id.raw());
    w.raw(protocol::ERROR_OPEN);
    w.int(i64::from(BUSY_CODE));
    match why {
        Busy::Full { sessions } => {
            w.raw(join!(protocol::MESSAGE, br#""Device busy: all "#));
            w.uint(u64::try_from(sessions).unwrap_or(u64::MAX));
            w.raw(b" client sessions are in use; try again later");
        }
    }
    w.raw(br#""}}"#);
    if w.fits() {
        Ok(w.needed())
    } else {
        Err(BufferTooSmall { needed: w.needed() })
    }
}

/// The least time between two restorations of a server's presence ([`PresenceGuard`]), in
/// milliseconds: a peer that keeps clearing it, or a second device configured with the same
/// topics, cannot make the server publish in a loop.
pub const PRESENCE_RESTORE_MS: u64 = 1000;

/// Keeps a server's retained presence its own.
///
/// On an open broker any client may publish on `$mcp-server/presence/{server-id}/{server-name}`:
/// an empty retained message removes the device from every client's discovery, another online
/// message shows it as something else. A server that subscribes to its own presence topic (with
/// No Local, after it published its presence: the broker then hands back nothing of its own)
/// tells this guard each message it hears there ([`heard`](Self::heard)); whatever is not byte
/// for byte its own online presence makes the presence *stale*, and [`due`](Self::due) says when
/// to publish it again (retained): at once, then at most once every [`PRESENCE_RESTORE_MS`], the
/// last one always following the last message heard. A server that leaves on purpose clears its
/// presence itself and stops listening first.
///
/// ```
/// use mcp_core::transport::mqtt::{PresenceGuard, PRESENCE_RESTORE_MS};
/// let online = br#"{"jsonrpc":"2.0","method":"notifications/server/online","params":{}}"#;
/// let mut guard = PresenceGuard::new();
/// guard.published(0);
/// guard.heard(online, online); // its own (a broker without No Local): nothing to do
/// assert!(!guard.due(2_000));
/// guard.heard(b"", online); // cleared
/// assert!(guard.due(2_000));
/// guard.heard(b"{}", online); // forged at once: waits its turn
/// assert!(!guard.due(2_500));
/// assert_eq!(guard.next_ms(), Some(2_000 + PRESENCE_RESTORE_MS));
/// assert!(guard.due(3_000));
/// assert!(!guard.due(9_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PresenceGuard {
    stale: bool,
    /// When the server last published its presence.
    published: Option<u64>,
}

impl PresenceGuard {
    /// Nothing heard, nothing published.
    pub const fn new() -> Self {
        PresenceGuard {
            stale: false,
            published: None,
        }
    }

    /// The server published its online presence at `now_ms` (on connecting, or because
    /// [`due`](Self::due) said so): it is its own again.
    pub fn published(&mut self, now_ms: u64) {
        self.stale = false;
        self.published = Some(now_ms);
    }

    /// A message on the server's own presence topic ([`Incoming::Presence`]); `online` is the
    /// presence the server publishes. The last message heard decides: stale unless it is
    /// `online`, byte for byte. Returns whether the presence is stale now.
    pub fn heard(&mut self, payload: &[u8], online: &[u8]) -> bool {
        self.stale = payload != online;
        self.stale
    }

    /// When the presence is stale, the time at which [`due`](Self::due) will say so; `None`
    /// when it is not.
    pub fn next_ms(&self) -> Option<u64> {
        self.stale.then(|| {
            self.published
                .map_or(0, |at| at.saturating_add(PRESENCE_RESTORE_MS))
        })
    }

    /// Whether to publish the presence (retained) now: it is stale, and the last publication
    /// was at least [`PRESENCE_RESTORE_MS`] ago. When `true`, it counts as published at
    /// `now_ms`.
    pub fn due(&mut self, now_ms: u64) -> bool {
        match self.next_ms() {
            Some(at) if now_ms >= at => {
                self.published(now_ms);
                true
            }
            _ => false,
        }
    }
}

/// Which topic a message the engine emitted goes to ([`route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Route {
    /// The RPC topic of the client it concerns: responses, progress, task status, log messages.
    Rpc,
    /// The server's capability topic ([`ServerTopics::capability`]), for every client:
    /// `notifications/{tools,resources,prompts}/list_changed` and
    /// `notifications/resources/updated`.
    Capability,
}

/// Where a message from [`Server::poll`](crate::Server::poll) (or a handler's notification) is
/// published: capability changes and resource updates on the capability topic, as the
/// convention says; everything else on a client's RPC topic.
pub fn route(msg: &[u8]) -> Route {
    match Message::parse(msg, DEFAULT_MAX_DEPTH) {
        Ok(Message::Notification { method, .. })
            if method.eq_str("notifications/resources/updated")
                || method.eq_str("notifications/tools/list_changed")
                || method.eq_str("notifications/resources/list_changed")
                || method.eq_str("notifications/prompts/list_changed") =>
        {
            Route::Capability
        }
        _ => Route::Rpc,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn topics() -> ServerTopics<'static> {
        ServerTopics::new("dev-0001", "devices/demo-board").unwrap()
    }

    #[test]
    fn every_topic_of_the_convention() {
        let me = topics();
        let c = ClientId::new("5f0b42").unwrap();
        let mut b = [0u8; MAX_TOPIC_LEN];
        assert_eq!(
            me.control(&mut b).unwrap(),
            "$mcp-server/dev-0001/devices/demo-board"
        );
        assert_eq!(
            me.presence(&mut b).unwrap(),
            "$mcp-server/presence/dev-0001/devices/demo-board"
        );
        assert_eq!(
            me.capability(&mut b).unwrap(),
            "$mcp-server/capability/dev-0001/devices/demo-board"
        );
        assert_eq!(
            me.rpc(c, &mut b).unwrap(),
            "$mcp-rpc/5f0b42/dev-0001/devices/demo-board"
        );
        assert_eq!(
            me.rpc_filter(&mut b).unwrap(),
            "$mcp-rpc/+/dev-0001/devices/demo-board"
        );
        // A client's RPC topic matches the filter: one level for the client, and never the
        // wildcard itself as a client (`+` is no id).
        assert!(me.parse("$mcp-rpc/+/dev-0001/devices/demo-board").is_none());
        assert_eq!(
            me.client_presence(c, &mut b).unwrap(),
            "$mcp-client/presence/5f0b42"
        );
        assert_eq!(
            me.client_capability(c, &mut b).unwrap(),
            "$mcp-client/capability/5f0b42"
        );
    }

    #[test]
    fn parse_round_trips_what_the_server_builds() {
        let me = topics();
        let c = ClientId::new("client-1").unwrap();
        let mut b = [0u8; MAX_TOPIC_LEN];
        assert_eq!(
            me.parse(me.control(&mut b).unwrap()),
            Some(Incoming::Control)
        );
        assert_eq!(me.parse(me.rpc(c, &mut b).unwrap()), Some(Incoming::Rpc(c)));
        assert_eq!(
            me.parse(me.client_presence(c, &mut b).unwrap()),
            Some(Incoming::ClientPresence(c))
        );
        assert_eq!(
            me.parse(me.client_capability(c, &mut b).unwrap()),
            Some(Incoming::ClientCapability(c))
        );
        // Its own presence topic is heard (another client may clear or forge it); its
        // capability topic is not input, nor another server's presence.
        assert_eq!(
            me.parse(me.presence(&mut b).unwrap()),
            Some(Incoming::Presence)
        );
        assert_eq!(me.parse(me.capability(&mut b).unwrap()), None);
        assert_eq!(
            me.parse("$mcp-server/presence/dev-0002/devices/demo-board"),
            None
        );
        assert_eq!(
            me.parse("$mcp-server/presence/dev-0001/devices/demo-board/x"),
            None
        );
        assert_eq!(
            me.rpc(c, &mut b).unwrap().len(),
            "$mcp-rpc/client-1/dev-0001/devices/demo-board".len()
        );
    }

    #[test]
    fn other_servers_and_malformed_topics_are_not_ours() {
        let me = topics();
        for t in [
            "$mcp-server/dev-0002/devices/demo-board",
            "$mcp-server/dev-0001/devices/demo",
            "$mcp-server/dev-0001/devices/demo-board/x",
            "$mcp-server/dev-0001",
            "$mcp-server/",
            "$mcp-rpc/c/dev-0002/devices/demo-board",
            "$mcp-rpc/c/dev-0001/devices/demo-board/more",
            "$mcp-rpc/dev-0001/devices/demo-board",
            "$mcp-rpc//dev-0001/devices/demo-board",
            "$mcp-rpc/+/dev-0001/devices/demo-board",
            "$mcp-rpc/#",
            "$mcp-client/presence/",
            "$mcp-client/presence/a/b",
            "$mcp-client/presence/+",
            "$mcp-client/capability/#",
            "mcp-server/dev-0001/devices/demo-board",
            "",
        ] {
            assert_eq!(me.parse(t), None, "{t}");
        }
        // A client id that would read as `{client}/{server}/…` cannot be formed: `/` is refused.
        assert_eq!(ClientId::new("c/dev-0001/devices"), Err(NameError::BadChar));
    }

    #[test]
    fn ids_and_names_are_checked() {
        assert_eq!(check_id(""), Err(NameError::Empty));
        assert_eq!(check_id(&"x".repeat(MAX_ID_LEN)), Ok(()));
        assert_eq!(
            check_id(&"x".repeat(MAX_ID_LEN + 1)),
            Err(NameError::TooLong)
        );
        for bad in [
            "a+b",
            "a#",
            "a/b",
            "a b",
            "a\nb",
            "a\u{0}b",
            "é",
            "a\u{202e}",
        ] {
            assert_eq!(check_id(bad), Err(NameError::BadChar), "{bad:?}");
        }
        assert_eq!(check_id("98e0d91c-7f4b-4ee8-bbd4-917a26e76586"), Ok(()));
        assert_eq!(check_id("cc:ba:97:04:92:94"), Ok(()));
        assert_eq!(check_server_name("a/b/c"), Ok(()));
        for bad in ["", "/a", "a/", "a//b"] {
            assert_eq!(check_server_name(bad), Err(NameError::Empty), "{bad:?}");
        }
        for bad in ["a/+", "a/#", "a b", "devices/\u{7f}"] {
            assert_eq!(check_server_name(bad), Err(NameError::BadChar), "{bad:?}");
        }
        assert_eq!(
            check_server_name(&"x".repeat(MAX_SERVER_NAME_LEN + 1)),
            Err(NameError::TooLong)
        );
        assert_eq!(
            ServerTopics::new("presence", "a").err(),
            Some(NameError::Reserved)
        );
        assert_eq!(
            ServerTopics::new("capability", "a").err(),
            Some(NameError::Reserved)
        );
        assert_eq!(
            ClientId::from_bytes(b"\xff\xfe").err(),
            Some(NameError::BadChar)
        );
        assert_eq!(ClientId::from_bytes(b"ok").unwrap().as_str(), "ok");
    }

    #[test]
    fn the_longest_topic_fits_max_topic_len_and_a_short_buffer_says_so() {
        let id = "i".repeat(MAX_ID_LEN);
        let name = "n".repeat(MAX_SERVER_NAME_LEN);
        let me = ServerTopics::new(&id, &name).unwrap();
        let c = ClientId::new(&id).unwrap();
        let mut b = [0u8; MAX_TOPIC_LEN];
        assert_eq!(me.rpc(c, &mut b).unwrap().len(), MAX_TOPIC_LEN);
        let mut small = [0u8; 10];
        assert_eq!(
            me.control(&mut small),
            Err(BufferTooSmall {
                needed: "$mcp-server/".len() + MAX_ID_LEN + 1 + MAX_SERVER_NAME_LEN
            })
        );
    }

    #[test]
    fn discovery_reads_presence_topics_and_payloads() {
        let s = ServerTopics::from_presence("$mcp-server/presence/dev-7/devices/lamp").unwrap();
        assert_eq!((s.server_id(), s.server_name()), ("dev-7", "devices/lamp"));
        for bad in [
            "$mcp-server/presence/dev-7",
            "$mcp-server/presence//devices/lamp",
            "$mcp-server/presence/dev-7/",
            "$mcp-server/presence/presence/x",
            "$mcp-server/dev-7/devices/lamp",
        ] {
            assert_eq!(ServerTopics::from_presence(bad), None, "{bad}");
        }
        let mut out = [0u8; 256];
        let meta = Json::parse(br#"{"firmware":"1.2"}"#, DEFAULT_MAX_DEPTH).unwrap();
        let n = write_online(&mut out, "devices/lamp", "A \"lamp\"", Some(meta)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["params"]["description"], "A \"lamp\"");
        assert_eq!(v["params"]["meta"]["firmware"], "1.2");
        match parse_presence(&out[..n]) {
            Some(Presence::Online {
                server_name: Some(name),
                description: Some(_),
            }) => assert!(name.eq_str("devices/lamp")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse_presence(OFFLINE), Some(Presence::Offline)));
        assert!(parse_presence(b"{}").is_none());
        assert!(
            parse_presence(br#"{"jsonrpc":"2.0","id":1,"method":"notifications/server/online"}"#)
                .is_none()
        );
        // Meta that is not an object is left out; a buffer too small is an error, not a cut.
        let arr = Json::parse(b"[1]", DEFAULT_MAX_DEPTH).unwrap();
        let n = write_online(&mut out, "a", "b", Some(arr)).unwrap();
        assert!(!out[..n].windows(4).any(|w| w == b"meta"));
        assert!(write_online(&mut [0u8; 20], "a", "b", None).is_err());
    }

    #[test]
    fn client_departures_and_routes() {
        assert!(is_disconnected(DISCONNECTED.as_bytes()));
        assert!(is_disconnected(b""));
        assert!(!is_disconnected(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        assert!(!is_disconnected(b"garbage"));
        assert_eq!(
            route(br#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x"}}"#),
            Route::Capability
        );
        assert_eq!(
            route(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#),
            Route::Capability
        );
        assert_eq!(
            route(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#),
            Route::Rpc
        );
        assert_eq!(
            route(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Route::Rpc
        );
        assert_eq!(route(b"not json"), Route::Rpc);
    }

    #[test]
    fn a_full_device_refuses_with_the_request_id() {
        let mut out = [0u8; 256];
        let n = write_busy(
            &mut out,
            br#"{"jsonrpc":"2.0","id":"a\"b","method":"initialize","params":{}}"#,
            Busy::Full { sessions: 16 },
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["id"], "a\"b");
        assert_eq!(v["error"]["code"], BUSY_CODE);
        assert_eq!(
            v["error"]["message"],
            "Device busy: all 16 client sessions are in use; try again later"
        );
        // Nothing to answer: a notification, garbage.
        let full = Busy::Full { sessions: 1 };
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(write_busy(&mut out, note, full), Ok(0));
        assert_eq!(write_busy(&mut out, b"{", full), Ok(0));
        // Too small a buffer is an error, never a cut answer.
        let req = br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#;
        assert!(write_busy(&mut [0u8; 40], req, full).is_err());
    }

    #[test]
    fn initialized_is_recognized() {
        assert!(is_initialized(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        assert!(!is_initialized(
            br#"{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}"#
        ));
        assert!(!is_initialized(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#
        ));
    }

    #[test]
    fn a_presence_not_its_own_is_restored_at_most_once_a_second() {
        let online = br#"{"jsonrpc":"2.0","method":"notifications/server/online","params":{}}"#;
        let mut g = PresenceGuard::new();
        // Heard before anything was published (a retained message on subscribing): at once.
        assert!(g.heard(b"", online));
        assert_eq!(g.next_ms(), Some(0));
        assert!(g.due(0));
        assert!(!g.due(0));
        // Its own (a broker that ignores No Local echoes it): nothing to do.
        assert!(!g.heard(online, online));
        assert_eq!(g.next_ms(), None);
        // Cleared and forged within the second: the one restoration waits its turn, and a
        // forgery undone by someone else's exact copy needs none.
        assert!(g.heard(b"x", online));
        assert!(!g.due(999));
        assert!(g.due(1_000));
        g.heard(b"", online);
        g.heard(online, online);
        assert!(!g.due(5_000));
        // Connecting publishes it: nothing stale, and the next restoration a second later.
        g.heard(b"", online);
        g.published(10_000);
        assert!(!g.due(10_000));
        g.heard(b"", online);
        assert_eq!(g.next_ms(), Some(11_000));
    }

    #[test]
    fn peers_follow_the_client_id() {
        let a = ClientId::new("a").unwrap();
        assert_eq!(a.peer(), ClientId::new("a").unwrap().peer());
        assert_ne!(a.peer(), ClientId::new("b").unwrap().peer());
        assert_ne!(a.peer(), Peer::ONLY);
    }
}
