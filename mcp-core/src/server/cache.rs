//! The recent-call cache: answers a retransmitted `tools/call` without running it again.
//!
//! Only tools that act are remembered: a tool annotated `readOnlyHint: true` runs afresh on every
//! request (a status query must not be answered with a stale copy).
//!
//! The key is a 64-bit FNV-1a hash of the request id, the tool name and the raw `arguments`
//! bytes: xiaozhi backends reuse small ids across different calls, so the id alone is not
//! enough. The window is the last `N` executed calls. A response larger than `B` bytes is
//! remembered as "executed, not replayable", so that a retransmission still never runs twice.

const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Hashes the parts of a call key, with a separator between parts.
pub(crate) fn call_key(parts: &[&[u8]]) -> u64 {
    let mut h = FNV64_OFFSET;
    for part in parts {
        for &b in *part {
            h = (h ^ u64::from(b)).wrapping_mul(FNV64_PRIME);
        }
        h = (h ^ 0xFF).wrapping_mul(FNV64_PRIME);
    }
    h
}

#[derive(Debug)]
struct Slot<const B: usize> {
    key: u64,
    used: bool,
    /// The call started this task: a retransmission is answered from the task table.
    task: Option<u64>,
    /// `None`: the response did not fit `B` bytes.
    len: Option<usize>,
    bytes: [u8; B],
}

/// What the cache knows about a key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Seen<'c> {
    /// Executed; here is the exact response that was sent.
    Replay(&'c [u8]),
    /// Executed; the response was too large to keep.
    Executed,
    /// Executed, starting this task: answer from the task table.
    Task(u64),
}

/// The last `N` executed calls, each with up to `B` bytes of response.
#[derive(Debug)]
pub(crate) struct RecentCalls<const N: usize, const B: usize> {
    slots: [Slot<B>; N],
    next: usize,
}

impl<const N: usize, const B: usize> RecentCalls<N, B> {
    pub(crate) const fn new() -> Self {
        RecentCalls {
            slots: [const {
                Slot {
                    key: 0,
                    used: false,
                    task: None,
                    len: None,
                    bytes: [0; B],
                }
            }; N],
            next: 0,
        }
    }

    pub(crate) fn get(&self, key: u64) -> Option<Seen<'_>> {
        let slot = self.slots.iter().find(|s| s.used && s.key == key)?;
        if let Some(task) = slot.task {
            return Some(Seen::Task(task));
        }
        Some(match slot.len.and_then(|n| slot.bytes.get(..n)) {
            Some(bytes) => Seen::Replay(bytes),
            None => Seen::Executed,
        })
    }

    pub(crate) fn put(&mut self, key: u64, response: &[u8]) {
        let Some(slot) = self.slots.get_mut(self.next) else {
            return;
        };
        slot.key = key;
        slot.used = true;
        slot.task = None;
        slot.len = slot.bytes.get_mut(..response.len()).map(|dst| {
            dst.copy_from_slice(response);
            response.len()
        });
        self.next = (self.next + 1) % N.max(1);
    }

    /// Remembers that the call `key` started task `task`.
    pub(crate) fn put_task(&mut self, key: u64, task: u64) {
        let Some(slot) = self.slots.get_mut(self.next) else {
            return;
        };
        slot.key = key;
        slot.used = true;
        slot.task = Some(task);
        slot.len = None;
        self.next = (self.next + 1) % N.max(1);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn remembers_the_last_n() {
        let mut c: RecentCalls<2, 8> = RecentCalls::new();
        let (a, b, d) = (
            call_key(&[b"1", b"x"]),
            call_key(&[b"2", b"x"]),
            call_key(&[b"3", b"x"]),
        );
        c.put(a, b"resp-a");
        c.put(b, b"too-long-response");
        assert_eq!(c.get(a), Some(Seen::Replay(b"resp-a")));
        assert_eq!(c.get(b), Some(Seen::Executed));
        c.put(d, b"resp-d");
        assert_eq!(c.get(a), None);
        assert_eq!(c.get(d), Some(Seen::Replay(b"resp-d")));
    }

    #[test]
    fn part_boundaries_matter() {
        assert_ne!(call_key(&[b"1", b"2x"]), call_key(&[b"12", b"x"]));
    }

    #[test]
    fn zero_capacity_never_remembers() {
        let mut c: RecentCalls<0, 8> = RecentCalls::new();
        c.put(1, b"x");
        assert_eq!(c.get(1), None);
    }
}
