//! Where the outbound modes connect: the URL set at build time, checked by `device_link::Url`
//! (the same rules `build.rs` applies, so a URL the firmware could not use fails the build), and
//! its host resolved through embassy-net's DNS (the DHCP lease's servers) before every
//! connection attempt. This stack is IPv4 only: a name resolves to its first A record.

use device_link::url::Host;
use embassy_net::dns::DnsQueryType;
use embassy_net::{IpAddress, Stack};

/// The address of `host`: an IPv4 address as it is, a name through DNS; `None` when the name
/// does not resolve (or for an IPv6 address, which this stack cannot reach).
pub async fn resolve(stack: Stack<'_>, host: Host<'_>) -> Option<IpAddress> {
    match host {
        Host::Ipv4(a) => Some(IpAddress::Ipv4(a)),
        Host::Name(name) => stack
            .dns_query(name, DnsQueryType::A)
            .await
            .ok()?
            .first()
            .copied(),
        _ => None,
    }
}
