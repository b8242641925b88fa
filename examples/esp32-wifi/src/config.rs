//! The firmware's sizes ([`Caps`], [`Sizes`]) and the link's limits and timings: the one place
//! to edit for another network. The board's wiring and parts — the same board as
//! `examples/esp32-serial` — are `examples/esp-shared/wiring.rs`, included here as [`wiring`]
//! and re-exported.

#[path = "../../esp-shared/wiring.rs"]
pub mod wiring;
pub(crate) use wiring::board_pins;
pub use wiring::*;

// ---- Memory ---------------------------------------------------------------------------------

/// The engine's capacities; with [`Sizes`], the firmware's whole memory.
pub type Caps = mcp_core::caps!(
    tools = 8, // 6 used
    // None: every action on this board confirms within the call (the relay's 20 ms settle
    // time is awaited inside it).
    tasks = 0,
    // Answers remembered for retransmissions. The engine lives as long as the firmware, so a
    // call the backend sends again after a reconnect (same session) is answered from them
    // instead of running twice.
    cache = 4,
    cache_bytes = 384, // each: this board's action results take 260 to 300 with a short id
    // No live resources, listen streams nor held calls: this firmware uses none, so they cost
    // no RAM, though mcp-core's default features are on.
    resources = 0,
    listen = 0,
    hold = 0
);

/// The firmware's memory beside the engine's ([`Caps`]): the buffers of the engine and of the
/// mode built (one connection's at a time), the network's socket slots and the heaps.
/// Everything else it keeps is a few words; the modes' timings are in their modules below.
pub struct Sizes;

impl Sizes {
    /// The largest MCP message accepted (an HTTP body; the payload of a xiaozhi envelope or of
    /// an MQTT message).
    pub const LINE: usize = 2048;
    /// The response buffer: a `tools/list` page or the largest tool result.
    pub const OUT: usize = 3072;
    /// The `tools/list` page budget.
    pub const PAGE_BYTES: usize = 2048;
    /// embassy-net's socket slots: DHCP, the one TCP socket of the mode built (the HTTP
    /// listener, the WebSocket client or the MQTT client), and one spare; with the feature
    /// `mdns` one more, the responder's UDP socket; in the outbound modes one more, DNS; with
    /// `tls` one more, SNTP.
    pub const SOCKETS: usize = if cfg!(feature = "tls") {
        5
    } else if cfg!(feature = "mdns")
        || cfg!(any(
            feature = "xiaozhi",
            feature = "mqtt",
            feature = "endpoint"
        ))
    {
        4
    } else {
        3
    };
    /// Heap for the Wi-Fi driver (esp-radio wants about 50 KiB; the region in the RAM the
    /// bootloader used is reclaimed for it). The MCP engine allocates nothing: mcp-core is
    /// built without its `alloc` feature and links no `alloc` at all.
    pub const WIFI_HEAP_RECLAIMED: usize = 64 * 1024;
    /// More heap for the Wi-Fi driver, in ordinary RAM.
    pub const WIFI_HEAP: usize = 32 * 1024;
    /// With the feature `tls`: heap for a handshake (RSA's big integers, the server's
    /// certificate kept for its signature; a few KiB at a time).
    #[cfg(feature = "tls")]
    pub const TLS_HEAP: usize = 24 * 1024;
    /// With the feature `tls`: a connection's buffer of outgoing records (plaintext up to this
    /// less 128 bytes each); two records of `device_link::tls::MAX_RECORD` come in.
    #[cfg(feature = "tls")]
    pub const TLS_OUTGOING: usize = 2048;
    /// HTTP mode: the TCP socket's receive and send buffers (bytes each).
    #[cfg(not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")))]
    pub const HTTP_TCP_BUFFER: usize = 1536;
    /// HTTP mode: the request head (request line and headers) must fit here, else 431.
    #[cfg(not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")))]
    pub const HTTP_HEAD: usize = 1024;
    /// HTTP mode: headers per request; a request with more is refused with 431 (never read
    /// partly: a header past the limit could be the `Origin` the checks must see).
    #[cfg(not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")))]
    pub const HTTP_HEADERS: usize = 24;
    /// The mDNS responder (feature `mdns`): the largest message received or sent (bytes; an
    /// Ethernet MTU's UDP payload).
    #[cfg(feature = "mdns")]
    pub const MDNS_MESSAGE: usize = 1472;
    /// The WebSocket link (features `xiaozhi`, `endpoint`): the TCP socket's receive and send
    /// buffers (bytes each).
    #[cfg(any(feature = "xiaozhi", feature = "endpoint"))]
    pub const WS_TCP_BUFFER: usize = 2048;
    /// The WebSocket link: the largest message the peer may send, fragments reassembled, and
    /// so the largest frame: an MCP payload of [`LINE`](Self::LINE) bytes (in xiaozhi's
    /// envelope, with a session id of up to 128 characters, escaped). A larger text or binary
    /// message closes the connection with 1009 "message too big" (then the client reconnects).
    #[cfg(any(feature = "xiaozhi", feature = "endpoint"))]
    pub const WS_MESSAGE: usize = Self::LINE + 512;
    /// xiaozhi's OTA/config check: the longest WebSocket URL it may hand out.
    #[cfg(feature = "xiaozhi")]
    pub const OTA_URL: usize = 256;
    /// xiaozhi's OTA/config check: the longest token (bytes).
    #[cfg(feature = "xiaozhi")]
    pub const OTA_TOKEN: usize = 512;
    /// MQTT mode: the TCP socket's receive and send buffers (bytes each).
    #[cfg(feature = "mqtt")]
    pub const MQTT_TCP_BUFFER: usize = 2048;
    /// MQTT mode: the largest packet the broker may send the device (MQTT 5 Maximum Packet
    /// Size; the broker drops larger messages for it): an MCP message of [`LINE`](Self::LINE)
    /// bytes, its topic (up to 267 bytes) and the user properties. Each incoming packet's
    /// fields are read into a buffer of this size.
    #[cfg(feature = "mqtt")]
    pub const MQTT_PACKET: usize = Self::LINE + 512;
    /// MQTT mode: client sessions served at once (at most `mqtt_device::MAX_CLIENTS`): clients
    /// that spoke on their RPC topic. A new client beyond them takes the place of one idle for
    /// [`mqtt::CLIENT_IDLE`], or is refused "busy".
    #[cfg(feature = "mqtt")]
    pub const MQTT_CLIENTS: usize = 4;
    /// MQTT mode: `initialize`s noted at once (what each declared, for [`mqtt::HALF_OPEN`],
    /// until its client speaks on its RPC topic; about 90 bytes each). An `initialize` alone
    /// makes no session, so a flood of forged ones never refuses, ends nor delays a real
    /// client; at F forged a second a real client's note lasts `MQTT_NOTES / F` seconds (0.8 s
    /// at ten a second), and past it the client is still served, as one that declared nothing.
    #[cfg(feature = "mqtt")]
    pub const MQTT_NOTES: usize = 8;
}

/// The JSON nesting limit (nesting costs the engine no stack).
pub const MAX_DEPTH: u8 = 128;

/// Streamable HTTP server mode (the default).
#[cfg(not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")))]
pub mod http {
    use embassy_time::Duration;

    /// The TCP port.
    pub const PORT: u16 = 80;
    /// One deadline for a whole request head, counted from the moment the server waits for it
    /// (after the accept, or after the previous response on a kept-alive connection): a client
    /// that sends nothing, or trickles its head, loses the connection after this long. There is
    /// one connection at a time, so this is how long a slow client can hold the device.
    pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
    /// One deadline for a whole body (after the head): 408 and close when it passes.
    pub const BODY_TIMEOUT: Duration = Duration::from_secs(5);
    /// One deadline for writing a response (a client that does not read loses the connection);
    /// also the TCP timeout of unacknowledged data.
    pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
}

/// The mDNS/DNS-SD responder (feature `mdns`, with the HTTP mode).
#[cfg(feature = "mdns")]
pub mod mdns {
    /// The instance and host name's prefix; the last three bytes of the station's MAC address
    /// follow in hex (`esp32-wifi-a1b2c3`: instance `esp32-wifi-a1b2c3._mcp._tcp.local.`, host
    /// `esp32-wifi-a1b2c3.local`), so that boards on one network do not collide.
    pub const NAME_PREFIX: &str = "esp32-wifi-";
    /// The TTL of the answers (s). RFC 6762 recommends 120 s for records naming a host.
    pub const TTL_SECS: u32 = 120;
    /// How often the address is checked; a new DHCP lease restarts the responder on it (s).
    pub const ADDRESS_CHECK_SECS: u64 = 5;
    /// Pause after a responder error (the socket failed), before it starts again (s).
    pub const RESTART_SECS: u64 = 1;
}

/// The WebSocket link of the outbound modes (features `xiaozhi`, `endpoint`): its timings.
#[cfg(any(feature = "xiaozhi", feature = "endpoint"))]
pub mod ws {
    use embassy_time::Duration;

    /// The longest a TCP connect may take.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// The longest the TLS handshake and the WebSocket upgrade (request out, `101` head in) may
    /// take: a peer that accepts TCP but never upgrades is abandoned.
    pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
    /// A WebSocket ping goes out after this long without hearing from the peer, and again
    /// every this long while it stays silent.
    pub const PING_INTERVAL: Duration = Duration::from_secs(15);
    /// A peer silent this long (no pong, no message, no ping) is a dead link; a send that
    /// cannot complete within it (the peer stopped reading) is one too. Also the TCP timeout
    /// of unacknowledged data.
    pub const DEAD_AFTER: Duration = Duration::from_secs(45);
    /// A frame that has begun must arrive whole within this long (a trickle is a dead link).
    pub const FRAME_TIMEOUT: Duration = Duration::from_secs(10);
    /// How long a close frame (ours, or the echo of the peer's) may take to go out.
    pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
}

/// xiaozhi WebSocket client mode (feature `xiaozhi`): reconnection, the backend's hello, the
/// OTA/config check (the link itself: [`ws`]).
#[cfg(feature = "xiaozhi")]
pub mod xiaozhi {
    use embassy_time::Duration;

    /// The first wait before reconnecting; it doubles with every failed attempt...
    pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
    /// ...up to this. Each wait is drawn between half of it and all of it from the hardware RNG
    /// ("equal jitter"), so that devices that lost their backend together do not return
    /// together. Every connection that ends without the backend's hello counts as a failed
    /// attempt (one the backend accepted and closed too); only a connection that got the hello
    /// resets the count.
    pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
    /// How long the backend's hello may take, from the device's: without it, the device closes
    /// the connection and connects again (`mcp_core::transport::xiaozhi::HELLO_TIMEOUT_MS`, 10 s,
    /// as xiaozhi-esp32 waits).
    pub const HELLO_TIMEOUT: Duration =
        Duration::from_millis(mcp_core::transport::xiaozhi::HELLO_TIMEOUT_MS as u64);
    /// The OTA/config check (`XIAOZHI_OTA_URL`): the longest one check may take (DNS apart).
    pub const OTA_TIMEOUT: Duration = Duration::from_secs(10);
    /// The wait before checking again while the device is not bound, or after a check failed.
    pub const OTA_RETRY: Duration = Duration::from_secs(5);
}

/// MCP endpoint mode (feature `endpoint`): when to connect again is mcp-core's
/// `transport::endpoint::Policy` (1 s doubling to 30 s; a refused token every few minutes; a
/// replaced link backs off), the link itself [`ws`].
#[cfg(feature = "endpoint")]
pub mod endpoint {
    /// The tools the link offers when `MCP_ENDPOINT_TOOLS` is not set at build time: every tool
    /// of the board.
    pub const ALL_TOOLS: &str = "*";
}

/// MQTT mode (feature `mqtt`): the device's identity on the broker, its limits and timings.
#[cfg(feature = "mqtt")]
pub mod mqtt {
    use embassy_time::Duration;

    /// The `server-name` when `MQTT_SERVER_NAME` is not set at build time: a `/`-separated type
    /// path that clients discover in the presence topic.
    pub const SERVER_NAME: &str = "devices/esp32-wifi";
    /// The description in the presence message (short: clients read the tools with
    /// `tools/list`).
    pub const DESCRIPTION: &str =
        "An ESP32 board: speaker volume, screen brightness and theme, a relay";
    /// How long a client session must have been idle before a new client may take its place
    /// (one of [`Sizes::MQTT_CLIENTS`](super::Sizes::MQTT_CLIENTS)).
    pub const CLIENT_IDLE: Duration = Duration::from_secs(600);
    /// How long what an `initialize` declared is noted (one of
    /// [`Sizes::MQTT_NOTES`](super::Sizes::MQTT_NOTES)).
    pub const HALF_OPEN: Duration = Duration::from_secs(10);
    /// The MQTT keep-alive: a PINGREQ after half of it without traffic; a broker silent for all
    /// of it is a dead link. Also the TCP timeout of unacknowledged data.
    pub const KEEP_ALIVE: Duration = Duration::from_secs(30);
    /// The longest the TCP connect and the CONNACK may take.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    /// A packet whose header came must arrive whole, and a publish must go out, within this.
    pub const PACKET_TIMEOUT: Duration = Duration::from_secs(10);
    /// How often the engine is polled for what it owes (resource updates, task status) while
    /// the link is quiet.
    pub const POLL_INTERVAL: Duration = Duration::from_millis(50);
    /// The first wait before reconnecting; it doubles with every failed attempt...
    pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
    /// ...up to this. Each wait is drawn between half of it and all of it from the hardware RNG
    /// ("equal jitter"). A connection that got its CONNACK resets the count.
    pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
    /// How long the RST of a failed connection may take to go out.
    pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
}
