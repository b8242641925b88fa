//! OAuth access tokens on the HTTP endpoint: the host as a resource server of one authorization
//! server, over mcp-core's [`jwt`] check.
//!
//! [`OAuthOptions`] names the authorization server (its issuer URL), the audience tokens must
//! carry — this device's resource URL (RFC 8707: what an MCP client asks for with `resource=`),
//! fixed when the host is set up and never read from a request, so that a token the same server
//! issued for another service on the same host (another port, another name for it) admits
//! nothing here whatever `Host` a request names —, the scopes a call needs, and where the keys
//! come from: a JWKS document
//! given ([`Keys::Document`], as a firmware has them at build time) or fetched from the server
//! ([`Keys::Fetch`]): its RFC 8414 metadata (`/.well-known/oauth-authorization-server`, then
//! OpenID's `/.well-known/openid-configuration`), whose `issuer` must be the configured one,
//! then its `jwks_uri`. Fetched keys are kept ([`Verifier`]) and fetched again when a token
//! names a key they lack (a rotation: at once the first time, then at most once per
//! [`REFETCH_AFTER`]) and after [`MAX_KEY_AGE`].
//!
//! A server that fails is not hammered by the tokens that reach the device: one fetch is in
//! flight at a time (requests that need keys meanwhile wait for it, and use what it got), a
//! failed fetch is not tried again for [`FETCH_BACKOFF`] (doubled at each failure in a row, up
//! to [`MAX_FETCH_BACKOFF`]) — tokens the keys in hand cannot verify are refused meanwhile,
//! without a fetch —, and a token that is no JWT of an accepted algorithm never makes the
//! device fetch at all.
//!
//! An `https://` issuer is fetched over TLS, its certificate checked like every link's (the
//! system's roots and `--ca-file`, [`Tls`]). A plain `http://` issuer is fetched only from a
//! loopback server (tests, a server on the same machine): keys fetched in clear from elsewhere
//! could be swapped on the way.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use mcp_core::transport::jwt::{self, Jwks, JwtError, Rules};

use crate::tls::Tls;

/// The largest metadata or JWKS document fetched.
const MAX_DOCUMENT: usize = 64 * 1024;
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// A token naming an unknown key fetches the keys again, and then not again for this long.
pub const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// Fetched keys are fetched again after this long.
pub const MAX_KEY_AGE: Duration = Duration::from_secs(3600);
/// After a failed fetch, none is tried for this long; doubled at each failure in a row.
pub const FETCH_BACKOFF: Duration = Duration::from_secs(2);
/// The longest wait after failed fetches.
pub const MAX_FETCH_BACKOFF: Duration = Duration::from_secs(300);

/// A key set that judges a token's form and algorithm only: one EC key no token's `kid` names.
/// A token it refuses for another reason than an unknown key or a signature is refused without
/// a fetch, whatever keys the server has.
const FORM_ONLY: &str = concat!(
    r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"\u0000form-only","alg":"ES256","use":"sig","#,
    r#""x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","#,
    r#""y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}"#
);

/// Where the authorization server's keys come from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Keys {
    /// A JWKS document (`{"keys":[…]}`), checked by [`OAuthOptions::check`].
    Document(String),
    /// Fetched from the authorization server's metadata (`jwks_uri`) when first needed.
    Fetch,
}

/// A host that takes access tokens of one authorization server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// The authorization server's issuer URL (`iss` of its tokens, exactly).
    pub issuer: String,
    /// The `aud` tokens must carry: this device's resource URL (`http://lamp.local/mcp`), an
    /// `http(s)` URL with a path. The protected-resource metadata names it as the `resource`, and
    /// a refusal's challenge points at its metadata; no request changes it.
    pub audience: String,
    /// Scopes every token must hold (also `scopes_supported` and the challenge's `scope`).
    pub scopes: Vec<String>,
    /// Where the keys come from.
    pub keys: Keys,
    /// Leeway for `exp` and `nbf`.
    pub leeway: Duration,
    /// How an `https://` authorization server is checked when its keys are fetched (the same
    /// roots and `--ca-file`s as every other outbound link).
    pub tls: Tls,
}

impl OAuthOptions {
    /// Tokens of `issuer` for the resource `audience` (this endpoint's URL as its clients name
    /// it), keys fetched from the issuer, no scope, 60 s of leeway.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        OAuthOptions {
            issuer: issuer.into(),
            audience: audience.into(),
            scopes: Vec::new(),
            keys: Keys::Fetch,
            leeway: Duration::from_secs(jwt::DEFAULT_LEEWAY_S),
            tls: Tls::system(),
        }
    }

    crate::link::setters! {
        /// Sets how an `https://` authorization server's certificate is checked.
        tls(tls: Tls);
        /// Sets the required scopes.
        scopes(scopes: &[&str]) = crate::owned(scopes);
        /// Sets where the keys come from.
        keys(keys: Keys);
        /// Sets the leeway.
        leeway(leeway: Duration);
    }

    /// The resource the audience names, as mcp-core writes its metadata URL (`None` for an
    /// audience [`check`](Self::check) refuses).
    pub fn resource(&self) -> Option<mcp_core::transport::auth::Resource<'_>> {
        let (https, authority, path) = url_parts(&self.audience)?;
        mcp_core::transport::auth::Resource::new(authority.as_bytes(), path).map(|r| r.https(https))
    }

    /// Checks what can be checked before serving: the issuer is an `http(s)` URL, the audience
    /// one with a path of plain characters (`http://lamp.local/mcp`),
    /// the scopes are scope tokens, given keys are a usable JWKS document, keys to fetch in clear
    /// (`http://`) come from a loopback address or `localhost`.
    ///
    /// # Errors
    /// What is wrong, in words.
    pub fn check(&self) -> Result<(), String> {
        let (https, authority, _) = url_parts(&self.issuer)
            .ok_or_else(|| format!("the issuer {:?} is not an http(s) URL", self.issuer))?;
        if self.resource().is_none() {
            return Err(format!(
                "the audience {:?} is not this device's resource URL (http(s)://HOST[:PORT]/PATH)",
                self.audience
            ));
        }
        for s in &self.scopes {
            let ok = !s.is_empty()
                && s.bytes()
                    .all(|c| matches!(c, 0x21 | 0x23..=0x5b | 0x5d..=0x7e));
            if !ok {
                return Err(format!(
                    "{s:?} is not a scope (no spaces, quotes or backslashes)"
                ));
            }
        }
        match &self.keys {
            Keys::Document(doc) => Jwks::new(doc.as_bytes())
                .map(|_| ())
                .map_err(|e| format!("the keys: {e}")),
            // Over https the certificate is checked like every link's; in clear only from a
            // loopback server, since keys could be swapped on the way (`get` checks the
            // addresses the name resolves to as well).
            Keys::Fetch if !https && !is_loopback_host(authority_host(authority)) => Err(format!(
                "the issuer {:?} needs TLS (https://): keys are fetched in clear only from a \
                 loopback server",
                self.issuer
            )),
            Keys::Fetch => Ok(()),
        }
    }
}

/// `(https, authority, path)` of an `http(s)://authority/path` URL.
fn url_parts(url: &str) -> Option<(bool, &str, &str)> {
    let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        (false, url.strip_prefix("http://")?)
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "-._:[]".contains(c);
    (!authority.is_empty() && authority.chars().all(plain)).then_some((https, authority, path))
}

/// The keys as last fetched.
#[derive(Default)]
struct Cache {
    doc: Option<Arc<String>>,
    /// When the keys were last fetched (successfully).
    fetched: Option<Instant>,
    /// When a token naming an unknown key last made them be fetched again.
    kid_refetch: Option<Instant>,
    /// The last failed fetch, and how long none is tried after it.
    failed: Option<(Instant, Duration)>,
}

impl Cache {
    /// Records a fetch's outcome: the keys, or one more failure (the wait doubles).
    fn record(&mut self, fetched: Result<&Arc<String>, ()>) {
        match fetched {
            Ok(doc) => {
                self.doc = Some(doc.clone());
                self.fetched = Some(Instant::now());
                self.failed = None;
            }
            Err(()) => {
                let wait = self
                    .failed
                    .map_or(FETCH_BACKOFF, |(_, w)| (w * 2).min(MAX_FETCH_BACKOFF));
                self.failed = Some((Instant::now(), wait));
            }
        }
    }

    /// The last fetch failed, and its wait has not passed.
    fn backing_off(&self) -> bool {
        self.failed.is_some_and(|(t, wait)| t.elapsed() < wait)
    }
}

/// Checks tokens against [`OAuthOptions`], keeping fetched keys.
pub struct Verifier {
    opts: OAuthOptions,
    cache: Mutex<Cache>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.opts.issuer)
            .finish_non_exhaustive()
    }
}

fn lock(m: &Mutex<Cache>) -> std::sync::MutexGuard<'_, Cache> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Verifier {
    /// A verifier for `opts` (check them first with [`OAuthOptions::check`]).
    pub fn new(opts: OAuthOptions) -> Self {
        let doc = match &opts.keys {
            Keys::Document(d) => Some(Arc::new(d.clone())),
            Keys::Fetch => None,
        };
        Verifier {
            opts,
            cache: Mutex::new(Cache {
                doc,
                ..Cache::default()
            }),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The options.
    pub fn options(&self) -> &OAuthOptions {
        &self.opts
    }

    /// Checks `token`, now: signed by the issuer's key, for the configured audience (whatever
    /// the request that carries it names), in time, with the scopes.
    ///
    /// # Errors
    /// Why the token does not admit the request; [`JwtError::UnknownKey`] also when no keys
    /// could be had.
    pub async fn check(&self, token: &[u8]) -> Result<(), JwtError> {
        let scopes: Vec<&str> = self.opts.scopes.iter().map(String::as_str).collect();
        let rules = Rules::new(&self.opts.issuer, &self.opts.audience)
            .scopes(&scopes)
            .leeway(self.opts.leeway.as_secs());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // What no key set changes (the form, the algorithm) is judged before keys are sought.
        match Self::verify(FORM_ONLY, token, &rules, now) {
            Err(JwtError::UnknownKey | JwtError::Signature) => {}
            other => return other.and(Err(JwtError::UnknownKey)),
        }
        let (doc, stale) = {
            let c = lock(&self.cache);
            let stale = matches!(self.opts.keys, Keys::Fetch)
                && c.fetched.is_none_or(|t| t.elapsed() > MAX_KEY_AGE);
            (c.doc.clone(), stale)
        };
        let doc = match doc {
            Some(d) if !stale => d,
            _ => match self.refetch(None).await {
                Some(d) => d,
                None => return Err(JwtError::UnknownKey),
            },
        };
        let first = Self::verify(&doc, token, &rules, now);
        if first != Err(JwtError::UnknownKey) || !matches!(self.opts.keys, Keys::Fetch) {
            return first;
        }
        // A key the set lacks: the server may have rotated its keys.
        match self.refetch(Some(REFETCH_AFTER)).await {
            Some(fresh) if !Arc::ptr_eq(&fresh, &doc) => Self::verify(&fresh, token, &rules, now),
            _ => first,
        }
    }

    fn verify(doc: &str, token: &[u8], rules: &Rules<'_>, now: u64) -> Result<(), JwtError> {
        let keys = Jwks::new(doc.as_bytes()).map_err(|_| JwtError::UnknownKey)?;
        jwt::verify(token, &keys, rules, now)
    }

    /// Fetches the keys again unless the last attempt was less than `min_gap` ago, or the last
    /// fetch failed and its wait has not passed (then the keys as they are); the keys afterwards.
    /// One fetch at a time: a request that waited for another's finds its outcome.
    async fn refetch(&self, min_gap: Option<Duration>) -> Option<Arc<String>> {
        let _one = self.fetching.lock().await;
        {
            let mut c = lock(&self.cache);
            if c.backing_off() {
                return c.doc.clone();
            }
            let recent = match min_gap {
                // For an unknown kid: at most once per gap.
                Some(gap) => c.kid_refetch.is_some_and(|t| t.elapsed() < gap),
                // Missing or old keys: another request may have fetched while this one waited.
                None => c.fetched.is_some_and(|t| t.elapsed() <= MAX_KEY_AGE),
            };
            if recent {
                return c.doc.clone();
            }
            if min_gap.is_some() {
                c.kid_refetch = Some(Instant::now());
            }
        }
        match self.fetch().await {
            Ok(doc) => Some(doc),
            Err(e) => {
                eprintln!(
                    "mcp-host: the keys of {}: {}",
                    mcp_core::transport::escape::escaped(&self.opts.issuer),
                    mcp_core::transport::escape::escaped(&e).max_chars(300)
                );
                lock(&self.cache).doc.clone()
            }
        }
    }

    /// Fetches the keys, and records the outcome (a failure starts or lengthens the wait).
    async fn fetch(&self) -> Result<Arc<String>, String> {
        let fetched = fetch_jwks(&self.opts.issuer, &self.opts.tls)
            .await
            .map(Arc::new);
        lock(&self.cache).record(fetched.as_ref().map_err(|_| ()));
        fetched
    }

    /// Fetches the keys now (at start-up, to fail early). Returns how many bytes the document
    /// has.
    ///
    /// # Errors
    /// Why they could not be had.
    pub async fn prefetch(&self) -> Result<usize, String> {
        if let Keys::Document(d) = &self.opts.keys {
            return Ok(d.len());
        }
        let _one = self.fetching.lock().await;
        self.fetch().await.map(|doc| doc.len())
    }
}

/// The authorization server's JWKS document: its metadata (RFC 8414, then OpenID discovery),
/// whose `issuer` must be `issuer`, then its `jwks_uri`, checked as a key set. An `https://`
/// server's certificate is checked with `tls`; a plain `http://` one must be on loopback.
pub async fn fetch_jwks(issuer: &str, tls: &Tls) -> Result<String, String> {
    let (https, authority, path) =
        url_parts(issuer).ok_or_else(|| format!("{issuer:?} is not an http(s) URL"))?;
    let path = path.trim_end_matches('/');
    let scheme = if https { "https" } else { "http" };
    let candidates = [
        format!("{scheme}://{authority}/.well-known/oauth-authorization-server{path}"),
        format!("{scheme}://{authority}{path}/.well-known/openid-configuration"),
    ];
    let mut last = String::new();
    for url in &candidates {
        let body = match get(url, tls).await {
            Ok(b) => b,
            Err(e) => {
                last = format!("{url}: {e}");
                continue;
            }
        };
        let meta: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON ({e})"))?;
        let named = meta.get("issuer").and_then(serde_json::Value::as_str);
        if named != Some(issuer) {
            return Err(format!(
                "{url} names the issuer {:?}, not {issuer}",
                named.unwrap_or_default()
            ));
        }
        let jwks_uri = meta
            .get("jwks_uri")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("{url} has no jwks_uri"))?;
        let doc = get(jwks_uri, tls)
            .await
            .map_err(|e| format!("{jwks_uri}: {e}"))?;
        let doc = String::from_utf8(doc.to_vec()).map_err(|_| format!("{jwks_uri}: not UTF-8"))?;
        Jwks::new(doc.as_bytes()).map_err(|e| format!("{jwks_uri}: {e}"))?;
        return Ok(doc);
    }
    Err(last)
}

/// GETs `url`: the body of a 200. Over `https://` the certificate is checked with `tls`; in
/// clear, a loopback server only.
async fn get(url: &str, tls: &Tls) -> Result<Bytes, String> {
    let (https, authority, path) = url_parts(url).ok_or("not an http(s) URL")?;
    let addrs: Vec<_> = tokio::net::lookup_host(authority_with_port(authority, https))
        .await
        .map_err(|e| e.to_string())?
        .collect();
    if addrs.is_empty() || (!https && !addrs.iter().all(|a| a.ip().is_loopback())) {
        return Err("keys are fetched in clear only from a loopback server".into());
    }
    let fetch = async {
        let tcp = tokio::net::TcpStream::connect(&addrs[..])
            .await
            .map_err(|e| e.to_string())?;
        let tls_host = https.then(|| authority_host(authority));
        let mut send = crate::client::http1::<Empty<Bytes>>(tcp, tls_host, tls).await?;
        let req = hyper::Request::get(if path.is_empty() { "/" } else { path })
            .header(hyper::header::HOST, authority)
            .header(hyper::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let res = send.send_request(req).await.map_err(|e| e.to_string())?;
        if res.status() != hyper::StatusCode::OK {
            return Err(format!("HTTP {}", res.status()));
        }
        Limited::new(res.into_body(), MAX_DOCUMENT)
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .map_err(|e| e.to_string())
    };
    tokio::time::timeout(FETCH_TIMEOUT, fetch)
        .await
        .map_err(|_| "timed out".to_string())?
}

/// The host of an authority: without its port, an IPv6 literal without its brackets.
fn authority_host(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        authority.split(':').next().unwrap_or(authority)
    }
}

/// Whether `host` (an authority's host, without brackets) is `localhost` or a loopback address.
fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `authority` with the scheme's port (`:443` over https, else `:80`) when it names none.
fn authority_with_port(authority: &str, https: bool) -> String {
    let has_port = if authority.starts_with('[') {
        authority.contains("]:")
    } else {
        authority.contains(':')
    };
    if has_port {
        authority.to_string()
    } else {
        format!("{authority}:{}", if https { 443 } else { 80 })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            url_parts("http://127.0.0.1:4000"),
            Some((false, "127.0.0.1:4000", ""))
        );
        assert_eq!(
            url_parts("https://auth.example/tenant/x"),
            Some((true, "auth.example", "/tenant/x"))
        );
        assert_eq!(url_parts("ftp://x"), None);
        assert_eq!(url_parts("http://user@x/"), None);
        assert_eq!(
            authority_with_port("127.0.0.1:4000", false),
            "127.0.0.1:4000"
        );
        assert_eq!(authority_with_port("localhost", false), "localhost:80");
        assert_eq!(authority_with_port("localhost", true), "localhost:443");
        assert_eq!(authority_with_port("[::1]:9", true), "[::1]:9");
        assert_eq!(authority_with_port("[::1]", false), "[::1]:80");
        assert_eq!(authority_host("[::1]:9"), "::1");
        assert_eq!(authority_host("auth.example:8443"), "auth.example");
        assert_eq!(authority_host("auth.example"), "auth.example");
    }

    const AUD: &str = "http://lamp.local/mcp";

    #[test]
    fn failed_fetches_back_off_and_a_success_ends_it() {
        let mut c = Cache::default();
        assert!(!c.backing_off());
        let mut waits = Vec::new();
        for _ in 0..10 {
            c.record(Err(()));
            assert!(c.backing_off());
            waits.push(c.failed.unwrap().1.as_secs());
        }
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        c.record(Ok(&Arc::new(String::from("{}"))));
        assert!(!c.backing_off() && c.doc.is_some() && c.fetched.is_some());
    }

    #[test]
    fn options_are_checked() {
        // The audience is this device's resource URL, with a path.
        for bad in [
            "lamp.local/mcp",
            "http://lamp.local",
            "http://u@lamp.local/mcp",
            "",
        ] {
            let e = OAuthOptions::new("http://127.0.0.1:4000", bad)
                .check()
                .unwrap_err();
            assert!(e.contains("the audience"), "{bad}: {e}");
        }
        let https = OAuthOptions::new("http://127.0.0.1:4000", "https://lamp.example:8443/mcp");
        let mut url = [0u8; 80];
        let n = https.resource().unwrap().write_metadata_url(&mut url);
        assert_eq!(
            &url[..n],
            b"https://lamp.example:8443/.well-known/oauth-protected-resource/mcp"
        );
        assert!(
            OAuthOptions::new("http://127.0.0.1:4000", AUD)
                .check()
                .is_ok()
        );
        assert!(
            OAuthOptions::new("https://auth.example", AUD)
                .check()
                .is_ok()
        );
        assert!(OAuthOptions::new("auth.example", AUD).check().is_err());
        assert!(
            OAuthOptions::new("http://localhost:4000", AUD)
                .check()
                .is_ok()
        );
        assert!(OAuthOptions::new("http://[::1]:4000", AUD).check().is_ok());
        let e = OAuthOptions::new("http://auth.example", AUD)
            .check()
            .unwrap_err();
        assert!(e.contains("needs TLS"), "{e}");
        // Given keys need no fetch: the issuer is only a name tokens must carry.
        let doc = concat!(
            r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"as-1","alg":"ES256","use":"sig","#,
            r#""x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","#,
            r#""y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}"#
        );
        let given = OAuthOptions::new("http://auth.example", AUD).keys(Keys::Document(doc.into()));
        assert_eq!(given.check(), Ok(()));
        assert!(
            OAuthOptions::new("http://127.0.0.1:4000", AUD)
                .scopes(&["a b"])
                .check()
                .is_err()
        );
        let e = OAuthOptions::new("https://auth.example", AUD)
            .keys(Keys::Document("{}".into()))
            .check()
            .unwrap_err();
        assert!(e.contains("the keys"), "{e}");
    }
}
