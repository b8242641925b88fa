//! Dispatch: one message is checked and indexed in one pass, sorted into its era
//! ([`classify`](super::refusal::classify)), and routed to its method by name.

use core::cell::Cell;

use super::era::Era;
use super::flow::{Caller, Effects, Flow, Parked};
use super::params::{members, params_object};
use super::refusal::{BAD_LOG_LEVEL, classify};
use super::respond::{Respond, parse_error};
use super::{
    Capacities, HandleError, Handled, Input, LogLevel, MIN_OUT_LEN, Notify, Server, Status,
};
use crate::wire::frame::{Frame, Member};
use crate::wire::json::{Json, JsonError, JsonStr, MAX_DEPTH_LIMIT};
use crate::wire::request::{Message, Request};
use crate::wire::response::ErrorCode;

/// The answer to a message the engine does not read (`e`): -32700. When it is refused only for
/// nesting deeper than [`Config::max_depth`](super::Config::max_depth), it is checked again as
/// deep as the checker can follow ([`MAX_DEPTH_LIMIT`]) — in `frame`, whose index is dispatch's
/// and now unused — only to learn what it is: a request (or an invalid one with an id) gets the
/// error with its id, so that the client can match it; a notification or a client's response,
/// nothing. Anything else gets `id: null`.
#[cold]
#[inline(never)]
fn unreadable<'i>(frame: &mut Frame<'i>, input: &'i [u8], e: JsonError, out: &mut [u8]) -> usize {
    let mut id = None;
    if let JsonError::TooDeep(_) = e {
        *frame = Frame::new();
        if frame.index(input, MAX_DEPTH_LIMIT).is_ok() {
            match frame.message() {
                Message::Request(r) => id = Some(r.id),
                Message::Invalid { id: read, .. } => id = read,
                Message::Notification { .. } | Message::Response => return 0,
            }
        }
    }
    parse_error(out, id, e)
}

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// Dispatches one message: answers it, or (`AWAIT`: a caller that can await, given `park`)
    /// parks an async tool's call there. The blocking path (`AWAIT = false`) is compiled without
    /// the parking code: none of its frames holds room for a parked call.
    ///
    /// A client's response (the answer to a question this engine asked) is acted on here, after
    /// [`dispatch`](Self::dispatch) returned: a confirmed call it releases is dispatched again,
    /// and this way that second dispatch does not sit on the stack below the first one's frame.
    pub(crate) fn begin<'i, const AWAIT: bool>(
        &mut self,
        input: Input<'i>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
        park: Option<&mut Option<Parked<'i, 't, C>>>,
    ) -> Result<Handled<'i>, HandleError> {
        if out.len() < MIN_OUT_LEN {
            return Err(HandleError::OutputTooSmall);
        }
        // A transport that keeps one session per client lends it for this message.
        let own = input
            .session
            .map(|lent| core::mem::replace(&mut self.session, lent));
        let mut handled = match self.dispatch::<AWAIT>(input, out, ctx, notify, park) {
            Some(handled) => handled,
            // (Only a server that can hold a call asks a client anything.)
            #[cfg(feature = "confirm")]
            None if super::confirm::Confirmations::<K>::ON => {
                self.answered::<AWAIT>(&input, ctx, out, notify)
            }
            None => Handled::empty(),
        };
        if let Some(own) = own {
            handled.session = Some(core::mem::replace(&mut self.session, own));
        }
        Ok(handled)
    }

    /// A client's response: an answer to a question this engine asked. A yes runs the call now
    /// on the blocking path (`AWAIT = false`); on the async path the call stays approved and the
    /// next [`poll_async`](Self::poll_async) runs it (its answer is owed: `Handled::deferred`).
    #[cfg(feature = "confirm")]
    #[inline(never)]
    fn answered<'i, const AWAIT: bool>(
        &mut self,
        input: &Input<'_>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> Handled<'i> {
        let mut handled = self.on_response(input, out);
        if self.confirm.approved() {
            if AWAIT {
                handled.deferred = true;
            } else {
                let p = self.run_approved(ctx, out, notify);
                (handled.len, handled.ran, handled.receipt) = (p.len, p.ran, p.receipt);
            }
        }
        handled
    }

    /// Checks and indexes one message and answers it; `None` for a client's response, which
    /// [`begin`](Self::begin) hands to the confirmation code.
    ///
    /// Its frame holds the message's index ([`Frame`]) for the whole dispatch; whatever else is
    /// large and not on every message's path (formatting a parse error, the confirmation code)
    /// is kept out of it.
    #[inline(never)]
    fn dispatch<'i, const AWAIT: bool>(
        &mut self,
        input: Input<'i>,
        out: &mut [u8],
        ctx: &mut C,
        notify: &mut dyn Notify,
        park: Option<&mut Option<Parked<'i, 't, C>>>,
    ) -> Option<Handled<'i>> {
        let Input {
            bytes: input,
            principal,
            stateless,
            peer,
            confirmed,
            ..
        } = input;
        let status = Cell::new(Status::Ok);
        let mut handled = Handled::empty();
        let info = (self.config.name, self.config.version);
        let respond = |out, id, era| Respond {
            out,
            id,
            era,
            info,
            status: &status,
        };
        // One pass checks the whole message and indexes what dispatch reads.
        let mut frame = Frame::new();
        if let Err(e) = frame.index(input, self.config.max_depth) {
            handled.len = unreadable(&mut frame, input, e, out);
            return Some(handled);
        }
        handled.len = match frame.message() {
            #[cfg(feature = "resources")]
            Message::Notification { method, params }
                if method.eq_str("notifications/cancelled") =>
            {
                self.on_cancelled(peer, params);
                0
            }
            // A client's response: the answer to a question this engine asked, if any.
            Message::Response => return None,
            Message::Notification { .. } => 0,
            Message::Invalid { id, why } => respond(out, id, Era::Legacy)
                .error(ErrorCode::InvalidRequest, |w| w.text(why.message())),
            Message::Request(req) => {
                let frame = &frame;
                let (era, refusal) = classify(frame, stateless);
                handled.modern = era.is_modern();
                let respond = respond(out, Some(req.id), era);
                match refusal {
                    Some(refusal) => refusal.answer(respond),
                    None => {
                        let caller = Caller {
                            principal,
                            peer,
                            raw: input,
                            confirmed,
                        };
                        let mut effects = Effects {
                            ctx,
                            notify,
                            handled: &mut handled,
                            park,
                        };
                        let flow = self.request::<AWAIT>(req, frame, caller, respond, &mut effects);
                        match flow {
                            Flow::Len(len) => {
                                handled.deferred = handled.deferred || len == 0;
                                len
                            }
                            Flow::Parked => 0,
                        }
                    }
                }
            }
        };
        handled.status = status.get();
        Some(handled)
    }

    /// Routes a request to its method: find the method (unknown: -32601), check that `params`
    /// is an object, and run it.
    #[inline(never)]
    fn request<'i, const AWAIT: bool>(
        &mut self,
        req: Request<'i>,
        frame: &Frame<'i>,
        caller: Caller<'i>,
        respond: Respond<'_, 'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
    ) -> Flow {
        let escaped = frame.has_escapes(Member::Method);
        let Some((method, route)) = self.route(req.method, escaped, respond.era) else {
            return Flow::Len(respond.error(ErrorCode::MethodNotFound, |w| {
                w.text("Method not found: ");
                w.echo(req.method, 64, 3);
            }));
        };
        let params = match params_object(&req) {
            Ok(p) => p,
            Err(msg) => return Flow::Len(respond.error_text(ErrorCode::InvalidParams, msg)),
        };
        Flow::Len(match route {
            Route::Call => return self.call::<AWAIT>(req.id, frame, caller, effects, respond),
            Route::Ping => respond.result(|_| {}),
            Route::List => self.list(params, caller.principal, respond),
            Route::Initialize => self.initialize(params, respond, &mut effects.handled.event),
            #[cfg(feature = "modern")]
            Route::Discover => self.discover(respond),
            Route::SetLevel => self.set_level(params, respond),
            #[cfg(feature = "resources")]
            Route::Resources => {
                let Effects { ctx, handled, .. } = effects;
                self.resources(method, params, caller, ctx, respond, handled)
            }
            // Tasks (and, without the features, what is never offered).
            _ => self.task_method(method, params, respond, effects.ctx, caller.peer),
        })
    }

    /// The method named `name` on this wire, if this server offers it. Names are unique in each
    /// era: the name is compared as bytes unless it was sent with escapes; a resource or prompt
    /// method is then asked whether it is offered.
    #[inline(always)]
    fn route(
        &self,
        name: JsonStr<'_>,
        escaped: bool,
        era: Era<'_>,
    ) -> Option<(&'static str, Route)> {
        let find = |table: &'static [(&'static str, Route)]| {
            table.iter().copied().find(|(n, _)| match escaped {
                false => name.raw() == n.as_bytes(),
                true => name.eq_str(n),
            })
        };
        let (methods, tasks) = match era {
            Era::Modern(_) => (routes::MODERN, routes::MODERN_TASKS),
            Era::Legacy => (routes::LEGACY, routes::LEGACY_TASKS),
        };
        let known = find(methods);
        #[cfg(feature = "resources")]
        let known = known.or_else(|| {
            let (shared, own) = match era {
                Era::Modern(_) => (routes::RESOURCES, routes::MODERN_LISTEN),
                Era::Legacy => (routes::RESOURCES, routes::LEGACY_SUBSCRIBE),
            };
            find(shared)
                .or_else(|| find(own))
                .filter(|&(n, _)| self.offers_resources(n))
        });
        known.or_else(|| if K::TASKS > 0 { find(tasks) } else { None })
    }

    /// `logging/setLevel`: the level the client's log messages start at. (Not inlined: its
    /// lookup is not in the frame every `tools/call` is routed through.)
    #[inline(never)]
    fn set_level(&mut self, params: Option<Json<'_>>, respond: Respond<'_, '_>) -> usize {
        let level = members(params, ["level"])
            .map(|[l]| l.and_then(|l| l.as_str()).and_then(LogLevel::parse));
        match level {
            Ok(Some(level)) => {
                self.session.log_level = Some(level);
                respond.result(|_| {})
            }
            _ => respond.error_text(ErrorCode::InvalidParams, BAD_LOG_LEVEL),
        }
    }

    /// `false` for a `resources/*` or `prompts/*` method when there are no resources or prompts,
    /// and for the subscription methods without live resources. (Without the feature
    /// `resources` these methods are not in the method tables.)
    #[cfg(feature = "resources")]
    fn offers_resources(&self, method: &str) -> bool {
        let (resources, prompts, live) = (
            !self.config.resources.is_empty() || self.has_live_resources(),
            !self.config.prompts.is_empty(),
            self.has_live_resources(),
        );
        let subscription = matches!(
            method,
            "resources/subscribe" | "resources/unsubscribe" | "subscriptions/listen"
        );
        (resources || !method.starts_with("resources/"))
            && (prompts || !method.starts_with("prompts/"))
            && (live || !subscription)
            && (method != "completion/complete" || self.completes())
    }

    /// `true` when a prompt has arguments: `completion/complete` is offered for them.
    #[cfg(feature = "resources")]
    pub(super) fn completes(&self) -> bool {
        self.config
            .prompts
            .iter()
            .any(|p| !p.argument_list().is_empty())
    }
}

/// What [`Server::request`] does with a method it knows, found with its name (the name is not
/// compared again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Call,
    Ping,
    List,
    Initialize,
    Discover,
    SetLevel,
    Task,
    #[cfg(feature = "resources")]
    Resources,
}

/// The methods of each wire, the hottest first (a call, a ping, a listing). A method this build
/// cannot serve is not in its tables (without the feature `resources`, without a task table): it
/// is unknown there, as it would be refused anyway. (Short tables, searched one after the other:
/// the compiler unrolls the search of a short constant table into compares against constants,
/// which a single table of every method lost, 35–40 instructions on `ping`.)
mod routes {
    use super::Route;

    pub(super) const LEGACY: &[(&str, Route)] = &[
        ("tools/call", Route::Call),
        ("ping", Route::Ping),
        ("tools/list", Route::List),
        ("initialize", Route::Initialize),
        ("logging/setLevel", Route::SetLevel),
    ];
    pub(super) const MODERN: &[(&str, Route)] = &[
        ("tools/call", Route::Call),
        ("tools/list", Route::List),
        ("server/discover", Route::Discover),
    ];
    /// Resources and prompts, on both wires.
    #[cfg(feature = "resources")]
    pub(super) const RESOURCES: &[(&str, Route)] = &[
        ("resources/list", Route::Resources),
        ("resources/templates/list", Route::Resources),
        ("resources/read", Route::Resources),
        ("prompts/list", Route::Resources),
        ("prompts/get", Route::Resources),
        ("completion/complete", Route::Resources),
    ];
    /// Subscriptions: a legacy session subscribes; a 2026-07-28 client listens.
    #[cfg(feature = "resources")]
    pub(super) const LEGACY_SUBSCRIBE: &[(&str, Route)] = &[
        ("resources/subscribe", Route::Resources),
        ("resources/unsubscribe", Route::Resources),
    ];
    #[cfg(feature = "resources")]
    pub(super) const MODERN_LISTEN: &[(&str, Route)] =
        &[("subscriptions/listen", Route::Resources)];
    pub(super) const LEGACY_TASKS: &[(&str, Route)] = &[
        ("tasks/get", Route::Task),
        ("tasks/result", Route::Task),
        ("tasks/list", Route::Task),
        ("tasks/cancel", Route::Task),
    ];
    pub(super) const MODERN_TASKS: &[(&str, Route)] = &[
        ("tasks/get", Route::Task),
        ("tasks/update", Route::Task),
        ("tasks/cancel", Route::Task),
    ];
}
