//! Discovery on the LAN (`--mdns`): the real device-sim binary advertises its Streamable HTTP
//! endpoint as a DNS-SD `_mcp._tcp` service; a client browses for it with mdns-sd on loopback,
//! resolves it, connects to the address, port and TXT `path` it found and gets device-sim's
//! `initialize` answer; when the simulator is stopped (SIGTERM) the client hears it go.
//!
//! mDNS is multicast, and an mDNS responder joins its group on every interface it starts on. So
//! that nothing of it reaches a real network, the test runs itself again inside a network
//! namespace of its own (`unshare --net --map-root-user`, util-linux), where `lo` is the only
//! interface, brings `lo` up there (`ip link`, iproute2) and does its work. No packet can leave
//! the machine, and parallel runs cannot hear one another. (Linux loops multicast back on `lo`
//! without its `MULTICAST` flag; the namespace does not need to set it.) Where no namespace can be
//! made (user namespaces forbidden), the test runs on the machine's loopback with a unique name.
#![allow(clippy::restriction, reason = "a test")]

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Running, device_sim, device_sim_output, log_lines};
use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent};
use serde_json::{Value, json};

/// Set in the copy of this test that runs inside the network namespace.
const INSIDE: &str = common::NETNS_INSIDE;
/// Every wait of this test.
const WAIT: Duration = Duration::from_secs(10);
const SERVICE_TYPE: &str = "_mcp._tcp.local.";

/// Runs test `name` of this binary again inside a fresh network namespace whose only
/// interface is `lo` ([`common::in_private_netns`]).
fn in_private_netns(name: &str) -> bool {
    in_private_netns_with(name, "ip link set lo up")
}

use common::in_private_netns as in_private_netns_with;

/// A browser on loopback only, as the advertisement is (`--http 127.0.0.1:…`).
fn loopback_browser() -> (ServiceDaemon, mdns_sd::Receiver<ServiceEvent>) {
    let daemon = ServiceDaemon::new().expect("start the mDNS browser");
    daemon.disable_interface(IfKind::All).unwrap();
    daemon.enable_interface(IfKind::LoopbackV4).unwrap();
    let events = daemon.browse(SERVICE_TYPE).unwrap();
    (daemon, events)
}

/// The next browse event for `fullname` that `pick` takes, within [`WAIT`].
fn wait_for<T>(
    events: &mdns_sd::Receiver<ServiceEvent>,
    what: &str,
    pick: impl Fn(ServiceEvent) -> Option<T>,
) -> T {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(event) => {
                seen.push(format!("{event:?}"));
                if let Some(found) = pick(event) {
                    return found;
                }
            }
            Err(_) => panic!(
                "no {what} within {} s; the browser saw: {seen:#?}",
                WAIT.as_secs()
            ),
        }
    }
}

#[test]
fn a_client_on_loopback_resolves_the_advertisement_connects_and_hears_the_goodbye() {
    if std::env::var_os(INSIDE).is_none()
        && in_private_netns(
            "a_client_on_loopback_resolves_the_advertisement_connects_and_hears_the_goodbye",
        )
    {
        return;
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let instance = format!("test-{}-{nanos:08x}", std::process::id());
    let fullname = format!("{instance}.{SERVICE_TYPE}");

    let args = ["--http", "127.0.0.1:0", "--mdns", "--mdns-name", &instance];
    // Its log, line by line, on a thread (reads block), so that every wait is bounded.
    let (mut sim, log, port) = start_advertising(&args, &fullname);

    // Browse and resolve, as a client that knows nothing but the service type.
    let (browser, events) = loopback_browser();
    let resolved = wait_for(&events, &format!("resolution of {fullname}"), |e| match e {
        ServiceEvent::ServiceResolved(s) if s.get_fullname() == fullname => Some(s),
        _ => None,
    });
    assert_eq!(resolved.get_port(), port, "SRV port");
    assert_eq!(
        resolved.get_property_val_str("path"),
        Some("/mcp"),
        "TXT path"
    );
    assert_eq!(
        resolved.get_property_val_str("proto"),
        Some("2025-11-25"),
        "TXT proto"
    );
    assert_eq!(
        resolved.get_property_val_str("version"),
        Some(env!("CARGO_PKG_VERSION")),
        "TXT version"
    );
    let addrs = resolved.get_addresses_v4();
    assert_eq!(
        addrs.iter().copied().collect::<Vec<_>>(),
        vec![Ipv4Addr::LOCALHOST],
        "A records: the loopback listener's address only"
    );
    assert!(
        resolved.get_hostname().ends_with(".local."),
        "SRV target {}",
        resolved.get_hostname()
    );

    // Connect to what was resolved, nothing else: address, port, path.
    let ip = IpAddr::V4(*addrs.iter().next().unwrap());
    let path = resolved.get_property_val_str("path").unwrap();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mdns-test","version":"1"}}});
    let (status, body) = common::request(
        &format!("{ip}:{}", resolved.get_port()),
        "POST",
        path,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &init.to_string(),
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["result"]["serverInfo"]["name"], "device-sim", "{v}");
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25", "{v}");

    // Stopped politely, it withdraws the advertisement: the browser hears the goodbye at once
    // (without one it would keep the instance for its records' TTL, 75 s to 2 min).
    let pid = sim.0.id().to_string();
    let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(kill.success());
    wait_for(&events, &format!("goodbye of {fullname}"), |e| match e {
        ServiceEvent::ServiceRemoved(_, name) if name == fullname => Some(()),
        _ => None,
    });
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = sim.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "device-sim still runs after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "device-sim exited with {status} on SIGTERM"
    );
    let mut lines = Vec::new();
    while let Ok(line) = log.recv_timeout(Duration::from_secs(1)) {
        lines.push(line);
    }
    assert!(
        lines
            .iter()
            .any(|l| l == "device-sim: mDNS advertisement withdrawn"),
        "{lines:#?}"
    );
    let _ = browser.shutdown();
}

#[test]
fn mdns_needs_http_and_a_usable_name() {
    let out = device_sim_output(&["--mdns"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--http"), "{stderr}");

    // A name longer than a DNS label is refused before anything is served.
    let long = "x".repeat(64);
    let out = device_sim_output(&["--http", "127.0.0.1:0", "--mdns", "--mdns-name", &long]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 to 63 bytes"), "{stderr}");
}

/// Two ends of a veth pair (10.77.0.1 and 10.77.0.2), up, next to `lo`: a LAN inside the
/// namespace, on addresses no real network has.
const VETH_LAN: &str = "ip link set lo up && ip link add mcp0 type veth peer name mcp1 && \
    ip addr add 10.77.0.1/24 dev mcp0 && ip addr add 10.77.0.2/24 dev mcp1 && \
    ip link set mcp0 up && ip link set mcp1 up";

/// Starts device-sim with `args` (an `--http` and `--mdns-name` among them) and waits until it
/// serves and advertises `fullname`; returns it, its log so far and on, and the port.
fn start_advertising(args: &[&str], fullname: &str) -> (Running, mpsc::Receiver<String>, u16) {
    let mut sim = Running(device_sim(args, false));
    let log = log_lines(&mut sim.0);
    let deadline = Instant::now() + WAIT;
    let (mut port, mut advertised, mut lines) = (None, false, Vec::new());
    while port.is_none() || !advertised {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = log.recv_timeout(left).unwrap_or_else(|_| {
            panic!("device-sim did not say where it serves and what it advertises: {lines:#?}")
        });
        if let Some(rest) =
            line.strip_prefix("device-sim: serving MCP (Streamable HTTP) at http://")
        {
            let addr = rest.strip_suffix("/mcp").unwrap();
            port = Some(addr.rsplit_once(':').unwrap().1.parse().unwrap());
        }
        if line.starts_with(&format!("device-sim: advertising {fullname} ")) {
            advertised = true;
        }
        lines.push(line);
    }
    (sim, log, port.unwrap())
}

fn unique_instance() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("lan-{}-{nanos:08x}", std::process::id())
}

/// `initialize` at `authority` (what goes in `Host` too), with `headers` besides.
fn initialize_at(authority: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mdns-test","version":"1"}}});
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    common::request(authority, "POST", path, &all, &init.to_string())
}

#[test]
fn every_address_and_the_name_the_advertisement_gives_are_accepted_as_host() {
    const NAME: &str = "every_address_and_the_name_the_advertisement_gives_are_accepted_as_host";
    if std::env::var_os(INSIDE).is_none() && in_private_netns_with(NAME, VETH_LAN) {
        return;
    }
    if std::env::var_os(INSIDE).is_none() {
        eprintln!("mdns test: no namespace with a veth LAN here; skipped");
        return;
    }
    let instance = unique_instance();
    let fullname = format!("{instance}.{SERVICE_TYPE}");
    // Every IPv4 interface, no --allow-host: what a resolver returns must still connect.
    let (sim, _log, port) = start_advertising(
        &["--http", "0.0.0.0:0", "--mdns", "--mdns-name", &instance],
        &fullname,
    );
    let browser = ServiceDaemon::new().expect("start the mDNS browser");
    let events = browser.browse(SERVICE_TYPE).unwrap();
    let resolved = wait_for(&events, &format!("resolution of {fullname}"), |e| match e {
        ServiceEvent::ServiceResolved(s)
            if s.get_fullname() == fullname && s.get_addresses_v4().len() >= 3 =>
        {
            Some(s)
        }
        _ => None,
    });
    assert_eq!(resolved.get_port(), port);
    assert_eq!(
        resolved.get_property_val_str("auth"),
        None,
        "no token: no auth key"
    );
    let mut addrs: Vec<Ipv4Addr> = resolved.get_addresses_v4().into_iter().collect();
    addrs.sort();
    assert_eq!(
        addrs,
        vec![
            Ipv4Addr::new(10, 77, 0, 1),
            Ipv4Addr::new(10, 77, 0, 2),
            Ipv4Addr::LOCALHOST
        ],
        "each interface's own address"
    );
    let path = resolved.get_property_val_str("path").unwrap();
    for ip in addrs {
        let (status, body) = initialize_at(&format!("{ip}:{port}"), path, &[]);
        assert_eq!(status, 200, "Host {ip}:{port}: {body}");
    }
    // The SRV target's name, as a client that connects by name sends it.
    let host = resolved.get_hostname().trim_end_matches('.').to_string();
    let (status, body) = initialize_at(
        &format!("10.77.0.1:{port}"),
        path,
        &[("Host", &format!("{host}:{port}"))],
    );
    assert_eq!(status, 200, "Host {host}: {body}");
    // Anything else is still refused (DNS rebinding): another name, another address.
    for other in ["evil.example", "10.77.0.9", "lan-other.local"] {
        let (status, body) = initialize_at(
            &format!("10.77.0.1:{port}"),
            path,
            &[("Host", &format!("{other}:{port}"))],
        );
        assert_eq!(status, 403, "Host {other}: {body}");
    }
    drop(sim);
    let _ = browser.shutdown();
}

#[test]
fn a_device_with_a_token_says_so_in_txt() {
    const NAME: &str = "a_device_with_a_token_says_so_in_txt";
    if std::env::var_os(INSIDE).is_none() && in_private_netns(NAME) {
        return;
    }
    let instance = unique_instance();
    let fullname = format!("{instance}.{SERVICE_TYPE}");
    let (sim, _log, port) = start_advertising(
        &[
            "--http",
            "127.0.0.1:0",
            "--token",
            "lan-token-123",
            "--mdns",
            "--mdns-name",
            &instance,
        ],
        &fullname,
    );
    let (browser, events) = loopback_browser();
    let resolved = wait_for(&events, &format!("resolution of {fullname}"), |e| match e {
        ServiceEvent::ServiceResolved(s) if s.get_fullname() == fullname => Some(s),
        _ => None,
    });
    assert_eq!(resolved.get_port(), port);
    assert_eq!(resolved.get_property_val_str("auth"), Some("bearer"));
    let path = resolved.get_property_val_str("path").unwrap();
    let (status, _) = initialize_at(&format!("127.0.0.1:{port}"), path, &[]);
    assert_eq!(status, 401);
    let (status, body) = initialize_at(
        &format!("127.0.0.1:{port}"),
        path,
        &[("Authorization", "Bearer lan-token-123")],
    );
    assert_eq!(status, 200, "{body}");
    drop(sim);
    let _ = browser.shutdown();
}
