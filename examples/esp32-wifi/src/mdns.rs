//! Discovery on the LAN (feature `mdns`): an mDNS responder that answers DNS-SD queries for
//! `_mcp._tcp` with this board's Streamable HTTP endpoint, so that a client on the network finds
//! it without knowing its address.
//!
//! The responder is edge-mdns (no_std, no allocation) on an embassy-net UDP socket through
//! edge-nal-embassy, bound to port 5353 and joined to 224.0.0.251 (IPv4 only, as the network
//! stack here). It answers, for the instance `esp32-wifi-XXXXXX` (the MAC address's last three
//! bytes):
//!
//! - PTR `_services._dns-sd._udp.local` → `_mcp._tcp.local` (service enumeration);
//! - PTR `_mcp._tcp.local` → `esp32-wifi-XXXXXX._mcp._tcp.local`;
//! - SRV → `esp32-wifi-XXXXXX.local`, port 80 ([`config::http::PORT`]);
//! - TXT `path=/mcp`, `proto=` the newest revision `initialize` negotiates, `version=` this
//!   firmware's version, and `auth=bearer` when it was built with `MCP_TOKEN` (the same keys as
//!   device-sim's `--mdns`);
//! - A `esp32-wifi-XXXXXX.local` → the DHCP address.
//!
//! It announces once when it starts and otherwise answers queries (legacy unicast queries, from
//! a port other than 5353, privately). A new DHCP address restarts it on that address. A
//! malformed query is skipped by edge-mdns; a socket error restarts the responder after a pause.

use core::fmt::Write as _;
use core::net::{Ipv4Addr, Ipv6Addr};

use edge_mdns::HostAnswersMdnsHandler;
use edge_mdns::buf::VecBufAccess;
use edge_mdns::domain::base::Ttl;
use edge_mdns::host::{Host, Service, ServiceAnswers};
use edge_mdns::io::{self, IPV4_DEFAULT_SOCKET};
use edge_nal::UdpSplit;
use edge_nal_embassy::{Udp, UdpBuffers};
use embassy_futures::select::select;
use embassy_net::Stack;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::signal::Signal;
use embassy_time::{Duration, Timer};
use static_cell::StaticCell;

use crate::config::Sizes;
use crate::config::http::PORT;
use crate::config::mdns::*;

/// One UDP socket's buffers (one packet each way in flight).
type Buffers = UdpBuffers<1, { Sizes::MDNS_MESSAGE }, { Sizes::MDNS_MESSAGE }, 2>;

static UDP_BUFFERS: StaticCell<Buffers> = StaticCell::new();

/// `NAME_PREFIX` and the MAC address's last three bytes in hex: a DNS label.
fn name(mac: [u8; 6]) -> heapless::String<32> {
    let mut name = heapless::String::new();
    let [.., a, b, c] = mac;
    let _ = write!(name, "{NAME_PREFIX}{a:02x}{b:02x}{c:02x}");
    name
}

/// The host name the responder answers for, with `.local` (`esp32-wifi-a1b2c3.local`).
pub fn local_name(mac: [u8; 6]) -> heapless::String<40> {
    let mut local = heapless::String::new();
    let _ = write!(local, "{}.local", name(mac));
    local
}

/// Runs the responder for as long as the device runs.
#[embassy_executor::task]
pub async fn run(stack: Stack<'static>, mac: [u8; 6]) {
    let name = name(mac);
    let udp = Udp::new(stack, UDP_BUFFERS.init(Buffers::new()));
    let recv_buf = VecBufAccess::<NoopRawMutex, { Sizes::MDNS_MESSAGE }>::new();
    let send_buf = VecBufAccess::<NoopRawMutex, { Sizes::MDNS_MESSAGE }>::new();
    // Nothing changes the answers while the responder runs (a new address restarts it).
    let changed = Signal::<NoopRawMutex, ()>::new();
    let all = [
        ("path", "/mcp"),
        ("proto", mcp_core::Revision::LATEST.as_str()),
        ("version", env!("CARGO_PKG_VERSION")),
        ("auth", "bearer"),
    ];
    // `auth=bearer` only when the endpoint wants a token (`MCP_TOKEN`).
    let txt = match crate::http::TOKEN {
        Some(_) => &all[..],
        None => all.split_last().map_or(&all[..], |(_, rest)| rest),
    };
    let service = Service {
        name: &name,
        priority: 0,
        weight: 0,
        service: "_mcp",
        protocol: "_tcp",
        port: PORT,
        service_subtypes: &[],
        txt_kvs: txt,
    };
    loop {
        stack.wait_config_up().await;
        let Some(ip) = stack.config_v4().map(|c| c.address.address()) else {
            Timer::after(Duration::from_secs(RESTART_SECS)).await;
            continue;
        };
        let host = Host {
            hostname: &name,
            ipv4: ip,
            ipv6: Ipv6Addr::UNSPECIFIED,
            ttl: Ttl::from_secs(TTL_SECS),
        };
        let answers = ServiceAnswers::new(&host, &service);
        let respond = async {
            let mut socket =
                io::bind(&udp, IPV4_DEFAULT_SOCKET, Some(Ipv4Addr::UNSPECIFIED), None).await?;
            let (recv, send) = socket.split();
            let mdns = io::Mdns::<_, _, _, _, _, NoopRawMutex>::new(
                Some(Ipv4Addr::UNSPECIFIED),
                None,
                recv,
                send,
                &recv_buf,
                &send_buf,
                esp_hal::rng::Rng::new(),
                &changed,
            );
            mdns.run(HostAnswersMdnsHandler::new(answers)).await
        };
        // Ends when the socket fails or the address changes; either way, start again.
        let _ = select(respond, address_changed(stack, ip)).await;
        Timer::after(Duration::from_secs(RESTART_SECS)).await;
    }
}

/// Resolves when the stack's IPv4 address is no longer `ip` (a new lease, or none).
async fn address_changed(stack: Stack<'static>, ip: Ipv4Addr) {
    loop {
        Timer::after(Duration::from_secs(ADDRESS_CHECK_SECS)).await;
        if stack.config_v4().map(|c| c.address.address()) != Some(ip) {
            return;
        }
    }
}
