//! A codec that does not answer gives an error that names the chip, never a hang.
//!
//! - Blocking: the ES8311 driver over embedded-hal-mock I2C transactions that all fail (a NACK:
//!   nothing at the address; `Other`: what esp-hal reports when its bus timeout fires), and a
//!   codec that reads back another chip's ID. A blocking driver cannot interrupt a blocking bus
//!   call: the bus's own timeout bounds it (see the firmwares), and these tests check what the
//!   driver and the kits make of the error it then gets.
//! - Async: the ES8311 driver over a bus whose every transfer stays `Pending` forever (a dead
//!   chip holding the clock line, or a HAL with its bus timeout off), with a delay on a simulated
//!   clock. Each future is driven by [`finish`], a poll loop that gives up after a bounded number
//!   of polls, so a driver that hangs fails the test instead of hanging it.
//!
//! Every test also checks that nothing else happened: the mock's `done()` (no transaction beyond
//! those expected), the count of transfers the silent bus saw, the time the driver waited.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]

use core::cell::Cell;
use core::future::Future;
use core::pin::{Pin, pin};
use core::task::{Context, Poll, Waker};
use std::rc::Rc;

use embedded_hal::i2c::NoAcknowledgeSource;
use embedded_hal::i2c::{ErrorKind as I2cErrorKind, ErrorType as I2cErrorType, Operation};
use embedded_hal_mock::eh1::delay::NoopDelay;
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use mcp_core::{Call, Caps, Config, Input, Principal, Server, Tool};
use mcp_hal::asynch::audio::AudioCodec as _;
use mcp_hal::drivers::{Es8311, Es8311Error, asynch};
use mcp_hal::kits::asynch as ak;
use mcp_hal::kits::{self, audio, status};
use mcp_hal::{Error as _, ErrorKind, Percent};
use serde_json::{Value, json};

const ADDR: u8 = Es8311::ADDRESS_CE_LOW;
/// How many polls a future gets before the test calls it hung: far more than any bounded wait
/// here needs (one poll per simulated millisecond).
const MAX_POLLS: u32 = 100_000;

/// Polls `f` with a no-op waker until it is ready, at most `MAX_POLLS` times; `None` when it
/// never was (the code under test hangs).
fn finish<F: Future>(f: F) -> Option<F::Output> {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    (0..MAX_POLLS).find_map(|_| match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    })
}

/// An async I2C bus on which nothing ever answers: every transfer is `Pending` forever. Counts
/// the transfers started.
#[derive(Debug, Clone, Default)]
struct Silent {
    started: Rc<Cell<u32>>,
}

impl I2cErrorType for Silent {
    type Error = I2cErrorKind;
}

impl embedded_hal_async::i2c::I2c for Silent {
    async fn transaction(&mut self, _: u8, _: &mut [Operation<'_>]) -> Result<(), I2cErrorKind> {
        self.started.set(self.started.get() + 1);
        core::future::pending().await
    }
}

/// One millisecond of a simulated clock passes each time a wait is polled and not yet over.
#[derive(Debug, Clone, Default)]
struct Clock {
    now_ms: Rc<Cell<u32>>,
}

/// A wait on the [`Clock`] until `until`.
struct Until {
    now_ms: Rc<Cell<u32>>,
    until: u32,
}

impl Future for Until {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        let now = self.now_ms.get();
        if now >= self.until {
            Poll::Ready(())
        } else {
            self.now_ms.set(now + 1);
            Poll::Pending
        }
    }
}

impl embedded_hal_async::delay::DelayNs for Clock {
    async fn delay_ns(&mut self, ns: u32) {
        let until = self.now_ms.get() + ns.div_ceil(1_000_000);
        Until {
            now_ms: self.now_ms.clone(),
            until,
        }
        .await;
    }
}

type SilentCodec = asynch::Es8311<Silent, Clock>;

fn silent_codec() -> (SilentCodec, Rc<Cell<u32>>, Rc<Cell<u32>>) {
    let bus = Silent::default();
    let clock = Clock::default();
    let (started, now) = (bus.started.clone(), clock.now_ms.clone());
    (asynch::Es8311::new(bus, ADDR, clock), started, now)
}

// ---- the async driver on a silent bus ----

#[test]
fn async_probe_of_a_silent_codec_times_out_naming_it() {
    let (mut codec, started, now) = silent_codec();
    let got = finish(codec.probe()).expect("the probe hung on a silent bus");
    let err = got.unwrap_err();
    assert_eq!(err, Es8311Error::Timeout);
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(
        err.message(),
        "The ES8311 codec did not answer on I2C in time; the state is unknown"
    );
    assert_eq!(err.to_string(), "ES8311 codec: no answer on I2C in time");
    // One transfer (the first ID register), given up after the driver's timeout, no retry.
    assert_eq!(started.get(), 1);
    assert_eq!(now.get(), asynch::Es8311::TIMEOUT_MS);
}

#[test]
fn async_every_call_on_a_silent_bus_ends_after_one_timeout() {
    let (mut codec, started, now) = silent_codec();
    let t = asynch::Es8311::TIMEOUT_MS;
    let forty = Percent::new(40).unwrap();
    assert_eq!(
        finish(codec.set_volume(forty)).unwrap(),
        Err(Es8311Error::Timeout)
    );
    assert_eq!((started.get(), now.get()), (1, t));
    assert_eq!(finish(codec.volume()).unwrap(), Err(Es8311Error::Timeout));
    assert_eq!((started.get(), now.get()), (2, 2 * t));
    // The read of the read-modify-write times out: the write is never started.
    assert_eq!(
        finish(codec.set_mute(true)).unwrap(),
        Err(Es8311Error::Timeout)
    );
    assert_eq!((started.get(), now.get()), (3, 3 * t));
    assert_eq!(finish(codec.is_muted()).unwrap(), Err(Es8311Error::Timeout));
    assert_eq!((started.get(), now.get()), (4, 4 * t));
}

#[test]
fn async_timeout_is_the_drivers_to_set() {
    let (codec, started, now) = silent_codec();
    let mut codec = codec.with_timeout_ms(5);
    assert_eq!(codec.timeout_ms(), 5);
    assert_eq!(finish(codec.chip_id()).unwrap(), Err(Es8311Error::Timeout));
    assert_eq!((started.get(), now.get()), (1, 5));
}

/// A transfer that finishes before the timeout is not cut short: the bus answers after 10 polls
/// (10 ms on the clock), the timeout is 50 ms.
#[test]
fn async_a_slow_answer_within_the_timeout_is_kept() {
    /// Answers every read with `value` after `polls` polls.
    struct Slow {
        polls: u32,
        value: u8,
    }
    impl I2cErrorType for Slow {
        type Error = I2cErrorKind;
    }
    impl embedded_hal_async::i2c::I2c for Slow {
        async fn transaction(
            &mut self,
            _: u8,
            ops: &mut [Operation<'_>],
        ) -> Result<(), I2cErrorKind> {
            for _ in 0..self.polls {
                let mut once = false;
                core::future::poll_fn(|_| {
                    if once {
                        Poll::Ready(())
                    } else {
                        once = true;
                        Poll::Pending
                    }
                })
                .await;
            }
            for op in ops {
                if let Operation::Read(buf) = op {
                    buf.fill(self.value);
                }
            }
            Ok(())
        }
    }
    let clock = Clock::default();
    let now = clock.now_ms.clone();
    let mut codec = asynch::Es8311::new(
        Slow {
            polls: 10,
            value: 0x4C,
        },
        ADDR,
        clock,
    );
    assert_eq!(
        finish(codec.volume()).unwrap(),
        Ok(Percent::new(40).unwrap())
    );
    assert_eq!(now.get(), 10);
}

// ---- the async kits over it, through Server::handle_async ----

/// An async board with only a codec and the clock the kits wait on.
struct AsyncBoard {
    codec: SilentCodec,
    clock: Clock,
}

impl ak::Wait for AsyncBoard {
    fn delay(&mut self) -> impl ak::DelayNs + '_ {
        &mut self.clock
    }
}

impl ak::audio::HasCodec for AsyncBoard {
    type Codec = SilentCodec;
    fn codec(&mut self) -> &mut SilentCodec {
        &mut self.codec
    }
}

impl ak::status::StatusReport for AsyncBoard {
    async fn report(&mut self, s: &mut ak::status::Status<'_>) {
        s.audio_speaker(&mut self.codec).await;
    }
}

impl AsyncBoard {
    const TOOLS: &'static [&'static Tool<Self>] =
        &[&ak::audio::set_volume(), &ak::status::get_device_status()];
}

fn call_msg(tool: &str, args: &Value) -> String {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":args}})
        .to_string()
}

/// Checks that a `tools/call` answer is a failed call whose first text contains `message`.
fn assert_failed_with(answer: &[u8], message: &str) {
    let v: Value = serde_json::from_slice(answer).unwrap();
    let result = &v["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        result["isError"] == json!(true) && text.contains(message),
        "expected a failed call saying {message:?}: {v}"
    );
}

#[test]
fn async_volume_and_status_tools_answer_an_error_naming_the_codec() {
    let (codec, started, now) = silent_codec();
    let clock = Clock {
        now_ms: now.clone(),
    };
    let mut board = AsyncBoard { codec, clock };
    let mut server: Server<'static, AsyncBoard, Caps<4>> =
        Server::new(Config::new("dead-bus", "1"));
    server.register_all(AsyncBoard::TOOLS).unwrap();
    let mut fails_with = |tool: &str, args: Value, message: &str| {
        let msg = call_msg(tool, &args);
        let mut out = vec![0u8; 4096];
        let handled = finish(server.handle_async(
            Input::new(msg.as_bytes(), Principal::User),
            &mut board,
            &mut out,
            &mut |_: &[u8]| {},
            async |board: &mut AsyncBoard, call: Call<'_, '_>| {
                mcp_hal::dispatch_kits!(board, call, [ak::audio, ak::status])
            },
        ))
        .unwrap_or_else(|| panic!("{tool} hung on a silent bus"));
        let n = handled.unwrap().len;
        assert_failed_with(&out[..n], message);
    };
    fails_with(
        "self.audio_speaker.set_volume",
        json!({"volume": 40}),
        "The ES8311 codec did not answer on I2C in time",
    );
    // The write timed out: no read-back was tried.
    assert_eq!((started.get(), now.get()), (1, asynch::Es8311::TIMEOUT_MS));
    fails_with(
        "self.get_device_status",
        json!({}),
        "The ES8311 codec did not answer on I2C in time",
    );
    assert_eq!(started.get(), 2);
}

// ---- the blocking driver and kits ----

/// A blocking board with only a codec.
struct Board {
    codec: Es8311<Mock>,
    delay: NoopDelay,
}

impl kits::Wait for Board {
    fn delay(&mut self) -> impl kits::DelayNs + '_ {
        &mut self.delay
    }
}

impl audio::HasCodec for Board {
    type Codec = Es8311<Mock>;
    fn codec(&mut self) -> &mut Es8311<Mock> {
        &mut self.codec
    }
}

impl status::StatusReport for Board {
    fn report(&mut self, s: &mut status::Status<'_, '_, '_>) {
        s.audio_speaker(&mut self.codec);
    }
}

impl Board {
    const TOOLS: &'static [&'static Tool<Self>] =
        &[&audio::set_volume(), &status::get_device_status()];

    fn on(expectations: &[Transaction]) -> Self {
        Board {
            codec: Es8311::new(Mock::new(expectations), ADDR),
            delay: NoopDelay::new(),
        }
    }

    /// One `tools/call`, answered through `Server::handle`: a failed call saying `message`.
    fn fails_with(&mut self, tool: &str, args: Value, message: &str) {
        let mut server: Server<'static, Board, Caps<4>> = Server::new(Config::new("dead-bus", "1"));
        server.register_all(Board::TOOLS).unwrap();
        let mut out = vec![0u8; 4096];
        let msg = call_msg(tool, &args);
        let n = server
            .handle(msg.as_bytes(), Principal::User, self, &mut out)
            .unwrap()
            .len;
        assert_failed_with(&out[..n], message);
    }

    fn done(self) {
        self.codec.release().done();
    }
}

const NACK: I2cErrorKind = I2cErrorKind::NoAcknowledge(NoAcknowledgeSource::Address);

/// No chip at the address: every transfer is NACKed. The probe fails naming the chip, after one
/// transfer; the volume and status tools answer errors naming it, each after one transfer (a
/// failed write is not read back).
#[test]
fn blocking_absent_codec_probe_and_tools_name_the_chip() {
    let mut board = Board::on(&[
        Transaction::write_read(ADDR, vec![0xFD], vec![0]).with_error(NACK),
        Transaction::write(ADDR, vec![0x32, 0x4C]).with_error(NACK),
        Transaction::write_read(ADDR, vec![0x32], vec![0]).with_error(NACK),
    ]);
    let err = board.codec.probe().unwrap_err();
    assert_eq!(err, Es8311Error::I2c(NACK));
    assert!(
        err.message()
            .starts_with("The ES8311 codec did not acknowledge")
    );
    board.fails_with(
        "self.audio_speaker.set_volume",
        json!({"volume": 40}),
        "The ES8311 codec did not acknowledge on I2C (missing, unpowered or at another \
         address); nothing was changed",
    );
    board.fails_with(
        "self.get_device_status",
        json!({}),
        "The ES8311 codec did not acknowledge",
    );
    board.done();
}

/// The bus's own timeout fired (esp-hal reports it as a bus error of kind `Other`): the tool
/// names the codec.
#[test]
fn blocking_bus_timeout_names_the_chip() {
    let mut board =
        Board::on(&[Transaction::write(ADDR, vec![0x32, 0x4C]).with_error(I2cErrorKind::Other)]);
    board.fails_with(
        "self.audio_speaker.set_volume",
        json!({"volume": 40}),
        "I2C bus error talking to the ES8311 codec; the state is unknown",
    );
    board.done();
}

/// Another chip at the codec's address: the probe says so, and the tools then answer that error
/// without a single transfer (the mock expects only the probe's two reads).
#[test]
fn blocking_wrong_chip_is_refused_without_touching_it() {
    let mut board = Board::on(&[
        Transaction::write_read(ADDR, vec![0xFD], vec![0x10]),
        Transaction::write_read(ADDR, vec![0xFE], vec![0x20]),
    ]);
    assert_eq!(
        board.codec.probe(),
        Err(Es8311Error::WrongChip([0x10, 0x20]))
    );
    board.fails_with(
        "self.audio_speaker.set_volume",
        json!({"volume": 40}),
        "The chip at the ES8311 codec's I2C address is not an ES8311",
    );
    board.fails_with("self.get_device_status", json!({}), "is not an ES8311");
    board.done();
}
