//! xiaozhi's OTA/config check, as a device does it at boot: `POST` its description to the OTA
//! URL (`http://` or `https://`, TLS with the link's roots), read where to connect and with
//! which token, show an activation code until the user binds the device, and report a newer
//! firmware (never install it).
//!
//! The request and the answer are `device_link::ota`'s — the same code the ESP32 firmware runs —
//! and this module only moves the bytes: one HTTP/1.1 `POST` per check through hyper, over TCP
//! or tokio-rustls with [`Tls`]'s configuration. [`until_bound`] repeats the check while the
//! answer carries an `activation`, telling the application each time
//! ([`HostEvent::Activation`]), and once more when the device is bound
//! ([`HostEvent::Activated`]); a firmware newer than the running one is reported as
//! [`HostEvent::FirmwareOffered`].
//!
//! A token the check hands out over TLS never travels in clear beyond loopback: an `https://`
//! check whose answer names a plain `ws://` URL on another host leaves the token out
//! ([`Config::token_withheld`]); the device connects without it and says why.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use device_link::ota::{Answer, AnswerError, Device, is_newer};
use device_link::url::{Scheme, Url};
use http_body_util::{BodyExt, Full, Limited};
use tokio::net::TcpStream;

use crate::tls::Tls;
use crate::{EventHook, HostEvent};

/// The largest answer read (bytes); xiaozhi's are under 2 KiB.
pub const MAX_ANSWER: usize = 16 * 1024;

/// The longest text from an answer kept for events and logs (characters).
pub const MAX_TEXT: usize = 200;

/// What the device says about itself, and how it checks.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// The OTA URL (`http://…/xiaozhi/ota/` or `https://…`).
    pub url: String,
    /// The station MAC (`Device-Id`).
    pub mac: [u8; 6],
    /// The UUID the device keeps (`Client-Id`).
    pub client_id: String,
    /// The firmware's name and running version (`application`).
    pub app_name: String,
    /// The running version, compared with the answer's `firmware.version`.
    pub app_version: String,
    /// The board type (`board.type`, `User-Agent`).
    pub board_type: String,
    /// The chip (`chip_model_name`).
    pub chip: String,
    /// The language (`Accept-Language`).
    pub language: String,
    /// The roots an `https://` server's certificate must chain to.
    pub tls: Tls,
    /// The longest one check may take (connect, TLS, request and answer).
    pub timeout: Duration,
    /// The wait between checks while the device is not bound, or after a check failed.
    pub retry: Duration,
    /// Receives the activation code, the binding and a firmware offer.
    pub on_event: Option<EventHook>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = Url::parse(&self.url).map_or_else(|e| e.to_string(), |u| u.to_string());
        f.debug_struct("Options")
            .field("url", &shown)
            .field("client_id", &self.client_id)
            .field("app_version", &self.app_version)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// A check of `url` by the device with `mac`: its `Client-Id` derived from the MAC (stable
    /// across runs), the app `mcu-mcp` at this crate's version on the board `mcu-mcp-host`
    /// (chip `host`, language `en-US`), the system's roots, 10 s per check, 5 s between checks.
    pub fn new(url: impl Into<String>, mac: [u8; 6]) -> Self {
        Options {
            url: url.into(),
            mac,
            client_id: client_id_of(mac),
            app_name: "mcu-mcp".into(),
            app_version: env!("CARGO_PKG_VERSION").into(),
            board_type: "mcu-mcp-host".into(),
            chip: "host".into(),
            language: "en-US".into(),
            tls: Tls::system(),
            timeout: Duration::from_secs(10),
            retry: Duration::from_secs(5),
            on_event: None,
        }
    }

    /// Sets the firmware's name and version, and the board type.
    pub fn app(
        mut self,
        name: impl Into<String>,
        version: impl Into<String>,
        board: impl Into<String>,
    ) -> Self {
        self.app_name = name.into();
        self.app_version = version.into();
        self.board_type = board.into();
        self
    }

    crate::link::setters! {
        /// Sets the roots.
        tls(tls: Tls);
        /// Sets the event hook.
        on_event(hook: EventHook) = Some(hook);
        /// Sets the wait between checks.
        retry(t: Duration);
    }

    /// The `Device-Id` the check sends (the MAC, `aa:bb:cc:dd:ee:ff`).
    pub fn device_id(&self) -> String {
        self.device().device_id().as_str().to_string()
    }

    fn device(&self) -> Device<'_> {
        Device {
            mac: self.mac,
            client_id: &self.client_id,
            app_name: &self.app_name,
            app_version: &self.app_version,
            board_type: &self.board_type,
            chip: &self.chip,
            language: &self.language,
        }
    }

    fn event(&self, e: &HostEvent) {
        if let Some(hook) = &self.on_event {
            hook(e);
        }
    }
}

/// A UUID-shaped `Client-Id` from a MAC: `00000000-0000-4000-8000-` and the MAC in hex.
pub fn client_id_of(mac: [u8; 6]) -> String {
    device_link::ota::ClientId::from_mac(mac)
        .as_str()
        .to_string()
}

/// What the check says, owned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Config {
    /// Where to connect over WebSocket (`ws://` or `wss://`).
    pub websocket: Option<String>,
    /// The bearer token for it. `None` also when the answer named one that may not go there
    /// ([`token_withheld`](Self::token_withheld)).
    pub token: Option<String>,
    /// The answer named a token for a plain `ws://` URL beyond loopback, but the check was over
    /// TLS: the token is left out (a token obtained over TLS never travels in clear beyond
    /// loopback, `device_link::ota::token_may_go`); connect without it, and say so.
    pub token_withheld: bool,
    /// xiaozhi's MQTT endpoint (`host:port`), when the server offers that channel.
    pub mqtt_endpoint: Option<String>,
    /// The activation code and message, while the device is not bound.
    pub activation: Option<(String, String)>,
    /// The newest firmware's version and download URL.
    pub firmware: Option<(String, Option<String>)>,
    /// The server's clock (ms since 1970).
    pub server_time_ms: Option<u64>,
}

/// Why a check failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The OTA URL cannot be used (the message quotes none of it).
    Url(String),
    /// TCP, TLS or HTTP failed; a refused certificate says why.
    Link(String),
    /// The server answered with an HTTP status other than 200.
    Status(u16),
    /// The answer cannot be used.
    Answer(AnswerError),
    /// The check took longer than [`Options::timeout`].
    Timeout,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Url(e) => write!(f, "OTA check: {e}"),
            Error::Link(e) => write!(f, "OTA check: {e}"),
            Error::Status(s) => write!(f, "OTA check: the server answered HTTP {s}"),
            Error::Answer(e) => write!(f, "OTA check: {e}"),
            Error::Timeout => f.write_str("OTA check: no answer in time"),
        }
    }
}

impl std::error::Error for Error {}

/// Text from the wire as events and logs may carry it: at most [`MAX_TEXT`] characters.
fn capped(s: &str) -> String {
    s.chars().take(MAX_TEXT).collect()
}

/// One check: `POST` the description, read the answer.
///
/// # Errors
/// See [`Error`].
pub async fn check(opts: &Options) -> Result<Config, Error> {
    match tokio::time::timeout(opts.timeout, check_once(opts)).await {
        Ok(r) => r,
        Err(_) => Err(Error::Timeout),
    }
}

async fn check_once(opts: &Options) -> Result<Config, Error> {
    let url = Url::parse(&opts.url).map_err(|e| Error::Url(e.to_string()))?;
    if !matches!(url.scheme, Scheme::Http | Scheme::Https) {
        return Err(Error::Url("the OTA URL must be http:// or https://".into()));
    }
    let device = opts.device();
    let mut body = vec![0u8; 1024];
    let n = device
        .write_body(&mut body)
        .map_err(|_| Error::Url("the device description is too long".into()))?;
    body.truncate(n);
    let id = device.device_id();
    let mut agent = [0u8; 128];
    let mut req = hyper::Request::post(url.path)
        .header(hyper::header::HOST, url.authority().to_string())
        .header(hyper::header::CONTENT_TYPE, "application/json");
    for (name, value) in device.headers(&id, &mut agent) {
        req = req.header(name, value);
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| Error::Url(e.to_string()))?;
    let tcp = TcpStream::connect((url.host_text, url.port))
        .await
        .map_err(|e| Error::Link(format!("connect: {e}")))?;
    let tls_host = url.scheme.is_tls().then_some(url.host_text);
    let sender = crate::client::http1(tcp, tls_host, &opts.tls)
        .await
        .map_err(Error::Link)?;
    let (status, bytes) = post(sender, req).await?;
    if status != 200 {
        return Err(Error::Status(status));
    }
    let answer = Answer::parse(&bytes).map_err(Error::Answer)?;
    let mut config = owned(&answer);
    let to = config.websocket.as_deref().map(Url::parse);
    if config.token.is_some()
        && to.is_some_and(|to| {
            !to.is_ok_and(|to| device_link::ota::token_may_go(url.scheme.is_tls(), &to))
        })
    {
        config.token = None;
        config.token_withheld = true;
    }
    Ok(config)
}

/// Sends the request on the connection and reads the answer (at most [`MAX_ANSWER`] bytes).
async fn post(
    mut sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    req: hyper::Request<Full<Bytes>>,
) -> Result<(u16, Bytes), Error> {
    let link = |e: hyper::Error| Error::Link(format!("HTTP: {e}"));
    let resp = sender.send_request(req).await.map_err(link)?;
    let status = resp.status().as_u16();
    let body = Limited::new(resp.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| Error::Link(format!("HTTP: the answer: {e}")))?
        .to_bytes();
    Ok((status, body))
}

/// The answer, owned (strings decoded; what events carry is capped).
fn owned(a: &Answer<'_>) -> Config {
    let s = |j: mcp_core::wire::json::JsonStr<'_>| j.to_cow().into_owned();
    Config {
        websocket: a.websocket.map(|w| s(w.url)),
        token: a.websocket.and_then(|w| w.token).map(s),
        mqtt_endpoint: a.mqtt.and_then(|m| m.endpoint).map(s),
        activation: a.activation.map(|act| {
            (
                capped(&act.code.map(s).unwrap_or_default()),
                capped(&act.message.map(s).unwrap_or_default()),
            )
        }),
        firmware: a
            .firmware
            .map(|f| (capped(&s(f.version)), f.url.map(|u| capped(&s(u))))),
        server_time_ms: a.server_time.map(|t| t.timestamp_ms),
        token_withheld: false,
    }
}

/// Checks until the answer has no `activation` (the device is bound), telling the application
/// the code each time it is shown ([`HostEvent::Activation`]) and when the device is bound
/// ([`HostEvent::Activated`]); a failed check is tried again after [`Options::retry`] too. A
/// firmware newer than [`Options::app_version`] is reported ([`HostEvent::FirmwareOffered`]),
/// never installed.
///
/// # Errors
/// Only a URL that can never work; every other failure is retried (and reported as
/// [`HostEvent::Disconnected`]).
pub async fn until_bound(opts: &Options) -> Result<Config, Error> {
    let mut shown = false;
    loop {
        match check(opts).await {
            Ok(config) => {
                if let Some((code, message)) = &config.activation {
                    shown = true;
                    opts.event(&HostEvent::Activation {
                        code: code.clone(),
                        message: message.clone(),
                    });
                } else {
                    if shown {
                        opts.event(&HostEvent::Activated);
                    }
                    if let Some((version, url)) = &config.firmware
                        && is_newer(&opts.app_version, version)
                    {
                        opts.event(&HostEvent::FirmwareOffered {
                            running: opts.app_version.clone(),
                            offered: version.clone(),
                            url: url.clone(),
                        });
                    }
                    return Ok(config);
                }
            }
            Err(e @ Error::Url(_)) => return Err(e),
            Err(e) => opts.event(&HostEvent::Disconnected {
                reason: e.to_string(),
                retry_in: Some(opts.retry),
            }),
        }
        tokio::time::sleep(opts.retry).await;
    }
}
