//! The server's certificate and its signature, checked by rustls-webpki (embedded-tls's
//! `TlsVerifier` hooks).
//!
//! [`check_chain`]: the leaf must chain to one of the roots through the intermediates the
//! server sent, every certificate within its dates at `now`, every issuer a CA
//! (`basicConstraints`) allowed to sign that far down (path length), the key usages and the
//! server-authentication purpose right, name constraints kept, every signature valid — and
//! the leaf must name the host the device connected to (DNS name or IP address, from the
//! `subjectAltName`). [`Verifier`] runs it on the server's `Certificate` message, keeps the
//! leaf, and checks the server's `CertificateVerify` signature over the handshake with the
//! leaf's key; [`Verifier::verified`] says whether both happened — the caller checks it after
//! the handshake, so a server that sends neither message (embedded-tls would go on without
//! them) is refused.

use alloc::vec::Vec;

use embedded_tls::{
    Aes128GcmSha256, CertificateEntryRef, CertificateRef, CertificateVerifyRef, SignatureScheme,
    TlsCipherSuite, TlsError, TlsVerifier,
};
use pki_types::{
    CertificateDer, ServerName, SignatureVerificationAlgorithm, TrustAnchor, UnixTime,
};
use sha2::Digest;
use webpki::{EndEntityCert, KeyUsage};

use super::{Failure, algs};

/// The transcript hash of the one cipher suite offered.
type Transcript = <Aes128GcmSha256 as TlsCipherSuite>::Hash;

/// The intermediates a server may send (beyond them the chain is refused).
const MAX_INTERMEDIATES: usize = 6;

/// Checks a server's certificate chain (`leaf` and `intermediates`, DER) for `name` at `now`
/// against `roots`.
///
/// # Errors
/// Why it does not verify ([`Failure`]).
pub fn check_chain(
    leaf: &[u8],
    intermediates: &[CertificateDer<'_>],
    roots: &[TrustAnchor<'_>],
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), Failure> {
    let der = CertificateDer::from(leaf);
    let cert = EndEntityCert::try_from(&der).map_err(Failure::from)?;
    cert.verify_for_usage(
        algs::ALL,
        roots,
        intermediates,
        now,
        KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(|e| match Failure::from(e) {
        // No chain to a root: a certificate that signs itself says so, whatever a root of
        // the same name made of its signature.
        Failure::UnknownIssuer | Failure::BadSignature if crate::cert::is_self_issued(leaf) => {
            Failure::SelfSigned
        }
        other => other,
    })?;
    cert.verify_is_valid_for_subject_name(name)
        .map_err(Failure::from)
}

/// Where a handshake's server authentication stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// No certificate yet.
    Waiting,
    /// The chain verified; its signature over the handshake not yet.
    Certified,
    /// Chain and signature verified.
    Verified,
}

/// The server's authentication in one handshake (see the module's documentation).
pub struct Verifier<'a> {
    roots: &'a [TrustAnchor<'a>],
    name: ServerName<'a>,
    now: UnixTime,
    /// The verified leaf (DER), for the `CertificateVerify`.
    leaf: Vec<u8>,
    /// The handshake hash up to the server's `Certificate`.
    transcript: Option<Transcript>,
    stage: Stage,
    /// Why the server was refused, if it was.
    pub(super) failure: Option<Failure>,
}

impl<'a> Verifier<'a> {
    /// A verifier for a server that must be `name`, at `now`, under `roots`.
    pub fn new(roots: &'a [TrustAnchor<'a>], name: ServerName<'a>, now: UnixTime) -> Self {
        Verifier {
            roots,
            name,
            now,
            leaf: Vec::new(),
            transcript: None,
            stage: Stage::Waiting,
            failure: None,
        }
    }

    /// `true` once the chain and the server's signature over the handshake both verified.
    pub fn verified(&self) -> bool {
        self.stage == Stage::Verified
    }

    fn refuse(&mut self, why: Failure, error: TlsError) -> Result<(), TlsError> {
        self.failure = Some(why);
        self.stage = Stage::Waiting;
        Err(error)
    }

    fn certificate(&mut self, cert: &CertificateRef<'_>) -> Result<(), Failure> {
        let mut entries = cert.entries.iter();
        let Some(CertificateEntryRef::X509(leaf)) = entries.next() else {
            return Err(Failure::NoCertificate);
        };
        let mut intermediates = [const { CertificateDer::from_slice(&[]) }; MAX_INTERMEDIATES];
        let mut n = 0;
        for entry in entries {
            let CertificateEntryRef::X509(der) = entry else {
                return Err(Failure::BadCertificate);
            };
            let slot = intermediates.get_mut(n).ok_or(Failure::UnknownIssuer)?;
            *slot = CertificateDer::from(*der);
            n += 1;
        }
        let intermediates = intermediates.get(..n).unwrap_or_default();
        check_chain(leaf, intermediates, self.roots, &self.name, self.now)?;
        self.leaf.clear();
        self.leaf.extend_from_slice(leaf);
        Ok(())
    }

    fn signature(&mut self, verify: &CertificateVerifyRef<'_>) -> Result<(), Failure> {
        // TLS 1.3 (RFC 8446 §4.4.3): the signature covers 64 spaces, the context string, a
        // zero byte and the transcript hash. PKCS#1 v1.5 is not allowed here.
        let alg: &dyn SignatureVerificationAlgorithm = match verify.signature_scheme {
            SignatureScheme::EcdsaSecp256r1Sha256 => algs::ECDSA_P256_SHA256,
            SignatureScheme::EcdsaSecp384r1Sha384 => algs::ECDSA_P384_SHA384,
            SignatureScheme::RsaPssRsaeSha256 => algs::RSA_PSS_SHA256,
            SignatureScheme::RsaPssRsaeSha384 => algs::RSA_PSS_SHA384,
            SignatureScheme::RsaPssRsaeSha512 => algs::RSA_PSS_SHA512,
            _ => return Err(Failure::BadSignature),
        };
        let transcript = self.transcript.take().ok_or(Failure::NoCertificate)?;
        let mut message = [0x20u8; 64 + 34 + 32];
        let context = b"TLS 1.3, server CertificateVerify\x00";
        for (d, s) in message.iter_mut().skip(64).zip(context) {
            *d = *s;
        }
        for (d, s) in message.iter_mut().skip(64 + 34).zip(transcript.finalize()) {
            *d = s;
        }
        let der = CertificateDer::from(self.leaf.as_slice());
        let cert = EndEntityCert::try_from(&der).map_err(Failure::from)?;
        cert.verify_signature(alg, &message, verify.signature)
            .map_err(|_| Failure::BadSignature)
    }
}

impl TlsVerifier<Aes128GcmSha256> for Verifier<'_> {
    fn set_hostname_verification(&mut self, _hostname: &str) -> Result<(), TlsError> {
        // The name to check was given to `new` (also for an IP address, which is never sent
        // as SNI); this is the same name.
        Ok(())
    }

    fn verify_certificate(
        &mut self,
        transcript: &Transcript,
        cert: CertificateRef<'_>,
    ) -> Result<(), TlsError> {
        if self.stage != Stage::Waiting {
            return self.refuse(Failure::BadCertificate, TlsError::InvalidHandshake);
        }
        match self.certificate(&cert) {
            Ok(()) => {
                self.transcript = Some(transcript.clone());
                self.stage = Stage::Certified;
                Ok(())
            }
            Err(why) => self.refuse(why, TlsError::InvalidCertificate),
        }
    }

    fn verify_signature(&mut self, verify: CertificateVerifyRef<'_>) -> Result<(), TlsError> {
        if self.stage != Stage::Certified {
            return self.refuse(Failure::NoCertificate, TlsError::InvalidHandshake);
        }
        match self.signature(&verify) {
            Ok(()) => {
                self.stage = Stage::Verified;
                Ok(())
            }
            Err(why) => self.refuse(why, TlsError::InvalidSignature),
        }
    }
}
