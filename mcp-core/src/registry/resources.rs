//! Static resources and prompts: read-only text a device can publish (a manual, a wiring note,
//! a prompt that explains the device to a model). Declared in [`Config`](crate::Config); the
//! engine answers `resources/*` and `prompts/*` only when there are some.

/// A text resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    uri: &'static str,
    name: &'static str,
    description: Option<&'static str>,
    mime_type: &'static str,
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
            uri,
            name,
            description: None,
            mime_type,
            text,
        }
    }

    /// A description for the client.
    pub const fn description(mut self, v: &'static str) -> Self {
        self.description = Some(v);
        self
    }

    /// The URI.
    pub const fn uri(&self) -> &'static str {
        self.uri
    }

    pub(crate) const fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) const fn describe(&self) -> Option<&'static str> {
        self.description
    }

    pub(crate) const fn mime_type(&self) -> &'static str {
        self.mime_type
    }

    pub(crate) const fn text(&self) -> &'static str {
        self.text
    }
}

/// A prompt without arguments: one user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    name: &'static str,
    description: &'static str,
    text: &'static str,
}

impl Prompt {
    /// A prompt named `name` whose message is `text`.
    pub const fn new(name: &'static str, description: &'static str, text: &'static str) -> Self {
        Prompt {
            name,
            description,
            text,
        }
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
}
