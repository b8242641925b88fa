//! `tools/call`: run the handler (blocking, or awaited when parked) and conclude the call —
//! remember its answer, start its task, or render its result. What comes before the handler is
//! in `prepare.rs`.

use super::cache::Seen;
use super::era::Era;
use super::flow::{Caller, Effects, Flow, Parked, Tail};
use super::prepare::Prepared;
use super::respond::{Respond, finish, too_large, write_result_object};
use super::tasks::{NewTask, TaskForm};
use super::{Capacities, Handled, Notify, Revision, Server};
use crate::fmt::debug;
use crate::result::{Output, TaskHooks, ToolError, Value, render_result_for};
use crate::schema::Args;
use crate::wire::frame::Frame;
use crate::wire::protocol;
use crate::wire::request::Id;
use crate::wire::response::{ErrorCode, error_into, write_error_dyn};
use crate::wire::writer::Writer;
use crate::{Reply, ToolResult};

/// Decodes the escaped string arguments into the tail of `out` (from `room` on); returns the
/// scratch area in front and the arguments, now borrowing the decoded strings too.
fn split<'a>(args: Args<'a>, room: usize, out: &'a mut [u8]) -> Option<(&'a mut [u8], Args<'a>)> {
    let (scratch, decoded) = out.split_at_mut(room.min(out.len()));
    #[cfg(feature = "strings")]
    {
        let mut args = args;
        // `room` leaves exactly the bytes the decoding needs.
        args.decode_escapes(decoded).then_some((scratch, args))
    }
    #[cfg(not(feature = "strings"))]
    {
        // (Nothing to decode without string parameters: `room` is the whole buffer.)
        let _ = decoded;
        Some((scratch, args))
    }
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
        caller: Caller<'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
        respond: Respond<'_, 'i>,
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
        let mut used = 0;
        #[cfg(feature = "strings")]
        let escaped = args.escaped_len();
        #[cfg(not(feature = "strings"))]
        let escaped = 0;
        let mut result = match escaped {
            0 => {
                let (scratch, _) = out.split_at_mut(tail.room.min(out.len()));
                self.invoke(handler, args, tail, scratch, seq, effects, &mut used)
            }
            #[cfg(feature = "strings")]
            _ => self.invoke_decoded(handler, (args, out), tail, seq, effects, &mut used),
            #[cfg(not(feature = "strings"))]
            _ => Err(ToolError::new("Arguments could not be decoded")),
        };
        commanded(&mut result, args);
        self.conclude(
            tail,
            &mut result,
            Scratch { used, seq },
            out,
            effects.handled,
        )
    }

    /// Runs the handler over `scratch`; its result, and in `used` the scratch bytes it wrote.
    #[inline(always)]
    #[allow(
        clippy::too_many_arguments,
        reason = "the handler, what it reads, and where its reply goes"
    )]
    fn invoke(
        &self,
        handler: crate::Handler<C>,
        args: &Args<'_>,
        tail: &Tail<'_, 't, C>,
        scratch: &mut [u8],
        seq: u32,
        effects: &mut Effects<'_, '_, 't, C>,
        used: &mut usize,
    ) -> ToolResult {
        let mut reply = self.reply(scratch, tail, seq, &mut *effects.notify);
        let result = handler(effects.ctx, args, &mut reply);
        *used = reply.used();
        result
    }

    /// [`invoke`](Self::invoke) with a copy of the arguments whose escaped strings are decoded
    /// into the tail of `out` (from `room` on), the handler's scratch area in front. (Not
    /// inlined: see [`run_blocking`](Self::run_blocking).)
    #[cfg(feature = "strings")]
    #[inline(never)]
    fn invoke_decoded(
        &self,
        handler: crate::Handler<C>,
        (args, out): (&Args<'_>, &mut [u8]),
        tail: &Tail<'_, 't, C>,
        seq: u32,
        effects: &mut Effects<'_, '_, 't, C>,
        used: &mut usize,
    ) -> ToolResult {
        let (scratch, decoded) = out.split_at_mut(tail.room.min(out.len()));
        let mut copy = args.clone();
        if !copy.decode_escapes(decoded) {
            return Err(ToolError::new("Arguments could not be decoded"));
        }
        self.invoke(handler, &copy, tail, scratch, seq, effects, used)
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
                let mut result = run(ctx, call).await;
                commanded(&mut result, &args);
                (result, reply.used())
            }
            None => (Err(ToolError::new("Arguments could not be decoded")), 0),
        };
        self.conclude(&tail, &mut { result }, Scratch { used, seq }, out, handled)
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
        self.after_approved(&approved, out, done)
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

    /// Answers a retransmission of a call that already ran whose remembered bytes do not fit
    /// `respond`'s buffer, or from the task table. (Not inlined: its writer stays out of [`prepare`](Self::prepare)'s frame, which is on the
    /// stack under validation.)
    #[inline(never)]
    pub(super) fn replay(
        &self,
        seen: Seen<'_>,
        tool: &str,
        id: Id<'_>,
        respond: Respond<'_, '_>,
    ) -> usize {
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

    /// Everything after the handler ran: forget what the call made stale, then start its task
    /// (a long-running tool's call) or render its result, and remember the answer.
    fn conclude(
        &mut self,
        tail: &Tail<'_, 't, C>,
        result: &mut ToolResult,
        scratch: Scratch,
        out: &mut [u8],
        handled: &mut Handled<'_>,
    ) -> usize {
        let tool = tail.tool;
        // The handler ran: whatever was remembered about this tool may no longer be true.
        handled.ran = Some(tool.name());
        if !tool.is_read_only() {
            self.cache.touch(tail.index);
        }
        // Registration refuses long-running tools when `K::TASKS == 0`; saying so here lets the
        // compiler drop the task code from such a server.
        let long_running = tool.task_hooks().copied().filter(|_| K::TASKS > 0);
        match long_running {
            Some(hooks) if tail.augmented || starts_task(result) => {
                // (The task keeps the result; what is left here is not read again.)
                let result = core::mem::replace(result, Err(ToolError::new("")));
                return self.conclude_task(tail, hooks, result, out, handled);
            }
            None if starts_task(result) => {
                const BUG: &str = "Tool bug: Output::task from a tool that is not long-running";
                *result = Err(ToolError::new(BUG));
            }
            _ => {}
        }
        let len = render_call(tail, self.legacy_error(tail.era), result, scratch, out);
        self.remember(tail, out.get(..len), handled);
        len
    }

    /// A long-running tool's call: its task starts, and the answer says so (or, for a client
    /// that can follow no task, is held back until the task ends or its budget runs out). (Not
    /// inlined: what a task start builds is not on the stack under every other call.)
    #[inline(never)]
    fn conclude_task(
        &mut self,
        tail: &Tail<'_, 't, C>,
        hooks: TaskHooks<C>,
        result: ToolResult,
        out: &mut [u8],
        handled: &mut Handled<'_>,
    ) -> usize {
        let &Tail { id, era, info, .. } = tail;
        let new = NewTask {
            tool: tail.index,
            tool_name: tail.tool.name(),
            form: match era {
                Era::Modern(_) if tail.augmented => TaskForm::Extension,
                Era::Legacy if tail.augmented => TaskForm::Legacy,
                _ => TaskForm::Plain,
            },
            ttl_ms: tail.ttl_ms,
            token: tail.token,
            timeout_ms: hooks.timeout_ms,
            peer: tail.peer,
            error_member: self.legacy_error(era),
            answers_only: self.config.answers_only,
        };
        if self.holds_answer(tail, &result) {
            let task = self.start_held(new, result, id, self.config.hold_answer_ms);
            if let Some(key) = tail.key {
                handled.receipt = self.cache.put_task(key, tail.index, task);
            }
            return 0;
        }
        let mut started = None;
        let len = finish(out, Some(id), "; the tool did run", |w| {
            started = self.start_task(new, result, id, era, info, w);
        });
        let sent = out.get(..len);
        match (started, tail.key) {
            // A retransmission gets the original bytes when they fit a cache slot; a larger
            // task-start answer is re-rendered from the task table, so that the client still
            // learns its task id.
            (Some(task), Some(key)) => {
                handled.receipt = match sent.filter(|sent| sent.len() <= K::CACHE_BYTES) {
                    Some(sent) => self.cache.put(key, tail.index, sent),
                    None => self.cache.put_task(key, tail.index, task),
                };
            }
            (Some(_), None) => {}
            (None, _) => self.remember(tail, sent, handled),
        }
        len
    }

    /// A client that can follow no task (a xiaozhi backend hands the model only the call's
    /// answer) hears the outcome in the call's own answer when it comes within the budget: the
    /// answer is held back until the task ends.
    fn holds_answer(&self, tail: &Tail<'_, 't, C>, result: &ToolResult) -> bool {
        !tail.augmented
            && !tail.era.is_modern()
            && self.config.hold_answer_ms > 0
            && !tail.tool.answers_at_once()
            && !self.session.tasks()
            && starts_task(result)
    }

    /// xiaozhi backends (2024-11-05) read a failed call's reason from `error`.
    pub(super) fn legacy_error(&self, era: Era<'_>) -> bool {
        !era.is_modern() && self.effective_revision() == Revision::V2024_11_05
    }

    /// Remembers the answer `sent` of an acting call, for retransmissions.
    fn remember(&mut self, tail: &Tail<'_, 't, C>, sent: Option<&[u8]>, handled: &mut Handled<'_>) {
        if let (Some(sent), Some(key)) = (sent, tail.key) {
            handled.receipt = self.cache.put(key, tail.index, sent);
        }
    }
}

/// A failure names what the call commanded ([`ToolError::with_commanded`]): the check is
/// inline, the work (on a failure with evidence only) is not, and the result is changed where it
/// is (no copy of it on the stack under every call).
#[inline(always)]
fn commanded(result: &mut ToolResult, args: &Args<'_>) {
    #[inline(never)]
    fn fill(e: &mut ToolError, args: &Args<'_>) {
        *e = e.with_commanded(args);
    }
    if let Err(e) = result
        && e.evidence.is_some_and(|ev| ev.commanded.is_none())
    {
        fill(e, args);
    }
}

/// The handler's result asks for a task (`Output::task`): the action goes on after the call.
fn starts_task(result: &ToolResult) -> bool {
    matches!(
        result,
        Ok(Output {
            value: Value::Task(_),
            ..
        })
    )
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
    // `finish`, written out: the hot path's answer, kept in this frame.
    let mut w = Writer::new(head);
    write_result_object(&mut w, id, era, info, "complete", |w| {
        render_result_for(w, result, scratch, seq, None, legacy_error)
    });
    let needed = w.needed();
    let len = match w.fits() {
        true => needed,
        false => too_large(head, Some(id), needed, "; the tool did run"),
    };
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
/// `]}}` (a result that did not fail has no `isError`), and on 2026-07-28 the `resultType` and the server identity (its name and
/// version counted as they are: plain text, no escapes).
fn envelope_len(id: Id<'_>, era: Era<'_>, info: (&str, &str)) -> usize {
    const LEGACY: usize = protocol::RESPONSE_HEAD.len()
        + protocol::RESULT_OPEN.len()
        + protocol::CONTENT_OPEN.len()
        + b"]".len()
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
