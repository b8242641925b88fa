//! `tools/call`: look up, refuse by audience, replay retransmissions, validate, run, render.

use super::cache::{Seen, call_key};
#[cfg(feature = "confirm")]
use super::confirm::Gate;
use super::tasks::{MAX_PROGRESS_TOKEN_LEN, NewTask, TaskForm};
use super::{
    Caller, Capacities, Effects, Era, Handled, LogLevel, Notify, Principal, Respond, Revision,
    Server, UserToolPolicy, finish, members, once, write_result_object,
};
use crate::fmt::debug;
use crate::registry::{Audience, TaskSupport, Tool};
use crate::result::{Output, ToolError, Value, render_result, render_result_for};
use crate::schema::{Args, validate_into, validate_object};
use crate::wire::frame::{Frame, Member};
use crate::wire::json::{Integer, Json, Kind};
use crate::wire::protocol;
use crate::wire::request::Id;
use crate::wire::response::{ErrorCode, error_into, write_error_dyn};
use crate::wire::writer::Writer;
use crate::{Reply, ToolResult};

/// A validated `tools/call` whose handler has not run yet: what the handler needs, and what the
/// answer needs afterwards. The output buffer is not in it: it goes back to the caller, who lends
/// it again to run the handler and to render the answer.
pub(crate) struct Parked<'i, 't, C> {
    args: Args<'i>,
    tail: Tail<'i, 't, C>,
}

/// The parked call without its arguments: what the reply and the answer need.
struct Tail<'i, 't, C> {
    info: (&'static str, &'static str),
    id: Id<'i>,
    era: Era<'i>,
    tool: &'t Tool<C>,
    index: usize,
    /// The handler's scratch area is `out[..room]`; escaped string arguments are decoded
    /// into `out[room..]`.
    room: usize,
    key: Option<u64>,
    augmented: bool,
    ttl_ms: Option<u64>,
    token: Option<Json<'i>>,
    log_level: Option<LogLevel>,
    principal: Principal,
    /// The client that made the call.
    peer: super::Peer,
}

/// Decodes the escaped string arguments into the tail of `out` (from `room` on); returns the
/// scratch area in front and the arguments, now borrowing the decoded strings too.
fn split<'a>(args: Args<'a>, room: usize, out: &'a mut [u8]) -> Option<(&'a mut [u8], Args<'a>)> {
    let (scratch, decoded) = out.split_at_mut(room.min(out.len()));
    let mut args = args;
    // `room` leaves exactly the bytes the decoding needs.
    args.decode_escapes(decoded).then_some((scratch, args))
}

/// What dispatching a message came to: an answer of this length, or an async tool's call
/// parked in the caller's slot, waiting for its handler.
pub(crate) enum Flow {
    Len(usize),
    Parked,
}

/// A call of an async tool, handed to the handler that [`Server::handle_async`] awaits.
#[derive(Debug)]
#[non_exhaustive]
pub struct Call<'a, 's> {
    /// The tool's name: match on it to pick the async function to await.
    pub tool: &'static str,
    /// The arguments, validated against the tool's schema.
    pub args: &'a Args<'s>,
    /// The reply: scratch text and JSON, progress, log messages, who is calling.
    pub reply: &'a mut Reply<'s>,
}

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// `tools/call`. A blocking tool runs here; an async one is parked in `park` when the caller
    /// can await it (`AWAIT`), and refused otherwise.
    // Not inlined into `Server::request`: its frame would be under every handler.
    #[inline(never)]
    pub(super) fn call<'i, const AWAIT: bool>(
        &mut self,
        id: Id<'i>,
        frame: &Frame<'i>,
        caller: Caller,
        respond: Respond<'_, 'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
    ) -> Flow {
        // Validated where the handler reads them: the arguments are not moved on the blocking
        // path (a parked call takes them along).
        let mut args = Args::empty();
        match self.prepare(id, frame, caller, respond, effects, &mut args) {
            Prepared::Answered(len) => Flow::Len(len),
            Prepared::Ready(tail, out) => match tail.tool.handler() {
                Some(handler) => Flow::Len(self.run_blocking(&args, &tail, handler, out, effects)),
                None => match effects.park.take().filter(|_| AWAIT) {
                    Some(park) => {
                        *park = Some(Parked { args, tail });
                        Flow::Parked
                    }
                    // `prepare` refuses an async tool when the caller cannot await it.
                    None => Flow::Len(0),
                },
            },
        }
    }

    /// Runs a parked call's blocking handler and renders its answer. (Not inlined, nor is
    /// [`prepare`](Self::prepare): each frame is on the stack only while it runs, not both of
    /// them under the handler.)
    #[inline(never)]
    fn run_blocking(
        &mut self,
        args: &Args<'_>,
        tail: &Tail<'_, 't, C>,
        handler: crate::Handler<C>,
        out: &mut [u8],
        effects: &mut Effects<'_, '_, 't, C>,
    ) -> usize {
        let seq = self.next_seq();
        // Arguments without escaped strings are used where they are; others are copied and
        // decoded into the tail of `out` (`room` leaves exactly the bytes that needs), in a frame
        // of their own: the copy is not on the stack under every other call.
        let (result, used) = match args.escaped_len() {
            0 => {
                let (scratch, _) = out.split_at_mut(tail.room.min(out.len()));
                self.invoke(handler, args, tail, scratch, seq, effects)
            }
            _ => self.invoke_decoded(handler, args, tail, out, seq, effects),
        };
        self.conclude(tail, result, Scratch { used, seq }, out, effects.handled)
    }

    /// Runs the handler over `scratch`; the result and the scratch bytes it wrote.
    #[inline(always)]
    fn invoke(
        &self,
        handler: crate::Handler<C>,
        args: &Args<'_>,
        tail: &Tail<'_, 't, C>,
        scratch: &mut [u8],
        seq: u32,
        effects: &mut Effects<'_, '_, 't, C>,
    ) -> (ToolResult, usize) {
        let mut reply = self.reply(scratch, tail, seq, &mut *effects.notify);
        let result = handler(effects.ctx, args, &mut reply);
        (result, reply.used())
    }

    /// [`invoke`](Self::invoke) with a copy of the arguments whose escaped strings are decoded
    /// into the tail of `out` (from `room` on), the handler's scratch area in front. (Not
    /// inlined: see [`run_blocking`](Self::run_blocking).)
    #[inline(never)]
    fn invoke_decoded(
        &self,
        handler: crate::Handler<C>,
        args: &Args<'_>,
        tail: &Tail<'_, 't, C>,
        out: &mut [u8],
        seq: u32,
        effects: &mut Effects<'_, '_, 't, C>,
    ) -> (ToolResult, usize) {
        let (scratch, decoded) = out.split_at_mut(tail.room.min(out.len()));
        let mut copy = args.clone();
        if !copy.decode_escapes(decoded) {
            return (Err(ToolError::new("Arguments could not be decoded")), 0);
        }
        self.invoke(handler, &copy, tail, scratch, seq, effects)
    }

    /// [`Server::handle_async`]: the message is dispatched now, as by the blocking path, and an
    /// async tool's call parked; the returned future only awaits its handler and renders the
    /// answer.
    ///
    /// The future is what a firmware's executor keeps while the handler waits, so its size is
    /// task RAM (or dispatch stack): the dispatch runs before it exists, and the parked call's
    /// arguments are kept once (the pattern below moves them out of the parked call before
    /// anything is awaited).
    pub(super) fn dispatch_async<'a, 'i, F>(
        &'a mut self,
        input: super::Input<'i>,
        ctx: &'a mut C,
        out: &'a mut [u8],
        notify: &'a mut dyn Notify,
        mut run: F,
    ) -> impl core::future::Future<Output = Result<Handled<'i>, super::HandleError>>
    where
        F: AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
    {
        let mut parked = None;
        let begun = self.begin::<true>(input, ctx, out, notify, Some(&mut parked));
        async move {
            let mut handled = begun?;
            if let Some(parked) = parked {
                handled.len = self
                    .run_parked(parked, ctx, out, notify, &mut run, &mut handled)
                    .await;
            }
            // (A client's yes to a call it was asked about leaves the call approved: the next
            // `poll_async` runs it, where an async tool can be awaited and its answer goes to
            // the client. Running it here would make this future, which a firmware keeps while
            // every handler waits, as large as a second dispatch.)
            Ok(handled)
        }
    }

    /// Awaits a parked call's handler and renders its answer into `out`. The arguments are moved
    /// out of the parked call before anything is awaited: the future keeps them once.
    async fn run_parked<F>(
        &mut self,
        parked: Parked<'_, 't, C>,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
        run: &mut F,
        handled: &mut Handled<'_>,
    ) -> usize
    where
        F: AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
    {
        let Parked { args, tail } = parked;
        let seq = self.next_seq();
        let (result, used) = match split(args, tail.room, out) {
            Some((scratch, args)) => {
                let mut reply = self.reply(scratch, &tail, seq, notify);
                let call = Call {
                    tool: tail.tool.name(),
                    args: &args,
                    reply: &mut reply,
                };
                let result = run(ctx, call).await;
                (result, reply.used())
            }
            None => (Err(ToolError::new("Arguments could not be decoded")), 0),
        };
        self.conclude(&tail, result, Scratch { used, seq }, out, handled)
    }

    /// Runs a call a person approved through the async path: a blocking tool runs as usual, an
    /// async one is awaited through `run`. What goes to its owner is at the start of `out`.
    #[cfg(feature = "confirm")]
    pub(super) async fn run_approved_async<F>(
        &mut self,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
        run: &mut F,
    ) -> super::Polled
    where
        F: AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
    {
        let approved = match self.take_approved(out) {
            None => return super::Polled::NONE,
            Some(Err(refused)) => return refused,
            Some(Ok(a)) => a,
        };
        let (head, tail) = out.split_at_mut(approved.at());
        let mut parked = None;
        let input = approved.input(tail);
        let mut handled = self
            .begin::<true>(input, ctx, head, notify, Some(&mut parked))
            .unwrap_or(Handled::empty());
        if let Some(parked) = parked {
            handled.len = self
                .run_parked(parked, ctx, head, notify, run, &mut handled)
                .await;
        }
        let done = (handled.len, handled.ran, handled.receipt);
        Self::after_approved(&approved, out, done)
    }

    pub(super) fn next_seq(&mut self) -> u32 {
        self.call_seq = self.call_seq.wrapping_add(1);
        self.call_seq
    }

    /// The handler's reply over `scratch`.
    fn reply<'s>(
        &'s self,
        scratch: &'s mut [u8],
        tail: &Tail<'s, 't, C>,
        seq: u32,
        notify: &'s mut dyn Notify,
    ) -> Reply<'s> {
        let reply = Reply::new(scratch, tail.principal, seq)
            .with_peer(tail.peer)
            .with_reserve(envelope_len(tail.id, tail.era, tail.info));
        let reply = if K::TASKS > 0 {
            reply.with_tasks(&self.tasks)
        } else {
            reply
        };
        reply.with_notify(notify, tail.token, tail.log_level)
    }

    /// Everything before the handler runs: lookup, audience, capability, task form, the
    /// retransmission cache, validation (into `args`), room for decoded strings, a free task
    /// slot.
    #[inline(never)]
    fn prepare<'o, 'i>(
        &mut self,
        id: Id<'i>,
        frame: &Frame<'i>,
        caller: Caller,
        respond: Respond<'o, 'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
        args: &mut Args<'i>,
    ) -> Prepared<'o, 'i, 't, C> {
        // An async tool can be awaited where its call can be parked.
        let (handled, can_await) = (&mut *effects.handled, effects.park.is_some());
        let answered = Prepared::Answered;
        let principal = caller.principal;
        // The checking pass recorded these members of `params` (an object, or absent).
        let found = [Member::Name, Member::Arguments, Member::Task, Member::Meta];
        let Some([name, arguments, task, _]) = once(found.map(|m| frame.get(m))) else {
            return answered(
                respond.error_text(ErrorCode::InvalidParams, "Invalid params: duplicate member"),
            );
        };
        let Some(name) = name.and_then(|n| n.as_str()) else {
            return answered(respond.error_text(
                ErrorCode::InvalidParams,
                "Invalid params: tools/call needs a tool name (a string)",
            ));
        };
        // `arguments` that is not an object (an array, a string) is a malformed request, on every
        // revision, as the official SDK servers answer it. A tool result with `isError` is for an
        // object that does not satisfy the tool's schema. `null` counts as absent.
        if arguments.is_some_and(|a| !matches!(a.kind(), Kind::Object | Kind::Null)) {
            return answered(respond.error_text(
                ErrorCode::InvalidParams,
                "Invalid params: arguments must be an object",
            ));
        }
        let Some(index) = self
            .registry
            .position(name, frame.has_escapes(Member::Name))
        else {
            return answered(respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Unknown tool: ");
                w.decoded(name, 128);
            }));
        };
        let Some(tool) = self.registry.get(index) else {
            return answered(0);
        };
        if tool.audience() == Audience::User
            && principal == Principal::Model
            && self.config.user_tools == UserToolPolicy::Enforce
        {
            debug!("refused user-only tool {} for the model", tool.name());
            return answered(respond.error_parts(
                ErrorCode::InvalidParams,
                &[
                    "Tool ",
                    tool.name(),
                    " is only available to the user, not to the model",
                ],
            ));
        }

        if let (Era::Modern(m), Some(cap)) = (respond.era, tool.required_client_capability())
            && !m
                .caps
                .and_then(|c| c.members())
                .is_some_and(|mut c| c.any(|(k, _)| k.eq_str(cap)))
        {
            return answered(respond.error_with(
                ErrorCode::MissingRequiredClientCapability,
                |w| {
                    w.text("Missing required client capability: ");
                    w.text(cap);
                },
                Some(|w: &mut Writer<'_>| {
                    w.raw(protocol::REQUIRED_CAPABILITIES_OPEN);
                    w.string(cap);
                    w.raw(b":{}}}");
                }),
            ));
        }

        // Task augmentation. Legacy (2025-11-25): the client asks with `params.task`. 2026-07-28:
        // the server decides, for clients that declare the tasks extension; `params.task` is ignored.
        let era = respond.era;
        let (augmented, ttl_ms) = match era {
            Era::Modern(m) => (m.tasks && tool.task_hooks().is_some(), None),
            Era::Legacy => {
                let augmented = K::TASKS > 0 && task.is_some();
                match task.filter(|_| K::TASKS > 0).map(task_ttl) {
                    Some(Err(msg)) => {
                        return answered(respond.error_text(ErrorCode::InvalidParams, msg));
                    }
                    Some(Ok(ttl)) => (augmented, ttl),
                    None => (augmented, None),
                }
            }
        };
        // (Without a task table no tool with task hooks is registered: every tool forbids tasks
        // and no call is augmented, so there is nothing to refuse here.)
        match (tool.task_support(), augmented, era) {
            _ if K::TASKS == 0 => {}
            (TaskSupport::Required, false, Era::Modern(_)) => {
                return answered(respond.error_with(
                    ErrorCode::MissingRequiredClientCapability,
                    |w| w.text("Missing required client capability: this tool runs only as a task"),
                    Some(|w: &mut Writer<'_>| {
                        w.raw(protocol::REQUIRES_TASKS);
                    }),
                ));
            }
            (TaskSupport::Forbidden, true, Era::Legacy)
            | (TaskSupport::Required, false, Era::Legacy) => {
                let why = if augmented {
                    " does not support task-augmented calls"
                } else {
                    " must be called as a task (params.task)"
                };
                return answered(
                    respond.error_parts(ErrorCode::MethodNotFound, &["Tool ", tool.name(), why]),
                );
            }
            _ => {}
        }

        // Arguments are checked before the retransmission cache is consulted: a call that does not
        // satisfy the schema never ran, so it can never be answered from the cache.
        let checked = match tool.raw_input_schema() {
            Some(_) => validate_raw(arguments, args),
            // From the members the checking pass recorded (walked again only past its table).
            None => validate_into(args, tool.param_specs(), arguments, Some(frame)),
        };
        if let Err(e) = checked {
            debug!("refused arguments for {}", tool.name());
            // The handler does not run. The revision decides how the refusal is reported.
            if era.is_modern() || self.effective_revision().reports_validation_as_tool_error() {
                return answered(respond.result(|w| {
                    w.open_string(protocol::FIRST_TEXT_OPEN);
                    e.write_json(w);
                    w.close_string(protocol::FIRST_TEXT_END_FAILED);
                }));
            }
            return answered(respond.error(ErrorCode::InvalidParams, |w| e.write_json(w)));
        }

        // The retransmission scope (see `cache`): the peer; on the 2026-07-28 wire the peer and
        // the client's idempotency key, and without a key no scope (a stateless request is
        // never recognised as a retransmission).
        let peer = caller.peer.get();
        let scope: Option<&[u8]> = match era {
            Era::Legacy => Some(b""),
            Era::Modern(m) => m.idempotency_key.map(|k| k.raw()),
        };
        // Only actions are remembered: a read-only tool is answered afresh every time.
        let key = scope.filter(|_| !tool.is_read_only()).map(|scope| {
            // The tool and the call form in one word: index, task-augmented, 2026-07-28.
            let form = (index as u64) << 2 | u64::from(augmented) << 1 | u64::from(era.is_modern());
            call_key(
                [peer, form],
                &[scope, id.raw(), arguments.map_or(b"", |a| a.raw())],
            )
        });
        let cached = match key {
            Some(key) => self.cache.get(key),
            None => None,
        };
        if let Some((receipt, delivery, seen)) = cached {
            handled.replay = Some(delivery);
            handled.receipt = Some(receipt);
            let seen = match seen {
                Seen::Replay(bytes) => match respond.out.get_mut(..bytes.len()) {
                    Some(dst) => {
                        debug!(
                            "retransmission of a {} call answered from the cache",
                            tool.name()
                        );
                        dst.copy_from_slice(bytes);
                        return answered(bytes.len());
                    }
                    None => Seen::Replay(&[]),
                },
                Seen::Executed => Seen::Executed,
                Seen::Task(task) => Seen::Task(task),
            };
            return answered(self.replay(seen, tool.name(), id, respond));
        }

        // String arguments sent with escape sequences are decoded into the tail of the output
        // buffer while the handler runs (nothing is allocated); the handler's scratch area is
        // what remains in front.
        let Some(room) = respond.out.len().checked_sub(args.escaped_len()) else {
            const TOO_LONG: &str = "Arguments too long: the string arguments with escape \
                sequences do not fit the device's buffer once decoded; the tool did not run";
            return answered(
                respond.result(|w| render_result(w, &Err(ToolError::new(TOO_LONG)), &[], 0, None)),
            );
        };

        // Registration refuses long-running tools when `K::TASKS == 0`; saying so here lets the
        // compiler drop the task code from such a server.
        let long_running = tool.task_hooks().copied().filter(|_| K::TASKS > 0);
        if long_running.is_some() && !self.tasks.has_room() {
            // Refused before the handler runs: nothing is started that could not be tracked.
            const BUSY: &str =
                "Device busy: every task slot holds a running action; nothing was started";
            if augmented {
                return answered(respond.error_text(ErrorCode::InternalError, BUSY));
            }
            return answered(
                respond.result(|w| render_result(w, &Err(ToolError::new(BUSY)), &[], 0, None)),
            );
        }

        // An async tool needs a caller that can await its handler.
        if tool.handler().is_none() && !can_await {
            const NEEDS_ASYNC: &str = "Tool bug: this tool's handler is async; the firmware must \
                serve it with Server::handle_async (and poll with Server::poll_async); the tool \
                did not run";
            return answered(
                respond
                    .result(|w| render_result(w, &Err(ToolError::new(NEEDS_ASYNC)), &[], 0, None)),
            );
        }

        // A person's yes, where the tool asks for one (after every other check: a call that is
        // held or asked about would otherwise run). Only where `HOLD > HOLD_RECORD`: registration refuses
        // such a tool otherwise, and this lets the compiler drop the confirmation code from a
        // server that holds nothing.
        #[cfg(feature = "confirm")]
        let respond = match tool
            .confirmation()
            .filter(|c| super::confirm::Confirmations::<K>::ON && c.applies(args))
        {
            None => respond,
            Some(confirm) => {
                let params = once([frame.get(Member::Params)]).and_then(|[p]| p);
                match self.confirm_gate(confirm, index, arguments, params, &caller, respond) {
                    Gate::Pass(respond) => respond,
                    Gate::Answered(len) => return answered(len),
                    Gate::Asked(len) => {
                        handled.deferred = true;
                        return answered(len);
                    }
                }
            }
        };

        let (token, log_level) = match era {
            Era::Modern(m) => (m.progress_token, m.log_level),
            Era::Legacy => (
                progress_token(frame),
                self.session.log_level.or(self.config.log_level),
            ),
        };
        let Respond { out, info, .. } = respond;
        Prepared::Ready(
            Tail {
                info,
                id,
                era,
                tool,
                index,
                room,
                key,
                augmented,
                ttl_ms,
                token,
                log_level,
                principal,
                peer: caller.peer,
            },
            out,
        )
    }

    /// Answers a retransmission of a call that already ran whose remembered bytes do not fit
    /// `respond`'s buffer, or from the task table. (Not inlined: its writer stays out of [`prepare`](Self::prepare)'s frame, which is on the
    /// stack under validation.)
    #[inline(never)]
    fn replay(&self, seen: Seen<'_>, tool: &str, id: Id<'_>, respond: Respond<'_, '_>) -> usize {
        match seen {
            // (The remembered bytes that fit were copied by the caller.)
            Seen::Replay(_) => respond.error_text(
                ErrorCode::InternalError,
                "Retransmission of a call that already ran; its response does not fit this buffer",
            ),
            // (A server without a task table starts no task, so it remembers none: no task code
            // is linked for it.)
            Seen::Task(task) if K::TASKS > 0 => {
                debug!(
                    "retransmission of a {} call answered from the task table",
                    tool
                );
                let Respond { out, info, era, .. } = respond;
                finish(out, Some(id), "; the tool did run", |w| {
                    if !self.replay_start(task, id, era, info, w) {
                        let mut gone = |w: &mut Writer<'_>| {
                            w.text(
                                "Retransmission of a call that already ran; its task has expired",
                            );
                        };
                        write_error_dyn(w, Some(id), ErrorCode::InternalError, &mut gone);
                    }
                })
            }
            Seen::Executed | Seen::Task(_) => respond.error_text(
                ErrorCode::InternalError,
                "Retransmission of a call that already ran; its response is too large to replay",
            ),
        }
    }

    /// Everything after the handler ran: the cache, a task start or the rendered result.
    fn conclude(
        &mut self,
        tail: &Tail<'_, 't, C>,
        mut result: ToolResult,
        scratch: Scratch,
        out: &mut [u8],
        handled: &mut Handled<'_>,
    ) -> usize {
        let &Tail {
            info,
            id,
            era,
            tool,
            index,
            key,
            augmented,
            ttl_ms,
            token,
            peer,
            ..
        } = tail;
        // Registration refuses long-running tools when `K::TASKS == 0`; saying so here lets the
        // compiler drop the task code from such a server.
        let long_running = tool.task_hooks().copied().filter(|_| K::TASKS > 0);
        // The handler ran: whatever was remembered about this tool may no longer be true.
        handled.ran = Some(tool.name());
        if !tool.is_read_only() {
            self.cache.touch(index);
        }
        if long_running.is_none()
            && matches!(
                result,
                Ok(Output {
                    value: Value::Task(_),
                    ..
                })
            )
        {
            result = Err(ToolError::new(
                "Tool bug: Output::task from a tool that is not long-running",
            ));
        }
        let len = match long_running {
            Some(hooks)
                if augmented
                    || matches!(
                        result,
                        Ok(Output {
                            value: Value::Task(_),
                            ..
                        })
                    ) =>
            {
                let legacy_error =
                    !era.is_modern() && self.effective_revision() == Revision::V2024_11_05;
                let new = NewTask {
                    tool: index,
                    tool_name: tool.name(),
                    form: match era {
                        Era::Modern(_) if augmented => TaskForm::Extension,
                        Era::Legacy if augmented => TaskForm::Legacy,
                        _ => TaskForm::Plain,
                    },
                    ttl_ms,
                    token,
                    timeout_ms: hooks.timeout_ms,
                    peer,
                    error_member: legacy_error,
                };
                // A client that can follow no task (a xiaozhi backend hands the model only the
                // call's answer) hears the outcome in the call's own answer when it comes within
                // the budget: the answer is held back until the task ends.
                let budget = self.config.hold_answer_ms;
                let hold = !augmented
                    && !era.is_modern()
                    && budget > 0
                    && !tool.answers_at_once()
                    && !self.session.tasks()
                    && matches!(
                        result,
                        Ok(Output {
                            value: Value::Task(_),
                            ..
                        })
                    );
                if hold {
                    let task = self.start_held(new, result, id, budget);
                    if let Some(key) = key {
                        handled.receipt = self.cache.put_task(key, index, task);
                    }
                    return 0;
                }
                let mut started = None;
                let len = finish(out, Some(id), "; the tool did run", |w| {
                    started = self.start_task(new, result, id, era, info, w);
                });
                // A retransmission gets the original bytes when they fit a cache slot; a larger
                // task-start answer is re-rendered from the task table, so that the client still
                // learns its task id.
                if let (Some(task), Some(key)) = (started, key) {
                    handled.receipt =
                        match out.get(..len).filter(|sent| sent.len() <= K::CACHE_BYTES) {
                            Some(sent) => self.cache.put(key, index, sent),
                            None => self.cache.put_task(key, index, task),
                        };
                    return len;
                }
                len
            }
            _ => {
                // xiaozhi backends (2024-11-05) read a failed call's reason from `error`.
                let legacy_error =
                    !era.is_modern() && self.effective_revision() == Revision::V2024_11_05;
                render_call(tail, legacy_error, &result, scratch, out)
            }
        };
        if let (Some(sent), Some(key)) = (out.get(..len), key) {
            handled.receipt = self.cache.put(key, index, sent);
        }
        len
    }
}

/// What [`Server::prepare`] came to: an answer already written, or a call ready to run, with the
/// output buffer handed back.
#[allow(
    clippy::large_enum_variant,
    reason = "no allocator to box into; the parked call is built once, in the caller's frame"
)]
enum Prepared<'o, 'i, 't, C> {
    Answered(usize),
    Ready(Tail<'i, 't, C>, &'o mut [u8]),
}

/// What a handler wrote in its scratch area: `used` bytes, at the start of the output buffer,
/// in call `seq` (the spans of its result are of that call).
#[derive(Clone, Copy)]
struct Scratch {
    used: usize,
    seq: u32,
}

/// Renders a handler's result, for the call of `tail`, in front of the scratch bytes it wrote.
fn render_call<C>(
    tail: &Tail<'_, '_, C>,
    legacy_error: bool,
    result: &ToolResult,
    scratch: Scratch,
    out: &mut [u8],
) -> usize {
    let Scratch { used, seq } = scratch;
    let &Tail { id, era, info, .. } = tail;
    // Move the scratch bytes to the end of the buffer and render the response in front.
    let tail = out.len().saturating_sub(used);
    if used > 0 {
        out.copy_within(..used.min(out.len()), tail);
    }
    let (head, scratch) = out.split_at_mut(tail);
    let len = finish(head, Some(id), "; the tool did run", |w| {
        write_result_object(w, id, era, info, "complete", |w| {
            render_result_for(w, result, scratch, seq, None, legacy_error)
        });
    });
    if len > 0 {
        return len;
    }
    // Not even the short error fits in front of the scratch bytes: use the whole buffer.
    let mut msg = |w: &mut Writer<'_>| {
        w.text("Response too large for the device's output buffer; the tool did run")
    };
    error_into(out, Some(id), ErrorCode::InternalError, &mut msg)
}

/// The bytes of a `tools/call` answer around its content blocks, which
/// [`Reply::content_room`] keeps free: `{"jsonrpc":"2.0","id":ID,"result":{"content":[` …
/// `],"isError":false}}`, and on 2026-07-28 the `resultType` and the server identity (its name and
/// version counted as they are: plain text, no escapes).
fn envelope_len(id: Id<'_>, era: Era<'_>, info: (&str, &str)) -> usize {
    const LEGACY: usize = protocol::RESPONSE_HEAD.len()
        + protocol::RESULT_OPEN.len()
        + protocol::CONTENT_OPEN.len()
        + b"]".len()
        + protocol::IS_ERROR_FALSE.len()
        + b"}}".len();
    // `,"resultType":"complete"`, `,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"…"`,
    // `,"version":"…"}}`
    const MODERN: usize = protocol::RESULT_TYPE.len()
        + br#""complete""#.len()
        + protocol::SERVER_INFO_META_OPEN.len()
        + 2
        + protocol::VERSION.len()
        + 2
        + b"}}".len();
    let modern = if era.is_modern() {
        MODERN + info.0.len() + info.1.len()
    } else {
        0
    };
    LEGACY + id.raw().len() + modern
}

/// Validation for a tool that declares a raw input schema (only that `arguments` is an object),
/// into `args`. (Not inlined: the view it builds is not kept in [`Server::prepare`]'s frame,
/// which is on the stack under validation.)
#[inline(never)]
fn validate_raw<'i>(
    arguments: Option<Json<'i>>,
    args: &mut Args<'i>,
) -> Result<(), crate::schema::ArgError<'i>> {
    validate_object(arguments).map(|a| *args = a)
}

/// `params.task`: an object with an optional non-negative integer `ttl` (ms).
fn task_ttl(task: Json<'_>) -> Result<Option<u64>, &'static str> {
    const BAD: &str = "Invalid params: task must be an object with an optional integer ttl (ms)";
    if task.kind() != Kind::Object {
        return Err(BAD);
    }
    let [ttl] = members(Some(task), ["ttl"]).map_err(|_| BAD)?;
    match ttl.map(|t| (t.kind(), t.as_integer())) {
        None | Some((Kind::Null, _)) => Ok(None),
        Some((_, Some(Integer::Exact(v)))) => u64::try_from(v).map(Some).map_err(|_| BAD),
        Some((_, Some(Integer::OutOfRange))) => Ok(Some(u64::MAX)),
        Some(_) => Err(BAD),
    }
}

/// `params._meta.progressToken`: a string or an integer, kept when short enough.
fn progress_token<'i>(frame: &Frame<'i>) -> Option<Json<'i>> {
    let token = frame.get(Member::ProgressToken).once();
    token.filter(|t| {
        t.raw().len() <= MAX_PROGRESS_TOKEN_LEN
            && (t.kind() == Kind::String || t.is_plain_integer())
    })
}
