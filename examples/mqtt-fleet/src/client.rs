//! A fleet client of EMQX's "MCP over MQTT": it discovers every device on the broker from the
//! retained presence messages (`$mcp-server/presence/+/#`), initializes a session with any of
//! them on the control topic, and calls them on its RPC topics.
//!
//! It reconnects by itself (a fixed 200 ms pause between attempts: a test client, not a device)
//! and restores its subscriptions; a request whose answer does not come in time is sent again,
//! byte for byte ([`Client::call`]), as a client would after a broken link, and reported lost
//! when no attempt is answered.
//!
//! The broker URL is read as a device reads it (`mcp_host::mqtt::BrokerUrl`): `mqtts://` over
//! TLS with the roots of an `mcp_host::tls::Tls`, credentials in the URL
//! ([`Client::connect_with`]). What a device sends that no request waits for — notifications,
//! its own requests (an `elicitation/create`), answers nobody expects — also goes to the
//! [`inbox`](Client::inbox), in the order it came.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcp_core::transport::mqtt::{
    self as conv, CLIENT_COMPONENT, COMPONENT_TYPE, MQTT_CLIENT_ID, Presence as Announced,
    ServerTopics,
};
use mcp_host::mqtt::BrokerUrl;
use mcp_host::tls::Tls;
use rumqttc::NetworkOptions;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, LastWill, Packet, PublishProperties};
use rumqttc::v5::{AsyncClient, Event};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

/// What the client knows of one device from its presence topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    /// The `server-name` from the topic.
    pub server_name: String,
    /// The description in the online message.
    pub description: String,
    /// Online now (its last presence message was `notifications/server/online`).
    pub online: bool,
    /// How many online messages came (the retained one counts).
    pub onlines: u32,
    /// How many empty (offline) messages came.
    pub offlines: u32,
}

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No device with this id has been seen.
    Unknown(String),
    /// No answer within the time given (after every attempt).
    Lost,
    /// The MQTT client is gone.
    Closed,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unknown(d) => write!(f, "unknown device {d}"),
            CallError::Lost => f.write_str("no answer (lost)"),
            CallError::Closed => f.write_str("client closed"),
        }
    }
}

impl std::error::Error for CallError {}

type Key = (String, String);

/// Notifications kept per device ([`Client::notifications`]), the latest.
const NOTIFICATIONS_KEPT: usize = 256;

#[derive(Default)]
struct Shared {
    devices: Mutex<BTreeMap<String, Presence>>,
    changed: Notify,
    pending: Mutex<HashMap<Key, oneshot::Sender<Value>>>,
    answers: Mutex<HashMap<Key, u32>>,
    /// Notifications from devices, by device, in the order they came.
    notifications: Mutex<HashMap<String, Vec<Value>>>,
    /// Where what no request waits for goes, once [`Client::inbox`] was called.
    inbox: Mutex<Option<mpsc::UnboundedSender<(String, Value)>>>,
    /// Why the last connection attempt failed, until one succeeds.
    link_error: Mutex<Option<String>>,
    connacks: AtomicU64,
}

/// A message from `device` that no request waits for, and the device it came from.
pub type Unclaimed = (String, Value);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An MCP-over-MQTT client (see the [module docs](self)).
pub struct Client {
    id: String,
    mqtt: AsyncClient,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to `broker` (`mqtt://HOST:PORT`) as `id` (its `mcp-client-id`) and subscribes to
    /// every device's presence and to its own RPC topics.
    ///
    /// # Errors
    /// A bad URL or id.
    pub fn connect(broker: &str, id: &str) -> Result<Client, String> {
        Self::connect_with(broker, id, &Tls::system())
    }

    /// [`connect`](Self::connect) with the account `id` / `password` (a broker with a password
    /// file, where the user name is the client id).
    ///
    /// # Errors
    /// A bad URL or id.
    pub fn connect_as(broker: &str, id: &str, password: &str) -> Result<Client, String> {
        let mut url = BrokerUrl::parse(broker).map_err(|e| e.to_string())?;
        url.credentials = Some((id.to_string(), password.to_string()));
        Self::connect_url(&url, id, &Tls::system())
    }

    /// [`connect`](Self::connect) to any broker URL a device takes: `mqtt://` or `mqtts://`
    /// (TLS, the broker's certificate checked against `tls`'s roots and the URL's host),
    /// optionally with `USER:PASSWORD@` (`mcp_host::mqtt::Options::broker` has the form).
    ///
    /// # Errors
    /// A bad URL or id, an unusable TLS setting.
    pub fn connect_with(broker: &str, id: &str, tls: &Tls) -> Result<Client, String> {
        let url = BrokerUrl::parse(broker).map_err(|e| e.to_string())?;
        Self::connect_url(&url, id, tls)
    }

    fn connect_url(url: &BrokerUrl, id: &str, tls: &Tls) -> Result<Client, String> {
        conv::check_id(id).map_err(|e| format!("client id {id:?}: {e}"))?;
        let mut opts = url.mqtt_options(id, tls).map_err(|e| e.to_string())?;
        opts.set_keep_alive(Duration::from_secs(5))
            .set_clean_start(true)
            .set_session_expiry_interval(Some(0))
            .set_max_packet_size(Some(1 << 20))
            .set_connection_timeout(2)
            .set_outgoing_inflight_upper_limit(1024)
            .set_user_properties(vec![(COMPONENT_TYPE.into(), CLIENT_COMPONENT.into())])
            .set_last_will(LastWill::new(
                format!("$mcp-client/presence/{id}"),
                conv::DISCONNECTED.as_bytes().to_vec(),
                QoS::AtLeastOnce,
                false,
                None,
            ));
        let mut net = NetworkOptions::new();
        net.set_tcp_nodelay(true);
        net.set_connection_timeout(2);
        opts.set_network_options(net);
        let (mqtt, mut eventloop) = AsyncClient::new(opts, 100_000);
        let shared = Arc::new(Shared::default());
        let (sub, me, sh) = (mqtt.clone(), id.to_string(), shared.clone());
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        sh.connacks.fetch_add(1, Ordering::Relaxed);
                        *lock(&sh.link_error) = None;
                        let mut rpc = Filter::new(format!("$mcp-rpc/{me}/+/#"), QoS::AtLeastOnce);
                        rpc.nolocal = true;
                        let presence = Filter::new(conv::PRESENCE_FILTER, QoS::AtLeastOnce);
                        let _ = sub.try_subscribe_many([rpc, presence]);
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        sh.dispatch(&me, &p.topic, &p.payload)
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let why = mcp_host::tls::explain(&e).unwrap_or_else(|| e.to_string());
                        *lock(&sh.link_error) = Some(why);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        });
        Ok(Client {
            id: id.to_string(),
            mqtt,
            shared,
            task,
        })
    }

    /// The client's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Why the link to the broker is down, when it is (a refused certificate says why, a
    /// refused account "not authorized"); `None` once a connection succeeded.
    pub fn link_error(&self) -> Option<String> {
        lock(&self.shared.link_error).clone()
    }

    /// How many times the client has (re)connected.
    pub fn connections(&self) -> u64 {
        self.shared.connacks.load(Ordering::Relaxed)
    }

    /// From now on, every message a device sends this client that no request waits for — its
    /// notifications, its requests to the client (`elicitation/create`, `ping`), answers nobody
    /// expects — also comes here, in order. A second call replaces the first receiver.
    pub fn inbox(&self) -> mpsc::UnboundedReceiver<Unclaimed> {
        let (tx, rx) = mpsc::unbounded_channel();
        *lock(&self.shared.inbox) = Some(tx);
        rx
    }

    /// Every device seen so far, online or not, by id.
    pub fn devices(&self) -> BTreeMap<String, Presence> {
        lock(&self.shared.devices).clone()
    }

    /// Waits until `done` holds for the devices seen (`true`), or `timeout` passes (`false`).
    pub async fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&BTreeMap<String, Presence>) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if done(&lock(&self.shared.devices)) {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return done(&lock(&self.shared.devices));
            }
        }
    }

    /// Waits until at least `n` devices are online; `false` on timeout.
    pub async fn wait_for_online(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |d| d.values().filter(|p| p.online).count() >= n)
            .await
    }

    fn server_name(&self, device: &str) -> Result<String, CallError> {
        lock(&self.shared.devices)
            .get(device)
            .map(|p| p.server_name.clone())
            .ok_or_else(|| CallError::Unknown(device.to_string()))
    }

    fn props(&self) -> PublishProperties {
        PublishProperties {
            user_properties: vec![
                (COMPONENT_TYPE.into(), CLIENT_COMPONENT.into()),
                (MQTT_CLIENT_ID.into(), self.id.clone()),
            ],
            ..PublishProperties::default()
        }
    }

    /// Publishes `text` on `device`'s control topic (an `initialize`).
    ///
    /// # Errors
    /// An unknown device, or a closed client.
    pub async fn send_control(&self, device: &str, text: String) -> Result<(), CallError> {
        let name = self.server_name(device)?;
        let topic = format!("$mcp-server/{device}/{name}");
        self.mqtt
            .publish_with_properties(topic, QoS::AtLeastOnce, false, text, self.props())
            .await
            .map_err(|_| CallError::Closed)
    }

    /// Publishes `text` on the RPC topic with `device`, as it is (send the same bytes twice to
    /// play a QoS 1 redelivery).
    ///
    /// # Errors
    /// An unknown device, or a closed client.
    pub async fn send(&self, device: &str, text: String) -> Result<(), CallError> {
        let name = self.server_name(device)?;
        let topic = format!("$mcp-rpc/{}/{device}/{name}", self.id);
        self.mqtt
            .publish_with_properties(topic, QoS::AtLeastOnce, false, text, self.props())
            .await
            .map_err(|_| CallError::Closed)
    }

    /// Publishes `text` on any topic with the given user properties (to play a misbehaving or
    /// spoofing peer).
    ///
    /// # Errors
    /// A closed client.
    pub async fn publish_raw(
        &self,
        topic: String,
        text: String,
        user_properties: Vec<(String, String)>,
    ) -> Result<(), CallError> {
        let props = PublishProperties {
            user_properties,
            ..PublishProperties::default()
        };
        self.mqtt
            .publish_with_properties(topic, QoS::AtLeastOnce, false, text, props)
            .await
            .map_err(|_| CallError::Closed)
    }

    /// Publishes an `initialize` (request id `id`) on `device`'s control topic naming the client
    /// `as_client` in `MCP-MQTT-CLIENT-ID`, as anyone on an open broker can: a forged client,
    /// which never speaks on its RPC topic.
    ///
    /// # Errors
    /// An unknown device, or a closed client.
    pub async fn forge_initialize(
        &self,
        device: &str,
        id: i64,
        as_client: &str,
    ) -> Result<(), CallError> {
        let name = self.server_name(device)?;
        let init = json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"forger","version":"1"}}});
        let props = vec![
            ("MCP-COMPONENT-TYPE".to_string(), "mcp-client".to_string()),
            ("MCP-MQTT-CLIENT-ID".to_string(), as_client.to_string()),
        ];
        self.publish_raw(
            format!("$mcp-server/{device}/{name}"),
            init.to_string(),
            props,
        )
        .await
    }

    /// A sustained flood: [`forge_initialize`](Self::forge_initialize) `per_second` times a
    /// second for `seconds`, as `{prefix}-0`, `{prefix}-1`, …
    ///
    /// # Errors
    /// As [`forge_initialize`](Self::forge_initialize), at the first that fails.
    pub async fn flood_initialize(
        &self,
        device: &str,
        prefix: &str,
        per_second: u32,
        seconds: u32,
    ) -> Result<(), CallError> {
        let every = Duration::from_millis(1000 / u64::from(per_second.max(1)));
        let mut next = tokio::time::Instant::now();
        for i in 0..per_second * seconds {
            self.forge_initialize(device, i64::from(i), &format!("{prefix}-{i}"))
                .await?;
            next += every;
            tokio::time::sleep_until(next).await;
        }
        Ok(())
    }

    /// Clears the retained presence of `device` (offering `server_name`), as a peer on an open
    /// broker can: an empty retained message on its presence topic.
    ///
    /// # Errors
    /// A closed client.
    pub async fn clear_presence(&self, device: &str, server_name: &str) -> Result<(), CallError> {
        let topic = format!("$mcp-server/presence/{device}/{server_name}");
        self.publish_retained(topic, Vec::new()).await
    }

    /// Forges the retained presence of `device` (offering `server_name`): an "online" that
    /// describes it as `description`.
    ///
    /// # Errors
    /// A closed client.
    pub async fn forge_presence(
        &self,
        device: &str,
        server_name: &str,
        description: &str,
    ) -> Result<(), CallError> {
        let topic = format!("$mcp-server/presence/{device}/{server_name}");
        let forged = json!({"jsonrpc":"2.0","method":"notifications/server/online",
            "params":{"server_name":server_name,"description":description}});
        self.publish_retained(topic, forged.to_string().into_bytes())
            .await
    }

    /// Publishes `payload` **retained** on any topic (an empty payload clears the retained
    /// message): to play a peer that clears or forges a device's presence.
    ///
    /// # Errors
    /// A closed client.
    pub async fn publish_retained(&self, topic: String, payload: Vec<u8>) -> Result<(), CallError> {
        self.mqtt
            .publish(topic, QoS::AtLeastOnce, true, payload)
            .await
            .map_err(|_| CallError::Closed)
    }

    /// Registers interest in the answer to `id` from `device`, for a request sent with
    /// [`send`](Self::send) or [`publish_raw`](Self::publish_raw); the receiver gets the first
    /// answer.
    pub fn expect_answer(&self, device: &str, id: &Value) -> oneshot::Receiver<Value> {
        self.expect(device, id)
    }

    /// Registers interest in the answer to `id` from `device`.
    fn expect(&self, device: &str, id: &Value) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert((device.to_string(), id.to_string()), tx);
        rx
    }

    /// How many answers to `id` came from `device` (a redelivered request is answered twice).
    pub fn answers(&self, device: &str, id: &Value) -> u32 {
        lock(&self.shared.answers)
            .get(&(device.to_string(), id.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// The notifications `device` has sent this client (on its RPC topic), oldest first: the
    /// last 256.
    pub fn notifications(&self, device: &str) -> Vec<Value> {
        lock(&self.shared.notifications)
            .get(device)
            .cloned()
            .unwrap_or_default()
    }

    /// Opens a session with `device`: `initialize` on its control topic (answered on the RPC
    /// topic), then `notifications/initialized`. Returns the `initialize` result.
    ///
    /// # Errors
    /// An unknown device, no answer within `timeout`, a closed client.
    pub async fn initialize(&self, device: &str, timeout: Duration) -> Result<Value, CallError> {
        let params = json!({"protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"mqtt-fleet","version":env!("CARGO_PKG_VERSION")}});
        self.initialize_with(device, params, timeout).await
    }

    /// [`initialize`](Self::initialize) with the client's own `initialize` params (its
    /// revision, capabilities and name).
    ///
    /// # Errors
    /// As [`initialize`](Self::initialize).
    pub async fn initialize_with(
        &self,
        device: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = json!(0);
        let rx = self.expect(device, &id);
        let req = json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":params});
        self.send_control(device, req.to_string()).await?;
        let answer = tokio::time::timeout(timeout, rx)
            .await
            .map_err(|_| CallError::Lost)?
            .map_err(|_| CallError::Closed)?;
        self.send(
            device,
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
        )
        .await?;
        Ok(answer)
    }

    /// One request, one attempt: the whole response object.
    ///
    /// # Errors
    /// As [`call`](Self::call) with one attempt.
    pub async fn request(
        &self,
        device: &str,
        id: i64,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        self.call(device, id, method, params, 1, timeout).await
    }

    /// A client `id` of the broker at `broker`, once `device` is online, initialized with it
    /// (2025-11-25).
    ///
    /// # Errors
    /// No connection, `device` not online within `timeout`, or its `initialize` unanswered.
    pub async fn initialized(
        broker: &str,
        id: &str,
        device: &str,
        timeout: Duration,
    ) -> Result<Client, String> {
        let client = Client::connect(broker, id)?;
        let online = |d: &BTreeMap<String, Presence>| d.get(device).is_some_and(|p| p.online);
        if !client.wait_until(timeout, online).await {
            return Err(format!("{device} is not online"));
        }
        client
            .initialize(device, timeout)
            .await
            .map_err(|e| format!("initialize {device}: {e}"))?;
        Ok(client)
    }

    /// `tools/call` of `tool` with `arguments`, one attempt: the whole response object.
    ///
    /// # Errors
    /// As [`request`](Self::request).
    pub async fn call_tool(
        &self,
        device: &str,
        id: i64,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let params = json!({"name": tool, "arguments": arguments});
        self.request(device, id, "tools/call", params, timeout)
            .await
    }

    /// A request, sent again (the same bytes, the same id) up to `attempts` times while no
    /// answer comes within `timeout`; the whole response object.
    ///
    /// # Errors
    /// An unknown device, [`CallError::Lost`] when no attempt was answered, a closed client.
    pub async fn call(
        &self,
        device: &str,
        id: i64,
        method: &str,
        params: Value,
        attempts: u32,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let idv = json!(id);
        let text = json!({"jsonrpc":"2.0","id":idv,"method":method,"params":params}).to_string();
        let mut rx = self.expect(device, &idv);
        for _ in 0..attempts.max(1) {
            if self.send(device, text.clone()).await.is_err() {
                return Err(CallError::Closed);
            }
            match tokio::time::timeout(timeout, &mut rx).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(_)) => return Err(CallError::Closed),
                Err(_) => {}
            }
        }
        lock(&self.shared.pending).remove(&(device.to_string(), idv.to_string()));
        Err(CallError::Lost)
    }

    /// Says goodbye (`notifications/disconnected` on its presence topic) and disconnects.
    pub async fn close(self) {
        let _ = self
            .mqtt
            .publish(
                format!("$mcp-client/presence/{}", self.id),
                QoS::AtLeastOnce,
                false,
                conv::DISCONNECTED,
            )
            .await;
        let _ = self.mqtt.disconnect().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.task.abort();
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Shared {
    fn dispatch(&self, me: &str, topic: &[u8], payload: &[u8]) {
        let Ok(topic) = std::str::from_utf8(topic) else {
            return;
        };
        if let Some(server) = ServerTopics::from_presence(topic) {
            let mut devices = lock(&self.devices);
            let entry = devices
                .entry(server.server_id().to_string())
                .or_insert_with(|| Presence {
                    server_name: server.server_name().to_string(),
                    description: String::new(),
                    online: false,
                    onlines: 0,
                    offlines: 0,
                });
            match conv::parse_presence(payload) {
                Some(Announced::Online { description, .. }) => {
                    entry.online = true;
                    entry.onlines += 1;
                    entry.server_name = server.server_name().to_string();
                    if let Some(d) = description {
                        entry.description = d.to_cow().into_owned();
                    }
                }
                Some(Announced::Offline) => {
                    entry.online = false;
                    entry.offlines += 1;
                }
                _ => return,
            }
            drop(devices);
            self.changed.notify_waiters();
            return;
        }
        let Some(rest) = topic
            .strip_prefix("$mcp-rpc/")
            .and_then(|r| r.strip_prefix(me))
            .and_then(|r| r.strip_prefix('/'))
        else {
            return;
        };
        let device = rest.split('/').next().unwrap_or_default().to_string();
        let Ok(msg) = serde_json::from_slice::<Value>(payload) else {
            return;
        };
        if msg.get("method").is_some() {
            if msg.get("id").is_none() {
                let mut all = lock(&self.notifications);
                let kept = all.entry(device.clone()).or_default();
                if kept.len() == NOTIFICATIONS_KEPT {
                    kept.remove(0);
                }
                kept.push(msg.clone());
            }
            self.unclaimed(device, msg);
            return;
        }
        let Some(id) = msg.get("id") else {
            return;
        };
        let key = (device, id.to_string());
        *lock(&self.answers).entry(key.clone()).or_insert(0) += 1;
        match lock(&self.pending).remove(&key) {
            Some(tx) => {
                let _ = tx.send(msg);
            }
            None => self.unclaimed(key.0, msg),
        }
    }

    /// Hands `msg` to the inbox, if there is one.
    fn unclaimed(&self, device: String, msg: Value) {
        if let Some(tx) = lock(&self.inbox).as_ref() {
            let _ = tx.send((device, msg));
        }
    }
}

/// `count` real clients of `device` at `broker`, one after the other (`real-0`, `real-1`, …,
/// 700 ms apart): each connects, waits for the device's presence, initializes, and when
/// admitted makes the `tools/call` of `call(k)`, then leaves. Each one's outcome:
/// `Ok(the call's answer)`, or `Err(the answer to its initialize)` when it was refused.
///
/// # Errors
/// A client that cannot connect, see the device, or hear an answer within `timeout`.
pub async fn one_after_another(
    broker: &str,
    device: &str,
    count: i64,
    call: impl Fn(i64) -> Value,
    timeout: Duration,
) -> Result<Vec<Result<Value, Value>>, String> {
    let mut outcomes = Vec::new();
    for k in 0..count {
        let c = Client::connect(broker, &format!("real-{k}"))?;
        if !c.wait_for_online(1, timeout).await {
            return Err(format!("real-{k} never saw {device}"));
        }
        let answer = c
            .initialize(device, timeout)
            .await
            .map_err(|e| format!("real-{k}: initialize: {e}"))?;
        if answer.get("result").is_none() {
            outcomes.push(Err(answer));
        } else {
            let called = c
                .request(device, 1, "tools/call", call(k), timeout)
                .await
                .map_err(|e| format!("real-{k}: call: {e}"))?;
            outcomes.push(Ok(called));
        }
        c.close().await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    Ok(outcomes)
}

/// A sustained flood against `device`: `flooder` forges ten `initialize` a second for ten
/// seconds ([`Client::flood_initialize`]) while ten real clients come one after the other
/// ([`one_after_another`]), each calling `call(k)`. Returns the flooder and the ten calls'
/// answers.
///
/// # Errors
/// A real client refused (the answers to their `initialize`), or as [`one_after_another`].
pub async fn real_clients_through_a_flood(
    broker: &str,
    device: &str,
    flooder: Client,
    call: impl Fn(i64) -> Value,
    timeout: Duration,
) -> Result<(Client, Vec<Value>), String> {
    let target = device.to_string();
    let flooding = tokio::spawn(async move {
        let flooded = flooder.flood_initialize(&target, "forged", 10, 10).await;
        (flooder, flooded)
    });
    let outcomes = one_after_another(broker, device, 10, call, timeout).await?;
    let (flooder, flooded) = flooding.await.map_err(|e| e.to_string())?;
    flooded.map_err(|e| format!("the flood: {e}"))?;
    let (calls, refused): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
    if !refused.is_empty() {
        return Err(format!("{} of 10 refused: {refused:?}", refused.len()));
    }
    Ok((flooder, calls.into_iter().flatten().collect()))
}
