//! Bearer-token authorization for the Streamable HTTP endpoint, sans-IO: a device with a
//! pre-shared token refuses every request to `/mcp` that does not carry it, before the body is
//! read or the engine sees anything.
//!
//! - [`Bearer`] holds the device's token and checks a request's `Authorization: Bearer <token>`
//!   header (the scheme in any case, RFC 6750 §2.1 / RFC 9110 §11.1), comparing the token in
//!   constant time ([`Bearer::matches`]).
//! - A refused request gets 401 ([`Unauthorized::refusal`]) with a `WWW-Authenticate` challenge
//!   ([`Unauthorized::write_challenge`]): `Bearer resource_metadata="<url>"` (RFC 9728 §5.1), and
//!   `error="invalid_token"` when a token was sent but is not the device's (RFC 6750 §3.1).
//! - The URL in the challenge is the endpoint's *protected-resource metadata* (RFC 9728), which
//!   MCP clients of revision 2025-06-18 and later fetch to discover how to authorize:
//!   [`Resource::write_metadata`] writes it, to be served without authorization at
//!   `/.well-known/oauth-protected-resource` and at its path-suffixed form
//!   `/.well-known/oauth-protected-resource/mcp` ([`is_metadata_path`]). A device with a
//!   pre-shared token names no authorization server; the document then only says that the token
//!   goes in the `Authorization` header. A device that takes OAuth access tokens (feature `jwt`,
//!   `transport::jwt`) names its authorization server and the scopes it wants
//!   ([`Resource::write_metadata_for`]), and a token without them is answered 403
//!   `insufficient_scope` ([`Unauthorized::InsufficientScope`]).
//! - The paths an OAuth client tries next on the device itself — the authorization server's
//!   metadata, `/register`, `/authorize`, `/token` ([`is_authorization_server_path`]) — get a
//!   JSON OAuth error that says where tokens come from ([`write_no_authorization_server`]),
//!   not a bare 404.
//!
//! Every header byte is a peer's: nothing here panics or reads beyond a bound, whatever comes.
//! Tokens longer than [`MAX_TOKEN_LEN`] are refused without being compared.
//!
//! ```
//! use mcp_core::transport::auth::{Bearer, Resource, Unauthorized};
//!
//! const TOKEN: Bearer<'static> = match Bearer::new("s3cret-token") {
//!     Ok(t) => t,
//!     Err(_) => panic!("not a bearer token"),
//! };
//! let headers: &[(&str, &[u8])] = &[("Host", b"192.168.1.20"), ("Authorization", b"Bearer wrong")];
//! let refused = TOKEN.check(headers).unwrap_err();
//! assert_eq!((refused, refused.refusal().status), (Unauthorized::Invalid, 401));
//!
//! // The challenge names the metadata document of the endpoint the client asked for.
//! let resource = Resource::new(b"192.168.1.20", "/mcp");
//! let mut out = [0u8; 160];
//! let n = refused.write_challenge(resource.as_ref(), &mut out);
//! assert_eq!(
//!     &out[..n],
//!     br#"Bearer resource_metadata="http://192.168.1.20/.well-known/oauth-protected-resource/mcp", error="invalid_token""#
//! );
//! let n = resource.unwrap().write_metadata(&[], &mut out);
//! assert_eq!(
//!     &out[..n],
//!     br#"{"resource":"http://192.168.1.20/mcp","bearer_methods_supported":["header"]}"#
//! );
//!
//! let right: &[(&str, &[u8])] = &[("Authorization", b"bearer s3cret-token")];
//! assert!(TOKEN.check(right).is_ok());
//! ```

use core::fmt;

use subtle::{Choice, ConstantTimeEq};

use super::http::{Headers, Refusal, is_authority, trim};
use crate::wire::protocol;
use crate::wire::response::ErrorCode;
use crate::wire::writer::{ArrayWriter, Writer};

/// The longest token a device may hold or a request may present, in bytes. Every comparison
/// does this much work, whatever the tokens' lengths.
pub const MAX_TOKEN_LEN: usize = 256;

/// The well-known path of the protected-resource metadata (RFC 9728 §3); the path-suffixed form
/// appends the endpoint's path (`/.well-known/oauth-protected-resource/mcp`).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The longest `Host` value (after trimming) a [`Resource`] is made from: a DNS name's 253
/// characters, a trailing dot, and a port. With it, a challenge for an endpoint path of `p`
/// bytes fits in `100 + MAX_AUTHORITY_LEN + p` bytes.
pub const MAX_AUTHORITY_LEN: usize = 260;

/// The response header a 401 carries its challenge in.
pub const WWW_AUTHENTICATE: &str = "WWW-Authenticate";

/// Why a string cannot be a device's bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TokenError {
    /// Empty.
    #[error("empty")]
    Empty,
    /// Longer than [`MAX_TOKEN_LEN`] bytes.
    #[error("longer than 256 bytes")]
    TooLong,
    /// Not a `b64token` of RFC 6750 §2.1: letters, digits, `-._~+/`, then optional trailing `=`.
    #[error("not a b64token (letters, digits, -._~+/ and trailing =)")]
    BadChar,
}

/// `true` for a character of RFC 6750's `b64token` before its trailing `=`s.
const fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
}

/// Checks `v` as a `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
const fn check_token(mut v: &[u8]) -> Result<(), TokenError> {
    if v.is_empty() {
        return Err(TokenError::Empty);
    }
    if v.len() > MAX_TOKEN_LEN {
        return Err(TokenError::TooLong);
    }
    let mut chars = 0;
    let mut padding = false;
    while let [c, rest @ ..] = v {
        if *c == b'=' {
            padding = true;
        } else if padding || !is_token_char(*c) {
            return Err(TokenError::BadChar);
        } else {
            chars += 1;
        }
        v = rest;
    }
    if chars == 0 {
        return Err(TokenError::BadChar);
    }
    Ok(())
}

/// A device's bearer token, and the check of a request's `Authorization` header against it.
///
/// `Debug` does not show the token.
#[derive(Clone, Copy)]
pub struct Bearer<'a> {
    token: &'a [u8],
}

impl fmt::Debug for Bearer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer(..)")
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Bearer<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Bearer(..)")
    }
}

impl<'a> Bearer<'a> {
    /// The device's token: 1 to [`MAX_TOKEN_LEN`] bytes of RFC 6750's `b64token` (letters,
    /// digits, `-._~+/`, then optional `=` padding). A `const fn`, so that a firmware checks a
    /// token given at build time when it compiles.
    ///
    /// # Errors
    /// [`TokenError`] when `token` is empty, too long, or has another character.
    pub const fn new(token: &'a str) -> Result<Self, TokenError> {
        match check_token(token.as_bytes()) {
            Ok(()) => Ok(Bearer {
                token: token.as_bytes(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Checks a request's `Authorization` header: `Bearer` (any case), one or more spaces, and
    /// this device's token.
    ///
    /// # Errors
    /// - [`Unauthorized::Missing`]: no `Authorization` header, or credentials of another
    ///   scheme (`Basic …`): the client presented no bearer token.
    /// - [`Unauthorized::Invalid`]: a bearer token that is not this device's — a different one,
    ///   an empty or malformed one, one longer than [`MAX_TOKEN_LEN`].
    pub fn check(&self, headers: &(impl Headers + ?Sized)) -> Result<(), Unauthorized> {
        let presented = presented(headers)?;
        if check_token(presented).is_err() || !self.matches(presented) {
            return Err(Unauthorized::Invalid);
        }
        Ok(())
    }

    /// `true` when `presented` is this device's token, compared in constant time.
    ///
    /// The comparison takes the same steps whatever the two tokens hold: it runs over
    /// [`MAX_TOKEN_LEN`] byte positions (each token padded with zeros, a byte no token has),
    /// combines every position's equality with `subtle`'s [`ConstantTimeEq`] (no early exit, and
    /// an optimization barrier on each result), and compares the lengths the same way. So the
    /// time does not depend on where the tokens first differ, nor tell the device's token's
    /// length; a token longer than [`MAX_TOKEN_LEN`] is refused at once (it can never match, and
    /// its length is the sender's own).
    pub fn matches(&self, presented: &[u8]) -> bool {
        if presented.len() > MAX_TOKEN_LEN {
            return false;
        }
        let mut same = Choice::from(1);
        for i in 0..MAX_TOKEN_LEN {
            let a = presented.get(i).copied().unwrap_or(0);
            let b = self.token.get(i).copied().unwrap_or(0);
            same &= a.ct_eq(&b);
        }
        let len = |t: &[u8]| u64::try_from(t.len()).unwrap_or(u64::MAX);
        same &= len(presented).ct_eq(&len(self.token));
        bool::from(same)
    }
}

/// The bearer token a request presents: the `Authorization` header's value after the scheme
/// `Bearer` (any case) and one or more spaces, trimmed — not checked against anything.
///
/// # Errors
/// [`Unauthorized::Missing`]: no `Authorization` header, or another scheme.
pub fn presented(headers: &(impl Headers + ?Sized)) -> Result<&[u8], Unauthorized> {
    let value = trim(
        headers
            .header("Authorization")
            .ok_or(Unauthorized::Missing)?,
    );
    let (scheme, rest) = match value.iter().position(|&c| c == b' ') {
        Some(i) => (
            value.get(..i).unwrap_or_default(),
            value.get(i..).unwrap_or_default(),
        ),
        None => (value, &b""[..]),
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err(Unauthorized::Missing);
    }
    Ok(trim(rest))
}

/// Why a request was refused: answer [`refusal`](Self::refusal) (401, or 403 for
/// [`InsufficientScope`](Self::InsufficientScope)) with the challenge
/// ([`write_challenge`](Self::write_challenge)) in [`WWW_AUTHENTICATE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Unauthorized {
    /// No bearer token was presented.
    Missing,
    /// A bearer token was presented, and it is not the device's (nor, with OAuth, a valid
    /// access token for it).
    Invalid,
    /// A valid access token that lacks a scope the endpoint needs (403, RFC 6750 §3.1).
    InsufficientScope,
}

impl Unauthorized {
    /// The refusal — 401, or 403 for [`InsufficientScope`](Self::InsufficientScope): a
    /// JSON-RPC error (-32600) whose message says what is missing ([`Refusal::write_body`]
    /// writes it).
    pub const fn refusal(self) -> Refusal {
        match self {
            Unauthorized::Missing => Refusal::new(
                401,
                ErrorCode::InvalidRequest,
                "Unauthorized: this device wants Authorization: Bearer <its token>",
            ),
            Unauthorized::Invalid => Refusal::new(
                401,
                ErrorCode::InvalidRequest,
                "Unauthorized: the bearer token is not this device's",
            ),
            Unauthorized::InsufficientScope => Refusal::new(
                403,
                ErrorCode::InvalidRequest,
                "Forbidden: the access token lacks a scope this device needs",
            ),
        }
    }

    /// Writes the `WWW-Authenticate` value: `Bearer resource_metadata="<metadata URL>"` (RFC
    /// 9728 §5.1) for `resource` (without one, e.g. a request without `Host`, plain `Bearer`),
    /// then `, error="invalid_token"` for [`Invalid`](Self::Invalid) (RFC 6750 §3.1; a request
    /// without a token gets no error code). Returns the length, 0 if `out` is too small.
    pub fn write_challenge(self, resource: Option<&Resource<'_>>, out: &mut [u8]) -> usize {
        self.write_challenge_with(resource, &[], out)
    }

    /// [`write_challenge`](Self::write_challenge) with the scopes the endpoint needs
    /// (`scope="a b"`, RFC 6750 §3; MCP clients ask the authorization server for them), and
    /// `error="insufficient_scope"` for [`InsufficientScope`](Self::InsufficientScope). Scopes
    /// with characters outside RFC 6749's `scope-token` (a quote, a backslash, a space, a
    /// control) are left out. Returns the length, 0 if `out` is too small.
    pub fn write_challenge_with(
        self,
        resource: Option<&Resource<'_>>,
        scopes: &[&str],
        out: &mut [u8],
    ) -> usize {
        let mut w = Writer::new(out);
        w.raw(b"Bearer");
        let mut sep: &[u8] = b" ";
        if let Some(r) = resource {
            w.raw(b" resource_metadata=\"");
            r.url(&mut w, true);
            w.raw(b"\"");
            sep = b", ";
        }
        let mut scopes = scopes.iter().filter(|s| is_scope_token(s)).peekable();
        if scopes.peek().is_some() {
            w.raw(sep);
            w.raw(b"scope=\"");
            let mut first = true;
            for s in scopes {
                if !first {
                    w.raw(b" ");
                }
                first = false;
                w.raw(s.as_bytes());
            }
            w.raw(b"\"");
            sep = b", ";
        }
        match self {
            Unauthorized::Missing => {}
            Unauthorized::Invalid => {
                w.raw(sep);
                w.raw(b"error=\"invalid_token\"");
            }
            Unauthorized::InsufficientScope => {
                w.raw(sep);
                w.raw(b"error=\"insufficient_scope\"");
            }
        }
        if w.fits() { w.needed() } else { 0 }
    }
}

/// The protected resource — the MCP endpoint — as a client reached it: scheme, the request's
/// `Host` and the endpoint's path. Its URL is the metadata document's `resource`, and the
/// metadata's URL goes in the challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Resource<'a> {
    https: bool,
    authority: &'a [u8],
    path: &'a str,
}

/// `true` for a character allowed in an endpoint path here: RFC 3986 `pchar`s and `/`, without
/// percent-escapes (nothing that needs quoting in a header parameter or escaping in JSON).
fn is_path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&c)
}

impl<'a> Resource<'a> {
    /// The endpoint at `path` (`/mcp`) of the server a request's `Host` value names (plain
    /// `http://`; see [`https`](Self::https)). `None` when `host` is not a plain authority
    /// (`host[:port]`: no userinfo, no path, nothing to quote; at most [`MAX_AUTHORITY_LEN`]
    /// bytes) or `path` is not an absolute path
    /// of plain characters — so nothing a peer sent can break out of the challenge's quotes or
    /// the document's strings.
    pub fn new(host: &'a [u8], path: &'a str) -> Option<Self> {
        let authority = trim(host);
        let path_ok = path.starts_with('/') && path.bytes().all(is_path_char);
        let authority_ok = authority.len() <= MAX_AUTHORITY_LEN && is_authority(authority);
        (authority_ok && path_ok).then_some(Resource {
            https: false,
            authority,
            path,
        })
    }

    /// Names the endpoint `https://…` (a device behind TLS).
    pub const fn https(mut self, https: bool) -> Self {
        self.https = https;
        self
    }

    /// Writes the endpoint's URL, or (`metadata`) its metadata's: the well-known prefix between
    /// the authority and the path, the path's trailing `/` dropped (RFC 9728 §3.1).
    fn url(&self, w: &mut Writer<'_>, metadata: bool) {
        w.raw(if self.https { b"https://" } else { b"http://" });
        w.raw(self.authority);
        if metadata {
            w.raw(METADATA_PATH.as_bytes());
            w.raw(self.path.trim_end_matches('/').as_bytes());
        } else {
            w.raw(self.path.as_bytes());
        }
    }

    /// Writes the endpoint's URL (`http://192.168.1.20/mcp`). Returns the length, 0 if `out` is
    /// too small.
    pub fn write_url(&self, out: &mut [u8]) -> usize {
        let mut w = Writer::new(out);
        self.url(&mut w, false);
        if w.fits() { w.needed() } else { 0 }
    }

    /// Writes the URL of the endpoint's metadata document
    /// (`http://192.168.1.20/.well-known/oauth-protected-resource/mcp`). Returns the length, 0
    /// if `out` is too small.
    pub fn write_metadata_url(&self, out: &mut [u8]) -> usize {
        let mut w = Writer::new(out);
        self.url(&mut w, true);
        if w.fits() { w.needed() } else { 0 }
    }

    /// Writes the protected-resource metadata document (RFC 9728 §2):
    /// `{"resource":"<endpoint URL>","bearer_methods_supported":["header"]}`, with
    /// `"authorization_servers":[…]` when `authorization_servers` names any (a device with a
    /// pre-shared token has none). Serve it as `application/json`, without authorization.
    /// Returns the length, 0 if `out` is too small.
    pub fn write_metadata(&self, authorization_servers: &[&str], out: &mut [u8]) -> usize {
        self.write_metadata_for(
            &Metadata {
                authorization_servers,
                ..Metadata::PRE_SHARED
            },
            out,
        )
    }

    /// Writes the protected-resource metadata document with everything `meta` says: the
    /// `resource` (this endpoint's URL, or [`Metadata::resource`] when set),
    /// `authorization_servers`, `scopes_supported` (when any), `bearer_methods_supported`.
    /// Returns the length, 0 if `out` is too small.
    pub fn write_metadata_for(&self, meta: &Metadata<'_>, out: &mut [u8]) -> usize {
        let mut w = Writer::new(out);
        match meta.resource {
            Some(r) => {
                w.raw(b"{");
                w.key("resource");
                w.string(r);
            }
            None => {
                w.raw(protocol::RESOURCE_METADATA_OPEN);
                self.url(&mut w, false);
                w.raw(b"\"");
            }
        }
        for (key, list) in [
            (protocol::AUTHORIZATION_SERVERS, meta.authorization_servers),
            (protocol::SCOPES_SUPPORTED, meta.scopes_supported),
        ] {
            if !list.is_empty() {
                w.raw(key);
                ArrayWriter::write(&mut w, |a| {
                    for s in list {
                        a.str(s);
                    }
                });
            }
        }
        w.raw(protocol::BEARER_IN_HEADER_END);
        if w.fits() { w.needed() } else { 0 }
    }
}

/// What the protected-resource metadata says besides the endpoint (RFC 9728 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Metadata<'a> {
    /// The `resource`, when it is not the endpoint as the request named it: the audience the
    /// device's access tokens must carry, configured (`--oauth-audience`).
    pub resource: Option<&'a str>,
    /// The authorization servers whose tokens the device takes (their issuer URLs); empty
    /// with a pre-shared token.
    pub authorization_servers: &'a [&'a str],
    /// The scopes a token needs here (`scopes_supported`); clients ask for them.
    pub scopes_supported: &'a [&'a str],
}

impl Metadata<'_> {
    /// A device with a pre-shared token: no authorization server, no scopes.
    pub const PRE_SHARED: Metadata<'static> = Metadata {
        resource: None,
        authorization_servers: &[],
        scopes_supported: &[],
    };
}

/// `true` for an RFC 6749 `scope-token`: printable ASCII but space, `"` and `\\`.
fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| matches!(c, 0x21 | 0x23..=0x5b | 0x5d..=0x7e))
}

/// The paths an OAuth client tries on the MCP server itself when it looks for an authorization
/// server there (its metadata, RFC 8414 and OpenID discovery, with or without the endpoint's
/// path appended; and the default endpoints of the 2025-03-26 revision): `/register`,
/// `/authorize`, `/token`. A device is no authorization server; answer these with
/// [`write_no_authorization_server`]. A query string is not part of `request_path`.
pub fn is_authorization_server_path(request_path: &[u8], endpoint_path: &str) -> bool {
    if matches!(request_path, b"/register" | b"/authorize" | b"/token") {
        return true;
    }
    let suffix = endpoint_path.trim_end_matches('/').as_bytes();
    [
        &b"/.well-known/oauth-authorization-server"[..],
        b"/.well-known/openid-configuration",
    ]
    .iter()
    .any(|prefix| {
        request_path
            .strip_prefix(*prefix)
            .is_some_and(|rest| rest.is_empty() || rest == suffix)
    }) || request_path
        .strip_prefix(suffix)
        .is_some_and(|rest| rest == b"/.well-known/openid-configuration")
}

/// The status for a path of [`is_authorization_server_path`]: 404 for the metadata documents
/// (a client then tries the next place), 400 for the endpoints (an OAuth error response).
pub fn no_authorization_server_status(request_path: &[u8]) -> u16 {
    if request_path.starts_with(b"/.well-known/")
        || request_path.ends_with(b"/.well-known/openid-configuration")
    {
        404
    } else {
        400
    }
}

/// Writes the JSON OAuth error (RFC 6749 §5.2 form) a device answers on the authorization
/// server's paths: `{"error":"invalid_request","error_description":…}` saying that this device
/// is no authorization server, and where its tokens come from — the `issuers` it takes tokens
/// of (its protected-resource metadata names them), or, with none, that it takes a pre-shared
/// bearer token its owner gives out. Serve it as `application/json` with
/// [`no_authorization_server_status`]. Returns the length, 0 if `out` is too small.
pub fn write_no_authorization_server(issuers: &[&str], out: &mut [u8]) -> usize {
    let mut w = Writer::new(out);
    w.raw(b"{\"error\":\"invalid_request\",\"error_description\":");
    w.begin_string();
    match issuers {
        [] => w.text(
            "This device is not an OAuth authorization server and has none: it takes a \
             pre-shared bearer token (Authorization: Bearer <token>) that its owner gives out",
        ),
        _ => {
            w.text(
                "This device is not an OAuth authorization server: get an access token for it \
                 from ",
            );
            for (i, s) in issuers.iter().enumerate() {
                if i > 0 {
                    w.text(" or ");
                }
                w.text(s);
            }
            w.text(" (its protected-resource metadata names it)");
        }
    }
    w.end_string();
    if !issuers.is_empty() {
        w.raw(b",");
        w.key("authorization_servers");
        ArrayWriter::write(&mut w, |a| {
            for s in issuers {
                a.str(s);
            }
        });
    }
    w.raw(b"}");
    if w.fits() { w.needed() } else { 0 }
}

/// `true` when a request path is where the metadata of the endpoint at `endpoint_path` is
/// served: [`METADATA_PATH`] itself, or its path-suffixed form (`METADATA_PATH` + `/mcp`). A
/// query string is not part of `request_path`.
pub fn is_metadata_path(request_path: &[u8], endpoint_path: &str) -> bool {
    let Some(rest) = request_path.strip_prefix(METADATA_PATH.as_bytes()) else {
        return false;
    };
    rest.is_empty() || rest == endpoint_path.trim_end_matches('/').as_bytes()
}

#[cfg(test)]
mod test {
    use super::*;

    const TOKEN: &str = "tok-ABC.def_~+/123==";

    fn bearer() -> Bearer<'static> {
        Bearer::new(TOKEN).unwrap()
    }

    fn check(authorization: Option<&[u8]>) -> Result<(), Unauthorized> {
        let mut headers: Vec<(&str, &[u8])> = vec![("Host", b"localhost:8080")];
        if let Some(v) = authorization {
            headers.push(("Authorization", v));
        }
        bearer().check(headers.as_slice())
    }

    #[test]
    fn tokens_a_device_may_hold() {
        assert!(Bearer::new("a").is_ok());
        assert!(Bearer::new("YWJj==").is_ok());
        assert!(Bearer::new(&"x".repeat(MAX_TOKEN_LEN)).is_ok());
        assert_eq!(Bearer::new("").unwrap_err(), TokenError::Empty);
        assert_eq!(
            Bearer::new(&"x".repeat(MAX_TOKEN_LEN + 1)).unwrap_err(),
            TokenError::TooLong
        );
        for bad in [
            "a b", "a\"b", "a=b", "=", "==", "tok\n", "tök", "a,b", "a\\b",
        ] {
            assert_eq!(
                Bearer::new(bad).unwrap_err(),
                TokenError::BadChar,
                "{bad:?}"
            );
        }
        assert_eq!(format!("{:?}", bearer()), "Bearer(..)");
    }

    #[test]
    fn missing_header_or_other_scheme() {
        assert_eq!(check(None), Err(Unauthorized::Missing));
        assert_eq!(
            check(Some(b"Basic dXNlcjpwYXNz")),
            Err(Unauthorized::Missing)
        );
        let token_alone = TOKEN.as_bytes();
        assert_eq!(check(Some(token_alone)), Err(Unauthorized::Missing));
        assert_eq!(check(Some(b"")), Err(Unauthorized::Missing));
        assert_eq!(
            check(Some(format!("Bearerx {TOKEN}").as_bytes())),
            Err(Unauthorized::Missing)
        );
    }

    #[test]
    fn right_token_any_scheme_case() {
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            let v = format!("{scheme} {TOKEN}");
            assert_eq!(check(Some(v.as_bytes())), Ok(()), "{v}");
        }
        // 1*SP between scheme and token; optional whitespace around the value.
        assert_eq!(
            check(Some(format!(" \tBearer   {TOKEN} \t").as_bytes())),
            Ok(())
        );
    }

    #[test]
    fn wrong_prefix_suffix_and_overlong_tokens() {
        let mut wrong_first = TOKEN.as_bytes().to_vec();
        wrong_first[0] ^= 1;
        let mut wrong_last = TOKEN.as_bytes().to_vec();
        // The last character before the padding.
        let last = TOKEN.trim_end_matches('=').len() - 1;
        wrong_last[last] = b'4';
        let cases: Vec<Vec<u8>> = vec![
            b"wrong".to_vec(),
            wrong_first,
            wrong_last,
            TOKEN.as_bytes()[..TOKEN.len() - 1].to_vec(),
            TOKEN.as_bytes()[..1].to_vec(),
            format!("{TOKEN}=").into_bytes(),
            format!("{TOKEN}x").into_bytes(),
            format!("x{TOKEN}").into_bytes(),
            TOKEN.repeat(2).into_bytes(),
            "x".repeat(MAX_TOKEN_LEN + 1).into_bytes(),
            "x".repeat(100_000).into_bytes(),
            format!("{TOKEN} extra").into_bytes(),
            format!("{TOKEN},").into_bytes(),
            b"\"quoted\"".to_vec(),
            vec![0xff; 40],
            Vec::new(),
        ];
        for t in cases {
            let mut v = b"Bearer ".to_vec();
            v.extend_from_slice(&t);
            assert_eq!(
                check(Some(&v)),
                Err(Unauthorized::Invalid),
                "{}",
                String::from_utf8_lossy(&v)
            );
        }
        assert_eq!(check(Some(b"Bearer")), Err(Unauthorized::Invalid));
        assert_eq!(check(Some(b"bearer   ")), Err(Unauthorized::Invalid));
    }

    #[test]
    fn compare_is_exact_at_every_length() {
        // A device token of each length against each prefix and extension of it: only the
        // token itself matches (the zero padding never makes a prefix equal).
        let full = "abcdefghij".repeat(26);
        for n in [1, 2, 7, 100, MAX_TOKEN_LEN] {
            let token = &full[..n];
            let b = Bearer::new(token).unwrap();
            assert!(b.matches(token.as_bytes()));
            assert!(!b.matches(&token.as_bytes()[..n - 1]));
            assert!(!b.matches(&full.as_bytes()[..n + 1]));
            let mut zero_padded = token.as_bytes().to_vec();
            zero_padded.push(0);
            assert!(!b.matches(&zero_padded));
            for i in 0..n {
                let mut other = token.as_bytes().to_vec();
                other[i] = b'Z';
                assert!(!b.matches(&other), "differs at {i} of {n}");
            }
        }
    }

    #[test]
    fn challenges() {
        let r = Resource::new(b"lamp.local:8080", "/mcp").unwrap();
        let mut out = [0u8; 200];
        let n = Unauthorized::Missing.write_challenge(Some(&r), &mut out);
        assert_eq!(
            &out[..n],
            br#"Bearer resource_metadata="http://lamp.local:8080/.well-known/oauth-protected-resource/mcp""#
        );
        let n = Unauthorized::Invalid.write_challenge(Some(&r.https(true)), &mut out);
        assert_eq!(
            &out[..n],
            br#"Bearer resource_metadata="https://lamp.local:8080/.well-known/oauth-protected-resource/mcp", error="invalid_token""#
        );
        let n = Unauthorized::Missing.write_challenge(None, &mut out);
        assert_eq!(&out[..n], b"Bearer");
        let n = Unauthorized::Invalid.write_challenge(None, &mut out);
        assert_eq!(&out[..n], br#"Bearer error="invalid_token""#);
        assert_eq!(
            Unauthorized::Invalid.write_challenge(Some(&r), &mut [0u8; 20]),
            0
        );
        assert_eq!(Unauthorized::Missing.refusal().status, 401);
        let mut body = [0u8; 200];
        let n = Unauthorized::Invalid.refusal().write_body(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            &mut body,
        );
        let v: serde_json::Value = serde_json::from_slice(&body[..n]).unwrap();
        assert_eq!(
            (v["id"].as_i64(), v["error"]["code"].as_i64()),
            (Some(3), Some(-32600))
        );
    }

    #[test]
    fn hostile_hosts_and_paths_give_no_resource() {
        for host in [
            &b"evil\"quote"[..],
            b"a\\b",
            b"user@host",
            b"host/path",
            b"host:1:2",
            b"host\r\nX: y",
            b"",
            b"[::1",
            &[0xff, 0xfe],
        ] {
            assert!(Resource::new(host, "/mcp").is_none(), "{host:?}");
        }
        for path in ["mcp", "/m\"cp", "/m cp", "/m%22", "/m?q", "/m#f", ""] {
            assert!(Resource::new(b"localhost", path).is_none(), "{path:?}");
        }
        assert!(Resource::new(b" [::1]:80 ", "/").is_some());
        // Bounded: the longest Host gives a challenge of a known size.
        let longest = format!("{}:65535", "a".repeat(MAX_AUTHORITY_LEN - 6));
        let r = Resource::new(longest.as_bytes(), "/mcp").unwrap();
        let mut out = [0u8; 100 + MAX_AUTHORITY_LEN + 4];
        assert!(Unauthorized::Invalid.write_challenge(Some(&r.https(true)), &mut out) > 0);
        let too_long = format!("{}:65535", "a".repeat(MAX_AUTHORITY_LEN - 5));
        assert!(Resource::new(too_long.as_bytes(), "/mcp").is_none());
    }

    #[test]
    fn metadata_documents() {
        let r = Resource::new(b"127.0.0.1:9", "/mcp").unwrap();
        let mut out = [0u8; 300];
        let n = r.write_metadata(&[], &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"resource": "http://127.0.0.1:9/mcp", "bearer_methods_supported": ["header"]})
        );
        let n = r.write_metadata(&["https://auth.example", "https://b\"x"], &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(
            v["authorization_servers"],
            serde_json::json!(["https://auth.example", "https://b\"x"])
        );
        assert_eq!(v["resource"], "http://127.0.0.1:9/mcp");
        assert_eq!(r.write_metadata(&[], &mut [0u8; 30]), 0);
        let n = r.write_url(&mut out);
        assert_eq!(&out[..n], b"http://127.0.0.1:9/mcp");
        let n = r.write_metadata_url(&mut out);
        assert_eq!(
            &out[..n],
            b"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp"
        );
        let root = Resource::new(b"localhost", "/").unwrap();
        let n = root.write_metadata_url(&mut out);
        assert_eq!(
            &out[..n],
            b"http://localhost/.well-known/oauth-protected-resource"
        );
        assert!(is_metadata_path(
            b"/.well-known/oauth-protected-resource",
            "/mcp"
        ));
        assert!(is_metadata_path(
            b"/.well-known/oauth-protected-resource/mcp",
            "/mcp"
        ));
        for other in [
            &b"/.well-known/oauth-protected-resource/"[..],
            b"/.well-known/oauth-protected-resource/other",
            b"/.well-known/oauth-protected-resourcex",
            b"/.well-known/oauth-authorization-server",
            b"/mcp",
            b"",
        ] {
            assert!(!is_metadata_path(other, "/mcp"), "{other:?}");
        }
    }

    #[test]
    fn oauth_challenges_name_the_scopes() {
        let r = Resource::new(b"127.0.0.1:8080", "/mcp").unwrap();
        let mut out = [0u8; 300];
        let n = Unauthorized::Missing.write_challenge_with(Some(&r), &["mcp:tools"], &mut out);
        assert_eq!(
            &out[..n],
            br#"Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
        );
        let n = Unauthorized::InsufficientScope.write_challenge_with(
            Some(&r),
            &["mcp:tools", "bad\"quote", "mcp:admin", "", "a b"],
            &mut out,
        );
        assert_eq!(
            &out[..n],
            br#"Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", scope="mcp:tools mcp:admin", error="insufficient_scope""#
        );
        let n = Unauthorized::Invalid.write_challenge_with(None, &["s"], &mut out);
        assert_eq!(&out[..n], br#"Bearer scope="s", error="invalid_token""#);
        let refusal = Unauthorized::InsufficientScope.refusal();
        assert_eq!(refusal.status, 403);
    }

    #[test]
    fn presented_tokens() {
        let h: &[(&str, &[u8])] = &[("Authorization", b" bearer  a.b.c ")];
        assert_eq!(presented(h), Ok(&b"a.b.c"[..]));
        let h: &[(&str, &[u8])] = &[("Authorization", b"Basic x")];
        assert_eq!(presented(h), Err(Unauthorized::Missing));
        let h: &[(&str, &[u8])] = &[];
        assert_eq!(presented(h), Err(Unauthorized::Missing));
    }

    #[test]
    fn oauth_metadata_and_the_authorization_server_paths() {
        let r = Resource::new(b"127.0.0.1:9", "/mcp").unwrap();
        let mut out = [0u8; 400];
        let meta = Metadata {
            resource: None,
            authorization_servers: &["http://127.0.0.1:4000"],
            scopes_supported: &["mcp:tools"],
        };
        let n = r.write_metadata_for(&meta, &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"resource":"http://127.0.0.1:9/mcp","authorization_servers":["http://127.0.0.1:4000"],
                "scopes_supported":["mcp:tools"],"bearer_methods_supported":["header"]})
        );
        let n = r.write_metadata_for(
            &Metadata {
                resource: Some("https://lamp.example/mcp"),
                ..meta
            },
            &mut out,
        );
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["resource"], "https://lamp.example/mcp");
        for p in [
            &b"/register"[..],
            b"/authorize",
            b"/token",
            b"/.well-known/oauth-authorization-server",
            b"/.well-known/oauth-authorization-server/mcp",
            b"/.well-known/openid-configuration",
            b"/.well-known/openid-configuration/mcp",
            b"/mcp/.well-known/openid-configuration",
        ] {
            assert!(is_authorization_server_path(p, "/mcp"), "{p:?}");
        }
        for p in [
            &b"/mcp"[..],
            b"/registerx",
            b"/.well-known/oauth-protected-resource",
            b"/.well-known/oauth-authorization-server/other",
            b"/token/x",
        ] {
            assert!(!is_authorization_server_path(p, "/mcp"), "{p:?}");
        }
        assert_eq!(no_authorization_server_status(b"/register"), 400);
        assert_eq!(
            no_authorization_server_status(b"/.well-known/oauth-authorization-server"),
            404
        );
        let n = write_no_authorization_server(&[], &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["error"], "invalid_request");
        assert!(
            v["error_description"]
                .as_str()
                .unwrap()
                .contains("pre-shared bearer token")
        );
        let n = write_no_authorization_server(&["http://127.0.0.1:4000"], &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert!(
            v["error_description"]
                .as_str()
                .unwrap()
                .contains("from http://127.0.0.1:4000")
        );
        assert_eq!(v["authorization_servers"][0], "http://127.0.0.1:4000");
        assert_eq!(write_no_authorization_server(&[], &mut [0u8; 40]), 0);
    }
}
