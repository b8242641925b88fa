//! Tools: the registration builder ([`Tool`]) and the bounded tool table ([`Registry`]).
//!
//! A [`Tool`] is plain data that can live in flash (`const`/`static`): name, description,
//! parameters, annotations, audience, optional `outputSchema`, and a handler function. The
//! [`Registry`] holds references to up to `N` tools. Registration checks everything a client
//! would otherwise discover the hard way, and refuses with a [`RegisterError`]:
//! a bad or duplicate name, a bad parameter spec, a default outside its range, an invalid
//! `outputSchema`, a tool whose listing would not fit one `tools/list` page, a full table.
//!
//! ```
//! use mcp_core::{Args, Output, Reply, ToolResult};
//! use mcp_core::registry::{Annotations, Registry, Tool};
//! use mcp_core::schema::Param;
//!
//! struct Device { volume: i64 }
//!
//! fn set_volume(dev: &mut Device, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
//!     dev.volume = args.int("volume")?;
//!     Ok(Output::bool(true))
//! }
//!
//! const SET_VOLUME: Tool<Device> = Tool::new("self.audio_speaker.set_volume", "Set the speaker volume", set_volume)
//!     .params(&[Param::integer("volume", "Volume in percent").range(0, 100)])
//!     .annotations(Annotations::new().idempotent(true));
//!
//! let mut tools: Registry<'_, Device, 8> = Registry::new(8000);
//! tools.register(&SET_VOLUME).unwrap();
//! assert!(tools.register(&SET_VOLUME).is_err()); // duplicate name
//! ```

use crate::Reply;
#[cfg(feature = "confirm")]
mod question;
#[cfg(feature = "resources")]
mod resources;

#[cfg(feature = "resources")]
pub(crate) use resources::{Listing, Values};
#[cfg(feature = "resources")]
pub use resources::{LiveResource, Prompt, PromptArgument, Reader, Resource};

use crate::result::{TaskHooks, ToolResult};
use crate::schema::{self, Args, MAX_PARAMS, Param, ParamProblem};
use crate::wire::json::JsonStr;
use crate::wire::protocol::{self, join};
use crate::wire::swar;
use crate::wire::writer::Writer;

/// A tool handler: the application context, the validated arguments, and the reply scratch.
pub type Handler<C> = fn(&mut C, &Args<'_>, &mut Reply<'_>) -> ToolResult;

/// Who may see and call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Audience {
    /// Listed to the model and callable by it (the default).
    Model,
    /// Listed only with `withUserTools: true` (to whoever asks), annotated
    /// `"audience": ["user"]`, and refused when the model calls it (see
    /// [`UserToolPolicy`](crate::server::UserToolPolicy)).
    User,
}

/// Whether a tool runs as an MCP task (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TaskSupport {
    /// An ordinary tool: a task-augmented call is refused with -32601 (the default).
    Forbidden,
    /// A long-running tool: clients may call it as a task or plainly. A plain call answers at
    /// once with the task id and `scheduled` evidence (for clients without task support, such as
    /// xiaozhi backends); progress and the final evidence come from `tasks/get`/`tasks/result` or
    /// the status tool ([`crate::server::status_tool`]).
    Optional,
    /// A long-running tool that must be called as a task (a plain call gets -32601).
    Required,
}

impl TaskSupport {
    const fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// Builder setters for the boolean hints of [`Annotations`], one per field of the same name.
macro_rules! hints {
    ($($(#[$doc:meta])* $field:ident;)*) => {
        $(
            $(#[$doc])*
            pub const fn $field(mut self, v: bool) -> Self {
                self.$field = Some(v);
                self
            }
        )*
    };
}

/// MCP tool annotations: hints for clients, never enforced by them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Annotations {
    title: Option<&'static str>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
}

impl Annotations {
    /// No annotations.
    pub const fn new() -> Self {
        Annotations {
            title: None,
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// A human-readable title.
    pub const fn title(mut self, v: &'static str) -> Self {
        self.title = Some(v);
        self
    }

    hints! {
        /// `readOnlyHint`: the tool does not change state.
        read_only;
        /// `destructiveHint`: the change may be destructive.
        destructive;
        /// `idempotentHint`: repeating the call has no further effect.
        idempotent;
        /// `openWorldHint`: the tool reaches outside the device.
        open_world;
    }

    const fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.read_only.is_none()
            && self.destructive.is_none()
            && self.idempotent.is_none()
            && self.open_world.is_none()
    }
}

/// A tool's `outputSchema`: hand-written, or written from member specs.
#[derive(Debug, Clone, Copy)]
enum OutputSchema {
    Raw(&'static str),
    Fields(&'static [crate::schema::Field]),
}

/// One tool: its listing and its handler. Build it in a `const` and register a reference.
pub struct Tool<C> {
    name: &'static str,
    description: &'static str,
    params: &'static [Param],
    annotations: Annotations,
    audience: Audience,
    output_schema: Option<OutputSchema>,
    input_schema: Option<&'static str>,
    requires: Option<&'static str>,
    /// `None`: an async tool, run by the handler [`Server::handle_async`](crate::Server::handle_async) awaits.
    handler: Option<Handler<C>>,
    task: Option<(TaskSupport, TaskHooks<C>)>,
    confirm: Option<Confirm>,
    answer_at_once: bool,
}

// A tool is a handful of references, function pointers and flags, whatever the context type: a
// copy of it is a copy of those (a derive would ask `C: Copy`).
impl<C> Clone for Tool<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Tool<C> {}

/// A person's yes, obtained by the engine before a tool acts (see [`Tool::confirm`]).
///
/// The question names what the person approves: it is a template over the tool's parameters,
/// filled from the call's *validated* arguments — `{name}` stands for the argument `name` (a
/// string's text escaped for a display and capped at 32 characters), `{name:N}` for at most `N`
/// characters of it, `…` after when more were left out. Registration refuses a placeholder that
/// names no parameter ([`RegisterErrorKind::BadQuestion`]). The engine adds which client asks.
///
/// ```
/// use mcp_core::{Args, Confirm, Output, Param, Reply, Tool, ToolResult};
/// # fn upgrade(_: &mut (), _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult { Ok(Output::bool(true)) }
/// # #[cfg(feature = "strings")] // (string parameters: feature `strings`)
/// const UPGRADE: Tool<()> = Tool::new("self.upgrade_firmware", "Upgrade", upgrade)
///     .params(&[Param::integer("size", "Bytes"), Param::string("sha256", "SHA-256").length(64, 64)])
///     // "Upgrade the firmware to the 4096-byte image with SHA-256 9f86d081…? (asked by …)"
///     .confirm(Confirm::new("Upgrade the firmware to the {size}-byte image with SHA-256 {sha256:8}?"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Confirm {
    message: &'static str,
    when: Option<fn(&Args<'_>) -> bool>,
}

impl Confirm {
    /// Ask `message` (a yes/no question a person can answer: "Reboot the device?"), a template
    /// over the tool's parameters (see the type's docs).
    pub const fn new(message: &'static str) -> Self {
        Confirm {
            message,
            when: None,
        }
    }

    /// Ask only for calls whose (validated) arguments satisfy `when`: a relay switched on, not
    /// off.
    pub const fn when(mut self, when: fn(&Args<'_>) -> bool) -> Self {
        self.when = Some(when);
        self
    }

    /// The question's template (its placeholders unfilled).
    pub const fn message(&self) -> &'static str {
        self.message
    }

    /// Writes the question for a call with (validated) `args`: the template with its
    /// placeholders filled.
    #[cfg(feature = "confirm")]
    pub(crate) fn write_question(&self, args: &Args<'_>, f: &mut dyn core::fmt::Write) {
        let _ = question::write(self.message, args, f);
    }

    /// `true` when a call with `args` needs the person's yes.
    pub fn applies(&self, args: &Args<'_>) -> bool {
        self.when.is_none_or(|f| f(args))
    }
}

impl<C> core::fmt::Debug for Tool<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("params", &self.params.len())
            .finish_non_exhaustive()
    }
}

impl<C> Tool<C> {
    /// A tool with no parameters, visible to the model.
    pub const fn new(name: &'static str, description: &'static str, handler: Handler<C>) -> Self {
        Self::with_handler(name, description, Some(handler))
    }

    /// A tool with no parameters whose handler is async: [`Server::handle_async`](crate::Server::handle_async)
    /// validates the call exactly as for a blocking tool, then awaits the async handler it was
    /// given with the call (match on [`Call::tool`](crate::Call::tool)). Through the blocking
    /// [`Server::handle`](crate::Server::handle) such a tool fails with a message saying so.
    pub const fn new_async(name: &'static str, description: &'static str) -> Self {
        Self::with_handler(name, description, None)
    }

    const fn with_handler(
        name: &'static str,
        description: &'static str,
        handler: Option<Handler<C>>,
    ) -> Self {
        Tool {
            name,
            description,
            params: &[],
            annotations: Annotations::new(),
            audience: Audience::Model,
            output_schema: None,
            input_schema: None,
            requires: None,
            handler,
            task: None,
            confirm: None,
            answer_at_once: false,
        }
    }

    /// Makes the tool long-running: its handler starts the action and returns
    /// [`Output::task`](crate::Output::task); the engine then tracks it as an MCP task, driving
    /// `hooks` from [`Server::poll`](crate::Server::poll). `support` is
    /// [`TaskSupport::Optional`] or [`TaskSupport::Required`].
    pub const fn long_running(mut self, support: TaskSupport, hooks: TaskHooks<C>) -> Self {
        self.task = Some((support, hooks));
        self
    }

    /// A long-running tool whose task waits for the caller's own further calls (an upgrade
    /// waiting for the pieces of its image): a plain call is answered at once with the task's
    /// start, never held back for a client that follows no task
    /// ([`Config::hold_answer_ms`](crate::Config::hold_answer_ms)), since holding it would keep
    /// the caller from sending what the task waits for.
    pub const fn answer_at_once(mut self) -> Self {
        self.answer_at_once = true;
        self
    }

    /// `true` when a plain call is never held back ([`answer_at_once`](Self::answer_at_once)).
    pub const fn answers_at_once(&self) -> bool {
        self.answer_at_once
    }

    /// Asks a person before the handler runs (feature `confirm`). After validation, for a call
    /// from the model ([`Principal::Model`](crate::Principal::Model); a person calling needs no
    /// second yes), the engine obtains the person's answer the way the client allows:
    ///
    /// | client | how |
    /// |---|---|
    /// | 2025-06-18 or later, declared `elicitation` | `elicitation/create` (form mode, one boolean); the call runs on `accept` with `true` |
    /// | 2026-07-28 with `elicitation` in its capabilities | an `input_required` result carrying the same question and a signed `requestState`; the retry runs on `accept` with `true` |
    /// | without elicitation (xiaozhi, 2024-11-05) | on the device: the call is held and answered "press the button on the device to confirm"; the firmware reports the press with [`Server::confirm_on_device`](crate::Server::confirm_on_device), and the outcome follows as a notification |
    ///
    /// Decline, cancel and timeout run nothing, and the answer says which.
    ///
    /// **A tool that asks first is destructive unless said otherwise**: whatever was said of
    /// `destructiveHint` before the question (a kit's `false`: switching a relay is undone by
    /// switching it back) described the tool without it, and is dropped; a tool that asks first
    /// and says nothing more is listed `destructiveHint: true` ([`destructive_hint`]). Say
    /// otherwise after the question, with [`destructive`](Self::destructive).
    ///
    /// [`destructive_hint`]: Self::destructive_hint
    pub const fn confirm(mut self, confirm: Confirm) -> Self {
        self.confirm = Some(confirm);
        self.annotations.destructive = None;
        self
    }

    /// Says whether the tool's change may be destructive (`destructiveHint`), keeping its other
    /// annotations: `relay::set().confirm(…).destructive(false)` for a load whose switching a
    /// person confirms but that nothing harms.
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.annotations.destructive = Some(destructive);
        self
    }

    /// The `destructiveHint` the tool is listed with: what was said of it (after its question,
    /// see [`confirm`](Self::confirm)), else `true` for a tool that asks a person first, else
    /// nothing.
    pub const fn destructive_hint(&self) -> Option<bool> {
        match (self.annotations.destructive, &self.confirm) {
            (Some(said), _) => Some(said),
            (None, Some(_)) => Some(true),
            (None, None) => None,
        }
    }

    /// The confirmation the tool asks for, if any.
    pub const fn confirmation(&self) -> Option<&Confirm> {
        self.confirm.as_ref()
    }

    /// The same tool under another name: a ready-made tool (an `mcp-hal` kit) on a device that
    /// calls it differently (`relay::set().rename("self.garage_door.set")`). The name is checked
    /// at registration like any other ([`is_valid_tool_name`]). An async tool is dispatched by
    /// name: match on the new one.
    pub const fn rename(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The same tool with another description: what the model reads to decide when to call it
    /// (`relay::set().describe("Open (true) or close (false) the garage door.")`).
    pub const fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// The parameters (at most [`MAX_PARAMS`]).
    pub const fn params(mut self, params: &'static [Param]) -> Self {
        self.params = params;
        self
    }

    /// The annotations (all of them: the ones said before are replaced). A tool that asks a
    /// person first and whose annotations say nothing of `destructiveHint` is listed destructive
    /// (see [`confirm`](Self::confirm)).
    pub const fn annotations(mut self, a: Annotations) -> Self {
        self.annotations = a;
        self
    }

    /// Makes the tool user-only: refused when the model calls it (see
    /// [`UserToolPolicy`](crate::UserToolPolicy)), and listed only to a `tools/list` that asks
    /// with `withUserTools: true` (xiaozhi's convention: its backend asks to show a person the
    /// tools meant for them; the tool then carries `"annotations":{"audience":["user"]}`),
    /// whoever the principal is. A connection whose principal is
    /// [`Principal::User`](crate::Principal::User) may call it, listed or not.
    pub const fn user_only(mut self) -> Self {
        self.audience = Audience::User;
        self
    }

    /// Declares an `outputSchema` (a JSON object, as text). The handler's structured results
    /// must conform: clients validate them against it. Prefer [`output`](Self::output), which
    /// writes the schema from specs.
    pub const fn output_schema(mut self, schema: &'static str) -> Self {
        self.output_schema = Some(OutputSchema::Raw(schema));
        self
    }

    /// Declares the `outputSchema` of the tool's structured results from member specs (see
    /// [`Field`](crate::schema::Field)). The handler's results must conform: clients validate
    /// them against it.
    pub const fn output(mut self, fields: &'static [crate::schema::Field]) -> Self {
        self.output_schema = Some(OutputSchema::Fields(fields));
        self
    }

    /// Lists a hand-written `inputSchema` (a JSON object with `"type":"object"`) instead of one
    /// generated from [`params`](Self::params), for schemas the parameter specs cannot express
    /// (`$defs`, `allOf`, `if`/`then`).
    ///
    /// **The engine cannot enforce such a schema.** It only checks that `arguments` is an object;
    /// the handler reads them with [`Args::raw`] and must validate them itself. Prefer
    /// [`params`](Self::params) wherever it suffices.
    pub const fn input_schema(mut self, schema: &'static str) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// The tool needs a client capability (`"sampling"`, `"elicitation"`, …). A 2026-07-28
    /// client whose request does not declare it gets -32021 (HTTP 400) naming it, and the handler
    /// does not run.
    pub const fn requires_client_capability(mut self, capability: &'static str) -> Self {
        self.requires = Some(capability);
        self
    }

    /// The client capability the tool needs, if any.
    pub const fn required_client_capability(&self) -> Option<&'static str> {
        self.requires
    }

    /// The hand-written `inputSchema`, if any.
    pub const fn raw_input_schema(&self) -> Option<&'static str> {
        self.input_schema
    }

    /// The tool name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The description, as listed.
    pub const fn description(&self) -> &'static str {
        self.description
    }

    /// The parameter specs.
    pub const fn param_specs(&self) -> &'static [Param] {
        self.params
    }

    /// `true` when the tool is annotated `readOnlyHint: true` (it changes nothing, so repeating
    /// it is harmless and the retransmission cache leaves it alone).
    pub const fn is_read_only(&self) -> bool {
        matches!(self.annotations.read_only, Some(true))
    }

    /// The audience.
    pub const fn audience(&self) -> Audience {
        self.audience
    }

    /// The blocking handler (`None` for an async tool).
    pub const fn handler(&self) -> Option<Handler<C>> {
        self.handler
    }

    /// How the tool runs as a task.
    pub const fn task_support(&self) -> TaskSupport {
        match self.task {
            Some((support, _)) => support,
            None => TaskSupport::Forbidden,
        }
    }

    /// The task hooks of a long-running tool.
    pub const fn task_hooks(&self) -> Option<&TaskHooks<C>> {
        match &self.task {
            Some((_, hooks)) => Some(hooks),
            None => None,
        }
    }

    /// Writes the tool's `tools/list` entry.
    pub fn write_listing(&self, w: &mut Writer<'_>) {
        w.raw(protocol::NAME_ENTRY);
        w.string(self.name);
        w.raw(protocol::DESCRIPTION);
        w.string(self.description);
        w.raw(protocol::INPUT_SCHEMA);
        match self.input_schema {
            Some(raw) => w.raw(raw.as_bytes()),
            None => schema::write_input_schema(w, self.params),
        }
        let a = &self.annotations;
        let destructive = self.destructive_hint();
        if !a.is_empty() || destructive.is_some() || self.audience == Audience::User {
            w.raw(protocol::ANNOTATIONS_OPEN);
            let mut sep = false;
            let mut comma = |w: &mut Writer<'_>| {
                if sep {
                    w.raw(b",");
                }
                sep = true;
            };
            if let Some(t) = a.title {
                comma(w);
                w.key("title");
                w.string(t);
            }
            for (key, v) in [
                ("readOnlyHint", a.read_only),
                ("destructiveHint", destructive),
                ("idempotentHint", a.idempotent),
                ("openWorldHint", a.open_world),
            ] {
                if let Some(v) = v {
                    comma(w);
                    w.key(key);
                    w.bool(v);
                }
            }
            if self.audience == Audience::User {
                comma(w);
                w.raw(protocol::AUDIENCE_USER);
            }
            w.raw(b"}");
        }
        match self.output_schema {
            Some(OutputSchema::Raw(s)) => {
                w.raw(protocol::OUTPUT_SCHEMA);
                w.raw(s.as_bytes());
            }
            Some(OutputSchema::Fields(fields)) => {
                w.raw(protocol::OUTPUT_SCHEMA);
                schema::write_output_schema(w, fields);
            }
            None => {}
        }
        if self.task_support() != TaskSupport::Forbidden {
            w.raw(protocol::TASK_SUPPORT_OPEN);
            w.string(self.task_support().as_str());
            w.raw(b"}");
        }
        w.raw(b"}");
    }

    /// The size of the tool's `tools/list` entry in bytes.
    pub fn listing_size(&self) -> usize {
        let mut w = Writer::new(&mut []);
        self.write_listing(&mut w);
        w.needed()
    }
}

/// Why a tool was refused at registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[error("cannot register tool {tool:?}: {kind}")]
pub struct RegisterError {
    /// The tool's name.
    pub tool: &'static str,
    /// What is wrong.
    pub kind: RegisterErrorKind,
}

/// What is wrong with a tool at registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RegisterErrorKind {
    /// The table already holds `N` tools, or [`MAX_TOOLS`].
    #[error("the tool table is full")]
    Full,
    /// A tool with this name is already registered.
    #[error("a tool with this name is already registered")]
    Duplicate,
    /// The name is empty, longer than 128 bytes, or has characters other than `A-Za-z0-9_.-`.
    #[error("tool names are 1-128 characters of A-Z a-z 0-9 _ . -")]
    BadName,
    /// More than [`MAX_PARAMS`] parameters.
    #[error("too many parameters")]
    TooManyParams,
    /// A parameter spec is wrong.
    #[error("parameter {param:?}: {problem}")]
    Param {
        /// The parameter's name.
        param: &'static str,
        /// What is wrong with it.
        problem: ParamProblem,
    },
    /// The declared `outputSchema` is not a JSON object, or two of its members share a name.
    #[error("outputSchema is not a JSON object, or repeats a member name")]
    BadOutputSchema,
    /// A hand-written `inputSchema` that is not an object with `"type":"object"`, or that comes
    /// with parameter specs too.
    #[error("a hand-written inputSchema must be an object of type \"object\", without params")]
    BadInputSchema,
    /// A long-running tool on a server without a task table (`TASKS = 0`).
    #[error("a long-running tool needs a server with a task table")]
    NoTaskTable,
    /// A tool that asks for confirmation ([`Tool::confirm`]) on an engine built without the
    /// feature `confirm`.
    #[error("this tool asks a person to confirm; build mcp-core with the feature confirm")]
    NoConfirmation,
    /// A tool that asks for confirmation on a server that cannot hold a call while it asks
    /// (`HOLD` not larger than `server::HOLD_RECORD`, the record kept
    /// beside the held message).
    #[error(
        "this tool asks a person to confirm; the server needs HOLD > HOLD_RECORD (the held call's record, then its message) to hold the call"
    )]
    NoHold,
    /// `long_running` with [`TaskSupport::Forbidden`].
    #[error("a long-running tool needs task support optional or required")]
    BadTaskSupport,
    /// The confirmation's question ([`Confirm`]) has a placeholder that is malformed or names
    /// no parameter of the tool.
    #[error("the question has a placeholder that is malformed or names no parameter")]
    BadQuestion,
    /// The listing alone would overflow a `tools/list` page (or needs 64 KiB or more).
    #[error("its listing needs {size} bytes but a tools/list page holds {page}")]
    TooLargeForPage {
        /// Bytes the listing plus page overhead needs.
        size: u32,
        /// The page budget.
        page: u32,
    },
}

/// Bytes of a `tools/list` result around the tool entries when a cursor is present:
/// `{"tools":[` … `],"nextCursor":"xxxxxxxx"}`.
pub(crate) const PAGE_OVERHEAD: usize = PAGE_OPEN.len() + PAGE_CLOSE.len() + CURSOR_MEMBER_LEN;
pub(crate) const PAGE_OPEN: &[u8] = join!(b"{", protocol::TOOLS_OPEN);
pub(crate) const PAGE_CLOSE: &[u8] = b"]}";
pub(crate) const CURSOR_LEN: usize = 8;
/// `,"nextCursor":"` + cursor + `"`
pub(crate) const CURSOR_MEMBER_LEN: usize = protocol::NEXT_CURSOR_OPEN.len() + CURSOR_LEN + 1;

/// One row of the tool table: a registered tool and the size of its listing (opaque; see
/// [`ToolTable`]).
pub struct Entry<'t, C> {
    pub(crate) tool: &'t Tool<C>,
    /// From the high half down: the listing's size in bytes (under 64 KiB); and the lookup's
    /// order, kept beside the registration order (which is the listing order): the `k`-th
    /// entry holds the index of the `k`-th tool in the order of the names' hashes (ties in
    /// registration order), and that name's hash ([`name_hash`]). Eight bytes an entry on a
    /// 32-bit target, the tool's reference included.
    packed: u32,
}

impl<C> Entry<'_, C> {
    /// The listing's size in bytes.
    pub(crate) const fn size(&self) -> u32 {
        self.packed >> 16
    }

    /// The index of the `k`-th tool in the lookup's order, when this is the `k`-th entry.
    const fn by_hash(&self) -> usize {
        (self.packed >> 8 & 0xFF) as usize
    }

    /// That tool's name's hash.
    const fn hash(&self) -> u8 {
        (self.packed & 0xFF) as u8
    }

    /// The entry with its place in the lookup's order set.
    const fn with_order(&self, index: usize, hash: u8) -> u32 {
        self.packed & 0xFFFF_0000 | (index as u32 & 0xFF) << 8 | hash as u32
    }
}

/// The most tools a table holds (the lookup's order keeps an index in a byte).
pub const MAX_TOOLS: usize = 256;

/// A name's hash: its length, and its first and last four bytes (fewer bytes than that, all of
/// them), folded into a byte, in 32-bit arithmetic. The lookup by name finds the names of one
/// hash by a binary search and compares only those: names that share their length and those
/// bytes (a firmware's own naming, not something a client chooses) share a hash and are
/// compared in turn.
#[inline(never)]
fn name_hash(name: &[u8]) -> u8 {
    let n = name.len();
    let mixed = match (name.first_chunk::<4>(), name.last_chunk::<4>()) {
        (Some(first), Some(last)) => {
            u32::from_le_bytes(*first) ^ u32::from_le_bytes(*last).rotate_left(13)
        }
        _ => name.iter().fold(0, |w, &b| w << 8 | u32::from(b)),
    };
    ((mixed ^ n as u32).wrapping_mul(0x9E37_79B1) >> 24) as u8
}

/// The tool table over the storage `S`, in registration order (which is listing order).
///
/// It comes in two forms, as `heapless`'s `Vec` and `VecView` do: [`Registry<'t, C, N>`]
/// owns room for `N` tools (what a [`Server`](crate::server::Server) keeps, sized by its
/// [`Capacities`](crate::server::Capacities)); [`RegistryView<'t, C>`] is the same table
/// without its capacity in the type, which every method is written for once. A `Registry`
/// derefs to its view, and [`Server::registry`](crate::server::Server::registry) lends the view.
pub struct ToolTable<S: ?Sized> {
    page_bytes: usize,
    fingerprint: u32,
    entries: S,
}

/// A tool table with room for `N` tools.
pub type Registry<'t, C, const N: usize> = ToolTable<heapless::Vec<Entry<'t, C>, N>>;

/// A tool table of any capacity (see [`ToolTable`]).
pub type RegistryView<'t, C> = ToolTable<heapless::VecView<Entry<'t, C>>>;

impl<C> core::fmt::Debug for RegistryView<'_, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.entries.len())
            .field("page_bytes", &self.page_bytes)
            .finish()
    }
}

impl<C, const N: usize> core::fmt::Debug for Registry<'_, C, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::ops::Deref::deref(self).fmt(f)
    }
}

impl<'t, C, const N: usize> core::ops::Deref for Registry<'t, C, N> {
    type Target = RegistryView<'t, C>;
    fn deref(&self) -> &RegistryView<'t, C> {
        self
    }
}

impl<'t, C, const N: usize> core::ops::DerefMut for Registry<'t, C, N> {
    fn deref_mut(&mut self) -> &mut RegistryView<'t, C> {
        self
    }
}

/// `true` for names of 1–128 characters from `A-Za-z0-9_.-` (the MCP tool-name rule).
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

fn fnv(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h = (h ^ u32::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

impl<C, const N: usize> Registry<'_, C, N> {
    /// An empty table whose `tools/list` pages hold at most `page_bytes` bytes of result.
    pub const fn new(page_bytes: usize) -> Self {
        ToolTable {
            entries: heapless::Vec::new(),
            page_bytes,
            fingerprint: FNV_OFFSET,
        }
    }
}

impl<'t, C> RegistryView<'t, C> {
    /// The page budget.
    pub const fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks and adds a tool. Nothing is added on error.
    pub fn register(&mut self, tool: &'t Tool<C>) -> Result<&mut Self, RegisterError> {
        let err = |kind| RegisterError {
            tool: tool.name,
            kind,
        };
        if !is_valid_tool_name(tool.name) {
            return Err(err(RegisterErrorKind::BadName));
        }
        if self.entries.iter().any(|e| e.tool.name == tool.name) {
            return Err(err(RegisterErrorKind::Duplicate));
        }
        if tool.params.len() > MAX_PARAMS {
            return Err(err(RegisterErrorKind::TooManyParams));
        }
        schema::check_params(tool.params)
            .map_err(|(param, problem)| err(RegisterErrorKind::Param { param, problem }))?;
        let output_ok = match tool.output_schema {
            Some(OutputSchema::Raw(s)) => schema::is_json_object(s),
            Some(OutputSchema::Fields(f)) => schema::output_names_are_unique(f),
            None => true,
        };
        if !output_ok {
            return Err(err(RegisterErrorKind::BadOutputSchema));
        }
        if let Some(raw) = tool.input_schema
            && (!tool.params.is_empty() || !schema::is_object_schema(raw))
        {
            return Err(err(RegisterErrorKind::BadInputSchema));
        }
        if matches!(tool.task, Some((TaskSupport::Forbidden, _))) {
            return Err(err(RegisterErrorKind::BadTaskSupport));
        }
        #[cfg(feature = "confirm")]
        if let Some(c) = &tool.confirm
            && !question::is_valid(c.message, tool.params)
        {
            return Err(err(RegisterErrorKind::BadQuestion));
        }
        let size = tool.listing_size();
        let Some(size) = u16::try_from(size)
            .ok()
            .filter(|&s| usize::from(s) + PAGE_OVERHEAD <= self.page_bytes)
        else {
            let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
            return Err(err(RegisterErrorKind::TooLargeForPage {
                size: clamp(size + PAGE_OVERHEAD),
                page: clamp(self.page_bytes),
            }));
        };
        let hash = name_hash(tool.name.as_bytes());
        let added = self.entries.len();
        if added >= MAX_TOOLS {
            return Err(err(RegisterErrorKind::Full));
        }
        // Its place in the lookup's order: after the names of a smaller or equal hash.
        let at = match hash.checked_add(1) {
            Some(above) => self.lookup_from(above).unwrap_or(added),
            None => added,
        };
        let entry = Entry {
            tool,
            packed: u32::from(size) << 16,
        };
        self.entries
            .push(entry)
            .map_err(|_| err(RegisterErrorKind::Full))?;
        for k in (at..added).rev() {
            let moved = self.entries.get(k).map(|e| (e.by_hash(), e.hash()));
            if let (Some((index, hash)), Some(next)) = (moved, self.entries.get_mut(k + 1)) {
                next.packed = next.with_order(index, hash);
            }
        }
        if let Some(e) = self.entries.get_mut(at) {
            e.packed = e.with_order(added, hash);
        }
        self.fingerprint = fnv(fnv(self.fingerprint, tool.name.as_bytes()), &[0]);
        Ok(self)
    }

    /// The tool named `name`.
    pub fn find(&self, name: JsonStr<'_>) -> Option<&'t Tool<C>> {
        self.position(name, name.has_escapes())
            .and_then(|i| self.get(i))
    }

    /// The index of the tool named `name` (`escaped`: sent with escape sequences).
    ///
    /// The common case, a name without escapes, does not scan the table: a binary search in the
    /// order of the names' hashes finds those with the name's hash (one, mostly), whose names
    /// are compared byte for byte. A name with escapes is compared decoded with each.
    pub(crate) fn position(&self, name: JsonStr<'_>, escaped: bool) -> Option<usize> {
        if escaped {
            return self.entries.iter().position(|e| name.eq_str(e.tool.name));
        }
        let raw = name.raw();
        let hash = name_hash(raw);
        let entries = &self.entries;
        let mut at = self.lookup_from(hash)?;
        while let Some(e) = entries.get(at) {
            if e.hash() != hash {
                return None;
            }
            let i = e.by_hash();
            if entries
                .get(i)
                .is_some_and(|e| swar::eq(e.tool.name.as_bytes(), raw))
            {
                return Some(i);
            }
            at += 1;
        }
        None
    }

    /// The first place in the lookup's order whose name's hash is `hash` or more (`None`: past
    /// the end).
    fn lookup_from(&self, hash: u8) -> Option<usize> {
        let entries = &self.entries;
        let (mut lo, mut hi) = (0, entries.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if entries.get(mid).map_or(u8::MAX, Entry::hash) < hash {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < entries.len()).then_some(lo)
    }

    /// The tool at `index`.
    pub(crate) fn get(&self, index: usize) -> Option<&'t Tool<C>> {
        self.entries.get(index).map(|e| e.tool)
    }

    /// Registered tools in order.
    pub fn tools(&self) -> impl Iterator<Item = &'t Tool<C>> + '_ {
        self.entries.iter().map(|e| e.tool)
    }

    pub(crate) fn entries(&self) -> &[Entry<'t, C>] {
        &self.entries
    }

    /// The opaque cursor for "continue at entry `index`": 4 hex digits of index and 4 of a check
    /// tied to the current table, so that forged or stale cursors are recognised.
    pub(crate) fn cursor(&self, index: usize) -> [u8; CURSOR_LEN] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let idx = (index & 0xFFFF) as u32;
        let check = fnv(self.fingerprint, &idx.to_le_bytes()) & 0xFFFF;
        let v = (idx << 16) | check;
        let mut out = [b'0'; CURSOR_LEN];
        for (i, o) in out.iter_mut().enumerate() {
            let nibble = (v >> (28 - 4 * i)) & 0xF;
            *o = HEX.get(nibble as usize).copied().unwrap_or(b'0');
        }
        out
    }

    /// The entry index a cursor stands for, if it is one this table issued.
    pub(crate) fn parse_cursor(&self, cursor: JsonStr<'_>) -> Option<usize> {
        let raw = cursor.raw();
        if raw.len() != CURSOR_LEN {
            return None;
        }
        let text = core::str::from_utf8(raw).ok()?;
        if !text.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let v = u32::from_str_radix(text, 16).ok()?;
        let index = (v >> 16) as usize;
        (index > 0 && index < self.entries.len() && self.cursor(index).as_slice() == raw)
            .then_some(index)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::Output;
    use crate::schema::Param;
    use crate::test_support::{kept, kept_str};
    use crate::wire::json::Json;

    fn noop(_: &mut (), _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
        Ok(Output::bool(true))
    }

    const VOLUME: Tool<()> = Tool::new("self.audio_speaker.set_volume", "Set volume", noop)
        .params(&[Param::integer("volume", "Volume").range(0, 100)])
        .annotations(
            Annotations::new()
                .title("Volume")
                .idempotent(true)
                .destructive(false),
        );
    const REBOOT: Tool<()> = Tool::new("self.reboot", "Reboot", noop).user_only();

    #[test]
    fn finds_each_tool_by_name_at_any_place() {
        // Names of equal and different lengths, in tables of odd and even size.
        static TOOLS: [Tool<()>; 6] = [
            Tool::new("a", "x", noop),
            Tool::new("bb", "x", noop),
            Tool::new("cc", "x", noop),
            Tool::new("d", "x", noop),
            Tool::new("eee", "x", noop),
            Tool::new("ff", "x", noop),
        ];
        let name = |s: &'static str| JsonStr::from_checked(s.as_bytes());
        for count in 0..=TOOLS.len() {
            let mut r: Registry<'_, (), 8> = Registry::new(8000);
            for t in &TOOLS[..count] {
                r.register(t).unwrap();
            }
            for (i, t) in TOOLS.iter().enumerate() {
                let want = (i < count).then_some(i);
                assert_eq!(
                    r.position(name(t.name), false),
                    want,
                    "{} of {count}",
                    t.name
                );
                assert_eq!(r.find(name(t.name)).map(|t| t.name), want.map(|_| t.name));
            }
            for missing in ["g", "gg", "ggg", "", "bbb"] {
                assert_eq!(
                    r.position(name(missing), false),
                    None,
                    "{missing} of {count}"
                );
            }
        }
    }

    #[test]
    fn a_full_table_finds_every_tool_and_no_other_whatever_the_names() {
        // 256 names sharing a 24-byte prefix and their length, and 256 of varied lengths (many
        // hashes shared by two or more), each registered in a scrambled order.
        let shared = (0..256).map(|i| format!("self.audio_speaker.set_v{i:05}"));
        let varied = (0..256).map(|i| format!("t{}.{}", "x".repeat(i % 37), i * 7919 % 1000));
        for names in [shared.collect::<Vec<_>>(), varied.collect()] {
            let mut order: Vec<usize> = (0..names.len()).collect();
            order.sort_by_key(|&i| i * 149 % 256);
            let tools: Vec<&'static Tool<()>> = order
                .iter()
                .map(|&i| {
                    let name = kept_str(names[i].clone());
                    kept(Tool::new(name, "x", noop))
                })
                .collect();
            let mut r: Registry<'_, (), 256> = Registry::new(8000);
            for t in &tools {
                r.register(t).unwrap();
            }
            // The lookup's order is the hashes' order, and holds every tool once.
            let mut seen: Vec<usize> = r.entries.iter().map(Entry::by_hash).collect();
            let hashes: Vec<u8> = r.entries.iter().map(Entry::hash).collect();
            for (k, &i) in seen.iter().enumerate() {
                assert_eq!(name_hash(r.entries[i].tool.name.as_bytes()), hashes[k]);
            }
            assert!(hashes.windows(2).all(|w| w[0] <= w[1]), "{hashes:?}");
            seen.sort_unstable();
            assert_eq!(seen, (0..256).collect::<Vec<_>>());
            for (i, t) in tools.iter().enumerate() {
                let name = JsonStr::from_checked(t.name.as_bytes());
                assert_eq!(r.position(name, false), Some(i), "{}", t.name);
            }
            for missing in names
                .iter()
                .map(|n| format!("{n}x"))
                .chain(["".to_string()])
            {
                let name = JsonStr::from_checked(missing.as_bytes());
                assert_eq!(r.position(name, false), None, "{missing}");
            }
        }
    }

    #[test]
    fn a_table_holds_at_most_max_tools_whatever_its_capacity() {
        let mut r: Registry<'_, (), 300> = Registry::new(8000);
        for i in 0..=MAX_TOOLS {
            let name = kept_str(format!("t.{i}"));
            let tool = kept(Tool::new(name, "x", noop));
            let registered = r.register(tool).map(|_| ()).map_err(|e| e.kind);
            let want = if i < MAX_TOOLS {
                Ok(())
            } else {
                Err(RegisterErrorKind::Full)
            };
            assert_eq!(registered, want, "{name}");
        }
        // A listing of 64 KiB or more is refused, whatever the page holds.
        let long = kept_str("d".repeat(70_000));
        let tool = kept(Tool::new("big", long, noop));
        let mut r: Registry<'_, (), 2> = Registry::new(1 << 20);
        assert!(matches!(
            r.register(tool).map(|_| ()).map_err(|e| e.kind),
            Err(RegisterErrorKind::TooLargeForPage { .. })
        ));
    }

    fn listing(t: &Tool<()>) -> serde_json::Value {
        crate::test_support::written_json(4096, |w| {
            t.write_listing(w);
            assert_eq!(w.needed(), t.listing_size());
        })
    }

    #[test]
    fn listing_shape() {
        assert_eq!(
            listing(&VOLUME),
            serde_json::json!({
                "name": "self.audio_speaker.set_volume",
                "description": "Set volume",
                "inputSchema": {
                    "type": "object",
                    "properties": {"volume": {"type": "integer", "description": "Volume", "minimum": 0, "maximum": 100}},
                    "required": ["volume"],
                    "additionalProperties": false
                },
                "annotations": {"title": "Volume", "destructiveHint": false, "idempotentHint": true}
            })
        );
        assert_eq!(
            listing(&REBOOT)["annotations"],
            serde_json::json!({"audience": ["user"]})
        );
    }

    #[test]
    fn renamed_and_described() {
        // Everything but the name and the description is the original's.
        const SPEAKER: Tool<()> = VOLUME
            .rename("self.speaker.volume")
            .describe("Speaker volume");
        let mut want = listing(&VOLUME);
        want["name"] = "self.speaker.volume".into();
        want["description"] = "Speaker volume".into();
        assert_eq!(listing(&SPEAKER), want);
        assert_eq!(
            (SPEAKER.name(), SPEAKER.description()),
            ("self.speaker.volume", "Speaker volume")
        );
        // The new name is registered, and checked, as any other.
        let mut r: Registry<'_, (), 4> = Registry::new(8000);
        r.register(&VOLUME).unwrap().register(&SPEAKER).unwrap();
        assert_eq!(
            r.find(JsonStr::from_checked(b"self.speaker.volume"))
                .map(Tool::description),
            Some("Speaker volume")
        );
        const BAD: Tool<()> = VOLUME.rename("speaker volume");
        assert_eq!(
            r.register(&BAD).unwrap_err().kind,
            RegisterErrorKind::BadName
        );
    }

    /// A tool that asks first is destructive unless said otherwise after the question; its other
    /// annotations stay (VOLUME says `destructiveHint: false`, `idempotentHint: true`).
    #[test]
    fn asking_first_makes_a_tool_destructive_unless_said_otherwise() {
        const ASKS: Tool<()> = VOLUME.confirm(Confirm::new("Louder?"));
        let listed = listing(&ASKS);
        assert_eq!(listed["annotations"]["destructiveHint"], true, "{listed}");
        assert_eq!(listed["annotations"]["idempotentHint"], true, "{listed}");
        assert_eq!(ASKS.destructive_hint(), Some(true));
        const SAID: Tool<()> = ASKS.destructive(false);
        assert_eq!(listing(&SAID)["annotations"]["destructiveHint"], false);
        const REPLACED: Tool<()> = ASKS.annotations(Annotations::new().title("Volume"));
        assert_eq!(listing(&REPLACED)["annotations"]["destructiveHint"], true);
        // Without a question nothing is added.
        assert_eq!(listing(&VOLUME)["annotations"]["destructiveHint"], false);
        const PLAIN: Tool<()> = Tool::new("self.ping", "Ping", |_, _, _| Ok(Output::bool(true)));
        assert_eq!(listing(&PLAIN).get("annotations"), None);
        assert_eq!(PLAIN.destructive_hint(), None);
    }

    #[test]
    fn registration_errors() {
        let mut r: Registry<'_, (), 2> = Registry::new(8000);
        r.register(&VOLUME).unwrap();
        let dup = r.register(&VOLUME).unwrap_err();
        assert_eq!(dup.kind, RegisterErrorKind::Duplicate);
        assert_eq!(
            dup.to_string(),
            "cannot register tool \"self.audio_speaker.set_volume\": a tool with this name is already registered"
        );
        r.register(&REBOOT).unwrap();
        const EXTRA: Tool<()> = Tool::new("extra", "x", noop);
        assert_eq!(
            r.register(&EXTRA).unwrap_err().kind,
            RegisterErrorKind::Full
        );
        assert_eq!(r.len(), 2);

        let mut r: Registry<'_, (), 4> = Registry::new(8000);
        const BAD_NAME: Tool<()> = Tool::new("set volume", "x", noop);
        assert_eq!(
            r.register(&BAD_NAME).unwrap_err().kind,
            RegisterErrorKind::BadName
        );
        const BAD_DEFAULT: Tool<()> = Tool::new("t", "x", noop)
            .params(&[Param::integer("v", "v").range(0, 10).default_int(11)]);
        assert_eq!(
            r.register(&BAD_DEFAULT).unwrap_err().kind,
            RegisterErrorKind::Param {
                param: "v",
                problem: ParamProblem::DefaultInvalid
            }
        );
        const TWICE: Tool<()> = Tool::new("t", "x", noop).output(&[
            crate::schema::Field::integer("v"),
            crate::schema::Field::boolean("v"),
        ]);
        assert_eq!(
            r.register(&TWICE).unwrap_err().kind,
            RegisterErrorKind::BadOutputSchema
        );
        const FROM_SPECS: Tool<()> = Tool::new("specs", "x", noop)
            .output(&[crate::schema::Field::integer("volume").range(0, 100)]);
        assert_eq!(
            listing(&FROM_SPECS)["outputSchema"],
            serde_json::json!({"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]})
        );
        const BAD_SCHEMA: Tool<()> = Tool::new("t", "x", noop).output_schema("[1]");
        assert_eq!(
            r.register(&BAD_SCHEMA).unwrap_err().kind,
            RegisterErrorKind::BadOutputSchema
        );
        static MANY: [Param; 17] = [Param::boolean("a", "x"); 17];
        const MANY_TOOL: Tool<()> = Tool::new("t", "x", noop).params(&MANY);
        assert_eq!(
            r.register(&MANY_TOOL).unwrap_err().kind,
            RegisterErrorKind::TooManyParams
        );
        assert!(r.is_empty());

        let mut small: Registry<'_, (), 4> = Registry::new(200);
        let err = small.register(&VOLUME).unwrap_err();
        assert!(
            matches!(
                err.kind,
                RegisterErrorKind::TooLargeForPage { page: 200, .. }
            ),
            "{err}"
        );
    }

    #[test]
    fn cursors_are_opaque_and_checked() {
        let mut r: Registry<'_, (), 4> = Registry::new(8000);
        r.register(&VOLUME).unwrap().register(&REBOOT).unwrap();
        let c = r.cursor(1);
        let s = format!("\"{}\"", core::str::from_utf8(&c).unwrap());
        let j = Json::parse(s.as_bytes(), 4).unwrap();
        assert_eq!(r.parse_cursor(j.as_str().unwrap()), Some(1));
        for bad in [
            "\"\"",
            "\"00010000\"",
            "\"self.reboot\"",
            "\"zzzzzzzz\"",
            "\"0001000000\"",
        ] {
            let j = Json::parse(bad.as_bytes(), 4).unwrap();
            assert_eq!(r.parse_cursor(j.as_str().unwrap()), None, "{bad}");
        }
        // A cursor issued before the table changed is stale.
        const EXTRA: Tool<()> = Tool::new("extra", "x", noop);
        r.register(&EXTRA).unwrap();
        assert_eq!(r.parse_cursor(j_str(&s).as_str().unwrap()), None);
    }

    fn j_str(s: &str) -> Json<'_> {
        Json::parse(s.as_bytes(), 4).unwrap()
    }
}
