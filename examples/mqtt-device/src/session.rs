//! One connection to the broker: CONNECT, subscriptions, presence, then every packet until the
//! link ends.

use core::num::NonZero;

use embassy_futures::select::{Either, select};
use embassy_time::{Duration, Instant, Timer, with_timeout};
use mcp_core::server::{Delivery, Input, Receipt};
use mcp_core::transport::mqtt::{
    self as conv, Busy, ClientId, Id, Incoming, MAX_TOPIC_LEN, Opened, PresenceGuard, Route,
    ServerTopics, Sessions, Spoke,
};
use rust_mqtt::Bytes;
use rust_mqtt::buffer::BumpBuffer;
use rust_mqtt::client::event::{Event, Publish};
use rust_mqtt::client::options::{
    ConnectOptions, PublicationOptions, SubscriptionOptions, TopicReference, UnsubscriptionOptions,
    WillOptions,
};
use rust_mqtt::client::{Client, MqttError};
use rust_mqtt::config::{KeepAlive, SessionExpiryInterval};
use rust_mqtt::io::Transport;
use rust_mqtt::types::{
    MqttBinary, MqttString, MqttStringPair, PacketIdentifier, ReasonCode, TopicFilter, TopicName,
};

use crate::{App, Buffers, Connect, Settings};

/// SUBSCRIBE packets awaiting their SUBACK at once (rust-mqtt's table): the control topic, every
/// client's RPC topic, the device's own presence topic and two topics per client session, all
/// sent right after a reconnection.
const SUBSCRIBE_MAXIMUM: usize = 32;
/// The most client sessions a device can keep: what `SUBSCRIBE_MAXIMUM` allows.
pub const MAX_CLIENTS: usize = (SUBSCRIBE_MAXIMUM - 3) / 2;
/// QoS 1 messages the broker may send before the device acknowledges them (MQTT 5 Receive
/// Maximum). The device acknowledges each one as it reads it.
const RECEIVE_MAXIMUM: usize = 4;
/// QoS 1 publishes of the device awaiting their PUBACK at once.
const SEND_MAXIMUM: usize = 8;
/// User properties read from an incoming PUBLISH (the convention's clients send two); more are
/// dropped by rust-mqtt.
const MAX_USER_PROPERTIES: usize = 8;
/// How long a DISCONNECT after a broker's protocol error may take to go out.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// The MQTT client on one connection: no subscription identifiers, no topic aliases.
type Mqtt<'a, 'c, N> = Client<
    'a,
    'c,
    N,
    BumpBuffer<'c>,
    SUBSCRIBE_MAXIMUM,
    RECEIVE_MAXIMUM,
    SEND_MAXIMUM,
    0,
    MAX_USER_PROPERTIES,
    0,
    0,
>;

/// `MCP-COMPONENT-TYPE: mcp-server`, on CONNECT and every PUBLISH.
const COMPONENT: MqttStringPair<'static> = MqttStringPair::new(
    MqttString::from_str_unchecked(conv::COMPONENT_TYPE),
    MqttString::from_str_unchecked(conv::SERVER_COMPONENT),
);

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// [`Connect::connect`] failed.
    Connect,
    /// The stream or the CONNACK took longer than `connect_timeout`.
    ConnectTimeout,
    /// The broker refused the connection (CONNACK with this reason code: bad credentials, a
    /// client id it does not accept, …).
    Refused(u8),
    /// A read or write failed (reset, closed).
    Io,
    /// The broker was silent for a whole keep-alive, or a packet or a publish stalled for
    /// `packet_timeout`.
    DeadLink,
    /// The broker broke the protocol (a malformed packet, one larger than the device accepts).
    Protocol,
    /// The broker disconnected the device (DISCONNECT with this reason code: session taken over
    /// by another connection with the same id, …).
    Disconnected(u8),
}

impl Ended {
    fn from_error<const M: usize, X>(e: &MqttError<'_, M, X>, connecting: bool) -> Self {
        match e {
            MqttError::Network(_) => Ended::Io,
            MqttError::Disconnect { reason, .. } if connecting => Ended::Refused(reason.value()),
            MqttError::Disconnect { reason, .. } => Ended::Disconnected(reason.value()),
            _ => Ended::Protocol,
        }
    }
}

/// Connects and serves until the link ends; says why. `connected` is set once the CONNACK came.
pub(crate) async fn session<C: Connect, A: App, const CLIENTS: usize, const NOTES: usize>(
    connector: &mut C,
    app: &mut A,
    settings: &Settings<'_>,
    me: ServerTopics<'_>,
    buffers: &mut Buffers<'_>,
    clients: &mut Sessions<CLIENTS, NOTES>,
    connected: &mut bool,
) -> Ended {
    const {
        assert!(
            CLIENTS >= 1 && CLIENTS <= MAX_CLIENTS,
            "CLIENTS: 1 to MAX_CLIENTS client sessions"
        );
    }
    let mut conn = match with_timeout(settings.connect_timeout, connector.connect()).await {
        Err(_) => return Ended::ConnectTimeout,
        Ok(None) => return Ended::Connect,
        Ok(Some(conn)) => conn,
    };
    let ended = {
        let Buffers {
            packet,
            message,
            out,
        } = buffers;
        let max_packet = NonZero::new(u32::try_from(packet.len()).unwrap_or(u32::MAX));
        let mut bump = BumpBuffer::new(packet);
        let mut link = Link {
            mqtt: Client::new(&mut bump),
            app,
            settings,
            me,
            clients,
            message,
            out,
            inflight: heapless::Vec::new(),
            keep_alive: settings.keep_alive,
            heard: Instant::now(),
            sent: Instant::now(),
            pinged: None,
            polled: Instant::now(),
            presence: PresenceGuard::new(),
            must_abort: false,
        };
        let ended = match link.open(&mut conn, max_packet).await {
            Ok(()) => {
                *connected = true;
                let Err(ended) = link.serve().await;
                ended
            }
            Err(ended) => ended,
        };
        link.close().await;
        ended
    };
    C::close(&mut conn).await;
    ended
}

/// Frees the fields of every packet read so far: rust-mqtt reads each incoming packet's topic,
/// properties and payload into the bump buffer, which is reset before the next packet.
///
/// Call it only when nothing borrowed from an earlier packet (an [`Event`], a CONNACK's
/// `Connected`, an error's reason string) is alive: [`Link::serve`] calls it at the top of its
/// loop, where every such value of the previous turn has been dropped (each turn copies what it
/// needs — topic, sender, payload — into buffers of its own before it acts).
#[expect(
    unsafe_code,
    reason = "BumpBuffer::reset; rust-mqtt without `alloc` offers no safe way to reuse its buffer"
)]
fn recycle<N: Transport>(mqtt: &mut Mqtt<'_, '_, N>) {
    // SAFETY: see above: no value borrowed from the bump buffer outlives the turn that read it.
    unsafe { mqtt.buffer_mut().reset() }
}

/// A message read from the broker, copied out of the packet buffer.
struct Received {
    topic: heapless::String<MAX_TOPIC_LEN>,
    /// The `MCP-MQTT-CLIENT-ID` user property, if usable.
    sender: Option<Id>,
    /// The payload's length in the message buffer; `None` when it did not fit.
    len: Option<usize>,
}

/// One connection's state.
struct Link<'l, 'a, 'c, N: Transport, A, const CLIENTS: usize, const NOTES: usize> {
    mqtt: Mqtt<'a, 'c, N>,
    app: &'l mut A,
    settings: &'l Settings<'l>,
    me: ServerTopics<'l>,
    clients: &'l mut Sessions<CLIENTS, NOTES>,
    message: &'l mut [u8],
    out: &'l mut [u8],
    /// QoS 1 publishes awaiting their PUBACK, with the receipt of the answer each one carries.
    inflight: heapless::Vec<(PacketIdentifier, Option<Receipt>), SEND_MAXIMUM>,
    /// The keep-alive in force (the broker may impose its own).
    keep_alive: Duration,
    /// When the last packet from the broker arrived.
    heard: Instant,
    /// When the last packet went out.
    sent: Instant,
    /// When the last PINGREQ went out.
    pinged: Option<Instant>,
    /// When the engine was last polled.
    polled: Instant,
    /// Whether the retained presence is still the device's own.
    presence: PresenceGuard,
    /// rust-mqtt returned an unrecoverable error: `abort` must be called.
    must_abort: bool,
}

impl<'a, 'c, N: Transport, A: App, const CLIENTS: usize, const NOTES: usize>
    Link<'_, 'a, 'c, N, A, CLIENTS, NOTES>
{
    /// CONNECT (with the will), then the subscriptions and the presence.
    async fn open(&mut self, conn: N, max_packet: Option<NonZero<u32>>) -> Result<(), Ended> {
        let s = self.settings;
        let mut presence = [0u8; MAX_TOPIC_LEN];
        let presence = self
            .me
            .presence(&mut presence)
            .map_err(|_| Ended::Protocol)?;
        let will_topic = MqttString::from_str(presence)
            .ok()
            .and_then(TopicName::new)
            .ok_or(Ended::Protocol)?;
        let will = WillOptions::new(will_topic, MqttBinary::from_slice_unchecked(conv::OFFLINE))
            .at_least_once()
            .retain();
        let meta = s
            .meta
            .and_then(|m| MqttString::from_str(m).ok())
            .map(|m| MqttStringPair::new(MqttString::from_str_unchecked(conv::META), m));
        let count = if meta.is_some() { 2 } else { 1 };
        let props = [COMPONENT, meta.unwrap_or(COMPONENT)];
        let props = props.get(..count);
        let secs = u16::try_from(s.keep_alive.as_secs()).unwrap_or(u16::MAX);
        let mut opts = ConnectOptions::new()
            .clean_start()
            .session_expiry_interval(SessionExpiryInterval::EndOnDisconnect)
            .keep_alive(NonZero::new(secs).map_or(KeepAlive::Infinite, KeepAlive::Seconds))
            .user_properties(props.unwrap_or_default())
            .will(will);
        if let Some(max) = max_packet {
            opts = opts.maximum_packet_size(max);
        }
        if let Some((user, password)) = s.credentials {
            let user = MqttString::from_str(user).map_err(|_| Ended::Refused(0x86))?;
            let password = MqttBinary::from_slice(password).map_err(|_| Ended::Refused(0x86))?;
            opts = opts.user_name(user).password(password);
        }
        let id = MqttString::from_str(s.server_id).map_err(|_| Ended::Protocol)?;
        let connected =
            with_timeout(s.connect_timeout, self.mqtt.connect(conn, &opts, Some(id))).await;
        match connected {
            Err(_) => return Err(Ended::ConnectTimeout),
            Ok(Err(e)) => {
                self.must_abort = true;
                return Err(Ended::from_error(&e, true));
            }
            Ok(Ok(_)) => {}
        }
        let now = Instant::now();
        (self.heard, self.sent, self.polled) = (now, now, now);
        if let KeepAlive::Seconds(k) = self.mqtt.shared_config().keep_alive {
            self.keep_alive = Duration::from_secs(u64::from(k.get()));
        }
        recycle(&mut self.mqtt);

        let mut topic = [0u8; MAX_TOPIC_LEN];
        let control = self.me.control(&mut topic).map_err(|_| Ended::Protocol)?;
        self.subscribe(control, false).await?;
        // Every client's RPC topic at once (No Local): an `initialize` costs no subscription.
        let rpc = self
            .me
            .rpc_filter(&mut topic)
            .map_err(|_| Ended::Protocol)?;
        self.subscribe(rpc, true).await?;
        for i in 0..CLIENTS {
            // Each client's id, copied: subscribing borrows the link.
            let Some(id) = self.clients.confirmed().nth(i).map(Id::try_from) else {
                break;
            };
            if let Ok(id) = id
                && let Ok(client) = ClientId::new(&id)
            {
                self.subscribe_client(client).await?;
            }
        }
        let n = self.online()?;
        self.publish_out(presence_topic(&self.me, &mut topic), n, true, None)
            .await?;
        self.presence.published(Instant::now().as_millis());
        // After the presence: the retained message the broker hands back is the device's own.
        // No Local: its own publishes there are not delivered back; only another client's are.
        self.subscribe(presence_topic(&self.me, &mut topic), true)
            .await
    }

    /// Writes the device's online presence into the output buffer; its length.
    fn online(&mut self) -> Result<usize, Ended> {
        let s = self.settings;
        conv::write_online(self.out, s.server_name, s.description, None)
            .map_err(|_| Ended::Protocol)
    }

    /// Publishes the presence again (retained) if another client cleared or forged it and the
    /// last one went out at least `PRESENCE_RESTORE_MS` ago; otherwise the loop comes back to it.
    async fn restore_presence(&mut self) -> Result<(), Ended> {
        if !self.presence.due(Instant::now().as_millis()) {
            return Ok(());
        }
        let n = self.online()?;
        let mut topic = [0u8; MAX_TOPIC_LEN];
        self.publish_out(presence_topic(&self.me, &mut topic), n, true, None)
            .await
    }

    /// Serves until the link ends.
    async fn serve(&mut self) -> Result<core::convert::Infallible, Ended> {
        loop {
            self.drain().await?;
            self.restore_presence().await?;
            recycle(&mut self.mqtt);
            let half = self.keep_alive / 2;
            let outstanding = self.pinged.is_some_and(|p| p >= self.heard);
            let ping_at = if outstanding {
                self.sent + half
            } else {
                self.sent.min(self.heard) + half
            };
            let dead_at = self.heard + self.keep_alive;
            let poll_at = self.polled + self.settings.poll_interval;
            let mut wake = ping_at.min(dead_at).min(poll_at);
            if let Some(at) = self.presence.next_ms() {
                wake = wake.min(Instant::from_millis(at));
            }
            let header = match select(self.mqtt.poll_header(), Timer::at(wake)).await {
                Either::First(Ok(header)) => header,
                Either::First(Err(e)) => {
                    self.must_abort = true;
                    return Err(Ended::from_error(&e, false));
                }
                Either::Second(()) => {
                    let now = Instant::now();
                    if now >= dead_at {
                        return Err(Ended::DeadLink);
                    }
                    if now >= ping_at {
                        match with_timeout(self.settings.packet_timeout, self.mqtt.ping()).await {
                            Err(_) => return Err(Ended::DeadLink),
                            Ok(Err(e)) => {
                                self.must_abort = true;
                                return Err(Ended::from_error(&e, false));
                            }
                            Ok(Ok(())) => {
                                self.sent = now;
                                self.pinged = Some(now);
                            }
                        }
                    }
                    continue;
                }
            };
            let event =
                match with_timeout(self.settings.packet_timeout, self.mqtt.poll_body(header)).await
                {
                    Err(_) => return Err(Ended::DeadLink),
                    Ok(Err(e)) => {
                        self.must_abort = true;
                        return Err(Ended::from_error(&e, false));
                    }
                    Ok(Ok(event)) => event,
                };
            self.heard = Instant::now();
            let received = match event {
                Event::Publish(p) => Some(self.copy_out(&p)),
                Event::PublishAcknowledged(ack) => {
                    let delivery = if ack.reason_code == ReasonCode::Success {
                        Delivery::Written
                    } else {
                        Delivery::Lost
                    };
                    self.acked(ack.packet_identifier, delivery);
                    None
                }
                Event::PublishRejected(rej) => {
                    self.acked(rej.packet_identifier, Delivery::Lost);
                    None
                }
                // PINGRESP, SUBACK, UNSUBACK (a refused subscription leaves the device deaf to
                // that topic; nothing better can be done than what the broker allows), and the
                // QoS 2 flows the device never starts.
                _ => None,
            };
            if let Some(received) = received {
                self.on_message(received).await?;
            }
        }
    }

    /// Copies what the device needs out of an incoming PUBLISH (its buffer is reused for the
    /// next packet).
    fn copy_out(&mut self, p: &Publish<'_, 0, MAX_USER_PROPERTIES>) -> Received {
        let mut topic = heapless::String::new();
        if let Some(name) = p.topic.name() {
            let name: &MqttString<'_> = name.as_ref();
            // A topic longer than any of the device's own is not one of them: left empty.
            let _ = topic.push_str(name.as_str());
        }
        let sender = p
            .user_properties
            .iter()
            .find(|pair| pair.name.as_str() == conv::MQTT_CLIENT_ID)
            .and_then(|pair| ClientId::new(pair.value.as_str()).ok())
            .map(conv::owned);
        let payload = p.message.as_bytes();
        let len = match self.message.get_mut(..payload.len()) {
            Some(dst) => {
                dst.copy_from_slice(payload);
                Some(payload.len())
            }
            None => None,
        };
        Received { topic, sender, len }
    }

    /// One message from the broker, by topic.
    async fn on_message(&mut self, m: Received) -> Result<(), Ended> {
        let Some(incoming) = self.me.parse(&m.topic) else {
            return Ok(());
        };
        if incoming == Incoming::Presence {
            // Another client cleared or overwrote the device's presence (its own publishes are
            // not delivered back: No Local). One too large for the message buffer is not its own.
            let n = self.online()?;
            let online = self.out.get(..n).unwrap_or_default();
            let heard = m.len.and_then(|len| self.message.get(..len));
            let stale = match heard {
                Some(payload) => self.presence.heard(payload, online),
                None => self.presence.heard(&[], online),
            };
            if stale {
                self.restore_presence().await?;
            }
            return Ok(());
        }
        let Some(len) = m.len else {
            // Larger than the message buffer: it cannot be read whole, so it is not answered.
            return Ok(());
        };
        let now = Instant::now();
        match incoming {
            Incoming::Control => {
                let Some(sender) = &m.sender else {
                    // Without a sender id there is no topic to answer on.
                    return Ok(());
                };
                let Ok(client) = ClientId::new(sender) else {
                    return Ok(());
                };
                // Answered, and what it declared noted: no session, nothing subscribed for it.
                match self.clients.initialize(client, now.as_millis()) {
                    Opened::HalfOpen { .. } => {
                        let session = self.clients.half_open_session(client.as_str());
                        self.handle(client, len, session, true).await
                    }
                    Opened::Refused(why) => self.refuse(client, len, why).await,
                }
            }
            Incoming::Rpc(client) => {
                let msg = self.message.get(..len).unwrap_or_default();
                if conv::is_disconnected(msg) {
                    return self.forget(client.as_str()).await;
                }
                // Someone speaks on the client's own topic (the RPC subscription has No Local:
                // never the device's own echo): the first time, that makes its session.
                let initialized = conv::is_initialized(msg);
                match self.clients.spoke(client, initialized, now.as_millis()) {
                    Spoke::Served { session, .. } => self.handle(client, len, session, false).await,
                    Spoke::Promoted { session, replaced } => {
                        if let Some(old) = replaced {
                            self.ended(&old).await?;
                        }
                        self.subscribe_client(client).await?;
                        self.handle(client, len, session, false).await
                    }
                    Spoke::Refused(why) => self.refuse(client, len, why).await,
                }
            }
            Incoming::ClientPresence(client) => {
                // Anyone may publish this on an open broker; the convention has the client's
                // will say it, so it is believed (see `mcp_core::transport::mqtt`).
                if conv::is_disconnected(self.message.get(..len).unwrap_or_default()) {
                    self.forget(client.as_str()).await?;
                }
                Ok(())
            }
            // The device uses no client capability (roots, sampling).
            Incoming::ClientCapability(_) => Ok(()),
            // Handled above.
            Incoming::Presence => Ok(()),
        }
    }

    /// Hands the message to the engine as `client`'s, in `session` (for an `initialize`:
    /// `opening`, what the engine makes of it is noted), and publishes the answer on its RPC
    /// topic.
    async fn handle(
        &mut self,
        client: ClientId<'_>,
        len: usize,
        session: mcp_core::Session,
        opening: bool,
    ) -> Result<(), Ended> {
        let msg = self.message.get(..len).unwrap_or_default();
        let input = Input::new(msg, self.settings.principal)
            .peer(client.peer())
            .session(session);
        let answer = self.app.handle(input, self.out).await;
        if let Some(after) = answer.session {
            if opening {
                self.clients.set_half_open_session(client.as_str(), after);
            } else {
                self.clients.set_session(client.as_str(), after);
            }
        }
        self.answer(client, answer.len, answer.receipt).await
    }

    /// Answers a request the device does not serve in a session (see [`Busy`]).
    async fn refuse(&mut self, client: ClientId<'_>, len: usize, why: Busy) -> Result<(), Ended> {
        let msg = self.message.get(..len).unwrap_or_default();
        let n = conv::write_busy(self.out, msg, why).unwrap_or(0);
        self.answer(client, n, None).await
    }

    /// Publishes the first `len` bytes of the output (nothing when 0) on `client`'s RPC topic.
    async fn answer(
        &mut self,
        client: ClientId<'_>,
        len: usize,
        receipt: Option<Receipt>,
    ) -> Result<(), Ended> {
        if len == 0 {
            return Ok(());
        }
        let mut topic = [0u8; MAX_TOPIC_LEN];
        let rpc = self
            .me
            .rpc(client, &mut topic)
            .map_err(|_| Ended::Protocol)?;
        self.publish_out(rpc, len, false, receipt).await
    }

    /// Ends a client's session: forget it, unsubscribe from its topics.
    async fn forget(&mut self, client: &str) -> Result<(), Ended> {
        if !self.clients.forget(client) {
            return Ok(());
        }
        self.ended(client).await
    }

    /// A client's session is over (forgotten, or its place taken): the engine forgets what it
    /// held for it, and its topics are unsubscribed.
    async fn ended(&mut self, client: &str) -> Result<(), Ended> {
        if let Ok(c) = ClientId::new(client) {
            self.app.forget(c.peer());
        }
        self.unsubscribe_client(client).await
    }

    /// What the engine owes (`App::poll`), published where the convention routes it, while
    /// publishes may be in flight.
    async fn drain(&mut self) -> Result<(), Ended> {
        let now = Instant::now();
        self.polled = now;
        let room = SEND_MAXIMUM.min(usize::from(self.mqtt.server_config().receive_maximum.get()));
        while self.inflight.len() < room {
            let polled = self.app.poll(now.as_millis(), self.out).await;
            let n = polled.len;
            if n == 0 {
                break;
            }
            let route = conv::route(self.out.get(..n).unwrap_or_default());
            let mut topic = [0u8; MAX_TOPIC_LEN];
            // What is for one client goes to that client only (never to whoever spoke last).
            let client = polled.to.and_then(|peer| self.clients.by_peer(peer));
            let topic = match (route, client.map(ClientId::new)) {
                (Route::Capability, _) => self.me.capability(&mut topic),
                (Route::Rpc, Some(Ok(client))) => self.me.rpc(client, &mut topic),
                // Nobody to send it to (the client is gone).
                (Route::Rpc, _) => continue,
            };
            let topic = topic.map_err(|_| Ended::Protocol)?;
            // `topic` borrows a local buffer, not the link.
            let topic: heapless::String<MAX_TOPIC_LEN> =
                heapless::String::try_from(topic).map_err(|_| Ended::Protocol)?;
            self.publish_out(&topic, n, false, None).await?;
        }
        Ok(())
    }

    /// The two subscriptions of a client session (its RPC topic is in the device's filter for
    /// every client's).
    async fn subscribe_client(&mut self, client: ClientId<'_>) -> Result<(), Ended> {
        let mut topic = [0u8; MAX_TOPIC_LEN];
        let presence = self
            .me
            .client_presence(client, &mut topic)
            .map_err(|_| Ended::Protocol)?;
        self.subscribe(presence, false).await?;
        let capability = self
            .me
            .client_capability(client, &mut topic)
            .map_err(|_| Ended::Protocol)?;
        self.subscribe(capability, false).await
    }

    async fn unsubscribe_client(&mut self, client: &str) -> Result<(), Ended> {
        let Ok(client) = ClientId::new(client) else {
            return Ok(());
        };
        let mut topic = [0u8; MAX_TOPIC_LEN];
        for which in 0..2 {
            let filter = match which {
                0 => self.me.client_presence(client, &mut topic),
                _ => self.me.client_capability(client, &mut topic),
            };
            let filter = filter.map_err(|_| Ended::Protocol)?;
            let Some(filter) = MqttString::from_str(filter).ok().and_then(TopicFilter::new) else {
                continue;
            };
            let opts = UnsubscriptionOptions::new();
            let done = with_timeout(
                self.settings.packet_timeout,
                self.mqtt.unsubscribe(filter, &opts),
            );
            let done = done.await;
            self.sent_or_ended(done)?;
        }
        Ok(())
    }

    async fn subscribe(&mut self, filter: &str, no_local: bool) -> Result<(), Ended> {
        let Some(filter) = MqttString::from_str(filter).ok().and_then(TopicFilter::new) else {
            return Ok(());
        };
        let mut opts = SubscriptionOptions::new().at_least_once();
        if no_local {
            opts = opts.no_local();
        }
        let done = with_timeout(
            self.settings.packet_timeout,
            self.mqtt.subscribe(filter, &opts),
        );
        let done = done.await;
        self.sent_or_ended(done)
    }

    /// The outcome of a SUBSCRIBE or UNSUBSCRIBE: a recoverable refusal by the client (its table
    /// full) is ignored; a stalled or failed write ends the link.
    fn sent_or_ended(
        &mut self,
        done: Result<Result<PacketIdentifier, MqttError<'_, 0>>, embassy_time::TimeoutError>,
    ) -> Result<(), Ended> {
        match done {
            Err(_) => Err(Ended::DeadLink),
            Ok(Ok(_)) => {
                self.sent = Instant::now();
                Ok(())
            }
            Ok(Err(e)) if e.is_recoverable() => Ok(()),
            Ok(Err(e)) => {
                self.must_abort = true;
                Err(Ended::from_error(&e, false))
            }
        }
    }

    /// Publishes the first `len` bytes of the output buffer on `topic` (QoS 1, the convention's
    /// user properties), remembering `receipt` until the PUBACK. An answer that cannot go out is
    /// reported lost.
    async fn publish_out(
        &mut self,
        topic: &str,
        len: usize,
        retain: bool,
        receipt: Option<Receipt>,
    ) -> Result<(), Ended> {
        let Some(name) = MqttString::from_str(topic).ok().and_then(TopicName::new) else {
            self.lost(receipt);
            return Ok(());
        };
        let sender = MqttStringPair::new(
            MqttString::from_str_unchecked(conv::MQTT_CLIENT_ID),
            // The server id passed `check_id` in `run`: printable ASCII.
            MqttString::from_str_unchecked(self.settings.server_id),
        );
        let props = [COMPONENT, sender];
        let mut opts = PublicationOptions::new(TopicReference::Name(name))
            .at_least_once()
            .user_properties(&props);
        if retain {
            opts = opts.retain();
        }
        let payload = Bytes::from(self.out.get(..len).unwrap_or_default());
        let done = with_timeout(
            self.settings.packet_timeout,
            self.mqtt.publish(&opts, payload),
        )
        .await;
        match done {
            Err(_) => {
                self.lost(receipt);
                Err(Ended::DeadLink)
            }
            Ok(Ok(pid)) => {
                self.sent = Instant::now();
                match pid {
                    Some(pid) => {
                        if let Err((_, receipt)) = self.inflight.push((pid, receipt)) {
                            // More in flight than rust-mqtt allows: cannot happen.
                            self.lost(receipt);
                        }
                    }
                    None => self.lost(receipt),
                }
                Ok(())
            }
            Ok(Err(e)) if e.is_recoverable() => {
                // The broker's flow control or the client's table is full, the packet is larger
                // than the broker takes, retain unsupported: this one message is lost.
                self.lost(receipt);
                Ok(())
            }
            Ok(Err(e)) => {
                self.lost(receipt);
                self.must_abort = true;
                Err(Ended::from_error(&e, false))
            }
        }
    }

    /// The broker acknowledged (or rejected) packet `pid`.
    fn acked(&mut self, pid: PacketIdentifier, delivery: Delivery) {
        if let Some(i) = self.inflight.iter().position(|(p, _)| *p == pid) {
            let (_, receipt) = self.inflight.swap_remove(i);
            if let Some(receipt) = receipt {
                self.app.delivered(receipt, delivery);
            }
        }
    }

    fn lost(&mut self, receipt: Option<Receipt>) {
        if let Some(receipt) = receipt {
            self.app.delivered(receipt, Delivery::Lost);
        }
    }

    /// The link is over: every answer still awaiting its PUBACK is lost (a clean session resends
    /// nothing); after an error of rust-mqtt's, its DISCONNECT (if the broker broke the protocol)
    /// goes out.
    async fn close(&mut self) {
        while let Some((_, receipt)) = self.inflight.pop() {
            self.lost(receipt);
        }
        if self.must_abort {
            let _ = with_timeout(CLOSE_TIMEOUT, self.mqtt.abort()).await;
        }
    }
}

fn presence_topic<'t>(me: &ServerTopics<'_>, buf: &'t mut [u8; MAX_TOPIC_LEN]) -> &'t str {
    me.presence(buf).unwrap_or_default()
}
