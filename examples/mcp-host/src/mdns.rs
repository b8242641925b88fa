//! Discovery on the LAN: a DNS-SD advertisement of a Streamable HTTP endpoint over mDNS.
//!
//! A client browses `_mcp._tcp.local.`, resolves an instance to a host, a port and TXT
//! attributes, and connects to `http://ADDRESS:PORT` + the TXT `path`. [`Advert::start`]
//! registers one such instance with the pure-Rust `mdns-sd` responder (its own thread; no
//! async runtime needed) and [`Advert::stop`] withdraws it with goodbye packets (TTL 0), so
//! that browsers drop it at once instead of when its records expire.
//!
//! ## TXT keys (RFC 6763 section 6: small, lower-case, one `key=value` per string)
//!
//! | key | value | why a client wants it |
//! |---|---|---|
//! | `path` | the endpoint's path, e.g. `/mcp` | the URL is `http://ADDRESS:PORT` + `path` |
//! | `proto` | the newest revision `initialize` negotiates, e.g. `2025-11-25` | what to offer without a round trip |
//! | `version` | the serving software's version | tell firmware builds apart |
//! | `auth` | `bearer`, only when the endpoint wants a token ([`Service::auth`]) | expect a 401 and where to look (its protected-resource metadata) |
//!
//! ## What the advertisement makes this device's own
//!
//! A client connects to an address it resolved, or to the SRV target's name, and puts that in
//! `Host`. [`Advert::hosts`] lists them all — the `.local` name and every advertised address —
//! for the HTTP server's Host rule, so that what the resolver returns is never refused as "not
//! this device". With an unspecified listener the addresses are the interfaces' at
//! [`Advert::start`]; an address an interface gets later is advertised by the responder but not
//! in that list (restart, or name it yourself).
//!
//! ## Where it is announced
//!
//! The interfaces follow the address the HTTP listener is bound to, so that the advertisement
//! never names an address nobody can connect to:
//!
//! | listener | mDNS on | address in the A/AAAA records |
//! |---|---|---|
//! | `127.0.0.1:PORT` (any 127/8) | the IPv4 loopback interface only | that address |
//! | `[::1]:PORT` | the IPv6 loopback interface only | `::1` |
//! | `0.0.0.0:PORT` | every IPv4 interface, loopback included | each interface's own |
//! | `[::]:PORT` | every interface | each interface's own |
//! | one address | the interface that has it | that address |
//!
//! A loopback advertisement is heard by browsers on the same machine that browse on loopback
//! too (mdns-sd: `enable_interface(IfKind::LoopbackV4)` after `disable_interface(IfKind::All)`).
//! Linux delivers it even though `lo` has no `MULTICAST` flag (checked on kernel 6.x).
//!
//! The responder opens its sockets on every interface before the selection above applies: a
//! loopback-only advertisement still joins the mDNS group on the other interfaces for a moment
//! (an IGMP/MLD report), though it sends nothing there. device-sim's test runs in a network
//! namespace of its own, where `lo` is the only interface.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use mdns_sd::{IfKind, ServiceDaemon, ServiceInfo, UnregisterStatus};

/// The DNS-SD service type of an MCP endpoint.
pub const SERVICE_TYPE: &str = "_mcp._tcp.local.";

/// How long [`Advert::stop`] waits for the responder to send its goodbye.
const GOODBYE_WAIT: Duration = Duration::from_secs(2);

/// What to advertise: one Streamable HTTP endpoint.
#[derive(Debug, Clone)]
pub struct Service<'a> {
    /// The instance name users see (`device-sim-8080`); UTF-8, at most 63 bytes.
    pub instance: &'a str,
    /// The address the HTTP listener is bound to (after binding: the real port).
    pub bound: SocketAddr,
    /// The endpoint's path (`/mcp`): TXT `path`.
    pub path: &'a str,
    /// The newest revision `initialize` negotiates: TXT `proto`.
    pub proto: &'a str,
    /// The serving software's version: TXT `version`.
    pub version: &'a str,
    /// How a client authorizes, when the endpoint wants it: TXT `auth` (`"bearer"`: a bearer
    /// token in `Authorization`, pre-shared or from an OAuth authorization server). `None`
    /// (open endpoint): no `auth` key.
    pub auth: Option<&'a str>,
}

/// Why an advertisement could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The instance name is empty or longer than a DNS label (63 bytes).
    BadInstance,
    /// The listener's port is 0 (not bound yet).
    NoPort,
    /// The responder refused (could not start its thread, an invalid record, …).
    Responder(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadInstance => {
                f.write_str("mDNS: the instance name must be 1 to 63 bytes of UTF-8")
            }
            Error::NoPort => f.write_str("mDNS: the listener has no port yet"),
            Error::Responder(e) => write!(f, "mDNS: {e}"),
        }
    }
}

impl std::error::Error for Error {}

/// A running advertisement. Withdraw it with [`stop`](Advert::stop); dropping it without
/// stopping shuts the responder down without waiting for the goodbye to go out.
pub struct Advert {
    daemon: ServiceDaemon,
    fullname: String,
    host: String,
    addresses: Vec<IpAddr>,
}

impl fmt::Debug for Advert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Advert")
            .field("fullname", &self.fullname)
            .field("host", &self.host)
            .field("addresses", &self.addresses)
            .finish_non_exhaustive()
    }
}

impl Advert {
    /// Starts the responder on the interfaces that `service.bound` serves (see the module docs)
    /// and registers the instance; the responder probes for the name, then announces it.
    pub fn start(service: &Service<'_>) -> Result<Advert, Error> {
        if service.instance.is_empty() || service.instance.len() > 63 {
            return Err(Error::BadInstance);
        }
        let port = service.bound.port();
        if port == 0 {
            return Err(Error::NoPort);
        }
        let host = host_label(service.instance, port);
        let mut txt = vec![
            ("path", service.path),
            ("proto", service.proto),
            ("version", service.version),
        ];
        if let Some(auth) = service.auth {
            txt.push(("auth", auth));
        }
        let ip = service.bound.ip();
        let responder = |e: mdns_sd::Error| Error::Responder(e.to_string());
        let daemon = ServiceDaemon::new().map_err(responder)?;
        // The daemon begins with every interface; keep only those the listener serves. Commands
        // run in order, so nothing is announced before this takes effect.
        let (kinds, addrs): (Vec<IfKind>, Vec<IpAddr>) = match ip {
            IpAddr::V4(v4) if v4.is_loopback() => (vec![IfKind::LoopbackV4], vec![ip]),
            IpAddr::V6(v6) if v6.is_loopback() => (vec![IfKind::LoopbackV6], vec![ip]),
            IpAddr::V4(v4) if v4.is_unspecified() => (vec![IfKind::IPv4], vec![]),
            IpAddr::V6(v6) if v6.is_unspecified() => (vec![IfKind::All], vec![]),
            _ => (vec![IfKind::Addr(ip)], vec![ip]),
        };
        let started = (|| {
            daemon.disable_interface(IfKind::All)?;
            daemon.enable_interface(kinds.clone())?;
            let mut info = ServiceInfo::new(
                SERVICE_TYPE,
                service.instance,
                &format!("{host}.local."),
                &addrs[..],
                port,
                &txt[..],
            )?;
            info.set_interfaces(kinds);
            let info = if addrs.is_empty() {
                info.enable_addr_auto()
            } else {
                info
            };
            let fullname = info.get_fullname().to_string();
            daemon.register(info)?;
            Ok(fullname)
        })();
        // What the records will name: the listener's address, or each interface's own.
        let addresses = if addrs.is_empty() {
            interface_addresses(ip)
        } else {
            addrs
        };
        match started {
            Ok(fullname) => Ok(Advert {
                daemon,
                fullname,
                host,
                addresses,
            }),
            Err(e) => {
                let _ = daemon.shutdown();
                Err(responder(e))
            }
        }
    }

    /// The instance's full DNS-SD name (`device-sim-8080._mcp._tcp.local.`).
    pub fn fullname(&self) -> &str {
        &self.fullname
    }

    /// The host name its SRV record points at, without `.local` (`device-sim-8080`): a name a
    /// client may put in `Host`, so an HTTP server should accept `HOST.local`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The addresses the A/AAAA records name (the listener's, or each interface's at start).
    pub fn addresses(&self) -> &[IpAddr] {
        &self.addresses
    }

    /// Every `Host` value (without port) a client that resolved this advertisement may send:
    /// `HOST.local` and each advertised address (IPv6 in brackets). Give them to the HTTP
    /// server's Host rule (`HttpOptions::allow_hosts`).
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts = vec![format!("{}.local", self.host)];
        hosts.extend(self.addresses.iter().map(|a| match a {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => format!("[{v6}]"),
        }));
        hosts
    }

    /// Withdraws the instance (goodbye packets: its records again with TTL 0), waits up to two
    /// seconds for the responder to confirm, then stops the responder.
    pub fn stop(self) -> Result<(), Error> {
        // `Drop` then shuts the daemon down.
        match self.daemon.unregister(&self.fullname) {
            Ok(status) => match status.recv_timeout(GOODBYE_WAIT) {
                Ok(UnregisterStatus::OK) => Ok(()),
                Ok(UnregisterStatus::NotFound) => Err(Error::Responder(format!(
                    "{} was not registered",
                    self.fullname
                ))),
                Err(e) => Err(Error::Responder(format!("no goodbye confirmed: {e}"))),
            },
            Err(e) => Err(Error::Responder(e.to_string())),
        }
    }
}

impl Drop for Advert {
    fn drop(&mut self) {
        let _ = self.daemon.shutdown();
    }
}

/// The addresses of the interfaces an unspecified listener (`0.0.0.0`: IPv4 only; `[::]`:
/// all) serves, as the responder advertises them; none when they cannot be read.
fn interface_addresses(unspecified: IpAddr) -> Vec<IpAddr> {
    let Ok(interfaces) = if_addrs::get_if_addrs() else {
        return Vec::new();
    };
    let mut addrs: Vec<IpAddr> = interfaces
        .iter()
        .map(if_addrs::Interface::ip)
        .filter(|ip| unspecified.is_ipv6() || ip.is_ipv4())
        .collect();
    addrs.sort();
    addrs.dedup();
    addrs
}

/// A host label derived from the instance name: its ASCII letters and digits lower-cased, every
/// other run of bytes one `-`, at most 40 bytes, then `-PORT` (so two endpoints on one machine
/// do not claim the same host name with different ports). `device-sim-8080` for
/// `device-sim`, port 8080.
fn host_label(instance: &str, port: u16) -> String {
    let mut label = String::new();
    for c in instance.chars() {
        if c.is_ascii_alphanumeric() {
            label.push(c.to_ascii_lowercase());
        } else if !label.is_empty() && !label.ends_with('-') {
            label.push('-');
        }
        if label.len() >= 40 {
            break;
        }
    }
    let label = label.trim_end_matches('-');
    let port = port.to_string();
    if label.is_empty() {
        format!("mcp-{port}")
    } else if label.ends_with(&format!("-{port}")) {
        label.to_string()
    } else {
        format!("{label}-{port}")
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn host_labels_are_dns_safe() {
        assert_eq!(host_label("device-sim-8080", 8080), "device-sim-8080");
        assert_eq!(host_label("device-sim", 8080), "device-sim-8080");
        assert_eq!(
            host_label("Kitchen Speaker (2)", 80),
            "kitchen-speaker-2-80"
        );
        assert_eq!(host_label("--", 80), "mcp-80");
        assert_eq!(host_label("Küche", 80), "k-che-80");
        let long = "a".repeat(63);
        assert_eq!(host_label(&long, 1), format!("{}-1", "a".repeat(40)));
    }

    #[test]
    fn refuses_what_cannot_be_advertised() {
        let service = Service {
            instance: "",
            bound: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp",
            proto: "2025-11-25",
            version: "0",
            auth: None,
        };
        assert_eq!(Advert::start(&service).err(), Some(Error::BadInstance));
        let long = "x".repeat(64);
        let service = Service {
            instance: &long,
            ..service
        };
        assert_eq!(Advert::start(&service).err(), Some(Error::BadInstance));
        let service = Service {
            instance: "x",
            bound: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..service
        };
        assert_eq!(Advert::start(&service).err(), Some(Error::NoPort));
    }
}
