//! Links with esp-hal's `linkall.x` (memory map, sections, ROM functions), and refuses a URL the
//! firmware could not use (`MQTT_BROKER` with the feature `mqtt`; `XIAOZHI_URL`,
//! `XIAOZHI_OTA_URL` with `xiaozhi`) rather than build a device that never connects. The rules
//! are `device_link::Url`'s, the code the firmware parses them with.

use device_link::url::{Scheme, Url};

fn main() {
    println!("cargo:rustc-link-arg=-Tlinkall.x");
    println!("cargo:rerun-if-changed=build.rs");
    let feature = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{f}")).is_some();
    let checks: [(&str, bool, Scheme, &str); 3] = [
        (
            "MQTT_BROKER",
            feature("MQTT"),
            Scheme::Mqtt,
            "mqtt://HOST[:PORT] (an address or a host name)",
        ),
        (
            "XIAOZHI_URL",
            feature("XIAOZHI"),
            Scheme::Ws,
            "ws://HOST[:PORT]/PATH (an address or a host name)",
        ),
        (
            "XIAOZHI_OTA_URL",
            feature("XIAOZHI"),
            Scheme::Http,
            "http://HOST[:PORT]/PATH (an address or a host name)",
        ),
    ];
    for (var, on, scheme, want) in checks {
        println!("cargo:rerun-if-env-changed={var}");
        let Ok(text) = std::env::var(var) else {
            continue;
        };
        if !on || text.is_empty() {
            continue;
        }
        match Url::parse(&text) {
            Ok(u) if u.scheme == scheme && !matches!(u.host, device_link::Host::Ipv6(_)) => {}
            Ok(u) if u.scheme.is_tls() => panic!(
                "{var}: {}:// needs TLS, which this firmware does not have yet; expected {want}",
                u.scheme.as_str()
            ),
            Ok(_) => panic!("{var}: expected {want} (IPv4 or a name; this stack has no IPv6)"),
            Err(e) => panic!("{var}: {e}; expected {want}"),
        }
    }
}
