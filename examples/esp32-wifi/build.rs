//! Links with esp-hal's `linkall.x` (memory map, sections, ROM functions), and refuses an
//! `MQTT_BROKER` the firmware could not use (feature `mqtt`) rather than build a device that
//! never connects.

use std::net::Ipv4Addr;

fn main() {
    println!("cargo:rustc-link-arg=-Tlinkall.x");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MQTT_BROKER");
    if std::env::var_os("CARGO_FEATURE_MQTT").is_some()
        && let Ok(url) = std::env::var("MQTT_BROKER")
        && !url.is_empty()
        && !usable_broker(&url)
    {
        panic!(
            "MQTT_BROKER={url:?}: expected mqtt://a.b.c.d[:port] (plain TCP to an IPv4 address; \
             no TLS, no DNS on this firmware)"
        );
    }
}

/// What `src/mqtt.rs` `parse_url` accepts.
fn usable_broker(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("mqtt://")
        .or_else(|| url.strip_prefix("tcp://"))
    else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port_ok) = match rest.split_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().is_ok()),
        None => (rest, true),
    };
    port_ok && host.parse::<Ipv4Addr>().is_ok()
}
