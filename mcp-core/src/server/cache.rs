//! Retransmissions: a repeated `tools/call` is answered from what the first one produced instead
//! of running again, and each remembered answer records whether it was written out.
//!
//! # What counts as a retransmission
//! The same request again — same id, tool, arguments and call form — **from the same peer**
//! ([`Peer`]: one connection, one session, one backend session resumed after a reconnect; on the
//! 2026-07-28 wire, one client-supplied idempotency key), **with no call in between that touched
//! the same tool**. An id match alone proves nothing: clients on the stateless wire all start at
//! `id: 1`, and xiaozhi backends restart their ids after a reconnect. The rule keeps a cached
//! answer true when it is served: its evidence ("read back 40") was observed by the call itself,
//! and anything that could since have changed what the tool acts on has dropped the entry.
//!
//! So the key hashes the peer's scope with the id, the tool, the raw `arguments` bytes and the
//! form (task-augmented or not, the era); an entry remembers its tool; a handler run of a tool
//! drops every entry of that tool, from every peer, before its own answer is stored; and
//! [`Server::touched`](super::Server::touched) drops them for changes the engine did not see (a
//! physical knob, another engine driving the same board). Read-only tools are never remembered
//! and touch nothing: they run afresh every time.
//!
//! # Delivery
//! The engine writes an answer into the caller's buffer; only the transport knows what became of
//! it. Each remembered answer carries a [`Delivery`] the transport reports through
//! [`Server::delivered`](super::Server::delivered), with the [`Receipt`] that
//! [`Handled`](super::Handled) handed out. A full cache evicts answers known to be written first
//! and lost ones last, so that the answer a dropped link still owes its peer is kept longest.
//!
//! Capacity: [`Capacities::CACHE`] entries of up to [`Capacities::CACHE_BYTES`] response bytes. A larger answer is remembered as "executed,
//! not replayable", so that a retransmission still never runs twice.

pub use crate::caller::Peer;
pub(crate) use crate::caller::call_key;

use super::Capacities;

/// The longest idempotency key accepted in `_meta` (bytes as sent).
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 128;

/// What became of a remembered answer, as the transport reported it.
///
/// A device cannot know that the peer *received* an answer — a TCP or WebSocket write returns
/// once the bytes are in the local send buffer, and the link can fail after that — but it can
/// know that the answer was handed to the transport, or that the link was gone first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Delivery {
    /// The answer was produced; the transport has not said what became of it.
    Pending,
    /// The transport wrote the answer out (to the socket, the UART, the WebSocket).
    Written,
    /// The link failed before the answer could be written: only a retransmission can deliver it.
    Lost,
}

/// Names one remembered answer, for [`Server::delivered`](super::Server::delivered). A receipt
/// whose entry was since replaced is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Receipt {
    slot: u16,
    stamp: u32,
}

/// A remembered call, as [`Server::recent_calls`](super::Server::recent_calls) lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct CallRecord {
    /// The tool the call ran.
    pub tool: &'static str,
    /// What became of the answer, as last reported.
    pub delivery: Delivery,
    /// How many retransmissions were answered from this entry.
    pub replays: u16,
    /// The call started a task.
    pub task: bool,
}

/// One remembered call, without its bytes (those are the slot's chunk of the byte store).
#[derive(Debug)]
pub struct Slot {
    key: u64,
    used: bool,
    /// The registry index of the tool the call ran.
    tool: u16,
    /// Order of storing, for eviction and receipts.
    stamp: u32,
    delivery: Delivery,
    replays: u16,
    /// The call started task `task` (when `has_task`): a retransmission is answered from the
    /// task table. (A flag beside a plain `u64`, and a length with a sentinel, not `Option`s: a
    /// slot is 32 bytes, not 48.)
    task: u64,
    has_task: bool,
    /// The response's length in the slot's bytes; [`NOT_KEPT`]: it did not fit.
    len: u32,
}

/// [`Slot::len`] of a response that did not fit the slot's bytes.
const NOT_KEPT: u32 = u32::MAX;

impl Slot {
    /// An unused slot.
    pub(crate) const FREE: Slot = Slot {
        key: 0,
        used: false,
        tool: 0,
        stamp: 0,
        delivery: Delivery::Pending,
        replays: 0,
        task: 0,
        has_task: false,
        len: NOT_KEPT,
    };

    /// The task the call started, if it started one.
    fn task(&self) -> Option<u64> {
        self.has_task.then_some(self.task)
    }

    /// The length of the response kept, if it fit.
    fn kept(&self) -> Option<usize> {
        (self.len != NOT_KEPT).then_some(self.len as usize)
    }
}

/// The remembered answers' bytes: one chunk per slot (`[[u8; B]; N]` in a server, sealed).
pub trait Chunks {
    /// Slot `i`'s bytes.
    fn chunk(&self, i: usize) -> Option<&[u8]>;
    /// Slot `i`'s bytes, to fill.
    fn chunk_mut(&mut self, i: usize) -> Option<&mut [u8]>;
}

impl<const B: usize, const N: usize> Chunks for [[u8; B]; N] {
    fn chunk(&self, i: usize) -> Option<&[u8]> {
        self.get(i).map(|c| c.as_slice())
    }
    fn chunk_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        self.get_mut(i).map(|c| c.as_mut_slice())
    }
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

/// Up to `K::CACHE` executed calls, each with up to `K::CACHE_BYTES` bytes of response.
pub(crate) struct RecentCalls<K: Capacities> {
    slots: K::CacheSlots,
    bytes: K::CacheBytes,
    stamp: u32,
}

impl<K: Capacities> RecentCalls<K> {
    pub(crate) const fn new(slots: K::CacheSlots, bytes: K::CacheBytes) -> Self {
        RecentCalls {
            slots,
            bytes,
            stamp: 0,
        }
    }

    fn slots(&self) -> &[Slot] {
        self.slots.as_ref()
    }

    fn slots_mut(&mut self) -> &mut [Slot] {
        self.slots.as_mut()
    }

    /// Looks a key up; a hit counts as a replay. Returns the entry's receipt and delivery too.
    pub(crate) fn get(&mut self, key: u64) -> Option<(Receipt, Delivery, Seen<'_>)> {
        let (i, slot) = self
            .slots_mut()
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.used && s.key == key)?;
        slot.replays = slot.replays.saturating_add(1);
        let receipt = Receipt {
            slot: u16::try_from(i).ok()?,
            stamp: slot.stamp,
        };
        let (delivery, task, len) = (slot.delivery, slot.task(), slot.kept());
        if let Some(task) = task {
            return Some((receipt, delivery, Seen::Task(task)));
        }
        let seen = match len.and_then(|n| self.bytes.chunk(i)?.get(..n)) {
            Some(bytes) => Seen::Replay(bytes),
            None => Seen::Executed,
        };
        Some((receipt, delivery, seen))
    }

    /// Forgets every answer of tool `tool`: something touched what it acts on.
    pub(crate) fn touch(&mut self, tool: usize) -> usize {
        let mut dropped = 0;
        for s in self.slots_mut().iter_mut().filter(|s| s.used) {
            if usize::from(s.tool) == tool {
                s.used = false;
                dropped += 1;
            }
        }
        dropped
    }

    /// Remembers the answer `response` of the call `key` of tool `tool`.
    pub(crate) fn put(&mut self, key: u64, tool: usize, response: &[u8]) -> Option<Receipt> {
        let slot = self.victim()?;
        let len = self
            .bytes
            .chunk_mut(slot)
            .and_then(|b| b.get_mut(..response.len()))
            .and_then(|dst| {
                dst.copy_from_slice(response);
                u32::try_from(response.len()).ok()
            });
        let s = self.slots_mut().get_mut(slot)?;
        s.len = len.unwrap_or(NOT_KEPT);
        s.has_task = false;
        Some(self.fill(slot, key, tool))
    }

    /// Remembers that the call `key` of tool `tool` started task `task`.
    pub(crate) fn put_task(&mut self, key: u64, tool: usize, task: u64) -> Option<Receipt> {
        let slot = self.victim()?;
        let s = self.slots_mut().get_mut(slot)?;
        s.len = NOT_KEPT;
        (s.task, s.has_task) = (task, true);
        Some(self.fill(slot, key, tool))
    }

    fn fill(&mut self, slot: usize, key: u64, tool: usize) -> Receipt {
        self.stamp = self.stamp.wrapping_add(1);
        let stamp = self.stamp;
        if let Some(s) = self.slots_mut().get_mut(slot) {
            s.key = key;
            s.used = true;
            s.tool = u16::try_from(tool).unwrap_or(u16::MAX);
            s.stamp = stamp;
            s.delivery = Delivery::Pending;
            s.replays = 0;
        }
        Receipt {
            slot: u16::try_from(slot).unwrap_or(u16::MAX),
            stamp,
        }
    }

    /// Age by distance from the newest stamp, so that wrapping does not reorder.
    fn age(&self, s: &Slot) -> u32 {
        self.stamp.wrapping_sub(s.stamp)
    }

    /// The slot to fill: a free one, else the oldest answer known to be written, else the oldest
    /// one pending, else the oldest lost one.
    fn victim(&self) -> Option<usize> {
        if let Some(free) = self.slots().iter().position(|s| !s.used) {
            return Some(free);
        }
        let rank = |d: Delivery| match d {
            Delivery::Written => 0u8,
            Delivery::Pending => 1,
            Delivery::Lost => 2,
        };
        self.slots()
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| {
                rank(a.delivery)
                    .cmp(&rank(b.delivery))
                    .then(self.age(b).cmp(&self.age(a)))
            })
            .map(|(i, _)| i)
    }

    /// Records what became of the answer named by `receipt`; `false` when it is gone.
    pub(crate) fn delivered(&mut self, receipt: Receipt, delivery: Delivery) -> bool {
        match self.slots_mut().get_mut(usize::from(receipt.slot)) {
            Some(s) if s.used && s.stamp == receipt.stamp => {
                s.delivery = delivery;
                true
            }
            _ => false,
        }
    }

    /// The delivery recorded for `receipt`, while its entry lives.
    pub(crate) fn delivery(&self, receipt: Receipt) -> Option<Delivery> {
        self.slots()
            .get(usize::from(receipt.slot))
            .filter(|s| s.used && s.stamp == receipt.stamp)
            .map(|s| s.delivery)
    }

    /// The remembered calls, oldest first; `name` names a tool by its registry index.
    pub(crate) fn records<'a>(
        &'a self,
        name: impl Fn(usize) -> &'static str + 'a,
    ) -> impl Iterator<Item = CallRecord> + 'a {
        // Each step takes the used slot that is the oldest of those younger than the last one
        // (stamps are distinct, so ages are): no room for an order is needed.
        let mut older_than = None::<u32>;
        core::iter::from_fn(move || {
            let s = self
                .slots()
                .iter()
                .filter(|s| s.used && older_than.is_none_or(|a| self.age(s) < a))
                .max_by_key(|s| self.age(s))?;
            older_than = Some(self.age(s));
            Some(CallRecord {
                tool: name(usize::from(s.tool)),
                delivery: s.delivery,
                replays: s.replays,
                task: s.has_task,
            })
        })
    }
}

impl<K: Capacities> core::fmt::Debug for RecentCalls<K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecentCalls")
            .field("slots", &self.slots())
            .field("stamp", &self.stamp)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::server::Caps;

    /// A cache of `N` slots of 8 bytes.
    fn cache<const N: usize>() -> RecentCalls<Caps<1, 0, N, 8>> {
        RecentCalls::new([const { Slot::FREE }; N], [[0; 8]; N])
    }

    #[test]
    fn a_replay_is_found_by_key_and_an_oversized_answer_is_only_marked() {
        let mut c = cache::<2>();
        let (a, b) = (
            call_key([0, 0], &[b"1", b"x"]),
            call_key([0, 0], &[b"2", b"x"]),
        );
        c.put(a, 0, b"resp-a");
        c.put(b, 1, b"too-long-response");
        assert_eq!(c.get(a).map(|(_, _, s)| s), Some(Seen::Replay(b"resp-a")));
        assert_eq!(c.get(b).map(|(_, _, s)| s), Some(Seen::Executed));
        assert_eq!(c.get(call_key([0, 0], &[b"3", b"x"])), None);
    }

    #[test]
    fn touching_a_tool_forgets_all_its_answers_and_only_those() {
        let mut c = cache::<4>();
        c.put(1, 0, b"a");
        c.put(2, 0, b"b");
        c.put(3, 1, b"c");
        assert_eq!(c.touch(0), 2);
        assert_eq!(c.get(1), None);
        assert_eq!(c.get(2), None);
        assert!(c.get(3).is_some());
        assert_eq!(c.touch(0), 0);
    }

    #[test]
    fn eviction_keeps_what_a_lost_link_still_owes() {
        let mut c = cache::<3>();
        let lost = c.put(1, 0, b"a").unwrap();
        let written = c.put(2, 1, b"b").unwrap();
        c.put(3, 2, b"c").unwrap();
        c.delivered(lost, Delivery::Lost);
        c.delivered(written, Delivery::Written);
        // Full: the written answer goes first, although the lost one is older.
        c.put(4, 3, b"d").unwrap();
        assert!(c.get(2).is_none());
        assert!(c.get(1).is_some());
        // Then the oldest pending one (3), still not the lost one.
        c.put(5, 3, b"e").unwrap();
        assert!(c.get(3).is_none());
        assert!(c.get(1).is_some());
        assert_eq!(c.delivery(lost), Some(Delivery::Lost));
        // A receipt for a replaced entry is ignored.
        assert!(!c.delivered(written, Delivery::Lost));
    }

    #[test]
    fn records_list_oldest_first_with_replays() {
        let mut c = cache::<3>();
        for (key, tool) in [(1, 5), (2, 6), (3, 7), (4, 8)] {
            c.put(key, tool, b"x");
        }
        c.get(4);
        c.get(4);
        const NAMES: [&str; 9] = ["0", "1", "2", "3", "4", "5", "6", "7", "8"];
        let tools: Vec<_> = c
            .records(|i| NAMES[i])
            .map(|r| (r.tool, r.replays))
            .collect();
        assert_eq!(tools, [("6", 0), ("7", 0), ("8", 2)]);
    }

    #[test]
    fn part_boundaries_matter() {
        assert_ne!(
            call_key([0, 0], &[b"1", b"2x"]),
            call_key([0, 0], &[b"12", b"x"])
        );
    }

    #[test]
    fn zero_capacity_never_remembers() {
        let mut c = cache::<0>();
        assert_eq!(c.put(1, 0, b"x"), None);
        assert_eq!(c.get(1), None);
        assert_eq!(c.records(|_| "").count(), 0);
    }
}
