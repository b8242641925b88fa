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
    Escapes, Json, JsonError, JsonStr, MAX_DEPTH_LIMIT, check_literal, check_number,
    check_string_escapes, check_utf8, digits_end, skip_ws,
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
}

impl Level {
    /// The range of [`KEYS`] at this level.
    const fn keys(self) -> (usize, usize) {
        match self {
            Level::Message => (0, 4),
            Level::Params => (4, 8),
            Level::Meta => (8, 13),
            Level::Arguments => (0, 0),
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
    /// (Elements are written as they are recorded; the engine keeps no unused ones.)
    arguments: heapless::Vec<(JsonStr<'a>, Json<'a>), INDEXED_ARGUMENTS>,
    /// Per recorded argument, what the escapes of a string value spell beyond its characters,
    /// as the check found them: characters in the high half, bytes in the low ([`UNCOUNTED`]
    /// past 16 bits).
    argument_escapes: [u32; INDEXED_ARGUMENTS],
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
    /// Linear in the length of `bytes`; the recursion is at most three objects deep whatever the
    /// input (deeper values go to the iterative checker).
    pub fn parse(bytes: &'a [u8], max_depth: u8) -> Result<Self, JsonError> {
        let mut frame = Frame::new();
        frame.index(bytes, max_depth)?;
        Ok(frame)
    }

    /// An empty index, for [`index`](Self::index) to fill where it lies (the engine keeps it in
    /// its dispatch frame instead of moving it there).
    pub(crate) const fn new() -> Self {
        Frame {
            root: Json::from_checked(&[]),
            values: [None; 13],
            repeated: 0,
            escaped: 0,
            result_or_error: false,
            arguments: heapless::Vec::new(),
            argument_escapes: [0; INDEXED_ARGUMENTS],
            argument_count: 0,
        }
    }

    /// [`parse`](Self::parse) into a [`new`](Self::new) frame.
    ///
    /// The text is UTF-8 when the pass succeeds: outside strings the grammar admits only ASCII,
    /// and the pass checks each string's text beyond ASCII. Only a text it refuses is checked
    /// whole, so that a text that is not UTF-8 is always told as such, at the offset where it
    /// stops being UTF-8, whatever else is wrong with it.
    pub(crate) fn index(&mut self, bytes: &'a [u8], max_depth: u8) -> Result<(), JsonError> {
        match self.index_checked(bytes, max_depth) {
            Ok(()) => Ok(()),
            Err(e) => {
                check_utf8(bytes)?;
                Err(e)
            }
        }
    }

    fn index_checked(&mut self, bytes: &'a [u8], max_depth: u8) -> Result<(), JsonError> {
        let max_depth = max_depth.min(MAX_DEPTH_LIMIT);
        let start = skip_ws(bytes, 0);
        if start >= bytes.len() {
            return Err(JsonError::Empty);
        }
        let end = pass(self, bytes, start, max_depth)?;
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
        (usize::from(self.argument_count) <= INDEXED_ARGUMENTS).then_some(&self.arguments[..])
    }

    /// What the escapes of recorded argument `i`'s value spell beyond its characters (a string
    /// value's; [`Escapes::NONE`] for any other), as the check found them; `None` when `i` is
    /// past the table or the counts outgrew the record (count them again then).
    pub(crate) fn argument_escapes(&self, i: usize) -> Option<Escapes> {
        match *self.argument_escapes.get(..self.arguments.len())?.get(i)? {
            UNCOUNTED => None,
            packed => Some(Escapes::new(packed >> 16, packed & 0xFFFF)),
        }
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
            self.arguments.clear();
            self.argument_escapes = [0; INDEXED_ARGUMENTS];
        }
    }
}

/// Member numbers (indices into [`KEYS`]) of the objects the pass descends into.
const PARAMS: usize = 3;
/// Member numbers of the other keys known by their spelling ([`known_key`]).
const ID: usize = 1;
const METHOD: usize = 2;
const NAME: usize = 4;
const ARGUMENTS: usize = 5;
const META: usize = 7;
/// No recorded member.
const NONE: usize = usize::MAX;
/// The member number of `jsonrpc`, and the member as clients write it.
const JSONRPC: usize = 0;
const JSONRPC_MEMBER: &[u8] = br#""jsonrpc":"2.0""#;
/// An argument's escapes counted past what [`Frame::argument_escapes`] records.
const UNCOUNTED: u32 = u32::MAX;

/// Checks the JSON value at `start` (not whitespace) — the whole grammar, escapes, surrogates,
/// numbers, the nesting limit — and returns the offset just past it; the members of the objects
/// the index covers (the message, `params`, its `arguments` and `_meta`) are recorded into
/// `frame`. ([`Json::parse`](super::Json::parse) checks with [`check_value`] alone: no frame.)
///
/// The recorded objects are walked by [`object`] (at most three deep: the message, `params`,
/// `arguments` or `_meta`); every other container, at any depth, by the iterative [`check_value`]
/// (no recursion: a deeply nested text costs no stack, it is refused past the limit).
fn pass<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    start: usize,
    max_depth: u8,
) -> Result<usize, JsonError> {
    if b.get(start) == Some(&b'{') {
        if max_depth == 0 {
            return Err(JsonError::TooDeep(max_depth));
        }
        object(frame, b, start, Level::Message, 1, max_depth)
    } else {
        check_value(b, start, 0, max_depth)
    }
}

/// Checks the recorded object at `p` (on its `{`), the object of `level`, `depth` containers
/// deep counting itself (the caller checked `depth` against `max_depth`), recording its members;
/// returns the offset after its `}`. A `params`, `arguments` or `_meta` seen again forgets what
/// was recorded below it: what is recorded describes the last occurrence.
fn object<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    p: usize,
    level: Level,
    depth: u8,
    max_depth: u8,
) -> Result<usize, JsonError> {
    let mut p = skip_ws(b, p + 1);
    if b.get(p) == Some(&b'}') {
        return Ok(p + 1);
    }
    loop {
        // `"jsonrpc":"2.0"`, as every client spells it, is a whole member known to be valid: the
        // bytes equal to it are checked, key and value, by that comparison alone.
        let (member, key, start, end, escapes) = if level == Level::Message
            && b.get(p + 1) == Some(&b'j')
            && b.get(p..p + JSONRPC_MEMBER.len()) == Some(JSONRPC_MEMBER)
        {
            let end = p + JSONRPC_MEMBER.len();
            (JSONRPC, (p + 1, 7), end - 5, end, Escapes::NONE)
        } else {
            // `"key" :`: one of the keys the index records, as clients write it, is known by
            // comparing bytes (key, quotes and colon checked by it); any other is checked.
            let (key, member, colon) = match known_key(level, b, p) {
                Some((member, len)) => ((p + 1, len - 3), member, p + len - 1),
                None => {
                    if b.get(p) != Some(&b'"') {
                        return Err(JsonError::Syntax(p));
                    }
                    let (key_end, key_escapes) = check_string_escapes(b, p)?;
                    let key_escaped = key_escapes != Escapes::NONE;
                    let colon = skip_ws(b, key_end);
                    if b.get(colon) != Some(&b':') {
                        return Err(JsonError::Syntax(colon));
                    }
                    let key = (p + 1, key_end - p - 2);
                    let member = match (level, key_escaped) {
                        (Level::Arguments, _) => NONE,
                        (_, false) => member_of_plain(level, b, key.0, key.1, frame),
                        (_, true) => {
                            let raw = b.get(key.0..key.0 + key.1).unwrap_or_default();
                            member_of_escaped(level, JsonStr::from_checked(raw), frame)
                        }
                    };
                    (key, member, colon)
                }
            };
            let child = match member {
                PARAMS => Some(Level::Params),
                ARGUMENTS => Some(Level::Arguments),
                META => Some(Level::Meta),
                _ => None,
            };
            if child.is_some() && frame.values.get(member).is_some_and(Option::is_some) {
                frame.clear_below(member);
            }
            // The value.
            p = skip_ws(b, colon + 1);
            let start = p;
            let mut escapes = Escapes::NONE;
            let end = match (b.get(p), child) {
                (Some(b'"'), _) => {
                    let (end, esc) = check_string_escapes(b, p)?;
                    escapes = esc;
                    end
                }
                // A short unsigned integer (an id, a volume), inline; any other number checked
                // in full.
                (Some(b'1'..=b'9'), _) => {
                    let q = digits_end(b, p + 1);
                    match b.get(q) {
                        Some(b'.' | b'e' | b'E') => check_number(b, p)?,
                        _ => q,
                    }
                }
                (Some(b'-' | b'0'..=b'9'), _) => check_number(b, p)?,
                (Some(b'{'), Some(child)) => {
                    if depth >= max_depth {
                        return Err(JsonError::TooDeep(max_depth));
                    }
                    object(frame, b, p, child, depth + 1, max_depth)?
                }
                (Some(b'{' | b'['), _) => check_value(b, p, depth, max_depth)?,
                (Some(b't'), _) => check_literal(b, p, b"true")?,
                (Some(b'f'), _) => check_literal(b, p, b"false")?,
                (Some(b'n'), _) => check_literal(b, p, b"null")?,
                _ => return Err(JsonError::Syntax(p)),
            };
            (member, key, start, end, escapes)
        };
        frame.record(level, member, key, b, start, end, escapes);
        p = skip_ws(b, end);
        match b.get(p) {
            Some(b',') => p = skip_ws(b, p + 1),
            Some(b'}') => return Ok(p + 1),
            _ => return Err(JsonError::Syntax(p)),
        }
    }
}

/// Checks the value at `p` (not whitespace) inside `depth` open containers, recording nothing;
/// returns the offset just past it. One iterative loop: `objects` is a shift register of the
/// containers it opened, bit 0 set when the innermost is an object (128 bits hold
/// [`MAX_DEPTH_LIMIT`] levels).
pub(super) fn check_value(
    b: &[u8],
    mut p: usize,
    depth: u8,
    max_depth: u8,
) -> Result<usize, JsonError> {
    let base = depth;
    let mut depth = depth;
    let mut objects: u128 = 0;
    'value: loop {
        // A value is expected at `p`.
        match b.get(p) {
            Some(&open @ (b'{' | b'[')) => {
                if depth >= max_depth {
                    return Err(JsonError::TooDeep(max_depth));
                }
                depth += 1;
                objects = (objects << 1) | u128::from(open == b'{');
                p = skip_ws(b, p + 1);
                if open == b'{' {
                    if b.get(p) != Some(&b'}') {
                        p = check_key(b, p)?;
                        continue 'value;
                    }
                } else if b.get(p) != Some(&b']') {
                    continue 'value;
                }
                // An empty container: the loop below closes it at `p`.
            }
            Some(b'"') => p = check_string_escapes(b, p)?.0,
            Some(b'-' | b'0'..=b'9') => p = check_number(b, p)?,
            Some(b't') => p = check_literal(b, p, b"true")?,
            Some(b'f') => p = check_literal(b, p, b"false")?,
            Some(b'n') => p = check_literal(b, p, b"null")?,
            _ => return Err(JsonError::Syntax(p)),
        }
        // A value ended at `p` (or an empty container is about to close there): close
        // containers until one continues.
        loop {
            if depth == base {
                return Ok(p);
            }
            let in_object = objects & 1 != 0;
            p = skip_ws(b, p);
            match b.get(p) {
                Some(b',') => {
                    p = skip_ws(b, p + 1);
                    if in_object {
                        p = check_key(b, p)?;
                    }
                    continue 'value;
                }
                Some(b'}') if in_object => {}
                Some(b']') if !in_object => {}
                _ => return Err(JsonError::Syntax(p)),
            }
            p += 1;
            depth -= 1;
            objects >>= 1;
        }
    }
}

/// Checks `"key" :` at `p` (after `{` or `,`) and returns the offset of the value after the
/// colon (whitespace skipped).
#[inline]
fn check_key(b: &[u8], p: usize) -> Result<usize, JsonError> {
    if b.get(p) != Some(&b'"') {
        return Err(JsonError::Syntax(p));
    }
    let colon = skip_ws(b, check_string_escapes(b, p)?.0);
    if b.get(colon) != Some(&b':') {
        return Err(JsonError::Syntax(colon));
    }
    Ok(skip_ws(b, colon + 1))
}

impl<'a> Frame<'a> {
    /// Records a value: a recorded member's, or (in `arguments`) a member with its key (start
    /// and length).
    #[allow(
        clippy::too_many_arguments,
        reason = "the parts of one member, kept as offsets until here"
    )]
    #[inline]
    fn record(
        &mut self,
        level: Level,
        member: usize,
        key: (usize, usize),
        b: &'a [u8],
        start: usize,
        end: usize,
        escapes: Escapes,
    ) {
        let value = Json::from_checked(b.get(start..end).unwrap_or_default());
        if let Some(slot) = self.values.get_mut(member) {
            let bit = 1 << member;
            if slot.is_some() {
                self.repeated |= bit;
            }
            *slot = Some(value);
            if escapes != Escapes::NONE {
                self.escaped |= bit;
            } else {
                self.escaped &= !bit;
            }
        } else if level == Level::Arguments {
            let (key_start, key_len) = key;
            let key = b.get(key_start..key_start + key_len).unwrap_or_default();
            // Past the table only the count goes on (`arguments` then says to walk).
            // (The slots are 0 until written: written only for escapes, cleared with the table.)
            if escapes != Escapes::NONE
                && let Some(slot) = self.argument_escapes.get_mut(self.arguments.len())
            {
                *slot = match (
                    u16::try_from(escapes.chars()),
                    u16::try_from(escapes.bytes()),
                ) {
                    (Ok(chars), Ok(bytes)) if chars < u16::MAX => {
                        u32::from(chars) << 16 | u32::from(bytes)
                    }
                    _ => UNCOUNTED,
                };
            }
            let _ = self.arguments.push((JsonStr::from_checked(key), value));
            self.argument_count = self.argument_count.saturating_add(1);
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

/// The recorded member whose key, as clients write it (`"key":`, no space before the colon),
/// starts the bytes at `p`, and that spelling's length.
#[inline]
fn known_key(level: Level, b: &[u8], p: usize) -> Option<(usize, usize)> {
    // Told apart by the key's first letter: one comparison (of a constant length) per key.
    let known = |key: &[u8], member: usize| {
        (b.get(p..p + key.len()) == Some(key)).then_some((member, key.len()))
    };
    match (level, b.get(p + 1)) {
        (Level::Message, Some(b'm')) => known(br#""method":"#, METHOD),
        (Level::Message, Some(b'i')) => known(br#""id":"#, ID),
        (Level::Message, Some(b'p')) => known(br#""params":"#, PARAMS),
        (Level::Params, Some(b'n')) => known(br#""name":"#, NAME),
        (Level::Params, Some(b'a')) => known(br#""arguments":"#, ARGUMENTS),
        _ => None,
    }
}

/// The recorded member a key without escapes names at `level`, if any; `result` and `error` at
/// the top level set [`Frame::result_or_error`]. The key's first 8 bytes are compared as one
/// word (read from the message where 8 bytes remain, else packed), switched on the key's length:
/// a few instructions per key.
fn member_of_plain(level: Level, b: &[u8], at: usize, len: usize, frame: &mut Frame<'_>) -> usize {
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
        None => pack(b.get(at..at + len).unwrap_or_default()),
    };
    match (level, len) {
        (Level::Message, 7) if word == const { pack(b"jsonrpc") } => JSONRPC,
        (Level::Message, 2) if word == const { pack(b"id") } => ID,
        (Level::Message, 6) if word == const { pack(b"method") } => METHOD,
        (Level::Message, 6) if word == const { pack(b"params") } => PARAMS,
        (Level::Message, 6) if word == const { pack(b"result") } => {
            frame.result_or_error = true;
            NONE
        }
        (Level::Message, 5) if word == const { pack(b"error") } => {
            frame.result_or_error = true;
            NONE
        }
        (Level::Params, 4) if word == const { pack(b"name") } => NAME,
        (Level::Params, 9)
            if word == const { pack(b"arguments") } && b.get(at + 8) == Some(&b's') =>
        {
            ARGUMENTS
        }
        (Level::Params, 4) if word == const { pack(b"task") } => 6,
        (Level::Params, 5) if word == const { pack(b"_meta") } => META,
        (Level::Meta, _) => {
            let raw = b.get(at..at + len).unwrap_or_default();
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

    /// `Json::parse` as it was before the checking pass: the reference for errors and offsets.
    fn reference(text: &[u8], max_depth: u8) -> Result<Json<'_>, JsonError> {
        if let Err(e) = core::str::from_utf8(text) {
            return Err(JsonError::Utf8(e.valid_up_to()));
        }
        let max_depth = max_depth.min(MAX_DEPTH_LIMIT);
        let start = skip_ws(text, 0);
        if start >= text.len() {
            return Err(JsonError::Empty);
        }
        let end = crate::wire::json::reference_check_value(text, start, max_depth)?;
        if skip_ws(text, end) != text.len() {
            return Err(JsonError::Syntax(skip_ws(text, end)));
        }
        Ok(Json::from_checked(&text[start..end]))
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
    fn the_jsonrpc_member_as_clients_write_it() {
        // Known whole: recorded, repeated, followed by whitespace, last.
        let f = frame(r#"{"jsonrpc":"2.0" ,"id":1,"method":"ping"}"#);
        assert_eq!(
            f.get(Member::Jsonrpc),
            Found::Once(Json::from_checked(br#""2.0""#))
        );
        assert!(matches!(f.message(), Message::Request(_)));
        let f = frame(r#"{"id":1,"method":"ping","jsonrpc":"2.0"}"#);
        assert!(matches!(f.message(), Message::Request(_)));
        let f = frame(r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert_eq!(f.get(Member::Jsonrpc), Found::Repeated);
        // Inside `params` it is any other key.
        let f = frame(r#"{"params":{"jsonrpc":"2.0","name":"x"}}"#);
        assert_eq!(f.get(Member::Jsonrpc), Found::Absent);
        assert_eq!(
            f.get(Member::Name),
            Found::Once(Json::from_checked(br#""x""#))
        );
        // What only starts like it is checked as usual.
        for (text, at) in [
            (r#"{"jsonrpc":"2.0"1}"#, 16),
            (r#"{"jsonrpc":"2.0""#, 16),
            (r#"{"jsonrpc":"2.0","#, 17),
            (r#"{"jsonrpc":"2.0"}}"#, 17),
        ] {
            assert_eq!(
                Frame::parse(text.as_bytes(), DEFAULT_MAX_DEPTH).map(|_| ()),
                Err(JsonError::Syntax(at)),
                "{text}"
            );
        }
        let f = frame(r#"{"jsonrpc":"2.00","id":1,"method":"ping"}"#);
        assert_eq!(
            f.get(Member::Jsonrpc),
            Found::Once(Json::from_checked(br#""2.00""#))
        );
        assert!(matches!(f.message(), Message::Invalid { .. }));
    }

    #[test]
    fn the_keys_known_by_their_spelling() {
        let once = |raw: &'static str| Found::Once(Json::from_checked(raw.as_bytes()));
        // Compact (known by comparison) and spaced (checked): the same record.
        for text in [
            r#"{"id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":2}}}"#,
            r#"{ "id" : 1 , "method" : "tools/call" , "params" : { "name" : "x" , "arguments" : { "a" : 2 } } }"#,
        ] {
            let f = frame(text);
            assert_eq!(f.get(Member::Id), once("1"), "{text}");
            assert_eq!(f.get(Member::Method), once(r#""tools/call""#), "{text}");
            assert_eq!(f.get(Member::Name), once(r#""x""#), "{text}");
            assert_eq!(f.arguments().map(<[_]>::len), Some(1), "{text}");
        }
        // Only at their level: `name` at the top and `id` in `params` are other keys.
        let f = frame(r#"{"name":"x","params":{"id":1,"method":"m"}}"#);
        assert_eq!(f.get(Member::Name), Found::Absent);
        assert_eq!(f.get(Member::Id), Found::Absent);
        assert_eq!(f.get(Member::Method), Found::Absent);
        // Keys that only start like them, and values of any kind after them.
        let f = frame(r#"{"ids":1,"methods":2,"param":{},"id":"s","method":null}"#);
        assert_eq!(f.get(Member::Id), once(r#""s""#));
        assert_eq!(f.get(Member::Method), once("null"));
        assert_eq!(f.get(Member::Params), Found::Absent);
        for (text, at) in [
            (r#"{"id":}"#, 6),
            (r#"{"method":"#, 10),
            (r#"{"params":{"name":"#, 18),
        ] {
            assert_eq!(
                Frame::parse(text.as_bytes(), DEFAULT_MAX_DEPTH).map(|_| ()),
                Err(JsonError::Syntax(at)),
                "{text}"
            );
        }
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
                    reference(case, depth),
                    "{:?} at depth {depth}",
                    String::from_utf8_lossy(case)
                );
            }
        }
        for case in [
            r#"{}"#,
            r#"{"params":{}}"#,
            r#"{"params":{"arguments":{}}}"#,
            r#"{"params":{"_meta":{}},"id":1}"#,
            r#"{"params":{"arguments":{},"_meta":{}}}"#,
            r#"{ "params" : { "arguments" : { } , "_meta" : { } } , "x" : [ ] }"#,
            r#"{"params":{"arguments":{"a":{}}}}"#,
            r#"{"params":{"arguments":{"a":{}}}"#,
            r#"{"params":{"arguments":{}}}}"#,
            r#"{"params":{"arguments":{},}}"#,
        ] {
            for depth in [0, 1, 2, 3, 4] {
                assert_eq!(
                    Frame::parse(case.as_bytes(), depth).map(|f| f.root()),
                    reference(case.as_bytes(), depth),
                    "{case} at depth {depth}"
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
                    reference(s.as_bytes(), depth),
                    "{n} at {depth}"
                );
            }
        }
    }

    /// What the index should hold, found by walking the checked value (the pre-index way).
    fn walked<'a>(root: Json<'a>, member: Member) -> Found<'a> {
        let object =
            |v: Option<Json<'a>>| v.filter(|v| v.kind() == crate::wire::json::Kind::Object);
        let parent = match member.parent() {
            None => Some(root).filter(|r| r.kind() == crate::wire::json::Kind::Object),
            Some(p) => object(last(walked_value(root, p))),
        };
        let Some(parent) = parent else {
            return Found::Absent;
        };
        let values: Vec<Json<'a>> = parent
            .members()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.eq_str(member.key()))
            .map(|(_, v)| v)
            .collect();
        match values.as_slice() {
            [] => Found::Absent,
            [v] => Found::Once(*v),
            _ => Found::Repeated,
        }
    }

    /// Every value of `member` (all occurrences), walking from the root.
    fn walked_value<'a>(root: Json<'a>, member: Member) -> Vec<Json<'a>> {
        let parents = match member.parent() {
            None => vec![root],
            Some(p) => last(walked_value(root, p)).into_iter().collect(),
        };
        parents
            .into_iter()
            .flat_map(|p| p.members().into_iter().flatten())
            .filter(|(k, _)| k.eq_str(member.key()))
            .map(|(_, v)| v)
            .collect()
    }

    fn last(v: Vec<Json<'_>>) -> Option<Json<'_>> {
        v.last().copied()
    }

    /// A message-shaped document: the recorded keys (sometimes escaped, repeated, or with other
    /// values), other keys, whitespace, nesting.
    fn message() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        // The recorded keys, most often, so that objects nest where the index looks.
        let key = prop::sample::select(vec![
            "jsonrpc",
            "id",
            "method",
            "params",
            "params",
            "params",
            "name",
            "arguments",
            "arguments",
            "arguments",
            "task",
            "_meta",
            "_meta",
            "_meta",
            "progressToken",
            "io.modelcontextprotocol/logLevel",
            "result",
            "error",
            "x",
            "argument",
            "n\\u0061me",
            "\\u0069d",
            "p\\u0061rams",
            "ids",
            "param",
            "ключ",
        ]);
        let leaf = prop::sample::select(vec![
            "1",
            "-0",
            "2.5e3",
            // Integers of one and more digits (read inline), and numbers that only start so.
            "150",
            "12.5",
            "7E+2",
            "10e-1",
            "true",
            "null",
            "\"s\"",
            // The value of the `"jsonrpc":"2.0"` every client writes (a whole member the pass
            // knows when the document is compact).
            "\"2.0\"",
            "\"2.0\"",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "\"\\ud83d\\ude00 \\n\\u0800x\\u07FF\\/\"",
            "\"longer string of text\"",
            // Text beyond ASCII, raw (the pass checks it as UTF-8).
            "\"é\"",
            "\"你好, 😀 x\\n\"",
            "[]",
            "[1,[2]]",
            "{}",
        ])
        .prop_map(String::from);
        let value = leaf.prop_recursive(4, 24, 6, move |inner| {
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(|members| {
                let body: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("\"{k}\" : {v}"))
                    .collect();
                format!("{{ {} }}", body.join(" ,"))
            })
        });
        (value, prop::bool::ANY).prop_map(
            |(v, compact)| {
                if compact { v.replace(' ', "") } else { v }
            },
        )
    }

    proptest::proptest! {
        // Under Miri: a few cases (each costs seconds there) and no failure file
        // (proptest-regressions/, replayed elsewhere: Miri's isolation has no working directory
        // to resolve it against).
        #![proptest_config({
            let mut config = proptest::prelude::ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 4000 });
            if cfg!(miri) {
                config.failure_persistence = None;
            }
            config
        })]
        #[test]
        fn a_byte_changed_anywhere_is_refused_as_the_reference_refuses_it(
            text in message(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prop_oneof![
                proptest::prelude::any::<u8>(),
                proptest::sample::select(vec![0x80u8, 0xBF, 0xC0, 0xC3, 0xE4, 0xED, 0xF0, 0xF4, 0xF5, 0xFF]),
            ],
        ) {
            let mut bytes = text.into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let frame = Frame::parse(&bytes, 8);
            proptest::prop_assert_eq!(frame.as_ref().map(|f| f.root()).map_err(|e| *e), reference(&bytes, 8));
        }

        #[test]
        fn index_agrees_with_walking(text in message(), cut in 0usize..4, depth in 0u8..7) {
            // Whole documents, and documents cut short (errors must agree too).
            let bytes = text.as_bytes();
            let bytes = &bytes[..bytes.len() - cut.min(bytes.len())];
            let frame = Frame::parse(bytes, depth);
            proptest::prop_assert_eq!(frame.as_ref().map(|f| f.root()).map_err(|e| *e), reference(bytes, depth));
            proptest::prop_assert_eq!(Json::parse(bytes, depth), reference(bytes, depth));
            if let Ok(f) = frame {
                for m in Member::ALL {
                    proptest::prop_assert_eq!(f.get(m), walked(f.root(), m), "{:?} in {}", m, text);
                }
                let args = last(walked_value(f.root(), Member::Arguments))
                    .filter(|a| a.kind() == crate::wire::json::Kind::Object);
                let all: Vec<_> = args.and_then(|a| a.members()).into_iter().flatten().collect();
                match f.arguments() {
                    Some(table) => {
                        proptest::prop_assert_eq!(table, all.as_slice());
                        // What the check counted of each string's escapes, as counting them again
                        // finds it.
                        for (i, (_, v)) in table.iter().enumerate() {
                            let e = f.argument_escapes(i);
                            proptest::prop_assert!(e.is_some());
                            if let (Some(e), Some(s)) = (e, v.as_str()) {
                                let raw = s.raw();
                                proptest::prop_assert_eq!((e.decoded_chars(raw), e.decoded_bytes(raw)), s.decoded_size());
                                proptest::prop_assert_eq!(e == Escapes::NONE, !s.has_escapes());
                            } else {
                                proptest::prop_assert_eq!(e, Some(Escapes::NONE));
                            }
                        }
                        proptest::prop_assert_eq!(f.argument_escapes(table.len()), None);
                    }
                    None => proptest::prop_assert!(all.len() > INDEXED_ARGUMENTS),
                }
                proptest::prop_assert_eq!(
                    format!("{:?}", f.message()),
                    format!("{:?}", Message::classify(f.root()))
                );
            }
        }
    }

    #[test]
    fn what_is_below_a_repeated_member_is_its_last_occurrence() {
        let f = frame(r#"{"params":{"name":"a","arguments":{"v":1}},"params":1}"#);
        assert_eq!(f.get(Member::Params), Found::Repeated);
        assert_eq!(f.get(Member::Name), Found::Absent);
        assert_eq!(f.arguments(), Some(&[][..]));
        let f = frame(r#"{"params":{"_meta":{"progressToken":1},"_meta":"x"}}"#);
        assert_eq!(f.get(Member::ProgressToken), Found::Absent);
    }
}
