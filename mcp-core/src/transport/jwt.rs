//! OAuth access tokens on the HTTP endpoint (feature `jwt`): the device as an OAuth 2.1
//! *resource server* that accepts JSON Web Tokens issued by one authorization server, sans-IO
//! and without allocation.
//!
//! An MCP client (revision 2025-06-18 and later) that meets the device's 401 reads the
//! protected-resource metadata ([`auth::Resource::write_metadata_for`](super::auth::Resource::write_metadata_for)),
//! which names the authorization server; it registers there, lets its user log in, and gets an
//! access token for this device — `resource=` the endpoint's URL (RFC 8707), so the token's
//! `aud` is that URL. [`verify`] decides whether such a token admits a request:
//!
//! 1. at most [`MAX_JWT_LEN`] bytes, three base64url parts (RFC 7515 compact form), the header
//!    at most [`MAX_HEADER_LEN`] bytes decoded (the claims at most [`MAX_CLAIMS_LEN`]);
//! 2. the header's `alg` is `ES256` or `RS256` — nothing else: not `none`, not `HS256` (a
//!    token MAC'd with a public key as the secret), no `crit` extension;
//! 3. the key: the one of the [`Jwks`] whose `kid` the header names (without `kid`, the only key
//!    that fits the algorithm), of the algorithm's type (`EC` P-256 / `RSA`), its `alg` and
//!    `use` (when given) fitting;
//! 4. the signature over `header.payload`, with that key (ECDSA P-256 + SHA-256 as 64 bytes
//!    `r‖s`; RSASSA-PKCS1-v1_5 + SHA-256, 2048 to 4096-bit keys, the whole encoded message
//!    compared);
//! 5. only then the claims ([`Rules`]): `iss` exactly the issuer; `aud` (a string, or an array
//!    with it) exactly the audience; `exp` present, and not passed (`now <= exp + leeway`); `nbf`,
//!    when present, reached (`nbf <= now + leeway`); `scope` (space-separated, RFC 9068)
//!    holding every scope the rules require.
//!
//! Header and claims are read with the engine's own JSON checker; a member that matters here
//! appearing twice makes the token malformed (two parsers must never read two values).
//!
//! The keys come from the authorization server's JWKS document (`jwks_uri` of its RFC 8414
//! metadata). A host fetches it and keeps it (device-sim: `--oauth-issuer`); a firmware has no
//! business fetching keys at run time — give it the document at build time:
//!
//! ```
//! # #[cfg(feature = "jwt")] {
//! use mcp_core::transport::jwt::{Jwks, JwtError, Rules, verify};
//!
//! // include_str!("../as-keys.json") in a firmware.
//! const KEYS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"as-1","alg":"ES256","use":"sig",
//!   "x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}"#;
//! let keys = Jwks::new(KEYS.as_bytes()).unwrap();
//! let rules = Rules::new("https://auth.example.com", "http://lamp.local/mcp").scopes(&["mcp:tools"]);
//! // A token that is not a JWT at all:
//! assert_eq!(verify(b"not-a-jwt", &keys, &rules, 1_800_000_000), Err(JwtError::Malformed));
//! # }
//! ```
//!
//! The time (`now`, Unix seconds) is the caller's: a firmware needs a wall clock (SNTP) to take
//! OAuth tokens at all. Work and memory are bounded: one verification decodes at most
//! [`MAX_JWT_LEN`] bytes into buffers on the stack (about 6 KiB; RS256's 4096-bit arithmetic
//! takes a few KiB more; not measured on a chip yet) and does one signature check; the key set
//! is only scanned.

use base64ct::{Base64UrlUnpadded, Encoding as _};
use crypto_bigint::modular::runtime_mod::{DynResidue, DynResidueParams};
use crypto_bigint::{Encoding, Integer as _, U64, U2048, U3072, U4096, Uint};
use p256::ecdsa::signature::Verifier as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::wire::json::{Json, JsonStr, Kind};

/// The longest token [`verify`] reads, in bytes; longer ones are [`JwtError::TooLong`].
pub const MAX_JWT_LEN: usize = 4096;

/// The longest header [`verify`] reads, in bytes once decoded; a longer one is
/// [`JwtError::Malformed`].
pub const MAX_HEADER_LEN: usize = 512;
/// The longest claims [`verify`] reads, in bytes once decoded; longer ones are
/// [`JwtError::Malformed`] (after the signature check, as every claim).
pub const MAX_CLAIMS_LEN: usize = 3072;
/// The longest signature or RSA modulus, in bytes (4096 bits).
const MAX_RSA: usize = 512;
/// The shortest RSA modulus accepted, in bytes (2048 bits).
const MIN_RSA: usize = 256;
/// How deep header, claims and key documents may nest.
const MAX_DEPTH: u8 = 8;

/// The leeway for `exp` and `nbf` by default: clocks differ.
pub const DEFAULT_LEEWAY_S: u64 = 60;

/// Why a token does not admit a request. Every variant but [`Scope`](Self::Scope) is an
/// `invalid_token` (401); `Scope` is `insufficient_scope` (403).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum JwtError {
    /// Longer than [`MAX_JWT_LEN`] bytes.
    #[error("the token is too long")]
    TooLong,
    /// Not a compact JWS of three base64url parts, a header or claims that are no JSON object
    /// (or longer than [`MAX_HEADER_LEN`] / [`MAX_CLAIMS_LEN`] decoded), a member that matters
    /// given twice or with the wrong type, no `exp`.
    #[error("the token is not a well-formed JWT")]
    Malformed,
    /// An algorithm other than ES256 and RS256 (`none`, `HS256`, …), or a `crit` header.
    #[error("the token's algorithm is not accepted (ES256 or RS256 only)")]
    Algorithm,
    /// No key of the set fits: an unknown `kid`, or none of the algorithm's type.
    #[error("the token was signed with a key this device does not know")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// `iss` is not the authorization server's.
    #[error("the token was issued by another authorization server")]
    Issuer,
    /// `aud` does not name this resource.
    #[error("the token is for another resource")]
    Audience,
    /// `exp` has passed (beyond the leeway).
    #[error("the token has expired")]
    Expired,
    /// `nbf` is still ahead (beyond the leeway).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// A required scope is missing from `scope`.
    #[error("the token lacks a scope this endpoint needs")]
    Scope,
}

/// Why a JWKS document cannot be a key set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum JwksError {
    /// Not JSON, or not an object with a `keys` array.
    #[error("not a JWKS document ({{\"keys\":[…]}})")]
    NotJwks,
    /// No key in it can verify ES256 or RS256 tokens.
    #[error("no ES256 (EC P-256) or RS256 (RSA 2048-4096) signing key in it")]
    NoUsableKey,
    /// The key at this index claims to be an EC P-256 or RSA signing key but is not a valid one
    /// (coordinates off the curve, a modulus out of range, an even modulus, …).
    #[error("key {0} is not a valid EC P-256 or RSA key")]
    BadKey(u16),
}

/// A signature algorithm [`verify`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Alg {
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Alg {
    fn from_json(s: &JsonStr<'_>) -> Option<Alg> {
        if s.eq_str("ES256") {
            Some(Alg::Es256)
        } else if s.eq_str("RS256") {
            Some(Alg::Rs256)
        } else {
            None
        }
    }

    /// The JOSE name: `ES256`, `RS256`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Alg::Es256 => "ES256",
            Alg::Rs256 => "RS256",
        }
    }
}

/// An authorization server's public keys: a JWKS document (RFC 7517 §5), borrowed and checked
/// once ([`new`](Self::new)); nothing is copied.
#[derive(Debug, Clone, Copy)]
pub struct Jwks<'a> {
    /// The `keys` array.
    keys: Json<'a>,
}

/// What a JWK of the set says, read from its members.
#[derive(Default)]
struct JwkView<'a> {
    kty: Option<JsonStr<'a>>,
    kid: Option<JsonStr<'a>>,
    alg: Option<JsonStr<'a>>,
    use_: Option<JsonStr<'a>>,
    crv: Option<JsonStr<'a>>,
    x: Option<JsonStr<'a>>,
    y: Option<JsonStr<'a>>,
    n: Option<JsonStr<'a>>,
    e: Option<JsonStr<'a>>,
}

impl<'a> JwkView<'a> {
    /// Reads a key's members; `None` for a key that is not an object or has one of these
    /// members twice or not as a string.
    fn read(key: &Json<'a>) -> Option<Self> {
        let mut v = JwkView::default();
        for (name, value) in key.members()? {
            let slot = if name.eq_str("kty") {
                &mut v.kty
            } else if name.eq_str("kid") {
                &mut v.kid
            } else if name.eq_str("alg") {
                &mut v.alg
            } else if name.eq_str("use") {
                &mut v.use_
            } else if name.eq_str("crv") {
                &mut v.crv
            } else if name.eq_str("x") {
                &mut v.x
            } else if name.eq_str("y") {
                &mut v.y
            } else if name.eq_str("n") {
                &mut v.n
            } else if name.eq_str("e") {
                &mut v.e
            } else {
                continue;
            };
            if slot.is_some() {
                return None;
            }
            *slot = Some(value.as_str()?);
        }
        Some(v)
    }

    /// The algorithm this key verifies, when it is a signing key of a type [`verify`] knows
    /// (its `alg`, when given, must say the same; its `use`, when given, `sig`).
    fn alg(&self) -> Option<Alg> {
        let kty = self.kty.as_ref()?;
        let alg = if kty.eq_str("EC") && self.crv.as_ref().is_some_and(|c| c.eq_str("P-256")) {
            Alg::Es256
        } else if kty.eq_str("RSA") {
            Alg::Rs256
        } else {
            return None;
        };
        if self.alg.as_ref().is_some_and(|a| !a.eq_str(alg.as_str())) {
            return None;
        }
        if self.use_.as_ref().is_some_and(|u| !u.eq_str("sig")) {
            return None;
        }
        Some(alg)
    }

    /// The key material, decoded and checked.
    fn key(&self, alg: Alg) -> Option<Key> {
        match alg {
            Alg::Es256 => {
                let mut x = [0u8; 32];
                let mut y = [0u8; 32];
                decode_exact(self.x.as_ref()?, &mut x)?;
                decode_exact(self.y.as_ref()?, &mut y)?;
                let point =
                    p256::EncodedPoint::from_affine_coordinates(&x.into(), &y.into(), false);
                p256::ecdsa::VerifyingKey::from_encoded_point(&point)
                    .ok()
                    .map(Key::Es256)
            }
            Alg::Rs256 => {
                let mut n = [0u8; MAX_RSA];
                let len = decode_into(self.n.as_ref()?, &mut n)?;
                // No leading zero byte (the minimal encoding), 2048 to 4096 bits, odd.
                let modulus = n.get(..len)?;
                if len < MIN_RSA || modulus.first() == Some(&0) || modulus.last()? & 1 == 0 {
                    return None;
                }
                let mut e = [0u8; 4];
                let elen = decode_into(self.e.as_ref()?, &mut e)?;
                let exponent = e
                    .get(..elen)?
                    .iter()
                    .fold(0u32, |a, &b| (a << 8) | u32::from(b));
                if exponent < 3 || exponent & 1 == 0 || e.first() == Some(&0) {
                    return None;
                }
                let mut n = [0u8; MAX_RSA];
                n.get_mut(MAX_RSA - len..)?.copy_from_slice(modulus);
                Some(Key::Rs256 {
                    n,
                    len,
                    e: exponent,
                })
            }
        }
    }
}

/// A decoded verification key. It lives on the stack for one verification; boxing the RSA
/// modulus would need an allocator.
#[expect(
    clippy::large_enum_variant,
    reason = "one value at a time, on the stack; no allocator to box it"
)]
enum Key {
    Es256(p256::ecdsa::VerifyingKey),
    Rs256 {
        /// The modulus, big-endian, right-aligned in [`MAX_RSA`] bytes.
        n: [u8; MAX_RSA],
        /// Its length in bytes (`k` of RFC 8017).
        len: usize,
        /// The public exponent.
        e: u32,
    },
}

impl<'a> Jwks<'a> {
    /// Checks `json` as a JWKS document: an object whose `keys` array holds at least one
    /// ES256 (EC P-256) or RS256 (RSA, 2048 to 4096 bits) signing key. Keys of other types
    /// (`OKP`, `oct`, other curves, `use: enc`) are skipped; a key of these types that is not
    /// valid fails the whole document (a typo in a firmware's build-time keys shows at start-up).
    ///
    /// # Errors
    /// [`JwksError`], saying which.
    pub fn new(json: &'a [u8]) -> Result<Self, JwksError> {
        let doc = Json::parse(json, MAX_DEPTH).map_err(|_| JwksError::NotJwks)?;
        let mut keys = None;
        for (name, value) in doc.members().ok_or(JwksError::NotJwks)? {
            if name.eq_str("keys") {
                if keys.is_some() || value.kind() != Kind::Array {
                    return Err(JwksError::NotJwks);
                }
                keys = Some(value);
            }
        }
        let set = Jwks {
            keys: keys.ok_or(JwksError::NotJwks)?,
        };
        let mut usable = 0u32;
        for (i, key) in set.keys.elements().into_iter().flatten().enumerate() {
            let index = u16::try_from(i).unwrap_or(u16::MAX);
            let Some(view) = JwkView::read(&key) else {
                return Err(JwksError::BadKey(index));
            };
            let Some(alg) = view.alg() else { continue };
            if view.key(alg).is_none() {
                return Err(JwksError::BadKey(index));
            }
            usable += 1;
        }
        if usable == 0 {
            return Err(JwksError::NoUsableKey);
        }
        Ok(set)
    }

    /// The key for a token signed with `alg` whose header names `kid`.
    fn find(&self, alg: Alg, kid: Option<&JsonStr<'_>>) -> Result<Key, JwtError> {
        let mut found = None;
        for key in self.keys.elements().into_iter().flatten() {
            let Some(view) = JwkView::read(&key) else {
                continue;
            };
            if view.alg() != Some(alg) {
                continue;
            }
            let fits = match (kid, &view.kid) {
                (Some(want), Some(have)) => same_str(want, have),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if !fits {
                continue;
            }
            if found.is_some() {
                // Two keys fit (no kid to choose, or a kid given twice): no guessing.
                return Err(JwtError::UnknownKey);
            }
            found = Some(view);
        }
        found.and_then(|v| v.key(alg)).ok_or(JwtError::UnknownKey)
    }
}

/// `true` when two JSON strings decode to the same text.
fn same_str(a: &JsonStr<'_>, b: &JsonStr<'_>) -> bool {
    let mut bc = b.chars();
    a.chars().all(|c| bc.next() == Some(c)) && bc.next().is_none()
}

/// What a token must say to admit a request (besides its signature).
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    issuer: &'a str,
    audience: &'a str,
    scopes: &'a [&'a str],
    leeway_s: u64,
}

impl<'a> Rules<'a> {
    /// Tokens of the authorization server `issuer` (its `iss`, exactly: the URL of its RFC
    /// 8414 metadata), for `audience` (this resource: the endpoint's URL, as the client asked
    /// for it with `resource=`); no scope required, [`DEFAULT_LEEWAY_S`] of leeway.
    pub const fn new(issuer: &'a str, audience: &'a str) -> Self {
        Rules {
            issuer,
            audience,
            scopes: &[],
            leeway_s: DEFAULT_LEEWAY_S,
        }
    }

    /// Requires each of `scopes` in the token's `scope`.
    #[must_use]
    pub const fn scopes(mut self, scopes: &'a [&'a str]) -> Self {
        self.scopes = scopes;
        self
    }

    /// Sets the leeway for `exp` and `nbf`, in seconds.
    #[must_use]
    pub const fn leeway(mut self, seconds: u64) -> Self {
        self.leeway_s = seconds;
        self
    }

    /// The required scopes.
    pub const fn required_scopes(&self) -> &'a [&'a str] {
        self.scopes
    }
}

/// Decodes base64url (no padding, canonical) into `out`; the length, `None` when it is no
/// such text or does not fit.
fn decode_into(s: &JsonStr<'_>, out: &mut [u8]) -> Option<usize> {
    // Key material never has escapes; one that does is refused rather than decoded twice.
    let text = s.as_plain()?;
    Base64UrlUnpadded::decode(text.as_bytes(), out)
        .ok()
        .map(<[u8]>::len)
}

/// [`decode_into`] that must fill `out` exactly.
fn decode_exact(s: &JsonStr<'_>, out: &mut [u8]) -> Option<()> {
    (decode_into(s, out)? == out.len()).then_some(())
}

/// Decodes one base64url part of the token into `out`.
fn decode_part<'b>(part: &[u8], out: &'b mut [u8]) -> Result<&'b [u8], JwtError> {
    Base64UrlUnpadded::decode(part, out).map_err(|_| JwtError::Malformed)
}

/// The header members that matter.
struct Header<'a> {
    alg: Alg,
    kid: Option<JsonStr<'a>>,
}

fn read_header(json: &[u8]) -> Result<Header<'_>, JwtError> {
    let doc = Json::parse(json, MAX_DEPTH).map_err(|_| JwtError::Malformed)?;
    let (mut alg, mut kid) = (None, None);
    for (name, value) in doc.members().ok_or(JwtError::Malformed)? {
        if name.eq_str("alg") {
            if alg.is_some() {
                return Err(JwtError::Malformed);
            }
            alg = Some(value.as_str().ok_or(JwtError::Malformed)?);
        } else if name.eq_str("kid") {
            if kid.is_some() {
                return Err(JwtError::Malformed);
            }
            kid = Some(value.as_str().ok_or(JwtError::Malformed)?);
        } else if name.eq_str("crit") {
            // Extensions this check does not understand (RFC 7515 §4.1.11).
            return Err(JwtError::Algorithm);
        }
    }
    let alg = alg.ok_or(JwtError::Malformed)?;
    Ok(Header {
        alg: Alg::from_json(&alg).ok_or(JwtError::Algorithm)?,
        kid,
    })
}

/// Checks `signature` over `input` with `key`.
fn check_signature(key: &Key, input: &[u8], signature: &[u8]) -> Result<(), JwtError> {
    match key {
        Key::Es256(vk) => {
            let sig =
                p256::ecdsa::Signature::from_slice(signature).map_err(|_| JwtError::Signature)?;
            vk.verify(input, &sig).map_err(|_| JwtError::Signature)
        }
        Key::Rs256 { n, len, e } => rsa_pkcs1v15_sha256(n, *len, *e, input, signature),
    }
}

/// The DER `DigestInfo` prefix of a SHA-256 digest (RFC 8017 §9.2, note 1).
const SHA256_DIGEST_INFO: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];

/// RSASSA-PKCS1-v1_5 verification with SHA-256 (RFC 8017 §8.2.2): `s` of exactly `k` bytes and
/// below `n`, `m = s^e mod n`, and the whole encoded message compared with the one built from
/// the digest (no parsing of what the signer sent). The arithmetic is as wide as the key needs:
/// 2048, 3072 or 4096 bits.
fn rsa_pkcs1v15_sha256(
    n: &[u8; MAX_RSA],
    k: usize,
    e: u32,
    input: &[u8],
    signature: &[u8],
) -> Result<(), JwtError> {
    if signature.len() != k {
        return Err(JwtError::Signature);
    }
    let mut s = [0u8; MAX_RSA];
    s.get_mut(MAX_RSA - k..)
        .ok_or(JwtError::Signature)?
        .copy_from_slice(signature);
    // EM = 0x00 || 0x01 || PS (0xff…, at least 8) || 0x00 || DigestInfo || H, k bytes long,
    // right-aligned like the numbers.
    let digest = Sha256::digest(input);
    let t_len = SHA256_DIGEST_INFO.len() + digest.len();
    if k < t_len + 11 {
        return Err(JwtError::Signature);
    }
    let mut expected = [0u8; MAX_RSA];
    let start = MAX_RSA - k;
    let ps_end = MAX_RSA - t_len - 1;
    for (i, b) in expected.iter_mut().enumerate() {
        *b = if i == start + 1 {
            1
        } else if i > start + 1 && i < ps_end {
            0xff
        } else {
            0
        };
    }
    expected
        .get_mut(ps_end + 1..ps_end + 1 + SHA256_DIGEST_INFO.len())
        .ok_or(JwtError::Signature)?
        .copy_from_slice(&SHA256_DIGEST_INFO);
    expected
        .get_mut(MAX_RSA - digest.len()..)
        .ok_or(JwtError::Signature)?
        .copy_from_slice(&digest);
    let ok = if k <= U2048::BYTES {
        rsa_em_matches::<{ U2048::LIMBS }>(n, &s, e, &expected)
    } else if k <= U3072::BYTES {
        rsa_em_matches::<{ U3072::LIMBS }>(n, &s, e, &expected)
    } else {
        rsa_em_matches::<{ U4096::LIMBS }>(n, &s, e, &expected)
    };
    if ok { Ok(()) } else { Err(JwtError::Signature) }
}

/// `s^e mod n` equals `expected`, in `LIMBS`-wide arithmetic (all three right-aligned in
/// [`MAX_RSA`] bytes; the bytes above its width are zero in `n` and `s`, as the key's length
/// chose the width).
fn rsa_em_matches<const LIMBS: usize>(
    n: &[u8; MAX_RSA],
    s: &[u8; MAX_RSA],
    e: u32,
    expected: &[u8; MAX_RSA],
) -> bool
where
    Uint<LIMBS>: Encoding,
{
    let from = MAX_RSA.saturating_sub(Uint::<LIMBS>::BYTES);
    let (Some(n), Some(s), Some(expected)) = (n.get(from..), s.get(from..), expected.get(from..))
    else {
        return false;
    };
    let n = Uint::<LIMBS>::from_be_slice(n);
    let s = Uint::<LIMBS>::from_be_slice(s);
    // `DynResidueParams::new` panics on an even modulus: never let it see one.
    if s >= n || !bool::from(n.is_odd()) {
        return false;
    }
    let params = DynResidueParams::new(&n);
    let bits = 32 - e.leading_zeros();
    let m = DynResidue::new(&s, params)
        .pow_bounded_exp(&U64::from_u32(e), bits as usize)
        .retrieve();
    bool::from(m.to_be_bytes().as_ref().ct_eq(expected))
}

/// The claims that matter.
#[derive(Default)]
struct Claims<'a> {
    iss: Option<Json<'a>>,
    aud: Option<Json<'a>>,
    exp: Option<Json<'a>>,
    nbf: Option<Json<'a>>,
    scope: Option<Json<'a>>,
}

fn read_claims(json: &[u8]) -> Result<Claims<'_>, JwtError> {
    let doc = Json::parse(json, MAX_DEPTH).map_err(|_| JwtError::Malformed)?;
    let mut c = Claims::default();
    for (name, value) in doc.members().ok_or(JwtError::Malformed)? {
        let slot = if name.eq_str("iss") {
            &mut c.iss
        } else if name.eq_str("aud") {
            &mut c.aud
        } else if name.eq_str("exp") {
            &mut c.exp
        } else if name.eq_str("nbf") {
            &mut c.nbf
        } else if name.eq_str("scope") {
            &mut c.scope
        } else {
            continue;
        };
        if slot.is_some() {
            return Err(JwtError::Malformed);
        }
        *slot = Some(value);
    }
    Ok(c)
}

/// A NumericDate (RFC 7519 §2): an integer number of seconds, fractions allowed (rounded
/// toward the stricter side by the caller's comparison). `None` for anything else.
fn seconds(v: &Json<'_>) -> Option<i64> {
    use crate::wire::json::Integer;
    match v.as_integer()? {
        Integer::Exact(s) => Some(s),
        Integer::OutOfRange => None,
        // A fractional date: its integer part (`1.5` is 1), read from the text.
        Integer::Fractional => {
            let text = v.as_text();
            let int = text.split(['.', 'e', 'E']).next()?;
            if text.contains(['e', 'E']) {
                return None;
            }
            int.parse().ok()
        }
    }
}

/// Checks the claims against `rules` at `now`.
fn check_claims(c: &Claims<'_>, rules: &Rules<'_>, now: u64) -> Result<(), JwtError> {
    let iss = c.iss.as_ref().ok_or(JwtError::Issuer)?;
    let iss = iss.as_str().ok_or(JwtError::Malformed)?;
    if !iss.eq_str(rules.issuer) {
        return Err(JwtError::Issuer);
    }
    let aud = c.aud.as_ref().ok_or(JwtError::Audience)?;
    let ours = match aud.kind() {
        Kind::String => aud.as_str().is_some_and(|a| a.eq_str(rules.audience)),
        Kind::Array => aud
            .elements()
            .into_iter()
            .flatten()
            .any(|a| a.as_str().is_some_and(|a| a.eq_str(rules.audience))),
        _ => return Err(JwtError::Malformed),
    };
    if !ours {
        return Err(JwtError::Audience);
    }
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    let leeway = i64::try_from(rules.leeway_s).unwrap_or(i64::MAX);
    let exp = c
        .exp
        .as_ref()
        .map(|e| seconds(e).ok_or(JwtError::Malformed))
        .transpose()?
        .ok_or(JwtError::Malformed)?;
    if now > exp.saturating_add(leeway) {
        return Err(JwtError::Expired);
    }
    if let Some(nbf) = c.nbf.as_ref() {
        let nbf = seconds(nbf).ok_or(JwtError::Malformed)?;
        if nbf > now.saturating_add(leeway) {
            return Err(JwtError::NotYetValid);
        }
    }
    if !rules.scopes.is_empty() {
        let scope = match c.scope.as_ref() {
            None => None,
            Some(s) => Some(s.as_str().ok_or(JwtError::Malformed)?),
        };
        let has = |want: &str| {
            scope.as_ref().is_some_and(|s| {
                // Space-separated scope tokens (RFC 6749 §3.3); no escapes expected in them.
                s.as_plain()
                    .is_some_and(|s| s.split(' ').any(|t| t == want))
            })
        };
        if !rules.scopes.iter().all(|want| has(want)) {
            return Err(JwtError::Scope);
        }
    }
    Ok(())
}

/// Checks `token` (the compact JWS from `Authorization: Bearer …`) against `keys` and `rules`
/// at `now` (Unix seconds); see the [module](self) for the steps, in their order.
///
/// # Errors
/// [`JwtError`]: the first step that refuses.
pub fn verify(token: &[u8], keys: &Jwks<'_>, rules: &Rules<'_>, now: u64) -> Result<(), JwtError> {
    if token.len() > MAX_JWT_LEN {
        return Err(JwtError::TooLong);
    }
    let mut parts = token.split(|&c| c == b'.');
    let (Some(header_b64), Some(claims_b64), Some(sig_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let mut header_buf = [0u8; MAX_HEADER_LEN];
    let header = read_header(decode_part(header_b64, &mut header_buf)?)?;
    let key = keys.find(header.alg, header.kid.as_ref())?;
    let mut sig_buf = [0u8; MAX_RSA];
    let signature = decode_part(sig_b64, &mut sig_buf).map_err(|_| JwtError::Signature)?;
    let signed = token
        .get(..header_b64.len() + 1 + claims_b64.len())
        .ok_or(JwtError::Malformed)?;
    check_signature(&key, signed, signature)?;
    let mut claims_buf = [0u8; MAX_CLAIMS_LEN];
    let claims = read_claims(decode_part(claims_b64, &mut claims_buf)?)?;
    check_claims(&claims, rules, now)
}
