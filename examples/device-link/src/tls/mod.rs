//! A TLS 1.3 client for a device, over any `embedded-io-async` stream (an embassy-net
//! `TcpSocket` on the firmware, a tokio socket in the host tests), with the server's
//! certificate checked in full.
//!
//! - **Protocol**: embedded-tls 0.19 (TLS 1.3 only; `TLS_AES_128_GCM_SHA256`, key exchange on
//!   P-256), no allocation for its records: the caller lends the buffers ([`Buffers`]).
//! - **Certificates** ([`verify`]): rustls-webpki 0.103 — the chain to one of the caller's
//!   roots, dates against the caller's clock, `basicConstraints` (an intermediate must be a CA),
//!   path length, key usage and server-authentication purpose, name constraints, the host name
//!   (DNS or IP) — with RustCrypto's ECDSA and RSA ([`algs`]). The server must prove it holds
//!   the leaf's key (its `CertificateVerify`); a handshake without it is refused. There is no
//!   mode that skips any of this.
//! - **Cancel-safe reads** ([`records`]): [`TlsStream::read`] may be dropped at any await (a
//!   ping timer around it) without losing a byte; see there. Writes are not: a write given up
//!   half way ends the connection.
//! - **Errors say why** ([`Failure`]): unknown issuer, expired, not yet valid, wrong name, an
//!   issuer that is no CA, a bad signature, …; none quotes the wire.
//!
//! What it does not do: TLS 1.2 (a server that speaks only 1.2 is refused with a handshake
//! error), revocation (no CRL or OCSP: a revoked certificate is accepted until it expires),
//! client certificates, session resumption, Ed25519 or P-521 certificates. A server's
//! `KeyUpdate` is not handled by embedded-tls: the read that meets it fails with
//! [`Failure::Protocol`] and the link ends (tested in `tests/tls.rs`). Any other handshake
//! message after the handshake, except a session ticket, makes embedded-tls 0.19 panic; only
//! the server that holds the session's keys can send one (records are authenticated).

pub mod algs;
pub mod records;
pub mod verify;

use core::fmt;

use embedded_io::ErrorKind;
use embedded_io_async::{ErrorType, Read, Write};
use embedded_tls::{
    Aes128GcmSha256, CryptoProvider, TlsConfig, TlsConnection, TlsContext, TlsError, TlsVerifier,
};
pub use pki_types::{Der, TrustAnchor};
use pki_types::{DnsName, IpAddr, Ipv4Addr, Ipv6Addr, ServerName, UnixTime};
use rand_core::CryptoRngCore;

pub use records::{MAX_RECORD, Records, RecordsError};
pub use verify::{Verifier, check_chain};

use crate::url::Host;

/// Why a TLS connection was not made (or ended). No variant holds text from the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The chain does not lead to any of the roots compiled in.
    UnknownIssuer,
    /// The server's certificate signs itself (no root issued it): an unknown issuer, whatever
    /// a root of the same name made of its signature.
    SelfSigned,
    /// A certificate of the chain has expired.
    Expired,
    /// A certificate of the chain is not valid yet (or the device's clock is behind).
    NotValidYet,
    /// The certificate does not name the host connected to.
    WrongName,
    /// A certificate that signed another is not a CA (`basicConstraints`), or a CA certificate
    /// was presented as the server's, or a path length limit was broken.
    NotACa,
    /// A signature in the chain, or the server's signature over the handshake, does not verify
    /// (or uses an algorithm not supported here).
    BadSignature,
    /// A certificate is malformed, or unusable for a server (key usage, purpose, name
    /// constraints, an unsupported critical extension).
    BadCertificate,
    /// The handshake ended without the server proving its certificate.
    NoCertificate,
    /// The host cannot be checked against a certificate (not a DNS name or an address).
    BadHostName,
    /// The TLS handshake or a record failed (an alert, a malformed message, TLS 1.2 only).
    Protocol,
    /// The server sent a record larger than TLS allows or the buffer holds.
    TooBig,
    /// The connection failed underneath (reset, timeout).
    Io(ErrorKind),
    /// The connection ended.
    Closed,
}

impl From<webpki::Error> for Failure {
    fn from(e: webpki::Error) -> Self {
        use webpki::Error as E;
        match e {
            E::UnknownIssuer => Failure::UnknownIssuer,
            E::CertExpired { .. } => Failure::Expired,
            E::CertNotValidYet { .. } => Failure::NotValidYet,
            E::CertNotValidForName(_) => Failure::WrongName,
            E::CaUsedAsEndEntity | E::EndEntityUsedAsCa | E::PathLenConstraintViolated => {
                Failure::NotACa
            }
            E::InvalidSignatureForPublicKey
            | E::UnsupportedSignatureAlgorithmContext(_)
            | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_)
            | E::SignatureAlgorithmMismatch => Failure::BadSignature,
            _ => Failure::BadCertificate,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Failure::UnknownIssuer => "certificate not issued by a trusted root (unknown issuer)",
            Failure::SelfSigned => {
                "certificate not issued by a trusted root (unknown issuer: self-signed)"
            }
            Failure::Expired => "certificate expired",
            Failure::NotValidYet => "certificate not valid yet (or the clock is behind)",
            Failure::WrongName => "certificate not valid for this host name",
            Failure::NotACa => "a certificate in the chain signed another without being a CA",
            Failure::BadSignature => "a signature does not verify",
            Failure::BadCertificate => "malformed or unusable certificate",
            Failure::NoCertificate => "the server did not prove a certificate",
            Failure::BadHostName => "the host name cannot be checked against a certificate",
            Failure::Protocol => "TLS handshake or record failed",
            Failure::TooBig => "TLS record too large",
            Failure::Io(_) => "connection failed",
            Failure::Closed => "connection closed",
        };
        f.write_str(s)
    }
}

impl core::error::Error for Failure {}

impl embedded_io::Error for Failure {
    fn kind(&self) -> ErrorKind {
        match self {
            Failure::Io(kind) => *kind,
            Failure::Closed => ErrorKind::ConnectionReset,
            Failure::TooBig => ErrorKind::OutOfMemory,
            _ => ErrorKind::InvalidData,
        }
    }
}

fn failure(e: TlsError) -> Failure {
    match e {
        TlsError::Io(ErrorKind::OutOfMemory) => Failure::TooBig,
        TlsError::Io(kind) => Failure::Io(kind),
        TlsError::IoError | TlsError::ConnectionClosed => Failure::Closed,
        TlsError::InsufficientSpace => Failure::TooBig,
        _ => Failure::Protocol,
    }
}

/// The buffers one connection borrows.
pub struct Buffers<'b> {
    /// Records as they arrive ([`Records`]): at least [`MAX_RECORD`] bytes.
    pub incoming: &'b mut [u8],
    /// The record being decrypted: at least [`MAX_RECORD`] bytes.
    pub record: &'b mut [u8],
    /// Records going out: a few KiB (each write is split into records of this size, less
    /// 128 bytes of overhead).
    pub outgoing: &'b mut [u8],
}

/// What the device connects to, and how it checks the server.
pub struct Peer<'a> {
    /// The host from the URL: the name checked against the certificate (and sent as SNI when
    /// it is a DNS name).
    pub host: Host<'a>,
    /// The roots a chain must lead to.
    pub roots: &'a [TrustAnchor<'a>],
    /// Now (seconds since 1970): a device that has no time yet must not connect.
    pub now_unix_secs: u64,
}

/// The crypto provider: the RNG and the verifier.
struct Provider<'v, 'a, R> {
    rng: R,
    verifier: &'v mut Verifier<'a>,
}

impl<R: CryptoRngCore> CryptoProvider for Provider<'_, '_, R> {
    type CipherSuite = Aes128GcmSha256;
    type Signature = [u8; 0];

    fn rng(&mut self) -> impl CryptoRngCore {
        &mut self.rng
    }

    fn verifier(&mut self) -> Result<&mut impl TlsVerifier<Self::CipherSuite>, TlsError> {
        Ok(&mut *self.verifier)
    }
}

/// A TLS session over `S`: `embedded-io-async` `Read` (cancel-safe) and `Write`.
pub struct TlsStream<'b, S: Read + Write> {
    conn: Option<TlsConnection<'b, Records<'b, S>, Aes128GcmSha256>>,
}

impl<'b, S: Read + Write> TlsStream<'b, S> {
    /// Runs the handshake over `io` (connected already) with `peer`; the session once the server
    /// proved a certificate that verifies. Bound it with a timeout of your own: a server that
    /// stalls stalls it.
    ///
    /// # Errors
    /// Why not ([`Failure`]): the certificate's fault, the protocol's, or the connection's.
    pub async fn connect(
        io: S,
        buffers: Buffers<'b>,
        peer: &Peer<'_>,
        rng: impl CryptoRngCore,
    ) -> Result<Self, Failure> {
        let name: ServerName<'_> = match peer.host {
            Host::Name(n) => DnsName::try_from(n)
                .map(ServerName::DnsName)
                .map_err(|_| Failure::BadHostName)?,
            Host::Ipv4(a) => ServerName::IpAddress(IpAddr::V4(Ipv4Addr::from(a.octets()))),
            Host::Ipv6(a) => ServerName::IpAddress(IpAddr::V6(Ipv6Addr::from(a.segments()))),
        };
        let mut config = TlsConfig::new().enable_rsa_signatures();
        if let Host::Name(n) = peer.host {
            // SNI names a DNS host only (RFC 6066 §3).
            config = config.with_server_name(n);
        }
        let now = UnixTime::since_unix_epoch(core::time::Duration::from_secs(peer.now_unix_secs));
        let mut verifier = Verifier::new(peer.roots, name, now);
        let mut conn = TlsConnection::new(
            Records::new(io, buffers.incoming),
            buffers.record,
            buffers.outgoing,
        );
        let provider = Provider {
            rng,
            verifier: &mut verifier,
        };
        match conn.open(TlsContext::new(&config, provider)).await {
            Ok(()) if verifier.verified() => Ok(TlsStream { conn: Some(conn) }),
            Ok(()) => Err(Failure::NoCertificate),
            Err(e) => Err(verifier.failure.unwrap_or(failure(e))),
        }
    }

    /// Sends the TLS close (`close_notify`) and gives the stream back (`None` when it was
    /// closed already); the stream may have failed meanwhile.
    pub async fn close(&mut self) -> Option<S> {
        let conn = self.conn.take()?;
        let records = match conn.close().await {
            Ok(r) => r,
            Err((r, _)) => r,
        };
        Some(records.into_inner())
    }

    fn conn(&mut self) -> Result<&mut TlsConnection<'b, Records<'b, S>, Aes128GcmSha256>, Failure> {
        self.conn.as_mut().ok_or(Failure::Closed)
    }
}

impl<S: Read + Write> ErrorType for TlsStream<'_, S> {
    type Error = Failure;
}

impl<S: Read + Write> Read for TlsStream<'_, S> {
    /// Decrypted bytes; `Ok(0)` when the server closed the session (or the connection ended).
    /// Cancel-safe: dropped at any await, nothing is lost.
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Failure> {
        match self.conn()?.read(buf).await {
            Ok(n) => Ok(n),
            Err(TlsError::ConnectionClosed | TlsError::IoError) => Ok(0),
            Err(e) => Err(failure(e)),
        }
    }
}

impl<S: Read + Write> Write for TlsStream<'_, S> {
    /// Buffers `buf` into the outgoing record (sending it when full); [`Write::flush`] sends
    /// the rest.
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Failure> {
        self.conn()?.write(buf).await.map_err(failure)
    }

    async fn flush(&mut self) -> Result<(), Failure> {
        self.conn()?.flush().await.map_err(failure)
    }
}
