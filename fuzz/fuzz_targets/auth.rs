//! Bearer tokens on the HTTP endpoint (`mcp_core::transport::auth`), as a host chains them: the
//! `Authorization` check, the challenge written for the request's `Host`, the metadata document,
//! and the well-known path test.
//!
//! Input: `[flags]`, then the `Authorization` value up to a `0xFF` byte (absent when `flags` bit 0
//! is set), then the `Host` value up to a `0xFF` byte, then the request path (any bytes).
//! `flags` bits 1–2 pick the device's token from [`TOKENS`].
//!
//! With `flags` bit 3 set, the rest is an OAuth access token scenario instead (the JWT check,
//! `transport::jwt::verify`): bit 4 set, the bytes themselves are the token (nothing from the
//! wire can forge a signature: never admitted); else they are read with `arbitrary` as a
//! [`Scenario`] — a header and claims chosen to hit every rule (algorithms incl. `none` and
//! `HS256` MAC'd with the RSA modulus, known and unknown `kid`s, duplicate members, `crit`, the
//! right and wrong issuer, audience, times, scopes), signed here by the authorization server's
//! EC or RSA key, another EC key, or not at all, then maybe one byte changed. The verdict must be
//! what a model of the documented rule, written plainly over serde_json's reading of the same
//! values, says; a changed byte is never admitted.
//!
//! Oracles: no panic; `check` agrees with a model of the documented rule (trim, the scheme
//! `Bearer` in any case before the first space, the rest trimmed equal to the token: `Ok`; no
//! header or another scheme: `Missing`; else `Invalid`); a `Resource` exists exactly for a Host
//! that is a plain authority (letters, digits, `-_.:[]` only after trimming); the challenge is
//! `Bearer`, then a quoted URL made of the trimmed Host and the well-known path, then the error
//! code exactly for `Invalid`, all of it printable ASCII; the metadata is one JSON object whose
//! `resource` is `http://` + the trimmed Host + `/mcp`; `is_metadata_path` is true exactly for the
//! two well-known paths.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use mcp_core::transport::auth::{
    Bearer, MAX_AUTHORITY_LEN, METADATA_PATH, Resource, Unauthorized, is_metadata_path,
};
use mcp_core::transport::jwt::{
    Jwks, JwtError, MAX_CLAIMS_LEN, MAX_HEADER_LEN, MAX_JWT_LEN, Rules, verify,
};
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::DecodePrivateKey as _;
use rsa::signature::SignatureEncoding as _;
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};
use std::sync::OnceLock;

const TOKENS: [&str; 4] = ["a", "dev1ce-T0ken_with.all~chars+/==", "YWJj==", "tok"];

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t'))
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t'))
        .map_or(start, |e| e + 1);
    &v[start..end]
}

/// The documented rule, written plainly.
fn model(authorization: Option<&[u8]>, token: &str) -> Result<(), Unauthorized> {
    let Some(v) = authorization else {
        return Err(Unauthorized::Missing);
    };
    let v = trim(v);
    let (scheme, rest) = match v.iter().position(|&c| c == b' ') {
        Some(i) => (&v[..i], &v[i..]),
        None => (v, &b""[..]),
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err(Unauthorized::Missing);
    }
    if trim(rest) == token.as_bytes() {
        Ok(())
    } else {
        Err(Unauthorized::Invalid)
    }
}

fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&c| c == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

const ISS: &str = "http://127.0.0.1:4000";
const AUD: &str = "http://127.0.0.1:8080/mcp";
const NOW: u64 = 1_800_000_000;
const LEEWAY: i64 = 60;
const SCOPE: &str = "mcp:tools";

/// The authorization server's keys (the test keys of mcp-core), another EC key, and the JWKS.
struct Keys {
    ec: p256::ecdsa::SigningKey,
    other_ec: p256::ecdsa::SigningKey,
    rsa: rsa::pkcs1v15::SigningKey<sha2_for_rsa::Sha256>,
    rsa_n: Vec<u8>,
    jwks: String,
}

/// rsa's own SHA-256 (the `sha2` it re-exports).
mod sha2_for_rsa {
    pub use rsa::sha2::Sha256;
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let ec = p256::ecdsa::SigningKey::from_pkcs8_pem(include_str!(
            "../../mcp-core/tests/keys/ec256.pem"
        ))
        .expect("EC key");
        let other_ec = p256::ecdsa::SigningKey::from_pkcs8_pem(include_str!(
            "../../mcp-core/tests/keys/ec256-other.pem"
        ))
        .expect("EC key");
        let rsa = {
            use rsa::pkcs8::DecodePrivateKey as _;
            rsa::RsaPrivateKey::from_pkcs8_pem(include_str!(
                "../../mcp-core/tests/keys/rsa2048.pem"
            ))
            .expect("RSA key")
        };
        let p = ec.verifying_key().to_encoded_point(false);
        let rsa_n = rsa.n().to_bytes_be();
        let jwks = json!({"keys":[
            {"kty":"EC","crv":"P-256","kid":"ec-1","alg":"ES256","use":"sig",
             "x": b64(p.x().expect("x")), "y": b64(p.y().expect("y"))},
            {"kty":"RSA","kid":"rsa-1","alg":"RS256","n": b64(&rsa_n), "e": b64(&rsa.e().to_bytes_be())},
            {"kty":"oct","kid":"hmac","k":"c2VjcmV0"},
            {"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
        ]})
        .to_string();
        Keys {
            ec,
            other_ec,
            rsa: rsa::pkcs1v15::SigningKey::new(rsa),
            rsa_n,
            jwks,
        }
    })
}

#[derive(Arbitrary, Debug, Clone)]
enum Alg {
    Es256,
    Rs256,
    None,
    Hs256,
    Es384,
    LowerEs256,
    Other(String),
}

#[derive(Arbitrary, Debug, Clone)]
enum Kid {
    Absent,
    Ec,
    /// `ec-1` with a JSON escape.
    EcEscaped,
    Rsa,
    Hmac,
    Ed,
    Other(String),
    NotAString,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Signer {
    Ec,
    Rsa,
    OtherEc,
    /// HMAC-SHA256 with the RSA modulus as the secret (the classic confusion).
    HmacModulus,
    Empty,
    Garbage(u64),
}

#[derive(Arbitrary, Debug, Clone)]
enum Text {
    Right,
    Wrong(String),
    Number(i32),
    Absent,
}

#[derive(Arbitrary, Debug, Clone)]
enum Aud {
    One(Text),
    Array {
        others: Vec<String>,
        with_ours: bool,
    },
    Object,
}

#[derive(Arbitrary, Debug, Clone)]
enum Time {
    Absent,
    /// Seconds from now.
    At(i32),
    Fraction(i16),
    Text,
}

#[derive(Arbitrary, Debug, Clone)]
enum Scope {
    Absent,
    Tokens(Vec<ScopeToken>),
    Array,
}

#[derive(Arbitrary, Debug, Clone)]
enum ScopeToken {
    Ours,
    Openid,
    Prefix,
    Other(String),
}

#[derive(Arbitrary, Debug, Clone)]
struct Scenario {
    alg: Alg,
    dup_alg: bool,
    kid: Kid,
    crit: bool,
    signer: Signer,
    iss: Text,
    aud: Aud,
    exp: Time,
    dup_exp: bool,
    nbf: Time,
    scope: Scope,
    require_scope: bool,
    padding: u16,
    change: Option<(u16, u8)>,
}

/// JSON text of a member value.
fn text_value(t: &Text, right: &str) -> Option<String> {
    match t {
        Text::Right => Some(json!(right).to_string()),
        Text::Wrong(s) => Some(json!(s).to_string()),
        Text::Number(n) => Some(n.to_string()),
        Text::Absent => None,
    }
}

fn time_value(t: &Time) -> Option<String> {
    match t {
        Time::Absent => None,
        Time::At(d) => Some((NOW as i64 + i64::from(*d)).to_string()),
        Time::Fraction(d) => Some(format!("{}.5", NOW as i64 + i64::from(*d))),
        Time::Text => Some("\"soon\"".into()),
    }
}

/// An object written member by member, in this order (duplicates kept, as they are sent).
fn object(members: &[(&str, Option<String>)]) -> String {
    let body: Vec<String> = members
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{}:{v}", json!(k))))
        .collect();
    format!("{{{}}}", body.join(","))
}

struct Built {
    token: String,
    expected: Result<(), JwtError>,
    scopes_required: bool,
}

/// The token of `s`, and the verdict of the rule written plainly.
fn build(s: &Scenario) -> Built {
    let k = keys();
    let alg_text = match &s.alg {
        Alg::Es256 => "ES256".to_string(),
        Alg::Rs256 => "RS256".to_string(),
        Alg::None => "none".to_string(),
        Alg::Hs256 => "HS256".to_string(),
        Alg::Es384 => "ES384".to_string(),
        Alg::LowerEs256 => "es256".to_string(),
        Alg::Other(o) => o.clone(),
    };
    let kid = match &s.kid {
        Kid::Absent => None,
        Kid::Ec => Some("\"ec-1\"".to_string()),
        Kid::EcEscaped => Some("\"ec\\u002d1\"".to_string()),
        Kid::Rsa => Some("\"rsa-1\"".to_string()),
        Kid::Hmac => Some("\"hmac\"".to_string()),
        Kid::Ed => Some("\"ed\"".to_string()),
        Kid::Other(o) => Some(json!(o).to_string()),
        Kid::NotAString => Some("1".to_string()),
    };
    let header = object(&[
        ("alg", Some(json!(alg_text).to_string())),
        ("alg", s.dup_alg.then(|| "\"none\"".to_string())),
        ("kid", kid),
        ("crit", s.crit.then(|| "[\"exp\"]".to_string())),
        ("typ", Some("\"at+jwt\"".to_string())),
    ]);
    let aud = match &s.aud {
        Aud::One(t) => text_value(t, AUD),
        Aud::Array { others, with_ours } => {
            let mut all: Vec<Value> = others.iter().map(|o| json!(o)).collect();
            if *with_ours {
                all.push(json!(AUD));
            }
            Some(Value::Array(all).to_string())
        }
        Aud::Object => Some(json!({ "x": AUD }).to_string()),
    };
    let scope_text = match &s.scope {
        Scope::Absent => None,
        Scope::Array => Some(json!([SCOPE]).to_string()),
        Scope::Tokens(t) => Some(
            json!(
                t.iter()
                    .map(|t| match t {
                        ScopeToken::Ours => SCOPE.to_string(),
                        ScopeToken::Openid => "openid".to_string(),
                        ScopeToken::Prefix => "mcp:toolsX".to_string(),
                        ScopeToken::Other(o) => o.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            )
            .to_string(),
        ),
    };
    let claims = object(&[
        ("iss", text_value(&s.iss, ISS)),
        ("aud", aud),
        ("exp", time_value(&s.exp)),
        ("exp", s.dup_exp.then(|| (NOW - 100_000).to_string())),
        ("nbf", time_value(&s.nbf)),
        ("scope", scope_text),
        (
            "pad",
            Some(json!("p".repeat(usize::from(s.padding % 5000))).to_string()),
        ),
    ]);
    let input = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
    let signature: Vec<u8> = match s.signer {
        Signer::Ec => {
            let sig: p256::ecdsa::Signature = k.ec.sign(input.as_bytes());
            sig.to_bytes().to_vec()
        }
        Signer::OtherEc => {
            let sig: p256::ecdsa::Signature = k.other_ec.sign(input.as_bytes());
            sig.to_bytes().to_vec()
        }
        Signer::Rsa => k.rsa.sign(input.as_bytes()).to_vec(),
        Signer::HmacModulus => {
            use hmac::Mac as _;
            let mut mac =
                hmac::Hmac::<sha2_for_rsa::Sha256>::new_from_slice(&k.rsa_n).expect("any key");
            mac.update(input.as_bytes());
            mac.finalize().into_bytes().to_vec()
        }
        Signer::Empty => Vec::new(),
        Signer::Garbage(g) => g.to_le_bytes().repeat(8),
    };
    let token = format!("{input}.{}", b64(&signature));

    // The rule, written plainly, in its documented order.
    let expected = (|| {
        if token.len() > MAX_JWT_LEN {
            return Err(JwtError::TooLong);
        }
        if header.len() > MAX_HEADER_LEN {
            return Err(JwtError::Malformed);
        }
        // Header: alg once, a string; kid a string; crit refused.
        if s.dup_alg {
            return Err(JwtError::Malformed);
        }
        if matches!(s.kid, Kid::NotAString) {
            return Err(JwtError::Malformed);
        }
        if s.crit {
            return Err(JwtError::Algorithm);
        }
        let is_ec = match alg_text.as_str() {
            "ES256" => true,
            "RS256" => false,
            _ => return Err(JwtError::Algorithm),
        };
        // The key: by kid among the keys of the algorithm's type; the only one without kid.
        let key_is_ec = match (&s.kid, is_ec) {
            (Kid::Absent | Kid::Ec | Kid::EcEscaped, true) => true,
            (Kid::Absent | Kid::Rsa, false) => false,
            _ => return Err(JwtError::UnknownKey),
        };
        // The signature: made by that very key.
        let signed_by_it = matches!(
            (s.signer, key_is_ec),
            (Signer::Ec, true) | (Signer::Rsa, false)
        );
        if !signed_by_it {
            return Err(JwtError::Signature);
        }
        if claims.len() > MAX_CLAIMS_LEN {
            return Err(JwtError::Malformed);
        }
        // Claims: exp never twice; then iss, aud, exp, nbf, scope.
        if s.dup_exp && !matches!(s.exp, Time::Absent) {
            return Err(JwtError::Malformed);
        }
        // A member of the wrong type is malformed; an absent or other issuer is not this one.
        match &s.iss {
            Text::Number(_) => return Err(JwtError::Malformed),
            Text::Right => {}
            Text::Wrong(w) if w == ISS => {}
            _ => return Err(JwtError::Issuer),
        }
        let ours = |t: &Text| matches!(t, Text::Right) || matches!(t, Text::Wrong(w) if w == AUD);
        match &s.aud {
            Aud::Object => return Err(JwtError::Malformed),
            Aud::One(Text::Number(_)) => return Err(JwtError::Malformed),
            Aud::One(t) if !ours(t) => return Err(JwtError::Audience),
            Aud::Array { others, with_ours } if !*with_ours && !others.iter().any(|o| o == AUD) => {
                return Err(JwtError::Audience);
            }
            _ => {}
        }
        let now = NOW as i64;
        let exp = match (&s.exp, s.dup_exp) {
            (Time::Absent, true) => NOW as i64 - 100_000,
            (Time::Absent, false) | (Time::Text, _) => return Err(JwtError::Malformed),
            (Time::At(d), _) => now + i64::from(*d),
            (Time::Fraction(d), _) => now + i64::from(*d),
        };
        if now > exp + LEEWAY {
            return Err(JwtError::Expired);
        }
        match &s.nbf {
            Time::Absent => {}
            Time::Text => return Err(JwtError::Malformed),
            Time::At(d) if now + i64::from(*d) > now + LEEWAY => return Err(JwtError::NotYetValid),
            Time::Fraction(d) if now + i64::from(*d) > now + LEEWAY => {
                return Err(JwtError::NotYetValid);
            }
            _ => {}
        }
        if s.require_scope {
            match &s.scope {
                Scope::Array => return Err(JwtError::Malformed),
                Scope::Absent => return Err(JwtError::Scope),
                Scope::Tokens(t) => {
                    let joined = t
                        .iter()
                        .map(|t| match t {
                            ScopeToken::Ours => SCOPE.to_string(),
                            ScopeToken::Openid => "openid".to_string(),
                            ScopeToken::Prefix => "mcp:toolsX".to_string(),
                            ScopeToken::Other(o) => o.clone(),
                        })
                        .collect::<Vec<_>>()
                        .join(" ");
                    if !joined.split(' ').any(|t| t == SCOPE) {
                        return Err(JwtError::Scope);
                    }
                }
            }
        }
        Ok(())
    })();
    Built {
        token,
        expected,
        scopes_required: s.require_scope,
    }
}

/// The JWT half of the target (`flags` bit 3).
fn jwt_case(flags: u8, data: &[u8]) {
    let k = keys();
    let jwks = Jwks::new(k.jwks.as_bytes()).expect("the fuzz key set");
    let required: &[&str] = &[SCOPE];
    if flags & 0x10 != 0 {
        // Bytes from the wire: never admitted, never a panic.
        for scopes in [&[][..], required] {
            let rules = Rules::new(ISS, AUD).scopes(scopes);
            assert!(verify(data, &jwks, &rules, NOW).is_err(), "{data:?}");
        }
        return;
    }
    let Ok(s) = Scenario::arbitrary(&mut Unstructured::new(data)) else {
        return;
    };
    let built = build(&s);
    let scopes: &[&str] = if built.scopes_required { required } else { &[] };
    let rules = Rules::new(ISS, AUD).scopes(scopes);
    let got = verify(built.token.as_bytes(), &jwks, &rules, NOW);
    // Ids that differ only by an escape or a number's spelling are the model's blind spots:
    // a string the scenario chose that happens to spell JSON specially is still compared.
    assert_eq!(got, built.expected, "{s:?}\n{}", built.token);
    if let Some((at, xor)) = s.change {
        let mut changed = built.token.into_bytes();
        let len = changed.len();
        if len > 0 && xor != 0 {
            changed[usize::from(at) % len] ^= xor;
            assert!(
                verify(&changed, &jwks, &rules, NOW).is_err(),
                "a changed byte was admitted: {s:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if flags & 0x08 != 0 {
        jwt_case(flags, rest);
        return;
    }
    let (authorization, rest) = split(rest);
    let (host, path) = split(rest);
    let authorization = (flags & 1 == 0).then_some(authorization);
    let token = TOKENS[usize::from((flags >> 1) & 3)];
    let bearer = Bearer::new(token).expect("a valid token");

    let mut headers: Vec<(&str, &[u8])> = vec![("Host", host)];
    if let Some(a) = authorization {
        headers.push(("Authorization", a));
    }
    let got = bearer.check(headers.as_slice());
    assert_eq!(got, model(authorization, token), "{authorization:?}");

    let resource = Resource::new(host, "/mcp");
    let authority = trim(host);
    if resource.is_some() {
        assert!(
            !authority.is_empty()
                && authority.len() <= MAX_AUTHORITY_LEN
                && authority
                    .iter()
                    .all(|&c| c.is_ascii_alphanumeric() || b"-_.:[]".contains(&c)),
            "{host:?}"
        );
    }
    for why in [Unauthorized::Missing, Unauthorized::Invalid] {
        // The documented bound, for the endpoint path `/mcp`.
        let mut out = [0u8; 100 + MAX_AUTHORITY_LEN + 4];
        let n = why.write_challenge(resource.as_ref(), &mut out);
        assert!(n > 0);
        let c = &out[..n];
        assert!(c.iter().all(|&b| (0x20..0x7f).contains(&b)), "{c:?}");
        let mut expected = b"Bearer".to_vec();
        if resource.is_some() {
            expected.extend_from_slice(b" resource_metadata=\"http://");
            expected.extend_from_slice(authority);
            expected.extend_from_slice(METADATA_PATH.as_bytes());
            expected.extend_from_slice(b"/mcp\"");
        }
        if why == Unauthorized::Invalid {
            expected.extend_from_slice(if resource.is_some() { b", " } else { b" " });
            expected.extend_from_slice(b"error=\"invalid_token\"");
        }
        assert_eq!(c, expected.as_slice());
    }
    if let Some(r) = resource {
        let mut out = [0u8; 1024];
        let n = r.write_metadata(&[], &mut out);
        assert!(n > 0);
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).expect("JSON metadata");
        let url = format!(
            "http://{}/mcp",
            std::str::from_utf8(authority).expect("ASCII")
        );
        assert_eq!(v["resource"], url.as_str());
        assert_eq!(v["bearer_methods_supported"], serde_json::json!(["header"]));
        assert_eq!(v.as_object().map(|o| o.len()), Some(2));
    }
    let well_known =
        path == METADATA_PATH.as_bytes() || path == format!("{METADATA_PATH}/mcp").as_bytes();
    assert_eq!(is_metadata_path(path, "/mcp"), well_known, "{path:?}");
});
