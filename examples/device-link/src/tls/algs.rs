//! The signature algorithms rustls-webpki checks certificates and the server's
//! `CertificateVerify` with, on RustCrypto's implementations: ECDSA on P-256 and P-384 (with
//! SHA-256 or SHA-384, as certificate chains mix them: ISRG Root X2 signs with P-384/SHA-384 a
//! CA whose P-256 leaves it signs with SHA-384), RSA PKCS#1 v1.5 (certificates) and RSA-PSS (a
//! TLS 1.3 server's signature with an RSA key), RSA keys of 2048 to 4096 bits. Ed25519 and
//! P-521 are not here: a chain that needs them is refused (`BadSignature`).

use pki_types::alg_id;
use pki_types::{AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm};
use sha2::{Digest, Sha256, Sha384, Sha512};

/// A hash function, and the digest of a message under it.
#[derive(Debug, Clone, Copy)]
enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    /// The digest of `message` in the first bytes of a 64-byte array, and its length.
    fn digest(self, message: &[u8]) -> ([u8; 64], usize) {
        let mut out = [0u8; 64];
        let n = match self {
            Hash::Sha256 => copy(&mut out, &Sha256::digest(message)),
            Hash::Sha384 => copy(&mut out, &Sha384::digest(message)),
            Hash::Sha512 => copy(&mut out, &Sha512::digest(message)),
        };
        (out, n)
    }
}

fn copy(out: &mut [u8; 64], digest: &[u8]) -> usize {
    let mut n = 0;
    for (d, s) in out.iter_mut().zip(digest) {
        *d = *s;
        n += 1;
    }
    n
}

/// The curve of an ECDSA key.
#[derive(Debug, Clone, Copy)]
enum Curve {
    P256,
    P384,
}

/// ECDSA with a curve and a hash.
#[derive(Debug)]
struct Ecdsa {
    curve: Curve,
    hash: Hash,
    signature_alg: AlgorithmIdentifier,
}

impl SignatureVerificationAlgorithm for Ecdsa {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        let (digest, n) = self.hash.digest(message);
        let prehash = digest.get(..n).ok_or(InvalidSignature)?;
        match self.curve {
            Curve::P256 => {
                let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| InvalidSignature)?;
                let sig =
                    p256::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
                key.verify_prehash(prehash, &sig)
                    .map_err(|_| InvalidSignature)
            }
            Curve::P384 => {
                let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(public_key)
                    .map_err(|_| InvalidSignature)?;
                let sig =
                    p384::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
                key.verify_prehash(prehash, &sig)
                    .map_err(|_| InvalidSignature)
            }
        }
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        match self.curve {
            Curve::P256 => alg_id::ECDSA_P256,
            Curve::P384 => alg_id::ECDSA_P384,
        }
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg
    }
}

/// RSA padding.
#[derive(Debug, Clone, Copy)]
enum Padding {
    Pkcs1,
    Pss,
}

/// RSA with a padding and a hash.
#[derive(Debug)]
struct Rsa {
    padding: Padding,
    hash: Hash,
    signature_alg: AlgorithmIdentifier,
}

/// The smallest RSA key accepted, in bytes (2048 bits, as rustls and browsers require).
const RSA_MIN_BYTES: usize = 2048 / 8;

impl SignatureVerificationAlgorithm for Rsa {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        use rsa::pkcs1::DecodeRsaPublicKey;
        use rsa::traits::PublicKeyParts;
        // At most 4096 bits (the `rsa` crate's own limit).
        let key = rsa::RsaPublicKey::from_pkcs1_der(public_key).map_err(|_| InvalidSignature)?;
        if key.size() < RSA_MIN_BYTES {
            return Err(InvalidSignature);
        }
        let (digest, n) = self.hash.digest(message);
        let hashed = digest.get(..n).ok_or(InvalidSignature)?;
        let verified = match (self.padding, self.hash) {
            (Padding::Pkcs1, Hash::Sha256) => {
                key.verify(rsa::Pkcs1v15Sign::new::<Sha256>(), hashed, signature)
            }
            (Padding::Pkcs1, Hash::Sha384) => {
                key.verify(rsa::Pkcs1v15Sign::new::<Sha384>(), hashed, signature)
            }
            (Padding::Pkcs1, Hash::Sha512) => {
                key.verify(rsa::Pkcs1v15Sign::new::<Sha512>(), hashed, signature)
            }
            (Padding::Pss, Hash::Sha256) => {
                key.verify(rsa::Pss::new::<Sha256>(), hashed, signature)
            }
            (Padding::Pss, Hash::Sha384) => {
                key.verify(rsa::Pss::new::<Sha384>(), hashed, signature)
            }
            (Padding::Pss, Hash::Sha512) => {
                key.verify(rsa::Pss::new::<Sha512>(), hashed, signature)
            }
        };
        verified.map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::RSA_ENCRYPTION
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg
    }
}

/// The statics of the algorithms, each an `Ecdsa` or `Rsa` with its two parameters and its
/// identifier, and [`ALL`] listing them.
macro_rules! algorithms {
    ($($(#[$doc:meta])* $name:ident = $kind:ident { $f1:ident: $v1:expr, hash: $hash:ident, $id:ident };)*) => {
        $(
            $(#[$doc])*
            pub static $name: &dyn SignatureVerificationAlgorithm = &$kind {
                $f1: $v1,
                hash: Hash::$hash,
                signature_alg: alg_id::$id,
            };
        )*
        /// Every algorithm a certificate in the chain may be signed with.
        pub static ALL: &[&dyn SignatureVerificationAlgorithm] = &[$($name),*];
    };
}

algorithms! {
    /// ECDSA P-256 with SHA-256.
    ECDSA_P256_SHA256 = Ecdsa { curve: Curve::P256, hash: Sha256, ECDSA_SHA256 };
    /// ECDSA P-256 with SHA-384.
    ECDSA_P256_SHA384 = Ecdsa { curve: Curve::P256, hash: Sha384, ECDSA_SHA384 };
    /// ECDSA P-384 with SHA-256.
    ECDSA_P384_SHA256 = Ecdsa { curve: Curve::P384, hash: Sha256, ECDSA_SHA256 };
    /// ECDSA P-384 with SHA-384.
    ECDSA_P384_SHA384 = Ecdsa { curve: Curve::P384, hash: Sha384, ECDSA_SHA384 };
    /// RSA PKCS#1 v1.5 with SHA-256 (2048–4096-bit keys).
    RSA_PKCS1_SHA256 = Rsa { padding: Padding::Pkcs1, hash: Sha256, RSA_PKCS1_SHA256 };
    /// RSA PKCS#1 v1.5 with SHA-384.
    RSA_PKCS1_SHA384 = Rsa { padding: Padding::Pkcs1, hash: Sha384, RSA_PKCS1_SHA384 };
    /// RSA PKCS#1 v1.5 with SHA-512.
    RSA_PKCS1_SHA512 = Rsa { padding: Padding::Pkcs1, hash: Sha512, RSA_PKCS1_SHA512 };
    /// RSA-PSS with SHA-256 (salt as long as the hash).
    RSA_PSS_SHA256 = Rsa { padding: Padding::Pss, hash: Sha256, RSA_PSS_SHA256 };
    /// RSA-PSS with SHA-384.
    RSA_PSS_SHA384 = Rsa { padding: Padding::Pss, hash: Sha384, RSA_PSS_SHA384 };
    /// RSA-PSS with SHA-512.
    RSA_PSS_SHA512 = Rsa { padding: Padding::Pss, hash: Sha512, RSA_PSS_SHA512 };
}
