//! Serving an axum [`Router`] as the Streamable HTTP host serves `/mcp`: a bounded number of
//! connections, a deadline for each request head (and keep-alive idle time), a deadline for each
//! request body, and the exact-origin rule. [`HttpHost::serve`](crate::HttpHost::serve) is built
//! on it, and so is any other page or API a device serves next to `/mcp` (device-sim's `--ui`),
//! so that a hostile client gets the same limits everywhere in the process: file descriptors
//! are shared, and a port without limits could take them all.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use axum::http::StatusCode;
//! use axum::response::IntoResponse;
//! use mcp_host::web::{self, Limits, Origins};
//!
//! let api = axum::Router::new().route("/status", axum::routing::get(|| async { "ok" }));
//! // Refused requests (a foreign Host or Origin) get 403 with the rule's message.
//! let api = web::guard(api, Origins::default(), |r| {
//!     (StatusCode::FORBIDDEN, r.message).into_response()
//! });
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8081").await?;
//! web::serve(api, listener, Limits::default()).await
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use mcp_core::transport::http::{Headers, Refusal, check_host_and_origin};

/// How many connections a server takes at once, and how long each has for a request head.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Limits {
    /// The longest a connection may take to send a request head, counted from when it is ready
    /// for one: just accepted, or its previous response sent (so also the keep-alive idle
    /// timeout: hyper starts its header-read timer as soon as a connection goes idle).
    /// Slowloris connections (a head never finished) and idle sockets are closed after it.
    pub header_timeout: Duration,
    /// The most connections served at once; further ones wait in the listen backlog until one
    /// closes (they hold no file descriptor of the process meanwhile).
    pub max_connections: usize,
}

impl Default for Limits {
    /// 10 s for a head, 128 connections.
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            max_connections: 128,
        }
    }
}

impl Limits {
    crate::link::setters! {
        /// Sets the request-head (and keep-alive idle) timeout.
        header_timeout(t: Duration);
        /// Sets the connection limit (at least 1).
        max_connections(n: usize) = n.max(1);
    }
}

/// Serves HTTP/1.1 on `listener` with `router`, forever.
///
/// At most [`Limits::max_connections`] connections are served at once: the next one is
/// accepted only when one closes (until then it waits in the listen backlog). Each has
/// [`Limits::header_timeout`] to send a request head (also the keep-alive idle timeout). A
/// failed accept (a reset connection, no file descriptor left) is skipped after a short pause.
/// Bodies are the handlers' to bound ([`read_body`]).
///
/// # Errors
/// None so far: the signature leaves room for a listener that can fail for good.
pub async fn serve(
    router: Router,
    listener: tokio::net::TcpListener,
    limits: Limits,
) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    loop {
        // Take a slot before accepting: beyond the limit, connections wait in the backlog.
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return Ok(());
        };
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(_) => {
                // ECONNABORTED, EMFILE, …: nothing to serve; do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let conn = http.serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
        tokio::spawn(async move {
            // An error here is the connection's own end (a timeout, a reset): nothing to do.
            let _ = conn.await;
            drop(permit);
        });
    }
}

/// Why a request body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyError {
    /// It did not arrive in full in time (answer 408 and close the connection).
    TimedOut,
    /// It is longer than allowed (413).
    TooLarge,
}

/// Reads a whole request body of at most `max` bytes within `timeout`, one deadline for all of
/// it (tower-http's body timeout restarts with every frame, so a trickle would never end).
///
/// # Errors
/// [`BodyError::TimedOut`] past the deadline (a body shorter than its `Content-Length`, a
/// trickle), [`BodyError::TooLarge`] beyond `max` (also a broken body).
pub async fn read_body(body: Body, max: usize, timeout: Duration) -> Result<Bytes, BodyError> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, max)).await {
        Err(_) => Err(BodyError::TimedOut),
        Ok(Err(_)) => Err(BodyError::TooLarge),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

/// Whom a server answers: the exact-origin rule (DNS-rebinding and cross-origin protection) of
/// mcp-core's [`check_host_and_origin`].
///
/// `Host` must be a loopback name or one of the allowed host names. A browser's `Origin` must be
/// the server's own origin — `http://` and that `Host`, the same port included, so a page served
/// by another local server (`http://localhost:3000`) is refused — or one of the allowed origins
/// (a page elsewhere that may call this server, e.g. an inspector's web UI; [`guard`] answers
/// its browser's CORS preflight). A request without `Origin` is no browser's and passes.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl Origins {
    /// The rule for a server reached as a loopback name or one of `hosts` (names or addresses
    /// without port), called from its own pages and those at `origins` (`http://host:port`;
    /// check them with mcp-core's `is_origin` when they are read).
    pub fn new(hosts: &[String], origins: &[String]) -> Self {
        Origins {
            hosts: hosts.to_vec(),
            origins: origins.to_vec(),
        }
    }

    /// The request's `Origin` when it passes [`check`](Self::check) only because it is one of
    /// the allowed origins (a page elsewhere, which needs CORS headers); `None` without
    /// `Origin`, for the server's own origin, and for a refused request.
    pub fn allowed_by_name(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        let own = check_host_and_origin(&View(headers), &hosts, &[]).is_ok();
        (!own && self.check(headers).is_ok()).then(|| origin.clone())
    }

    /// Checks one request's headers.
    ///
    /// # Errors
    /// The refusal (403) when its `Host` or `Origin` is not allowed.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        let origins: Vec<&str> = self.origins.iter().map(String::as_str).collect();
        check_host_and_origin(&View(headers), &hosts, &origins)
    }
}

/// Header lookup over an `http::HeaderMap` (names are case-insensitive there).
pub(crate) struct View<'a>(pub(crate) &'a HeaderMap);

impl Headers for View<'_> {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(HeaderValue::as_bytes)
    }
}

#[derive(Clone)]
struct Guard {
    origins: Arc<Origins>,
    refuse: fn(Refusal) -> Response,
}

async fn check(State(g): State<Guard>, req: Request, next: Next) -> Response {
    if let Err(r) = g.origins.check(req.headers()) {
        return (g.refuse)(r);
    }
    let Some(origin) = g.origins.allowed_by_name(req.headers()) else {
        // No Origin, or the server's own: no CORS headers are needed.
        return next.run(req).await;
    };
    let h = req.headers();
    if req.method() == Method::OPTIONS && h.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        // A browser's preflight for a page allowed by name: what it asks for is granted.
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        let out = r.headers_mut();
        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if let Some(m) = h.get(header::ACCESS_CONTROL_REQUEST_METHOD) {
            out.insert(header::ACCESS_CONTROL_ALLOW_METHODS, m.clone());
        }
        if let Some(asked) = h.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        out.insert(
            header::VARY,
            HeaderValue::from_static(
                "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
            ),
        );
        return r;
    }
    let mut r = next.run(req).await;
    // The page may read the whole response, its headers too (`Mcp-Session-Id`).
    let names: Vec<&str> = r.headers().keys().map(header::HeaderName::as_str).collect();
    let expose = HeaderValue::from_str(&names.join(", ")).ok();
    let out = r.headers_mut();
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    if let Some(e) = expose.filter(|e| !e.is_empty()) {
        out.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, e);
    }
    out.append(header::VARY, HeaderValue::from_static("Origin"));
    r
}

/// `router` with `origins` checked before every route (the fallback included): a refused
/// request gets `refuse(refusal)` and reaches no handler.
///
/// A page at an origin allowed by name ([`Origins::new`]) is another origin, so its browser
/// asks first (CORS): its preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered
/// here, 204 granting the method and headers it asks for, and every response to it carries
/// `Access-Control-Allow-Origin` (that origin, never `*`) and exposes its headers. Requests from
/// the server's own pages, and from no browser, get no CORS headers; those from any other origin
/// are refused before all this.
pub fn guard(router: Router, origins: Origins, refuse: fn(Refusal) -> Response) -> Router {
    let g = Guard {
        origins: Arc::new(origins),
        refuse,
    };
    router.layer(axum::middleware::from_fn_with_state(g, check))
}

#[derive(Clone, Copy)]
struct Bodies {
    max: usize,
    timeout: Duration,
    refuse: fn(BodyError) -> Response,
}

async fn buffer(State(b): State<Bodies>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match read_body(body, b.max, b.timeout).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(e) => {
            let mut r = (b.refuse)(e);
            if e == BodyError::TimedOut {
                // What is left of the body would be read as the next request.
                r.headers_mut().insert(
                    axum::http::header::CONNECTION,
                    HeaderValue::from_static("close"),
                );
            }
            r
        }
    }
}

/// `router` with every request body read in full ([`read_body`]: at most `max` bytes, within
/// `timeout`) before a handler sees it; a body that is too large or too slow gets `refuse(why)`
/// (a slow one also closes the connection). For routers whose handlers take small bodies whole;
/// the `/mcp` endpoint reads its own (it checks the headers first).
pub fn bounded_bodies(
    router: Router,
    max: usize,
    timeout: Duration,
    refuse: fn(BodyError) -> Response,
) -> Router {
    let b = Bodies {
        max,
        timeout,
        refuse,
    };
    router.layer(axum::middleware::from_fn_with_state(b, buffer))
}
