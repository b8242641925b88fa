//! TLS for every outbound link: the xiaozhi WebSocket (`wss://`), the MQTT broker (`mqtts://`)
//! and the xiaozhi OTA/config check (`https://`) share one [`Tls`] setting and so one rustls
//! `ClientConfig`.
//!
//! - **Roots:** the system's (rustls-native-certs: `/etc/ssl/certs` and the like; Mozilla's
//!   webpki-roots compiled in where the system has none), plus the certificates of any PEM file
//!   given ([`Tls::ca_file`], device-sim's `--ca-file`): a self-hosted server's own CA.
//! - **Verification:** rustls's WebPKI verifier, nothing else: the chain must end at one of those
//!   roots, every certificate must be within its validity period, and the server's certificate
//!   must name the host the URL names. There is no way to turn it off. (It is wrapped only to
//!   say why it refused: a certificate that signs itself is an "unknown issuer (self-signed)",
//!   whatever a root of the same name made of its signature.)
//! - **Versions:** TLS 1.3 and 1.2 (some brokers still speak only 1.2), the *ring* provider.
//! - **Refusals say why:** [`explain`] turns the error a link failed with into a sentence
//!   ("unknown issuer", "expired", "not valid for the name …"), and the links use it in their
//!   errors and events.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};

/// Which roots a TLS link trusts: the system's, plus the CAs of PEM files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tls {
    /// PEM files whose certificates are trusted as roots, besides the system's.
    pub ca_files: Vec<PathBuf>,
    /// Trust only the [`ca_files`](Self::ca_files), not the system's roots (a test, or a device
    /// that talks to one self-hosted server).
    pub only_ca_files: bool,
}

/// Why the TLS setting cannot be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum SetupError {
    /// A CA file cannot be read, or holds no certificate.
    CaFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// No root at all: no system roots and no CA file.
    NoRoots,
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::CaFile { path, why } => write!(f, "--ca-file {}: {why}", path.display()),
            SetupError::NoRoots => f.write_str("no trusted root certificates (give --ca-file)"),
        }
    }
}

impl std::error::Error for SetupError {}

impl Tls {
    /// The system's roots only.
    pub fn system() -> Self {
        Tls::default()
    }

    /// Also trusts the certificates in the PEM file `path` (repeatable).
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_files.push(path.into());
        self
    }

    /// Trusts only the CA files, not the system's roots.
    pub fn only_ca_files(mut self) -> Self {
        self.only_ca_files = true;
        self
    }

    /// The rustls client configuration: TLS 1.3 and 1.2 with the *ring* provider, the roots
    /// above, no client certificate.
    ///
    /// # Errors
    /// A CA file that cannot be read or holds no certificate; no root at all.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, SetupError> {
        let mut roots = RootCertStore::empty();
        if !self.only_ca_files {
            let native = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(native.certs);
            if added == 0 {
                roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            }
        }
        for path in &self.ca_files {
            for cert in read_pem(path)? {
                roots.add(cert).map_err(|e| SetupError::CaFile {
                    path: path.clone(),
                    why: format!("not a usable CA certificate: {e}"),
                })?;
            }
        }
        if roots.is_empty() {
            return Err(SetupError::NoRoots);
        }
        #[allow(
            deprecated,
            reason = "ring's provider has no post-quantum key exchange; aws-lc-rs, which has, \
                      needs cmake and a long C build on every machine that builds the simulator"
        )]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|_| SetupError::NoRoots)?;
        let config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|_| SetupError::NoRoots)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Explained(webpki)))
            .with_no_client_auth();
        Ok(Arc::new(config))
    }
}

/// rustls's WebPKI verifier, every check its own; only a refusal of a certificate that signs
/// itself is reported as such ([`SelfSigned`]).
#[derive(Debug)]
struct Explained(Arc<WebPkiServerVerifier>);

/// The server's certificate signs itself (its issuer is its own subject) and no root vouches
/// for it: an unknown issuer.
#[derive(Debug)]
struct SelfSigned;

impl fmt::Display for SelfSigned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("self-signed")
    }
}

impl std::error::Error for SelfSigned {}

impl ServerCertVerifier for Explained {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match e {
                // No chain to a root: a certificate that signs itself says so, whatever a root
                // of the same name made of its signature.
                rustls::Error::InvalidCertificate(
                    CertificateError::UnknownIssuer
                    | CertificateError::BadSignature
                    | CertificateError::UnsupportedSignatureAlgorithmContext { .. }
                    | CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext { .. },
                ) if device_link::cert::is_self_issued(end_entity) => {
                    rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(
                        Arc::new(SelfSigned),
                    )))
                }
                other => other,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The certificates of a PEM file.
fn read_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, SetupError> {
    let bad = |why: String| SetupError::CaFile {
        path: path.to_path_buf(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no CERTIFICATE in it".into()));
    }
    Ok(certs)
}

/// A host name or address as TLS checks it against the certificate.
///
/// # Errors
/// Not a DNS name or an IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).map_err(|_| format!("{host:?} is not a host name"))
}

/// Says why a TLS handshake failed, if `err` (or an error it wraps: an `io::Error` from
/// tokio-rustls, tungstenite's, rumqttc's, hyper's) is a rustls error; `None` otherwise.
pub fn explain(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(describe(tls));
        }
        // An io::Error hides its inner error from `source()` in some versions: look inside.
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(tls) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(describe(tls));
        }
        cur = e.source();
    }
    None
}

/// A rustls error as a sentence: `TLS: certificate refused — <reason>: …` for a certificate
/// that does not verify, `TLS: …` for anything else.
pub fn describe(e: &rustls::Error) -> String {
    let rustls::Error::InvalidCertificate(c) = e else {
        return format!("TLS: {e}");
    };
    let why = match c {
        CertificateError::UnknownIssuer => "unknown issuer: the server's certificate does not \
             chain to a trusted root (give the CA that signed it with --ca-file)"
            .to_string(),
        CertificateError::Other(o) if o.0.downcast_ref::<SelfSigned>().is_some() => {
            "unknown issuer (self-signed): the server's certificate signs itself and no trusted \
             root issued it (give the CA that signed it, or that certificate, with --ca-file)"
                .to_string()
        }
        CertificateError::Expired => {
            "expired: the server's certificate is past its validity".into()
        }
        CertificateError::ExpiredContext { time, not_after } => format!(
            "expired: the server's certificate was valid until {} (unix time); it is now {}",
            not_after.as_secs(),
            time.as_secs()
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "not yet valid: the server's certificate starts later (is the clock right?)".into()
        }
        CertificateError::NotValidForName => {
            "wrong name: the server's certificate is not valid for the host in the URL".into()
        }
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "wrong name: the server's certificate is not valid for {} (it names {})",
            shown_name(expected),
            if presented.is_empty() {
                "nothing".to_string()
            } else {
                presented.join(", ")
            }
        ),
        CertificateError::Revoked => "revoked: the server's certificate was revoked".into(),
        CertificateError::BadSignature => {
            "bad signature: the server's certificate chain does not verify".into()
        }
        other => format!("invalid certificate ({other:?})"),
    };
    format!("TLS: certificate refused — {why}")
}

/// The name a certificate was checked against.
fn shown_name(name: &ServerName<'_>) -> String {
    match name {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")]

    use super::*;

    #[test]
    fn refusals_name_the_reason() {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert!(
            describe(&unknown).contains("unknown issuer"),
            "{}",
            describe(&unknown)
        );
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, unknown);
        assert!(explain(&io).unwrap().contains("unknown issuer"));
        let wrong = rustls::Error::InvalidCertificate(CertificateError::NotValidForName);
        assert!(describe(&wrong).starts_with("TLS: certificate refused — wrong name"));
        let other = rustls::Error::HandshakeNotComplete;
        assert!(describe(&other).starts_with("TLS: "));
        assert!(explain(&std::io::Error::other("plain")).is_none());
    }

    #[test]
    fn a_ca_file_that_is_not_pem_is_refused_with_its_name() {
        let dir = std::env::temp_dir().join(format!("mcp-host-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("empty.pem");
        std::fs::write(&file, "not a certificate\n").unwrap();
        let e = Tls::system().ca_file(&file).client_config().unwrap_err();
        assert!(e.to_string().contains("empty.pem"), "{e}");
        assert!(e.to_string().contains("no CERTIFICATE"), "{e}");
        let missing = Tls::system()
            .ca_file(dir.join("missing.pem"))
            .client_config();
        assert!(missing.is_err());
        assert!(matches!(
            Tls::system().only_ca_files().client_config(),
            Err(SetupError::NoRoots)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
