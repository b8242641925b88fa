//! Links with esp-hal's `linkall.x` (memory map, sections, ROM functions); refuses a URL the
//! firmware could not use (`MQTT_BROKER` with the feature `mqtt`; `XIAOZHI_URL`,
//! `XIAOZHI_OTA_URL` with `xiaozhi`; `MCP_ENDPOINT_URL` with `endpoint`, and not `ws://` beyond
//! the LAN; `wss://`, `mqtts://`, `https://` only with `tls`) rather
//! than build a device that never connects — the rules are `device_link::Url`'s, the code the
//! firmware parses them with; and with `tls` writes the roots compiled into the image
//! (`$OUT_DIR/roots.rs`) and the build time (`BUILD_UNIX_SECS`, the earliest time the clock
//! believes).

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use device_link::url::{Scheme, Url};
use pki_types::CertificateDer;
use pki_types::pem::PemObject;

/// The roots of Mozilla's set compiled in by default (matched by the common name that ends the
/// subject), chosen for the services a device reaches: Let's Encrypt (ISRG X1 RSA, X2 ECDSA),
/// DigiCert (G2 RSA, G3 ECDSA: Azure, many clouds and brokers), GlobalSign (R46 RSA, E46
/// ECDSA), Google Trust Services (GTS R1 RSA, R4 ECDSA), Amazon (AWS IoT, EMQX Cloud),
/// Sectigo/ZeroSSL (USERTrust RSA, ECC).
const DEFAULT_ROOTS: &[&str] = &[
    "ISRG Root X1",
    "ISRG Root X2",
    "DigiCert Global Root G2",
    "DigiCert Global Root G3",
    "GlobalSign Root R46",
    "GlobalSign Root E46",
    "GTS Root R1",
    "GTS Root R4",
    "Amazon Root CA 1",
    "USERTrust RSA Certification Authority",
    "USERTrust ECC Certification Authority",
];

fn main() {
    println!("cargo:rustc-link-arg=-Tlinkall.x");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MCP_ENDPOINT_TOOLS");
    let feature = |f: &str| std::env::var_os(format!("CARGO_FEATURE_{f}")).is_some();
    let tls = feature("TLS");
    let checks: [(&str, bool, Scheme, &str); 4] = [
        (
            "MQTT_BROKER",
            feature("MQTT"),
            Scheme::Mqtt,
            "mqtt[s]://HOST[:PORT]",
        ),
        (
            "XIAOZHI_URL",
            feature("XIAOZHI"),
            Scheme::Ws,
            "ws[s]://HOST[:PORT]/PATH",
        ),
        (
            "XIAOZHI_OTA_URL",
            feature("XIAOZHI"),
            Scheme::Http,
            "http[s]://HOST[:PORT]/PATH",
        ),
        (
            "MCP_ENDPOINT_URL",
            feature("ENDPOINT"),
            Scheme::Ws,
            "ws[s]://HOST[:PORT]/PATH?token=…",
        ),
    ];
    for (var, on, plain, want) in checks {
        println!("cargo:rerun-if-env-changed={var}");
        let Ok(text) = std::env::var(var) else {
            continue;
        };
        if !on || text.is_empty() {
            continue;
        }
        let secure = match plain {
            Scheme::Mqtt => Scheme::Mqtts,
            Scheme::Ws => Scheme::Wss,
            _ => Scheme::Https,
        };
        match Url::parse(&text) {
            Ok(u) if matches!(u.host, device_link::Host::Ipv6(_)) => {
                panic!("{var}: expected {want} (IPv4 or a name; this stack has no IPv6)")
            }
            Ok(u) if u.scheme == plain => {}
            Ok(u) if u.scheme == secure && tls => {}
            Ok(u) if u.scheme == secure => panic!(
                "{var}: {}:// needs TLS: build with --features tls",
                u.scheme.as_str()
            ),
            Ok(_) => panic!("{var}: expected {want}"),
            Err(e) => panic!("{var}: {e}; expected {want}"),
        }
        // An MCP endpoint's token is in its URL: in clear only to this machine or the LAN.
        if var == "MCP_ENDPOINT_URL" && Url::parse(&text).is_ok_and(|u| !u.secret_may_go()) {
            panic!(
                "{var}: ws:// to a host beyond the local network would send the token in clear: use wss:// (--features tls)"
            );
        }
    }
    if tls {
        roots();
        let now = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            });
        println!("cargo:rustc-env=BUILD_UNIX_SECS={now}");
        println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    }
}

/// `$OUT_DIR/roots.rs`: `ROOTS`, the trust anchors. `TLS_CA_PEM` names a PEM file whose
/// certificates are added (a self-hosted server's own CA); `TLS_CA_ONLY=1` leaves Mozilla's out.
fn roots() {
    println!("cargo:rerun-if-env-changed=TLS_CA_PEM");
    println!("cargo:rerun-if-env-changed=TLS_CA_ONLY");
    let only = std::env::var("TLS_CA_ONLY").is_ok_and(|v| v == "1");
    let mut anchors: Vec<(String, pki_types::TrustAnchor<'static>)> = Vec::new();
    if !only {
        for name in DEFAULT_ROOTS {
            let found = webpki_roots::TLS_SERVER_ROOTS.iter().find(|a| {
                let subject: &[u8] = a.subject.as_ref();
                // The common name, as its DER string's bytes, closing the subject.
                subject.ends_with(name.as_bytes())
            });
            match found {
                Some(a) => anchors.push((name.to_string(), a.clone())),
                None => {
                    panic!("root {name:?} is not in webpki-roots any more: update DEFAULT_ROOTS")
                }
            }
        }
    }
    if let Ok(path) = std::env::var("TLS_CA_PEM") {
        println!("cargo:rerun-if-changed={path}");
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
            .unwrap_or_else(|e| panic!("TLS_CA_PEM {path}: {e}"))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("TLS_CA_PEM {path}: {e}"));
        if certs.is_empty() {
            panic!("TLS_CA_PEM {path}: no certificate in it");
        }
        for (i, der) in certs.iter().enumerate() {
            let a = webpki::anchor_from_trusted_cert(der)
                .unwrap_or_else(|e| panic!("TLS_CA_PEM {path}: certificate {i}: {e}"));
            anchors.push((format!("{path} #{i}"), a.to_owned()));
        }
    }
    if anchors.is_empty() {
        panic!("TLS_CA_ONLY=1 without TLS_CA_PEM: no root to trust");
    }
    let bytes = |b: &[u8]| {
        let mut s = String::from("&[");
        for x in b {
            let _ = write!(s, "{x},");
        }
        s.push(']');
        s
    };
    let mut out = String::from(
        "/// The roots a server's chain must lead to (written by build.rs).\n\
         pub static ROOTS: &[TrustAnchor<'static>] = &[\n",
    );
    for (name, a) in &anchors {
        let nc = match &a.name_constraints {
            Some(nc) => format!("Some(Der::from_slice({}))", bytes(nc.as_ref())),
            None => "None".to_string(),
        };
        let _ = writeln!(
            out,
            "    // {}\n    TrustAnchor {{ subject: Der::from_slice({}), subject_public_key_info: Der::from_slice({}), name_constraints: {nc} }},",
            name.replace('\n', " "),
            bytes(a.subject.as_ref()),
            bytes(a.subject_public_key_info.as_ref()),
        );
    }
    out.push_str("];\n");
    let dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".to_string());
    std::fs::write(std::path::Path::new(&dir).join("roots.rs"), out)
        .unwrap_or_else(|e| panic!("writing roots.rs: {e}"));
}
