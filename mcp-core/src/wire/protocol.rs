//! The protocol text the engine writes by hand: every constant fragment of its messages, named
//! and spelled once.
//!
//! Messages are written straight into the caller's buffer ([`Writer`](super::Writer)): the
//! variable parts escaped as they go, the constant parts as byte strings. Those are all here. A
//! fragment made of others is joined from them at compile time ([`join!`]): a writer still puts
//! it with one copy, as it would a literal joined by hand, and a key such as `isError` is spelled
//! in one place however many fragments hold it. Tests compare what the engine writes with exact
//! texts, and the interop suites read it with real clients.
//!
//! # Naming
//!
//! - A member's fragment is named for its key and holds the comma before it and the colon after
//!   it: [`DESCRIPTION`] is `,"description":`. [`first`] drops the comma, for a first member.
//! - `…_OPEN` ends inside what it opens (`{`, `[`, or a string's `"`), `…_END` closes.
//! - A fragment for one message's head is named for the message ([`PROGRESS_NOTIFICATION`]).
#![cfg_attr(
    not(all(feature = "modern", feature = "resources", feature = "confirm")),
    allow(
        dead_code,
        reason = "the fragments of a feature that is off are never written"
    )
)]

/// Joins byte strings (constants) at compile time into one `&'static [u8]`.
macro_rules! join {
    ($($part:expr),+ $(,)?) => {{
        const PARTS: &[&[u8]] = &[$($part),+];
        const BYTES: [u8; $crate::wire::protocol::joined_len(PARTS)] =
            $crate::wire::protocol::joined(PARTS);
        &BYTES
    }};
}
pub(crate) use join;

/// The length of `parts` joined.
pub(crate) const fn joined_len(parts: &[&[u8]]) -> usize {
    let mut len = 0;
    let mut rest = parts;
    while let [part, tail @ ..] = rest {
        len += part.len();
        rest = tail;
    }
    len
}

/// `parts` joined (`N` is [`joined_len`]; evaluated when a constant is built).
pub(crate) const fn joined<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut bytes = [0u8; N];
    let mut to: &mut [u8] = &mut bytes;
    let mut rest = parts;
    while let [part, tail @ ..] = rest {
        let (head, after) = to.split_at_mut(part.len());
        head.copy_from_slice(part);
        to = after;
        rest = tail;
    }
    assert!(to.is_empty(), "N is the joined length");
    bytes
}

/// A member's fragment (`,"key":`) as the first member of an object: without the comma.
pub(crate) const fn first(member: &'static [u8]) -> &'static [u8] {
    match member {
        [b',', rest @ ..] => rest,
        _ => member,
    }
}

/// Member fragments: `NAME = "key"` defines `NAME` as `,"key":` (see [Naming](self#naming)).
macro_rules! keys {
    ($($(#[$doc:meta])* $name:ident = $key:literal,)*) => {
        $(
            #[doc = concat!("`,\"", $key, "\":`")]
            $(#[$doc])*
            pub(crate) const $name: &[u8] = concat!(",\"", $key, "\":").as_bytes();
        )*
    };
}

/// The head of a notification of `method`, up to its params' members (and `rest`).
macro_rules! notification {
    ($method:literal $(, $rest:expr)*) => {
        join!(NOTIFICATION_HEAD, concat!("\"", $method, "\"").as_bytes(), PARAMS_OPEN $(, $rest)*)
    };
}

// The member keys the engine writes, each a fragment `,"key":` (see Naming above).
keys! {
    // JSON-RPC 2.0
    ID = "id",
    METHOD = "method",
    RESULT = "result",
    ERROR = "error",
    CODE = "code",
    MESSAGE = "message",
    DATA = "data",
    // Notifications
    PROGRESS_TOKEN = "progressToken",
    PROGRESS = "progress",
    TOTAL = "total",
    LEVEL = "level",
    LOGGER = "logger",
    META = "meta",
    // Tool results
    TYPE = "type",
    TEXT = "text",
    STRUCTURED_CONTENT = "structuredContent",
    IS_ERROR = "isError",
    EVIDENCE = "evidence",
    COMMANDED = "commanded",
    OBSERVED = "observed",
    TOLERANCE = "tolerance",
    UNIT = "unit",
    // Content blocks, resources and prompts
    URI = "uri",
    NAME = "name",
    DESCRIPTION = "description",
    MIME_TYPE = "mimeType",
    BLOB = "blob",
    ARGUMENTS = "arguments",
    HAS_MORE = "hasMore",
    // Listings, initialize, discover and the 2026-07-28 members
    INPUT_SCHEMA = "inputSchema",
    OUTPUT_SCHEMA = "outputSchema",
    VERSION = "version",
    INSTRUCTIONS = "instructions",
    REQUESTED = "requested",
    RESULT_TYPE = "resultType",
    TTL_MS = "ttlMs",
    CACHE_SCOPE = "cacheScope",
    // Tasks
    STATUS_MESSAGE = "statusMessage",
    /// (the status tool's report: the evidence of the start)
    STARTED = "started",
    CREATED_AT = "createdAt",
    LAST_UPDATED_AT = "lastUpdatedAt",
    /// (2025-11-25; 2026-07-28 says [`TTL_MS`])
    TTL = "ttl",
    /// (2025-11-25)
    POLL_INTERVAL = "pollInterval",
    /// (2026-07-28)
    POLL_INTERVAL_MS = "pollIntervalMs",
    // Confirmation
    REQUESTED_SCHEMA = "requestedSchema",
    QUESTION = "question",
    CONFIRMED = "confirmed",
    REASON = "reason",
    // What came after a call's answer
    TOOL = "tool",
    STATUS = "status",
    // JSON Schema
    MINIMUM = "minimum",
    MAXIMUM = "maximum",
    MIN_LENGTH = "minLength",
    MAX_LENGTH = "maxLength",
    MULTIPLE_OF = "multipleOf",
    DEFAULT = "default",
    // Transports
    /// (xiaozhi's envelope)
    SESSION_ID = "session_id",
    /// (xiaozhi's `listen` frame)
    STATE = "state",
    /// (MQTT presence)
    SERVER_NAME = "server_name",
    /// (RFC 9728 protected-resource metadata)
    AUTHORIZATION_SERVERS = "authorization_servers",
    /// (RFC 9728 protected-resource metadata)
    SCOPES_SUPPORTED = "scopes_supported",
}

// ---- JSON-RPC 2.0 --------------------------------------------------------------------------

/// `"jsonrpc":"2.0"`: the member every message starts with (the checking pass knows it whole).
pub(crate) const JSONRPC: &[u8] = br#""jsonrpc":"2.0""#;
/// `{"jsonrpc":"2.0","id":`: a response (or a request of this engine's), its id next.
pub(crate) const RESPONSE_HEAD: &[u8] = join!(b"{", JSONRPC, ID);
/// `{"jsonrpc":"2.0","method":`: a notification, its method next.
pub(crate) const NOTIFICATION_HEAD: &[u8] = join!(b"{", JSONRPC, METHOD);
/// `,"params":{`
pub(crate) const PARAMS_OPEN: &[u8] = br#","params":{"#;
/// `,"result":{`
pub(crate) const RESULT_OPEN: &[u8] = join!(RESULT, b"{");
/// `,"error":{"code":`
pub(crate) const ERROR_OPEN: &[u8] = join!(ERROR, b"{", first(CODE));

// ---- Notifications ---------------------------------------------------------------------------

/// `notifications/progress` up to its token.
pub(crate) const PROGRESS_NOTIFICATION: &[u8] =
    notification!("notifications/progress", first(PROGRESS_TOKEN));
/// `notifications/message` (a log message) up to its level.
pub(crate) const LOG_NOTIFICATION: &[u8] = notification!("notifications/message", first(LEVEL));
/// `notifications/tasks/status` up to its params' members.
pub(crate) const TASK_STATUS_NOTIFICATION: &[u8] = notification!("notifications/tasks/status");
/// `notifications/resources/updated` up to its params' members.
pub(crate) const RESOURCE_UPDATED_NOTIFICATION: &[u8] =
    notification!("notifications/resources/updated");
/// `notifications/subscriptions/acknowledged` up to its params' members.
pub(crate) const SUBSCRIPTIONS_ACKNOWLEDGED_NOTIFICATION: &[u8] =
    notification!("notifications/subscriptions/acknowledged");
/// `notifications/server/online` (MQTT presence) up to the server's name.
pub(crate) const SERVER_ONLINE_NOTIFICATION: &[u8] =
    notification!("notifications/server/online", first(SERVER_NAME));
/// `{"session_id":`: a xiaozhi envelope with a session, its id next.
pub(crate) const SESSION_ENVELOPE_OPEN: &[u8] = join!(b"{", first(SESSION_ID));
/// `"type":"mcp","payload":`: a xiaozhi envelope's members up to the message it carries.
pub(crate) const MCP_PAYLOAD: &[u8] = br#""type":"mcp","payload":"#;
/// `"type":"listen","state":"detect","text":"`: a xiaozhi detect frame's members up to its text
/// (the string open; the backend speaks a `[device_call]` text, any other starts a model turn).
pub(crate) const DETECT_TEXT_OPEN: &[u8] = join!(
    first(TYPE),
    br#""listen""#,
    STATE,
    br#""detect""#,
    TEXT,
    b"\""
);

// ---- Tool results ----------------------------------------------------------------------------

/// `"content":[`: a result's content blocks (its first member).
pub(crate) const CONTENT_OPEN: &[u8] = br#""content":["#;
/// `{"value":`: the structured content of a result that is one value.
pub(crate) const VALUE_OPEN: &[u8] = br#"{"value":"#;
/// `,"isError":true`: a failed call. (A result that did not fail says nothing: `isError` is
/// false when absent.)
pub(crate) const IS_ERROR_TRUE: &[u8] = join!(IS_ERROR, b"true");
/// `{"type":"text","text":`: a text block, its text next (a JSON string).
pub(crate) const TEXT_BLOCK: &[u8] = join!(b"{", first(TYPE), br#""text""#, TEXT);
/// `{"type":"text","text":"`: a text block, inside its text.
pub(crate) const TEXT_BLOCK_OPEN: &[u8] = join!(TEXT_BLOCK, b"\"");
/// `{"type":"text","text":""}`
pub(crate) const EMPTY_TEXT_BLOCK: &[u8] = join!(TEXT_BLOCK, br#""""#, b"}");
/// `"content":[{"type":"text","text":`: a result's first text, next (a JSON string).
pub(crate) const FIRST_TEXT: &[u8] = join!(CONTENT_OPEN, TEXT_BLOCK);
/// `"content":[{"type":"text","text":"`: a result's first text, inside it.
pub(crate) const FIRST_TEXT_OPEN: &[u8] = join!(CONTENT_OPEN, TEXT_BLOCK_OPEN);
/// `"}]`: the end of a first text written inside its string ([`FIRST_TEXT_OPEN`]).
pub(crate) const FIRST_TEXT_END: &[u8] = br#""}]"#;
/// `"}],"isError":true`: the first text ends a failed call's result.
pub(crate) const FIRST_TEXT_END_FAILED: &[u8] = join!(FIRST_TEXT_END, IS_ERROR_TRUE);
/// `; nothing was changed`: the end of a refusal's words a person hears (a call refused before
/// its handler ran, reported as a JSON-RPC error that a xiaozhi backend speaks as it is).
pub(crate) const NOTHING_CHANGED: &[u8] = b"; nothing was changed";
/// `"}],"structuredContent":`: the first text ends, the structured content is next.
pub(crate) const FIRST_TEXT_END_STRUCTURED: &[u8] = join!(FIRST_TEXT_END, STRUCTURED_CONTENT);
/// `"}],"structuredContent":{"value":`
pub(crate) const FIRST_TEXT_END_VALUE: &[u8] = join!(FIRST_TEXT_END_STRUCTURED, VALUE_OPEN);
/// `,"structuredContent":{"value":"`: a result that is one string, inside it.
pub(crate) const STRING_VALUE_OPEN: &[u8] = join!(STRUCTURED_CONTENT, VALUE_OPEN, b"\"");
/// `,"error":"`: a failed call's reason again, for xiaozhi's backends, inside its string.
pub(crate) const ERROR_STRING_OPEN: &[u8] = join!(ERROR, b"\"");

// ---- Content blocks, resources and prompts -----------------------------------------------------

/// `{"type":`: a content block, its type next.
pub(crate) const BLOCK_OPEN: &[u8] = join!(b"{", first(TYPE));
/// `,"resource":{"uri":`: an embedded resource block's resource, its uri next.
pub(crate) const RESOURCE_OPEN: &[u8] = join!(br#","resource":{"#, first(URI));
/// `{"uri":`: an entry with a uri, first.
pub(crate) const URI_ENTRY: &[u8] = join!(b"{", first(URI));
/// `{"name":`: an entry with a name, first.
pub(crate) const NAME_ENTRY: &[u8] = join!(b"{", first(NAME));
/// `"resources":[`
pub(crate) const RESOURCES_OPEN: &[u8] = br#""resources":["#;
/// `"resourceTemplates":[]`
pub(crate) const NO_RESOURCE_TEMPLATES: &[u8] = br#""resourceTemplates":[]"#;
/// `"contents":[`
pub(crate) const CONTENTS_OPEN: &[u8] = br#""contents":["#;
/// `"prompts":[`
pub(crate) const PROMPTS_OPEN: &[u8] = br#""prompts":["#;
/// `,"messages":[{"role":"user","content":{"type":"text","text":`: a prompt's one message, its
/// text next.
pub(crate) const USER_MESSAGE: &[u8] =
    join!(br#","messages":[{"role":"user","content":"#, TEXT_BLOCK);
/// `,"arguments":[{"name":`: a prompt's argument list, the first argument's name next.
pub(crate) const ARGUMENTS_OPEN: &[u8] = join!(ARGUMENTS, b"[", NAME_ENTRY);
/// `,"required":true`: a prompt argument the client must fill in.
pub(crate) const REQUIRED_TRUE: &[u8] = br#","required":true"#;
/// `"completion":{"values":[`: `completion/complete`'s values next.
pub(crate) const COMPLETION_OPEN: &[u8] = br#""completion":{"values":["#;
/// `"_meta":{`
pub(crate) const META_OPEN: &[u8] = br#""_meta":{"#;
/// `,"notifications":{`
pub(crate) const NOTIFICATIONS_OPEN: &[u8] = br#","notifications":{"#;
/// `"resourceSubscriptions":[`
pub(crate) const SUBSCRIPTIONS_OPEN: &[u8] = br#""resourceSubscriptions":["#;

// ---- Listings, initialize, discover and the 2026-07-28 members --------------------------------

/// `"tools":[`
pub(crate) const TOOLS_OPEN: &[u8] = br#""tools":["#;
/// `,"nextCursor":"`: a page's cursor, inside its string.
pub(crate) const NEXT_CURSOR_OPEN: &[u8] = br#","nextCursor":""#;
/// `,"annotations":{`
pub(crate) const ANNOTATIONS_OPEN: &[u8] = br#","annotations":{"#;
/// `"audience":["user"]`: a tool for the device's user only.
pub(crate) const AUDIENCE_USER: &[u8] = br#""audience":["user"]"#;
/// `,"execution":{"taskSupport":`
pub(crate) const TASK_SUPPORT_OPEN: &[u8] = br#","execution":{"taskSupport":"#;
/// `"protocolVersion":`
pub(crate) const PROTOCOL_VERSION: &[u8] = br#""protocolVersion":"#;
/// `"supportedVersions":`
pub(crate) const SUPPORTED_VERSIONS: &[u8] = br#""supportedVersions":"#;
/// `,"capabilities":{`
pub(crate) const CAPABILITIES_OPEN: &[u8] = br#","capabilities":{"#;
/// `},"serverInfo":{"name":`: the capabilities end, the server's name is next.
pub(crate) const SERVER_INFO_OPEN: &[u8] = join!(br#"},"serverInfo":{"#, first(NAME));
/// `"tools":{},"logging":{}`: the capabilities every server has.
pub(crate) const TOOLS_AND_LOGGING: &[u8] = br#""tools":{},"logging":{}"#;
/// `,"resources":{"subscribe":true}`
pub(crate) const RESOURCES_SUBSCRIBE: &[u8] = br#","resources":{"subscribe":true}"#;
/// `,"resources":{}`
pub(crate) const RESOURCES: &[u8] = br#","resources":{}"#;
/// `,"prompts":{}`
pub(crate) const PROMPTS: &[u8] = br#","prompts":{}"#;
/// `,"completions":{}`: `completion/complete` for the prompts' arguments.
pub(crate) const COMPLETIONS: &[u8] = br#","completions":{}"#;
/// `,"extensions":{"io.modelcontextprotocol/tasks":{}}`: the 2026-07-28 tasks extension.
pub(crate) const TASKS_EXTENSION: &[u8] = br#","extensions":{"io.modelcontextprotocol/tasks":{}}"#;
/// `,"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`: 2025-11-25 tasks.
pub(crate) const TASKS: &[u8] =
    br#","tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}"#;
/// `{"supported":`: the data of an unsupported version's error, the versions next.
pub(crate) const SUPPORTED_OPEN: &[u8] = br#"{"supported":"#;
/// `,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":`
pub(crate) const SERVER_INFO_META_OPEN: &[u8] = join!(
    b",",
    META_OPEN,
    br#""io.modelcontextprotocol/serverInfo":{"#,
    first(NAME)
);
/// `,"_meta":{"io.github.mcu-mcp/evidence":`: a result's evidence as data, where the SDKs keep
/// a result's `_meta` (they drop the top-level `evidence` member). A `_meta` key of this project
/// (reverse DNS of its GitHub home; the second label, `github`, is not MCP's reserved space).
pub(crate) const EVIDENCE_META: &[u8] = join!(b",", META_OPEN, br#""io.github.mcu-mcp/evidence":"#);
/// `,"cacheScope":"public"`: a result the same for every client.
pub(crate) const CACHE_SCOPE_PUBLIC: &[u8] = join!(CACHE_SCOPE, br#""public""#);
/// `,"ttlMs":0,"cacheScope":"private"`: a live reading, stale at once and the caller's own.
pub(crate) const LIVE_CACHE_HINTS: &[u8] = join!(TTL_MS, b"0", CACHE_SCOPE, br#""private""#);
/// `{"requiredCapabilities":{`: the data of -32021, the missing capabilities next.
pub(crate) const REQUIRED_CAPABILITIES_OPEN: &[u8] = br#"{"requiredCapabilities":{"#;
/// The data of -32021 for a tool that runs only as a task.
pub(crate) const REQUIRES_TASKS: &[u8] =
    join!(REQUIRED_CAPABILITIES_OPEN, first(TASKS_EXTENSION), b"}}");
/// The data of -32021 for a tool that asks a person first.
pub(crate) const REQUIRES_ELICITATION: &[u8] =
    join!(REQUIRED_CAPABILITIES_OPEN, br#""elicitation":{}"#, b"}}");

// ---- Transports: RFC 9728 protected-resource metadata (transport::auth) -----------------------

/// `{"resource":"`: the metadata document, inside the endpoint's URL.
pub(crate) const RESOURCE_METADATA_OPEN: &[u8] = br#"{"resource":""#;
/// `,"bearer_methods_supported":["header"]}`: the metadata document's last member and its end.
pub(crate) const BEARER_IN_HEADER_END: &[u8] = br#","bearer_methods_supported":["header"]}"#;

// ---- Tasks -------------------------------------------------------------------------------------

/// `"taskId":"`: a task's id, inside its string.
pub(crate) const TASK_ID_OPEN: &[u8] = br#""taskId":""#;
/// `","status":`: the task id ends, its status is next.
pub(crate) const TASK_STATUS: &[u8] = br#"","status":"#;
/// `,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"`: what a message of a task
/// says of it, inside the task's id.
/// The length of `,"_meta":{`, which a `_meta` member fragment (`SERVER_INFO_META_OPEN`,
/// `EVIDENCE_META`, `RELATED_TASK_OPEN`) starts with: past it, the fragment is its key.
pub(crate) const META_MEMBER_HEAD: usize = 1 + META_OPEN.len();
pub(crate) const RELATED_TASK_OPEN: &[u8] = join!(
    b",",
    META_OPEN,
    br#""io.modelcontextprotocol/related-task":{"#,
    TASK_ID_OPEN
);
/// `{"task":{`: a 2025-11-25 task start's result.
pub(crate) const TASK_OPEN: &[u8] = br#"{"task":{"#;
/// `"tasks":[`
pub(crate) const TASKS_OPEN: &[u8] = br#""tasks":["#;
/// `"}],"structuredContent":{"task_id":"`: a plain call's task start, inside the task's id.
pub(crate) const STARTED_TASK_ID_OPEN: &[u8] = join!(FIRST_TEXT_END_STRUCTURED, br#"{"task_id":""#);
/// `","status":"working","poll_with":"`: then the status tool's name.
pub(crate) const STARTED_POLL_WITH_OPEN: &[u8] = br#"","status":"working","poll_with":""#;

// ---- Confirmation ------------------------------------------------------------------------------

/// `"elicitation/create"`
const ELICITATION_CREATE: &[u8] = br#""elicitation/create""#;
/// `,"method":"elicitation/create","params":{`: the request that asks a client's user, after
/// its id.
pub(crate) const ELICITATION_REQUEST: &[u8] = join!(METHOD, ELICITATION_CREATE, PARAMS_OPEN);
/// `"inputRequests":{"confirm":{"method":"elicitation/create","params":{`: the same request in a
/// 2026-07-28 `input_required` result.
pub(crate) const INPUT_REQUEST_OPEN: &[u8] = join!(
    br#""inputRequests":{"confirm":{"#,
    first(METHOD),
    ELICITATION_CREATE,
    PARAMS_OPEN
);
/// `}}},"requestState":`: the input request ends, the state to send back is next.
pub(crate) const REQUEST_STATE: &[u8] = br#"}}},"requestState":"#;
/// `"mode":"form",`
pub(crate) const FORM_MODE: &[u8] = br#""mode":"form","#;
/// The requested schema up to its one field's description: a boolean `confirm`.
pub(crate) const CONFIRM_SCHEMA_OPEN: &[u8] = join!(
    OBJECT_SCHEMA_OPEN,
    br#""confirm":"#,
    TYPE_OPEN,
    br#""boolean","title":"Confirm""#,
    DESCRIPTION
);
/// The requested schema after the field's description.
pub(crate) const CONFIRM_SCHEMA_END: &[u8] =
    join!(DEFAULT, b"false}}", REQUIRED_OPEN, br#""confirm"]}"#);
/// `}],"structuredContent":{"status":"awaiting_confirmation","confirm_on_device_within_s":`:
/// a held call's answer, after its first text (a JSON string), the seconds left next.
pub(crate) const AWAITING_OPEN: &[u8] = join!(
    b"}]",
    STRUCTURED_CONTENT,
    br#"{"status":"awaiting_confirmation","confirm_on_device_within_s":"#
);
/// The log message that tells a held call's outcome, up to the tool's name.
pub(crate) const CONFIRMATION_NOTIFICATION: &[u8] = join!(
    LOG_NOTIFICATION,
    br#""notice""#,
    LOGGER,
    br#""confirmation""#,
    DATA,
    br#"{"tool":"#
);

/// The log message that tells how a plain call's task ended (the call was answered already),
/// up to its task id: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":
/// "notice","logger":"task","data":{"task_id":`.
pub(crate) const TASK_ENDED_NOTIFICATION: &[u8] = join!(
    LOG_NOTIFICATION,
    br#""notice""#,
    LOGGER,
    br#""task""#,
    DATA,
    br#"{"task_id":"#
);

// ---- JSON Schema -------------------------------------------------------------------------------

/// `{"type":`: a schema, its type next.
pub(crate) const TYPE_OPEN: &[u8] = join!(b"{", first(TYPE));
/// `"type":"object","properties":{`: an object schema's members, inside its properties.
pub(crate) const OBJECT_PROPERTIES_OPEN: &[u8] = join!(first(TYPE), br#""object","properties":{"#);
/// `{"type":"object","properties":{`
pub(crate) const OBJECT_SCHEMA_OPEN: &[u8] = join!(b"{", OBJECT_PROPERTIES_OPEN);
/// `,"enum":[`
pub(crate) const ENUM_OPEN: &[u8] = br#","enum":["#;
/// `,"required":[`
pub(crate) const REQUIRED_OPEN: &[u8] = br#","required":["#;
/// `,"additionalProperties":false}`: the end of an input schema.
pub(crate) const NO_ADDITIONAL_PROPERTIES_END: &[u8] = br#","additionalProperties":false}"#;

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn fragments_join_as_written_by_hand() {
        assert_eq!(RESPONSE_HEAD, br#"{"jsonrpc":"2.0","id":"#);
        assert_eq!(
            PROGRESS_NOTIFICATION,
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"#
        );
        assert_eq!(FIRST_TEXT_OPEN, br#""content":[{"type":"text","text":""#);
        assert_eq!(FIRST_TEXT_END_FAILED, br#""}],"isError":true"#);
        assert_eq!(
            CONFIRM_SCHEMA_OPEN,
            br#"{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","description":"#
        );
        assert_eq!(
            CONFIRMATION_NOTIFICATION,
            br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"notice","logger":"confirmation","data":{"tool":"#
        );
        assert_eq!(
            DETECT_TEXT_OPEN,
            br#""type":"listen","state":"detect","text":""#
        );
        assert_eq!(first(DESCRIPTION), br#""description":"#);
        assert_eq!(first(b"{"), b"{");
    }
}
