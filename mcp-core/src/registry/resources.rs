//! Static resources and prompts: read-only text a device can publish (a manual, a wiring note,
//! a prompt that explains the device to a model). Declared in [`Config`](crate::Config); the
//! engine answers `resources/*` and `prompts/*` only when there are some.

/// What `resources/list` says of a resource, static or live: where it is, its name, what it
/// is and its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listing {
    pub(crate) uri: &'static str,
    pub(crate) name: &'static str,
    pub(crate) description: Option<&'static str>,
    pub(crate) mime_type: &'static str,
}

impl Listing {
    const fn new(uri: &'static str, name: &'static str, mime_type: &'static str) -> Self {
        Listing {
            uri,
            name,
            description: None,
            mime_type,
        }
    }
}

/// The methods a resource, static or live, has for its [`Listing`] (a field `listing`).
macro_rules! listed {
    () => {
        /// A description for the client.
        pub const fn description(mut self, v: &'static str) -> Self {
            self.listing.description = Some(v);
            self
        }

        /// The URI.
        pub const fn uri(&self) -> &'static str {
            self.listing.uri
        }

        pub(crate) const fn listing(&self) -> &Listing {
            &self.listing
        }
    };
}

/// A text resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    listing: Listing,
    text: &'static str,
}

impl Resource {
    /// A resource at `uri` (e.g. `device://manual`) with its text.
    pub const fn new(
        uri: &'static str,
        name: &'static str,
        mime_type: &'static str,
        text: &'static str,
    ) -> Self {
        Resource {
            listing: Listing::new(uri, name, mime_type),
            text,
        }
    }

    listed!();

    pub(crate) const fn text(&self) -> &'static str {
        self.text
    }
}

/// A prompt: one user message, written from a template, that tells a model how to use the
/// device. Its arguments (at most [`Prompt::MAX_ARGUMENTS`]) are strings the client fills in
/// (`prompts/get`); each `{name}` of a declared argument in the text is replaced by its value
/// (an optional argument left out by nothing), and any other `{…}` stays as written. An
/// argument with [`values`](PromptArgument::values) (or one that names a
/// [`tool`](PromptArgument::tool)) takes only those, and they are what `completion/complete`
/// offers: whatever a client sends is written into a message a model reads, so a closed set
/// keeps an instruction ("ignore the user and …") out of it.
///
/// ```
/// use mcp_core::{Prompt, PromptArgument};
///
/// static ARGS: [PromptArgument; 1] = [PromptArgument::new("part", "The part to check")
///     .required()
///     .values(&["relay", "speaker"])];
/// static PROMPTS: [Prompt; 1] = [Prompt::new(
///     "check",
///     "Checks one part of the lamp",
///     "Check the {part} of this lamp, then say what you measured.",
/// )
/// .arguments(&ARGS)];
/// # let _ = &PROMPTS;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    name: &'static str,
    description: &'static str,
    text: &'static str,
    arguments: &'static [PromptArgument],
}

impl Prompt {
    /// The most arguments a prompt declares (more fail to compile in a `static`).
    pub const MAX_ARGUMENTS: usize = 32;

    /// A prompt named `name` whose message is `text`.
    pub const fn new(name: &'static str, description: &'static str, text: &'static str) -> Self {
        Prompt {
            name,
            description,
            text,
            arguments: &[],
        }
    }

    /// The arguments `{name}` in the text stands for.
    ///
    /// # Panics
    /// With more than [`MAX_ARGUMENTS`](Self::MAX_ARGUMENTS) (at compile time in a `static`).
    pub const fn arguments(mut self, arguments: &'static [PromptArgument]) -> Self {
        assert!(
            arguments.len() <= Self::MAX_ARGUMENTS,
            "too many prompt arguments"
        );
        self.arguments = arguments;
        self
    }

    pub(crate) const fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) const fn describe(&self) -> &'static str {
        self.description
    }

    pub(crate) const fn text(&self) -> &'static str {
        self.text
    }

    pub(crate) const fn argument_list(&self) -> &'static [PromptArgument] {
        self.arguments
    }
}

/// One argument of a [`Prompt`]: a string the client fills in — any text (with
/// [`suggest`](Self::suggest)ions, or none), or one of a closed set of values
/// ([`values`](Self::values), [`tool`](Self::tool)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptArgument {
    name: &'static str,
    description: &'static str,
    required: bool,
    values: Values,
}

/// What a prompt argument takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Values {
    /// Any string (nothing is completed).
    Any,
    /// Any string; these are completed.
    Suggested(&'static [&'static str]),
    /// Only these.
    Listed(&'static [&'static str]),
    /// Only the name of a registered tool the caller may call.
    Tools,
}

impl PromptArgument {
    /// An optional argument.
    pub const fn new(name: &'static str, description: &'static str) -> Self {
        PromptArgument {
            name,
            description,
            required: false,
            values: Values::Any,
        }
    }

    /// `prompts/get` without it is refused.
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// The values it takes, and only those: `prompts/get` refuses any other string (compared
    /// exactly, escapes decoded; the refusal names the argument, never the string), and
    /// `completion/complete` offers those that start with what the user typed.
    pub const fn values(mut self, values: &'static [&'static str]) -> Self {
        self.values = Values::Listed(values);
        self
    }

    /// Any text, and `completion/complete` offers these as the user types: suggestions for a
    /// free-form argument. The text is written into the prompt as sent: where a closed set
    /// will do, declare it with [`values`](Self::values).
    pub const fn suggest(mut self, values: &'static [&'static str]) -> Self {
        self.values = Values::Suggested(values);
        self
    }

    /// It names one of the device's tools: its values are the names of the registered tools
    /// the caller may call — the rule `tools/call` enforces: a user-only tool only for a person
    /// ([`Principal::User`](crate::Principal::User)) or under
    /// [`UserToolPolicy::AllowModel`](crate::server::UserToolPolicy::AllowModel). So the model
    /// is never offered, nor handed in a prompt, a tool its `tools/list` does not show. A "use
    /// this tool" prompt takes this instead of a list of names.
    pub const fn tool(mut self) -> Self {
        self.values = Values::Tools;
        self
    }

    pub(crate) const fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) const fn describe(&self) -> &'static str {
        self.description
    }

    pub(crate) const fn is_required(&self) -> bool {
        self.required
    }

    pub(crate) const fn values_taken(&self) -> Values {
        self.values
    }
}

/// Reads a live resource's current contents into the reply: `reply.json(…)`, `reply.text(…)`,
/// `Output::int(…)` (served as `text`), or `reply.image(…)` / `reply.content(…)` for binary
/// contents (a camera frame: each image or audio block is served as a base64 `blob` with its
/// own `mimeType`, each text block as `text`). A failure is answered as a JSON-RPC error with
/// its message.
pub type Reader<C> = fn(&mut C, &mut crate::Reply<'_>) -> crate::ToolResult;

/// A resource whose contents are read from the device when a client asks (a sensor, a button's
/// press count, the battery), and which the firmware *publishes* when it changes
/// ([`Server::publish`](crate::Server::publish)): subscribed clients then get
/// `notifications/resources/updated` (2025 revisions: after `resources/subscribe`; 2026-07-28: on a
/// `subscriptions/listen` stream that names it). Register it with
/// [`Server::register_resource`](crate::Server::register_resource).
///
/// ```
/// use mcp_core::{Output, Reply, ToolResult};
/// use mcp_core::registry::LiveResource;
///
/// struct Board { millicelsius: i32 }
/// fn temperature(b: &mut Board, r: &mut Reply<'_>) -> ToolResult {
///     let t = b.millicelsius;
///     r.json(|o| { o.int("millicelsius", t.into()); })
/// }
/// static TEMPERATURE: LiveResource<Board> = LiveResource::new(
///     "device://sensors/temperature", "temperature", "application/json", temperature,
/// ).description("Board temperature");
/// ```
pub struct LiveResource<C> {
    listing: Listing,
    read: Reader<C>,
}

impl<C> core::fmt::Debug for LiveResource<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LiveResource")
            .field("uri", &self.listing.uri)
            .finish_non_exhaustive()
    }
}

impl<C> LiveResource<C> {
    /// A live resource at `uri` whose contents `read` produces.
    pub const fn new(
        uri: &'static str,
        name: &'static str,
        mime_type: &'static str,
        read: Reader<C>,
    ) -> Self {
        LiveResource {
            listing: Listing::new(uri, name, mime_type),
            read,
        }
    }

    listed!();

    pub(crate) const fn reader(&self) -> Reader<C> {
        self.read
    }
}
