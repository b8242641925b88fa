//! The Streamable HTTP server: one endpoint, both protocol eras.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use mcp_core::server::Peer;
use mcp_core::transport::auth;
use mcp_core::transport::http::{self as rules, Headers, Refusal, Route};
use mcp_core::wire::json::{DEFAULT_MAX_DEPTH, MAX_DEPTH_LIMIT};
use mcp_core::wire::request::Message;
use mcp_core::{Capacities, Principal};

use crate::oauth;
use crate::session::{Frames, Session, frame, parse_event_id};
use crate::web::{self, View};
use crate::{
    Board, Clock, Done, Engine, EventHook, Factory, HostEvent, Run, Step, Touch, lock, run,
};

/// `Retry-After` (seconds) of a 503 at the session limit.
const SESSION_RETRY_AFTER_S: u32 = 5;

/// Settings of an [`HttpHost`].
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The endpoint path.
    pub path: String,
    /// Host names (without port) accepted in `Host` besides the loopback names: the device's
    /// LAN address or mDNS name when it listens beyond loopback.
    pub allowed_hosts: Vec<String>,
    /// Origins (`http://host:port`, exact) of pages elsewhere that may call the endpoint from a
    /// browser, besides the endpoint's own origin (`http://` and the request's `Host`): an
    /// inspector's web UI in its direct mode, say. Their browsers' CORS preflights are answered
    /// and the responses to them carry `Access-Control-Allow-Origin` ([`web::guard`]). Every
    /// other `Origin` is refused (403), another server on the same machine included. Requests
    /// without `Origin` (SDKs, curl, a proxy in Node) are not affected.
    pub allowed_origins: Vec<String>,
    /// The largest request body (bytes); larger ones get 413.
    pub max_body: usize,
    /// The engine's output buffer (bytes): the largest response.
    pub out_len: usize,
    /// Who is on the other end of every connection.
    pub principal: Principal,
    /// The `retry:` of priming events (ms): how long a client waits before it reconnects.
    pub retry_ms: u32,
    /// Tools whose POST stream is closed right after the priming event (SSE polling, 2025-11-25
    /// sessions): the result is delivered when the client reconnects with `Last-Event-ID`.
    pub close_early: Vec<String>,
    /// The most legacy sessions kept. A new `initialize` beyond it ends the least recently used
    /// *idle* session (no running task, no call held for a person's answer, no open stream, no
    /// answer still to come, no request in flight); when every session is in use it is refused
    /// with 503, `Retry-After` and a
    /// JSON-RPC error (-32000) saying the device is at its session limit. A session in use is
    /// never ended to make room.
    pub max_sessions: usize,
    /// A session unused this long is ended, unless it is still in use (as above).
    pub session_idle: Duration,
    /// How often the engines are polled.
    pub tick: Duration,
    /// How often open SSE connections get a comment (to notice dead ones; a 2026-07-28 listen
    /// stream whose client has gone ends at the latest one or two comments later).
    pub keepalive: Duration,
    /// Receives host events (initialized sessions), for logging.
    pub on_event: Option<EventHook>,
    /// The longest a connection may take to send a request head, counted from when it is ready
    /// for one: just accepted, or its previous response sent. So this is also the keep-alive
    /// idle timeout (hyper starts its header-read timer as soon as a connection goes idle).
    /// Slowloris connections (a head never finished) and idle sockets are closed after it.
    pub header_timeout: Duration,
    /// The longest a POST body may take to arrive in full, from when the handler starts reading
    /// it: a body shorter than its `Content-Length` (or a trickle) gets 408 and the connection is
    /// closed.
    pub body_timeout: Duration,
    /// The most connections served at once ([`HttpHost::serve`]); further ones wait in the
    /// listen backlog until one closes. SSE streams hold theirs while open.
    pub max_connections: usize,
    /// The device's bearer token, if it has one: every request to the endpoint (any method)
    /// must then carry `Authorization: Bearer <token>`, checked in constant time with mcp-core's
    /// [`Bearer`](auth::Bearer) after the Host/Origin rule and before the body is read or an engine sees
    /// anything; others get 401 with a `WWW-Authenticate` challenge naming the endpoint's
    /// protected-resource metadata (RFC 9728), which is served without authorization at
    /// `/.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource<path>`.
    /// Check the token with [`Bearer::new`](auth::Bearer::new) when you read it: one that is no bearer token
    /// (empty, over 256 bytes, other characters than `b64token`'s) admits no request at all.
    pub bearer_token: Option<String>,
    /// OAuth: access tokens (JWT, ES256/RS256) of one authorization server for the configured
    /// resource ([`OAuthOptions::audience`](oauth::OAuthOptions::audience)) admit requests too
    /// (or alone, without a [`bearer_token`](Self::bearer_token)); the metadata then names that
    /// resource, the server and the scopes, whatever `Host` a request names, and a token without
    /// the scopes gets 403 `insufficient_scope`. See
    /// [`oauth`]. Check the options with [`OAuthOptions::check`](oauth::OAuthOptions::check).
    ///
    /// With either, the paths an OAuth client tries on the device for an authorization server
    /// (`/register`, `/authorize`, `/token`, the server metadata) answer a JSON OAuth error
    /// that says where tokens come from.
    pub oauth: Option<oauth::OAuthOptions>,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("path", &self.path)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body", &self.max_body)
            .field("principal", &self.principal)
            .field("close_early", &self.close_early)
            .field("max_sessions", &self.max_sessions)
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_connections", &self.max_connections)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| ".."))
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body: 64 * 1024,
            out_len: 64 * 1024,
            principal: Principal::Model,
            retry_ms: 1000,
            close_early: Vec::new(),
            max_sessions: 32,
            session_idle: Duration::from_secs(30 * 60),
            tick: Duration::from_millis(10),
            keepalive: Duration::from_secs(15),
            on_event: None,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: 128,
            bearer_token: None,
            oauth: None,
        }
    }
}

impl HttpOptions {
    /// Accepts these host names in `Host` besides the loopback names.
    pub fn allow_hosts(mut self, hosts: &[&str]) -> Self {
        self.allowed_hosts = crate::owned(hosts);
        self
    }

    /// Accepts requests from pages at these origins (`http://localhost:6274`) besides the
    /// endpoint's own; see [`allowed_origins`](Self::allowed_origins).
    pub fn allow_origins(mut self, origins: &[&str]) -> Self {
        self.allowed_origins = crate::owned(origins);
        self
    }

    crate::link::setters! {
        /// Sets who is on the other end of every connection.
        principal(p: Principal);
        /// Sets the tools whose POST stream closes early (SSE polling).
        close_early(tools: &[&str]) = crate::owned(tools);
        /// Sets the body limit.
        max_body(bytes: usize);
        /// Sets the output buffer size.
        out_len(bytes: usize);
        /// Sets the `retry:` of priming events.
        retry_ms(ms: u32);
        /// Sets the event hook.
        on_event(hook: EventHook) = Some(hook);
        /// Sets the session limit.
        max_sessions(n: usize) = n.max(1);
        /// Sets the request-head (and keep-alive idle) timeout.
        header_timeout(t: Duration);
        /// Sets the request-body timeout.
        body_timeout(t: Duration);
        /// Sets the connection limit.
        max_connections(n: usize) = n.max(1);
        /// Requires this bearer token on every request to the endpoint; see
        /// [`bearer_token`](Self::bearer_token).
        bearer_token(token: impl Into<String>) = Some(token.into());
        /// Takes access tokens of an authorization server; see [`oauth`](Self::oauth).
        oauth(oauth: oauth::OAuthOptions) = Some(oauth);
        /// Sets how often open SSE connections get a keep-alive comment.
        keepalive(every: Duration) = every.max(Duration::from_millis(10));
    }
}

/// A 2026-07-28 listen stream: where the stateless engine's updates tagged with its id go.
struct Listener {
    tx: tokio::sync::mpsc::UnboundedSender<Bytes>,
}

struct Shared<C: 'static, K: Capacities> {
    opts: HttpOptions,
    factory: Factory<C, K>,
    board: Arc<Mutex<C>>,
    stateless: Arc<Mutex<Box<Engine<C, K>>>>,
    sessions: Mutex<HashMap<String, Arc<Session<C, K>>>>,
    /// The open listen streams of the stateless engine, by request id (raw JSON).
    /// The open 2026-07-28 listen streams, by the peer number each request was given (a listen
    /// request is a client of its own: ids are that client's, so two clients may both listen
    /// with `id: 1`).
    listens: Mutex<HashMap<u64, Listener>>,
    next_generation: std::sync::atomic::AtomicU64,
    clock: Clock,
    /// The access-token check and its keys ([`HttpOptions::oauth`]), one for the host.
    oauth: Option<Arc<oauth::Verifier>>,
}

/// What a protected endpoint checks: its pre-shared token, the access tokens of its
/// authorization server, or both; and its path.
struct Protected {
    token: Option<String>,
    oauth: Option<Arc<oauth::Verifier>>,
    path: String,
}

impl Protected {
    /// The protected resource: with OAuth the configured one (the audience its tokens carry),
    /// whatever the request names; else the endpoint as this request reached it (`None`
    /// without a usable `Host`).
    fn resource<'a>(&'a self, h: &'a View<'_>) -> Option<auth::Resource<'a>> {
        match &self.oauth {
            Some(o) => o.options().resource(),
            None => auth::Resource::new(h.header("Host")?, &self.path),
        }
    }

    /// The scopes a token needs here.
    fn scopes(&self) -> Vec<&str> {
        self.oauth.as_ref().map_or_else(Vec::new, |o| {
            o.options().scopes.iter().map(String::as_str).collect()
        })
    }

    /// Whether the request's bearer token admits it: the pre-shared token (constant time), else
    /// an access token of the authorization server for the configured resource.
    async fn admits(&self, h: &View<'_>) -> Result<(), auth::Unauthorized> {
        let presented = auth::presented(h)?;
        if let Some(token) = &self.token {
            // A configured token that is no bearer token admits nothing.
            if auth::Bearer::new(token).is_ok_and(|b| b.check(h).is_ok()) {
                return Ok(());
            }
        }
        let Some(verifier) = &self.oauth else {
            return Err(auth::Unauthorized::Invalid);
        };
        match verifier.check(presented).await {
            Ok(()) => Ok(()),
            Err(mcp_core::transport::jwt::JwtError::Scope) => {
                Err(auth::Unauthorized::InsufficientScope)
            }
            Err(_) => Err(auth::Unauthorized::Invalid),
        }
    }
}

/// Lets a request through to the endpoint only with a token that admits it; else 401 (403 for
/// a token without the scopes) with the challenge. Nothing of the body is read.
async fn require_token(
    State(p): State<Arc<Protected>>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let h = View(req.headers());
    let Err(why) = p.admits(&h).await else {
        return next.run(req).await;
    };
    let mut challenge = [0u8; 768];
    let n = why.write_challenge_with(p.resource(&h).as_ref(), &p.scopes(), &mut challenge);
    let value = challenge
        .get(..n)
        .filter(|v| !v.is_empty())
        .and_then(|v| HeaderValue::from_bytes(v).ok())
        .unwrap_or(HeaderValue::from_static("Bearer"));
    let mut r = refusal(why.refusal(), b"");
    r.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    r
}

/// The protected-resource metadata document (RFC 9728): with OAuth, of the configured resource,
/// with its authorization server and scopes; else of the endpoint as this request reached it.
async fn metadata(State(p): State<Arc<Protected>>, req: Request) -> Response {
    let h = View(req.headers());
    let Some(resource) = p.resource(&h) else {
        return error(
            StatusCode::BAD_REQUEST,
            None,
            -32600,
            "Bad Request: the Host header names the resource",
        );
    };
    let issuer = p.oauth.as_ref().map(|o| o.options().issuer.as_str());
    let servers: Vec<&str> = issuer.into_iter().collect();
    let scopes = p.scopes();
    let meta = auth::Metadata {
        resource: p.oauth.as_ref().map(|o| o.options().audience.as_str()),
        authorization_servers: &servers,
        scopes_supported: &scopes,
    };
    let mut out = vec![0u8; 4096];
    let n = resource.write_metadata_for(&meta, &mut out);
    out.truncate(n);
    if out.is_empty() {
        return internal();
    }
    json(StatusCode::OK, Bytes::from(out))
}

/// What an OAuth client that looks for an authorization server on the device itself gets
/// (`/register`, `/token`, the server metadata paths): a JSON OAuth error saying where tokens
/// come from, not a bare 404.
async fn no_authorization_server(State(p): State<Arc<Protected>>, req: Request) -> Response {
    let issuer = p.oauth.as_ref().map(|o| o.options().issuer.as_str());
    let issuers: Vec<&str> = issuer.into_iter().collect();
    let mut out = vec![0u8; 1024];
    let n = auth::write_no_authorization_server(&issuers, &mut out);
    out.truncate(n);
    if out.is_empty() {
        return internal();
    }
    let status = StatusCode::from_u16(auth::no_authorization_server_status(
        req.uri().path().as_bytes(),
    ))
    .unwrap_or(StatusCode::BAD_REQUEST);
    let mut r = json(status, Bytes::from(out));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A Streamable HTTP MCP server over engines built by a [`Factory`], sharing one board.
///
/// ```no_run
/// # use std::sync::{Arc, Mutex};
/// # struct Lamp;
/// # impl mcp_host::Board for Lamp {}
/// # async fn demo(factory: mcp_host::Factory<Lamp, mcp_core::Caps<8, 2>>) -> std::io::Result<()> {
/// let host = mcp_host::HttpHost::new(mcp_host::HttpOptions::default(), factory, Arc::new(Mutex::new(Lamp)));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// host.serve(listener).await
/// # }
/// ```
pub struct HttpHost<C: 'static, K: Capacities> {
    shared: Arc<Shared<C, K>>,
}

impl<C: Board, K: Capacities> HttpHost<C, K> {
    /// A host; starts the timer thread that polls the engines (it ends with the host).
    pub fn new(opts: HttpOptions, factory: Factory<C, K>, board: Arc<Mutex<C>>) -> Self {
        let opts_oauth = opts.oauth.clone();
        let clock = Clock::new();
        let mut stateless = factory();
        {
            let mut out = vec![0u8; opts.out_len.max(mcp_core::MIN_OUT_LEN)];
            crate::prime(&mut stateless, &mut lock(&board), clock.now_ms(), &mut out);
        }
        let shared = Arc::new(Shared {
            opts,
            factory,
            board,
            stateless: Arc::new(Mutex::new(stateless)),
            sessions: Mutex::new(HashMap::new()),
            listens: Mutex::new(HashMap::new()),
            next_generation: std::sync::atomic::AtomicU64::new(1),
            clock,
            oauth: opts_oauth.map(|o| Arc::new(oauth::Verifier::new(o))),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::spawn(move || timer(weak));
        HttpHost { shared }
    }

    /// The axum router serving the endpoint, the Host/Origin rule ([`web::Origins`]) checked
    /// before it, and with a [bearer token](HttpOptions::bearer_token) the token checked next
    /// (the metadata document's routes are open).
    pub fn router(&self) -> Router {
        let opts = &self.shared.opts;
        let mut router = Router::new()
            .route(&opts.path, axum::routing::any(endpoint::<C, K>))
            .with_state(self.shared.clone());
        if opts.bearer_token.is_some() || opts.oauth.is_some() {
            let protect = Arc::new(Protected {
                token: opts.bearer_token.clone(),
                oauth: self.shared.oauth.clone(),
                path: opts.path.clone(),
            });
            // `route_layer`: only the endpoint's routes; the metadata below stays open.
            router = router
                .route_layer(axum::middleware::from_fn_with_state(
                    protect.clone(),
                    require_token,
                ))
                .route(
                    auth::METADATA_PATH,
                    axum::routing::get(metadata).with_state(protect.clone()),
                );
            let suffixed = format!("{}{}", auth::METADATA_PATH, opts.path.trim_end_matches('/'));
            if suffixed != auth::METADATA_PATH {
                router = router.route(
                    &suffixed,
                    axum::routing::get(metadata).with_state(protect.clone()),
                );
            }
            // The paths an OAuth client tries on the device when it looks for an authorization
            // server here (added after the token's route layer: open): a JSON OAuth error each.
            let trimmed = opts.path.trim_end_matches('/');
            let mut paths: Vec<String> = ["/register", "/authorize", "/token"]
                .iter()
                .map(|p| (*p).to_string())
                .collect();
            for well_known in [
                "/.well-known/oauth-authorization-server",
                "/.well-known/openid-configuration",
            ] {
                paths.push(well_known.to_string());
                if !trimmed.is_empty() {
                    paths.push(format!("{well_known}{trimmed}"));
                }
            }
            if !trimmed.is_empty() {
                paths.push(format!("{trimmed}/.well-known/openid-configuration"));
            }
            for path in paths.iter().filter(|p| **p != opts.path) {
                router = router.route(
                    path,
                    axum::routing::any(no_authorization_server).with_state(protect.clone()),
                );
            }
        }
        let origins = web::Origins::new(&opts.allowed_hosts, &opts.allowed_origins);
        web::guard(router, origins, |r| refusal(r, b""))
    }

    /// Serves HTTP/1.1 on `listener`, forever, with [`web::serve`].
    ///
    /// At most [`HttpOptions::max_connections`] connections are served at once: the next one is
    /// accepted only when one closes (until then it waits in the listen backlog). Each has
    /// [`HttpOptions::header_timeout`] to send a request head (also the keep-alive idle
    /// timeout), and each POST [`HttpOptions::body_timeout`] to send its body. A failed accept
    /// (a reset connection, no file descriptor left) is skipped after a short pause.
    ///
    /// [`router`](Self::router) serves the same endpoint under your own server instead (for
    /// TLS, say); then the connection limit and the header timeout are yours to set.
    ///
    /// # Errors
    /// None so far: the signature leaves room for a listener that can fail for good.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let opts = &self.shared.opts;
        let limits = web::Limits::default()
            .header_timeout(opts.header_timeout)
            .max_connections(opts.max_connections);
        web::serve(self.router(), listener, limits).await
    }

    /// With [`HttpOptions::oauth`] and keys to fetch: fetches the authorization server's keys
    /// now (the first request would), so that a server that cannot be reached shows at
    /// start-up. `None` without OAuth; else the size of the key document, or why there is none
    /// (requests try again later).
    pub async fn prefetch_keys(&self) -> Option<Result<usize, String>> {
        Some(self.shared.oauth.as_ref()?.prefetch().await)
    }

    /// The number of open legacy sessions.
    pub fn sessions(&self) -> usize {
        lock(&self.shared.sessions).len()
    }
}

/// Polls every engine, routes what they emit, keeps connections alive and ends idle sessions.
/// A new press of the board's confirmation button answers the question the device shows (see
/// [`Panel`](crate::Panel)), on whichever engine holds it; that engine's outcome goes out in the
/// same turn, to its session. A call a person confirmed that ran is reported to every other
/// engine, so that none answers a retransmission with evidence it made stale.
fn timer<C: Board, K: Capacities>(weak: Weak<Shared<C, K>>) {
    let mut out = Vec::new();
    let mut last_keepalive = Instant::now();
    let mut panel = match weak.upgrade() {
        Some(shared) => crate::Panel::new(lock(&shared.board).confirm_presses()),
        None => return,
    };
    let mut waiting = Vec::new();
    loop {
        let Some(shared) = weak.upgrade() else { return };
        let tick = shared.opts.tick;
        let hook = shared.opts.on_event.as_ref();
        out.resize(shared.opts.out_len.max(mcp_core::MIN_OUT_LEN), 0);
        let now = shared.clock.now_ms();
        let (changed, pressed) = crate::tick(&shared.board, now);
        let sessions: Vec<_> = lock(&shared.sessions).values().cloned().collect();
        let engines =
            || std::iter::once(&*shared.stateless).chain(sessions.iter().map(|s| &*s.engine));
        for p in panel.press(pressed, now, engines()) {
            if let Some(hook) = hook {
                hook(&HostEvent::Pressed(p));
            }
        }
        let keepalive = last_keepalive.elapsed() >= shared.opts.keepalive;
        let mut held = Vec::new();
        let mut ran = Vec::new();
        // The stateless engine owes its listen streams their updates (each for the client that
        // opened the stream); its tasks are read with tasks/get, so nothing else it emits has a
        // reader.
        let turn = crate::turn(&shared.stateless, &shared.board, &changed, now, &mut out);
        held.extend(turn.held_after.clone());
        ran.extend(turn.ran().map(|t| (t, Arc::as_ptr(&shared.stateless))));
        {
            let listens = lock(&shared.listens);
            for m in &turn.msgs {
                let delivered =
                    m.to.and_then(|peer| listens.get(&peer.get()))
                        .is_some_and(|l| l.tx.send(frame(None, None, &m.bytes)).is_ok());
                if let (Some(hook), Some(e)) =
                    (hook, crate::observe("http-2026", &turn, m, delivered))
                {
                    hook(&e);
                }
            }
            if keepalive {
                for l in listens.values() {
                    let _ = l.tx.send(Bytes::from_static(b": keepalive\n\n"));
                }
            }
        }
        for s in &sessions {
            let turn = crate::turn(&s.engine, &shared.board, &changed, now, &mut out);
            held.extend(turn.held_after.clone());
            ran.extend(turn.ran().map(|t| (t, Arc::as_ptr(&s.engine))));
            let mut state = lock(&s.state);
            for m in &turn.msgs {
                let delivered = state.route(&m.bytes);
                m.delivered(&s.engine, delivered);
                if let (Some(hook), Some(e)) = (hook, crate::observe("http", &turn, m, delivered)) {
                    hook(&e);
                }
            }
            if keepalive {
                state.keepalive();
            }
        }
        // A confirmed call ran on one engine: the others forget what they remembered of it.
        for (tool, on) in ran {
            for engine in engines() {
                if !std::ptr::eq(engine, on) {
                    lock(engine).touched(tool);
                }
            }
        }
        let shown = panel.show(&held, now);
        crate::waiting_changed(shown, &mut waiting, hook);
        if keepalive {
            last_keepalive = Instant::now();
        }
        let idle = shared.opts.session_idle;
        lock(&shared.sessions).retain(|_, s| {
            let keep = lock(&s.state).last_seen.elapsed() < idle || !s.is_idle();
            if !keep {
                s.end(hook, "idle: ended by the device");
            }
            keep
        });
        drop(shared);
        std::thread::sleep(tick);
    }
}

async fn endpoint<C: Board, K: Capacities>(
    State(shared): State<Arc<Shared<C, K>>>,
    req: Request,
) -> Response {
    // The Host/Origin rule was checked before (`router`).
    let (parts, body) = req.into_parts();
    let h = View(&parts.headers);
    match parts.method {
        Method::POST => post(&shared, &h, body).await,
        Method::GET => get(&shared, &h),
        Method::DELETE => delete(&shared, &h),
        _ => not_allowed(
            "GET, POST, DELETE",
            "Method Not Allowed: use POST, GET or DELETE",
        ),
    }
}

async fn post<C: Board, K: Capacities>(
    shared: &Arc<Shared<C, K>>,
    h: &View<'_>,
    body: Body,
) -> Response {
    let max = shared.opts.max_body;
    let declared = h
        .header("Content-Length")
        .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if let Err(r) = rules::check_post(h, declared, max) {
        return refusal(r, b"");
    }
    let bytes = match web::read_body(body, max, shared.opts.body_timeout).await {
        Ok(bytes) => bytes,
        Err(web::BodyError::TimedOut) => {
            let mut r = error(
                StatusCode::REQUEST_TIMEOUT,
                None,
                -32600,
                "Request Timeout: the body did not arrive in time",
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
        Err(_) => {
            return match rules::check_post(h, max.saturating_add(1), max) {
                Err(r) => refusal(r, b""),
                Ok(()) => error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    None,
                    -32600,
                    "Payload Too Large",
                ),
            };
        }
    };
    if let Err(r) = rules::check_post(h, bytes.len(), max) {
        return refusal(r, &bytes);
    }
    match rules::route(h, &bytes) {
        Route::Stateless => stateless(shared, h, bytes).await,
        Route::Session(None) => open(shared, bytes).await,
        Route::Session(Some(_)) => in_session(shared, h, bytes).await,
    }
}

/// How to run a message on `engine`: a session's own, or the stateless one. Each legacy session
/// is one peer (named by its session id, so that a tool's state on the shared board can tell
/// sessions apart) with an engine of its own; on the stateless engine only a request's
/// idempotency key scopes retransmissions. Every engine acts on the one board, so a tool that ran on one is
/// reported to the others.
fn how<C: Board, K: Capacities>(
    shared: &Arc<Shared<C, K>>,
    stateless: bool,
    engine: &Arc<Mutex<Box<Engine<C, K>>>>,
) -> Run {
    Run {
        principal: shared.opts.principal,
        stateless,
        out_len: shared.opts.out_len,
        prime_at: None,
        peer: Peer::ONLY,
        report_delivery: true,
        touch: Some(touch_others(shared, engine)),
        events: shared.opts.on_event.clone(),
        transport: if stateless { "http-2026" } else { "http" },
        session: None,
    }
}

/// Tells every engine but `this` that a tool ran.
fn touch_others<C: Board, K: Capacities>(
    shared: &Arc<Shared<C, K>>,
    this: &Arc<Mutex<Box<Engine<C, K>>>>,
) -> Touch {
    let (shared, this) = (Arc::downgrade(shared), Arc::downgrade(this));
    Arc::new(move |tool| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut engines = vec![shared.stateless.clone()];
        engines.extend(lock(&shared.sessions).values().map(|s| s.engine.clone()));
        for engine in engines {
            if !Weak::ptr_eq(&Arc::downgrade(&engine), &this) {
                lock(&engine).touched(tool);
            }
        }
    })
}

/// The 2026-07-28 path: header rules, then the shared engine; JSON, or SSE (no ids, no priming:
/// this revision has no resumption) when the handler emits notifications.
///
/// `subscriptions/listen` is answered with an SSE stream that starts with the engine's
/// acknowledgement and stays open (keep-alive comments): the timer sends it every update the
/// engine tags with its id. When the client closes it, the host ends the subscription
/// ([`Server::cancelled`](mcp_core::Server::cancelled)), and the id may be used again.
async fn stateless<C: Board, K: Capacities>(
    shared: &Arc<Shared<C, K>>,
    h: &View<'_>,
    bytes: Bytes,
) -> Response {
    if let Err(r) = rules::check_stateless_headers(h, &bytes) {
        return refusal(r, &bytes);
    }
    // A listen stream's route exists before the engine acknowledges it, so that no update
    // tagged for it can come before it. Each listen request is a peer of its own.
    let listen = listen_id(&bytes).map(|id| {
        let peer = shared
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        lock(&shared.listens).insert(peer, Listener { tx });
        ListenGuard {
            shared: Arc::downgrade(shared),
            id,
            peer,
            frames: Some(rx),
            acknowledged: false,
        }
    });
    let mut how = how(shared, true, &shared.stateless);
    if let Some(l) = &listen {
        how.peer = Peer::new(l.peer);
    }
    let mut rx = run(shared.stateless.clone(), shared.board.clone(), bytes, how);
    match rx.recv().await {
        Some(Step::Done(d)) if d.deferred && listen.is_some() => {
            let Some(mut guard) = listen else {
                return internal();
            };
            guard.acknowledged = true;
            if let Some(hook) = &shared.opts.on_event {
                hook(&HostEvent::Listen {
                    id: String::from_utf8_lossy(&guard.id).into_owned(),
                    open: true,
                });
            }
            listen_stream(frame(None, None, &d.bytes), guard)
        }
        Some(Step::Done(d)) => answer(d, None),
        Some(Step::Note(first)) => {
            let (tx, frames) = tokio::sync::mpsc::unbounded_channel();
            let _ = tx.send(frame(None, None, &first));
            tokio::spawn(async move {
                while let Some(step) = rx.recv().await {
                    let data = match &step {
                        Step::Note(n) => n.clone(),
                        Step::Done(d) => d.bytes.clone(),
                    };
                    if !data.is_empty() && tx.send(frame(None, None, &data)).is_err() {
                        // The client closed the stream: on this revision that cancels the
                        // request; a handler that already runs cannot be stopped, so only its
                        // output is dropped.
                        return;
                    }
                }
            });
            sse(frames, None)
        }
        None => internal(),
    }
}

/// The id (raw JSON) of a `subscriptions/listen` request.
fn listen_id(bytes: &[u8]) -> Option<Vec<u8>> {
    match Message::parse(bytes, DEFAULT_MAX_DEPTH) {
        Ok(Message::Request(r)) if r.method.eq_str("subscriptions/listen") => {
            Some(r.id.raw().to_vec())
        }
        _ => None,
    }
}

/// Holds a listen stream's route while its response body lives. Dropped (the client closed the
/// stream, or the engine refused the listen): the route goes and, once acknowledged, the
/// engine's subscription ends.
struct ListenGuard<C: 'static, K: Capacities> {
    shared: Weak<Shared<C, K>>,
    id: Vec<u8>,
    /// The peer number the listen request was given.
    peer: u64,
    frames: Option<Frames>,
    acknowledged: bool,
}

impl<C: 'static, K: Capacities> Drop for ListenGuard<C, K> {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        lock(&shared.listens).remove(&self.peer);
        if self.acknowledged {
            lock(&shared.stateless).cancelled(Peer::new(self.peer), &self.id);
            if let Some(hook) = &shared.opts.on_event {
                hook(&HostEvent::Listen {
                    id: String::from_utf8_lossy(&self.id).into_owned(),
                    open: false,
                });
            }
        }
    }
}

/// The SSE response of a listen stream: the acknowledgement, then what the timer routes to it,
/// until the client closes it (which drops the guard).
fn listen_stream<C: 'static + Send, K: Capacities>(
    ack: Bytes,
    mut guard: ListenGuard<C, K>,
) -> Response {
    let Some(frames) = guard.frames.take() else {
        return internal();
    };
    let rest = futures_util::stream::unfold((frames, guard), |(mut rx, guard)| async move {
        rx.recv()
            .await
            .map(|f| (Ok::<_, Infallible>(f), (rx, guard)))
    });
    let stream = futures_util::StreamExt::chain(
        futures_util::stream::once(async move { Ok::<_, Infallible>(ack) }),
        rest,
    );
    sse_body(Body::from_stream(stream), None)
}

/// A POST without a session: `initialize` opens one; anything else is refused (400).
async fn open<C: Board, K: Capacities>(shared: &Arc<Shared<C, K>>, bytes: Bytes) -> Response {
    // Read as deep as the checker can follow: a request nested deeper than the engine reads is
    // still one, answered with its id (the engine refuses it below).
    match Message::parse(&bytes, MAX_DEPTH_LIMIT) {
        Err(_) => return error(StatusCode::BAD_REQUEST, None, -32700, "Parse error"),
        Ok(Message::Request(r)) if r.method.eq_str("initialize") => {}
        Ok(Message::Request(r)) => {
            return error(
                StatusCode::BAD_REQUEST,
                Some(r.id.raw()),
                -32600,
                "Bad Request: send initialize first, then the Mcp-Session-Id it returns",
            );
        }
        Ok(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                None,
                -32600,
                "Bad Request: an Mcp-Session-Id header is required",
            );
        }
    }
    // Refuse at once when the table is full of sessions in use (the check is repeated when the
    // new session is stored: others may have come meanwhile).
    if !has_room(shared, &lock(&shared.sessions)) {
        return at_session_limit(shared, &bytes);
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let session = Arc::new(Session::new(id.clone(), (shared.factory)()));
    let mut how = how(shared, false, &session.engine);
    how.peer = Peer::named(session.id.as_bytes());
    how.prime_at = Some(shared.clock.now_ms());
    let mut rx = run(
        session.engine.clone(),
        shared.board.clone(),
        bytes.clone(),
        how,
    );
    let done = loop {
        match rx.recv().await {
            Some(Step::Done(d)) => break d,
            Some(Step::Note(_)) => {}
            None => return internal(),
        }
    };
    let Some(revision) = done.initialized else {
        // A refused initialize opens nothing.
        return answer(done, None);
    };
    {
        let mut state = lock(&session.state);
        state.revision = Some(revision);
    }
    {
        let mut sessions = lock(&shared.sessions);
        while sessions.len() >= shared.opts.max_sessions {
            // Only an idle session may be ended to make room, the least recently used first.
            let oldest = sessions
                .iter()
                .filter(|(_, s)| s.is_idle())
                .min_by_key(|(_, s)| lock(&s.state).last_seen)
                .map(|(k, _)| k.clone());
            let hook = shared.opts.on_event.as_ref();
            match oldest.and_then(|k| sessions.remove(&k)) {
                Some(s) => s.end(hook, "ended by the device to make room for a new session"),
                None => {
                    drop(sessions);
                    session.end(hook, "refused: every session is in use");
                    return at_session_limit(shared, &bytes);
                }
            }
        }
        sessions.insert(id.clone(), session);
    }
    answer(done, Some(&id))
}

/// `true` when a new session fits: a free slot, or an idle session to end.
fn has_room<C: Board, K: Capacities>(
    shared: &Shared<C, K>,
    sessions: &HashMap<String, Arc<Session<C, K>>>,
) -> bool {
    sessions.len() < shared.opts.max_sessions || sessions.values().any(|s| s.is_idle())
}

/// The answer to an `initialize` when every session is in use: 503 with `Retry-After` and a
/// JSON-RPC error that says why, echoing the request id.
fn at_session_limit<C: Board, K: Capacities>(shared: &Shared<C, K>, bytes: &[u8]) -> Response {
    let id = rules::request_id(bytes).map(|i| i.raw().to_vec());
    let message = format!(
        "Service Unavailable: the device is at its session limit ({} sessions, each with a running \
         task, a call waiting for a person, an open stream or a request in flight); retry later, \
         or end a session with DELETE",
        shared.opts.max_sessions
    );
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        id.as_deref(),
        -32000,
        &message,
    );
    r.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(SESSION_RETRY_AFTER_S),
    );
    r
}

fn find<C: Board, K: Capacities>(
    shared: &Shared<C, K>,
    h: &View<'_>,
) -> Result<Arc<Session<C, K>>, Box<Response>> {
    let Some(id) = h.header(rules::SESSION_ID) else {
        return Err(Box::new(not_allowed(
            "POST",
            "Method Not Allowed: GET and DELETE need an Mcp-Session-Id; 2026-07-28 requests are POSTs",
        )));
    };
    let id = String::from_utf8_lossy(id);
    let Some(session) = lock(&shared.sessions).get(id.trim()).cloned() else {
        return Err(Box::new(session_not_found()));
    };
    if let Some(v) = h.header(rules::PROTOCOL_VERSION) {
        let v = String::from_utf8_lossy(v);
        let known = mcp_core::Revision::ALL
            .iter()
            .any(|r| r.as_str() == v.trim());
        if !known {
            return Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                None,
                -32600,
                "Bad Request: unsupported MCP-Protocol-Version for this session",
            )));
        }
    }
    lock(&session.state).last_seen = Instant::now();
    Ok(session)
}

/// A POST in a legacy session.
async fn in_session<C: Board, K: Capacities>(
    shared: &Arc<Shared<C, K>>,
    h: &View<'_>,
    bytes: Bytes,
) -> Response {
    let session = match find(shared, h) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let _busy = session.busy();
    let request_id = rules::request_id(&bytes).map(|i| i.raw().to_vec());
    // A client's response (to a question the device asked: a confirmation) gets 202; what the
    // engine answers to it belongs to the call that asked, and goes to that call's stream.
    // Anything else the engine answers is the answer to this POST: a request, but also a
    // message it cannot read (a parse error, with the request's id when it has one).
    let is_response = matches!(
        Message::parse(&bytes, MAX_DEPTH_LIMIT),
        Ok(Message::Response)
    );
    let resumable = session.resumable();
    let close_early = resumable && calls_one_of(&bytes, &shared.opts.close_early);
    let retry = shared.opts.retry_ms;
    let mut how = how(shared, false, &session.engine);
    how.peer = Peer::named(session.id.as_bytes());
    let mut rx = run(session.engine.clone(), shared.board.clone(), bytes, how);
    if close_early {
        // SSE polling: the POST stream ends after its priming event; the result is stored on
        // this stream and replayed to a GET with Last-Event-ID.
        let (k, frames) = {
            let mut state = lock(&session.state);
            let (k, frames) = state.open(true, retry, false);
            state.detach(k);
            (k, frames)
        };
        tokio::spawn(drain(session.clone(), k, rx, request_id));
        return sse(frames, Some(&session.id));
    }
    match rx.recv().await {
        Some(Step::Done(d)) if d.deferred => {
            let mut state = lock(&session.state);
            let (k, frames) = state.open(resumable, retry, false);
            // A request the device sends first (`elicitation/create`) goes out on this stream.
            if !d.bytes.is_empty() {
                state.push(k, &d.bytes, false);
            }
            if let Some(rid) = request_id {
                state.wait(rid, k);
            }
            drop(state);
            sse(frames, Some(&session.id))
        }
        Some(Step::Done(d)) if is_response && !d.bytes.is_empty() => {
            lock(&session.state).route(&d.bytes);
            empty(StatusCode::ACCEPTED)
        }
        Some(Step::Done(d)) => {
            if let Some(r) = d.initialized {
                lock(&session.state).revision = Some(r);
            }
            answer(d, Some(&session.id))
        }
        Some(Step::Note(first)) => {
            let (k, frames) = {
                let mut state = lock(&session.state);
                let (k, frames) = state.open(resumable, retry, false);
                state.push(k, &first, false);
                (k, frames)
            };
            tokio::spawn(drain(session.clone(), k, rx, request_id));
            sse(frames, Some(&session.id))
        }
        None => internal(),
    }
}

/// Moves the rest of a handler run onto session stream `k`.
async fn drain<C: Board, K: Capacities>(
    session: Arc<Session<C, K>>,
    k: u64,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Step>,
    request_id: Option<Vec<u8>>,
) {
    while let Some(step) = rx.recv().await {
        let mut state = lock(&session.state);
        match step {
            Step::Note(n) => state.push(k, &n, false),
            Step::Done(d) if !d.bytes.is_empty() => state.push(k, &d.bytes, true),
            Step::Done(d) if d.deferred => match request_id.clone() {
                Some(rid) => state.wait(rid, k),
                None => state.finish(k),
            },
            Step::Done(_) => state.finish(k),
        }
    }
}

/// `true` when the body is a `tools/call` of one of `tools`.
fn calls_one_of(bytes: &[u8], tools: &[String]) -> bool {
    if tools.is_empty() {
        return false;
    }
    let Ok(Message::Request(r)) = Message::parse(bytes, DEFAULT_MAX_DEPTH) else {
        return false;
    };
    if !r.method.eq_str("tools/call") {
        return false;
    }
    let name = r.params.and_then(|p| {
        p.members()?
            .find(|(k, _)| k.eq_str("name"))
            .and_then(|(_, v)| v.as_str())
    });
    name.is_some_and(|n| tools.iter().any(|t| n.eq_str(t)))
}

/// GET: a session's SSE stream: a resumption (`Last-Event-ID`) or the standalone stream.
fn get<C: Board, K: Capacities>(shared: &Arc<Shared<C, K>>, h: &View<'_>) -> Response {
    if let Err(r) = rules::check_get(h) {
        return refusal(r, b"");
    }
    let session = match find(shared, h) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let resumable = session.resumable();
    let mut state = lock(&session.state);
    let resumed = h
        .header("Last-Event-ID")
        .and_then(parse_event_id)
        .filter(|_| resumable)
        .and_then(|(k, seq)| state.resume(k, seq));
    let frames = match resumed {
        Some(frames) => frames,
        None => state.open(resumable, shared.opts.retry_ms, true).1,
    };
    drop(state);
    sse(frames, Some(&session.id))
}

/// DELETE: ends a session.
fn delete<C: Board, K: Capacities>(shared: &Arc<Shared<C, K>>, h: &View<'_>) -> Response {
    let session = match find(shared, h) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    lock(&shared.sessions).remove(&session.id);
    session.end(
        shared.opts.on_event.as_ref(),
        "ended by the client (DELETE)",
    );
    empty(StatusCode::OK)
}

/// Maps an engine answer to a response: 202 when there is none, else JSON with the status the
/// specification mandates.
fn answer(d: Done, session: Option<&str>) -> Response {
    let status = rules::status_code(d.status, !d.bytes.is_empty());
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = if d.bytes.is_empty() {
        empty(status)
    } else {
        json(status, d.bytes)
    };
    add_session(&mut r, session);
    r
}

fn add_session(r: &mut Response, session: Option<&str>) {
    if let Some(v) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        r.headers_mut().insert(rules::SESSION_ID, v);
    }
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

fn json(status: StatusCode, body: Bytes) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn sse(frames: Frames, session: Option<&str>) -> Response {
    let stream = futures_util::stream::unfold(frames, |mut rx| async move {
        rx.recv().await.map(|f| (Ok::<_, Infallible>(f), rx))
    });
    sse_body(Body::from_stream(stream), session)
}

fn sse_body(body: Body, session: Option<&str>) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("X-Accel-Buffering", HeaderValue::from_static("no"));
    add_session(&mut r, session);
    r
}

/// A refusal from the transport rules, echoing the request id when the body has one.
fn refusal(r: Refusal, body: &[u8]) -> Response {
    let mut out = [0u8; 512];
    let n = r.write_body(body, &mut out);
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
    json(
        status,
        Bytes::copy_from_slice(out.get(..n).unwrap_or_default()),
    )
}

/// A JSON-RPC error the host writes itself (`message` is plain ASCII without quotes).
fn error(status: StatusCode, id: Option<&[u8]>, code: i32, message: &str) -> Response {
    let id = id.map_or("null".into(), |i| String::from_utf8_lossy(i).into_owned());
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"{message}"}}}}"#);
    json(status, Bytes::from(body))
}

fn session_not_found() -> Response {
    error(StatusCode::NOT_FOUND, None, -32001, "Session not found")
}

fn not_allowed(allow: &'static str, message: &str) -> Response {
    let mut r = error(StatusCode::METHOD_NOT_ALLOWED, None, -32600, message);
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

fn internal() -> Response {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        -32603,
        "Internal error: the engine did not answer",
    )
}
