//! The one checking pass that also indexes the message: [`Frame::parse`].
//!
//! [`Json::parse`] checks a whole text; [`Frame::parse`] checks a JSON-RPC message exactly as
//! strictly (the same grammar, the same errors at the same offsets, the same nesting limit) and,
//! in the same pass, records where the members that dispatch needs are: a small fixed table on
//! the stack, like a simdjson tape but bounded.
//!
//! | where | members recorded |
//! |---|---|
//! | the message | `jsonrpc`, `id`, `method`, `params` (and whether `result` or `error` occurs) |
//! | `params` | `name`, `arguments`, `task`, `_meta` |
//! | `params.arguments` | its first [`INDEXED_ARGUMENTS`] members, in document order |
//! | `params._meta` | the 2026-07-28 keys, `progressToken`, the idempotency key |
//!
//! Routing, validation and argument access then read the table instead of walking the bytes
//! again. Nothing is recorded that was not checked: a `Frame` exists only for a complete, valid
//! JSON text.

use super::json::{
    Json, JsonError, JsonStr, MAX_DEPTH_LIMIT, check_number, check_string_escapes, check_utf8,
    check_value, skip_ws,
};
use super::request::{Message, Top};

/// How many members of `params.arguments` the index records. A tool declares at most
/// [`MAX_PARAMS`](crate::schema::MAX_PARAMS) parameters; an `arguments` object with more members
/// than this is walked again by the validator (see [`Frame::arguments`]).
pub const INDEXED_ARGUMENTS: usize = 8;

/// A member the index records (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Member {
    /// `jsonrpc`
    Jsonrpc,
    /// `id`
    Id,
    /// `method`
    Method,
    /// `params`
    Params,
    /// `params.name`
    Name,
    /// `params.arguments`
    Arguments,
    /// `params.task`
    Task,
    /// `params._meta`
    Meta,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`
    ProtocolVersion,
    /// `params._meta["io.modelcontextprotocol/clientCapabilities"]`
    ClientCapabilities,
    /// `params._meta["io.modelcontextprotocol/logLevel"]`
    LogLevel,
    /// `params._meta.progressToken`
    ProgressToken,
    /// `params._meta["io.github.mcu-mcp/idempotencyKey"]`
    IdempotencyKey,
}

/// The keys, in [`Member`] order.
const KEYS: [&str; 13] = [
    "jsonrpc",
    "id",
    "method",
    "params",
    "name",
    "arguments",
    "task",
    "_meta",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
    "progressToken",
    "io.github.mcu-mcp/idempotencyKey",
];

impl Member {
    /// Every member, in order.
    pub const ALL: [Member; 13] = [
        Member::Jsonrpc,
        Member::Id,
        Member::Method,
        Member::Params,
        Member::Name,
        Member::Arguments,
        Member::Task,
        Member::Meta,
        Member::ProtocolVersion,
        Member::ClientCapabilities,
        Member::LogLevel,
        Member::ProgressToken,
        Member::IdempotencyKey,
    ];

    /// The member's key (decoded).
    pub const fn key(self) -> &'static str {
        match self {
            Member::Jsonrpc => KEYS[0],
            Member::Id => KEYS[1],
            Member::Method => KEYS[2],
            Member::Params => KEYS[3],
            Member::Name => KEYS[4],
            Member::Arguments => KEYS[5],
            Member::Task => KEYS[6],
            Member::Meta => KEYS[7],
            Member::ProtocolVersion => KEYS[8],
            Member::ClientCapabilities => KEYS[9],
            Member::LogLevel => KEYS[10],
            Member::ProgressToken => KEYS[11],
            Member::IdempotencyKey => KEYS[12],
        }
    }

    /// The member whose object holds this one (`None` for the message's own members).
    pub const fn parent(self) -> Option<Member> {
        match self {
            Member::Jsonrpc | Member::Id | Member::Method | Member::Params => None,
            Member::Name | Member::Arguments | Member::Task | Member::Meta => Some(Member::Params),
            _ => Some(Member::Meta),
        }
    }
}

/// What the index knows of one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<'a> {
    /// The member does not occur: its object has no such key, or the object itself is absent or
    /// not an object.
    Absent,
    /// The member occurs once, with this value.
    Once(Json<'a>),
    /// The key occurs more than once in its object.
    Repeated,
}

impl<'a> Found<'a> {
    /// The value when the member occurs once.
    pub const fn once(self) -> Option<Json<'a>> {
        match self {
            Found::Once(v) => Some(v),
            _ => None,
        }
    }
}

/// Which object the keys being read belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Message,
    Params,
    Arguments,
    Meta,
    /// A recorded member's value that is not one of the objects above.
    Other,
}

impl Level {
    /// The range of [`KEYS`] at this level.
    const fn keys(self) -> (usize, usize) {
        match self {
            Level::Message => (0, 4),
            Level::Params => (4, 8),
            Level::Meta => (8, 13),
            Level::Arguments | Level::Other => (0, 0),
        }
    }
}

/// A message checked completely, with the index of the members dispatch needs.
///
/// Where an object holds a key more than once the index says so ([`Found::Repeated`]); where
/// `params`, `params.arguments` or `params._meta` occurs more than once, the members below it
/// are those of its last occurrence (as a JSON object's last member wins in most parsers).
#[derive(Debug, Clone)]
pub struct Frame<'a> {
    root: Json<'a>,
    values: [Option<Json<'a>>; 13],
    /// Bit `m` set: member `m` occurs more than once in its object.
    repeated: u16,
    /// Bit `m` set: member `m` is a string with escape sequences.
    escaped: u16,
    result_or_error: bool,
    arguments: [(JsonStr<'a>, Json<'a>); INDEXED_ARGUMENTS],
    /// Members of `params.arguments` seen (saturates past [`INDEXED_ARGUMENTS`]).
    argument_count: u8,
}

impl<'a> Frame<'a> {
    /// Checks `bytes` as one JSON text nested at most `max_depth` levels — exactly as
    /// [`Json::parse`] does, with the same errors — and indexes it.
    ///
    /// # Errors
    /// The [`JsonError`] [`Json::parse`] would give.
    ///
    /// # DoS warning
    /// Linear in the length of `bytes`; the recursion is at most four objects deep whatever the
    /// input (deeper values go to the iterative checker).
    pub fn parse(bytes: &'a [u8], max_depth: u8) -> Result<Self, JsonError> {
        let mut frame = Frame::new();
        frame.index(bytes, max_depth)?;
        Ok(frame)
    }

    /// An empty index, for [`index`](Self::index) to fill where it lies (the engine keeps it in
    /// its dispatch frame instead of moving it there).
    pub(crate) const fn new() -> Self {
        let empty = (JsonStr::from_checked(&[]), Json::from_checked(&[]));
        Frame {
            root: Json::from_checked(&[]),
            values: [None; 13],
            repeated: 0,
            escaped: 0,
            result_or_error: false,
            arguments: [empty; INDEXED_ARGUMENTS],
            argument_count: 0,
        }
    }

    /// [`parse`](Self::parse) into a [`new`](Self::new) frame.
    pub(crate) fn index(&mut self, bytes: &'a [u8], max_depth: u8) -> Result<(), JsonError> {
        check_utf8(bytes)?;
        let max_depth = max_depth.min(MAX_DEPTH_LIMIT);
        let start = skip_ws(bytes, 0);
        if start >= bytes.len() {
            return Err(JsonError::Empty);
        }
        let mut pass = Pass {
            b: bytes,
            max_depth,
        };
        let end = pass.value(self, start, Level::Message, 0)?;
        let after = skip_ws(bytes, end);
        if after != bytes.len() {
            return Err(JsonError::Syntax(after));
        }
        self.root = Json::from_checked(bytes.get(start..end).unwrap_or_default());
        Ok(())
    }

    /// The whole message (without surrounding whitespace).
    pub const fn root(&self) -> Json<'a> {
        self.root
    }

    /// What the index recorded for `member`.
    pub fn get(&self, member: Member) -> Found<'a> {
        let i = member as usize;
        match self.values.get(i).copied().flatten() {
            None => Found::Absent,
            Some(_) if self.repeated & (1 << i) != 0 => Found::Repeated,
            Some(v) => Found::Once(v),
        }
    }

    /// `true` when `member` is a string sent with escape sequences (compare it decoded; without
    /// escapes its raw bytes are its text).
    pub fn has_escapes(&self, member: Member) -> bool {
        self.escaped & (1 << member as usize) != 0
    }

    /// The members of `params.arguments` in document order, when it is an object of at most
    /// [`INDEXED_ARGUMENTS`] members (empty when it is absent or not an object); `None` when it
    /// has more (walk [`Json::members`] then).
    pub fn arguments(&self) -> Option<&[(JsonStr<'a>, Json<'a>)]> {
        self.arguments.get(..usize::from(self.argument_count))
    }

    /// Classifies the message, as [`Message::classify`] does from the root.
    pub fn message(&self) -> Message<'a> {
        if self.root.raw().first() != Some(&b'{') {
            return Message::not_an_object(self.root);
        }
        let [jsonrpc, id, method, params, ..] = self.values;
        Top {
            jsonrpc,
            id,
            method,
            params,
            duplicate: self.repeated & 0xF != 0,
            result_or_error: self.result_or_error,
        }
        .classify()
    }

    /// Forgets what was recorded below `member` (a `params`, `arguments` or `_meta` occurring
    /// again: what is below describes its last occurrence).
    fn clear_below(&mut self, member: usize) {
        let (from, to) = match member {
            3 => (4, 13),
            7 => (8, 13),
            _ => (0, 0),
        };
        for i in from..to {
            if let Some(v) = self.values.get_mut(i) {
                *v = None;
            }
            self.repeated &= !(1 << i);
            self.escaped &= !(1 << i);
        }
        if member == 3 || member == 5 {
            self.argument_count = 0;
        }
    }
}

/// The state of one checking pass.
struct Pass<'a> {
    b: &'a [u8],
    max_depth: u8,
}

/// Member numbers (indices into [`KEYS`]) of the objects the pass descends into.
const PARAMS: usize = 3;
const ARGUMENTS: usize = 5;
const META: usize = 7;
/// No recorded member.
const NONE: usize = usize::MAX;

impl<'a> Pass<'a> {
    /// Checks the value at `p` (not whitespace), `depth` containers deep; an object at one of
    /// the recorded levels has its members recorded. Returns the offset just past the value.
    fn value(
        &mut self,
        frame: &mut Frame<'a>,
        p: usize,
        level: Level,
        depth: u8,
    ) -> Result<usize, JsonError> {
        if level == Level::Other || self.b.get(p) != Some(&b'{') {
            // The iterative checker, with what is left of the nesting limit.
            let left = self.max_depth.saturating_sub(depth);
            return check_value(self.b, p, left).map_err(|e| match e {
                JsonError::TooDeep(_) => JsonError::TooDeep(self.max_depth),
                e => e,
            });
        }
        if depth >= self.max_depth {
            return Err(JsonError::TooDeep(self.max_depth));
        }
        let b = self.b;
        let mut p = skip_ws(b, p + 1);
        if b.get(p) == Some(&b'}') {
            return Ok(p + 1);
        }
        loop {
            if b.get(p) != Some(&b'"') {
                return Err(JsonError::Syntax(p));
            }
            let (key_end, escaped) = check_string_escapes(b, p)?;
            let key_start = p + 1;
            let raw = b.get(key_start..key_end - 1).unwrap_or_default();
            p = skip_ws(b, key_end);
            if b.get(p) != Some(&b':') {
                return Err(JsonError::Syntax(p));
            }
            let start = skip_ws(b, p + 1);
            let member = match (level, escaped) {
                (Level::Arguments, _) => NONE,
                (_, false) => member_of_plain(level, b, key_start, raw, frame),
                (_, true) => member_of_escaped(level, JsonStr::from_checked(raw), frame),
            };
            let child = match member {
                PARAMS => Level::Params,
                ARGUMENTS => Level::Arguments,
                META => Level::Meta,
                _ => Level::Other,
            };
            if child != Level::Other && frame.values.get(member).is_some_and(Option::is_some) {
                // Seen before: what is recorded below describes the last occurrence.
                frame.clear_below(member);
            }
            let mut value_escaped = false;
            let end = match b.get(start) {
                // Strings and numbers, the most common values, directly.
                Some(b'"') => {
                    let (end, escaped) = check_string_escapes(b, start)?;
                    value_escaped = escaped;
                    end
                }
                Some(b'-' | b'0'..=b'9') => check_number(b, start)?,
                _ => self.value(frame, start, child, depth + 1)?,
            };
            let value = Json::from_checked(b.get(start..end).unwrap_or_default());
            if let Some(slot) = frame.values.get_mut(member) {
                if slot.is_some() {
                    frame.repeated |= 1 << member;
                }
                *slot = Some(value);
                let bit = 1 << member;
                frame.escaped = if value_escaped {
                    frame.escaped | bit
                } else {
                    frame.escaped & !bit
                };
            } else if level == Level::Arguments {
                let n = usize::from(frame.argument_count);
                if let Some(entry) = frame.arguments.get_mut(n) {
                    *entry = (JsonStr::from_checked(raw), value);
                }
                frame.argument_count = frame.argument_count.saturating_add(1);
            }
            p = skip_ws(b, end);
            match b.get(p) {
                Some(b',') => p = skip_ws(b, p + 1),
                Some(b'}') => return Ok(p + 1),
                _ => return Err(JsonError::Syntax(p)),
            }
        }
    }
}

/// Up to the first 8 bytes of `s` as a little-endian word, zero-padded.
const fn pack(s: &[u8]) -> u64 {
    let mut word = 0u64;
    let mut shift = 0;
    let mut rest = s;
    while let [c, tail @ ..] = rest {
        if shift == 64 {
            break;
        }
        word |= (*c as u64) << shift;
        shift += 8;
        rest = tail;
    }
    word
}

/// The recorded member a key without escapes names at `level`, if any; `result` and `error` at
/// the top level set [`Frame::result_or_error`]. The key's first 8 bytes are compared as one
/// word (read from the message where 8 bytes remain, else packed), switched on the key's length:
/// a few instructions per key.
fn member_of_plain(level: Level, b: &[u8], at: usize, raw: &[u8], frame: &mut Frame<'_>) -> usize {
    let len = raw.len();
    let word = match b.get(at..at + 8) {
        Some(w) => {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(w);
            let mask = if len >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * len)) - 1
            };
            u64::from_le_bytes(bytes) & mask
        }
        None => pack(raw),
    };
    match (level, len) {
        (Level::Message, 7) if word == pack(b"jsonrpc") => 0,
        (Level::Message, 2) if word == pack(b"id") => 1,
        (Level::Message, 6) if word == pack(b"method") => 2,
        (Level::Message, 6) if word == pack(b"params") => PARAMS,
        (Level::Message, 6) if word == pack(b"result") => {
            frame.result_or_error = true;
            NONE
        }
        (Level::Message, 5) if word == pack(b"error") => {
            frame.result_or_error = true;
            NONE
        }
        (Level::Params, 4) if word == pack(b"name") => 4,
        (Level::Params, 9) if word == pack(b"arguments") && raw.last() == Some(&b's') => ARGUMENTS,
        (Level::Params, 4) if word == pack(b"task") => 6,
        (Level::Params, 5) if word == pack(b"_meta") => META,
        (Level::Meta, _) => {
            let (from, to) = Level::Meta.keys();
            KEYS.get(from..to)
                .unwrap_or_default()
                .iter()
                .position(|k| k.as_bytes() == raw)
                .map_or(NONE, |i| i + from)
        }
        _ => NONE,
    }
}

/// [`member_of_plain`] for a key sent with escapes: compared decoded.
fn member_of_escaped(level: Level, key: JsonStr<'_>, frame: &mut Frame<'_>) -> usize {
    let (from, to) = level.keys();
    let keys = KEYS.get(from..to).unwrap_or_default();
    match keys.iter().position(|k| key.eq_str(k)) {
        Some(i) => i + from,
        None => {
            if level == Level::Message && (key.eq_str("result") || key.eq_str("error")) {
                frame.result_or_error = true;
            }
            NONE
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::json::DEFAULT_MAX_DEPTH;

    fn frame(s: &str) -> Frame<'_> {
        Frame::parse(s.as_bytes(), DEFAULT_MAX_DEPTH).unwrap()
    }

    fn text(f: Found<'_>) -> Option<&str> {
        f.once().map(|v| v.as_text())
    }

    #[test]
    fn records_the_members_dispatch_needs() {
        let f = frame(
            r#" {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.x","arguments":{"volume":40,"label":"a\"b","deep":{"x":[1,{"y":2}]}},"_meta":{"progressToken":"p","other":1}}} "#,
        );
        assert_eq!(text(f.get(Member::Jsonrpc)), Some("\"2.0\""));
        assert_eq!(text(f.get(Member::Id)), Some("7"));
        assert_eq!(text(f.get(Member::Method)), Some("\"tools/call\""));
        assert_eq!(text(f.get(Member::Name)), Some("\"self.x\""));
        assert_eq!(text(f.get(Member::ProgressToken)), Some("\"p\""));
        assert_eq!(f.get(Member::Task), Found::Absent);
        assert_eq!(f.get(Member::ProtocolVersion), Found::Absent);
        let args: Vec<_> = f
            .arguments()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.raw(), v.as_text()))
            .collect();
        assert_eq!(
            args,
            [
                (&b"volume"[..], "40"),
                (b"label", r#""a\"b""#),
                (b"deep", r#"{"x":[1,{"y":2}]}"#)
            ]
        );
        assert!(matches!(f.message(), Message::Request(r) if r.id.raw() == b"7"));
    }

    #[test]
    fn repeats_and_escapes() {
        let f = frame(
            r#"{"jsonrpc":"2.0","\u0069d":1,"method":"m","params":{"name":"a","n\u0061me":"b","arguments":[1],"_meta":{"progressToken":1},"_meta":{"other":2}}}"#,
        );
        assert_eq!(text(f.get(Member::Id)), Some("1"));
        assert_eq!(f.get(Member::Name), Found::Repeated);
        assert_eq!(f.get(Member::Meta), Found::Repeated);
        // What is below a repeated object is that of its last occurrence.
        assert_eq!(f.get(Member::ProgressToken), Found::Absent);
        // `arguments` that is not an object has no members.
        assert_eq!(f.arguments(), Some(&[][..]));
        let f = frame(r#"{"id":1,"id":2,"result":{}}"#);
        assert_eq!(f.get(Member::Id), Found::Repeated);
        assert!(matches!(f.message(), Message::Invalid { id: None, .. }));
        let f = frame(r#"{"jsonrpc":"2.0","id":4,"\u0072esult":{}}"#);
        assert!(matches!(f.message(), Message::Response));
    }

    #[test]
    fn many_arguments_are_counted_not_recorded() {
        let args: Vec<String> = (0..INDEXED_ARGUMENTS + 1)
            .map(|i| format!("\"a{i}\":{i}"))
            .collect();
        let msg = format!(
            r#"{{"params":{{"arguments":{{{}}},"name":"x"}}}}"#,
            args.join(",")
        );
        let f = frame(&msg);
        assert_eq!(f.arguments(), None);
        assert_eq!(text(f.get(Member::Name)), Some("\"x\""));
    }

    #[test]
    fn errors_and_limits_are_those_of_the_checker() {
        let cases: &[&[u8]] = &[
            b"",
            b"  ",
            b"\xff",
            b"{",
            b"{\"a\":1,}",
            b"{\"params\":{\"arguments\":{\"x\":[1,]}}}",
            b"{\"params\":{\"arguments\":{\"x\" 1}}}",
            b"{\"params\":{\"_meta\":{\"p\":\"\\ud800\"}}}",
            b"{\"params\":{\"name\":\"a\"]}",
            b"{\"params\":{}} x",
            b"[1,2]",
            b"\"s\\u00e9\"",
            b"{\"a\":\"\x01\"}",
            b"{\"params\":{\"arguments\":{\"k\":\"abcdefghijklmnopqrstuvwxyz\\q\"}}}",
        ];
        for &case in cases {
            for depth in [0, 1, 2, 3, 4, 32] {
                assert_eq!(
                    Frame::parse(case, depth).map(|f| f.root()),
                    Json::parse(case, depth),
                    "{:?} at depth {depth}",
                    String::from_utf8_lossy(case)
                );
            }
        }
        let deep = |n: usize| {
            format!(
                r#"{{"params":{{"arguments":{{"x":{}{}}}}}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        for n in [0, 1, 5, 28, 29, 30, 200] {
            let s = deep(n);
            for depth in [3, 4, 32, 128] {
                assert_eq!(
                    Frame::parse(s.as_bytes(), depth).map(|f| f.root()),
                    Json::parse(s.as_bytes(), depth),
                    "{n} at {depth}"
                );
            }
        }
    }
}
