//! `tools/call` before the handler runs, as a pipeline of small steps, each answering the call
//! itself when it refuses it (or, for the cache, replays it):
//!
//! lookup → audience → capability → task form → validate → cache → room → slot → await → confirm
//!
//! The order matters: the arguments are checked before the retransmission cache is consulted (a
//! call that does not satisfy the schema never ran, so it is never answered from the cache), and
//! the confirmation comes last (a call that is held or asked about would otherwise run). A step
//! returns `Err(len)` when it wrote the answer (`len` bytes) and the call stops there.

use super::cache::{Seen, call_key};
#[cfg(feature = "confirm")]
use super::confirm::Gate;
use super::era::Era;
use super::flow::{Caller, Effects, Tail};
use super::params::{members, once};
use super::respond::Respond;
use super::tasks::MAX_PROGRESS_TOKEN_LEN;
use super::{Capacities, Handled, Principal, Server, UserToolPolicy};
use crate::fmt::debug;
use crate::registry::{Audience, TaskSupport, Tool};
use crate::result::{Evidence, Level, ToolError, render_result, render_result_for};
use crate::schema::{Args, validate_into, validate_object};
use crate::wire::frame::{Frame, Member};
use crate::wire::json::{Integer, Json, JsonStr, Kind};
use crate::wire::protocol;
use crate::wire::request::Id;
use crate::wire::response::ErrorCode;
use crate::wire::writer::Writer;

/// What [`Server::prepare`] came to: an answer already written, or a call ready to run, with the
/// output buffer handed back.
#[allow(
    clippy::large_enum_variant,
    reason = "no allocator to box into; the parked call is built once, in the caller's frame"
)]
pub(super) enum Prepared<'o, 'i, 't, C> {
    Answered(usize),
    Ready(Tail<'i, 't, C>, &'o mut [u8]),
}

/// The members of a `tools/call` the steps read, as the checking pass recorded them.
#[derive(Clone, Copy)]
struct Members<'i> {
    name: JsonStr<'i>,
    arguments: Option<Json<'i>>,
    task: Option<Json<'i>>,
}

/// How the call runs: as a task the client asked for (`augmented`, with the `ttl` it asked for).
#[derive(Clone, Copy)]
struct Form {
    augmented: bool,
    ttl_ms: Option<u64>,
}

/// A step's outcome: go on with `T`, or stop, the answer (of this length) written.
type Step<T> = Result<T, usize>;

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// Everything before the handler runs, step by step (see the module's docs); validation
    /// writes the arguments into `args`.
    #[inline(never)]
    pub(super) fn prepare<'o, 'i>(
        &mut self,
        id: Id<'i>,
        frame: &Frame<'i>,
        caller: Caller<'i>,
        mut respond: Respond<'o, 'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
        args: &mut Args<'i>,
    ) -> Prepared<'o, 'i, 't, C> {
        match self.pipeline(id, frame, caller, &mut respond, effects, args) {
            Ok(tail) => Prepared::Ready(tail, respond.out),
            Err(len) => Prepared::Answered(len),
        }
    }

    #[inline(always)]
    fn pipeline<'i>(
        &mut self,
        id: Id<'i>,
        frame: &Frame<'i>,
        caller: Caller<'i>,
        respond: &mut Respond<'_, 'i>,
        effects: &mut Effects<'_, 'i, 't, C>,
        args: &mut Args<'i>,
    ) -> Step<Tail<'i, 't, C>> {
        let call = read_members(frame, respond)?;
        let (index, tool) = self.lookup(call.name, frame, respond)?;
        self.audience(tool, caller.principal, respond)?;
        capability(tool, respond)?;
        let form = task_form::<C, K>(tool, call.task, respond)?;
        self.validate(tool, call.arguments, frame, args, respond)?;
        let key = self.cached(
            id,
            index,
            tool,
            form,
            &call,
            caller,
            respond,
            effects.handled,
        )?;
        let room = room(args, respond)?;
        self.slot(tool, form, args, respond)?;
        awaitable(tool, effects.park.is_some(), respond)?;
        #[cfg(feature = "confirm")]
        self.confirm(
            index,
            tool,
            &call,
            frame,
            args,
            &caller,
            respond,
            effects.handled,
        )?;
        Ok(self.tail(id, index, tool, form, key, room, frame, caller, respond))
    }

    /// What running the call needs from here on.
    #[allow(
        clippy::too_many_arguments,
        reason = "what the steps found, gathered once"
    )]
    #[inline(always)]
    fn tail<'i>(
        &self,
        id: Id<'i>,
        index: usize,
        tool: &'t Tool<C>,
        form: Form,
        key: Option<u64>,
        room: usize,
        frame: &Frame<'i>,
        caller: Caller<'i>,
        respond: &Respond<'_, 'i>,
    ) -> Tail<'i, 't, C> {
        let (token, log_level) = match respond.era {
            Era::Modern(m) => (m.progress_token, m.log_level),
            Era::Legacy => (
                progress_token(frame),
                self.session.log_level.or(self.config.log_level),
            ),
        };
        Tail {
            info: respond.info,
            id,
            era: respond.era,
            tool,
            index,
            room,
            key,
            augmented: form.augmented,
            ttl_ms: form.ttl_ms,
            token,
            log_level,
            principal: caller.principal,
            peer: caller.peer,
        }
    }

    /// Lookup: the tool named in the call.
    #[inline(always)]
    fn lookup<'i>(
        &self,
        name: JsonStr<'i>,
        frame: &Frame<'i>,
        respond: &mut Respond<'_, 'i>,
    ) -> Step<(usize, &'t Tool<C>)> {
        let found = self
            .registry
            .position(name, frame.has_escapes(Member::Name))
            .and_then(|i| Some((i, self.registry.get(i)?)));
        found.ok_or_else(|| {
            respond.reborrow().error(ErrorCode::InvalidParams, |w| {
                w.text("Unknown tool: ");
                w.echo(name, 128, 3);
            })
        })
    }

    /// `true` when `principal` may call `tool`: any tool but a user-only one, which only a
    /// person may call (or the model, when the policy lets it through). The one rule: the
    /// audience step enforces it, and a prompt argument naming a tool offers and takes by it.
    pub(super) fn may_call(&self, tool: &Tool<C>, principal: Principal) -> bool {
        !(tool.audience() == Audience::User
            && principal == Principal::Model
            && self.config.user_tools == UserToolPolicy::Enforce)
    }

    /// Audience: a user-only tool is refused to the model (unless the policy lets it through).
    #[inline(always)]
    fn audience(
        &self,
        tool: &Tool<C>,
        principal: Principal,
        respond: &mut Respond<'_, '_>,
    ) -> Step<()> {
        if !self.may_call(tool, principal) {
            debug!("refused user-only tool {} for the model", tool.name());
            return Err(respond.reborrow().error_parts(
                ErrorCode::InvalidParams,
                &[
                    "Tool ",
                    tool.name(),
                    " is only available to the user, not to the model",
                ],
            ));
        }
        Ok(())
    }

    /// Validate: the arguments against the tool's schema, into `args`. The handler never runs
    /// on a refusal; the revision decides how it is reported.
    #[inline(always)]
    fn validate<'i>(
        &self,
        tool: &Tool<C>,
        arguments: Option<Json<'i>>,
        frame: &Frame<'i>,
        args: &mut Args<'i>,
        respond: &mut Respond<'_, 'i>,
    ) -> Step<()> {
        let checked = match tool.raw_input_schema() {
            Some(_) => validate_raw(arguments, args),
            // From the members the checking pass recorded (walked again only past its table).
            None => validate_into(args, tool.param_specs(), arguments, Some(frame)),
        };
        let Err(e) = checked else { return Ok(()) };
        debug!("refused arguments for {}", tool.name());
        let respond = respond.reborrow();
        if respond.era.is_modern() || self.effective_revision().reports_validation_as_tool_error() {
            return Err(respond.result(|w| {
                w.open_string(protocol::FIRST_TEXT_OPEN);
                e.write_json(w);
                w.close_string(protocol::FIRST_TEXT_END_FAILED);
            }));
        }
        // Spoken as it is by a backend of this era (xiaozhi's): it ends with what happened.
        Err(respond.error(ErrorCode::InvalidParams, |w| {
            e.write_json(w);
            w.plain(protocol::NOTHING_CHANGED);
        }))
    }

    /// Cache: a retransmission is answered with the first call's answer (or from the task table)
    /// instead of running again. Returns the call's key when its answer is to be remembered.
    ///
    /// The retransmission scope (see `cache`): the peer; on the 2026-07-28 wire the peer and the
    /// client's idempotency key, and without a key no scope (a stateless request is never
    /// recognised as a retransmission). Only actions are remembered: a read-only tool is
    /// answered afresh every time.
    #[allow(
        clippy::too_many_arguments,
        reason = "the call's identity, and where its replay goes"
    )]
    #[inline(always)]
    fn cached(
        &mut self,
        id: Id<'_>,
        index: usize,
        tool: &Tool<C>,
        form: Form,
        call: &Members<'_>,
        caller: Caller<'_>,
        respond: &mut Respond<'_, '_>,
        handled: &mut Handled<'_>,
    ) -> Step<Option<u64>> {
        let era = respond.era;
        let scope: Option<&[u8]> = match era {
            Era::Legacy => Some(b""),
            Era::Modern(m) => m.idempotency_key.map(|k| k.raw()),
        };
        let Some(scope) = scope.filter(|_| !tool.is_read_only()) else {
            return Ok(None);
        };
        // The tool and the call form in one word: index, task-augmented, 2026-07-28.
        let shape =
            (index as u64) << 2 | u64::from(form.augmented) << 1 | u64::from(era.is_modern());
        let arguments = call.arguments.map_or(&b""[..], |a| a.raw());
        let key = call_key([caller.peer.get(), shape], &[scope, id.raw(), arguments]);
        let Some((receipt, delivery, seen)) = self.cache.get(key) else {
            return Ok(Some(key));
        };
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
                    return Err(bytes.len());
                }
                None => Seen::Replay(&[]),
            },
            Seen::Executed => Seen::Executed,
            Seen::Task(task) => Seen::Task(task),
        };
        Err(self.replay(seen, tool.name(), id, respond.reborrow()))
    }

    /// Slot: a long-running tool needs a free task slot, reserved before the handler runs, so
    /// that nothing is started that could not be tracked.
    #[inline(always)]
    fn slot(
        &self,
        tool: &Tool<C>,
        form: Form,
        args: &Args<'_>,
        respond: &mut Respond<'_, '_>,
    ) -> Step<()> {
        // Registration refuses long-running tools when `K::TASKS == 0`; saying so here lets the
        // compiler drop the task code from such a server.
        let long_running = K::TASKS > 0 && tool.task_hooks().is_some();
        if !long_running || self.tasks.has_room() {
            return Ok(());
        }
        const BUSY: &str =
            "Device busy: every task slot holds a running action; nothing was started";
        if form.augmented {
            return Err(respond
                .reborrow()
                .error_text(ErrorCode::InternalError, BUSY));
        }
        let error_member = self.legacy_error(respond.era);
        Err(not_applied(respond, BUSY, args, error_member))
    }

    /// Confirm: a person's yes, where the tool asks for one. Only where `HOLD > HOLD_RECORD`:
    /// registration refuses such a tool otherwise, and this lets the compiler drop the
    /// confirmation code from a server that holds nothing.
    #[cfg(feature = "confirm")]
    #[allow(
        clippy::too_many_arguments,
        reason = "the call, who makes it, and where the question goes"
    )]
    #[inline(always)]
    fn confirm<'i>(
        &mut self,
        index: usize,
        tool: &Tool<C>,
        call: &Members<'i>,
        frame: &Frame<'i>,
        args: &Args<'_>,
        caller: &Caller<'i>,
        respond: &mut Respond<'_, 'i>,
        handled: &mut Handled<'_>,
    ) -> Step<()> {
        let Some(confirm) = tool
            .confirmation()
            .filter(|c| super::confirm::Confirmations::<K>::ON && c.applies(args))
        else {
            return Ok(());
        };
        let params = once([frame.get(Member::Params)]).and_then(|[p]| p);
        let gate = self.confirm_gate(
            confirm,
            index,
            call.arguments,
            args,
            params,
            caller,
            respond.reborrow(),
        );
        match gate {
            Gate::Pass => Ok(()),
            Gate::Answered(len) => Err(len),
            Gate::Asked(len) => {
                handled.deferred = true;
                Err(len)
            }
        }
    }
}

/// The members of the call: a name (a string), `arguments` (an object, or absent), `task`.
/// `arguments` that is not an object (an array, a string) is a malformed request, on every
/// revision, as the official SDK servers answer it; a tool result with `isError` is for an
/// object that does not satisfy the tool's schema. `null` counts as absent.
#[inline(always)]
fn read_members<'i>(frame: &Frame<'i>, respond: &mut Respond<'_, 'i>) -> Step<Members<'i>> {
    let refuse = |respond: &mut Respond<'_, '_>, why| {
        respond.reborrow().error_text(ErrorCode::InvalidParams, why)
    };
    // The checking pass recorded these members of `params` (an object, or absent).
    let found = [Member::Name, Member::Arguments, Member::Task, Member::Meta];
    let Some([name, arguments, task, _]) = once(found.map(|m| frame.get(m))) else {
        return Err(refuse(respond, "Invalid params: duplicate member"));
    };
    let Some(name) = name.and_then(|n| n.as_str()) else {
        const NO_NAME: &str = "Invalid params: tools/call needs a tool name (a string)";
        return Err(refuse(respond, NO_NAME));
    };
    if arguments.is_some_and(|a| !matches!(a.kind(), Kind::Object | Kind::Null)) {
        return Err(refuse(
            respond,
            "Invalid params: arguments must be an object",
        ));
    }
    Ok(Members {
        name,
        arguments,
        task,
    })
}

/// Capability: on the 2026-07-28 wire a tool may require a client capability the request's
/// `_meta` must declare.
#[inline(always)]
fn capability<C>(tool: &Tool<C>, respond: &mut Respond<'_, '_>) -> Step<()> {
    let (Era::Modern(m), Some(cap)) = (respond.era, tool.required_client_capability()) else {
        return Ok(());
    };
    let declared = m
        .caps
        .and_then(|c| c.members())
        .is_some_and(|mut c| c.any(|(k, _)| k.eq_str(cap)));
    if declared {
        return Ok(());
    }
    Err(respond.reborrow().error_with(
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
    ))
}

/// Task form: whether the call runs as a task the client follows, and whether the tool allows
/// that form. Legacy (2025-11-25): the client asks with `params.task`. 2026-07-28: the server
/// decides, for clients that declare the tasks extension; `params.task` is ignored. (Without a
/// task table no tool with task hooks is registered: every tool forbids tasks and no call is
/// augmented, so there is nothing to refuse.)
#[inline(always)]
fn task_form<C, K: Capacities>(
    tool: &Tool<C>,
    task: Option<Json<'_>>,
    respond: &mut Respond<'_, '_>,
) -> Step<Form> {
    let era = respond.era;
    let form = match era {
        Era::Modern(m) => Form {
            augmented: m.tasks && tool.task_hooks().is_some(),
            ttl_ms: None,
        },
        Era::Legacy => match task.filter(|_| K::TASKS > 0).map(task_ttl) {
            Some(Err(msg)) => {
                return Err(respond.reborrow().error_text(ErrorCode::InvalidParams, msg));
            }
            Some(Ok(ttl_ms)) => Form {
                augmented: true,
                ttl_ms,
            },
            None => Form {
                augmented: false,
                ttl_ms: None,
            },
        },
    };
    match (tool.task_support(), form.augmented, era) {
        _ if K::TASKS == 0 => Ok(form),
        (TaskSupport::Required, false, Era::Modern(_)) => Err(respond.reborrow().error_with(
            ErrorCode::MissingRequiredClientCapability,
            |w| w.text("Missing required client capability: this tool runs only as a task"),
            Some(|w: &mut Writer<'_>| w.raw(protocol::REQUIRES_TASKS)),
        )),
        (TaskSupport::Forbidden, true, Era::Legacy)
        | (TaskSupport::Required, false, Era::Legacy) => {
            let why = if form.augmented {
                " does not support task-augmented calls"
            } else {
                " must be called as a task (params.task)"
            };
            let parts = ["Tool ", tool.name(), why];
            Err(respond
                .reborrow()
                .error_parts(ErrorCode::MethodNotFound, &parts))
        }
        _ => Ok(form),
    }
}

/// Room: string arguments sent with escape sequences are decoded into the tail of the output
/// buffer while the handler runs (nothing is allocated); the handler's scratch area is what
/// remains in front. Returns the scratch area's length.
#[inline(always)]
fn room(args: &Args<'_>, respond: &mut Respond<'_, '_>) -> Step<usize> {
    #[cfg(not(feature = "strings"))]
    {
        // (Without string parameters nothing is decoded: the scratch area is the whole buffer.)
        let _ = args;
        Ok(respond.out.len())
    }
    #[cfg(feature = "strings")]
    respond
        .out
        .len()
        .checked_sub(args.escaped_len())
        .ok_or_else(|| {
            const TOO_LONG: &str = "Arguments too long: the string arguments with escape \
                sequences do not fit the device's buffer once decoded; the tool did not run";
            tool_error(respond, TOO_LONG)
        })
}

/// Await: an async tool needs a caller that can await its handler.
#[inline(always)]
fn awaitable<C>(tool: &Tool<C>, can_await: bool, respond: &mut Respond<'_, '_>) -> Step<()> {
    if tool.handler().is_some() || can_await {
        return Ok(());
    }
    const NEEDS_ASYNC: &str = "Tool bug: this tool's handler is async; the firmware must serve \
        it with Server::handle_async (and poll with Server::poll_async); the tool did not run";
    Err(tool_error(respond, NEEDS_ASYNC))
}

/// Answers the call with a tool result that failed with `message` (the handler did not run).
/// (Inlined: out of line it costs 80 bytes of flash more on the ESP32-C3 firmware.)
#[inline(always)]
fn tool_error(respond: &mut Respond<'_, '_>, message: &'static str) -> usize {
    respond
        .reborrow()
        .result(|w| render_result(w, &Err(ToolError::new(message)), &[], 0, None))
}

/// Answers the call with a tool result that failed with `message` before anything was driven:
/// `not applied`, with what the call commanded (the rule every failure follows).
#[inline(never)]
fn not_applied(
    respond: &mut Respond<'_, '_>,
    message: &'static str,
    args: &Args<'_>,
    error_member: bool,
) -> usize {
    let refused = Err(ToolError::new(message)
        .with_evidence(Evidence::new(Level::NotApplied))
        .with_commanded(args));
    respond
        .reborrow()
        .result(|w| render_result_for(w, &refused, &[], 0, None, error_member))
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
