//! xiaozhi's OTA/config check: at boot, before it connects anywhere, a xiaozhi device `POST`s a
//! description of itself to its OTA URL and learns from the answer where to connect and with
//! which token, whether the user still has to bind it (an activation code to show), the
//! server's time, and whether a newer firmware exists.
//!
//! **The request** ([`Device`]): headers `Device-Id` (the MAC, `aa:bb:cc:dd:ee:ff`), `Client-Id`
//! (a UUID the device keeps), `User-Agent` (`board/version`), `Accept-Language`,
//! `Content-Type: application/json`; a JSON body with `application.{name,version}`,
//! `board.{type,name,mac}`, `mac_address`, `uuid`, `chip_model_name`, `language`
//! ([`Device::write_body`]). A firmware writes the HTTP head itself ([`Device::write_head`]);
//! a host uses its HTTP client with [`Device::headers`].
//!
//! **The answer** ([`Answer::parse`]), every member optional:
//! - `websocket` `{url, token}`: connect there, with `Authorization: Bearer <token>`,
//!   `Protocol-Version`, `Device-Id` and `Client-Id`;
//! - `mqtt` `{endpoint, client_id, username, password, publish_topic, …}`: xiaozhi's own MQTT
//!   channel (its WebSocket envelope on one topic; not EMQX's MCP over MQTT);
//! - `activation` `{code, message, challenge, timeout_ms}`: the device is not bound yet: show
//!   the code (and message) until the user binds it, asking again meanwhile;
//! - `firmware` `{version, url}`: the newest firmware; newer than the running one
//!   ([`is_newer`]) is worth reporting, never installing silently;
//! - `server_time` `{timestamp, timezone_offset}`: milliseconds since 1970 and minutes east of
//!   UTC (a device without a clock can check certificate dates with it).
//!
//! A server that refuses answers `{"success":false,"message":…}` ([`AnswerError::Refused`]).
//! Strings stay borrowed JSON ([`JsonStr`]): decode them into a buffer of your own
//! (`JsonStr::decode_into`) — and escape them before a log line: they come from the wire.

use core::cmp::Ordering;
use core::fmt::{self, Write as _};

use mcp_core::wire::json::{Json, JsonStr, Kind};
use mcp_core::wire::writer::{ObjectWriter, Writer};

use crate::url::Url;

/// The `Protocol-Version` header a xiaozhi device sends with its WebSocket upgrade.
pub const PROTOCOL_VERSION: &str = "1";

/// The JSON nesting an answer may have (xiaozhi's have three levels).
pub const MAX_DEPTH: u8 = 16;

/// What the device says about itself (a plain description the caller fills in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device<'a> {
    /// The station MAC address (the `Device-Id`).
    pub mac: [u8; 6],
    /// A UUID the device keeps across boots (the `Client-Id`).
    pub client_id: &'a str,
    /// The firmware's name (`application.name`).
    pub app_name: &'a str,
    /// The running firmware's version (`application.version`): an answer's `firmware.version`
    /// is compared with it.
    pub app_version: &'a str,
    /// The board type (`board.type`; also the `User-Agent`'s first half).
    pub board_type: &'a str,
    /// The chip (`chip_model_name`), e.g. `esp32c3`.
    pub chip: &'a str,
    /// The language the device speaks (`Accept-Language`), e.g. `en-US`.
    pub language: &'a str,
}

/// A MAC address written as xiaozhi's `Device-Id`: `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceId([u8; 17]);

impl DeviceId {
    /// The id of `mac`.
    pub fn new(mac: [u8; 6]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = [b':'; 17];
        for (i, b) in mac.iter().enumerate() {
            if let (Some(hi), Some(lo)) = (s.get_mut(3 * i), HEX.get(usize::from(b >> 4))) {
                *hi = *lo;
            }
            if let (Some(lo), Some(h)) = (s.get_mut(3 * i + 1), HEX.get(usize::from(b & 15))) {
                *lo = *h;
            }
        }
        DeviceId(s)
    }

    /// As text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// A UUID-shaped `Client-Id` a device keeps without storage: `00000000-0000-4000-8000-` and
/// its MAC in hex (stable across boots, one per device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientId([u8; 36]);

impl ClientId {
    /// The id of `mac`.
    pub fn from_mac(mac: [u8; 6]) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = *b"00000000-0000-4000-8000-000000000000";
        for (i, b) in mac.iter().enumerate() {
            if let (Some(d), Some(h)) = (s.get_mut(24 + 2 * i), HEX.get(usize::from(b >> 4))) {
                *d = *h;
            }
            if let (Some(d), Some(h)) = (s.get_mut(25 + 2 * i), HEX.get(usize::from(b & 15))) {
                *d = *h;
            }
        }
        ClientId(s)
    }

    /// As text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The output buffer was too small; nothing usable was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooSmall;

impl fmt::Display for TooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the buffer is too small")
    }
}

impl core::error::Error for TooSmall {}

impl<'a> Device<'a> {
    /// Its `Device-Id`.
    pub fn device_id(&self) -> DeviceId {
        DeviceId::new(self.mac)
    }

    /// The request's headers besides `Content-Type` and `Content-Length`, for an HTTP client:
    /// `Device-Id`, `Client-Id`, `User-Agent` (pass a buffer of 64 bytes or more for it),
    /// `Accept-Language`.
    pub fn headers<'b>(
        &'b self,
        id: &'b DeviceId,
        agent: &'b mut [u8],
    ) -> [(&'static str, &'b str); 4] {
        let mut w = SliceWriter { buf: agent, len: 0 };
        let agent = match write!(w, "{}/{}", self.board_type, self.app_version) {
            Ok(()) => w.into_str(),
            Err(_) => self.board_type,
        };
        [
            ("Device-Id", id.as_str()),
            ("Client-Id", self.client_id),
            ("User-Agent", agent),
            ("Accept-Language", self.language),
        ]
    }

    /// Writes the JSON body; returns its length.
    ///
    /// # Errors
    /// `out` is too small.
    pub fn write_body(&self, out: &mut [u8]) -> Result<usize, TooSmall> {
        let id = self.device_id();
        let mut w = Writer::new(out);
        ObjectWriter::write(&mut w, |o| {
            o.int("version", 2)
                .str("language", self.language)
                .str("mac_address", id.as_str())
                .str("uuid", self.client_id)
                .str("chip_model_name", self.chip)
                .object("application", |a| {
                    a.str("name", self.app_name)
                        .str("version", self.app_version);
                })
                .object("board", |b| {
                    b.str("type", self.board_type)
                        .str("name", self.board_type)
                        .str("mac", id.as_str());
                });
        });
        w.written().map(<[u8]>::len).ok_or(TooSmall)
    }

    /// Writes the HTTP/1.1 head of the `POST` to `url` with a body of `body_len` bytes
    /// (`Connection: close`: the answer ends with the connection); returns its length.
    ///
    /// # Errors
    /// `out` is too small, or a header value holds a line break (never written).
    pub fn write_head(
        &self,
        url: &Url<'_>,
        body_len: usize,
        out: &mut [u8],
    ) -> Result<usize, TooSmall> {
        let id = self.device_id();
        for v in [
            self.client_id,
            self.board_type,
            self.app_version,
            self.language,
            url.path,
        ] {
            if v.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(TooSmall);
            }
        }
        let mut w = SliceWriter { buf: out, len: 0 };
        write!(
            w,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {body_len}\r\nDevice-Id: {}\r\nClient-Id: {}\r\n\
             User-Agent: {}/{}\r\nAccept-Language: {}\r\nConnection: close\r\n\r\n",
            url.path,
            url.authority(),
            id.as_str(),
            self.client_id,
            self.board_type,
            self.app_version,
            self.language,
        )
        .map_err(|_| TooSmall)?;
        Ok(w.len)
    }
}

/// `fmt::Write` into a byte slice.
struct SliceWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> SliceWriter<'b> {
    fn into_str(self) -> &'b str {
        let len = self.len;
        core::str::from_utf8(self.buf.get(..len).unwrap_or_default()).unwrap_or_default()
    }
}

impl fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        self.buf
            .get_mut(self.len..end)
            .ok_or(fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Whether the token an OTA/config check handed out may go on the link to `to`: over TLS, or
/// to this machine (loopback), always; in clear beyond loopback only when the check itself was
/// in clear (`check_over_tls` false: the token has crossed that network already). A token
/// obtained over TLS never travels in clear beyond loopback — an `https://` check that names a
/// plain `ws://` URL elsewhere gets its link without the token (and the device says why).
pub fn token_may_go(check_over_tls: bool, to: &Url<'_>) -> bool {
    !check_over_tls || to.scheme.is_tls() || to.is_loopback()
}

/// Where to connect over WebSocket, and with which token.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Websocket<'a> {
    /// The WebSocket URL (`ws://…` or `wss://…`).
    pub url: JsonStr<'a>,
    /// The bearer token for the upgrade's `Authorization` header, if any.
    pub token: Option<JsonStr<'a>>,
}

/// xiaozhi's MQTT channel (its WebSocket envelope on one topic, with UDP for audio).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Mqtt<'a> {
    /// `host:port` of the broker.
    pub endpoint: Option<JsonStr<'a>>,
    /// The MQTT client id to use.
    pub client_id: Option<JsonStr<'a>>,
    /// The MQTT user name.
    pub username: Option<JsonStr<'a>>,
    /// The MQTT password (never log it).
    pub password: Option<JsonStr<'a>>,
    /// The topic the device publishes on.
    pub publish_topic: Option<JsonStr<'a>>,
}

/// The device is not bound yet: show this until the user binds it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Activation<'a> {
    /// The code the user enters on the server's console (six digits on xiaozhi's service).
    pub code: Option<JsonStr<'a>>,
    /// What to show or say with it.
    pub message: Option<JsonStr<'a>>,
    /// The server's challenge, for devices that sign their activation (HMAC with a key in
    /// their eFuse); a device without one asks again until the server says it is bound.
    pub challenge: Option<JsonStr<'a>>,
    /// How long the server waits for the binding (ms).
    pub timeout_ms: Option<u64>,
}

/// The newest firmware the server offers.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Firmware<'a> {
    /// Its version.
    pub version: JsonStr<'a>,
    /// Where to download it (empty: nowhere).
    pub url: Option<JsonStr<'a>>,
}

/// The server's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerTime {
    /// Milliseconds since 1970-01-01 UTC.
    pub timestamp_ms: u64,
    /// Minutes east of UTC of the device's time zone, as the server sees it.
    pub timezone_offset_min: i64,
}

/// An OTA/config answer.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Answer<'a> {
    /// Where to connect over WebSocket.
    pub websocket: Option<Websocket<'a>>,
    /// xiaozhi's MQTT channel.
    pub mqtt: Option<Mqtt<'a>>,
    /// Not bound yet: what to show.
    pub activation: Option<Activation<'a>>,
    /// The newest firmware.
    pub firmware: Option<Firmware<'a>>,
    /// The server's clock.
    pub server_time: Option<ServerTime>,
}

/// Why an answer cannot be used. No variant holds text from the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnswerError {
    /// The body is not JSON (or nests beyond [`MAX_DEPTH`]).
    NotJson,
    /// The body is JSON but not an object.
    NotAnObject,
    /// The server refused the request (`{"success":false,…}`).
    Refused,
    /// A member has the wrong type (its name).
    Member(&'static str),
    /// A member the device reads appears twice (its name): which one counts is not clear.
    Duplicate(&'static str),
}

impl fmt::Display for AnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnswerError::NotJson => f.write_str("the OTA answer is not JSON"),
            AnswerError::NotAnObject => f.write_str("the OTA answer is not a JSON object"),
            AnswerError::Refused => f.write_str("the OTA server refused the request"),
            AnswerError::Member(m) => write!(f, "the OTA answer's `{m}` has the wrong type"),
            AnswerError::Duplicate(m) => write!(f, "the OTA answer has `{m}` twice"),
        }
    }
}

impl core::error::Error for AnswerError {}

impl<'a> Answer<'a> {
    /// Reads an answer. Members the device does not read are ignored; an empty `websocket.url`
    /// or `firmware.version` counts as absent.
    ///
    /// # Errors
    /// See [`AnswerError`].
    pub fn parse(body: &'a [u8]) -> Result<Answer<'a>, AnswerError> {
        let json = Json::parse(body, MAX_DEPTH).map_err(|_| AnswerError::NotJson)?;
        let members = json.members().ok_or(AnswerError::NotAnObject)?;
        let mut a = Answer::default();
        let mut seen = [false; 6];
        for (key, value) in members {
            let slot = [
                "websocket",
                "mqtt",
                "activation",
                "firmware",
                "server_time",
                "success",
            ]
            .iter()
            .position(|k| key.eq_str(k));
            let Some(i) = slot else { continue };
            let name = [
                "websocket",
                "mqtt",
                "activation",
                "firmware",
                "server_time",
                "success",
            ]
            .get(i)
            .copied()
            .unwrap_or("?");
            match seen.get_mut(i) {
                Some(s) if *s => return Err(AnswerError::Duplicate(name)),
                Some(s) => *s = true,
                None => {}
            }
            match i {
                0 => a.websocket = websocket(value)?,
                1 => a.mqtt = Some(mqtt(value)?),
                2 => a.activation = Some(activation(value)?),
                3 => a.firmware = firmware(value)?,
                4 => a.server_time = Some(server_time(value)?),
                _ => {
                    if value.as_bool() == Some(false) {
                        return Err(AnswerError::Refused);
                    }
                }
            }
        }
        Ok(a)
    }
}

/// The members of an object member, refusing anything else.
fn object<'a>(
    v: Json<'a>,
    name: &'static str,
) -> Result<mcp_core::wire::json::Members<'a>, AnswerError> {
    v.members().ok_or(AnswerError::Member(name))
}

/// A string member, or `None` for `null`.
fn string<'a>(v: Json<'a>, name: &'static str) -> Result<Option<JsonStr<'a>>, AnswerError> {
    match v.kind() {
        Kind::Null => Ok(None),
        _ => v.as_str().map(Some).ok_or(AnswerError::Member(name)),
    }
}

/// A non-negative integer member (`null`: none).
fn uint(v: Json<'_>, name: &'static str) -> Result<Option<u64>, AnswerError> {
    if v.kind() == Kind::Null {
        return Ok(None);
    }
    match v.as_integer() {
        Some(mcp_core::wire::json::Integer::Exact(i)) => u64::try_from(i)
            .map(Some)
            .map_err(|_| AnswerError::Member(name)),
        _ => Err(AnswerError::Member(name)),
    }
}

fn websocket(v: Json<'_>) -> Result<Option<Websocket<'_>>, AnswerError> {
    let (mut url, mut token) = (None, None);
    for (k, v) in object(v, "websocket")? {
        if k.eq_str("url") {
            url = string(v, "websocket.url")?;
        } else if k.eq_str("token") {
            token = string(v, "websocket.token")?.filter(|t| !t.raw().is_empty());
        }
    }
    Ok(url
        .filter(|u| !u.raw().is_empty())
        .map(|url| Websocket { url, token }))
}

fn mqtt(v: Json<'_>) -> Result<Mqtt<'_>, AnswerError> {
    let mut m = Mqtt {
        endpoint: None,
        client_id: None,
        username: None,
        password: None,
        publish_topic: None,
    };
    for (k, v) in object(v, "mqtt")? {
        let slot = if k.eq_str("endpoint") {
            &mut m.endpoint
        } else if k.eq_str("client_id") {
            &mut m.client_id
        } else if k.eq_str("username") {
            &mut m.username
        } else if k.eq_str("password") {
            &mut m.password
        } else if k.eq_str("publish_topic") {
            &mut m.publish_topic
        } else {
            continue;
        };
        *slot = string(v, "mqtt")?;
    }
    Ok(m)
}

fn activation(v: Json<'_>) -> Result<Activation<'_>, AnswerError> {
    let mut a = Activation {
        code: None,
        message: None,
        challenge: None,
        timeout_ms: None,
    };
    for (k, v) in object(v, "activation")? {
        if k.eq_str("code") {
            a.code = string(v, "activation.code")?;
        } else if k.eq_str("message") {
            a.message = string(v, "activation.message")?;
        } else if k.eq_str("challenge") {
            a.challenge = string(v, "activation.challenge")?;
        } else if k.eq_str("timeout_ms") {
            a.timeout_ms = uint(v, "activation.timeout_ms")?;
        }
    }
    Ok(a)
}

fn firmware(v: Json<'_>) -> Result<Option<Firmware<'_>>, AnswerError> {
    let (mut version, mut url) = (None, None);
    for (k, v) in object(v, "firmware")? {
        if k.eq_str("version") {
            version = string(v, "firmware.version")?;
        } else if k.eq_str("url") {
            url = string(v, "firmware.url")?.filter(|u| !u.raw().is_empty());
        }
    }
    Ok(version
        .filter(|v| !v.raw().is_empty())
        .map(|version| Firmware { version, url }))
}

fn server_time(v: Json<'_>) -> Result<ServerTime, AnswerError> {
    let mut t = ServerTime {
        timestamp_ms: 0,
        timezone_offset_min: 0,
    };
    for (k, v) in object(v, "server_time")? {
        if k.eq_str("timestamp") {
            t.timestamp_ms = uint(v, "server_time.timestamp")?.unwrap_or(0);
        } else if k.eq_str("timezone_offset") {
            t.timezone_offset_min = match v.as_integer() {
                Some(mcp_core::wire::json::Integer::Exact(i)) => i,
                _ => return Err(AnswerError::Member("server_time.timezone_offset")),
            };
        }
    }
    Ok(t)
}

/// The body of an HTTP/1.x answer read to the end of its connection (the request said
/// `Connection: close`): `None` unless the status is `200` and the body is not chunked; a
/// `Content-Length` shorter than what came bounds it.
pub fn http_body(http: &[u8]) -> Option<&[u8]> {
    let split = http.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = http.get(..split)?;
    let body = http.get(split + 4..)?;
    let mut lines = head.split(|&b| b == b'\n');
    let status = lines.next()?;
    if !(status.starts_with(b"HTTP/1.1 200") || status.starts_with(b"HTTP/1.0 200")) {
        return None;
    }
    let mut len = None;
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (line.get(..colon)?, line.get(colon + 1..)?);
        let value = core::str::from_utf8(value).ok()?.trim();
        if name.eq_ignore_ascii_case(b"transfer-encoding")
            && !value.eq_ignore_ascii_case("identity")
        {
            return None;
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            len = Some(value.parse::<usize>().ok()?);
        }
    }
    match len {
        Some(n) => body.get(..n),
        None => Some(body),
    }
}

/// Compares dotted versions number by number (`1.10.0` > `1.9.2`; `1.2` < `1.2.1`); a leading
/// `v` is ignored. `None` when either has a part that is not a number (then nothing can be said).
pub fn compare_versions(a: &str, b: &str) -> Option<Ordering> {
    fn parts(s: &str) -> impl Iterator<Item = Option<u64>> + '_ {
        let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
        s.split('.').map(|p| p.parse::<u64>().ok())
    }
    let (mut x, mut y) = (parts(a), parts(b));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Some(Ordering::Equal),
            (Some(p), None) => return p.map(|_| Ordering::Greater),
            (None, Some(q)) => return q.map(|_| Ordering::Less),
            (Some(p), Some(q)) => match p?.cmp(&q?) {
                Ordering::Equal => {}
                other => return Some(other),
            },
        }
    }
}

/// `true` when `offered` is a newer version than `running` ([`compare_versions`]); `false`
/// when it is not, or when either cannot be compared.
pub fn is_newer(running: &str, offered: &str) -> bool {
    compare_versions(offered, running) == Some(Ordering::Greater)
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]

    use super::*;

    const DEVICE: Device<'static> = Device {
        mac: [0x02, 0, 0, 0xab, 0xcd, 0xef],
        client_id: "5f1d1c1e-0000-4000-8000-000000000001",
        app_name: "esp32-wifi",
        app_version: "0.1.0",
        board_type: "esp32-wifi",
        chip: "esp32c3",
        language: "en-US",
    };

    #[test]
    fn the_request_describes_the_device() {
        assert_eq!(DEVICE.device_id().as_str(), "02:00:00:ab:cd:ef");
        assert_eq!(
            ClientId::from_mac(DEVICE.mac).as_str(),
            "00000000-0000-4000-8000-020000abcdef"
        );
        let mut body = [0u8; 512];
        let n = DEVICE.write_body(&mut body).unwrap();
        let json = Json::parse(&body[..n], MAX_DEPTH).unwrap();
        let app = json
            .members()
            .unwrap()
            .find(|(k, _)| k.eq_str("application"))
            .unwrap()
            .1;
        let version = app
            .members()
            .unwrap()
            .find(|(k, _)| k.eq_str("version"))
            .unwrap()
            .1;
        assert!(version.as_str().unwrap().eq_str("0.1.0"));
        assert!(DEVICE.write_body(&mut [0u8; 40]).is_err());
        let url = Url::parse("https://ota.example:8443/xiaozhi/ota/").unwrap();
        let mut head = [0u8; 512];
        let n = DEVICE.write_head(&url, 123, &mut head).unwrap();
        let head = core::str::from_utf8(&head[..n]).unwrap();
        assert!(head.starts_with("POST /xiaozhi/ota/ HTTP/1.1\r\nHost: ota.example:8443\r\n"));
        assert!(head.contains("\r\nDevice-Id: 02:00:00:ab:cd:ef\r\n"));
        assert!(head.contains("\r\nContent-Length: 123\r\n"));
        assert!(head.ends_with("\r\n\r\n"));
        let evil = Device {
            client_id: "x\r\nEvil: 1",
            ..DEVICE
        };
        assert!(evil.write_head(&url, 1, &mut [0u8; 512]).is_err());
        let id = DEVICE.device_id();
        let mut agent = [0u8; 64];
        let h = DEVICE.headers(&id, &mut agent);
        assert_eq!(h[2], ("User-Agent", "esp32-wifi/0.1.0"));
    }

    #[test]
    fn answers_like_the_backend_s() {
        let body = br#"{"server_time":{"timestamp":1765000000000,"timezone_offset":480},
            "firmware":{"version":"0.2.0","url":"https://ota.example/fw.bin"},
            "websocket":{"url":"wss://ws.example/xiaozhi/v1/","token":"t0k"},
            "activation":{"code":"123456","message":"bind me\n123456","challenge":"c","timeout_ms":30000},
            "extra":[1,2,3]}"#;
        let a = Answer::parse(body).unwrap();
        let ws = a.websocket.unwrap();
        assert!(ws.url.eq_str("wss://ws.example/xiaozhi/v1/"));
        assert!(ws.token.unwrap().eq_str("t0k"));
        let act = a.activation.unwrap();
        assert!(act.code.unwrap().eq_str("123456"));
        assert_eq!(act.timeout_ms, Some(30000));
        let mut buf = [0u8; 32];
        assert_eq!(
            act.message.unwrap().decode_into(&mut buf),
            Some("bind me\n123456")
        );
        assert!(a.firmware.unwrap().version.eq_str("0.2.0"));
        assert_eq!(
            a.server_time,
            Some(ServerTime {
                timestamp_ms: 1_765_000_000_000,
                timezone_offset_min: 480
            })
        );
        // The self-hosted backend's shape: no token, an empty firmware url, the old members.
        let body = br#"{"server_time":{"timestamp":1,"timezone_offset":480},"firmware":{"version":"0.1.0","url":""},
            "websocket":{"url":"ws://192.168.1.10:8000/xiaozhi/v1/"},"server":{"ip":"x"}}"#;
        let a = Answer::parse(body).unwrap();
        assert!(a.websocket.unwrap().token.is_none());
        assert!(a.firmware.unwrap().url.is_none());
        assert!(a.activation.is_none());
        assert!(a.mqtt.is_none());
    }

    #[test]
    fn bad_answers_are_errors_that_quote_nothing() {
        assert_eq!(Answer::parse(b"<html>").unwrap_err(), AnswerError::NotJson);
        assert_eq!(Answer::parse(b"[1]").unwrap_err(), AnswerError::NotAnObject);
        assert_eq!(
            Answer::parse(br#"{"success":false,"message":"request error."}"#).unwrap_err(),
            AnswerError::Refused
        );
        assert_eq!(
            Answer::parse(br#"{"websocket":{"url":5}}"#).unwrap_err(),
            AnswerError::Member("websocket.url")
        );
        assert_eq!(
            Answer::parse(br#"{"websocket":{"url":"ws://a/"},"websocket":{"url":"ws://b/"}}"#)
                .unwrap_err(),
            AnswerError::Duplicate("websocket")
        );
        assert_eq!(
            Answer::parse(br#"{"server_time":{"timestamp":-1}}"#).unwrap_err(),
            AnswerError::Member("server_time.timestamp")
        );
        let deep = [b'['; 64];
        assert_eq!(Answer::parse(&deep).unwrap_err(), AnswerError::NotJson);
    }

    #[test]
    fn http_answers() {
        let ok =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(http_body(ok), Some(&b"{}"[..]));
        let long = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}junk";
        assert_eq!(http_body(long), Some(&b"{}"[..]));
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}";
        assert_eq!(http_body(short), None, "cut short");
        let to_close = b"HTTP/1.0 200 OK\r\n\r\n{\"a\":1}";
        assert_eq!(http_body(to_close), Some(&b"{\"a\":1}"[..]));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(http_body(chunked), None);
        assert_eq!(http_body(b"HTTP/1.1 404 Not Found\r\n\r\n"), None);
        assert_eq!(http_body(b"HTTP/1.1 200 OK\r\n"), None, "no end of head");
        assert_eq!(
            http_body(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n{}"),
            None
        );
    }

    #[test]
    fn a_token_from_a_check_over_tls_never_goes_in_clear_beyond_loopback() {
        let url = |u| crate::url::Url::parse(u).unwrap();
        for (over_tls, to, may) in [
            (true, "wss://xiaozhi.example/xiaozhi/v1/", true),
            (true, "ws://127.0.0.1:8000/xiaozhi/v1/", true),
            (true, "ws://127.9.9.9:8000/", true),
            (true, "ws://[::1]:8000/", true),
            (true, "ws://LOCALHOST.:8000/", true),
            (true, "ws://10.0.0.2:8000/xiaozhi/v1/", false),
            (true, "ws://192.168.1.20:8000/", false),
            (true, "ws://[fe80::1]:8000/", false),
            (true, "ws://xiaozhi.example/", false),
            (true, "ws://localhost.example/", false),
            // A check in clear handed the token over that network already.
            (false, "ws://192.168.1.20:8000/", true),
            (false, "wss://xiaozhi.example/", true),
        ] {
            assert_eq!(token_may_go(over_tls, &url(to)), may, "{over_tls} {to}");
        }
    }

    #[test]
    fn versions() {
        assert!(is_newer("0.1.0", "0.2.0"));
        assert!(is_newer("1.9.2", "1.10.0"));
        assert!(is_newer("1.2", "1.2.1"));
        assert!(!is_newer("1.2.1", "1.2.1"));
        assert!(!is_newer("2.0.0", "1.99.9"));
        assert!(is_newer("v1.0", "v1.1"));
        assert!(
            !is_newer("1.0.0", "1.0.0-evil"),
            "not comparable: never newer"
        );
        assert_eq!(compare_versions("1.x", "1.0"), None);
    }
}
