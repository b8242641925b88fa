//! Bearer tokens on the HTTP endpoint (`mcp_core::transport::auth`), as a host chains them: the
//! `Authorization` check, the challenge written for the request's `Host`, the metadata document,
//! and the well-known path test.
//!
//! Input: `[flags]`, then the `Authorization` value up to a `0xFF` byte (absent when `flags` bit 0
//! is set), then the `Host` value up to a `0xFF` byte, then the request path (any bytes).
//! `flags` bits 1–2 pick the device's token from [`TOKENS`].
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

use libfuzzer_sys::fuzz_target;
use mcp_core::transport::auth::{
    Bearer, MAX_AUTHORITY_LEN, METADATA_PATH, Resource, Unauthorized, is_metadata_path,
};

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

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
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
