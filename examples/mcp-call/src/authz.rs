//! `oauth-dev-server`: an OAuth 2.1 authorization server for **trying** OAuth on one machine
//! (`cargo run -p mcp-call --bin oauth-dev-server`, issuer `http://127.0.0.1:4000`), with
//! device-sim's `--oauth-issuer` and `mcp-call … login` or an SDK's OAuth client. It is not a
//! server to protect anything: it asks no password, and whoever opens its login page on this
//! machine and presses "Allow" gets a token.
//!
//! What an MCP client's OAuth flow needs of it, and nothing more:
//!
//! - metadata (RFC 8414 at `/.well-known/oauth-authorization-server`, the same at
//!   `/.well-known/openid-configuration`) and its keys (`/jwks`: one P-256 key, made at start);
//! - dynamic registration (RFC 7591, `/register`): public clients whose redirect URIs are on
//!   this machine (`http://127.0.0.1:PORT/…`, `http://localhost:PORT/…`, `http://[::1]:PORT/…`);
//! - the authorization code flow with PKCE S256 required and a `resource` (RFC 8707) required:
//!   `/authorize` shows who asks for what, with "Allow" and "Deny";
//! - `/token`: the code (single use, two minutes) for an access token: a JWT (RFC 9068,
//!   `typ: at+jwt`) signed ES256, `aud` = the resource, `scope` = what the login asked for (or
//!   `mcp:tools`), ten minutes of life.
//!
//! It keeps at most [`KEPT`] clients, pending logins and codes each (the oldest go first), and
//! listens on loopback only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::oauth::{form, parse_form, strings};

/// The port `oauth-dev-server` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 4000;

/// The scope granted when a login asks for none (device-sim's `--oauth-scope mcp:tools`).
pub const DEFAULT_SCOPE: &str = "mcp:tools";

/// Clients, pending logins and codes kept, each.
pub const KEPT: usize = 256;

/// An access token's life.
pub const TOKEN_LIFE: Duration = Duration::from_secs(600);

/// A code's life.
const CODE_LIFE: Duration = Duration::from_secs(120);

/// The key's id in the JWKS and the tokens.
const KID: &str = "dev-es256";

/// A map that keeps the [`KEPT`] latest entries.
struct Recent<V> {
    map: HashMap<String, V>,
    order: VecDeque<String>,
}

impl<V> Recent<V> {
    fn new() -> Self {
        Recent {
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn insert(&mut self, key: String, value: V) {
        if self.order.len() >= KEPT
            && let Some(old) = self.order.pop_front()
        {
            self.map.remove(&old);
        }
        self.order.push_back(key.clone());
        self.map.insert(key, value);
    }

    fn take(&mut self, key: &str) -> Option<V> {
        self.order.retain(|k| k != key);
        self.map.remove(key)
    }
}

struct Client {
    name: String,
    redirect_uris: Vec<String>,
}

/// A login shown, waiting for "Allow" or "Deny".
struct Pending {
    client_id: String,
    redirect_uri: String,
    state: Option<String>,
    challenge: String,
    resource: String,
    scope: String,
}

/// A code handed out, for `/token`.
struct Grant {
    login: Pending,
    issued: Instant,
}

struct Dev {
    issuer: String,
    key: SigningKey,
    clients: Mutex<Recent<Client>>,
    pending: Mutex<Recent<Pending>>,
    codes: Mutex<Recent<Grant>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn random(n: usize) -> String {
    crate::random_hex(n).unwrap_or_default()
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh P-256 key from the OS's randomness.
fn new_key() -> std::io::Result<SigningKey> {
    for _ in 0..16 {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        if let Ok(key) = SigningKey::from_slice(&bytes) {
            return Ok(key);
        }
    }
    Err(std::io::Error::other(
        "no usable P-256 key from the OS's randomness",
    ))
}

/// Serves the authorization server `issuer` (`http://127.0.0.1:PORT`) on `listener` until the
/// process ends.
///
/// # Errors
/// No randomness for the key; the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, issuer: String) -> std::io::Result<()> {
    let dev = Arc::new(Dev {
        issuer,
        key: new_key()?,
        clients: Mutex::new(Recent::new()),
        pending: Mutex::new(Recent::new()),
        codes: Mutex::new(Recent::new()),
    });
    let app = Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/.well-known/openid-configuration", get(metadata))
        .route("/jwks", get(jwks))
        .route("/register", post(register))
        .route("/authorize", get(authorize).post(decide))
        .route("/token", post(token))
        .with_state(dev);
    axum::serve(listener, app).await
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    json_response(
        status,
        &json!({"error": error, "error_description": description}),
    )
}

async fn metadata(State(dev): State<Arc<Dev>>) -> Response {
    let i = &dev.issuer;
    json_response(
        StatusCode::OK,
        &json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "jwks_uri": format!("{i}/jwks"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": [DEFAULT_SCOPE],
        }),
    )
}

async fn jwks(State(dev): State<Arc<Dev>>) -> Response {
    let point = dev.key.verifying_key().to_encoded_point(false);
    let coordinate = |c: Option<&p256::FieldBytes>| c.map(|b| URL_SAFE_NO_PAD.encode(b));
    json_response(
        StatusCode::OK,
        &json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": KID, "alg": "ES256", "use": "sig",
            "x": coordinate(point.x()), "y": coordinate(point.y()),
        }]}),
    )
}

/// `http://` on this machine: 127.0.0.1, localhost or [::1], with a port.
fn is_local_redirect(uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    ["127.0.0.1:", "localhost:", "[::1]:"].iter().any(|h| {
        authority
            .strip_prefix(h)
            .is_some_and(|p| p.parse::<u16>().is_ok())
    })
}

async fn register(State(dev): State<Arc<Dev>>, body: Bytes) -> Response {
    let Ok(asked) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "not JSON",
        );
    };
    let uris = strings(asked.get("redirect_uris"));
    if uris.is_empty()
        || uris.len() > 8
        || !uris.iter().all(|u| u.len() <= 512 && is_local_redirect(u))
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect_uris: 1 to 8 http:// URIs on this machine (127.0.0.1, localhost, [::1]) with a port",
        );
    }
    let name: String = asked
        .get("client_name")
        .and_then(Value::as_str)
        .unwrap_or("an unnamed client")
        .chars()
        .take(64)
        .collect();
    let id = random(16);
    let answer = json!({
        "client_id": id,
        "client_id_issued_at": now_s(),
        "client_name": name,
        "redirect_uris": uris,
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    lock(&dev.clients).insert(
        id,
        Client {
            name,
            redirect_uris: uris,
        },
    );
    json_response(StatusCode::CREATED, &answer)
}

/// Text for the page: `& < > " '` escaped.
fn html(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".into(),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '"' => "&quot;".into(),
            '\'' => "&#39;".into(),
            c => c.to_string(),
        })
        .collect()
}

fn page(status: StatusCode, body: &str) -> Response {
    let doc = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>oauth-dev-server</title></head>\
         <body style=\"font-family:sans-serif;max-width:40em;margin:2em auto\">{body}\
         <p><small>oauth-dev-server: for trying OAuth on this machine; it asks no password.</small></p>\
         </body></html>"
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        doc,
    )
        .into_response()
}

/// Back to the client with `params` (the login's `state` added).
fn redirect(to: &str, state: Option<&str>, params: &[(&str, &str)]) -> Response {
    let mut all = params.to_vec();
    if let Some(s) = state {
        all.push(("state", s));
    }
    let separator = if to.contains('?') { '&' } else { '?' };
    let location = format!("{to}{separator}{}", form(&all));
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

async fn authorize(State(dev): State<Arc<Dev>>, RawQuery(query): RawQuery) -> Response {
    let q = parse_form(&query.unwrap_or_default());
    let field = |k: &str| q.get(k).cloned();
    let (Some(client_id), Some(redirect_uri)) = (field("client_id"), field("redirect_uri")) else {
        return page(
            StatusCode::BAD_REQUEST,
            "<p>This login names no client_id or redirect_uri.</p>",
        );
    };
    let name = {
        let clients = lock(&dev.clients);
        match clients.map.get(&client_id) {
            Some(c) if c.redirect_uris.contains(&redirect_uri) => c.name.clone(),
            _ => {
                return page(
                    StatusCode::BAD_REQUEST,
                    "<p>Unknown client, or a redirect_uri it did not register.</p>",
                );
            }
        }
    };
    let state = field("state");
    let refuse = |why: &str| {
        redirect(
            &redirect_uri,
            state.as_deref(),
            &[("error", "invalid_request"), ("error_description", why)],
        )
    };
    if field("response_type").as_deref() != Some("code") {
        return refuse("response_type must be code");
    }
    if field("code_challenge_method").as_deref() != Some("S256") {
        return refuse("PKCE with code_challenge_method S256 is required");
    }
    let Some(challenge) = field("code_challenge").filter(|c| (43..=128).contains(&c.len())) else {
        return refuse("code_challenge is required");
    };
    let Some(resource) =
        field("resource").filter(|r| r.starts_with("http://") || r.starts_with("https://"))
    else {
        return refuse("resource (the MCP endpoint's URL, RFC 8707) is required");
    };
    let scope = field("scope")
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_SCOPE.into());
    let id = random(16);
    let body = format!(
        "<h1>Log in</h1><p><b>{}</b> asks for an access token to</p><p><code>{}</code></p>\
         <p>with the scope <code>{}</code>.</p>\
         <form method=\"post\" action=\"/authorize\"><input type=\"hidden\" name=\"login\" value=\"{id}\">\
         <button name=\"decision\" value=\"allow\">Allow</button> \
         <button name=\"decision\" value=\"deny\">Deny</button></form>",
        html(&name),
        html(&resource),
        html(&scope)
    );
    lock(&dev.pending).insert(
        id,
        Pending {
            client_id,
            redirect_uri,
            state,
            challenge,
            resource,
            scope,
        },
    );
    page(StatusCode::OK, &body)
}

async fn decide(State(dev): State<Arc<Dev>>, body: Bytes) -> Response {
    let f = parse_form(&String::from_utf8_lossy(&body));
    let Some(login) = f.get("login").and_then(|id| lock(&dev.pending).take(id)) else {
        return page(
            StatusCode::BAD_REQUEST,
            "<p>This login is unknown or was answered already.</p>",
        );
    };
    if f.get("decision").map(String::as_str) != Some("allow") {
        return redirect(
            &login.redirect_uri,
            login.state.as_deref(),
            &[("error", "access_denied")],
        );
    }
    let code = random(24);
    let (to, state) = (login.redirect_uri.clone(), login.state.clone());
    lock(&dev.codes).insert(
        code.clone(),
        Grant {
            login,
            issued: Instant::now(),
        },
    );
    redirect(&to, state.as_deref(), &[("code", &code)])
}

async fn token(State(dev): State<Arc<Dev>>, body: Bytes) -> Response {
    let f = parse_form(&String::from_utf8_lossy(&body));
    let field = |k: &str| f.get(k).map(String::as_str);
    let invalid = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
    if field("grant_type") != Some("authorization_code") {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "authorization_code only",
        );
    }
    let Some(grant) = field("code").and_then(|c| lock(&dev.codes).take(c)) else {
        return invalid("unknown or used code");
    };
    let login = grant.login;
    if grant.issued.elapsed() > CODE_LIFE {
        return invalid("the code expired");
    }
    if field("client_id") != Some(login.client_id.as_str()) {
        return invalid("the code is another client's");
    }
    if field("redirect_uri") != Some(login.redirect_uri.as_str()) {
        return invalid("redirect_uri differs from the login's");
    }
    let verifier = field("code_verifier").unwrap_or_default();
    if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != login.challenge {
        return invalid("the code_verifier does not match the code_challenge");
    }
    if field("resource").is_some_and(|r| r != login.resource) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "resource differs from the login's",
        );
    }
    let now = now_s();
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": KID});
    let claims = json!({
        "iss": dev.issuer, "sub": "dev-user", "aud": login.resource, "client_id": login.client_id,
        "scope": login.scope, "iat": now, "exp": now + TOKEN_LIFE.as_secs(), "jti": random(12),
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature: Signature = dev.key.sign(input.as_bytes());
    let jwt = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()));
    json_response(
        StatusCode::OK,
        &json!({"access_token": jwt, "token_type": "Bearer",
                "expires_in": TOKEN_LIFE.as_secs(), "scope": login.scope}),
    )
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn redirects_only_to_this_machine() {
        assert!(is_local_redirect("http://127.0.0.1:6276/oauth/callback"));
        assert!(is_local_redirect("http://localhost:3000/cb"));
        assert!(is_local_redirect("http://[::1]:1/"));
        assert!(!is_local_redirect("http://127.0.0.1.evil.example:80/"));
        assert!(!is_local_redirect("http://localhost/cb"));
        assert!(!is_local_redirect("https://example.com/cb"));
        assert!(!is_local_redirect("http://localhost:80@evil.example/"));
    }

    #[test]
    fn the_page_escapes_what_a_client_registered() {
        assert_eq!(
            html("<b>\"x\" & 'y'</b>"),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }
}
