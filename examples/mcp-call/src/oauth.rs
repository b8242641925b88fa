//! OAuth for an HTTP endpoint: `mcp-call URL login` as MCP's authorization asks of a client,
//! and the store of the tokens it gets.
//!
//! 1. The endpoint's protected-resource metadata (RFC 9728,
//!    `/.well-known/oauth-protected-resource/PATH`) names its authorization server and scopes.
//! 2. The server's metadata (RFC 8414, else OpenID discovery), whose `issuer` must be the one
//!    named.
//! 3. Dynamic client registration (RFC 7591): a public client (`token_endpoint_auth_method`
//!    `none`) whose redirect URI is a listener of this process on `127.0.0.1`.
//! 4. The person logs in: the authorization URL (code flow, PKCE S256, `state`, the scopes, and
//!    `resource` = the endpoint, RFC 8707) is shown and handed to a browser; the server sends
//!    the browser back to the listener with the code.
//! 5. The code, the PKCE verifier and the resource for an access token, kept in the store
//!    (a JSON file, `0600`, by endpoint URL) with its expiry. A later `mcp-call URL …` sends it
//!    as `Authorization: Bearer` while it is valid.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{RawQuery, State};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hyper::Method;
use mcp_core::transport::escape::escaped;
use mcp_host::tls::Tls;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::OpenUrl;
use crate::http::{Endpoint, body, request};

/// A stored token is not used in its last minute.
const EXPIRY_MARGIN_S: u64 = 60;

/// Where tokens are kept without `--token-store`: `$XDG_CONFIG_HOME/mcp-call/tokens.json`,
/// else `~/.config/mcp-call/tokens.json`.
pub fn default_store() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("mcp-call").join("tokens.json"))
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn read_store(store: &Path) -> BTreeMap<String, Value> {
    std::fs::read(store)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The access token kept for `resource`, if it is still valid.
pub(crate) fn stored_token(store: &Path, resource: &str) -> Option<String> {
    let entry = read_store(store).remove(resource)?;
    let expires_at = entry.get("expires_at").and_then(Value::as_u64)?;
    if now_s() + EXPIRY_MARGIN_S >= expires_at {
        return None;
    }
    entry
        .get("access_token")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Keeps `token` for `resource` (the file readable by its owner only).
fn save(store: &Path, resource: &str, entry: Value) -> Result<(), String> {
    let mut all = read_store(store);
    all.insert(resource.to_string(), entry);
    if let Some(dir) = store.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let mut file = open
        .open(store)
        .map_err(|e| format!("{}: {e}", store.display()))?;
    let text = serde_json::to_vec_pretty(&all).unwrap_or_default();
    file.write_all(&text)
        .map_err(|e| format!("{}: {e}", store.display()))
}

/// `application/x-www-form-urlencoded` (and query) encoding: unreserved bytes as they are,
/// every other byte `%XX`.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A query or form body decoded into its pairs (`+` is a space); a broken escape drops the pair.
pub(crate) fn parse_form(text: &str) -> BTreeMap<String, String> {
    let dec = |s: &str| -> Option<String> {
        let mut out = Vec::new();
        let mut bytes = s.bytes();
        while let Some(b) = bytes.next() {
            match b {
                b'+' => out.push(b' '),
                b'%' => {
                    let hex = [bytes.next()?, bytes.next()?];
                    out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
                }
                _ => out.push(b),
            }
        }
        String::from_utf8(out).ok()
    };
    text.split('&')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Some((dec(k)?, dec(v)?))
        })
        .collect()
}

/// GETs a JSON document.
async fn get_json(url: &str, tls: &Tls) -> Result<Value, String> {
    let to = Endpoint::parse(url)?;
    let resp = request(
        &to,
        Method::GET,
        &[("accept", "application/json")],
        None,
        tls,
    )
    .await?;
    let status = resp.status().as_u16();
    let bytes = body(resp).await?;
    if status != 200 {
        return Err(format!("{}: HTTP {status}", escaped(url)));
    }
    serde_json::from_slice(&bytes).map_err(|_| format!("{}: not JSON", escaped(url)))
}

/// POSTs `body` as `content_type`; the JSON answer of a 2xx, else an error with the server's
/// `error_description`.
async fn post_json(
    url: &str,
    content_type: &str,
    body_bytes: Vec<u8>,
    tls: &Tls,
) -> Result<Value, String> {
    let to = Endpoint::parse(url)?;
    let headers = [
        ("accept", "application/json"),
        ("content-type", content_type),
    ];
    let resp = request(&to, Method::POST, &headers, Some(body_bytes), tls).await?;
    let status = resp.status().as_u16();
    let bytes = body(resp).await?;
    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        let why = answer
            .get("error_description")
            .or_else(|| answer.get("error"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(format!("{}: HTTP {status} {}", escaped(url), escaped(why)));
    }
    Ok(answer)
}

/// The strings of a JSON array (none when it is not one).
pub(crate) fn strings(array: Option<&Value>) -> Vec<String> {
    array
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn text<'v>(doc: &'v Value, key: &str, from: &str) -> Result<&'v str, String> {
    doc.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{from} has no {key}"))
}

/// The authorization server's metadata: RFC 8414's well-known path (with the issuer's path
/// after it), else OpenID discovery; its `issuer` must be `issuer`.
async fn server_metadata(issuer: &str, tls: &Tls) -> Result<Value, String> {
    let at = Endpoint::parse(issuer)?;
    let path = at.path.trim_end_matches('/');
    let candidates = [
        format!(
            "{}/.well-known/oauth-authorization-server{path}",
            at.origin()
        ),
        format!("{}{path}/.well-known/openid-configuration", at.origin()),
    ];
    let mut last = String::new();
    for url in &candidates {
        match get_json(url, tls).await {
            Ok(meta) => {
                if meta.get("issuer").and_then(Value::as_str) != Some(issuer) {
                    return Err(format!(
                        "{} names another issuer than {}",
                        escaped(url),
                        escaped(issuer)
                    ));
                }
                return Ok(meta);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Logs in at the authorization server of `to` and keeps the access token (see the
/// [module docs](self)).
pub(crate) async fn login(
    to: &Endpoint,
    tls: &Tls,
    store: &Path,
    timeout: Duration,
    open: &OpenUrl,
    err: &mut (dyn Write + Send),
) -> Result<(), String> {
    let resource_doc = format!(
        "{}/.well-known/oauth-protected-resource{}",
        to.origin(),
        to.path.trim_end_matches('/')
    );
    let resource_meta = get_json(&resource_doc, tls).await?;
    let issuer = resource_meta
        .get("authorization_servers")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "{} names no authorization server: the endpoint takes a pre-shared token (--token)",
                escaped(&resource_doc)
            )
        })?
        .to_string();
    let scopes = strings(resource_meta.get("scopes_supported"));
    let meta = server_metadata(&issuer, tls).await?;
    let authorize = text(&meta, "authorization_endpoint", "the server's metadata")?.to_string();
    let token = text(&meta, "token_endpoint", "the server's metadata")?.to_string();
    let register = text(
        &meta,
        "registration_endpoint",
        "the server's metadata (no dynamic registration)",
    )?
    .to_string();
    for url in [&authorize, &token, &register] {
        Endpoint::parse(url)?;
    }

    // The listener the browser comes back to.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("a listener for the login's redirect: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let (tx, mut rx) = mpsc::channel::<BTreeMap<String, String>>(4);
    let app = axum::Router::new()
        .route("/callback", axum::routing::get(callback))
        .with_state(tx);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let registration = json!({
        "client_name": "mcp-call",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let client = post_json(
        &register,
        "application/json",
        registration.to_string().into_bytes(),
        tls,
    )
    .await?;
    let client_id = text(&client, "client_id", "the registration's answer")?.to_string();

    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| format!("no randomness from the OS: {e}"))?;
    let verifier = URL_SAFE_NO_PAD.encode(secret);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let state = crate::random_hex(16)?;
    let scope = scopes.join(" ");
    let mut query = vec![
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", redirect.as_str()),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", to.url.as_str()),
    ];
    if !scope.is_empty() {
        query.push(("scope", scope.as_str()));
    }
    let separator = if authorize.contains('?') { '&' } else { '?' };
    let url = format!("{authorize}{separator}{}", form(&query));
    let _ = writeln!(
        err,
        "mcp-call: log in on this page (it opens in $BROWSER if set):\n  {}",
        escaped(&url).max_chars(4096)
    );
    let _ = err.flush();
    open(url);

    let back = tokio::time::timeout(timeout, async {
        loop {
            let Some(q) = rx.recv().await else {
                return Err("the redirect listener stopped".to_string());
            };
            if q.get("state") != Some(&state) {
                continue; // not this login's redirect
            }
            return Ok(q);
        }
    })
    .await;
    server.abort();
    let back = back.map_err(|_| format!("no login within {} s", timeout.as_secs()))??;
    if let Some(e) = back.get("error") {
        return Err(format!("the login was refused: {}", escaped(e)));
    }
    let code = back.get("code").ok_or("the redirect carries no code")?;

    let grant = form(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", &redirect),
        ("client_id", &client_id),
        ("code_verifier", &verifier),
        ("resource", &to.url),
    ]);
    let answer = post_json(
        &token,
        "application/x-www-form-urlencoded",
        grant.into_bytes(),
        tls,
    )
    .await?;
    let access = text(&answer, "access_token", "the token's answer")?;
    let lifetime = answer
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    save(
        store,
        &to.url,
        json!({"access_token": access, "expires_at": now_s() + lifetime, "issuer": issuer}),
    )
}

/// The browser's return: hands the query to the login, thanks the person.
async fn callback(
    State(tx): State<mpsc::Sender<BTreeMap<String, String>>>,
    RawQuery(query): RawQuery,
) -> axum::response::Html<&'static str> {
    let _ = tx.try_send(parse_form(&query.unwrap_or_default()));
    axum::response::Html(
        "<!doctype html><title>mcp-call</title><p>Done: mcp-call has the answer. You may close this page.</p>",
    )
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")]

    use super::*;

    #[test]
    fn forms_round_trip() {
        let text = form(&[
            ("redirect_uri", "http://127.0.0.1:1/cb?x=1&y"),
            ("scope", "mcp:tools offline"),
        ]);
        assert_eq!(
            text,
            "redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb%3Fx%3D1%26y&scope=mcp%3Atools%20offline"
        );
        let back = parse_form(&text);
        assert_eq!(back["redirect_uri"], "http://127.0.0.1:1/cb?x=1&y");
        assert_eq!(back["scope"], "mcp:tools offline");
        assert_eq!(parse_form("a=b+c&bad=%zz")["a"], "b c");
        assert!(!parse_form("bad=%zz").contains_key("bad"));
    }

    #[test]
    fn a_stored_token_is_used_until_its_last_minute() {
        let dir = std::env::temp_dir().join(format!("mcp-call-store-{}", std::process::id()));
        let store = dir.join("tokens.json");
        let url = "http://127.0.0.1:8080/mcp";
        save(
            &store,
            url,
            json!({"access_token": "t1", "expires_at": now_s() + 600}),
        )
        .unwrap();
        assert_eq!(stored_token(&store, url).as_deref(), Some("t1"));
        assert_eq!(stored_token(&store, "http://other/mcp"), None);
        save(
            &store,
            url,
            json!({"access_token": "t2", "expires_at": now_s() + 30}),
        )
        .unwrap();
        assert_eq!(stored_token(&store, url), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&store).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
