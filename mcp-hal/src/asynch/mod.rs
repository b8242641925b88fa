//! Async twins of the device traits, and the [`BlockingAsync`] adapter.
//!
//! Each submodule mirrors a blocking module with the *same trait name*, the way
//! `embedded-hal-async` mirrors `embedded-hal`:
//!
//! | blocking | async twin |
//! |---|---|
//! | [`crate::audio::AudioCodec`] | [`audio::AudioCodec`] |
//! | [`crate::backlight::Backlight`] | [`backlight::Backlight`] |
//! | [`crate::switch::Switch`] | [`switch::Switch`] |
//! | [`crate::setpoint::Setpoint`] | [`setpoint::Setpoint`] |
//! | [`crate::motor::Actuator`] | [`motor::Actuator`] |
//! | [`crate::system::System`] | [`system::System`] |
//! | [`crate::sensor::Sensor`], [`crate::sensor::Button`] | [`sensor::Sensor`], [`sensor::Button`] |
//!
//! The error model is shared: every twin has the blocking [`ErrorType`] as its supertrait (it is
//! re-exported here and in each submodule), so a device has one error type whether it is driven
//! blocking or async. Methods that are pure queries with no I/O in the blocking trait
//! (`volume_caps`, `range`, `tolerance`, `settle_ms`, a sensor's `unit`) stay plain `fn`s. Every
//! twin has a blanket `impl<T: Trait + ?Sized> Trait for &mut T`.
//!
//! The contract does not change with `async`: a resolved `Ok(())` still means "issued", not
//! "physically done" (see the blocking modules).
//!
//! The tool kits over these twins are in [`kits::asynch`](crate::kits::asynch); the async
//! drivers in [`drivers::asynch`](crate::drivers::asynch).
//!
//! # For driver authors: bounded bus waits
//! An async bus transfer is a future that completes when the peripheral says so. A chip that is
//! missing, dead or holding the clock line, or a HAL whose bus timeout is off, may never say so,
//! and a driver that awaits the transfer alone then hangs its task, and a firmware with one task
//! hangs whole. [`with_timeout`] awaits a future for at most a number of milliseconds on the
//! board's async delay and gives [`TimedOut`] (kind [`ErrorKind::Timeout`]) when the delay ends
//! first. The ES8311 driver wraps every transfer in it; a driver of your own does the same:
//!
//! ```
//! use embedded_hal_async::delay::DelayNs;
//! use embedded_hal_async::i2c::I2c;
//! use mcp_hal::asynch::{TimedOut, with_timeout};
//!
//! /// Reads one register of a chip at `addr`, giving up after 20 ms.
//! async fn read_reg<B: I2c, D: DelayNs>(bus: &mut B, delay: &mut D, addr: u8, reg: u8)
//!     -> Result<Result<u8, B::Error>, TimedOut>
//! {
//!     let mut value = [0u8];
//!     let done = with_timeout(delay, 20, bus.write_read(addr, &[reg], &mut value)).await?;
//!     Ok(done.map(|()| value[0]))
//! }
//! ```
//!
//! # For HAL users: `BlockingAsync`
//! A device that only has a blocking driver can be used where an async twin is expected by
//! wrapping it in [`BlockingAsync`]:
//! ```
//! use mcp_hal::asynch::BlockingAsync;
//! use mcp_hal::asynch::system::System;
//! # use mcp_hal::ErrorType;
//! # struct Board { armed: Option<u32> }
//! # impl ErrorType for Board { type Error = core::convert::Infallible; }
//! # impl mcp_hal::system::System for Board {
//! #     fn schedule_reboot(&mut self, d: u32) -> Result<(), Self::Error> {
//! #         self.armed = Some(d);
//! #         Ok(())
//! #     }
//! # }
//!
//! async fn reboot_soon<S: System>(sys: &mut S) -> Result<(), S::Error> {
//!     sys.schedule_reboot(500).await
//! }
//!
//! let mut board = BlockingAsync::new(Board { armed: None });
//! // Any executor will do; here one poll with a no-op waker, as the adapter is always ready.
//! # use core::{future::Future, pin::pin, task::{Context, Poll, Waker}};
//! {
//!     let mut fut = pin!(reboot_soon(&mut board));
//!     let polled = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
//!     assert!(matches!(polled, Poll::Ready(Ok(()))));
//! }
//! assert_eq!(board.inner().armed, Some(500));
//! ```

pub mod audio;
pub mod backlight;
pub mod motor;
pub mod sensor;
pub mod setpoint;
pub mod switch;
pub mod system;

pub use crate::{Error, ErrorKind, ErrorType};

use core::future::Future;

use embassy_futures::select::{Either, select};
use embedded_hal_async::delay::DelayNs;

use crate::Percent;
use crate::audio::VolumeCaps;
use crate::motor::Motion;

/// A wait that ran out: [`with_timeout`]'s error, of kind [`ErrorKind::Timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut;

impl Error for TimedOut {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Timeout
    }
}

impl core::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("no answer within the timeout")
    }
}

impl core::error::Error for TimedOut {}

/// Awaits `fut` for at most `ms` milliseconds on `delay`: its output, or [`TimedOut`] when the
/// delay ends first. Then `fut` is dropped, which cancels it (a HAL's transfer future stops or
/// resets its peripheral when dropped). When both are ready at the same poll, `fut` wins.
///
/// `delay` must be a real async delay (embassy-time's `Delay`, a HAL's async timer): one whose
/// future is pending until the time has passed. A blocking delay behind
/// [`BlockingAsync`] waits the whole time inside its first poll, so every transfer that was not
/// finished at its own first poll would time out.
pub async fn with_timeout<F: Future, D: DelayNs + ?Sized>(
    delay: &mut D,
    ms: u32,
    fut: F,
) -> Result<F::Output, TimedOut> {
    match select(fut, delay.delay_ms(ms)).await {
        Either::First(out) => Ok(out),
        Either::Second(()) => Err(TimedOut),
    }
}

/// Runs a blocking driver behind the async twins.
///
/// Every async method calls the blocking method inside the future's first poll, so the future is
/// always ready at once and never returns `Pending`. That is what makes the adapter correct for
/// any executor, and also its cost: the executor is blocked for as long as the blocking call
/// takes (an I2C register write, a GPIO toggle). Use it for short operations; a driver whose
/// calls take milliseconds should implement the async twin natively.
///
/// It also turns a blocking `embedded-hal` delay into an `embedded-hal-async` one, for the async
/// kits' [`Wait`](crate::kits::asynch::Wait).
///
/// Modelled on `embassy-embedded-hal`'s `adapter::BlockingAsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockingAsync<T> {
    wrapped: T,
}

impl<T> BlockingAsync<T> {
    /// Wraps a blocking driver.
    pub const fn new(wrapped: T) -> Self {
        Self { wrapped }
    }

    /// The wrapped driver.
    pub const fn inner(&self) -> &T {
        &self.wrapped
    }

    /// The wrapped driver, mutably (to reach driver-specific methods).
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.wrapped
    }

    /// Gives the wrapped driver back.
    pub fn into_inner(self) -> T {
        self.wrapped
    }
}

impl<T: ErrorType> ErrorType for BlockingAsync<T> {
    type Error = T::Error;
}

impl<T: crate::audio::AudioCodec> audio::AudioCodec for BlockingAsync<T> {
    fn volume_caps(&self) -> VolumeCaps {
        crate::audio::AudioCodec::volume_caps(&self.wrapped)
    }
    async fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error> {
        crate::audio::AudioCodec::set_volume(&mut self.wrapped, volume)
    }
    async fn volume(&mut self) -> Result<Percent, Self::Error> {
        crate::audio::AudioCodec::volume(&mut self.wrapped)
    }
    async fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        crate::audio::AudioCodec::set_mute(&mut self.wrapped, mute)
    }
}

impl<T: crate::backlight::Backlight> backlight::Backlight for BlockingAsync<T> {
    async fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error> {
        crate::backlight::Backlight::set_brightness(&mut self.wrapped, level)
    }
    async fn brightness(&mut self) -> Result<Option<Percent>, Self::Error> {
        crate::backlight::Backlight::brightness(&mut self.wrapped)
    }
    fn tolerance(&self) -> u8 {
        crate::backlight::Backlight::tolerance(&self.wrapped)
    }
}

impl<T: crate::switch::Switch> switch::Switch for BlockingAsync<T> {
    async fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        crate::switch::Switch::set(&mut self.wrapped, on)
    }
    async fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        crate::switch::Switch::feedback(&mut self.wrapped)
    }
    fn settle_ms(&self) -> u32 {
        crate::switch::Switch::settle_ms(&self.wrapped)
    }
}

impl<T: crate::setpoint::Setpoint> setpoint::Setpoint for BlockingAsync<T> {
    async fn set(&mut self, value: i64) -> Result<(), Self::Error> {
        crate::setpoint::Setpoint::set(&mut self.wrapped, value)
    }
    async fn read(&mut self) -> Result<i64, Self::Error> {
        crate::setpoint::Setpoint::read(&mut self.wrapped)
    }
    fn expected(&self, value: i64) -> i64 {
        crate::setpoint::Setpoint::expected(&self.wrapped, value)
    }
    fn tolerance(&self) -> u32 {
        crate::setpoint::Setpoint::tolerance(&self.wrapped)
    }
    fn unit(&self) -> Option<&'static str> {
        crate::setpoint::Setpoint::unit(&self.wrapped)
    }
    fn settle_ms(&self) -> u32 {
        crate::setpoint::Setpoint::settle_ms(&self.wrapped)
    }
}

impl<T: crate::motor::Actuator> motor::Actuator for BlockingAsync<T> {
    fn range(&self) -> (i32, i32) {
        crate::motor::Actuator::range(&self.wrapped)
    }
    fn tolerance(&self) -> u32 {
        crate::motor::Actuator::tolerance(&self.wrapped)
    }
    fn unit(&self) -> Option<&'static str> {
        crate::motor::Actuator::unit(&self.wrapped)
    }
    async fn start_move(&mut self, target: i32) -> Result<(), Self::Error> {
        crate::motor::Actuator::start_move(&mut self.wrapped, target)
    }
    async fn state(&mut self) -> Result<Motion, Self::Error> {
        crate::motor::Actuator::state(&mut self.wrapped)
    }
    async fn stop(&mut self) -> Result<(), Self::Error> {
        crate::motor::Actuator::stop(&mut self.wrapped)
    }
}

impl<T: crate::system::System> system::System for BlockingAsync<T> {
    async fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), Self::Error> {
        crate::system::System::schedule_reboot(&mut self.wrapped, delay_ms)
    }
}

impl<T: crate::sensor::Sensor> sensor::Sensor for BlockingAsync<T> {
    fn unit(&self) -> crate::sensor::Unit {
        crate::sensor::Sensor::unit(&self.wrapped)
    }
    async fn read(&mut self) -> Result<i32, Self::Error> {
        crate::sensor::Sensor::read(&mut self.wrapped)
    }
}

impl<T: crate::sensor::Button> sensor::Button for BlockingAsync<T> {
    async fn is_pressed(&mut self) -> Result<bool, Self::Error> {
        crate::sensor::Button::is_pressed(&mut self.wrapped)
    }
}

/// A blocking delay where an async one is wanted (the async kits' [`Wait`](crate::kits::asynch::Wait)
/// on a board whose delay is blocking, or a simulated clock): the pause happens in the first
/// poll, blocking the executor for its length.
impl<T: embedded_hal::delay::DelayNs> embedded_hal_async::delay::DelayNs for BlockingAsync<T> {
    async fn delay_ns(&mut self, ns: u32) {
        self.wrapped.delay_ns(ns);
    }
    async fn delay_us(&mut self, us: u32) {
        self.wrapped.delay_us(us);
    }
    async fn delay_ms(&mut self, ms: u32) {
        self.wrapped.delay_ms(ms);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use core::future::Future;
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};

    /// Polls `fut` once with a no-op waker. The adapter's futures must be ready on the first poll;
    /// `Pending` fails the test.
    fn poll_once<F: Future>(fut: F) -> F::Output {
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("BlockingAsync future was not ready on the first poll"),
        }
    }

    /// Every call the fake saw, in order.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Call {
        SetVolume(u8),
        Volume,
        SetMute(bool),
        SetBrightness(u8),
        Brightness,
        Set(bool),
        Feedback,
        StartMove(i32),
        State,
        Stop,
        Reboot(u32),
    }

    /// One fake device implementing every blocking trait; `fail` makes the next I/O call fail.
    #[derive(Debug, Default)]
    struct Fake {
        calls: Vec<Call>,
        fail: Option<ErrorKind>,
        volume: u8,
        muted: bool,
        brightness: u8,
        on: bool,
        position: i32,
        moving: bool,
    }

    impl Fake {
        fn io(&mut self, call: Call) -> Result<(), ErrorKind> {
            self.calls.push(call);
            match self.fail.take() {
                Some(kind) => Err(kind),
                None => Ok(()),
            }
        }
    }

    impl ErrorType for Fake {
        type Error = ErrorKind;
    }

    impl crate::audio::AudioCodec for Fake {
        fn volume_caps(&self) -> VolumeCaps {
            VolumeCaps {
                max: Percent::saturating(63),
                read_back: true,
                settle_ms: 7,
                tolerance: 1,
            }
        }
        fn set_volume(&mut self, volume: Percent) -> Result<(), ErrorKind> {
            self.io(Call::SetVolume(volume.get()))?;
            self.volume = volume.get();
            Ok(())
        }
        fn volume(&mut self) -> Result<Percent, ErrorKind> {
            self.io(Call::Volume)?;
            Ok(Percent::saturating(self.volume))
        }
        fn set_mute(&mut self, mute: bool) -> Result<(), ErrorKind> {
            self.io(Call::SetMute(mute))?;
            self.muted = mute;
            Ok(())
        }
    }

    impl crate::backlight::Backlight for Fake {
        fn set_brightness(&mut self, level: Percent) -> Result<(), ErrorKind> {
            self.io(Call::SetBrightness(level.get()))?;
            self.brightness = level.get();
            Ok(())
        }
        fn brightness(&mut self) -> Result<Option<Percent>, ErrorKind> {
            self.io(Call::Brightness)?;
            Ok(Some(Percent::saturating(self.brightness)))
        }
        fn tolerance(&self) -> u8 {
            3
        }
    }

    impl crate::switch::Switch for Fake {
        fn set(&mut self, on: bool) -> Result<(), ErrorKind> {
            self.io(Call::Set(on))?;
            self.on = on;
            Ok(())
        }
        fn feedback(&mut self) -> Result<Option<bool>, ErrorKind> {
            self.io(Call::Feedback)?;
            Ok(Some(self.on))
        }
        fn settle_ms(&self) -> u32 {
            25
        }
    }

    impl crate::motor::Actuator for Fake {
        fn range(&self) -> (i32, i32) {
            (-100, 250)
        }
        fn tolerance(&self) -> u32 {
            3
        }
        fn start_move(&mut self, target: i32) -> Result<(), ErrorKind> {
            self.io(Call::StartMove(target))?;
            self.position = target;
            self.moving = true;
            Ok(())
        }
        fn state(&mut self) -> Result<Motion, ErrorKind> {
            self.io(Call::State)?;
            Ok(Motion {
                position: self.position,
                moving: self.moving,
                stalled: false,
            })
        }
        fn stop(&mut self) -> Result<(), ErrorKind> {
            self.io(Call::Stop)?;
            self.moving = false;
            Ok(())
        }
    }

    impl crate::system::System for Fake {
        fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), ErrorKind> {
            self.io(Call::Reboot(delay_ms))
        }
    }

    fn pct(v: u8) -> Percent {
        Percent::new(v).unwrap()
    }

    #[test]
    fn audio_forwards_calls_and_values() {
        use audio::AudioCodec;
        let mut dev = BlockingAsync::new(Fake::default());
        assert_eq!(
            dev.volume_caps(),
            VolumeCaps {
                max: pct(63),
                read_back: true,
                settle_ms: 7,
                tolerance: 1
            }
        );
        assert_eq!(poll_once(dev.set_volume(pct(42))), Ok(()));
        assert_eq!(poll_once(dev.volume()), Ok(pct(42)));
        assert_eq!(poll_once(dev.set_mute(true)), Ok(()));
        assert!(dev.inner().muted);
        assert_eq!(
            dev.into_inner().calls,
            [Call::SetVolume(42), Call::Volume, Call::SetMute(true)]
        );
    }

    #[test]
    fn audio_error_is_passed_through_unchanged() {
        use audio::AudioCodec;
        let mut dev = BlockingAsync::new(Fake {
            volume: 10,
            ..Fake::default()
        });
        dev.inner_mut().fail = Some(ErrorKind::NoAcknowledge);
        assert_eq!(
            poll_once(dev.set_volume(pct(90))),
            Err(ErrorKind::NoAcknowledge)
        );
        // The failed write did not change the device; the next read sees the old value.
        assert_eq!(poll_once(dev.volume()), Ok(pct(10)));
    }

    #[test]
    fn backlight_forwards_calls_and_values() {
        use backlight::Backlight;
        let mut dev = BlockingAsync::new(Fake::default());
        assert_eq!(poll_once(dev.set_brightness(pct(75))), Ok(()));
        assert_eq!(poll_once(dev.brightness()), Ok(Some(pct(75))));
        assert_eq!(dev.tolerance(), 3);
        dev.inner_mut().fail = Some(ErrorKind::Bus);
        assert_eq!(poll_once(dev.brightness()), Err(ErrorKind::Bus));
        assert_eq!(
            dev.inner().calls,
            [Call::SetBrightness(75), Call::Brightness, Call::Brightness]
        );
    }

    #[test]
    fn switch_forwards_calls_and_values() {
        use switch::Switch;
        let mut dev = BlockingAsync::new(Fake::default());
        assert_eq!(dev.settle_ms(), 25);
        assert_eq!(poll_once(dev.set(true)), Ok(()));
        assert_eq!(poll_once(dev.feedback()), Ok(Some(true)));
        assert_eq!(poll_once(dev.set(false)), Ok(()));
        assert_eq!(poll_once(dev.feedback()), Ok(Some(false)));
        dev.inner_mut().fail = Some(ErrorKind::Other);
        assert_eq!(poll_once(dev.set(true)), Err(ErrorKind::Other));
        assert_eq!(
            dev.inner().calls,
            [
                Call::Set(true),
                Call::Feedback,
                Call::Set(false),
                Call::Feedback,
                Call::Set(true)
            ]
        );
    }

    #[test]
    fn motor_forwards_calls_and_values() {
        use motor::Actuator;
        let mut dev = BlockingAsync::new(Fake::default());
        assert_eq!(dev.range(), (-100, 250));
        assert_eq!(dev.tolerance(), 3);
        assert_eq!(poll_once(dev.start_move(-40)), Ok(()));
        assert_eq!(
            poll_once(dev.state()),
            Ok(Motion {
                position: -40,
                moving: true,
                stalled: false
            })
        );
        assert_eq!(poll_once(dev.stop()), Ok(()));
        assert_eq!(
            poll_once(dev.state()),
            Ok(Motion {
                position: -40,
                moving: false,
                stalled: false
            })
        );
        dev.inner_mut().fail = Some(ErrorKind::Stalled);
        assert_eq!(poll_once(dev.start_move(9)), Err(ErrorKind::Stalled));
        assert_eq!(
            dev.inner().calls,
            [
                Call::StartMove(-40),
                Call::State,
                Call::Stop,
                Call::State,
                Call::StartMove(9)
            ]
        );
    }

    #[test]
    fn system_forwards_calls_and_errors() {
        use system::System;
        let mut dev = BlockingAsync::new(Fake::default());
        assert_eq!(poll_once(dev.schedule_reboot(1500)), Ok(()));
        dev.inner_mut().fail = Some(ErrorKind::QueueFull);
        assert_eq!(poll_once(dev.schedule_reboot(0)), Err(ErrorKind::QueueFull));
        assert_eq!(dev.inner().calls, [Call::Reboot(1500), Call::Reboot(0)]);
    }

    /// Generic async code written against the twins accepts `&mut BlockingAsync<_>` through the
    /// blanket `&mut T` impls, and the calls reach the wrapped device.
    #[test]
    fn blanket_mut_ref_impls_reach_the_device() {
        async fn ramp<C: audio::AudioCodec, S: switch::Switch, Y: system::System>(
            codec: C,
            relay: S,
            sys: Y,
        ) -> Result<(Percent, u32), ErrorKind>
        where
            C::Error: Into<ErrorKind>,
            S::Error: Into<ErrorKind>,
            Y::Error: Into<ErrorKind>,
        {
            let (mut codec, mut relay, mut sys) = (codec, relay, sys);
            codec
                .set_volume(Percent::saturating(30))
                .await
                .map_err(Into::into)?;
            relay.set(true).await.map_err(Into::into)?;
            sys.schedule_reboot(10).await.map_err(Into::into)?;
            let v = codec.volume().await.map_err(Into::into)?;
            Ok((v, relay.settle_ms()))
        }

        let mut a = BlockingAsync::new(Fake::default());
        let mut b = BlockingAsync::new(Fake::default());
        let mut c = BlockingAsync::new(Fake::default());
        let mut a_ref = &mut a;
        // `&mut &mut BlockingAsync` exercises the blanket impl twice.
        assert_eq!(
            poll_once(ramp(&mut a_ref, &mut b, &mut c)),
            Ok((pct(30), 25))
        );
        assert_eq!(a.inner().calls, [Call::SetVolume(30), Call::Volume]);
        assert_eq!(b.inner().calls, [Call::Set(true)]);
        assert_eq!(c.inner().calls, [Call::Reboot(10)]);
    }
}
