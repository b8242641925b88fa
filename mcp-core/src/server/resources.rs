//! Resources and prompts: `resources/list`, `resources/templates/list`, `resources/read`,
//! `prompts/list`, `prompts/get` over the static items of [`Config`](super::Config) and the live
//! resources registered on the server; and the device speaking first — a published change of a
//! live resource reaches the clients that subscribed to it.
//!
//! # Subscriptions, per revision
//! - **2024-11-05 … 2025-11-25**: `resources/subscribe` / `resources/unsubscribe` with a `uri`; the
//!   engine is one session, so it keeps a set of subscribed resources. A published change is
//!   written by [`Server::poll`] as `notifications/resources/updated {"uri":…}` — on stdio a line,
//!   over Streamable HTTP an event of the session's `GET` stream, over xiaozhi's WebSocket an
//!   envelope. A client that cannot subscribe (xiaozhi backends never do) can be subscribed by
//!   the firmware with [`Server::subscribe`].
//! - **2026-07-28**: `subscriptions/listen` with `notifications.resourceSubscriptions: [uri…]`.
//!   The engine answers at once with `notifications/subscriptions/acknowledged` (the URIs it
//!   honours; the request's own response comes only when the stream ends) and keeps the stream
//!   in a table of `LISTEN` slots; every notification on it carries
//!   `_meta["io.modelcontextprotocol/subscriptionId"]` (the listen request's id), which is how a
//!   transport routes it. The client ends it with `notifications/cancelled` (stdio) or by closing
//!   its stream (HTTP: the transport calls [`Server::cancelled`]).
//!
//! Publishing only marks the resource: the notifications are written by `poll`, one per call,
//! so a noisy sensor costs one bit until the main loop drains it (and a sensor kit with
//! hysteresis and a minimum interval decides when to publish at all).

use super::{
    Caller, Handled, Peer, Respond, Server, finish, members, write_cache_hints, write_object,
};
use crate::registry::LiveResource;
use crate::registry::{Listing, Resource};
use crate::result::{Output, Reply, ToolResult, Value, render_error_text, render_plain_string};
use crate::wire::json::{DEFAULT_MAX_DEPTH, Json, JsonStr, Kind};
use crate::wire::protocol::{self, join};
use crate::wire::request::MAX_ID_LEN;
use crate::wire::response::{ErrorCode, NO_DATA, write_error, write_result};
use crate::wire::writer::Writer;

/// The most live resources one server can hold (the subscription sets are 64-bit masks).
pub const MAX_LIVE_RESOURCES: usize = 64;

/// The `_meta` key that tags a notification with the listen stream it belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The caching hints of a live resource's `resources/read` on the 2026-07-28 wire: a reading is
/// stale at once (`ttlMs: 0`) and kept to the caller (`private`).
const LIVE_CACHE_HINTS: &[u8] = protocol::LIVE_CACHE_HINTS;

/// One 2026-07-28 `subscriptions/listen` stream.
#[derive(Debug)]
struct Listen {
    /// The listen request's id (raw JSON), `None` for a free slot.
    id: Option<heapless::Vec<u8, MAX_ID_LEN>>,
    /// The client that opened it: ids are that client's, and only it can end the stream.
    peer: Peer,
    /// The live resources it listens to.
    resources: u64,
    /// Published changes not yet written on it.
    pending: u64,
}

impl Listen {
    const FREE: Listen = Listen {
        id: None,
        peer: Peer::ONLY,
        resources: 0,
        pending: 0,
    };

    /// The stream `peer` opened with the request `id`.
    fn is(&self, peer: Peer, id: &[u8]) -> bool {
        self.peer == peer && self.id.as_deref() == Some(id)
    }
}

/// Live resources, the session's subscriptions and the listen streams.
pub(crate) struct Live<'t, C, const RES: usize, const LISTEN: usize> {
    resources: heapless::Vec<&'t LiveResource<C>, RES>,
    /// Subscribed through `resources/subscribe` (or [`Server::subscribe`]).
    subscribed: u64,
    /// Published changes not yet written to the session.
    pending: u64,
    listens: [Listen; LISTEN],
}

impl<'t, C, const RES: usize, const LISTEN: usize> Live<'t, C, RES, LISTEN> {
    pub(crate) const fn new() -> Self {
        Live {
            resources: heapless::Vec::new(),
            subscribed: 0,
            pending: 0,
            listens: [const { Listen::FREE }; LISTEN],
        }
    }

    fn position(&self, uri: &str) -> Option<usize> {
        self.resources.iter().position(|r| r.uri() == uri)
    }

    fn position_json(&self, uri: JsonStr<'_>) -> Option<usize> {
        self.resources.iter().position(|r| uri.eq_str(r.uri()))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// Writes the next owed notification into `out`, and whom it is for (`None`: the
    /// session's subscriptions; else the client whose listen stream it tags); 0 when nothing is
    /// owed.
    pub(crate) fn emit(&mut self, out: &mut [u8]) -> (usize, Option<Peer>) {
        if self.pending != 0 {
            let bit = self.pending.trailing_zeros() as usize;
            self.pending &= !(1u64 << bit);
            return (self.updated(bit, None, out), None);
        }
        let Some(k) = self.listens.iter().position(|l| l.pending != 0) else {
            return (0, None);
        };
        let Some(l) = self.listens.get_mut(k) else {
            return (0, None);
        };
        let bit = l.pending.trailing_zeros() as usize;
        l.pending &= !(1u64 << bit);
        let (id, peer) = (l.id.clone().unwrap_or_default(), l.peer);
        (self.updated(bit, Some(&id), out), Some(peer))
    }

    /// `notifications/resources/updated` for resource `bit`, tagged with a listen stream's id.
    fn updated(&self, bit: usize, listen: Option<&[u8]>, out: &mut [u8]) -> usize {
        let Some(r) = self.resources.get(bit) else {
            return 0;
        };
        let mut w = Writer::new(out);
        w.raw(protocol::RESOURCE_UPDATED_NOTIFICATION);
        if let Some(id) = listen {
            write_subscription_meta(&mut w, id);
            w.raw(b",");
        }
        w.raw(protocol::first(protocol::URI));
        w.string(r.uri());
        w.raw(b"}}");
        if w.fits() { w.needed() } else { 0 }
    }
}

/// `"_meta":{"io.modelcontextprotocol/subscriptionId":ID}`.
fn write_subscription_meta(w: &mut Writer<'_>, id: &[u8]) {
    w.raw(protocol::META_OPEN);
    w.string(SUBSCRIPTION_ID);
    w.raw(b":");
    w.raw(id);
    w.raw(b"}");
}

impl<
    't,
    C,
    const N: usize,
    const TASKS: usize,
    const CACHE: usize,
    const CACHE_BYTES: usize,
    const RES: usize,
    const LISTEN: usize,
    const HOLD: usize,
> Server<'t, C, N, TASKS, CACHE, CACHE_BYTES, RES, LISTEN, HOLD>
{
    /// Registers a live resource (see [`LiveResource`]). `resources/*` are then offered, with
    /// `"resources":{"subscribe":true}` in the capabilities.
    ///
    /// # Errors
    /// The URI is already registered (or a static resource has it), or the table holds `RES`
    /// resources (at most [`MAX_LIVE_RESOURCES`]); the resource is handed back.
    pub fn register_resource(
        &mut self,
        resource: &'t LiveResource<C>,
    ) -> Result<&mut Self, &'t LiveResource<C>> {
        let taken = self.live.position(resource.uri()).is_some()
            || self
                .config
                .resources
                .iter()
                .any(|r| r.uri() == resource.uri());
        if taken || self.live.resources.len() >= MAX_LIVE_RESOURCES {
            return Err(resource);
        }
        self.live.resources.push(resource)?;
        Ok(self)
    }

    /// The live resource at `uri` changed: every client subscribed to it gets
    /// `notifications/resources/updated` from the next calls of [`poll`](Self::poll). Returns
    /// `false` for a URI that is not a registered live resource.
    pub fn publish(&mut self, uri: &str) -> bool {
        let Some(i) = self.live.position(uri) else {
            return false;
        };
        let bit = 1u64 << i;
        if self.live.subscribed & bit != 0 {
            self.live.pending |= bit;
        }
        for l in self.live.listens.iter_mut().filter(|l| l.id.is_some()) {
            if l.resources & bit != 0 {
                l.pending |= bit;
            }
        }
        true
    }

    /// Subscribes this session to the live resource at `uri` on the client's behalf, for clients
    /// that cannot subscribe themselves (xiaozhi backends: they log the updates they get).
    /// Returns `false` for an unknown URI.
    pub fn subscribe(&mut self, uri: &str) -> bool {
        match self.live.position(uri) {
            Some(i) => {
                self.live.subscribed |= 1u64 << i;
                true
            }
            None => false,
        }
    }

    /// The client `peer` is gone from its request with this id (raw JSON, as sent): a 2026-07-28
    /// listen stream it held ends. An HTTP transport calls it when the client closes the stream;
    /// on stdio the client's `notifications/cancelled` does it. Request ids are the client's own:
    /// another client's stream with the same id is not touched. Returns whether a stream ended.
    pub fn cancelled(&mut self, peer: Peer, request_id: &[u8]) -> bool {
        match self
            .live
            .listens
            .iter_mut()
            .find(|l| l.is(peer, request_id))
        {
            Some(l) => {
                *l = Listen::FREE;
                true
            }
            None => false,
        }
    }

    /// Every listen stream of the client `peer` ends (it is gone). Returns how many did.
    pub fn forget_listens(&mut self, peer: Peer) -> usize {
        let mut n = 0;
        for l in self
            .live
            .listens
            .iter_mut()
            .filter(|l| l.id.is_some() && l.peer == peer)
        {
            *l = Listen::FREE;
            n += 1;
        }
        n
    }

    /// `notifications/cancelled` from `peer`: ends that client's listen stream.
    #[inline(never)]
    pub(super) fn on_cancelled(&mut self, peer: Peer, params: Option<Json<'_>>) {
        if let Ok([Some(id)]) = members(params, ["requestId"]) {
            self.cancelled(peer, id.raw());
        }
    }

    /// `true` when something can be published.
    pub(super) fn has_live_resources(&self) -> bool {
        !self.live.is_empty()
    }

    pub(super) fn resources(
        &mut self,
        method: &str,
        params: Option<Json<'_>>,
        caller: Caller,
        ctx: &mut C,
        respond: Respond<'_, '_>,
        handled: &mut Handled<'_>,
    ) -> usize {
        let (statics, prompts, ttl) = (
            self.config.resources,
            self.config.prompts,
            self.config.list_ttl_ms,
        );
        let modern = respond.era.is_modern();
        let hints = |w: &mut crate::wire::Writer<'_>| {
            if modern {
                write_cache_hints(w, ttl);
            }
        };
        let uri_param = || {
            members(params, ["uri"])
                .ok()
                .and_then(|[u]| u)
                .and_then(|u| u.as_str())
        };
        match method {
            "resources/list" => {
                let live = &self.live.resources;
                respond.result(|w| {
                    w.raw(protocol::RESOURCES_OPEN);
                    let statics = statics.iter().map(Resource::listing);
                    let lives = live.iter().map(|r| r.listing());
                    for (i, listing) in statics.chain(lives).enumerate() {
                        let &Listing {
                            uri,
                            name,
                            description,
                            mime_type: mime,
                        } = listing;
                        w.raw(if i > 0 {
                            join!(b",", protocol::URI_ENTRY)
                        } else {
                            protocol::URI_ENTRY
                        });
                        w.string(uri);
                        w.raw(protocol::NAME);
                        w.string(name);
                        if let Some(d) = description {
                            w.raw(protocol::DESCRIPTION);
                            w.string(d);
                        }
                        w.raw(protocol::MIME_TYPE);
                        w.string(mime);
                        w.raw(b"}");
                    }
                    w.raw(b"]");
                    hints(w);
                })
            }
            "resources/templates/list" => respond.result(|w| {
                w.raw(protocol::NO_RESOURCE_TEMPLATES);
                hints(w);
            }),
            "resources/read" => {
                let uri = uri_param();
                if let Some(i) = uri.and_then(|u| self.live.position_json(u)) {
                    return self.read_live(i, caller, ctx, respond);
                }
                let Some(r) = uri.and_then(|u| statics.iter().find(|r| u.eq_str(r.uri()))) else {
                    return not_found(respond, uri, modern);
                };
                respond.result(|w| {
                    w.raw(join!(protocol::CONTENTS_OPEN, protocol::URI_ENTRY));
                    w.string(r.uri());
                    w.raw(protocol::MIME_TYPE);
                    w.string(r.listing().mime_type);
                    w.raw(protocol::TEXT);
                    w.string(r.text());
                    w.raw(b"}]");
                    hints(w);
                })
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(i) = uri_param().and_then(|u| self.live.position_json(u)) else {
                    return not_found(respond, uri_param(), modern);
                };
                let bit = 1u64 << i;
                if method == "resources/subscribe" {
                    self.live.subscribed |= bit;
                } else {
                    self.live.subscribed &= !bit;
                    self.live.pending &= !bit;
                }
                respond.result(|_| {})
            }
            "subscriptions/listen" => self.listen(params, caller.peer, respond, handled),
            "prompts/list" => respond.result(|w| {
                w.raw(protocol::PROMPTS_OPEN);
                for (i, p) in prompts.iter().enumerate() {
                    w.raw(if i > 0 {
                        join!(b",", protocol::NAME_ENTRY)
                    } else {
                        protocol::NAME_ENTRY
                    });
                    w.string(p.name());
                    w.raw(protocol::DESCRIPTION);
                    w.string(p.describe());
                    w.raw(b"}");
                }
                w.raw(b"]");
                hints(w);
            }),
            _ => {
                // prompts/get
                let name = members(params, ["name"])
                    .ok()
                    .and_then(|[n]| n)
                    .and_then(|n| n.as_str());
                let Some(p) = name.and_then(|n| prompts.iter().find(|p| n.eq_str(p.name()))) else {
                    return respond.error(ErrorCode::InvalidParams, |w| {
                        w.text("Invalid params: unknown prompt")
                    });
                };
                respond.result(|w| {
                    w.raw(protocol::first(protocol::DESCRIPTION));
                    w.string(p.describe());
                    w.raw(protocol::USER_MESSAGE);
                    w.string(p.text());
                    w.raw(b"}}]");
                })
            }
        }
    }

    /// `resources/read` of a live resource: its reader runs with the output buffer as scratch,
    /// then the contents are rendered in front of what it wrote.
    fn read_live(
        &mut self,
        index: usize,
        caller: Caller,
        ctx: &mut C,
        respond: Respond<'_, '_>,
    ) -> usize {
        let Some(&r) = self.live.resources.get(index) else {
            return 0;
        };
        let seq = self.next_seq();
        let Respond {
            out, id, era, info, ..
        } = respond;
        let Some(id) = id else { return 0 };
        let (result, used): (ToolResult, usize) = {
            let mut reply = Reply::new(out, caller.principal, seq);
            let result = (r.reader())(ctx, &mut reply);
            (result, reply.used())
        };
        let tail = out.len().saturating_sub(used);
        out.copy_within(..used.min(out.len()), tail);
        let (head, scratch) = out.split_at_mut(tail);
        finish(head, Some(id), "", |w| match &result {
            Ok(output) => write_result(w, id, |w| {
                write_object(w, era, info, "complete", |w| {
                    write_contents(w, r, output, scratch, seq);
                    if era.is_modern() {
                        // Read from the device now, and it may change the next moment: never
                        // cacheable (not the listing's TTL: a client would serve it stale).
                        w.raw(LIVE_CACHE_HINTS);
                    }
                });
            }),
            Err(e) => {
                let message = |w: &mut Writer<'_>| {
                    w.text("Resource read failed: ");
                    render_error_text(w, e, scratch, seq);
                };
                write_error(w, Some(id), ErrorCode::InternalError, message, NO_DATA);
            }
        })
    }

    /// `subscriptions/listen`: takes a slot, writes the acknowledgement now; the request's
    /// response comes when the stream ends.
    fn listen(
        &mut self,
        params: Option<Json<'_>>,
        peer: Peer,
        respond: Respond<'_, '_>,
        handled: &mut Handled<'_>,
    ) -> usize {
        const BAD: &str = "Invalid params: subscriptions/listen needs notifications (an object; \
                           resourceSubscriptions an array of URIs)";
        let Some(id) = respond.id else { return 0 };
        let Ok([Some(filter)]) = members(params, ["notifications"]) else {
            return respond.error_text(ErrorCode::InvalidParams, BAD);
        };
        let Ok([uris]) = members(
            Some(filter).filter(|f| f.members().is_some()),
            ["resourceSubscriptions"],
        ) else {
            return respond.error_text(ErrorCode::InvalidParams, BAD);
        };
        let mut mask = 0u64;
        if let Some(uris) = uris {
            let Some(elements) = uris.elements() else {
                return respond.error_text(ErrorCode::InvalidParams, BAD);
            };
            for uri in elements {
                let Some(uri) = uri.as_str() else {
                    return respond.error_text(ErrorCode::InvalidParams, BAD);
                };
                // A URI that is not a live resource is not honoured (left out of the ack).
                if let Some(i) = self.live.position_json(uri) {
                    mask |= 1u64 << i;
                }
            }
        }
        let raw = id.raw();
        let Ok(stored) = heapless::Vec::<u8, MAX_ID_LEN>::from_slice(raw) else {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: id too long")
            });
        };
        if self.live.listens.iter().any(|l| l.is(peer, raw)) {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: a subscription with this id is already open")
            });
        }
        let Some(slot) = self.live.listens.iter_mut().find(|l| l.id.is_none()) else {
            return respond.error(ErrorCode::InternalError, |w| {
                w.text("Device busy: every subscription slot is in use; close one and listen again")
            });
        };
        *slot = Listen {
            id: Some(stored),
            peer,
            resources: mask,
            pending: 0,
        };
        handled.deferred = true;
        let resources = &self.live.resources;
        let Respond { out, .. } = respond;
        finish(out, None, "", |w| {
            w.raw(protocol::SUBSCRIPTIONS_ACKNOWLEDGED_NOTIFICATION);
            write_subscription_meta(w, raw);
            w.raw(protocol::NOTIFICATIONS_OPEN);
            if mask != 0 {
                w.raw(protocol::SUBSCRIPTIONS_OPEN);
                let honoured = resources
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1u64 << i) != 0);
                for (k, (_, r)) in honoured.enumerate() {
                    if k > 0 {
                        w.raw(b",");
                    }
                    w.string(r.uri());
                }
                w.raw(b"]");
            }
            w.raw(b"}}}");
        })
    }
}

/// Resource not found: -32002 with `data.uri` before 2026-07-28, -32602 from then on.
fn not_found(respond: Respond<'_, '_>, uri: Option<JsonStr<'_>>, modern: bool) -> usize {
    let code = if modern {
        ErrorCode::InvalidParams
    } else {
        ErrorCode::ResourceNotFound
    };
    let data = uri.map(|u| {
        move |w: &mut Writer<'_>| {
            w.raw(protocol::URI_ENTRY);
            w.json_str(u);
            w.raw(b"}");
        }
    });
    respond.error_with(code, |w| w.text("Resource not found"), data)
}

/// `"contents":[…]` for a live resource's reading: `[{"uri":…,"mimeType":…,"text":…}]`, or one
/// entry per content block when the reader answered with blocks ([`Reply::image`],
/// [`Reply::content`]): an image or audio block as `blob` (with the block's `mimeType`), a text
/// block as `text`, an embedded resource as the resource it embeds.
fn write_contents<C>(
    w: &mut Writer<'_>,
    r: &LiveResource<C>,
    output: &Output,
    scratch: &[u8],
    seq: u32,
) {
    w.raw(protocol::CONTENTS_OPEN);
    let blocks = match output.value {
        Value::Content(span) => span.resolve(scratch, seq),
        Value::Captioned(span) => span
            .resolve(scratch, seq)
            .map(|b| crate::result::report_parts(b).1),
        _ => None,
    };
    let written = blocks.is_some_and(|b| write_blocks(w, r, b));
    if !written {
        w.raw(protocol::URI_ENTRY);
        w.string(r.uri());
        w.raw(protocol::MIME_TYPE);
        w.string(r.listing().mime_type);
        w.raw(protocol::TEXT);
        render_plain_string(w, output, scratch, seq);
        w.raw(b"}");
    }
    w.raw(b"]");
}

/// The entries of [`write_contents`] for content blocks (`{…},{…}`, as the reply keeps them);
/// `false` when there was none to write.
fn write_blocks<C>(w: &mut Writer<'_>, r: &LiveResource<C>, mut blocks: &[u8]) -> bool {
    let mut first = true;
    while let Ok((block, rest)) = Json::parse_first(blocks, DEFAULT_MAX_DEPTH) {
        blocks = rest;
        let Ok([text, data, mime, resource]) =
            members(Some(block), ["text", "data", "mimeType", "resource"])
        else {
            continue;
        };
        let entry = |w: &mut Writer<'_>, mime: Option<Json<'_>>, key: &[u8], value: Json<'_>| {
            w.raw(protocol::URI_ENTRY);
            w.string(r.uri());
            w.raw(protocol::MIME_TYPE);
            match mime.filter(|m| m.kind() == Kind::String) {
                Some(m) => w.raw(m.raw()),
                None => w.string(r.listing().mime_type),
            }
            w.raw(key);
            w.raw(value.raw());
            w.raw(b"}");
        };
        let separator = |w: &mut Writer<'_>, first: &mut bool| {
            if !core::mem::take(first) {
                w.raw(b",");
            }
        };
        match (resource, data, text) {
            (Some(embedded), _, _) if embedded.kind() == Kind::Object => {
                separator(w, &mut first);
                w.raw(embedded.raw());
            }
            (_, Some(data), _) if data.kind() == Kind::String => {
                separator(w, &mut first);
                entry(w, mime, protocol::BLOB, data);
            }
            (_, _, Some(text)) if text.kind() == Kind::String => {
                separator(w, &mut first);
                entry(w, None, protocol::TEXT, text);
            }
            _ => {}
        }
    }
    !first
}
