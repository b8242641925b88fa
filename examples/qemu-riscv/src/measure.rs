//! The firmware measures itself: stack use by painting, heap use by counting.
//!
//! **Stack.** At boot the whole free stack is painted with a pattern. [`measured`] runs one piece
//! of work (a `Server::handle` or `Server::poll`) and reports how deep below the caller's stack
//! pointer it wrote: before the work it repaints what earlier work dirtied, after it scans up
//! from the bottom of the stack for the first word that no longer holds the pattern. The
//! lowest address ever dirtied gives the session's peak. Nothing may run in between (this
//! firmware takes no interrupts), so a word below the stack pointer changes only if the
//! measured work wrote it.
//!
//! **Heap.** The global allocator wraps `embedded-alloc`'s linked-list heap and records, after
//! every allocation, the most bytes in use at once, and how many allocations there were.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;
use core::ptr;

use critical_section::Mutex;
use embedded_alloc::LlffHeap;

/// The pattern painted on the free stack.
const PAINT: u32 = 0xA5C3_5A3C;
/// Bytes left unpainted just below the painter's own stack pointer.
const MARGIN: usize = 64;

unsafe extern "C" {
    /// The lowest address of the stack region (`memory.x`: region `STACK`), from riscv-rt.
    static __estack: u8;
    /// One past the highest address of the stack region.
    static __sstack: u8;
}

fn stack_bottom() -> usize {
    ptr::addr_of!(__estack) as usize
}

fn stack_top() -> usize {
    ptr::addr_of!(__sstack) as usize
}

/// The size of the stack region, in bytes.
pub fn stack_size() -> usize {
    stack_top() - stack_bottom()
}

#[inline(always)]
fn sp() -> usize {
    let sp: usize;
    // SAFETY: reads the stack pointer register; no memory is touched.
    unsafe { core::arch::asm!("mv {0}, sp", out(reg) sp) };
    sp
}

/// Paints `[from, to)` (word-aligned addresses inside the stack region, below the live stack).
#[inline(always)]
fn paint(from: usize, to: usize) {
    let mut p = from & !3;
    while p < to {
        // SAFETY: `p` lies in the stack region below the current stack pointer (callers pass
        // `to <= sp - MARGIN`): memory no live frame uses, and no interrupt handler runs.
        unsafe { ptr::write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// The lowest stack address that no longer holds the pattern.
#[inline(always)]
fn lowest_dirty() -> usize {
    let mut p = stack_bottom();
    let top = stack_top();
    // SAFETY: reads words of the stack region, which is always mapped RAM.
    while p < top && unsafe { ptr::read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    p
}

#[derive(Clone, Copy)]
struct StackStats {
    lowest: usize,
    handle_peak: usize,
    poll_peak: usize,
    last: usize,
    handled: u32,
}

static STACK: Mutex<Cell<StackStats>> = Mutex::new(Cell::new(StackStats {
    lowest: usize::MAX,
    handle_peak: 0,
    poll_peak: 0,
    last: 0,
    handled: 0,
}));

/// Paints the whole free stack. Call first thing at boot.
#[inline(always)]
pub fn paint_stack() {
    paint(stack_bottom(), sp() - MARGIN);
}

/// What is measured.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// One `Server::handle` (the dispatch of one message).
    Handle,
    /// One `Server::poll`.
    Poll,
}

/// Runs `work` and records how many bytes of stack it used below this function's frame.
///
/// `work` runs in a frame of its own ([`run_below`]): were it inlined here, the compiler would
/// put the outer frames of the engine (the dispatch's locals) into this function's frame, above
/// the stack pointer read at the start, and they would go uncounted.
#[inline(never)]
pub fn measured<R>(kind: Work, work: impl FnOnce() -> R) -> R {
    let here = sp();
    let mut s = critical_section::with(|cs| STACK.borrow(cs).get());
    // Whatever ran since the last measurement (boot, the main loop) counts for the session.
    let before = lowest_dirty();
    s.lowest = s.lowest.min(before);
    paint(before, here - MARGIN);
    let result = run_below(work);
    let low = lowest_dirty();
    s.lowest = s.lowest.min(low);
    let used = here.saturating_sub(low);
    match kind {
        Work::Handle => {
            s.handle_peak = s.handle_peak.max(used);
            s.last = used;
            s.handled = s.handled.wrapping_add(1);
        }
        Work::Poll => s.poll_peak = s.poll_peak.max(used),
    }
    critical_section::with(|cs| STACK.borrow(cs).set(s));
    result
}

/// Stack figures, in bytes.
#[derive(Clone, Copy)]
pub struct StackReport {
    /// The stack region.
    pub size: usize,
    /// Deepest use since boot (from the top of the region).
    pub peak: usize,
    /// Deepest use by one `Server::handle` (below the caller's frame).
    pub handle_peak: usize,
    /// Deepest use by one `Server::poll`.
    pub poll_peak: usize,
    /// Use by the last completed `Server::handle` before the current one.
    pub last_handle: usize,
    /// Messages handled.
    pub handled: u32,
    /// `true` when the whole region was dirtied: the stack may have overflowed.
    pub exhausted: bool,
}

/// The stack figures so far (including the work running now).
pub fn stack_report() -> StackReport {
    let s = critical_section::with(|cs| STACK.borrow(cs).get());
    let lowest = s.lowest.min(lowest_dirty());
    StackReport {
        size: stack_size(),
        peak: stack_top().saturating_sub(lowest),
        handle_peak: s.handle_peak,
        poll_peak: s.poll_peak,
        last_handle: s.last,
        handled: s.handled,
        exhausted: lowest <= stack_bottom(),
    }
}

/// The global allocator: `embedded-alloc`'s heap plus a high-water mark.
pub struct TrackingHeap {
    heap: LlffHeap,
    stats: Mutex<Cell<HeapReport>>,
}

/// Heap figures, in bytes.
#[derive(Clone, Copy)]
pub struct HeapReport {
    /// The heap's size.
    pub size: usize,
    /// In use now.
    pub used: usize,
    /// The most in use at once since boot.
    pub peak: usize,
    /// Allocations since boot.
    pub allocations: u32,
    /// Allocations that failed.
    pub failures: u32,
}

impl TrackingHeap {
    /// An empty heap; call [`init`](Self::init) before the first allocation.
    pub const fn empty() -> Self {
        TrackingHeap {
            heap: LlffHeap::empty(),
            stats: Mutex::new(Cell::new(HeapReport {
                size: 0,
                used: 0,
                peak: 0,
                allocations: 0,
                failures: 0,
            })),
        }
    }

    /// Gives the heap its memory.
    ///
    /// # Safety
    /// Call once, before any allocation, with memory used for nothing else.
    pub unsafe fn init(&self, start: usize, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.heap.init(start, size) };
        critical_section::with(|cs| {
            let cell = self.stats.borrow(cs);
            cell.set(HeapReport { size, ..cell.get() });
        });
    }

    /// The heap figures so far.
    pub fn report(&self) -> HeapReport {
        let r = critical_section::with(|cs| self.stats.borrow(cs).get());
        HeapReport {
            used: self.heap.used(),
            ..r
        }
    }
}

// SAFETY: forwards to `LlffHeap`, which is a correct allocator; the bookkeeping does not touch
// the memory handed out.
unsafe impl GlobalAlloc for TrackingHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        let p = unsafe { self.heap.alloc(layout) };
        let used = self.heap.used();
        critical_section::with(|cs| {
            let cell = self.stats.borrow(cs);
            let mut s = cell.get();
            if p.is_null() {
                s.failures = s.failures.wrapping_add(1);
            } else {
                s.allocations = s.allocations.wrapping_add(1);
                s.peak = s.peak.max(used);
            }
            cell.set(s);
        });
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.heap.dealloc(ptr, layout) }
    }
}

/// Runs `work` in a frame of its own, below [`measured`]'s: nothing of it may be inlined into the
/// measurer's frame, which lies above the measured region. (Until this existed, LTO inlined
/// `Server::handle`'s outer frame into `measured`, and the figures left out up to 530 B.)
#[inline(never)]
fn run_below<R>(work: impl FnOnce() -> R) -> R {
    work()
}
