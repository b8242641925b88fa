//! `http(s)://HOST:PORT/PATH`: Streamable HTTP, a 2025-11-25 session; and the plain requests
//! the OAuth login makes.
//!
//! Each request is one connection (`mcp_host::client::http1`: TCP, or rustls with the
//! `--ca-file` roots). A POST's answer is JSON or an SSE stream that carries the device's
//! requests and notifications before the answer; the session's `GET` stream carries what the
//! device sends on its own. Every message read goes to one queue, in the order it came.

use std::path::Path;

use bytes::Bytes;
use device_link::url::{Scheme, Url};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use mcp_core::transport::escape::escaped;
use mcp_host::tls::Tls;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::Settings;
use crate::session::REVISION;

/// The largest body or SSE event read (bytes).
pub(crate) const MAX_BODY: usize = 16 << 20;

/// An http(s) URL, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The URL as given.
    pub(crate) url: String,
    pub(crate) https: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The `Host` header: the host, and the port when not the scheme's default.
    pub(crate) authority: String,
    /// The path and query.
    pub(crate) path: String,
}

impl Endpoint {
    /// Reads an `http://` or `https://` URL (no user info).
    pub(crate) fn parse(text: &str) -> Result<Endpoint, String> {
        let url = Url::parse(text).map_err(|e| format!("{}: {e}", escaped(text)))?;
        let https = match url.scheme {
            Scheme::Http => false,
            Scheme::Https => true,
            _ => return Err(format!("{} is not an http(s):// URL", escaped(text))),
        };
        if url.has_credentials() {
            return Err("an http(s) URL here carries no user info: give --token".into());
        }
        Ok(Endpoint {
            url: text.to_string(),
            https,
            host: url.host_text.to_string(),
            port: url.port,
            authority: url.authority().to_string(),
            path: url.path.to_string(),
        })
    }

    /// `scheme://authority`.
    pub(crate) fn origin(&self) -> String {
        format!(
            "{}://{}",
            if self.https { "https" } else { "http" },
            self.authority
        )
    }
}

/// One request on a connection of its own: the response, its body still to be read.
pub(crate) async fn request(
    to: &Endpoint,
    method: Method,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
    tls: &Tls,
) -> Result<Response<Incoming>, String> {
    let tcp = tokio::net::TcpStream::connect((to.host.as_str(), to.port))
        .await
        .map_err(|e| format!("{}: {e}", escaped(&to.origin())))?;
    let tls_host = to.https.then_some(to.host.as_str());
    let mut sender = mcp_host::client::http1::<Full<Bytes>>(tcp, tls_host, tls)
        .await
        .map_err(|e| format!("{}: {e}", escaped(&to.origin())))?;
    let mut req = Request::builder()
        .method(method)
        .uri(to.path.as_str())
        .header(hyper::header::HOST, to.authority.as_str());
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| format!("HTTP: {e}"))?;
    sender
        .send_request(req)
        .await
        .map_err(|e| format!("{}: HTTP: {e}", escaped(&to.origin())))
}

/// A body, whole (at most [`MAX_BODY`] bytes).
pub(crate) async fn body(resp: Response<Incoming>) -> Result<Bytes, String> {
    Limited::new(resp.into_body(), MAX_BODY)
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .map_err(|e| format!("HTTP: reading the answer: {e}"))
}

fn header<'r>(resp: &'r Response<Incoming>, name: &str) -> Option<&'r str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

type Inbox = mpsc::UnboundedSender<Result<Value, String>>;

/// The Streamable HTTP wire.
pub(crate) struct Http {
    to: Endpoint,
    tls: Tls,
    bearer: Option<String>,
    session: Option<String>,
    tx: Inbox,
    rx: mpsc::UnboundedReceiver<Result<Value, String>>,
    streams: Vec<JoinHandle<()>>,
    listening: bool,
}

impl Http {
    /// The wire to `to`; the bearer token is `--token`'s, else the one `login` kept for it.
    pub(crate) fn new(
        to: Endpoint,
        settings: Settings,
        store: Option<&Path>,
    ) -> Result<Http, String> {
        let bearer = match settings.bearer {
            Some(t) => Some(t),
            None => store.and_then(|s| crate::oauth::stored_token(s, &to.url)),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(Http {
            to,
            tls: settings.tls,
            bearer,
            session: None,
            tx,
            rx,
            streams: Vec::new(),
            listening: false,
        })
    }

    fn headers(&self, accept: &'static str) -> Vec<(&'static str, String)> {
        let mut h = vec![("accept", accept.to_string())];
        if let Some(s) = &self.session {
            h.push(("mcp-session-id", s.clone()));
            h.push(("mcp-protocol-version", REVISION.to_string()));
        }
        if let Some(t) = &self.bearer {
            h.push(("authorization", format!("Bearer {t}")));
        }
        h
    }

    async fn exchange(
        &self,
        method: Method,
        accept: &'static str,
        body: Option<Vec<u8>>,
    ) -> Result<Response<Incoming>, String> {
        let mut owned = self.headers(accept);
        if body.is_some() {
            owned.push(("content-type", "application/json".into()));
        }
        let headers: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
        request(&self.to, method, &headers, body, &self.tls).await
    }

    /// POSTs `msg`; what the answer carries goes to the queue.
    pub(crate) async fn send(&mut self, msg: &Value) -> Result<(), String> {
        let resp = self
            .exchange(
                Method::POST,
                "application/json, text/event-stream",
                Some(msg.to_string().into_bytes()),
            )
            .await?;
        if msg.get("method").and_then(Value::as_str) == Some("initialize")
            && let Some(id) = header(&resp, "mcp-session-id")
        {
            self.session = Some(id.to_string());
        }
        self.take(resp).await
    }

    /// Reads a response into the queue: an SSE stream (by a task of its own), or a JSON body.
    async fn take(&mut self, resp: Response<Incoming>) -> Result<(), String> {
        let status = resp.status().as_u16();
        if status == 401 || status == 403 {
            return Err(self.refused(&resp));
        }
        if status == 202 {
            return Ok(());
        }
        let sse = header(&resp, "content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
        if sse && status == 200 {
            let tx = self.tx.clone();
            self.streams.push(tokio::spawn(read_sse(resp, tx)));
            return Ok(());
        }
        let bytes = body(resp).await?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Array(batch)) => {
                for m in batch {
                    let _ = self.tx.send(Ok(m));
                }
                Ok(())
            }
            Ok(m) if m.is_object() => {
                let _ = self.tx.send(Ok(m));
                Ok(())
            }
            _ if (200..300).contains(&status) => Ok(()),
            _ => Err(format!(
                "HTTP {status} from {}: {}",
                escaped(&self.to.url),
                escaped(&String::from_utf8_lossy(&bytes)).max_chars(300)
            )),
        }
    }

    /// Why the endpoint refused the token (or its absence), and what to do.
    fn refused(&self, resp: &Response<Incoming>) -> String {
        let challenge = header(resp, "www-authenticate").unwrap_or_default();
        let status = resp.status().as_u16();
        let what = if status == 403 {
            "the token lacks a scope the endpoint wants (403)"
        } else if self.bearer.is_some() {
            "the endpoint refused the token (401)"
        } else {
            "the endpoint wants a token (401)"
        };
        let oauth = challenge.contains("resource_metadata");
        format!(
            "{what}: {}{}",
            if oauth {
                format!(
                    "log in with `mcp-call {} login` (OAuth), or ",
                    escaped(&self.to.url)
                )
            } else {
                String::new()
            },
            "give --token or --token-file"
        )
    }

    /// Opens the session's `GET` stream once (a device without one answers 405: nothing to
    /// open).
    pub(crate) async fn listen(&mut self) -> Result<(), String> {
        if self.listening || self.session.is_none() {
            return Ok(());
        }
        self.listening = true;
        let resp = self
            .exchange(Method::GET, "text/event-stream", None)
            .await?;
        if resp.status().as_u16() == 405 {
            return Ok(());
        }
        self.take(resp).await
    }

    pub(crate) async fn recv(&mut self) -> Option<Result<Value, String>> {
        self.rx.recv().await
    }

    /// Ends the session with `DELETE` (within two seconds, whatever the answer).
    pub(crate) async fn close(self) {
        for s in &self.streams {
            s.abort();
        }
        if self.session.is_some() {
            let delete = self.exchange(Method::DELETE, "application/json", None);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), delete).await;
        }
    }
}

/// Reads an SSE stream into the queue: each event's `data` lines, joined, as one message
/// (events without data, such as a priming event, carry none).
async fn read_sse(resp: Response<Incoming>, tx: Inbox) {
    let mut body = resp.into_body();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let frame = match body.frame().await {
            None => return,
            Some(Err(e)) => {
                let _ = tx.send(Err(format!("HTTP: the event stream: {e}")));
                return;
            }
            Some(Ok(f)) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend(data.iter().filter(|&&b| b != b'\r'));
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            if let Some(msg) = event_data(&event)
                && tx.send(msg).is_err()
            {
                return;
            }
        }
        if buf.len() > MAX_BODY {
            let _ = tx.send(Err(format!("HTTP: an event longer than {MAX_BODY} bytes")));
            return;
        }
    }
}

/// The message an SSE event carries: its `data:` lines joined; `None` for an event without.
fn event_data(event: &[u8]) -> Option<Result<Value, String>> {
    let mut data = Vec::new();
    for line in event.split(|&b| b == b'\n') {
        if let Some(rest) = line.strip_prefix(b"data:") {
            if !data.is_empty() {
                data.push(b'\n');
            }
            data.extend_from_slice(rest.strip_prefix(b" ").unwrap_or(rest));
        }
    }
    if data.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(serde_json::from_slice(&data).map_err(|_| {
        format!(
            "HTTP: an event that is not JSON: {}",
            mcp_core::transport::escape::escaped_bytes(&data)
        )
    }))
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")]

    use super::*;

    #[test]
    fn events_carry_their_data_lines_joined_and_priming_events_nothing() {
        assert_eq!(event_data(b"id: 1\ndata:\n\n"), None);
        assert_eq!(event_data(b": keep-alive\n\n"), None);
        assert!(event_data(b"data: {\"jsonrpc\"\n\n").unwrap().is_err());
        let msg = event_data(b"data: {\"jsonrpc\":\ndata: \"2.0\"}\n\n")
            .unwrap()
            .unwrap();
        assert_eq!(msg["jsonrpc"], "2.0");
    }

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(
            (e.https, e.port, e.authority.as_str(), e.path.as_str()),
            (false, 8080, "127.0.0.1:8080", "/mcp")
        );
        assert_eq!(e.origin(), "http://127.0.0.1:8080");
        let e = Endpoint::parse("https://device.example/mcp").unwrap();
        assert_eq!(
            (e.https, e.port, e.authority.as_str()),
            (true, 443, "device.example")
        );
        assert!(Endpoint::parse("mqtt://broker").is_err());
        assert!(Endpoint::parse("http://u:p@h/mcp").is_err());
    }
}
