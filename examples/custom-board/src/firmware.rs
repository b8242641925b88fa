//! The firmware on the machine: the bench parts, the engine and the UART's line link, served
//! forever.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

use custom_board::amp::AmpError;
use custom_board::{Sizes, bench, engine, run};
use mcp_core::Principal;
use mcp_core::transport::stdio::LineLink;
use mcp_hal::ErrorKind;

use crate::platform::{self, Delay};

/// Whether the bench has the amplifier on its bus (the feature `no-codec` takes it away).
const AMP_FITTED: bool = !cfg!(feature = "no-codec");

/// Polls `f` until it is ready: the whole executor of a firmware with one thing to do.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        core::hint::spin_loop();
    }
}

#[riscv_rt::entry]
fn main() -> ! {
    let Ok(mut board) = bench::board(AMP_FITTED, Delay) else {
        platform::exit_failure(2)
    };
    // The probe is bounded like every transfer. Another chip at the amplifier's address is the
    // wrong board: writing its registers could do anything, so stop. A missing or dead amplifier
    // is not fatal: the firmware serves, and the codec tools answer an error naming it.
    if block_on(board.codec.probe()) == Err(AmpError(ErrorKind::WrongDevice)) {
        platform::exit_failure(3);
    }
    let Ok(mut engine) = engine::<_, _, Delay>() else {
        platform::exit_failure(4)
    };
    let mut link: LineLink<{ Sizes::LINE }> = LineLink::new();
    let mut uart = platform::Uart;
    let mut out = [0u8; Sizes::OUT];
    // What a handler emits while it runs (progress, log messages) goes out before its answer.
    let mut notify = |m: &[u8]| {
        platform::write(m);
        platform::write(b"\n");
    };
    loop {
        // What the engine owes (a call a person confirmed runs here), then one message.
        let now = platform::now_ms();
        block_on(link.poll_async(&mut engine, now, &mut board, &mut out, &mut uart, run));
        let read = block_on(link.serve_async(
            &mut engine,
            Principal::Model,
            &mut board,
            &mut out,
            &mut uart,
            &mut notify,
            run,
        ));
        if !read {
            core::hint::spin_loop();
        }
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    platform::exit_failure(101)
}
