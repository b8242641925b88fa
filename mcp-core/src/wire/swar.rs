//! Bit tricks: bytes handled a machine word at a time ("SIMD within a register").
//!
//! The checking pass, the string views and the writer scan text for a few bytes (`"`, `\`,
//! control characters, bytes above ASCII); here they read a word (`usize`: 4 or 8 bytes) per step
//! instead of a byte. Every trick lives in this module, next to the byte-by-byte reference it
//! must agree with (`reference`, under `cfg(test)`); the tests check each against its reference on
//! every byte value in every lane, next to other bytes of interest, and on random texts.
//!
//! # Flags
//!
//! A *flag word* has the high bit of some bytes set. A word is read little-endian ([`load`]):
//! its lowest byte is the first in memory, so [`first_flagged`] is the offset of the first
//! flagged byte. The zero-byte test (`(x - 0x01…01) & !x & 0x80…80`, *Bit Twiddling Hacks*)
//! flags every zero byte of `x`, and possibly a byte above one (a borrow carries into it): the
//! lowest flagged byte is always exact, bytes above it are not. So the functions that return
//! flags promise only this: *no flag when no byte matches; otherwise the lowest flagged byte is
//! the first byte that matches.*

/// The bytes of a word.
pub(crate) const WORD: usize = core::mem::size_of::<usize>();
/// `0x0101…01`: one in every byte of a word.
const ONES: usize = usize::MAX / 255;
/// `0x8080…80`: the high bit of every byte of a word.
const HIGHS: usize = ONES << 7;

/// The word of `bytes`, the first byte lowest.
#[inline(always)]
pub(crate) const fn load(bytes: [u8; WORD]) -> usize {
    usize::from_le_bytes(bytes)
}

/// The offset of the lowest flagged byte of `flags` in the [`load`]ed word ([`WORD`] when none).
#[inline(always)]
pub(crate) const fn first_flagged(flags: usize) -> usize {
    (flags.trailing_zeros() / 8) as usize
}

/// Flags the bytes of `w` below `n` (`n` at most `0x80`; see [Flags](self#flags)).
#[inline(always)]
pub(crate) const fn below(w: usize, n: u8) -> usize {
    w.wrapping_sub(ONES * n as usize) & !w & HIGHS
}

/// Flags the bytes of `w` equal to `byte` (the zero-byte test of `w ^ byte…byte`).
#[inline(always)]
pub(crate) const fn equal(w: usize, byte: u8) -> usize {
    below(w ^ (ONES * byte as usize), 1)
}

/// Flags the bytes of `w` above ASCII (exactly: the high bit of each).
#[inline(always)]
pub(crate) const fn non_ascii(w: usize) -> usize {
    w & HIGHS
}

/// Flags the bytes of `w` that a JSON string cannot hold as they are: `"`, `\` and control
/// characters (below 0x20). The zero-byte test three times.
#[inline(always)]
pub(crate) const fn specials(w: usize) -> usize {
    equal(w, b'"') | equal(w, b'\\') | below(w, 0x20)
}

/// The number of UTF-8 continuation bytes (`10xxxxxx`) in `w`: one flag per such byte (bit 7 set,
/// bit 6 clear), moved to bit 0 of its byte and summed by a multiplication into the top byte (at
/// most [`WORD`]: no carry out of it).
#[inline(always)]
pub(crate) const fn continuations(w: usize) -> usize {
    let flags = (w & !(w << 1) & HIGHS) >> 7;
    flags.wrapping_mul(ONES) >> (8 * (WORD - 1))
}

/// The offset of the first `byte` in `bytes` at or after `from` (`bytes.len()` if none), a word
/// at a time, the last bytes one at a time.
#[inline]
pub(crate) fn find_byte(bytes: &[u8], mut from: usize, byte: u8) -> usize {
    while let Some(&w) = bytes.get(from..).and_then(<[u8]>::first_chunk::<WORD>) {
        let found = equal(load(w), byte);
        if found != 0 {
            return from + first_flagged(found);
        }
        from += WORD;
    }
    while bytes.get(from).is_some_and(|&c| c != byte) {
        from += 1;
    }
    from.min(bytes.len())
}

/// `true` when `bytes` holds `byte`: a word at a time, the last bytes as the last word
/// (overlapping); `<[u8]>::contains` walks short slices a byte at a time.
#[inline]
#[allow(
    clippy::manual_contains,
    reason = "`contains` on bytes links `core`'s memchr (some 170 bytes of flash) for a short key"
)]
pub(crate) fn has_byte(bytes: &[u8], byte: u8) -> bool {
    let Some(&last) = bytes.last_chunk::<WORD>() else {
        // Shorter than a word (a key, a short name).
        return bytes.iter().any(|&c| c == byte);
    };
    let mut words = bytes.chunks_exact(WORD);
    for word in &mut words {
        if let Some(&word) = word.first_chunk::<WORD>()
            && equal(load(word), byte) != 0
        {
            return true;
        }
    }
    !words.remainder().is_empty() && equal(load(last), byte) != 0
}

/// `true` when every byte of `text` is ASCII: the high bits of all its words ORed together
/// (two words a step, then the last word), without an early exit (a message is ASCII or goes on
/// to the full UTF-8 check anyway). `<[u8]>::is_ascii` walks short slices a byte at a time.
#[inline]
pub(crate) fn is_ascii(text: &[u8]) -> bool {
    let mut words = text.chunks_exact(2 * WORD);
    let mut acc = 0usize;
    for pair in &mut words {
        if let (Some(&a), Some(&b)) = (pair.first_chunk::<WORD>(), pair.last_chunk::<WORD>()) {
            acc |= load(a) | load(b);
        }
    }
    // The rest (under two words): its first word, then the text's last word (which may overlap
    // words already read), or its bytes when the text is shorter than a word.
    if let Some(&first) = words.remainder().first_chunk::<WORD>() {
        acc |= load(first);
    }
    match text.last_chunk::<WORD>() {
        Some(&last) => acc |= load(last),
        None => acc |= usize::from(words.remainder().iter().fold(0u8, |t, &c| t | c)),
    }
    non_ascii(acc) == 0
}

/// The number of characters UTF-8 `text` holds: its bytes that are not continuation bytes,
/// counted a word at a time.
pub(crate) fn char_starts(text: &[u8]) -> usize {
    let mut words = text.chunks_exact(WORD);
    let mut tails = 0;
    for w in &mut words {
        if let Some(&w) = w.first_chunk::<WORD>() {
            tails += continuations(load(w));
        }
    }
    tails += words
        .remainder()
        .iter()
        .filter(|&&c| c & 0xC0 == 0x80)
        .count();
    text.len() - tails
}

/// The length of the longest prefix of `bytes` that needs no escape in a JSON string (no `"`,
/// `\` or control character): `bytes.len()` when nothing does. A word at a time; the last
/// (partial) word is read overlapping the one before it; shorter texts as two overlapping halves
/// of a word (64-bit) or byte by byte.
#[inline(never)]
pub(crate) fn plain_len(bytes: &[u8]) -> usize {
    let first_special = |at: usize, w: [u8; WORD]| {
        let s = specials(load(w));
        (s != 0).then(|| at + first_flagged(s))
    };
    let mut at = 0;
    while let Some(w) = bytes.get(at..).and_then(<[u8]>::first_chunk::<WORD>) {
        if let Some(i) = first_special(at, *w) {
            return i;
        }
        at += WORD;
    }
    if at == bytes.len() {
        return at;
    }
    if let Some(w) = bytes.last_chunk::<WORD>() {
        // Overlaps checked bytes, which hold no special one: the lowest flagged byte is new.
        return first_special(bytes.len() - WORD, *w).unwrap_or(bytes.len());
    }
    // Shorter than a word.
    #[cfg(target_pointer_width = "64")]
    if let (Some(lo), Some(hi)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        // Two overlapping halves: the first four bytes, then the last four at 4..8 (a special
        // byte in both is found in the first half; a borrow only flags bytes above a special).
        let w = u64::from(u32::from_le_bytes(*lo)) | (u64::from(u32::from_le_bytes(*hi)) << 32);
        return match first_special(0, w.to_le_bytes()) {
            Some(i @ 0..4) => i,
            Some(i) => i - 4 + (bytes.len() - 4),
            None => bytes.len(),
        };
    }
    bytes
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .unwrap_or(bytes.len())
}

/// The value of four hex digits, all at once: a digit's low nibble is its value, plus 9 for a
/// letter (bit 6 set). Only for bytes checked to be hex digits (on others the value is wrong,
/// nothing panics).
#[inline]
pub(crate) const fn hex4(digits: [u8; 4]) -> u32 {
    const ONES: u32 = 0x0101_0101;
    let x = u32::from_le_bytes(digits);
    let n = (x & (ONES * 0x0F)) + ((x >> 6) & ONES) * 9;
    let [a, b, c, d] = n.to_le_bytes();
    (a as u32) << 12 | (b as u32) << 8 | (c as u32) << 4 | d as u32
}

/// `n` (below 1000) in decimal: its digits first in three bytes (the bytes after them are
/// scratch), and how many there are. The three digits are made as one word, shifted down past
/// the leading zeros.
#[inline(always)]
pub(crate) const fn decimal3(n: u32) -> ([u8; 3], usize) {
    let skip = (n < 100) as u32 + (n < 10) as u32;
    let digits = u32::from_le_bytes([
        b'0' + (n / 100) as u8,
        b'0' + (n / 10 % 10) as u8,
        b'0' + (n % 10) as u8,
        0,
    ]) >> (8 * skip);
    let [a, b, c, _] = digits.to_le_bytes();
    ([a, b, c], 3 - skip as usize)
}

/// Up to the first 8 bytes of `s` as a little-endian word, zero-padded: a short key as one
/// number, to compare with one instruction.
pub(crate) const fn pack(s: &[u8]) -> u64 {
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

/// `a == b` for the short byte strings names are (parameter names, argument keys). Where an
/// unaligned load is one instruction (x86, AArch64), up to 16 bytes are compared with two
/// overlapping loads a side (4 or 8 bytes: the first and the last), without the call to
/// `memcmp` that `==` makes for a length known only at run time. Elsewhere (the RISC-V and
/// Cortex-M parts this engine runs on, where each of those loads is several byte loads and
/// the comparison would cost some 600 bytes of flash) and beyond 16 bytes, as `==` does.
#[inline]
pub(crate) fn eq(a: &[u8], b: &[u8]) -> bool {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64"))]
    {
        let n = a.len();
        if n != b.len() {
            return false;
        }
        match n {
            // (Bytes 0, n / 2 and n - 1 are all of them.)
            0..4 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
            4..8 => {
                a.first_chunk::<4>() == b.first_chunk::<4>()
                    && a.last_chunk::<4>() == b.last_chunk::<4>()
            }
            8..=16 => {
                a.first_chunk::<8>() == b.first_chunk::<8>()
                    && a.last_chunk::<8>() == b.last_chunk::<8>()
            }
            _ => a == b,
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64")))]
    {
        a == b
    }
}

/// The plain twins: one byte at a time, as the fast functions must answer.
#[cfg(test)]
pub(crate) mod reference {
    /// The offset of the first byte of `bytes` that `pred` holds for ([`super::WORD`] when none):
    /// what [`first_flagged`](super::first_flagged) of a flag word must give.
    pub(crate) fn first(bytes: &[u8], pred: impl Fn(u8) -> bool) -> usize {
        bytes.iter().position(|&c| pred(c)).unwrap_or(super::WORD)
    }

    pub(crate) fn is_special(c: u8) -> bool {
        c == b'"' || c == b'\\' || c < 0x20
    }

    pub(crate) fn continuations(bytes: &[u8]) -> usize {
        bytes.iter().filter(|&&c| c & 0xC0 == 0x80).count()
    }

    pub(crate) fn find_byte(bytes: &[u8], from: usize, byte: u8) -> usize {
        bytes
            .iter()
            .enumerate()
            .skip(from)
            .find(|&(_, &c)| c == byte)
            .map_or(bytes.len(), |(i, _)| i)
    }

    pub(crate) fn char_starts(text: &[u8]) -> usize {
        text.len() - continuations(text)
    }

    pub(crate) fn plain_len(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&c| is_special(c))
            .unwrap_or(bytes.len())
    }

    /// The value of four hex digits, a digit at a time.
    pub(crate) fn hex4(digits: [u8; 4]) -> Option<u32> {
        digits
            .iter()
            .try_fold(0, |v, &c| Some(v << 4 | char::from(c).to_digit(16)?))
    }

    pub(crate) fn decimal3(n: u32) -> Vec<u8> {
        n.to_string().into_bytes()
    }

    pub(crate) fn pack(s: &[u8]) -> u64 {
        let mut word = [0u8; 8];
        for (w, c) in word.iter_mut().zip(s) {
            *w = *c;
        }
        u64::from_le_bytes(word)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// Bytes a trick could confuse: the ones searched for, their neighbours, the borrow's edges.
    const INTERESTING: [u8; 16] = [
        0x00, 0x01, 0x1F, 0x20, 0x21, b'"', b'#', b'[', b'\\', b']', b'a', 0x7F, 0x80, 0xBF, 0xC0,
        0xFF,
    ];

    /// Words with every byte value in every lane, next to an interesting byte in every other
    /// lane, over fillers of interesting bytes: 256 × 16 × WORD² × 4 words. Under Miri (which
    /// looks for undefined behaviour, not for wrong answers, at a thousandth of the speed): the
    /// interesting bytes in one lane, over one filler.
    fn words() -> impl Iterator<Item = [u8; WORD]> {
        let lanes = if cfg!(miri) { 1 } else { WORD };
        let fillers: &[u8] = if cfg!(miri) {
            b"a"
        } else {
            &[b'a', 0x00, 0x80, 0xFF]
        };
        static EVERY: [u8; 256] = {
            let mut all = [0; 256];
            let mut i = 0;
            while i < 256 {
                all[i] = i as u8;
                i += 1;
            }
            all
        };
        let values: &'static [u8] = if cfg!(miri) { &INTERESTING } else { &EVERY };
        fillers.iter().flat_map(move |&fill| {
            (0..lanes).flat_map(move |i| {
                (0..WORD).flat_map(move |j| {
                    values.iter().flat_map(move |&a| {
                        INTERESTING.iter().map(move |&b| {
                            let mut w = [fill; WORD];
                            w[j] = b;
                            w[i] = a;
                            w
                        })
                    })
                })
            })
        })
    }

    #[test]
    fn flags_tell_the_first_matching_byte_as_the_reference_does() {
        for w in words() {
            let x = load(w);
            for n in [1, 0x20, 0x21, 0x7F, 0x80] {
                assert_eq!(
                    first_flagged(below(x, n)),
                    reference::first(&w, |c| c < n),
                    "{w:x?} below {n:#x}"
                );
            }
            for byte in INTERESTING {
                assert_eq!(
                    first_flagged(equal(x, byte)),
                    reference::first(&w, |c| c == byte),
                    "{w:x?} equal {byte:#x}"
                );
            }
            assert_eq!(
                first_flagged(specials(x)),
                reference::first(&w, reference::is_special),
                "{w:x?}"
            );
            // Exact: every flag is a byte above ASCII.
            for (i, &c) in w.iter().enumerate() {
                assert_eq!(non_ascii(x) >> (8 * i + 7) & 1 == 1, c >= 0x80, "{w:x?}");
            }
            assert_eq!(continuations(x), reference::continuations(&w), "{w:x?}");
        }
    }

    /// A text of lengths around the word size, of bytes that matter to the scans.
    fn text() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop::collection::vec(
            prop_oneof![
                4 => prop::sample::select(vec![b'a', b' ', b'z', b'0']),
                1 => prop::sample::select(INTERESTING.to_vec()),
                1 => any::<u8>(),
            ],
            0..(5 * WORD),
        )
    }

    proptest::proptest! {
        #![proptest_config(crate::test_support::proptest_config(4000, 8))]
        #[test]
        fn scans_answer_as_their_references(text in text(), from in 0usize..(6 * WORD)) {
            for byte in [b'\\', b'"', 0x00, 0x80] {
                proptest::prop_assert_eq!(
                    find_byte(&text, from, byte),
                    reference::find_byte(&text, from, byte).max(from.min(text.len()))
                );
                proptest::prop_assert_eq!(has_byte(&text, byte), text.contains(&byte));
            }
            proptest::prop_assert_eq!(is_ascii(&text), text.is_ascii());
            proptest::prop_assert_eq!(char_starts(&text), reference::char_starts(&text));
            proptest::prop_assert_eq!(plain_len(&text), reference::plain_len(&text));
            proptest::prop_assert_eq!(pack(&text), reference::pack(&text));
            // Names against a copy differing in one byte at each place, and against a prefix.
            let mut other = text.clone();
            proptest::prop_assert!(eq(&text, &other));
            for at in 0..other.len() {
                other[at] ^= 1 << (at % 8);
                proptest::prop_assert!(!eq(&text, &other), "{text:?} at {at}");
                other[at] = text[at];
            }
            proptest::prop_assert!(!eq(&text, text.get(..text.len().saturating_sub(1)).unwrap_or_default()) || text.is_empty());
        }
    }

    #[test]
    fn scans_find_a_byte_at_every_length_and_position() {
        for len in 0..(6 * WORD) {
            let mut text = vec![b'a'; len];
            assert!(is_ascii(&text) && !has_byte(&text, b'\\'), "{len}");
            assert_eq!(plain_len(&text), len);
            for at in 0..len {
                text[at] = b'\\';
                assert!(has_byte(&text, b'\\'), "{len} {at}");
                assert_eq!(find_byte(&text, 0, b'\\'), at, "{len} {at}");
                assert_eq!(plain_len(&text), at, "{len} {at}");
                text[at] = b'\\' ^ 0x80;
                assert!(!has_byte(&text, b'\\') && !is_ascii(&text), "{len} {at}");
                text[at] = 0x80;
                assert_eq!(char_starts(&text), len - 1, "{len} {at}");
                text[at] = b'a';
            }
        }
    }

    #[test]
    fn decimal3_writes_what_the_reference_writes() {
        for n in 0..1000 {
            let (digits, len) = decimal3(n);
            assert_eq!(digits[..len], reference::decimal3(n), "{n}");
        }
    }

    #[test]
    fn hex4_reads_checked_digits_as_the_reference_does() {
        // Every spelling of every value: 22 digits in each of four places.
        let digits: Vec<u8> = (b'0'..=b'9')
            .chain(b'a'..=b'f')
            .chain(b'A'..=b'F')
            .collect();
        let step = if cfg!(miri) { 97 } else { 1 };
        for n in (0..digits.len().pow(4)).step_by(step) {
            let d = [0, 1, 2, 3].map(|i| digits[n / digits.len().pow(i) % digits.len()]);
            assert_eq!(Some(hex4(d)), reference::hex4(d), "{d:?}");
        }
    }
}
