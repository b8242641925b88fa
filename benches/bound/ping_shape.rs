//! How cheap could the check of a `ping` be if it were speculated from the message's shape?
//! (The measurement behind BENCHMARKS.md's "What is left after the seventh round".)
//!
//! Two checks of `{"jsonrpc":"2.0","id":101,"method":"ping"}`-shaped messages, each recording
//! the three spans `Frame` records, and neither doing what a real one must besides (fall back to
//! the full check on a mismatch, learn the shape, classify the message):
//!
//! - `template`: the shape learned at run time, as a speculative engine would hold it: the bytes
//!   between the values compared, the values scanned by kind;
//! - `known_shape`: the best case, the same shape known at compile time (constants, unrolled).
//!
//! ```text
//! rustc --edition 2021 -O benches/bound/ping_shape.rs -o /tmp/ping_shape
//! valgrind --tool=callgrind --toggle-collect='*template*' /tmp/ping_shape 1000     # 215 per check
//! valgrind --tool=callgrind --toggle-collect='*known_shape*' /tmp/ping_shape 1000  # 143 per check
//! ```
//!
//! (Divide "Collected" by 1000. The engine's complete check of the same messages, `Frame::index`,
//! is 473; the rest of a `ping`, 690, is not touched by either.)

use std::process::ExitCode;

/// The kind of value a hole of the shape holds.
#[derive(Clone, Copy)]
enum Hole {
    /// An unsigned integer without fraction or exponent.
    Digits,
    /// A string of printable ASCII without escapes.
    Plain,
}

/// A shape: the bytes before each hole, the holes, and the bytes after the last one.
struct Shape {
    text: [&'static [u8]; 3],
    holes: [Hole; 2],
}

type Spans = [(u32, u32); 3];

/// Scans the value of `hole` at `p`; the offset after it.
#[inline(always)]
fn scan(hole: Hole, b: &[u8], mut p: usize) -> Option<usize> {
    match hole {
        Hole::Digits => {
            if !matches!(b.get(p), Some(b'1'..=b'9')) {
                return None;
            }
            p += 1;
            while let Some(b'0'..=b'9') = b.get(p) {
                p += 1;
            }
        }
        Hole::Plain => {
            if b.get(p) != Some(&b'"') {
                return None;
            }
            p += 1;
            loop {
                match b.get(p) {
                    Some(b'"') => break,
                    Some(&c) if (0x20..0x80).contains(&c) && c != b'\\' => p += 1,
                    _ => return None,
                }
            }
            p += 1;
        }
    }
    Some(p)
}

#[inline(never)]
fn template(shape: &Shape, b: &[u8], spans: &mut Spans) -> bool {
    let mut p = 0;
    for (i, text) in shape.text.iter().enumerate() {
        if b.get(p..p + text.len()) != Some(text) {
            return false;
        }
        p += text.len();
        let Some(&hole) = shape.holes.get(i) else {
            break;
        };
        let Some(end) = scan(hole, b, p) else {
            return false;
        };
        spans[i + 1] = (p as u32, (end - p) as u32);
        p = end;
    }
    spans[0] = (11, 5);
    p == b.len()
}

#[inline(never)]
fn known_shape(b: &[u8], spans: &mut Spans) -> bool {
    const HEAD: &[u8; 22] = br#"{"jsonrpc":"2.0","id":"#;
    const METHOD: &[u8; 10] = br#","method":"#;
    if b.get(..HEAD.len()) != Some(&HEAD[..]) {
        return false;
    }
    let p = HEAD.len();
    let Some(end) = scan(Hole::Digits, b, p) else {
        return false;
    };
    spans[1] = (p as u32, (end - p) as u32);
    let p = end;
    if b.get(p..p + METHOD.len()) != Some(&METHOD[..]) {
        return false;
    }
    let p = p + METHOD.len();
    let Some(end) = scan(Hole::Plain, b, p) else {
        return false;
    };
    spans[2] = (p as u32, (end - p) as u32);
    spans[0] = (11, 5);
    b.get(end) == Some(&b'}') && end + 1 == b.len()
}

fn main() -> ExitCode {
    let Some(n) = std::env::args()
        .nth(1)
        .and_then(|n| n.parse::<usize>().ok())
    else {
        eprintln!("usage: ping_shape N");
        return ExitCode::from(2);
    };
    let shape = Shape {
        text: [br#"{"jsonrpc":"2.0","id":"#, br#","method":"#, b"}"],
        holes: [Hole::Digits, Hole::Plain],
    };
    // The benches' ping cycle: ids 101 to 116.
    let messages: Vec<String> = (0..16)
        .map(|k| format!(r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#, 101 + k))
        .collect();
    let want: Spans = [(11, 5), (22, 3), (35, 6)];
    for i in 0..n {
        let m = messages[i % messages.len()].as_bytes();
        let (mut a, mut b) = ([(0, 0); 3], [(0, 0); 3]);
        let ok_a = template(
            std::hint::black_box(&shape),
            std::hint::black_box(m),
            &mut a,
        );
        let ok_b = known_shape(std::hint::black_box(m), &mut b);
        if !(ok_a && ok_b && a == want && b == want) {
            eprintln!("message {i}: wrong spans {a:?} {b:?}");
            return ExitCode::FAILURE;
        }
    }
    // A message of another shape is refused by both.
    let other = br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#;
    let mut s = [(0, 0); 3];
    if template(&shape, other, &mut s) || known_shape(other, &mut s) {
        eprintln!("another shape was taken");
        return ExitCode::FAILURE;
    }
    println!("{n} messages checked by both");
    ExitCode::SUCCESS
}
