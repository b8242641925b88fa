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

use super::check::{
    Escapes, JsonError, MAX_DEPTH_LIMIT, check_literal, check_number, check_string_escapes,
    check_utf8, check_value, digits_end, skip_ws,
};
pub use super::json::Found;
use super::json::{Json, JsonStr};

/// How many members of `params.arguments` the index records: as many as a tool declares
/// parameters at most ([`MAX_PARAMS`](crate::schema::MAX_PARAMS)), so that the arguments of any
/// call that can be valid are read from the index. An `arguments` object with more members
/// than this (which a tool can only refuse, or take whole through a hand-written schema) is
/// walked again by the validator (see [`Frame::arguments`]).
pub const INDEXED_ARGUMENTS: usize = 16;

/// A member the index records (see the [module docs](self)): the one definition of them. Its
/// discriminant is its slot in the index ([`Member::ALL`] lists them in that order), its
/// [`key`](Self::key) the key on the wire, its [`parent`](Self::parent) the object it is read
/// in; the members of one object are contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
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

/// How many members the index records.
const COUNT: usize = Member::ALL.len();

// Every member in `ALL` at its own slot, and a bit for each in a `u16`.
const _: () = {
    let mut rest: &[Member] = &Member::ALL;
    let mut slot = 0;
    while let [member, tail @ ..] = rest {
        assert!(
            *member as usize == slot,
            "Member::ALL is in discriminant order"
        );
        slot += 1;
        rest = tail;
    }
    assert!(
        COUNT <= u16::BITS as usize,
        "a bit of `Frame::repeated` per member"
    );
};

impl Member {
    /// Every member, in order (of their discriminants: `ALL[m as usize] == m`).
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
            Member::Jsonrpc => "jsonrpc",
            Member::Id => "id",
            Member::Method => "method",
            Member::Params => "params",
            Member::Name => "name",
            Member::Arguments => "arguments",
            Member::Task => "task",
            Member::Meta => "_meta",
            Member::ProtocolVersion => "io.modelcontextprotocol/protocolVersion",
            Member::ClientCapabilities => "io.modelcontextprotocol/clientCapabilities",
            Member::LogLevel => "io.modelcontextprotocol/logLevel",
            Member::ProgressToken => "progressToken",
            Member::IdempotencyKey => "io.github.mcu-mcp/idempotencyKey",
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

    /// The member's bit in [`Frame`]'s bit sets.
    const fn bit(self) -> u16 {
        1 << self as u16
    }

    /// `true` when this member is read inside `object` (in it, or deeper).
    #[cfg(test)]
    fn is_below(self, object: Member) -> bool {
        let mut at = self.parent();
        while let Some(parent) = at {
            if parent == object {
                return true;
            }
            at = parent.parent();
        }
        false
    }

    /// `"key":`, the key as clients write it (no space before the colon): `N` is the key's
    /// length plus three (checked when the constant is built).
    const fn quoted<const N: usize>(self) -> [u8; N] {
        let key = self.key().as_bytes();
        assert!(
            N == key.len() + 3,
            "`\"key\":` is three bytes longer than the key"
        );
        let mut quoted = [b'"'; N];
        if let Some((colon, [_, inside @ ..])) = quoted.split_last_mut() {
            *colon = b':';
            let (mut to, mut from) = (inside, key);
            while let ([to_first, to_rest @ ..], [c, from_rest @ ..]) = (to, from) {
                *to_first = *c;
                (to, from) = (to_rest, from_rest);
            }
        }
        quoted
    }
}

/// The top-level members that decide what a message is (the last of each when repeated), however
/// they were found: from the index of the checking pass ([`Frame::top`]) or by walking the
/// members ([`Message::classify`](super::Message::classify)). The request module classifies
/// them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Top<'a> {
    pub(crate) jsonrpc: Option<Json<'a>>,
    pub(crate) id: Option<Json<'a>>,
    pub(crate) method: Option<Json<'a>>,
    pub(crate) params: Option<Json<'a>>,
    /// One of the four members above occurs more than once.
    pub(crate) duplicate: bool,
    /// A `result` or `error` member occurs (a response from the peer).
    pub(crate) result_or_error: bool,
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
    /// The level of the object `member` holds, when the pass records in it.
    const fn of(member: Member) -> Option<Level> {
        match member {
            Member::Params => Some(Level::Params),
            Member::Arguments => Some(Level::Arguments),
            Member::Meta => Some(Level::Meta),
            _ => None,
        }
    }

    /// The members read in this level's object (those whose [`parent`](Member::parent) it is).
    const fn members(self) -> &'static [Member] {
        const fn span(first: Member, last: Member) -> &'static [Member] {
            Member::ALL
                .split_at(last as usize + 1)
                .0
                .split_at(first as usize)
                .1
        }
        match self {
            Level::Message => const { span(Member::Jsonrpc, Member::Params) },
            Level::Params => const { span(Member::Name, Member::Meta) },
            Level::Meta => const { span(Member::ProtocolVersion, Member::IdempotencyKey) },
            Level::Arguments => &[],
        }
    }

    /// A bit per length of the keys of [`members`](Self::members) (all shorter than 64 bytes).
    const fn lengths(self) -> u64 {
        let mut lengths = 0;
        let mut rest = self.members();
        while let [member, tail @ ..] = rest {
            assert!(member.key().len() < 64, "a bit per length");
            lengths |= 1 << member.key().len();
            rest = tail;
        }
        lengths
    }

    /// The bits of [`members`](Self::members).
    const fn bits(self) -> u16 {
        let mut bits = 0;
        let mut rest = self.members();
        while let [member, tail @ ..] = rest {
            bits |= member.bit();
            rest = tail;
        }
        bits
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
    values: [Option<Json<'a>>; COUNT],
    /// Bit `m` set: member `m` occurs more than once in its object.
    repeated: u16,
    /// Bit `m` set: member `m` is a string with escape sequences.
    escaped: u16,
    result_or_error: bool,
    /// The compact spelling was taken for `jsonrpc` (`"2.0"`), `id` (a string, or unsigned
    /// digits) and `method` (a string): unless one of the message's members is repeated, the
    /// message is a request ([`Frame::message`] reads it without classifying it again).
    request: bool,
    /// The members of `params.arguments` recorded, in document order (the first
    /// `argument_count` of them).
    /// (Written as they are recorded: nothing is set up for the ones a message does not have.)
    arguments: heapless::Vec<ArgumentAt, INDEXED_ARGUMENTS, u8>,
    /// Members of `params.arguments` seen (saturates past [`INDEXED_ARGUMENTS`]; [`UNINDEXED`]
    /// when an offset outgrew the record: the validator walks the object then).
    argument_count: u8,
    /// Where the `arguments` object being walked starts in the message (its `{`): the offsets
    /// of [`ArgumentAt`] are from there.
    arguments_at: usize,
}

/// Where a recorded member of `params.arguments` is, in offsets from the object's `{` (start
/// and length of its key's content, and of its value: two bytes each, so an object of 64 KiB or
/// more is not recorded), and what the escapes of a string value spell beyond its characters,
/// as the check found them (characters in the high half, bytes in the low; [`UNCOUNTED`] past
/// 16 bits). Twelve bytes, where two borrowed slices are sixteen on a 32-bit target and
/// thirty-two on a 64-bit one: the table is on the stack for the whole dispatch.
#[derive(Debug, Clone, Copy)]
struct ArgumentAt {
    key: (u16, u16),
    value: (u16, u16),
    escapes: u32,
}

/// [`Frame::argument_count`] when the table could not record the arguments.
const UNINDEXED: u8 = u8::MAX;

/// The members of `params.arguments` as the checking pass recorded them ([`Frame::arguments`]):
/// each key (its content, between the quotes) and value, in document order.
#[derive(Debug, Clone, Copy)]
pub struct Arguments<'f, 'a> {
    object: &'a [u8],
    table: &'f [ArgumentAt],
}

impl<'f, 'a> Arguments<'f, 'a> {
    /// How many members there are.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// `true` when there are none.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Member `i`: its key and its value.
    pub fn get(&self, i: usize) -> Option<(JsonStr<'a>, Json<'a>)> {
        self.table.get(i).map(|a| member_at_offsets(self.object, a))
    }

    /// The members in document order.
    pub fn iter(self) -> impl ExactSizeIterator<Item = (JsonStr<'a>, Json<'a>)> + use<'f, 'a> {
        let object = self.object;
        self.table.iter().map(move |a| member_at_offsets(object, a))
    }
}

/// A recorded argument's key and value in its `object`.
#[inline]
fn member_at_offsets<'a>(object: &'a [u8], a: &ArgumentAt) -> (JsonStr<'a>, Json<'a>) {
    let at = |(start, len): (u16, u16)| {
        let start = usize::from(start);
        object
            .get(start..start + usize::from(len))
            .unwrap_or_default()
    };
    (
        JsonStr::from_checked(at(a.key)),
        Json::from_checked(at(a.value)),
    )
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
            values: [None; COUNT],
            repeated: 0,
            escaped: 0,
            result_or_error: false,
            request: false,
            arguments: heapless::Vec::new(),
            argument_count: 0,
            arguments_at: 0,
        }
    }

    /// [`parse`](Self::parse) into a [`new`](Self::new) frame.
    ///
    /// The text is UTF-8 when the pass succeeds: outside strings the grammar admits only ASCII,
    /// and the pass checks each string's text beyond ASCII. Only a text it refuses is checked
    /// whole, so that a text that is not UTF-8 is always told as such, at the offset where it
    /// stops being UTF-8, whatever else is wrong with it. (Not inlined: the pass's own frames
    /// are gone before the message is dispatched, not kept under every handler.)
    #[inline(never)]
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
        match self.value(member) {
            None => Found::Absent,
            Some(_) if self.repeated & member.bit() != 0 => Found::Repeated,
            Some(v) => Found::Once(v),
        }
    }

    /// The value recorded last for `member`.
    fn value(&self, member: Member) -> Option<Json<'a>> {
        self.values.get(member as usize).copied().flatten()
    }

    /// `true` when `member` is a string sent with escape sequences (compare it decoded; without
    /// escapes its raw bytes are its text).
    pub fn has_escapes(&self, member: Member) -> bool {
        self.escaped & member.bit() != 0
    }

    /// The members of `params.arguments` in document order, when it is an object of at most
    /// [`INDEXED_ARGUMENTS`] members (empty when it is absent or not an object); `None` when it
    /// has more (walk [`Json::members`] then).
    pub fn arguments(&self) -> Option<Arguments<'_, 'a>> {
        let table = self.arguments.get(..usize::from(self.argument_count))?;
        let object = self.value(Member::Arguments).map_or(&[][..], |a| a.raw());
        Some(Arguments { object, table })
    }

    /// What the escapes of recorded argument `i`'s value spell beyond its characters (a string
    /// value's; [`Escapes::NONE`] for any other), as the check found them; `None` when `i` is
    /// past the table or the counts outgrew the record (count them again then).
    pub(crate) fn argument_escapes(&self, i: usize) -> Option<Escapes> {
        let count = usize::from(self.argument_count);
        match self.arguments.get(..count)?.get(i)?.escapes {
            UNCOUNTED => None,
            packed => Some(Escapes::new(packed >> 16, packed & 0xFFFF)),
        }
    }

    /// The message's `id`, `method` and `params`, when the checking pass took them in a compact
    /// spelling that makes the message a request (a `"2.0"` `jsonrpc`, a string or unsigned
    /// integer id, a string method, none of the message's members repeated): what
    /// [`Frame::message`] reads without classifying.
    #[inline]
    pub(crate) fn request(&self) -> Option<(Json<'a>, JsonStr<'a>, Option<Json<'a>>)> {
        if !self.request || self.repeated & Level::Message.bits() != 0 {
            return None;
        }
        let id = self.value(Member::Id)?;
        let method = self.value(Member::Method)?.as_str()?;
        Some((id, method, self.value(Member::Params)))
    }

    /// The members that decide what the message is, as recorded; `None` when the message is
    /// not an object ([`Frame::message`] classifies them).
    #[inline]
    pub(crate) fn top(&self) -> Option<Top<'a>> {
        if self.root.raw().first() != Some(&b'{') {
            return None;
        }
        Some(Top {
            jsonrpc: self.value(Member::Jsonrpc),
            id: self.value(Member::Id),
            method: self.value(Member::Method),
            params: self.value(Member::Params),
            duplicate: self.repeated & Level::Message.bits() != 0,
            result_or_error: self.result_or_error,
        })
    }

    /// Forgets what was recorded below `member` (a `params`, `arguments` or `_meta` occurring
    /// again: what is below describes its last occurrence).
    fn clear_below(&mut self, member: Member) {
        // The members below an object are those after its own first member (`Member::ALL` lists
        // each object's members together, `params`' before `_meta`'s).
        let (from, to) = match member {
            Member::Params => (Member::Name, Member::IdempotencyKey),
            Member::Meta => (Member::ProtocolVersion, Member::IdempotencyKey),
            _ => (Member::Jsonrpc, Member::Jsonrpc),
        };
        if member == Member::Params || member == Member::Meta {
            if let Some(values) = self.values.get_mut(from as usize..=to as usize) {
                values.fill(None);
            }
            let bits = (2 << to as u16) - (1 << from as u16);
            self.repeated &= !bits;
            self.escaped &= !bits;
        }
        if member == Member::Params || member == Member::Arguments {
            self.argument_count = 0;
            self.arguments.clear();
        }
    }
}

/// The member `jsonrpc` as clients write it.
const JSONRPC_MEMBER: &[u8] = super::protocol::JSONRPC;
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
    if level == Level::Arguments {
        frame.arguments_at = p;
    }
    let mut p = skip_ws(b, p + 1);
    if b.get(p) == Some(&b'}') {
        return Ok(p + 1);
    }
    // The members clients spell compactly in the order they write them are taken by comparing
    // bytes first; whatever follows the last one taken is walked member by member.
    if let Some(end) = compact(frame, b, p, level, depth, max_depth)? {
        p = skip_ws(b, end);
        match b.get(p) {
            Some(b',') => p = skip_ws(b, p + 1),
            Some(b'}') => return Ok(p + 1),
            _ => return Err(JsonError::Syntax(p)),
        }
    }
    loop {
        // `"jsonrpc":"2.0"`, as every client spells it, is a whole member known to be valid: the
        // bytes equal to it are checked, key and value, by that comparison alone.
        let (seen, seen_key) = if level == Level::Message
            && b.get(p + 1) == Some(&b'j')
            && b.get(p..p + JSONRPC_MEMBER.len()) == Some(JSONRPC_MEMBER)
        {
            let end = p + JSONRPC_MEMBER.len();
            // After the key, its quotes and the colon.
            let value = p + Member::Jsonrpc.key().len() + 3;
            let seen = Seen {
                member: Some(Member::Jsonrpc),
                value: (value, end),
                escapes: Escapes::NONE,
            };
            (seen, (p + 1, Member::Jsonrpc.key().len()))
        } else {
            // `"key" :`: one of the keys the index records, as clients write it, is known by
            // comparing bytes (key, quotes and colon checked by it); any other is checked.
            let (key, member, colon) = match known_key(level, b, p) {
                Some((member, len)) => ((p + 1, len - 3), Some(member), p + len - 1),
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
                        (Level::Arguments, _) => None,
                        (_, false) => member_of_plain(level, b, key.0, key.1, frame),
                        (_, true) => {
                            let raw = b.get(key.0..key.0 + key.1).unwrap_or_default();
                            member_of_escaped(level, JsonStr::from_checked(raw), frame)
                        }
                    };
                    (key, member, colon)
                }
            };
            let child = member.and_then(Level::of);
            if let Some(member) = member.filter(|&m| child.is_some() && frame.value(m).is_some()) {
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
            let seen = Seen {
                member,
                value: (start, end),
                escapes,
            };
            (seen, key)
        };
        p = skip_ws(b, seen.value.1);
        if level == Level::Arguments {
            let key = (seen_key.0, seen_key.0 + seen_key.1);
            frame.record_argument(key, seen.value, seen.escapes);
        } else {
            frame.record(b, seen);
        }
        match b.get(p) {
            Some(b',') => p = skip_ws(b, p + 1),
            Some(b'}') => return Ok(p + 1),
            _ => return Err(JsonError::Syntax(p)),
        }
    }
}

/// The first members of a recorded object at `p` (on its first key), when a client spelled them
/// compactly (no whitespace) in the order most clients write them in, taken by comparing the
/// bytes between the values with their spelling (equal bytes are checked by that alone) and
/// checking each value as [`object`] would; recorded as `object` records them. Returns the
/// offset after the value of the last member taken (`None`: none was), where `object` goes on;
/// an error is the one `object` would find at the same place.
///
/// | object | orders |
/// |---|---|
/// | the message | `jsonrpc`, `id`, `method`, `params` (the Python SDK, rmcp, most clients) |
/// | `params` | `name`, `arguments` |
#[inline(always)]
fn compact<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    p: usize,
    level: Level,
    depth: u8,
    max_depth: u8,
) -> Result<Option<usize>, JsonError> {
    match level {
        Level::Message => compact_message(frame, b, p, depth, max_depth),
        Level::Params => compact_params(frame, b, p, depth, max_depth),
        Level::Arguments | Level::Meta => Ok(None),
    }
}

/// `true` when the bytes at `p` are `spelling`.
#[inline(always)]
fn spelled(b: &[u8], p: usize, spelling: &[u8]) -> bool {
    b.get(p..p + spelling.len()) == Some(spelling)
}

/// Records member `member` whose value is `b[start..end]`.
#[inline(always)]
fn take<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    member: Member,
    (start, end): (usize, usize),
    escapes: Escapes,
) {
    let seen = Seen {
        member: Some(member),
        value: (start, end),
        escapes,
    };
    frame.record(b, seen);
}

/// An id at `p`, as [`object`] checks one; `None` for a value of another kind (`object` checks
/// it then). The `bool` is `true` for a string or unsigned digits (the ids a request has; a
/// number of another spelling is classified as usual).
#[inline(always)]
fn compact_id(b: &[u8], p: usize) -> Result<Option<(usize, Escapes, bool)>, JsonError> {
    Ok(Some(match b.get(p) {
        Some(b'"') => {
            let (end, escapes) = check_string_escapes(b, p)?;
            (end, escapes, true)
        }
        Some(b'1'..=b'9') => {
            let q = digits_end(b, p + 1);
            match b.get(q) {
                Some(b'.' | b'e' | b'E') => (check_number(b, p)?, Escapes::NONE, false),
                _ => (q, Escapes::NONE, true),
            }
        }
        Some(b'-' | b'0') => (check_number(b, p)?, Escapes::NONE, false),
        _ => return Ok(None),
    }))
}

/// The `params` object at `p` (on its `{`), `depth` deep, as [`object`] checks and records it.
#[inline(always)]
fn compact_params_value<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    p: usize,
    depth: u8,
    max_depth: u8,
) -> Result<usize, JsonError> {
    if depth >= max_depth {
        return Err(JsonError::TooDeep(max_depth));
    }
    if frame.value(Member::Params).is_some() {
        frame.clear_below(Member::Params);
    }
    let end = object(frame, b, p, Level::Params, depth + 1, max_depth)?;
    take(frame, b, Member::Params, (p, end), Escapes::NONE);
    Ok(end)
}

/// [`compact`] for the message.
#[inline(never)]
fn compact_message<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    p: usize,
    depth: u8,
    max_depth: u8,
) -> Result<Option<usize>, JsonError> {
    const JSONRPC_ID: &[u8] = br#""jsonrpc":"2.0","id":"#;
    const THEN_METHOD: &[u8] = br#","method":""#;
    const THEN_PARAMS: &[u8] = br#","params":{"#;
    // `"jsonrpc":"2.0"`'s value, from the member's start.
    const VERSION: (usize, usize) = (10, 15);
    if spelled(b, p, JSONRPC_ID) {
        // `jsonrpc`, `id`, `method`, `params`.
        take(
            frame,
            b,
            Member::Jsonrpc,
            (p + VERSION.0, p + VERSION.1),
            Escapes::NONE,
        );
        let at = p + JSONRPC_ID.len();
        let Some((end, escapes, id)) = compact_id(b, at)? else {
            return Ok(Some(p + VERSION.1));
        };
        take(frame, b, Member::Id, (at, end), escapes);
        if !spelled(b, end, THEN_METHOD) {
            return Ok(Some(end));
        }
        let at = end + THEN_METHOD.len() - 1;
        let (end, escapes) = check_string_escapes(b, at)?;
        take(frame, b, Member::Method, (at, end), escapes);
        frame.request = id;
        if !spelled(b, end, THEN_PARAMS) {
            return Ok(Some(end));
        }
        let at = end + THEN_PARAMS.len() - 1;
        return compact_params_value(frame, b, at, depth, max_depth).map(Some);
    }
    Ok(None)
}

/// [`compact`] for `params`: `name`, then `arguments`.
#[inline(never)]
fn compact_params<'a>(
    frame: &mut Frame<'a>,
    b: &'a [u8],
    p: usize,
    depth: u8,
    max_depth: u8,
) -> Result<Option<usize>, JsonError> {
    const NAME: &[u8] = br#""name":""#;
    const THEN_ARGUMENTS: &[u8] = br#","arguments":{"#;
    if !spelled(b, p, NAME) {
        return Ok(None);
    }
    let at = p + NAME.len() - 1;
    let (end, escapes) = check_string_escapes(b, at)?;
    take(frame, b, Member::Name, (at, end), escapes);
    if !spelled(b, end, THEN_ARGUMENTS) {
        return Ok(Some(end));
    }
    let at = end + THEN_ARGUMENTS.len() - 1;
    if depth >= max_depth {
        return Err(JsonError::TooDeep(max_depth));
    }
    if frame.value(Member::Arguments).is_some() {
        frame.clear_below(Member::Arguments);
    }
    let end = object(frame, b, at, Level::Arguments, depth + 1, max_depth)?;
    take(frame, b, Member::Arguments, (at, end), Escapes::NONE);
    Ok(Some(end))
}

/// One member of an object the pass records, as it found it (offsets into the message until
/// [`Frame::record`] keeps what it needs).
struct Seen {
    /// The recorded member its key names, if any.
    member: Option<Member>,
    /// The value: start and end.
    value: (usize, usize),
    /// What the escapes of a string value spell beyond its characters.
    escapes: Escapes,
}

impl<'a> Frame<'a> {
    /// Records a member of an object the pass records (of the message, `params` or `_meta`):
    /// a recorded member's value.
    #[inline]
    fn record(&mut self, b: &'a [u8], seen: Seen) {
        let Seen {
            member,
            value: (start, end),
            escapes,
        } = seen;
        let value = Json::from_checked(b.get(start..end).unwrap_or_default());
        if let Some((slot, bit)) =
            member.and_then(|m| Some((self.values.get_mut(m as usize)?, m.bit())))
        {
            if slot.is_some() {
                self.repeated |= bit;
            }
            *slot = Some(value);
            if escapes != Escapes::NONE {
                self.escaped |= bit;
            } else {
                self.escaped &= !bit;
            }
        }
    }

    /// Records a member of `params.arguments`: its key's content and its value (start and end
    /// in the message), what the escapes of a string value spell.
    #[inline(always)]
    fn record_argument(&mut self, key: (usize, usize), value: (usize, usize), escapes: Escapes) {
        let at = self.arguments_at;
        // Past the table (or once it could not record) only the count goes on.
        if usize::from(self.argument_count) < INDEXED_ARGUMENTS {
            let from = |(start, end): (usize, usize)| {
                let offset = u16::try_from(start.checked_sub(at)?).ok()?;
                Some((offset, u16::try_from(end.checked_sub(start)?).ok()?))
            };
            let escapes = match (
                u16::try_from(escapes.chars()),
                u16::try_from(escapes.bytes()),
            ) {
                (Ok(chars), Ok(bytes)) if chars < u16::MAX => {
                    u32::from(chars) << 16 | u32::from(bytes)
                }
                _ => UNCOUNTED,
            };
            let (Some(key), Some(value)) = (from(key), from(value)) else {
                self.argument_count = UNINDEXED;
                return;
            };
            let _ = self.arguments.push(ArgumentAt {
                key,
                value,
                escapes,
            });
        }
        self.argument_count = self.argument_count.saturating_add(1);
    }
}

/// The recorded member whose key, as clients write it (`"key":`, no space before the colon),
/// starts the bytes at `p`, and that spelling's length.
#[inline]
fn known_key(level: Level, b: &[u8], p: usize) -> Option<(Member, usize)> {
    // Told apart by the key's first letter: one comparison (of a constant length) per key.
    macro_rules! known {
        ($member:ident) => {{
            const QUOTED: [u8; Member::$member.key().len() + 3] = Member::$member.quoted();
            (b.get(p..p + QUOTED.len()) == Some(&QUOTED[..]))
                .then_some((Member::$member, QUOTED.len()))
        }};
    }
    match (level, b.get(p + 1)) {
        (Level::Message, Some(b'm')) => known!(Method),
        (Level::Message, Some(b'i')) => known!(Id),
        (Level::Message, Some(b'p')) => known!(Params),
        (Level::Params, Some(b'n')) => known!(Name),
        (Level::Params, Some(b'a')) => known!(Arguments),
        _ => None,
    }
}

/// The recorded member a key without escapes names at `level`, if any; `result` and `error` at
/// the top level set [`Frame::result_or_error`]. Most keys are told apart by their length alone
/// (a bit per length of the level's keys); the others are compared byte for byte.
fn member_of_plain(
    level: Level,
    b: &[u8],
    at: usize,
    len: usize,
    frame: &mut Frame<'_>,
) -> Option<Member> {
    /// The keys of a response's outcome.
    const RESPONSE: [&[u8]; 2] = [b"result", b"error"];
    let lengths = match level {
        Level::Message => {
            const { Level::Message.lengths() | 1 << RESPONSE[0].len() | 1 << RESPONSE[1].len() }
        }
        Level::Params => const { Level::Params.lengths() },
        Level::Meta => const { Level::Meta.lengths() },
        Level::Arguments => 0,
    };
    if len >= 64 || lengths & 1 << len == 0 {
        return None;
    }
    let key = b.get(at..at + len).unwrap_or_default();
    let found = level
        .members()
        .iter()
        .copied()
        .find(|m| m.key().as_bytes() == key);
    if found.is_none() && level == Level::Message {
        frame.result_or_error |= RESPONSE.contains(&key);
    }
    found
}

/// [`member_of_plain`] for a key sent with escapes: compared decoded.
fn member_of_escaped(level: Level, key: JsonStr<'_>, frame: &mut Frame<'_>) -> Option<Member> {
    let found = member_at(level, key);
    if found.is_none() && level == Level::Message {
        frame.result_or_error |= is_response_key(key);
    }
    found
}

/// The recorded member `key` names at `level`, if any (compared decoded when it has escapes).
fn member_at(level: Level, key: JsonStr<'_>) -> Option<Member> {
    level
        .members()
        .iter()
        .copied()
        .find(|m| key.eq_str(m.key()))
}

/// The message's own member `key` names, if any (for [`Message::classify`], which walks).
pub(super) fn message_member(key: JsonStr<'_>) -> Option<Member> {
    member_at(Level::Message, key)
}

/// `true` for the keys of a response's outcome at the top of a message, `result` and `error`.
pub(super) fn is_response_key(key: JsonStr<'_>) -> bool {
    key.eq_str("result") || key.eq_str("error")
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::json::DEFAULT_MAX_DEPTH;
    use crate::wire::request::Message;

    /// The recorded arguments, as a vector (`None`: not recorded).
    fn recorded<'a>(f: &Frame<'a>) -> Option<Vec<(JsonStr<'a>, Json<'a>)>> {
        f.arguments().map(|a| a.iter().collect())
    }

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
        let end = crate::wire::check::reference_check_value(text, start, max_depth)?;
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
        assert_eq!(recorded(&f), Some(vec![]));
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
            assert_eq!(recorded(&f).map(|a| a.len()), Some(1), "{text}");
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
        assert_eq!(recorded(&f), None);
        assert_eq!(text(f.get(Member::Name)), Some("\"x\""));
    }

    #[test]
    fn an_arguments_object_of_64_kib_or_more_is_left_to_walking() {
        for (len, indexed) in [(65_500, true), (65_600, false)] {
            let msg = format!(
                r#"{{"params":{{"name":"x","arguments":{{"a":1,"text":"{}"}}}}}}"#,
                "t".repeat(len)
            );
            let f = frame(&msg);
            assert_eq!(recorded(&f).is_some(), indexed, "{len}");
            if let Some(table) = recorded(&f) {
                assert_eq!(table[1].1.raw().len(), len + 2);
            }
            // The object itself is recorded either way (the validator walks it then).
            assert!(f.get(Member::Arguments).once().is_some());
        }
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
            agrees(&text, &bytes[..bytes.len() - cut.min(bytes.len())], depth)?;
        }

        #[test]
        fn compact_messages_index_as_walked(text in compact_message(), cut in 0usize..4, depth in 0u8..7) {
            let bytes = text.as_bytes();
            agrees(&text, &bytes[..bytes.len() - cut.min(bytes.len())], depth)?;
        }

        #[test]
        fn a_byte_changed_in_a_compact_message_is_refused_or_indexed_as_walked(
            text in compact_message(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::prop_oneof![
                proptest::prelude::any::<u8>(),
                proptest::sample::select(b"\"\\:,{}[] 0123456789-.eE\x01\x80\xC3\xFFtfnu".to_vec()),
            ],
        ) {
            let mut bytes = text.clone().into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            agrees(&text, &bytes, 8)?;
        }
    }

    /// The index of `bytes` is what walking the checked text finds: the same errors as the
    /// reference, the same members (their escapes too), the same arguments, the same message.
    fn agrees(
        text: &str,
        bytes: &[u8],
        depth: u8,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let frame = Frame::parse(bytes, depth);
        proptest::prop_assert_eq!(
            frame.as_ref().map(|f| f.root()).map_err(|e| *e),
            reference(bytes, depth)
        );
        proptest::prop_assert_eq!(Json::parse(bytes, depth), reference(bytes, depth));
        let Ok(f) = frame else { return Ok(()) };
        for m in Member::ALL {
            let found = f.get(m);
            proptest::prop_assert_eq!(found, walked(f.root(), m), "{:?} in {}", m, text);
            if let Some(s) = found.once().and_then(|v| v.as_str()) {
                proptest::prop_assert_eq!(f.has_escapes(m), s.has_escapes(), "{:?} in {}", m, text);
            }
        }
        let args = last(walked_value(f.root(), Member::Arguments))
            .filter(|a| a.kind() == crate::wire::json::Kind::Object);
        let all: Vec<_> = args
            .and_then(|a| a.members())
            .into_iter()
            .flatten()
            .collect();
        match recorded(&f) {
            Some(table) => {
                proptest::prop_assert_eq!(&table, &all);
                // What the check counted of each string's escapes, as counting them again
                // finds it.
                for (i, (_, v)) in table.iter().enumerate() {
                    let e = f.argument_escapes(i);
                    proptest::prop_assert!(e.is_some());
                    if let (Some(e), Some(s)) = (e, v.as_str()) {
                        let raw = s.raw();
                        proptest::prop_assert_eq!(
                            (e.decoded_chars(raw), e.decoded_bytes(raw)),
                            s.decoded_size()
                        );
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
        Ok(())
    }

    /// Messages in the spelling the checking pass takes by comparison (and the TypeScript SDK's
    /// member order, compact, which it walks), with ids, methods, names and arguments of every kind, and members after them
    /// (repeated ones, a response's, others): the compact path and where it hands over.
    fn compact_message() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let select = |v: &[&'static str]| prop::sample::select(v.to_vec());
        let id = select(&[
            "0",
            "7",
            "101",
            "123456789012345678",
            "1234567890123456789",
            "-1",
            "1.5",
            "2e3",
            "\"a\"",
            "\"x\\u0041\"",
            "null",
            "true",
            "{}",
            "01",
            "\"\"",
        ]);
        let version = select(&["2.0", "2.0", "2.0", "1.0"]);
        let method = select(&[
            "tools/call",
            "ping",
            "t\\u006fols/call",
            "",
            "initialize",
            "é",
        ]);
        let name = select(&["self.audio_speaker.set_volume", "x", "s\\u0065lf", "é", ""]);
        let value = select(&[
            "40",
            "0",
            "-3",
            "1.5",
            "\"s\"",
            "\"a\\\"b\"",
            "true",
            "null",
            "[1,{\"a\":2}]",
            "{\"b\":[]}",
            "\"\\u00e9t\\u00e9\"",
        ]);
        let key = select(&["volume", "v", "\\u0076", "level_01", "name"]);
        let args = prop::collection::vec((key, value), 0..11).prop_map(|members| {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            format!("{{{}}}", body.join(","))
        });
        let arguments = prop_oneof![
            Just(String::new()),
            args.prop_map(|a| format!(",\"arguments\":{a}")),
            Just(",\"arguments\":[1]".to_string()),
            Just(",\"arguments\":null".to_string()),
        ];
        let params_tail = select(&[
            "",
            "",
            ",\"_meta\":{\"progressToken\":1}",
            ",\"name\":\"y\"",
            ",\"arguments\":{}",
            ",\"task\":{}",
        ]);
        let params = prop_oneof![
            Just(String::new()),
            (name, arguments, params_tail)
                .prop_map(|(n, a, t)| format!(",\"params\":{{\"name\":\"{n}\"{a}{t}}}")),
            Just(",\"params\":[]".to_string()),
            Just(",\"params\":{}".to_string()),
        ];
        let tail = select(&[
            "",
            "",
            "",
            ",\"id\":2",
            ",\"jsonrpc\":\"2.0\"",
            ",\"method\":\"m\"",
            ",\"params\":{}",
            ",\"result\":{}",
            ",\"x\":1",
        ]);
        (prop::bool::ANY, version, id, method, params, tail).prop_map(
            |(python, version, id, method, params, tail)| {
                if python {
                    format!("{{\"jsonrpc\":\"{version}\",\"id\":{id},\"method\":\"{method}\"{params}{tail}}}")
                } else {
                    format!("{{\"method\":\"{method}\"{params},\"jsonrpc\":\"{version}\",\"id\":{id}{tail}}}")
                }
            },
        )
    }

    #[test]
    fn each_level_reads_the_members_whose_parent_it_is() {
        for (level, parent) in [
            (Level::Message, None),
            (Level::Params, Some(Member::Params)),
            (Level::Meta, Some(Member::Meta)),
            (Level::Arguments, Some(Member::Arguments)),
        ] {
            let expected: Vec<Member> = Member::ALL
                .into_iter()
                .filter(|m| m.parent() == parent)
                .collect();
            assert_eq!(level.members(), expected.as_slice(), "{level:?}");
            assert_eq!(
                parent.and_then(Level::of),
                Some(level).filter(|_| parent.is_some())
            );
        }
        assert_eq!(Member::Method.quoted::<9>(), *br#""method":"#);
        assert!(Member::ProgressToken.is_below(Member::Params));
        assert!(Member::ProgressToken.is_below(Member::Meta));
        assert!(!Member::Name.is_below(Member::Meta));
        assert!(!Member::Params.is_below(Member::Params));
        // What a repeated `params` or `_meta` forgets is what is below it.
        for object in [Member::Params, Member::Meta, Member::Arguments] {
            let mut f = frame(
                r#"{"params":{"name":"n","task":{},"arguments":{"a":1},"_meta":{"progressToken":1,"io.modelcontextprotocol/logLevel":"info"}},"id":1}"#,
            );
            f.clear_below(object);
            for m in Member::ALL {
                let kept = f.get(m) != Found::Absent;
                let present = !matches!(m, Member::Jsonrpc | Member::Method)
                    && !matches!(m, Member::ProtocolVersion | Member::ClientCapabilities)
                    && m != Member::IdempotencyKey;
                assert_eq!(
                    kept,
                    present && !m.is_below(object),
                    "{m:?} after {object:?}"
                );
            }
        }
    }

    #[test]
    fn what_is_below_a_repeated_member_is_its_last_occurrence() {
        let f = frame(r#"{"params":{"name":"a","arguments":{"v":1}},"params":1}"#);
        assert_eq!(f.get(Member::Params), Found::Repeated);
        assert_eq!(f.get(Member::Name), Found::Absent);
        assert_eq!(recorded(&f), Some(vec![]));
        let f = frame(r#"{"params":{"_meta":{"progressToken":1},"_meta":"x"}}"#);
        assert_eq!(f.get(Member::ProgressToken), Found::Absent);
    }
}
