//! TLS on the firmware (feature `tls`): the roots compiled in, the clock certificates are
//! checked against, the RNG, the buffers, and [`Link`] — one connection type for the plain and
//! the TLS case, so the WebSocket, HTTP and MQTT code is built once.
//!
//! The TLS client itself is `device_link::tls` (embedded-tls for TLS 1.3, rustls-webpki for the
//! chain, RustCrypto for the signatures), the same code `cargo test -p device-link --features
//! tls` runs against a rustls server on the host.
//!
//! **The clock.** A certificate's dates need the time, and the C3 has no battery-backed clock.
//! [`sntp`] asks `NTP_SERVER` (default `pool.ntp.org`) at boot and every hour; a reply must
//! answer the request's random nonce and may not be earlier than the firmware's build
//! (`BUILD_UNIX_SECS`). An `https://` OTA answer's `server_time` (from a server whose
//! certificate verified) sets it too. **Before it has a time the device makes no TLS
//! connection**: each attempt fails at once (`no clock yet`) and is retried with the usual
//! backoff; plain `ws://`/`mqtt://`/`http://` are not held up.

use core::cell::Cell;

use critical_section::Mutex;
use device_link::tls::{Buffers, Der, Failure, MAX_RECORD, Peer, TlsStream, TrustAnchor};
use device_link::url::Host;
use embassy_net::Stack;
use embassy_net::udp::{PacketMetadata, UdpSocket};
use embassy_time::{Duration, Instant, Timer, with_timeout};
use embedded_io_async::{ErrorType, Read, Write};

use crate::config::Sizes;

include!(concat!(env!("OUT_DIR"), "/roots.rs"));

/// The firmware's build time: the clock never believes an earlier one.
const BUILD_UNIX_SECS: u64 = parse_u64(env!("BUILD_UNIX_SECS"));

/// The SNTP server (`NTP_SERVER` at build time).
const NTP_SERVER: &str = build_env!("NTP_SERVER", "pool.ntp.org");

const fn parse_u64(s: &str) -> u64 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n: u64 = 0;
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as u64;
        i += 1;
    }
    n
}

/// The time: seconds since 1970 at a moment of the uptime clock.
static CLOCK: Mutex<Cell<Option<(u64, Instant)>>> = Mutex::new(Cell::new(None));

/// Seconds since 1970, once the clock was set.
pub fn now() -> Option<u64> {
    let (secs, at) = critical_section::with(|cs| CLOCK.borrow(cs).get())?;
    Some(secs + (Instant::now() - at).as_secs())
}

/// Sets the clock to `unix_secs`, unless that is before the firmware's build.
pub fn set_clock(unix_secs: u64) {
    if unix_secs >= BUILD_UNIX_SECS {
        critical_section::with(|cs| CLOCK.borrow(cs).set(Some((unix_secs, Instant::now()))));
    }
}

/// The SNTP client: sets the clock at boot (every 10 s until it has a time), then every hour.
#[embassy_executor::task]
pub async fn sntp(stack: Stack<'static>) {
    let mut rx_meta = [PacketMetadata::EMPTY; 2];
    let mut tx_meta = [PacketMetadata::EMPTY; 2];
    let mut rx = [0u8; 128];
    let mut tx = [0u8; 64];
    loop {
        stack.wait_config_up().await;
        let ok = ask(stack, &mut rx_meta, &mut tx_meta, &mut rx, &mut tx).await;
        if !ok {
            esp_println::println!("sntp: no time from {} yet", NTP_SERVER);
        }
        Timer::after(Duration::from_secs(if ok { 3600 } else { 10 })).await;
    }
}

async fn ask(
    stack: Stack<'static>,
    rx_meta: &mut [PacketMetadata],
    tx_meta: &mut [PacketMetadata],
    rx: &mut [u8],
    tx: &mut [u8],
) -> bool {
    let host = match device_link::url::Url::parse(NTP_SERVER) {
        // A bare name or address: parse it as the host of a URL.
        Ok(u) => u.host,
        Err(_) => match NTP_SERVER.parse() {
            Ok(a) => Host::Ipv4(a),
            Err(_) => Host::Name(NTP_SERVER),
        },
    };
    let Some(addr) = crate::net::resolve(stack, host).await else {
        return false;
    };
    let mut socket = UdpSocket::new(stack, rx_meta, rx, tx_meta, tx);
    if socket.bind(0).is_err() {
        return false;
    }
    let nonce = crate::random();
    let request = device_link::sntp::request(nonce);
    if socket
        .send_to(&request, (addr, device_link::sntp::PORT))
        .await
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 96];
    let got = with_timeout(Duration::from_secs(5), async {
        loop {
            let Ok((n, _)) = socket.recv_from(&mut buf).await else {
                return None;
            };
            let reply = buf.get(..n).unwrap_or_default();
            if let Ok(r) = device_link::sntp::Reply::parse(reply, nonce, BUILD_UNIX_SECS) {
                return Some(r.unix_secs);
            }
        }
    })
    .await;
    match got {
        Ok(Some(secs)) => {
            set_clock(secs);
            true
        }
        _ => false,
    }
}

/// The hardware RNG (a true RNG while the radio runs) as embedded-tls wants it.
pub struct HwRng;

impl rand_core::RngCore for HwRng {
    fn next_u32(&mut self) -> u32 {
        crate::random() as u32
    }

    fn next_u64(&mut self) -> u64 {
        crate::random()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let r = crate::random().to_le_bytes();
            for (d, s) in chunk.iter_mut().zip(r) {
                *d = s;
            }
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for HwRng {}

/// One connection's TLS buffers (about 35 KiB), lent by the task that connects.
pub struct TlsBuffers {
    incoming: [u8; MAX_RECORD],
    record: [u8; MAX_RECORD],
    outgoing: [u8; Sizes::TLS_OUTGOING],
}

impl TlsBuffers {
    /// Zeroed buffers.
    pub const fn new() -> Self {
        TlsBuffers {
            incoming: [0; MAX_RECORD],
            record: [0; MAX_RECORD],
            outgoing: [0; Sizes::TLS_OUTGOING],
        }
    }

    /// The firmware's one set (one connection at a time: the mode built connects once after
    /// another).
    ///
    /// # Panics
    /// Called a second time: the set is already lent.
    pub fn take() -> &'static mut TlsBuffers {
        static BUFFERS: static_cell::StaticCell<TlsBuffers> = static_cell::StaticCell::new();
        BUFFERS.init(TlsBuffers::new())
    }

    fn lend(&mut self) -> Buffers<'_> {
        Buffers {
            incoming: &mut self.incoming,
            record: &mut self.record,
            outgoing: &mut self.outgoing,
        }
    }
}

/// A connection: plain TCP, or TLS over it.
pub enum Link<'b, S: Read + Write> {
    /// `ws://`, `mqtt://`, `http://`.
    Plain(S),
    /// `wss://`, `mqtts://`, `https://`.
    Tls(TlsStream<'b, S>),
}

/// Why a link was not opened (a log line says it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No time yet: certificates cannot be checked.
    NoClock,
    /// The TLS handshake or the certificate failed.
    Tls(Failure),
}

impl core::fmt::Display for Refused {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refused::NoClock => f.write_str("no clock yet (SNTP), no TLS"),
            Refused::Tls(why) => write!(f, "{why}"),
        }
    }
}

impl<'b, S: Read + Write> Link<'b, S> {
    /// `io` as it is (`tls` false), or a TLS session over it with `host`'s certificate checked
    /// against [`ROOTS`] at [`now`].
    ///
    /// # Errors
    /// No time yet, or the handshake failed (why: [`Failure`]).
    pub async fn open(
        io: S,
        tls: bool,
        host: Host<'_>,
        buffers: &'b mut TlsBuffers,
    ) -> Result<Self, Refused> {
        if !tls {
            return Ok(Link::Plain(io));
        }
        let now = now().ok_or(Refused::NoClock)?;
        let peer = Peer {
            host,
            roots: ROOTS,
            now_unix_secs: now,
        };
        TlsStream::connect(io, buffers.lend(), &peer, HwRng)
            .await
            .map(Link::Tls)
            .map_err(Refused::Tls)
    }
}

impl<S: Read + Write> ErrorType for Link<'_, S> {
    type Error = Failure;
}

/// A plain stream's error as a [`Failure`]: its kind.
fn io(e: impl embedded_io_async::Error) -> Failure {
    Failure::Io(e.kind())
}

impl<S: Read + Write> Read for Link<'_, S> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Failure> {
        match self {
            Link::Plain(s) => s.read(buf).await.map_err(io),
            Link::Tls(t) => t.read(buf).await,
        }
    }
}

impl<S: Read + Write> Write for Link<'_, S> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Failure> {
        match self {
            Link::Plain(s) => s.write(buf).await.map_err(io),
            Link::Tls(t) => t.write(buf).await,
        }
    }

    async fn flush(&mut self) -> Result<(), Failure> {
        match self {
            Link::Plain(s) => s.flush().await.map_err(io),
            Link::Tls(t) => t.flush().await,
        }
    }
}
