//! What the async tests share: a future that is `Pending` once, the shape of a bus transfer that
//! waits for its interrupt, and a loop that polls a future to its end.
#![allow(dead_code, reason = "each test binary uses part of it")]

use core::future::Future;
use core::pin::{Pin, pin};
use core::task::{Context, Poll, Waker};

/// `Pending` once (asking to be polled again), then ready.
#[derive(Default)]
pub struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls `f` to its end with a no-op waker; its output and how often it was `Pending`.
///
/// # Panics
/// After 10,000 polls: a future that never ends fails the test instead of hanging it.
pub fn block_on<F: Future>(f: F) -> (F::Output, u32) {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    let mut pending = 0;
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return (v, pending),
            Poll::Pending => pending += 1,
        }
        assert!(pending < 10_000, "never ready");
    }
}
