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

use super::capacities::Slots;
use super::era::Era;
use super::flow::Caller;
use super::live::{Listen, Live};
use super::params::members;
use super::respond::{Respond, finish, write_cache_hints, write_object};
use super::{Capacities, Handled, Peer, Principal, Server};
use crate::registry::LiveResource;
use crate::registry::{Listing, Prompt, PromptArgument, Resource, Values};
use crate::result::{Output, Reply, ToolResult, Value, render_error_text, render_plain_string};
use crate::wire::json::{DEFAULT_MAX_DEPTH, Json, JsonStr, Kind};
use crate::wire::protocol::{self, join};
use crate::wire::request::{KeptRaw, MAX_ID_LEN};
use crate::wire::response::{ErrorCode, NO_DATA, write_error, write_result};
use crate::wire::writer::Writer;
use heapless::VecView;

/// The most live resources one server can hold (the subscription sets are 64-bit masks).
pub const MAX_LIVE_RESOURCES: usize = 64;

/// The `_meta` key that tags a notification with the listen stream it belongs to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The caching hints of a live resource's `resources/read` on the 2026-07-28 wire: a reading is
/// stale at once (`ttlMs: 0`) and kept to the caller (`private`).
const LIVE_CACHE_HINTS: &[u8] = protocol::LIVE_CACHE_HINTS;

impl<'t, C, K: Capacities> Live<'t, C, K> {
    /// The registered live resources, in registration order (a resource's index is its bit in
    /// the subscription masks).
    fn resources(&self) -> &VecView<&'t LiveResource<C>> {
        self.resources.view()
    }

    fn listens(&self) -> &[Listen] {
        self.listens.as_ref()
    }

    fn listens_mut(&mut self) -> &mut [Listen] {
        self.listens.as_mut()
    }

    /// `params.uri`, and the index of the live resource there, if one is.
    fn at<'i>(&self, params: Option<Json<'i>>) -> (Option<JsonStr<'i>>, Option<usize>) {
        let uri = uri_param(params);
        (uri, uri.and_then(|u| self.position_json(u)))
    }

    /// The live resources among `uris` (an array of strings; absent: none), as a mask. A URI
    /// that is not a live resource is not honoured (left out of the acknowledgement). `None`:
    /// not an array of strings.
    fn mask(&self, uris: Option<Json<'_>>) -> Option<u64> {
        let Some(uris) = uris else { return Some(0) };
        let mut mask = 0u64;
        for uri in uris.elements()? {
            if let Some(i) = self.position_json(uri.as_str()?) {
                mask |= 1u64 << i;
            }
        }
        Some(mask)
    }

    /// `notifications/subscriptions/acknowledged` for the listen stream `id`: the URIs of the
    /// resources in `mask`.
    fn acknowledge(&self, w: &mut Writer<'_>, id: &[u8], mask: u64) {
        w.raw(protocol::SUBSCRIPTIONS_ACKNOWLEDGED_NOTIFICATION);
        write_subscription_meta(w, id);
        w.raw(protocol::NOTIFICATIONS_OPEN);
        if mask != 0 {
            w.raw(protocol::SUBSCRIPTIONS_OPEN);
            let honoured = self
                .resources()
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
    }

    fn position(&self, uri: &str) -> Option<usize> {
        self.resources().iter().position(|r| r.uri() == uri)
    }

    fn position_json(&self, uri: JsonStr<'_>) -> Option<usize> {
        self.resources().iter().position(|r| uri.eq_str(r.uri()))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.resources().is_empty()
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
        let Some(k) = self.listens().iter().position(|l| l.pending != 0) else {
            return (0, None);
        };
        let Some(l) = self.listens_mut().get_mut(k) else {
            return (0, None);
        };
        let bit = l.pending.trailing_zeros() as usize;
        l.pending &= !(1u64 << bit);
        let (id, peer) = (l.id.clone(), l.peer);
        (self.updated(bit, id.get(), out), Some(peer))
    }

    /// `notifications/resources/updated` for resource `bit`, tagged with a listen stream's id.
    fn updated(&self, bit: usize, listen: Option<&[u8]>, out: &mut [u8]) -> usize {
        let Some(r) = self.resources().get(bit) else {
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

/// `params.uri`, a string.
fn uri_param<'i>(params: Option<Json<'i>>) -> Option<JsonStr<'i>> {
    members(params, ["uri"])
        .ok()
        .and_then(|[u]| u)
        .and_then(|u| u.as_str())
}

/// `"_meta":{"io.modelcontextprotocol/subscriptionId":ID}`.
fn write_subscription_meta(w: &mut Writer<'_>, id: &[u8]) {
    w.raw(protocol::META_OPEN);
    w.string(SUBSCRIPTION_ID);
    w.raw(b":");
    w.raw(id);
    w.raw(b"}");
}

impl<'t, C, K: Capacities> Server<'t, C, K> {
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
        if taken || self.live.resources().len() >= MAX_LIVE_RESOURCES {
            return Err(resource);
        }
        self.live.resources.view_mut().push(resource)?;
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
        for l in self
            .live
            .listens_mut()
            .iter_mut()
            .filter(|l| l.id.is_some())
        {
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
            .listens_mut()
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
            .listens_mut()
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

    /// Routes `resources/*`, `subscriptions/listen`, `prompts/*` and `completion/complete`. (Not
    /// inlined: its frame is not under every `tools/call`, which is routed beside it.)
    #[inline(never)]
    pub(super) fn resources(
        &mut self,
        method: &str,
        params: Option<Json<'_>>,
        caller: Caller,
        ctx: &mut C,
        respond: Respond<'_, '_>,
        handled: &mut Handled<'_>,
    ) -> usize {
        match method {
            "resources/list" => self.list_resources(respond),
            "resources/templates/list" => {
                let hints = self.hints(respond.era);
                respond.result(|w| {
                    w.raw(protocol::NO_RESOURCE_TEMPLATES);
                    hints(w);
                })
            }
            "resources/read" => self.read(params, caller, ctx, respond),
            "resources/subscribe" => self.subscription(true, params, respond),
            "resources/unsubscribe" => self.subscription(false, params, respond),
            "subscriptions/listen" => self.listen(params, caller.peer, respond, handled),
            "prompts/list" => self.list_prompts(respond),
            "completion/complete" => self.complete(params, caller.principal, respond),
            _ => self.get_prompt(params, caller.principal, respond),
        }
    }

    /// The 2026-07-28 caching hints of a listing (nothing on the legacy wire).
    fn hints(&self, era: Era<'_>) -> impl Fn(&mut Writer<'_>) + use<'t, C, K> {
        let (modern, ttl) = (era.is_modern(), self.config.list_ttl_ms);
        move |w: &mut Writer<'_>| {
            if modern {
                write_cache_hints(w, ttl);
            }
        }
    }

    /// `resources/list`: the static resources, then the live ones.
    fn list_resources(&self, respond: Respond<'_, '_>) -> usize {
        let (statics, live) = (self.config.resources, self.live.resources());
        let hints = self.hints(respond.era);
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

    /// `resources/read`: a live resource's reading, or a static resource's text.
    fn read(
        &mut self,
        params: Option<Json<'_>>,
        caller: Caller,
        ctx: &mut C,
        respond: Respond<'_, '_>,
    ) -> usize {
        let (uri, live) = self.live.at(params);
        if let Some(i) = live {
            return self.read_live(i, caller, ctx, respond);
        }
        let statics = self.config.resources;
        let Some(r) = uri.and_then(|u| statics.iter().find(|r| u.eq_str(r.uri()))) else {
            return not_found(respond, uri);
        };
        let hints = self.hints(respond.era);
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

    /// `resources/subscribe` (`on`) and `resources/unsubscribe` of a live resource.
    fn subscription(
        &mut self,
        on: bool,
        params: Option<Json<'_>>,
        respond: Respond<'_, '_>,
    ) -> usize {
        let (uri, live) = self.live.at(params);
        let Some(i) = live else {
            return not_found(respond, uri);
        };
        let bit = 1u64 << i;
        if on {
            self.live.subscribed |= bit;
        } else {
            self.live.subscribed &= !bit;
            self.live.pending &= !bit;
        }
        respond.result(|_| {})
    }

    /// `prompts/get`: the prompt's template, filled with the arguments (checked like a tool's;
    /// one with a closed set of values takes only those the caller is offered).
    fn get_prompt(
        &self,
        params: Option<Json<'_>>,
        principal: Principal,
        respond: Respond<'_, '_>,
    ) -> usize {
        let found = prompt_and_arguments(self.config.prompts, params, |a, v| {
            self.takes(a, principal, v)
        });
        let (p, arguments) = match found {
            Ok(found) => found,
            Err(refused) => {
                return respond.error(ErrorCode::InvalidParams, |w| refused.write(w));
            }
        };
        respond.result(|w| {
            w.raw(protocol::first(protocol::DESCRIPTION));
            w.string(p.describe());
            w.raw(protocol::USER_MESSAGE);
            w.begin_string();
            fill(w, p, arguments);
            w.end_string();
            w.raw(b"}}]");
        })
    }

    /// The values argument `a` takes from `principal`, in the order they are offered: its
    /// declared values, or the names of the registered tools `principal` may call (the
    /// audience step's rule); none for free text.
    fn offered(
        &self,
        a: &PromptArgument,
        principal: Principal,
    ) -> impl Iterator<Item = &'static str> + '_ {
        let (listed, tools): (&'static [&'static str], bool) = match a.values_taken() {
            Values::Any => (&[], false),
            Values::Listed(v) | Values::Suggested(v) => (v, false),
            Values::Tools => (&[], true),
        };
        let entries = if tools { self.registry.entries() } else { &[] };
        listed.iter().copied().chain(
            entries
                .iter()
                .filter(move |e| self.may_call(e.tool, principal))
                .map(|e| e.tool.name()),
        )
    }

    /// `true` when argument `a` takes `value` from `principal`: free text (suggested values or
    /// not) always; a closed set only exactly one of its values (escapes decoded).
    fn takes(&self, a: &PromptArgument, principal: Principal, value: JsonStr<'_>) -> bool {
        match a.values_taken() {
            Values::Any | Values::Suggested(_) => true,
            Values::Listed(_) | Values::Tools => {
                self.offered(a, principal).any(|v| value.eq_str(v))
            }
        }
    }

    /// `completion/complete` for a prompt's argument: the values it offers the caller that
    /// start with what the user typed (ASCII letters in any case). There are no resource
    /// templates to complete.
    fn complete(
        &self,
        params: Option<Json<'_>>,
        principal: Principal,
        respond: Respond<'_, '_>,
    ) -> usize {
        let (a, typed) = match completed_argument(self.config.prompts, params) {
            Ok(found) => found,
            Err(refused) => return respond.error(ErrorCode::InvalidParams, |w| refused.write(w)),
        };
        let starts = |v: &&str| {
            let mut candidate = v.chars();
            typed
                .chars()
                .all(|t| candidate.next().is_some_and(|c| c.eq_ignore_ascii_case(&t)))
        };
        let total = self.offered(a, principal).filter(starts).count();
        respond.result(|w| {
            w.raw(protocol::COMPLETION_OPEN);
            for (i, v) in self
                .offered(a, principal)
                .filter(starts)
                .take(MAX_COMPLETIONS)
                .enumerate()
            {
                if i > 0 {
                    w.raw(b",");
                }
                w.string(v);
            }
            w.raw(b"]");
            w.raw(protocol::TOTAL);
            w.uint(total as u64);
            w.raw(protocol::HAS_MORE);
            w.bool(total > MAX_COMPLETIONS);
            w.raw(b"}");
        })
    }

    /// `prompts/list`: each prompt with its arguments.
    fn list_prompts(&self, respond: Respond<'_, '_>) -> usize {
        let prompts = self.config.prompts;
        let hints = self.hints(respond.era);
        respond.result(|w| {
            w.raw(protocol::PROMPTS_OPEN);
            for (i, p) in prompts.iter().enumerate() {
                let open = if i > 0 {
                    join!(b",", protocol::NAME_ENTRY)
                } else {
                    protocol::NAME_ENTRY
                };
                write_named(w, open, p.name(), p.describe());
                for (j, a) in p.argument_list().iter().enumerate() {
                    let open = if j > 0 {
                        join!(b"},", protocol::NAME_ENTRY)
                    } else {
                        protocol::ARGUMENTS_OPEN
                    };
                    write_named(w, open, a.name(), a.describe());
                    if a.is_required() {
                        w.raw(protocol::REQUIRED_TRUE);
                    }
                }
                if !p.argument_list().is_empty() {
                    w.raw(b"}]");
                }
                w.raw(b"}");
            }
            w.raw(b"]");
            hints(w);
        })
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
        let Some(&r) = self.live.resources().get(index) else {
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
        let Some(mask) = self.live.mask(uris) else {
            return respond.error_text(ErrorCode::InvalidParams, BAD);
        };
        let raw = id.raw();
        if raw.len() > MAX_ID_LEN {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: id too long")
            });
        }
        if self.live.listens().iter().any(|l| l.is(peer, raw)) {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: a subscription with this id is already open")
            });
        }
        let Some(slot) = self.live.listens_mut().iter_mut().find(|l| l.id.is_none()) else {
            return respond.error(ErrorCode::InternalError, |w| {
                w.text("Device busy: every subscription slot is in use; close one and listen again")
            });
        };
        *slot = Listen {
            id: KeptRaw::NONE,
            peer,
            resources: mask,
            pending: 0,
        };
        // An id is never empty, and its length was checked: the stream is open.
        slot.id.set(raw);
        handled.deferred = true;
        let Respond { out, .. } = respond;
        finish(out, None, "", |w| self.live.acknowledge(w, raw, mask))
    }
}

/// Resource not found: -32002 with `data.uri` before 2026-07-28, -32602 from then on.
fn not_found(respond: Respond<'_, '_>, uri: Option<JsonStr<'_>>) -> usize {
    let code = if respond.era.is_modern() {
        ErrorCode::InvalidParams
    } else {
        ErrorCode::ResourceNotFound
    };
    let data = uri.map(|u| {
        move |w: &mut Writer<'_>| {
            w.raw(protocol::URI_ENTRY);
            w.begin_string();
            w.echo(u, 128, 4);
            w.end_string();
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

/// Writes `open` (which ends in `"name":`), the name, and `,"description":…`: a prompt's or an
/// argument's entry, left open.
fn write_named(w: &mut Writer<'_>, open: &[u8], name: &str, description: &str) {
    w.raw(open);
    w.string(name);
    w.raw(protocol::DESCRIPTION);
    w.string(description);
}

/// Why a `prompts/get` or a `completion/complete` was refused (`-32602`): the message, and the
/// name it is about.
struct Refused<'i> {
    message: &'static str,
    name: Named<'i>,
}

/// The name a [`Refused`] quotes: one the device declared, one the client sent, or none.
enum Named<'i> {
    Declared(&'static str),
    Sent(JsonStr<'i>),
    Nothing,
}

impl<'i> Refused<'i> {
    const fn new(message: &'static str, name: Named<'i>) -> Self {
        Refused { message, name }
    }

    fn write(&self, w: &mut Writer<'_>) {
        w.text(self.message);
        match self.name {
            Named::Declared(n) => w.text(n),
            Named::Sent(n) => {
                if w.decoded(n, 64) {
                    w.text("…");
                }
            }
            Named::Nothing => {}
        }
    }
}

/// The prompt `name` names; `not_a_string` is the refusal when it is not a string.
fn find_prompt<'i>(
    prompts: &'static [Prompt],
    name: Option<Json<'i>>,
    not_a_string: &'static str,
) -> Result<&'static Prompt, Refused<'i>> {
    let name = name
        .and_then(|n| n.as_str())
        .ok_or(Refused::new(not_a_string, Named::Nothing))?;
    prompts
        .iter()
        .find(|p| name.eq_str(p.name()))
        .ok_or(Refused::new(
            "Invalid params: unknown prompt ",
            Named::Sent(name),
        ))
}

/// The prompt `params.name` names, and `params.arguments` checked against its declared
/// arguments: an object of strings, each declared, none twice, each one the argument `takes`,
/// every required one present.
fn prompt_and_arguments<'i>(
    prompts: &'static [Prompt],
    params: Option<Json<'i>>,
    takes: impl Fn(&PromptArgument, JsonStr<'i>) -> bool,
) -> Result<(&'static Prompt, Option<Json<'i>>), Refused<'i>> {
    let [name, arguments] =
        members(params, ["name", "arguments"]).map_err(|m| Refused::new(m, Named::Nothing))?;
    let p = find_prompt(prompts, name, "Invalid params: name must be a string")?;
    let declared = p.argument_list();
    let arguments = arguments.filter(|a| a.kind() != Kind::Null);
    // One bit per declared argument (at most `Prompt::MAX_ARGUMENTS`, 32).
    let mut seen = 0u32;
    if let Some(a) = arguments {
        let members = a.members().ok_or(Refused::new(
            "Invalid params: arguments must be an object",
            Named::Nothing,
        ))?;
        for (key, value) in members {
            let (i, d) = declared
                .iter()
                .enumerate()
                .find(|(_, d)| key.eq_str(d.name()))
                .ok_or(Refused::new(
                    "Invalid params: unknown argument ",
                    Named::Sent(key),
                ))?;
            let bit = 1u32 << i;
            if seen & bit != 0 {
                return Err(Refused::new(
                    "Invalid params: duplicate argument ",
                    Named::Declared(d.name()),
                ));
            }
            let Some(value) = value.as_str() else {
                return Err(Refused::new(
                    "Invalid params: this argument must be a string: ",
                    Named::Declared(d.name()),
                ));
            };
            // A value outside the argument's set is not quoted back: it may be an instruction
            // meant for the model, and some backends speak errors aloud.
            if !takes(d, value) {
                return Err(Refused::new(
                    "Invalid params: not one of the values offered for argument ",
                    Named::Declared(d.name()),
                ));
            }
            seen |= bit;
        }
    }
    match declared
        .iter()
        .enumerate()
        .find(|&(i, d)| d.is_required() && seen & (1u32 << i) == 0)
    {
        Some((_, d)) => Err(Refused::new(
            "Invalid params: missing required argument ",
            Named::Declared(d.name()),
        )),
        None => Ok((p, arguments)),
    }
}

/// Writes the prompt's text (in string mode: escaped) with each `{name}` of a declared argument
/// replaced by the value sent (decoded; nothing for an optional one left out). Any other `{`
/// stays as written.
fn fill(w: &mut Writer<'_>, p: &Prompt, arguments: Option<Json<'_>>) {
    let mut rest = p.text();
    while let Some(open) = rest.find('{') {
        let (literal, from_brace) = rest.split_at(open);
        w.text(literal);
        let after = &from_brace[1..];
        let placeholder = after.find('}').map(|close| after.split_at(close));
        match placeholder {
            Some((name, close)) if p.argument_list().iter().any(|a| a.name() == name) => {
                let value = arguments
                    .and_then(|a| a.members())
                    .and_then(|mut m| m.find(|(k, _)| k.eq_str(name)))
                    .and_then(|(_, v)| v.as_str());
                if let Some(v) = value {
                    w.decoded(v, usize::MAX);
                }
                rest = &close[1..];
            }
            _ => {
                w.text("{");
                rest = after;
            }
        }
    }
    w.text(rest);
}

/// The most values one `completion/complete` answer carries (the spec's limit).
const MAX_COMPLETIONS: usize = 100;

/// The prompt argument a `completion/complete` asks about, and what the user typed so far.
fn completed_argument<'i>(
    prompts: &'static [Prompt],
    params: Option<Json<'i>>,
) -> Result<(&'static PromptArgument, JsonStr<'i>), Refused<'i>> {
    let [reference, argument] =
        members(params, ["ref", "argument"]).map_err(|m| Refused::new(m, Named::Nothing))?;
    let [kind, name] =
        members(reference, ["type", "name"]).map_err(|m| Refused::new(m, Named::Nothing))?;
    let kind = kind.and_then(|k| k.as_str());
    if kind.is_some_and(|k| k.eq_str("ref/resource")) {
        return Err(Refused::new(
            "Invalid params: this device has no resource templates to complete",
            Named::Nothing,
        ));
    }
    if !kind.is_some_and(|k| k.eq_str("ref/prompt")) {
        return Err(Refused::new(
            "Invalid params: ref.type must be \"ref/prompt\"",
            Named::Nothing,
        ));
    }
    let p = find_prompt(prompts, name, "Invalid params: ref.name must be a string")?;
    let [arg, typed] =
        members(argument, ["name", "value"]).map_err(|m| Refused::new(m, Named::Nothing))?;
    let (Some(arg), Some(typed)) = (arg.and_then(|a| a.as_str()), typed.and_then(|t| t.as_str()))
    else {
        return Err(Refused::new(
            "Invalid params: argument.name and argument.value must be strings",
            Named::Nothing,
        ));
    };
    let a = p
        .argument_list()
        .iter()
        .find(|a| arg.eq_str(a.name()))
        .ok_or(Refused::new(
            "Invalid params: unknown argument ",
            Named::Sent(arg),
        ))?;
    Ok((a, typed))
}
