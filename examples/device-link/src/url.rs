//! URLs of the services a device connects to: `ws`/`wss` (a xiaozhi backend), `mqtt`/`mqtts`
//! (`tcp`/`ssl` too; a broker), `http`/`https` (the OTA/config check).
//!
//! One checking pass over the text, no copy: a [`Url`] borrows it. What it holds:
//! - the scheme, and with it TLS or not and the default port;
//! - the host: an IPv4 or bracketed IPv6 address, or a DNS name (letters, digits, `-`, `_`,
//!   dots; at most 253 bytes) that the device resolves itself;
//! - the port, and the path (with its query) for `ws`/`http`; a broker URL has no path;
//! - the user info, **never shown**: `Debug` and `Display` leave it out, and no error quotes the
//!   URL; nor the values of the query, which may be a secret too (an MCP endpoint's
//!   `?token=…`): `Display` writes each as `…`. The path and query are kept as written, percent
//!   escapes and all, for the request line. For a broker everything between `://` and the **last** `@` is the user info (a broker
//!   URL has no path), so a raw `/`, `?`, `#` or `@` in a password is taken as it is; for the
//!   others the user info ends the authority as RFC 3986 says. `%XX` escapes are decoded on
//!   demand ([`Url::user`], [`Url::password`]); a broken one is refused.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

/// The longest DNS name accepted (RFC 1035).
pub const MAX_HOST_LEN: usize = 253;

/// A URL scheme this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scheme {
    /// `ws://`: WebSocket over TCP.
    Ws,
    /// `wss://`: WebSocket over TLS.
    Wss,
    /// `mqtt://` (or `tcp://`): MQTT over TCP.
    Mqtt,
    /// `mqtts://` (or `ssl://`): MQTT over TLS.
    Mqtts,
    /// `http://`.
    Http,
    /// `https://`: HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme named `s` (ASCII case ignored).
    pub fn parse(s: &str) -> Option<Scheme> {
        const ALL: [(&str, Scheme); 8] = [
            ("ws", Scheme::Ws),
            ("wss", Scheme::Wss),
            ("mqtt", Scheme::Mqtt),
            ("tcp", Scheme::Mqtt),
            ("mqtts", Scheme::Mqtts),
            ("ssl", Scheme::Mqtts),
            ("http", Scheme::Http),
            ("https", Scheme::Https),
        ];
        ALL.iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, scheme)| scheme)
    }

    /// Its canonical name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scheme::Ws => "ws",
            Scheme::Wss => "wss",
            Scheme::Mqtt => "mqtt",
            Scheme::Mqtts => "mqtts",
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// `true` for the schemes that run over TLS.
    pub const fn is_tls(self) -> bool {
        matches!(self, Scheme::Wss | Scheme::Mqtts | Scheme::Https)
    }

    /// The port when the URL names none.
    pub const fn default_port(self) -> u16 {
        match self {
            Scheme::Ws | Scheme::Http => 80,
            Scheme::Wss | Scheme::Https => 443,
            Scheme::Mqtt => 1883,
            Scheme::Mqtts => 8883,
        }
    }

    /// `true` for a broker (no path; user info up to the last `@`).
    pub const fn is_broker(self) -> bool {
        matches!(self, Scheme::Mqtt | Scheme::Mqtts)
    }
}

/// Where a URL points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Host<'a> {
    /// An IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address (written in brackets).
    Ipv6(Ipv6Addr),
    /// A DNS name, to resolve (and, over TLS, the name the certificate must carry).
    Name(&'a str),
}

/// Why a URL was refused. No variant holds any of its text: an error can be logged as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlError {
    /// No `scheme://`.
    NoScheme,
    /// A scheme other than those of [`Scheme`] (or not the one the caller needs).
    Scheme,
    /// No host.
    NoHost,
    /// The host is neither an address nor a DNS name.
    BadHost,
    /// The port is not a number from 1 to 65535.
    BadPort,
    /// A `%` escape in the user name or password is broken (write `%` as `%25`).
    BadEscape,
    /// A broker URL with a path.
    Path,
    /// A control character or a space in the URL.
    BadCharacter,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UrlError::NoScheme => "the URL has no scheme:// (ws, wss, mqtt, mqtts, http, https)",
            UrlError::Scheme => "the URL's scheme is not one this link speaks",
            UrlError::NoHost => "the URL has no host",
            UrlError::BadHost => "the URL's host is neither an address nor a DNS name",
            UrlError::BadPort => "the URL's port is not a number from 1 to 65535",
            UrlError::BadEscape => {
                "a % escape in the URL's user name or password is broken (write % as %25)"
            }
            UrlError::Path => "a broker URL has no path",
            UrlError::BadCharacter => "the URL holds a space or a control character",
        })
    }
}

impl core::error::Error for UrlError {}

/// A checked URL, borrowing its text. `Debug` and `Display` leave the user info out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Url<'a> {
    /// The scheme.
    pub scheme: Scheme,
    /// The host.
    pub host: Host<'a>,
    /// The host as written (an IPv6 address without its brackets).
    pub host_text: &'a str,
    /// The port (the scheme's default when the URL names none).
    pub port: u16,
    /// The path and query as written, without the fragment; `/` when empty, and always `/` for
    /// a broker.
    pub path: &'a str,
    user: Option<&'a str>,
    password: Option<&'a str>,
}

impl<'a> Url<'a> {
    /// Checks `text` as a URL of a known scheme.
    ///
    /// # Errors
    /// See [`UrlError`]; the error never quotes the text.
    pub fn parse(text: &'a str) -> Result<Url<'a>, UrlError> {
        if text.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(UrlError::BadCharacter);
        }
        let (scheme, rest) = text.split_once("://").ok_or(UrlError::NoScheme)?;
        let scheme = Scheme::parse(scheme).ok_or(UrlError::Scheme)?;
        let (authority, path) = if scheme.is_broker() {
            let authority = rest.strip_suffix('/').unwrap_or(rest);
            (authority, "/")
        } else {
            // The user info may hold anything but `/`, `?` and `#`; the authority ends there.
            match rest.find(['/', '?', '#']) {
                Some(i) => (
                    rest.get(..i).unwrap_or_default(),
                    rest.get(i..).unwrap_or("/"),
                ),
                None => (rest, "/"),
            }
        };
        let path = match path.split_once('#') {
            Some((p, _)) => p,
            None => path,
        };
        let path = if path.is_empty() { "/" } else { path };
        let (info, hostport) = match authority.rsplit_once('@') {
            Some((info, hp)) => (Some(info), hp),
            None => (None, authority),
        };
        if scheme.is_broker() && hostport.contains(['/', '?', '#']) {
            return Err(UrlError::Path);
        }
        let (user, password) = match info {
            Some(info) => {
                let (u, p) = match info.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (info, None),
                };
                check_escapes(u)?;
                if let Some(p) = p {
                    check_escapes(p)?;
                }
                (Some(u), p)
            }
            None => (None, None),
        };
        let (host_text, port, host) = split_host(hostport)?;
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or(UrlError::BadPort)?,
            None => scheme.default_port(),
        };
        Ok(Url {
            scheme,
            host,
            host_text,
            port,
            path,
            user,
            password,
        })
    }

    /// `true` when the URL carries a user name or a password.
    pub const fn has_credentials(&self) -> bool {
        self.user.is_some() || self.password.is_some()
    }

    /// The user name, `%XX` escapes decoded into `buf`; `None` when there is none or `buf` is
    /// too small (or it is not UTF-8 once decoded).
    pub fn user<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        decode(self.user?, buf)
    }

    /// The password, as [`user`](Self::user).
    pub fn password<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        decode(self.password?, buf)
    }

    /// `true` when the host is this machine: a loopback address (`127.0.0.0/8`, `::1`) or the
    /// name `localhost`. Nothing sent there crosses a network.
    pub fn is_loopback(&self) -> bool {
        match self.host {
            Host::Ipv4(a) => a.is_loopback(),
            Host::Ipv6(a) => a.is_loopback(),
            Host::Name(n) => {
                let n = n.strip_suffix('.').unwrap_or(n);
                n.eq_ignore_ascii_case("localhost")
            }
        }
    }

    /// The host and port as an HTTP `Host` header carries them: the port only when it is not
    /// the scheme's default.
    pub fn authority(&self) -> Authority<'a> {
        Authority {
            host: self.host,
            host_text: self.host_text,
            port: (self.port != self.scheme.default_port()).then_some(self.port),
        }
    }
}

/// The host and port of a URL, for a `Host` header (see [`Url::authority`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authority<'a> {
    host: Host<'a>,
    host_text: &'a str,
    port: Option<u16>,
}

impl fmt::Display for Authority<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host {
            Host::Ipv6(_) => write!(f, "[{}]", self.host_text)?,
            _ => f.write_str(self.host_text)?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Url<'_> {
    /// `scheme://host:port/path?name=…`, without the user info and the query's values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match self.host {
            Host::Ipv6(_) => write!(f, "[{}]", self.host_text)?,
            _ => f.write_str(self.host_text)?,
        }
        write!(f, ":{}", self.port)?;
        if self.scheme.is_broker() {
            return Ok(());
        }
        let Some((path, query)) = self.path.split_once('?') else {
            return f.write_str(self.path);
        };
        f.write_str(path)?;
        for (i, pair) in query.split('&').enumerate() {
            f.write_str(if i == 0 { "?" } else { "&" })?;
            match pair.split_once('=') {
                Some((name, _)) => write!(f, "{name}=…")?,
                None => f.write_str(pair)?,
            }
        }
        Ok(())
    }
}

impl Host<'_> {
    /// `true` for a host on this machine or the local network, where a secret may travel in
    /// clear (docs/AUTH.md: in clear only on a LAN you trust; beyond it, TLS): a loopback,
    /// private (RFC 1918), shared (RFC 6598) or link-local IPv4 address; the IPv6 loopback, a
    /// unique-local (`fc00::/7`) or link-local (`fe80::/10`) address; the name `localhost`, or
    /// a name under `.localhost`, `.local` (mDNS), `.lan`, `.home.arpa` or `.internal`. Any
    /// other name may resolve anywhere: it is not local.
    pub fn is_local(&self) -> bool {
        match *self {
            Host::Ipv4(a) => {
                let [x, y, ..] = a.octets();
                a.is_loopback()
                    || a.is_private()
                    || a.is_link_local()
                    || (x == 100 && (64..128).contains(&y))
            }
            Host::Ipv6(a) => {
                let first = a.segments()[0];
                a.is_loopback() || first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
            }
            Host::Name(name) => {
                let name = name.trim_end_matches('.');
                let lower = |s: &str, suffix: &str| {
                    s.len() >= suffix.len()
                        && s.get(s.len() - suffix.len()..)
                            .is_some_and(|end| end.eq_ignore_ascii_case(suffix))
                };
                name.eq_ignore_ascii_case("localhost")
                    || [".localhost", ".local", ".lan", ".home.arpa", ".internal"]
                        .iter()
                        .any(|suffix| lower(name, suffix))
            }
        }
    }
}

impl Url<'_> {
    /// `true` when a secret the URL carries (its user info, a `?token=…`) or a token sent with
    /// it may go to its host: over TLS anywhere, in clear only to a local host
    /// ([`Host::is_local`]).
    pub fn secret_may_go(&self) -> bool {
        self.scheme.is_tls() || self.host.is_local()
    }
}

impl fmt::Debug for Url<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Url")
            .field("scheme", &self.scheme)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("shown", &format_args!("{self}"))
            .field("credentials", &self.has_credentials())
            .finish()
    }
}

/// `host[:port]` or `[v6][:port]` → (host text, port text, host).
fn split_host(hostport: &str) -> Result<(&str, Option<&str>, Host<'_>), UrlError> {
    if let Some(rest) = hostport.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or(UrlError::BadHost)?;
        let addr: Ipv6Addr = v6.parse().map_err(|_| UrlError::BadHost)?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or(UrlError::BadHost)?),
        };
        return Ok((v6, port, Host::Ipv6(addr)));
    }
    let (host, port) = match hostport.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    };
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    if let Ok(v4) = host.parse::<Ipv4Addr>() {
        return Ok((host, port, Host::Ipv4(v4)));
    }
    let name_ok = host.len() <= MAX_HOST_LEN
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        && host
            .trim_end_matches('.')
            .split('.')
            .all(|label| !label.is_empty() && label.len() <= 63);
    if !name_ok {
        return Err(UrlError::BadHost);
    }
    Ok((host, port, Host::Name(host)))
}

/// Every `%` is followed by two hex digits.
fn check_escapes(s: &str) -> Result<(), UrlError> {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = b.get(i + 1..i + 3).ok_or(UrlError::BadEscape)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(UrlError::BadEscape);
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// `%XX` escapes decoded into `buf` (checked by [`check_escapes`] at parse time).
fn decode<'b>(s: &str, buf: &'b mut [u8]) -> Option<&'b str> {
    let b = s.as_bytes();
    let (mut i, mut n) = (0, 0);
    while let Some(&c) = b.get(i) {
        let byte = if c == b'%' {
            let hex = core::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            i += 3;
            u8::from_str_radix(hex, 16).ok()?
        } else {
            i += 1;
            c
        };
        *buf.get_mut(n)? = byte;
        n += 1;
    }
    core::str::from_utf8(buf.get(..n)?).ok()
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]

    use super::*;
    extern crate std;
    use std::format;
    use std::string::ToString;

    #[test]
    fn query_values_are_never_shown_and_the_path_is_kept_as_written() {
        let text = "ws://192.168.1.5:8004/mcp_endpoint/mcp/?token=Zk9v%2BYmFy%3D%3D&x&lang=zh";
        let u = Url::parse(text).unwrap();
        assert_eq!(
            u.path,
            "/mcp_endpoint/mcp/?token=Zk9v%2BYmFy%3D%3D&x&lang=zh"
        );
        let shown = u.to_string();
        assert_eq!(
            shown,
            "ws://192.168.1.5:8004/mcp_endpoint/mcp/?token=…&x&lang=…"
        );
        assert!(!shown.contains("Zk9v"));
        let jwt = Url::parse("wss://api.xiaozhi.me/mcp/?token=eyJhbGciOi.eyJzdWIi.sig").unwrap();
        assert_eq!(jwt.to_string(), "wss://api.xiaozhi.me:443/mcp/?token=…");
        assert!(!format!("{jwt:?}").contains("eyJ"));
    }

    #[test]
    fn a_secret_goes_in_clear_only_to_a_local_host() {
        for local in [
            "ws://127.0.0.1:8004/",
            "ws://10.0.0.7/",
            "ws://172.20.1.1/",
            "ws://192.168.1.5:8004/",
            "ws://169.254.3.4/",
            "ws://100.64.0.1/",
            "ws://[::1]:8004/",
            "ws://[fd12::1]/",
            "ws://[fe80::1]/",
            "ws://localhost:8004/",
            "ws://nas.local/",
            "ws://server.LAN/",
            "ws://x.home.arpa/",
        ] {
            let u = Url::parse(local).unwrap();
            assert!(u.host.is_local() && u.secret_may_go(), "{local}");
        }
        for remote in [
            "ws://8.8.8.8/",
            "ws://172.32.0.1/",
            "ws://100.128.0.1/",
            "ws://[2001:db8::1]/",
            "ws://api.xiaozhi.me/mcp/",
            "ws://localhost.example.com/",
            "ws://evil-lan/",
        ] {
            let u = Url::parse(remote).unwrap();
            assert!(!u.host.is_local() && !u.secret_may_go(), "{remote}");
        }
        assert!(
            Url::parse("wss://api.xiaozhi.me/mcp/")
                .unwrap()
                .secret_may_go()
        );
    }

    #[test]
    fn schemes_hosts_ports_paths() {
        let u = Url::parse("wss://api.example.net/xiaozhi/v1/").unwrap();
        assert_eq!(u.scheme, Scheme::Wss);
        assert!(u.scheme.is_tls());
        assert_eq!(u.host, Host::Name("api.example.net"));
        assert_eq!((u.port, u.path), (443, "/xiaozhi/v1/"));
        assert_eq!(u.authority().to_string(), "api.example.net");
        let u = Url::parse("ws://192.168.1.10:8000").unwrap();
        assert_eq!(u.host, Host::Ipv4(Ipv4Addr::new(192, 168, 1, 10)));
        assert_eq!((u.port, u.path), (8000, "/"));
        assert_eq!(u.authority().to_string(), "192.168.1.10:8000");
        let u = Url::parse("HTTPS://[::1]:8443/xiaozhi/ota/?x=1#frag").unwrap();
        assert_eq!(u.host, Host::Ipv6(Ipv6Addr::LOCALHOST));
        assert_eq!((u.port, u.path), (8443, "/xiaozhi/ota/?x=1"));
        assert_eq!(u.to_string(), "https://[::1]:8443/xiaozhi/ota/?x=…");
        let u = Url::parse("ssl://broker.example").unwrap();
        assert_eq!((u.scheme, u.port), (Scheme::Mqtts, 8883));
        assert_eq!(Url::parse("tcp://b/").unwrap().port, 1883);
        assert_eq!(Url::parse("x.y/z").unwrap_err(), UrlError::NoScheme);
        assert_eq!(Url::parse("ftp://x").unwrap_err(), UrlError::Scheme);
        assert_eq!(Url::parse("ws://:80/").unwrap_err(), UrlError::NoHost);
        assert_eq!(Url::parse("ws://h:0/").unwrap_err(), UrlError::BadPort);
        assert_eq!(Url::parse("ws://h:99999/").unwrap_err(), UrlError::BadPort);
        assert_eq!(
            Url::parse("ws://ba d/").unwrap_err(),
            UrlError::BadCharacter
        );
        assert_eq!(Url::parse("ws://h\n/").unwrap_err(), UrlError::BadCharacter);
        assert_eq!(Url::parse("ws://a..b/").unwrap_err(), UrlError::BadHost);
        assert_eq!(Url::parse("ws://a$b/").unwrap_err(), UrlError::BadHost);
        assert_eq!(Url::parse("mqtt://h:1/path").unwrap_err(), UrlError::Path);
        let long = format!("ws://{}.com/", "a".repeat(64));
        assert_eq!(Url::parse(&long).unwrap_err(), UrlError::BadHost);
    }

    /// A password with a raw `/`, `?`, `#` or `@` in a broker URL is the
    /// password; it is decoded on demand and shown nowhere.
    #[test]
    fn broker_credentials_are_taken_whole_and_never_shown() {
        for password in ["pa/ss", "pa?ss", "pa#ss", "pa@ss", "p:a/s@s?#"] {
            let text = format!("mqtts://dev:{password}@broker.example:8883");
            let u = Url::parse(&text).unwrap();
            assert_eq!(u.host, Host::Name("broker.example"), "{text}");
            let mut buf = [0u8; 64];
            assert_eq!(u.password(&mut buf), Some(password));
            assert_eq!(u.user(&mut buf), Some("dev"));
            let shown = format!("{u} {u:?}");
            assert!(
                !shown.contains(password) && !shown.contains("dev"),
                "{shown}"
            );
        }
        let u = Url::parse("mqtt://dev%40site:p%25w@h").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(u.user(&mut buf), Some("dev@site"));
        assert_eq!(u.password(&mut buf), Some("p%w"));
        assert_eq!(u.password(&mut [0u8; 2]), None, "too small a buffer");
        for broken in ["mqtt://u:p%zz@h", "mqtt://u:p%4@h", "mqtt://u:%@h"] {
            assert_eq!(Url::parse(broken).unwrap_err(), UrlError::BadEscape);
        }
        assert!(!Url::parse("mqtt://h").unwrap().has_credentials());
        // Not a broker: the authority ends at the first `/` (RFC 3986).
        let u = Url::parse("https://h/a@b").unwrap();
        assert_eq!((u.host, u.path), (Host::Name("h"), "/a@b"));
        assert!(!u.has_credentials());
    }
}
