//! `transport::jwt`: OAuth access tokens signed here with real ES256 and RS256 keys (RustCrypto's
//! signers, test keys in `tests/keys/`), and every way a token must be refused: a bad signature,
//! the wrong issuer or audience, expired or not yet valid, a missing scope, `alg: none` and
//! HS256 with the public key as its secret, a `kid` not in the set, malformed compact forms.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use base64ct::{Base64UrlUnpadded, Encoding as _};
use mcp_core::transport::jwt::{Jwks, JwksError, JwtError, MAX_JWT_LEN, Rules, verify};
use p256::ecdsa::SigningKey;
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::DecodePrivateKey as _;
use rsa::RsaPrivateKey;
use rsa::pkcs1v15::SigningKey as RsaSigningKey;
use rsa::signature::SignatureEncoding as _;
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};
use sha2::Sha256;

const ISS: &str = "http://127.0.0.1:4000";
const AUD: &str = "http://127.0.0.1:8080/mcp";
const NOW: u64 = 1_800_000_000;
const SCOPES: &[&str] = &["mcp:tools"];

fn b64(bytes: &[u8]) -> String {
    Base64UrlUnpadded::encode_string(bytes)
}

fn ec(pem: &str) -> SigningKey {
    SigningKey::from_pkcs8_pem(pem).unwrap()
}

fn ec_key() -> SigningKey {
    ec(include_str!("keys/ec256.pem"))
}

fn other_ec_key() -> SigningKey {
    ec(include_str!("keys/ec256-other.pem"))
}

fn rsa_key(bits: u32) -> RsaPrivateKey {
    use rsa::pkcs8::DecodePrivateKey as _;
    RsaPrivateKey::from_pkcs8_pem(match bits {
        1024 => include_str!("keys/rsa1024.pem"),
        2048 => include_str!("keys/rsa2048.pem"),
        3072 => include_str!("keys/rsa3072.pem"),
        _ => include_str!("keys/rsa4096.pem"),
    })
    .unwrap()
}

fn ec_jwk(k: &SigningKey, kid: &str) -> Value {
    let p = k.verifying_key().to_encoded_point(false);
    json!({"kty":"EC","crv":"P-256","kid":kid,"alg":"ES256","use":"sig",
           "x": b64(p.x().unwrap()), "y": b64(p.y().unwrap())})
}

fn rsa_jwk(k: &RsaPrivateKey, kid: &str) -> Value {
    json!({"kty":"RSA","kid":kid,"alg":"RS256","use":"sig",
           "n": b64(&k.n().to_bytes_be()), "e": b64(&k.e().to_bytes_be())})
}

/// The authorization server's key set: an EC key `ec-1`, RSA keys `rsa-1` (2048) and
/// `rsa-4k` (4096), and keys of other kinds it may publish, which are skipped.
fn jwks_doc() -> String {
    json!({"keys":[
        ec_jwk(&ec_key(), "ec-1"),
        rsa_jwk(&rsa_key(2048), "rsa-1"),
        rsa_jwk(&rsa_key(4096), "rsa-4k"),
        rsa_jwk(&rsa_key(3072), "rsa-3k"),
        {"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
        {"kty":"oct","kid":"hmac","k":"c2VjcmV0"},
        {"kty":"EC","crv":"P-256","kid":"enc-1","use":"enc","x":"x","y":"y"}
    ]})
    .to_string()
}

fn claims() -> Value {
    json!({"iss": ISS, "aud": AUD, "sub": "user-1", "client_id": "c1", "scope": "openid mcp:tools",
           "iat": NOW - 10, "exp": NOW + 600, "jti": "j1"})
}

fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    )
}

fn es256(k: &SigningKey, header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let sig: p256::ecdsa::Signature = k.sign(input.as_bytes());
    format!("{input}.{}", b64(&sig.to_bytes()))
}

fn rs256(k: &RsaPrivateKey, header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let sig = RsaSigningKey::<Sha256>::new(k.clone()).sign(input.as_bytes());
    format!("{input}.{}", b64(&sig.to_bytes()))
}

fn es_header() -> Value {
    json!({"alg":"ES256","typ":"at+jwt","kid":"ec-1"})
}

fn check(token: &str) -> Result<(), JwtError> {
    check_with(token, &Rules::new(ISS, AUD).scopes(SCOPES))
}

fn check_with(token: &str, rules: &Rules<'_>) -> Result<(), JwtError> {
    let doc = jwks_doc();
    let keys = Jwks::new(doc.as_bytes()).unwrap();
    verify(token.as_bytes(), &keys, rules, NOW)
}

fn with(f: impl FnOnce(&mut Value)) -> Value {
    let mut c = claims();
    f(&mut c);
    c
}

#[test]
fn es256_and_rs256_tokens_of_the_authorization_server_admit() {
    assert_eq!(check(&es256(&ec_key(), &es_header(), &claims())), Ok(()));
    let rs = json!({"alg":"RS256","typ":"at+jwt","kid":"rsa-1"});
    assert_eq!(check(&rs256(&rsa_key(2048), &rs, &claims())), Ok(()));
    let rs4k = json!({"alg":"RS256","kid":"rsa-4k"});
    assert_eq!(check(&rs256(&rsa_key(4096), &rs4k, &claims())), Ok(()));
    let rs3k = json!({"alg":"RS256","kid":"rsa-3k"});
    assert_eq!(check(&rs256(&rsa_key(3072), &rs3k, &claims())), Ok(()));
    // Each width refuses the others' signatures.
    assert_eq!(
        check(&rs256(&rsa_key(2048), &rs3k, &claims())),
        Err(JwtError::Signature)
    );
    assert_eq!(
        check(&rs256(&rsa_key(3072), &rs4k, &claims())),
        Err(JwtError::Signature)
    );
    // `aud` as an array that names this resource; fractional dates; no scope required.
    let c = with(|c| {
        c["aud"] = json!(["https://other.example/api", AUD]);
        c["exp"] = json!(NOW as f64 + 0.5);
    });
    assert_eq!(check(&es256(&ec_key(), &es_header(), &c)), Ok(()));
    let c = with(|c| {
        c.as_object_mut().unwrap().remove("scope");
    });
    assert_eq!(
        check_with(&es256(&ec_key(), &es_header(), &c), &Rules::new(ISS, AUD)),
        Ok(())
    );
}

#[test]
fn a_signature_that_does_not_verify() {
    let good = es256(&ec_key(), &es_header(), &claims());
    // Another key, same kid.
    assert_eq!(
        check(&es256(&other_ec_key(), &es_header(), &claims())),
        Err(JwtError::Signature)
    );
    // The claims changed after signing (a longer lifetime, another audience).
    let (input, sig) = good.rsplit_once('.').unwrap();
    let (header, _) = input.split_once('.').unwrap();
    let forged = with(|c| c["exp"] = json!(NOW + 86_400 * 365));
    let token = format!("{header}.{}.{sig}", b64(forged.to_string().as_bytes()));
    assert_eq!(check(&token), Err(JwtError::Signature));
    // A bit flipped in the signature; a signature cut short; one that is no base64url; none.
    let mut raw = Base64UrlUnpadded::decode_vec(sig).unwrap();
    raw[10] ^= 1;
    assert_eq!(
        check(&format!("{input}.{}", b64(&raw))),
        Err(JwtError::Signature)
    );
    assert_eq!(
        check(&format!("{input}.{}", b64(&raw[..63]))),
        Err(JwtError::Signature)
    );
    assert_eq!(check(&format!("{input}.***")), Err(JwtError::Signature));
    assert_eq!(check(&format!("{input}.")), Err(JwtError::Signature));
    // RS256: flipped, and the same bytes with another key's signature.
    let rs = json!({"alg":"RS256","kid":"rsa-1"});
    let t = rs256(&rsa_key(2048), &rs, &claims());
    let (input, sig) = t.rsplit_once('.').unwrap();
    let mut raw = Base64UrlUnpadded::decode_vec(sig).unwrap();
    raw[100] ^= 0x80;
    assert_eq!(
        check(&format!("{input}.{}", b64(&raw))),
        Err(JwtError::Signature)
    );
    assert_eq!(
        check(&rs256(&rsa_key(4096), &rs, &claims())),
        Err(JwtError::Signature),
        "a 4096-bit signature for the 2048-bit key"
    );
    // A signature at least the modulus (s >= n), and all zeros.
    let n = rsa_key(2048).n().to_bytes_be();
    assert_eq!(
        check(&format!("{input}.{}", b64(&n))),
        Err(JwtError::Signature)
    );
    assert_eq!(
        check(&format!("{input}.{}", b64(&[0u8; 256]))),
        Err(JwtError::Signature)
    );
}

#[test]
fn the_wrong_issuer_or_audience() {
    let t = |c: Value| check(&es256(&ec_key(), &es_header(), &c));
    assert_eq!(
        t(with(|c| c["iss"] = json!("http://127.0.0.1:4001"))),
        Err(JwtError::Issuer)
    );
    assert_eq!(
        t(with(|c| c["iss"] = json!(format!("{ISS}/")))),
        Err(JwtError::Issuer)
    );
    assert_eq!(
        t(with(|c| {
            c.as_object_mut().unwrap().remove("iss");
        })),
        Err(JwtError::Issuer)
    );
    assert_eq!(t(with(|c| c["iss"] = json!(7))), Err(JwtError::Malformed));
    assert_eq!(t(with(|c| c["aud"] = json!(7))), Err(JwtError::Malformed));
    assert_eq!(
        t(with(|c| c["aud"] = json!("http://127.0.0.1:8081/mcp"))),
        Err(JwtError::Audience)
    );
    assert_eq!(
        t(with(|c| c["aud"] = json!("http://127.0.0.1:8080/"))),
        Err(JwtError::Audience)
    );
    assert_eq!(
        t(with(|c| c["aud"] = json!(["http://a/mcp", "http://b/mcp"]))),
        Err(JwtError::Audience)
    );
    assert_eq!(
        t(with(|c| {
            c.as_object_mut().unwrap().remove("aud");
        })),
        Err(JwtError::Audience)
    );
    assert_eq!(
        t(with(|c| c["aud"] = json!({"x": AUD}))),
        Err(JwtError::Malformed)
    );
    // Escapes decode before the comparison: `\/` is `/`, so the same text admits.
    let raw = format!(
        r#"{{"iss":"{}","aud":"{}","exp":{},"scope":"mcp:tools"}}"#,
        ISS.replace('/', "\\/"),
        AUD.replace('/', "\\/"),
        NOW + 60
    );
    let input = format!(
        "{}.{}",
        b64(es_header().to_string().as_bytes()),
        b64(raw.as_bytes())
    );
    let sig: p256::ecdsa::Signature = ec_key().sign(input.as_bytes());
    assert_eq!(
        check(&format!("{input}.{}", b64(&sig.to_bytes()))),
        Ok(()),
        "{raw}"
    );
}

#[test]
fn expired_or_not_yet_valid() {
    let t = |c: Value| check(&es256(&ec_key(), &es_header(), &c));
    assert_eq!(
        t(with(|c| c["exp"] = json!(NOW - 61))),
        Err(JwtError::Expired)
    );
    assert_eq!(
        t(with(|c| c["exp"] = json!(NOW - 60))),
        Ok(()),
        "within the leeway"
    );
    assert_eq!(t(with(|c| c["exp"] = json!(0))), Err(JwtError::Expired));
    assert_eq!(t(with(|c| c["exp"] = json!(-5))), Err(JwtError::Expired));
    assert_eq!(
        t(with(|c| {
            c.as_object_mut().unwrap().remove("exp");
        })),
        Err(JwtError::Malformed),
        "no exp: never admitted"
    );
    assert_eq!(
        t(with(|c| c["exp"] = json!("never"))),
        Err(JwtError::Malformed)
    );
    assert_eq!(
        t(with(|c| c["exp"] = json!(1e300))),
        Err(JwtError::Malformed)
    );
    assert_eq!(
        t(with(|c| c["nbf"] = json!(NOW + 61))),
        Err(JwtError::NotYetValid)
    );
    assert_eq!(t(with(|c| c["nbf"] = json!(NOW + 60))), Ok(()));
    assert_eq!(t(with(|c| c["nbf"] = json!(NOW - 1000))), Ok(()));
    let strict = Rules::new(ISS, AUD).scopes(SCOPES).leeway(0);
    let c = with(|c| c["exp"] = json!(NOW - 1));
    assert_eq!(
        check_with(&es256(&ec_key(), &es_header(), &c), &strict),
        Err(JwtError::Expired)
    );
}

#[test]
fn a_missing_scope() {
    let t = |c: Value| check(&es256(&ec_key(), &es_header(), &c));
    assert_eq!(
        t(with(|c| c["scope"] = json!("openid"))),
        Err(JwtError::Scope)
    );
    assert_eq!(
        t(with(|c| c["scope"] = json!("mcp:toolsX"))),
        Err(JwtError::Scope)
    );
    assert_eq!(t(with(|c| c["scope"] = json!("mcp"))), Err(JwtError::Scope));
    assert_eq!(t(with(|c| c["scope"] = json!(""))), Err(JwtError::Scope));
    assert_eq!(
        t(with(|c| {
            c.as_object_mut().unwrap().remove("scope");
        })),
        Err(JwtError::Scope)
    );
    assert_eq!(
        t(with(|c| c["scope"] = json!(["mcp:tools"]))),
        Err(JwtError::Malformed)
    );
    assert_eq!(t(with(|c| c["scope"] = json!("a mcp:tools b"))), Ok(()));
    let two = Rules::new(ISS, AUD).scopes(&["mcp:tools", "mcp:admin"]);
    assert_eq!(
        check_with(&es256(&ec_key(), &es_header(), &claims()), &two),
        Err(JwtError::Scope)
    );
}

#[test]
fn alg_none_hs256_and_other_algorithms_are_refused() {
    let input = |h: Value| signing_input(&h, &claims());
    // Unsigned.
    for h in [
        json!({"alg":"none"}),
        json!({"alg":"none","kid":"ec-1"}),
        json!({"alg":"None"}),
    ] {
        assert_eq!(check(&format!("{}.", input(h))), Err(JwtError::Algorithm));
    }
    // HS256 whose secret is the EC key's JWK, or the RSA modulus: the classic confusion. It is
    // refused for its algorithm, before any key is looked at.
    use hmac::{Hmac, Mac as _};
    let h = json!({"alg":"HS256","kid":"rsa-1"});
    let secret = rsa_key(2048).n().to_bytes_be();
    let mut mac = Hmac::<Sha256>::new_from_slice(&secret).unwrap();
    mac.update(input(h.clone()).as_bytes());
    let t = format!("{}.{}", input(h), b64(&mac.finalize().into_bytes()));
    assert_eq!(check(&t), Err(JwtError::Algorithm));
    let h = json!({"alg":"HS256","kid":"hmac"});
    let mut mac = Hmac::<Sha256>::new_from_slice(b"secret").unwrap();
    mac.update(input(h.clone()).as_bytes());
    let t = format!("{}.{}", input(h), b64(&mac.finalize().into_bytes()));
    assert_eq!(check(&t), Err(JwtError::Algorithm), "the set's own oct key");
    for alg in ["ES384", "ES512", "RS512", "PS256", "EdDSA", "es256", ""] {
        let h = json!({"alg": alg, "kid": "ec-1"});
        assert_eq!(
            check(&es256(&ec_key(), &h, &claims())),
            Err(JwtError::Algorithm),
            "{alg}"
        );
    }
    // No alg, or not a string.
    assert_eq!(
        check(&es256(&ec_key(), &json!({"kid":"ec-1"}), &claims())),
        Err(JwtError::Malformed)
    );
    assert_eq!(
        check(&es256(&ec_key(), &json!({"alg":["ES256"]}), &claims())),
        Err(JwtError::Malformed)
    );
    // A critical extension this check does not know.
    let h = json!({"alg":"ES256","kid":"ec-1","crit":["exp"],"exp":1});
    assert_eq!(
        check(&es256(&ec_key(), &h, &claims())),
        Err(JwtError::Algorithm)
    );
}

#[test]
fn a_kid_not_in_the_keys_and_key_type_confusion() {
    let t = |h: Value| check(&es256(&ec_key(), &h, &claims()));
    assert_eq!(
        t(json!({"alg":"ES256","kid":"ec-2"})),
        Err(JwtError::UnknownKey)
    );
    assert_eq!(
        t(json!({"alg":"ES256","kid":""})),
        Err(JwtError::UnknownKey)
    );
    // The kid of an RSA key with ES256, of the skipped kinds, of an encryption key.
    for kid in ["rsa-1", "ed", "hmac", "enc-1"] {
        assert_eq!(
            t(json!({"alg":"ES256","kid":kid})),
            Err(JwtError::UnknownKey),
            "{kid}"
        );
    }
    // RS256 naming the EC key.
    let h = json!({"alg":"RS256","kid":"ec-1"});
    assert_eq!(
        check(&rs256(&rsa_key(2048), &h, &claims())),
        Err(JwtError::UnknownKey)
    );
    // Without kid: the only key of the algorithm's type is used; with two RSA keys, none.
    assert_eq!(t(json!({"alg":"ES256"})), Ok(()));
    let h = json!({"alg":"RS256"});
    assert_eq!(
        check(&rs256(&rsa_key(2048), &h, &claims())),
        Err(JwtError::UnknownKey)
    );
    // A kid with escapes names the same key.
    let header = r#"{"alg":"ES256","kid":"ec\u002d1"}"#;
    let input = format!(
        "{}.{}",
        b64(header.as_bytes()),
        b64(claims().to_string().as_bytes())
    );
    let sig: p256::ecdsa::Signature = ec_key().sign(input.as_bytes());
    assert_eq!(check(&format!("{input}.{}", b64(&sig.to_bytes()))), Ok(()));
}

#[test]
fn malformed_compact_forms() {
    let good = es256(&ec_key(), &es_header(), &claims());
    let parts: Vec<&str> = good.split('.').collect();
    for bad in [
        String::new(),
        "a".into(),
        "a.b".into(),
        format!("{}.{}", parts[0], parts[1]),
        format!("{good}.x"),
        format!("{}=.{}.{}", parts[0], parts[1], parts[2]),
        format!("+{}.{}.{}", &parts[0][1..], parts[1], parts[2]),
        format!("{}.{}.{}", b64(b"not json"), parts[1], parts[2]),
        format!("{}.{}.{}", b64(b"[1]"), parts[1], parts[2]),
    ] {
        assert!(
            matches!(check(&bad), Err(JwtError::Malformed)),
            "{bad:?}: {:?}",
            check(&bad)
        );
    }
    // Claims altered after signing are refused by the signature, before they are read.
    for bad in [
        format!("{}..{}", parts[0], parts[2]),
        format!("{}.{}=.{}", parts[0], parts[1], parts[2]),
    ] {
        assert_eq!(check(&bad), Err(JwtError::Signature), "{bad:?}");
    }
    // Claims that are no object, signed properly.
    let input = format!(
        "{}.{}",
        b64(es_header().to_string().as_bytes()),
        b64(b"[1,2]")
    );
    let sig: p256::ecdsa::Signature = ec_key().sign(input.as_bytes());
    assert_eq!(
        check(&format!("{input}.{}", b64(&sig.to_bytes()))),
        Err(JwtError::Malformed)
    );
    // A member that matters, twice: the header's alg, the claims' exp and aud.
    let dup_header = r#"{"alg":"ES256","kid":"ec-1","alg":"none"}"#;
    let input = format!(
        "{}.{}",
        b64(dup_header.as_bytes()),
        b64(claims().to_string().as_bytes())
    );
    let sig: p256::ecdsa::Signature = ec_key().sign(input.as_bytes());
    assert_eq!(
        check(&format!("{input}.{}", b64(&sig.to_bytes()))),
        Err(JwtError::Malformed)
    );
    for dup in [
        format!(
            r#"{{"iss":"{ISS}","aud":"{AUD}","exp":{},"exp":{},"scope":"mcp:tools"}}"#,
            NOW + 9,
            NOW - 999
        ),
        format!(
            r#"{{"iss":"{ISS}","aud":"x","aud":"{AUD}","exp":{},"scope":"mcp:tools"}}"#,
            NOW + 9
        ),
    ] {
        let input = format!(
            "{}.{}",
            b64(es_header().to_string().as_bytes()),
            b64(dup.as_bytes())
        );
        let sig: p256::ecdsa::Signature = ec_key().sign(input.as_bytes());
        assert_eq!(
            check(&format!("{input}.{}", b64(&sig.to_bytes()))),
            Err(JwtError::Malformed),
            "{dup}"
        );
    }
    // Too long, before anything is decoded.
    let long = "a".repeat(MAX_JWT_LEN + 1);
    assert_eq!(check(&long), Err(JwtError::TooLong));
    let c = with(|c| c["pad"] = json!("x".repeat(MAX_JWT_LEN)));
    assert_eq!(
        check(&es256(&ec_key(), &es_header(), &c)),
        Err(JwtError::TooLong)
    );
}

#[test]
fn key_sets() {
    assert!(Jwks::new(jwks_doc().as_bytes()).is_ok());
    for bad in [
        "",
        "[]",
        "{}",
        r#"{"keys":{}}"#,
        r#"{"keys":[],"keys":[]}"#,
        "{\"keys\":[",
    ] {
        assert_eq!(
            Jwks::new(bad.as_bytes()).err(),
            Some(JwksError::NotJwks),
            "{bad}"
        );
    }
    assert_eq!(
        Jwks::new(br#"{"keys":[]}"#).err(),
        Some(JwksError::NoUsableKey)
    );
    assert_eq!(
        Jwks::new(br#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).err(),
        Some(JwksError::NoUsableKey)
    );
    // A point off the curve; a coordinate too short; a 1024-bit RSA key; an even modulus.
    let mut off = ec_jwk(&ec_key(), "a");
    off["y"] = off["x"].clone();
    let mut short = ec_jwk(&ec_key(), "a");
    short["x"] = json!(b64(&[1u8; 31]));
    let weak = rsa_jwk(&rsa_key(1024), "weak");
    let mut even = rsa_jwk(&rsa_key(2048), "even");
    let mut n = rsa_key(2048).n().to_bytes_be();
    *n.last_mut().unwrap() &= 0xfe;
    even["n"] = json!(b64(&n));
    for (i, k) in [off, short, weak, even].into_iter().enumerate() {
        let doc = json!({"keys":[ec_jwk(&ec_key(), "ok"), k]}).to_string();
        assert_eq!(
            Jwks::new(doc.as_bytes()).err(),
            Some(JwksError::BadKey(1)),
            "case {i}"
        );
    }
}
