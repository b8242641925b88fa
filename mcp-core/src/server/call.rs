//! `tools/call`: look up, refuse by audience, replay retransmissions, validate, run, render.

use core::fmt::Write as _;

use super::cache::{Seen, call_key};
use super::tasks::{MAX_PROGRESS_TOKEN_LEN, NewTask, TaskForm};
use super::{
    Caller, Era, Handled, Notify, Principal, Respond, Revision, Server, UserToolPolicy, finish,
    members, write_object,
};
use crate::fmt::debug;
use crate::registry::{Audience, TaskSupport};
use crate::result::{Message, Output, Span, ToolError, Value};
use crate::schema::{Args, validate, validate_object};
use crate::wire::json::{Integer, Json, Kind};
use crate::wire::request::Id;
use crate::wire::response::{ErrorCode, NO_DATA, write_error, write_result};
use crate::wire::writer::Writer;
use crate::{Reply, ToolResult};

impl<C, const N: usize, const TASKS: usize, const CACHE: usize, const CACHE_BYTES: usize>
    Server<'_, C, N, TASKS, CACHE, CACHE_BYTES>
{
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site; the request's parts and where its facts go"
    )]
    pub(super) fn call(
        &mut self,
        id: Id<'_>,
        params: Option<Json<'_>>,
        caller: Caller,
        ctx: &mut C,
        respond: Respond<'_, '_>,
        notify: &mut dyn Notify,
        handled: &mut Handled<'_>,
    ) -> usize {
        let principal = caller.principal;
        let [name, arguments, task, meta] =
            match members(params, ["name", "arguments", "task", "_meta"]) {
                Ok(m) => m,
                Err(msg) => return respond.error(ErrorCode::InvalidParams, |w| w.text(msg)),
            };
        let Some(name) = name.and_then(|n| n.as_str()) else {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: tools/call needs a tool name (a string)");
            });
        };
        // `arguments` that is not an object (an array, a string) is a malformed request, on every
        // revision, as the official SDK servers answer it. A tool result with `isError` is for an
        // object that does not satisfy the tool's schema. `null` counts as absent.
        if arguments.is_some_and(|a| !matches!(a.kind(), Kind::Object | Kind::Null)) {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: arguments must be an object");
            });
        }
        let Some(index) = self.registry.position(name) else {
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Unknown tool: ");
                for c in name.chars().take(128) {
                    let _ = w.write_char(c);
                }
            });
        };
        let Some(tool) = self.registry.get(index) else {
            return 0;
        };
        if tool.audience() == Audience::User
            && principal == Principal::Model
            && self.config.user_tools == UserToolPolicy::Enforce
        {
            debug!("refused user-only tool {} for the model", tool.name());
            return respond.error(ErrorCode::InvalidParams, |w| {
                w.text("Tool ");
                w.text(tool.name());
                w.text(" is only available to the user, not to the model");
            });
        }

        if let (Era::Modern(m), Some(cap)) = (respond.era, tool.required_client_capability())
            && !m
                .caps
                .and_then(|c| c.members())
                .is_some_and(|mut c| c.any(|(k, _)| k.eq_str(cap)))
        {
            return respond.error_with(
                ErrorCode::MissingRequiredClientCapability,
                |w| {
                    w.text("Missing required client capability: ");
                    w.text(cap);
                },
                Some(|w: &mut Writer<'_>| {
                    w.raw(b"{\"requiredCapabilities\":{");
                    w.string(cap);
                    w.raw(b":{}}}");
                }),
            );
        }

        // Task augmentation. Legacy (2025-11-25): the client asks with `params.task`. 2026-07-28:
        // the server decides, for clients that declare the tasks extension; `params.task` is ignored.
        let era = respond.era;
        let (augmented, ttl_ms) = match era {
            Era::Modern(m) => (m.tasks && tool.task_hooks().is_some(), None),
            Era::Legacy => {
                let augmented = TASKS > 0 && task.is_some();
                match task.filter(|_| TASKS > 0).map(task_ttl) {
                    Some(Err(msg)) => {
                        return respond.error(ErrorCode::InvalidParams, |w| w.text(msg));
                    }
                    Some(Ok(ttl)) => (augmented, ttl),
                    None => (augmented, None),
                }
            }
        };
        match (tool.task_support(), augmented, era) {
            (TaskSupport::Required, false, Era::Modern(_)) => {
                return respond.error_with(
                    ErrorCode::MissingRequiredClientCapability,
                    |w| w.text("Missing required client capability: this tool runs only as a task"),
                    Some(|w: &mut Writer<'_>| {
                        w.raw(b"{\"requiredCapabilities\":{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}}");
                    }),
                );
            }
            (TaskSupport::Forbidden, true, Era::Legacy) => {
                return respond.error(ErrorCode::MethodNotFound, |w| {
                    w.text("Tool ");
                    w.text(tool.name());
                    w.text(" does not support task-augmented calls");
                });
            }
            (TaskSupport::Required, false, Era::Legacy) => {
                return respond.error(ErrorCode::MethodNotFound, |w| {
                    w.text("Tool ");
                    w.text(tool.name());
                    w.text(" must be called as a task (params.task)");
                });
            }
            _ => {}
        }

        // The retransmission scope (see `cache`): the peer; on the 2026-07-28 wire the peer and
        // the client's idempotency key, and without a key no scope (a stateless request is
        // never recognised as a retransmission).
        let peer = caller.peer.get().to_le_bytes();
        let scope: Option<&[u8]> = match era {
            Era::Legacy => Some(b""),
            Era::Modern(m) => m.idempotency_key.map(|k| k.raw()),
        };
        // Only actions are remembered: a read-only tool is answered afresh every time.
        let key = scope.filter(|_| !tool.is_read_only()).map(|scope| {
            call_key(&[
                &peer,
                scope,
                id.raw(),
                &index.to_le_bytes(),
                arguments.map_or(b"", |a| a.raw()),
                if augmented { b"task" } else { b"" },
                if era.is_modern() { b"2026" } else { b"" },
            ])
        });
        let cached = match key {
            Some(key) => self.cache.get(key),
            None => None,
        };
        if let Some((receipt, delivery, seen)) = cached {
            handled.replay = Some(delivery);
            handled.receipt = Some(receipt);
            match seen {
                Seen::Replay(bytes) => {
                    debug!(
                        "retransmission of a {} call answered from the cache",
                        tool.name()
                    );
                    if let Some(dst) = respond.out.get_mut(..bytes.len()) {
                        dst.copy_from_slice(bytes);
                        return bytes.len();
                    }
                    return respond.error(ErrorCode::InternalError, |w| {
                        w.text("Retransmission of a call that already ran; its response does not fit this buffer");
                    });
                }
                Seen::Executed => {
                    return respond.error(ErrorCode::InternalError, |w| {
                        w.text("Retransmission of a call that already ran; its response is too large to replay");
                    });
                }
                Seen::Task(task) => {
                    debug!(
                        "retransmission of a {} call answered from the task table",
                        tool.name()
                    );
                    let Respond { out, info, era, .. } = respond;
                    return finish(out, Some(id), "; the tool did run", |w| {
                        // `TASKS > 0`: a server without a task table links no task code.
                        if !(TASKS > 0 && self.replay_start(task, id, era, info, w)) {
                            let gone = |w: &mut Writer<'_>| {
                                w.text(
                                    "Retransmission of a call that already ran; its task has expired",
                                );
                            };
                            write_error(w, Some(id), ErrorCode::InternalError, gone, NO_DATA);
                        }
                    });
                }
            }
        }

        let checked = match tool.raw_input_schema() {
            Some(_) => validate_object(arguments),
            None => validate(tool.param_specs(), arguments),
        };
        let args = match checked {
            Ok(args) => args,
            Err(e) => {
                debug!("refused arguments for {}", tool.name());
                // The handler does not run. The revision decides how the refusal is reported.
                if era.is_modern() || self.effective_revision().reports_validation_as_tool_error() {
                    return respond.result(|w| {
                        w.raw(b"\"content\":[{\"type\":\"text\",\"text\":");
                        w.begin_string();
                        let _ = e.render(w);
                        w.end_string();
                        w.raw(b"}],\"isError\":true");
                    });
                }
                return respond.error(ErrorCode::InvalidParams, |w| {
                    let _ = e.render(w);
                });
            }
        };

        // String arguments sent with escape sequences are decoded into the tail of the output
        // buffer while the handler runs (nothing is allocated); the handler's scratch area is
        // what remains in front.
        let Some(room) = respond.out.len().checked_sub(args.escaped_len()) else {
            const TOO_LONG: &str = "Arguments too long: the string arguments with escape \
                sequences do not fit the device's buffer once decoded; the tool did not run";
            return respond
                .result(|w| render_result(w, &Err(ToolError::new(TOO_LONG)), &[], 0, None));
        };

        // Registration refuses long-running tools when `TASKS == 0`; saying so here lets the
        // compiler drop the task code from such a server.
        let long_running = tool.task_hooks().copied().filter(|_| TASKS > 0);
        if long_running.is_some() && !self.tasks.has_room() {
            // Refused before the handler runs: nothing is started that could not be tracked.
            const BUSY: &str =
                "Device busy: every task slot holds a running action; nothing was started";
            if augmented {
                return respond.error(ErrorCode::InternalError, |w| w.text(BUSY));
            }
            return respond.result(|w| render_result(w, &Err(ToolError::new(BUSY)), &[], 0, None));
        }

        // Run the handler with the whole output buffer as its scratch area.
        let (token, log_level) = match era {
            Era::Modern(m) => (m.progress_token, m.log_level),
            Era::Legacy => (meta.and_then(progress_token), self.log_level),
        };
        self.call_seq = self.call_seq.wrapping_add(1);
        let seq = self.call_seq;
        let Respond { out, info, .. } = respond;
        let (mut result, used) = {
            let (scratch, decoded) = out.split_at_mut(room);
            // The view now borrows the decoded strings too: its lifetime shortens to theirs.
            let mut args: Args<'_> = args;
            if args.decode_escapes(decoded) {
                let reply = Reply::new(scratch, principal, seq);
                let reply = if TASKS > 0 {
                    reply.with_tasks(&self.tasks)
                } else {
                    reply
                };
                let mut reply = reply.with_notify(notify, token, log_level);
                let result = (tool.handler())(ctx, &args, &mut reply);
                (result, reply.used())
            } else {
                // Not reached: `room` leaves exactly the bytes the decoding needs.
                (Err(ToolError::new("Arguments could not be decoded")), 0)
            }
        };
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
                };
                let mut started = None;
                let len = finish(out, Some(id), "; the tool did run", |w| {
                    started = self.start_task(new, result, id, era, info, w);
                });
                // A retransmission gets the original bytes when they fit a cache slot; a larger
                // task-start answer is re-rendered from the task table, so that the client still
                // learns its task id.
                if let (Some(task), Some(key)) = (started, key) {
                    handled.receipt = match out.get(..len).filter(|sent| sent.len() <= CACHE_BYTES)
                    {
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
                render_call(id, era, legacy_error, info, &result, used, seq, out)
            }
        };
        if let (Some(sent), Some(key)) = (out.get(..len), key) {
            handled.receipt = self.cache.put(key, index, sent);
        }
        len
    }
}

/// Renders a handler's result in front of the scratch bytes it wrote.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the parts are the response's inputs"
)]
fn render_call(
    id: Id<'_>,
    era: Era<'_>,
    legacy_error: bool,
    info: (&'static str, &'static str),
    result: &ToolResult,
    used: usize,
    seq: u32,
    out: &mut [u8],
) -> usize {
    // Move the scratch bytes to the end of the buffer and render the response in front.
    let tail = out.len().saturating_sub(used);
    out.copy_within(..used.min(out.len()), tail);
    let (head, scratch) = out.split_at_mut(tail);
    let len = finish(head, Some(id), "; the tool did run", |w| {
        write_result(w, id, |w| {
            write_object(w, era, info, "complete", |w| {
                render_result_for(w, result, scratch, seq, None, legacy_error)
            })
        });
    });
    if len > 0 {
        return len;
    }
    // Not even the short error fits in front of the scratch bytes: use the whole buffer.
    let mut w = Writer::new(out);
    let msg = |w: &mut Writer<'_>| {
        w.text("Response too large for the device's output buffer; the tool did run")
    };
    write_error(&mut w, Some(id), ErrorCode::InternalError, msg, NO_DATA);
    if w.fits() { w.needed() } else { 0 }
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
fn progress_token(meta: Json<'_>) -> Option<Json<'_>> {
    let [token] = members(
        Some(meta).filter(|m| m.kind() == Kind::Object),
        ["progressToken"],
    )
    .ok()?;
    token.filter(|t| {
        t.raw().len() <= MAX_PROGRESS_TOKEN_LEN
            && (t.kind() == Kind::String || t.is_plain_integer())
    })
}

/// Writes the members of a `CallToolResult` (no braces). `note` is appended to a failure's
/// message (a safe-stop).
pub(super) fn render_result(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
) {
    render_result_for(w, result, scratch, seq, note, false);
}

/// [`render_result`], with `error_member`: a failure also carries its message as an `error`
/// string member, where xiaozhi's backends (2024-11-05) look for it.
pub(super) fn render_result_for(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
    error_member: bool,
) {
    let span = |s: Span| s.resolve(scratch, seq);
    let evidence = match result {
        Ok(o) => o.evidence,
        Err(e) => e.evidence,
    };
    w.raw(b"\"content\":[");
    match result {
        Ok(Output {
            value: Value::Content(blocks),
            ..
        }) => {
            w.raw(span(*blocks).unwrap_or(b"{\"type\":\"text\",\"text\":\"\"}"));
        }
        Ok(Output { value, .. }) => {
            w.raw(b"{\"type\":\"text\",\"text\":");
            w.begin_string();
            write_plain(w, *value, &span);
            w.end_string();
            w.raw(b"}");
        }
        Err(ToolError { message, .. }) => {
            w.raw(b"{\"type\":\"text\",\"text\":");
            w.begin_string();
            match *message {
                Message::Static(s) => w.text(s),
                Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
            }
            if let Some(note) = note {
                w.text("; ");
                w.text(note);
            }
            w.end_string();
            w.raw(b"}");
        }
    }
    if let Some(e) = evidence {
        w.raw(b",{\"type\":\"text\",\"text\":");
        w.begin_string();
        e.write_text(w);
        w.end_string();
        w.raw(b"}");
    }
    w.raw(b"]");
    if let Ok(Output { value, .. }) = result {
        match *value {
            Value::Content(_) | Value::Task(_) => {}
            Value::Json(s) => {
                w.raw(b",\"structuredContent\":");
                w.raw(span(s).unwrap_or(b"{}"));
            }
            Value::Text(_) | Value::Static(_) => {
                w.raw(b",\"structuredContent\":{\"value\":");
                w.begin_string();
                write_plain(w, *value, &span);
                w.end_string();
                w.raw(b"}");
            }
            value => {
                w.raw(b",\"structuredContent\":{\"value\":");
                write_plain(w, value, &span);
                w.raw(b"}");
            }
        }
    }
    w.raw(if result.is_ok() {
        b",\"isError\":false"
    } else {
        b",\"isError\":true"
    });
    if let (true, Err(ToolError { message, evidence })) = (error_member, result) {
        // What a xiaozhi backend says to the user: the reason and what the device observed.
        w.raw(b",\"error\":");
        w.begin_string();
        match *message {
            Message::Static(s) => w.text(s),
            Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
        }
        if let Some(e) = evidence {
            w.text("; ");
            e.write_text(w);
        }
        w.end_string();
    }
    if let Some(e) = evidence {
        w.raw(b",\"evidence\":");
        e.write_json(w);
    }
}

/// The value's plain rendering (`true`, `40`, the text, the JSON text).
fn write_plain<'s>(w: &mut Writer<'_>, value: Value, span: &impl Fn(Span) -> Option<&'s [u8]>) {
    match value {
        Value::Bool(b) => w.bool(b),
        Value::Int(i) => w.int(i),
        #[cfg(feature = "float")]
        Value::Number(n) => w.number(n),
        Value::Static(s) => w.text(s),
        Value::Text(s) | Value::Json(s) => w.raw(span(s).unwrap_or_default()),
        Value::Content(_) | Value::Task(_) => {}
    }
}
