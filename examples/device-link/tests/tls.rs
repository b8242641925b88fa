//! `device_link::tls` — the firmware's TLS client code — run on the host against a rustls
//! server, with a test CA made at test time (`mqtt_fleet::certs`): a session with the right
//! root; refusals that say why (wrong root, expired, not valid yet, wrong name, an
//! "intermediate" that is no CA); an IP address checked against the certificate's IP name;
//! reads dropped half way through records (a timer around each read) that lose nothing; and a
//! server's `KeyUpdate`, which ends the session with an error (embedded-tls does not handle it).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a test"
)]

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use device_link::Host;
use device_link::tls::{Buffers, Failure, MAX_RECORD, Peer, TlsStream, TrustAnchor};
use embedded_io_adapters::tokio_1::FromTokio;
use embedded_io_async::{Read as _, Write as _};
use mqtt_fleet::certs::{TestCa, Validity};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// 2026-12-01: inside the test certificates' validity (2020–4096), after the expired one's.
const NOW: u64 = 1_796_083_200;

fn certs(path: &std::path::Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .map(|c| c.unwrap())
        .collect()
}

/// The CA certificate of `ca` (DER), to make a trust anchor of.
fn root_der(ca: &TestCa) -> CertificateDer<'static> {
    certs(&ca.pem).remove(0)
}

fn anchor(der: &CertificateDer<'_>) -> TrustAnchor<'static> {
    webpki::anchor_from_trusted_cert(der).unwrap().to_owned()
}

/// A rustls acceptor (TLS 1.3, the ring provider) presenting `chain` with `key`.
fn acceptor(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> tokio_rustls::TlsAcceptor {
    #[allow(
        deprecated,
        reason = "the ring provider without post-quantum groups is what the test needs"
    )]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// A rustls server ([`acceptor`]) on a loopback port presenting `chain` with `key`; each
/// connection echoes what it reads until the client closes.
async fn server(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> u16 {
    let acceptor = acceptor(chain, key);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                loop {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if tls.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                            let _ = tls.flush().await;
                        }
                    }
                }
            });
        }
    });
    port
}

/// A server for `names` with a certificate of `ca`, valid as `validity` says.
async fn server_for(ca: &TestCa, names: &[&str], validity: Validity) -> u16 {
    let issued = ca.issue("server", names, validity).unwrap();
    let key = PrivateKeyDer::from_pem_file(&issued.key).unwrap();
    server(certs(&issued.cert), key).await
}

struct Bufs {
    incoming: Vec<u8>,
    record: Vec<u8>,
    outgoing: Vec<u8>,
}

impl Bufs {
    fn new() -> Self {
        Bufs {
            incoming: vec![0; MAX_RECORD],
            record: vec![0; MAX_RECORD],
            outgoing: vec![0; 2048],
        }
    }

    fn lend(&mut self) -> Buffers<'_> {
        Buffers {
            incoming: &mut self.incoming,
            record: &mut self.record,
            outgoing: &mut self.outgoing,
        }
    }
}

/// Connects to `port` as the firmware does, to `host`, trusting `roots`, at `now`.
async fn connect<'b>(
    port: u16,
    host: Host<'_>,
    roots: &[TrustAnchor<'_>],
    now: u64,
    bufs: &'b mut Bufs,
) -> Result<TlsStream<'b, FromTokio<TcpStream>>, Failure> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let peer = Peer {
        host,
        roots,
        now_unix_secs: now,
    };
    TlsStream::connect(FromTokio::new(tcp), bufs.lend(), &peer, rand_core::OsRng).await
}

async fn read_exact(tls: &mut TlsStream<'_, FromTokio<TcpStream>>, n: usize) -> Vec<u8> {
    let mut got = vec![0u8; n];
    let mut at = 0;
    while at < n {
        let k = tls.read(&mut got[at..]).await.unwrap();
        assert!(k > 0, "closed early");
        at += k;
    }
    got
}

#[tokio::test]
async fn the_right_root_gives_a_session_and_data_goes_both_ways() {
    let ca = TestCa::new("device-link-tls").unwrap();
    let port = server_for(&ca, &["localhost"], Validity::Now).await;
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    let mut tls = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs)
        .await
        .expect("a session");
    // Larger than one outgoing record (2048 - 128): split into several, echoed back.
    let message: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    tls.write_all(&message).await.unwrap();
    tls.flush().await.unwrap();
    assert_eq!(read_exact(&mut tls, message.len()).await, message);
    assert!(tls.close().await.is_some());
}

#[tokio::test]
async fn a_wrong_root_is_refused_as_unknown_issuer() {
    let ca = TestCa::new("device-link-server").unwrap();
    let other = TestCa::new("device-link-other").unwrap();
    let port = server_for(&ca, &["localhost"], Validity::Now).await;
    let roots = [anchor(&root_der(&other))];
    let mut bufs = Bufs::new();
    let refused = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs).await;
    assert_eq!(refused.err(), Some(Failure::UnknownIssuer));
}

/// A certificate that signs itself is an unknown issuer, and says it is self-signed — also when
/// a root of the same name is trusted (its key did not sign it: webpki reports that signature,
/// not the missing issuer).
#[tokio::test]
async fn a_self_signed_certificate_is_refused_as_unknown_issuer_self_signed() {
    let ca = TestCa::new("device-link-selfie").unwrap();
    let own = ca.self_signed("selfie", &["localhost"]).unwrap();
    let key = PrivateKeyDer::from_pem_file(&own.key).unwrap();
    let port = server(certs(&own.cert), key).await;
    let namesake = TestCa::new("localhost").unwrap();
    for root in [&ca, &namesake] {
        let roots = [anchor(&root_der(root))];
        let mut bufs = Bufs::new();
        let refused = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs).await;
        assert_eq!(refused.err(), Some(Failure::SelfSigned));
    }
    assert_eq!(
        Failure::SelfSigned.to_string(),
        "certificate not issued by a trusted root (unknown issuer: self-signed)"
    );
}

#[tokio::test]
async fn an_expired_certificate_is_refused() {
    let ca = TestCa::new("device-link-expired").unwrap();
    let port = server_for(&ca, &["localhost"], Validity::Expired).await;
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    let refused = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs).await;
    assert_eq!(refused.err(), Some(Failure::Expired));
}

#[tokio::test]
async fn a_clock_before_the_certificate_is_refused_as_not_valid_yet() {
    let ca = TestCa::new("device-link-early").unwrap();
    let port = server_for(&ca, &["localhost"], Validity::Now).await;
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    // 2019: before the certificates' notBefore (2020).
    let refused = connect(
        port,
        Host::Name("localhost"),
        &roots,
        1_550_000_000,
        &mut bufs,
    )
    .await;
    assert_eq!(refused.err(), Some(Failure::NotValidYet));
}

#[tokio::test]
async fn a_certificate_for_another_name_is_refused() {
    let ca = TestCa::new("device-link-name").unwrap();
    let port = server_for(&ca, &["other.example"], Validity::Now).await;
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    let refused = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs).await;
    assert_eq!(refused.err(), Some(Failure::WrongName));
}

#[tokio::test]
async fn an_ip_address_is_checked_against_the_certificates_ip_name() {
    let ca = TestCa::new("device-link-ip").unwrap();
    let port = server_for(&ca, &["127.0.0.1"], Validity::Now).await;
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    let host = Host::Ipv4(Ipv4Addr::LOCALHOST);
    assert!(connect(port, host, &roots, NOW, &mut bufs).await.is_ok());
    // The same server reached as 127.0.0.2 (also loopback): not the certificate's address.
    let port2 = server_for(&ca, &["127.0.0.2"], Validity::Now).await;
    let mut bufs = Bufs::new();
    let refused = connect(port2, host, &roots, NOW, &mut bufs).await;
    assert_eq!(refused.err(), Some(Failure::WrongName));
}

/// A leaf issued by a certificate that is not a CA (signed by the real CA as an ordinary site
/// certificate): the chain must be refused, although every signature in it is right.
#[tokio::test]
async fn a_chain_through_a_certificate_that_is_no_ca_is_refused() {
    use rcgen::DnType;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, date_time_ymd};
    let mut root_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    root_params
        .distinguished_name
        .push(DnType::CommonName, "Test Root");
    root_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    root_params.not_before = date_time_ymd(2020, 1, 1);
    root_params.not_after = date_time_ymd(4096, 1, 1);
    let root_key = KeyPair::generate().unwrap();
    let root = root_params.self_signed(&root_key).unwrap();
    let root_issuer = Issuer::from_params(&root_params, &root_key);

    // An ordinary site certificate (no CA flag)...
    let mut site_params = CertificateParams::new(vec!["site.example".to_string()]).unwrap();
    site_params
        .distinguished_name
        .push(DnType::CommonName, "site.example");
    site_params.is_ca = IsCa::ExplicitNoCa;
    site_params.not_before = date_time_ymd(2020, 1, 1);
    site_params.not_after = date_time_ymd(4096, 1, 1);
    let site_key = KeyPair::generate().unwrap();
    let site = site_params.signed_by(&site_key, &root_issuer).unwrap();
    let site_issuer = Issuer::from_params(&site_params, &site_key);

    // ...signs a certificate for the victim's name.
    let mut leaf_params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf_params.not_before = date_time_ymd(2020, 1, 1);
    leaf_params.not_after = date_time_ymd(4096, 1, 1);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &site_issuer).unwrap();

    let chain = vec![leaf.der().clone(), site.der().clone()];
    let key = PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    let port = server(chain, key).await;
    let roots = [anchor(root.der())];
    let mut bufs = Bufs::new();
    let refused = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs).await;
    assert_eq!(refused.err(), Some(Failure::NotACa));
}

/// A proxy that passes the server's bytes on one at a time, 1 ms apart, so that every record
/// arrives in pieces.
async fn trickle_proxy(target: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let server = TcpStream::connect(("127.0.0.1", target)).await.unwrap();
        let (mut cr, mut cw) = client.into_split();
        let (mut sr, mut sw) = server.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut cr, &mut sw).await;
        });
        let mut buf = [0u8; 1024];
        loop {
            let Ok(n) = sr.read(&mut buf).await else {
                return;
            };
            if n == 0 {
                return;
            }
            for b in &buf[..n] {
                if cw.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    port
}

/// The WebSocket client waits for the next byte under a ping timer and drops the read when
/// the timer fires; records that arrive a byte at a time must come through whole.
#[tokio::test]
async fn reads_dropped_half_way_through_records_lose_nothing() {
    let ca = TestCa::new("device-link-cancel").unwrap();
    let port = server_for(&ca, &["localhost"], Validity::Now).await;
    let proxy = trickle_proxy(port).await;
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    let mut tls = connect(proxy, Host::Name("localhost"), &roots, NOW, &mut bufs)
        .await
        .expect("a session through the proxy");
    let message: Vec<u8> = (0..300u32).map(|i| (i * 7 % 256) as u8).collect();
    // Three records.
    for part in message.chunks(100) {
        tls.write_all(part).await.unwrap();
        tls.flush().await.unwrap();
    }
    let mut got = Vec::new();
    let mut dropped = 0;
    while got.len() < message.len() {
        let mut buf = [0u8; 64];
        match tokio::time::timeout(Duration::from_millis(3), tls.read(&mut buf)).await {
            Ok(Ok(n)) => {
                assert!(n > 0, "closed early");
                got.extend_from_slice(&buf[..n]);
            }
            Ok(Err(e)) => panic!("the session broke: {e:?}"),
            Err(_) => dropped += 1,
        }
    }
    assert_eq!(got, message);
    assert!(dropped > 20, "reads were dropped half way ({dropped})");
}

/// A server that updates its traffic keys (TLS 1.3 `KeyUpdate`, which rustls sends on request
/// and when a key nears its limit): embedded-tls does not handle it. The read that meets it
/// fails with a protocol error, and nothing panics: the firmware's link ends and reconnects.
#[tokio::test]
async fn a_servers_key_update_ends_the_session_with_an_error_not_a_panic() {
    let ca = TestCa::new("device-link-key-update").unwrap();
    let issued = ca.issue("server", &["localhost"], Validity::Now).unwrap();
    let key = PrivateKeyDer::from_pem_file(&issued.key).unwrap();
    let acceptor = acceptor(certs(&issued.cert), key);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut tls = acceptor.accept(tcp).await.unwrap();
        let mut buf = [0u8; 16];
        let n = tls.read(&mut buf).await.unwrap();
        tls.write_all(&buf[..n]).await.unwrap();
        tls.flush().await.unwrap();
        // New keys, then data under them.
        tls.get_mut().1.refresh_traffic_keys().unwrap();
        tls.write_all(b"after").await.unwrap();
        tls.flush().await.unwrap();
        // Held open until the client has read (or failed to read) what follows.
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut rest)).await;
    });
    let roots = [anchor(&root_der(&ca))];
    let mut bufs = Bufs::new();
    let mut tls = connect(port, Host::Name("localhost"), &roots, NOW, &mut bufs)
        .await
        .expect("a session");
    tls.write_all(b"hello").await.unwrap();
    tls.flush().await.unwrap();
    assert_eq!(read_exact(&mut tls, 5).await, b"hello");
    let mut got = [0u8; 16];
    let after = tokio::time::timeout(Duration::from_secs(10), tls.read(&mut got))
        .await
        .expect("the key update is read, not waited on");
    assert!(matches!(after, Err(Failure::Protocol)), "{after:?}");
    drop(tls);
    served.await.unwrap();
}
