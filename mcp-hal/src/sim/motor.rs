//! [`SimMotor`]: a positioning motor with an encoder, moving linearly in time.

use super::{Fault, Faults};
use crate::ErrorKind;
use crate::motor::{Actuator, Motion};

/// One move: from a position, towards a target, ending at `end` (the target, or the stall point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Leg {
    from: i32,
    end: i32,
    target: i32,
    at_ms: u64,
    /// Speed divisor: 1 nominally, [`SimMotor::SLOW_DIVISOR`] under `slow`.
    divisor: u64,
}

impl Leg {
    const fn rest(position: i32, at_ms: u64) -> Leg {
        Leg {
            from: position,
            end: position,
            target: position,
            at_ms,
            divisor: 1,
        }
    }

    /// Milliseconds needed to cover the leg: at 250 units/s one unit takes 4 ms.
    fn duration_ms(&self) -> u64 {
        u64::from(self.end.abs_diff(self.from))
            .saturating_mul(1000 / u64::from(SimMotor::SPEED))
            .saturating_mul(self.divisor)
    }

    fn motion(&self, now_ms: u64) -> Motion {
        let elapsed = now_ms.saturating_sub(self.at_ms);
        let travelled = elapsed.saturating_mul(u64::from(SimMotor::SPEED)) / (1000 * self.divisor);
        let distance = u64::from(self.end.abs_diff(self.from));
        let moving = travelled < distance;
        let position = if moving {
            // travelled < distance <= 1000: fits an i64 and the result stays within the range.
            let step = i64::try_from(travelled).unwrap_or(0);
            let signed = if self.end >= self.from { step } else { -step };
            i32::try_from(i64::from(self.from) + signed).unwrap_or(self.end)
        } else {
            self.end
        };
        Motion {
            position,
            moving,
            stalled: !moving && self.end != self.target,
        }
    }
}

/// A simulated positioning motor with an encoder.
///
/// Positions are encoder steps ([`UNIT`](SimMotor::UNIT)) and run over
/// [`RANGE`](SimMotor::RANGE) (0..=1000), a move counts as arrived within
/// [`TOLERANCE`](SimMotor::TOLERANCE) (2), and it powers up at rest at 0. A move runs at
/// [`SPEED`](SimMotor::SPEED) (250 units/s) in a straight line from the position at
/// `start_move` to its end: at `t` ms after the start it has covered
/// `floor(t * 250 / 1000)` units, so a unit takes exactly 4 ms and 0 → 1000 arrives at 4000 ms.
/// [`state`](Actuator::state) reports the position computed for the time last set.
///
/// - `start_move` while moving retargets from the current position (a new leg starts now).
/// - `stop` halts at the current position (`moving: false`, `stalled: false`); on a motor that
///   is not moving it changes nothing (a stall stays reported). Callable any time, any number of
///   times; never fails, whatever the faults.
/// - A target outside the range is refused with [`ErrorKind::Unsupported`], before any fault.
///
/// Faults: `queue-full` refuses `start_move` with [`ErrorKind::QueueFull`] and nothing changes;
/// `motor-stall` ends every move at `from + (target - from) * 2 / 5` (40 % of the way, truncated
/// toward the start: 0 → 1000 stops at 400, 1000 → 0 at 600, 0 → 7 at 2) and then reports
/// `stalled: true` (a zero-length move does not stall); `slow` divides the speed by
/// [`SLOW_DIVISOR`](SimMotor::SLOW_DIVISOR) (62.5 units/s, one unit per 16 ms). Both are fixed
/// for a leg when it starts.
#[derive(Debug, Clone)]
pub struct SimMotor {
    faults: Faults,
    now_ms: u64,
    leg: Leg,
    starts: u32,
    stops: u32,
}

impl SimMotor {
    /// The reachable positions, inclusive.
    pub const RANGE: (i32, i32) = (0, 1000);
    /// How close to the target counts as arrived.
    pub const TOLERANCE: u32 = 2;
    /// The unit of positions: encoder steps.
    pub const UNIT: &'static str = "steps";
    /// Nominal speed, in units per second.
    pub const SPEED: u32 = 250;
    /// What [`Fault::Slow`] divides the speed by.
    pub const SLOW_DIVISOR: u32 = 4;
    /// The fraction of the way a move covers under [`Fault::MotorStall`]: numerator / denominator
    /// (40 %).
    pub const STALL_FRACTION: (i32, i32) = (2, 5);

    /// A motor at rest at position 0, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimMotor {
            faults,
            now_ms: 0,
            leg: Leg::rest(0, 0),
            starts: 0,
            stops: 0,
        }
    }

    /// The measured state at the time last set (what [`state`](Actuator::state) returns).
    pub fn motion(&self) -> Motion {
        self.leg.motion(self.now_ms)
    }

    /// The target of the last accepted move (the position where it was last stopped, or 0).
    pub const fn target(&self) -> i32 {
        self.leg.target
    }

    /// The time at which the current move ends (arrives or stalls); in the past when at rest.
    pub fn end_ms(&self) -> u64 {
        self.leg.at_ms.saturating_add(self.leg.duration_ms())
    }

    /// Accepted `start_move` calls.
    pub const fn starts(&self) -> u32 {
        self.starts
    }

    /// `stop` calls.
    pub const fn stops(&self) -> u32 {
        self.stops
    }

    /// Where a move from `from` to `target` stops under [`Fault::MotorStall`].
    pub const fn stall_point(from: i32, target: i32) -> i32 {
        // Division truncates toward zero, i.e. toward `from`.
        from + (target - from) * Self::STALL_FRACTION.0 / Self::STALL_FRACTION.1
    }
}

sim_device!(SimMotor, set_faults: "A move under way keeps the speed and end it started with.");

impl Actuator for SimMotor {
    fn range(&self) -> (i32, i32) {
        Self::RANGE
    }

    fn tolerance(&self) -> u32 {
        Self::TOLERANCE
    }

    fn unit(&self) -> Option<&'static str> {
        Some(Self::UNIT)
    }

    fn start_move(&mut self, target: i32) -> Result<(), ErrorKind> {
        if target < Self::RANGE.0 || target > Self::RANGE.1 {
            return Err(ErrorKind::Unsupported);
        }
        if self.faults.contains(Fault::QueueFull) {
            return Err(ErrorKind::QueueFull);
        }
        let from = self.motion().position;
        let end = if self.faults.contains(Fault::MotorStall) {
            Self::stall_point(from, target)
        } else {
            target
        };
        let divisor = if self.faults.contains(Fault::Slow) {
            u64::from(Self::SLOW_DIVISOR)
        } else {
            1
        };
        self.leg = Leg {
            from,
            end,
            target,
            at_ms: self.now_ms,
            divisor,
        };
        self.starts = self.starts.saturating_add(1);
        Ok(())
    }

    fn state(&mut self) -> Result<Motion, ErrorKind> {
        Ok(self.motion())
    }

    fn stop(&mut self) -> Result<(), ErrorKind> {
        let now = self.motion();
        if now.moving {
            self.leg = Leg::rest(now.position, self.now_ms);
        }
        self.stops = self.stops.saturating_add(1);
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn at(position: i32, moving: bool, stalled: bool) -> Motion {
        Motion {
            position,
            moving,
            stalled,
        }
    }

    fn state_at(m: &mut SimMotor, now_ms: u64) -> Motion {
        m.set_time(now_ms);
        m.state().unwrap()
    }

    #[test]
    fn declares_range_and_tolerance_and_starts_at_rest() {
        let mut m = SimMotor::default();
        assert_eq!(m.range(), (0, 1000));
        assert_eq!(m.tolerance(), 2);
        assert_eq!(m.state(), Ok(at(0, false, false)));
        assert_eq!(state_at(&mut m, 10_000), at(0, false, false));
    }

    #[test]
    fn moves_linearly_at_250_units_per_second() {
        let mut m = SimMotor::default();
        m.set_time(1000);
        assert_eq!(m.start_move(1000), Ok(()));
        assert_eq!(m.starts(), 1);
        assert_eq!(m.target(), 1000);
        assert_eq!(m.end_ms(), 5000);
        assert_eq!(state_at(&mut m, 1000), at(0, true, false));
        assert_eq!(state_at(&mut m, 1003), at(0, true, false));
        assert_eq!(state_at(&mut m, 1004), at(1, true, false));
        assert_eq!(state_at(&mut m, 1400), at(100, true, false));
        assert_eq!(state_at(&mut m, 2000), at(250, true, false));
        assert_eq!(state_at(&mut m, 3000), at(500, true, false));
        assert_eq!(state_at(&mut m, 4999), at(999, true, false));
        assert_eq!(state_at(&mut m, 5000), at(1000, false, false));
        assert_eq!(state_at(&mut m, 9000), at(1000, false, false));
        // And back down.
        assert_eq!(m.start_move(600), Ok(()));
        assert_eq!(state_at(&mut m, 9400), at(900, true, false));
        assert_eq!(state_at(&mut m, 10_600), at(600, false, false));
    }

    #[test]
    fn zero_length_move_is_done_at_once() {
        let mut m = SimMotor::default();
        assert_eq!(m.start_move(0), Ok(()));
        assert_eq!(m.state(), Ok(at(0, false, false)));
        let mut m = SimMotor::new(Faults::only(Fault::MotorStall));
        assert_eq!(m.start_move(0), Ok(()));
        assert_eq!(m.state(), Ok(at(0, false, false)));
    }

    #[test]
    fn out_of_range_targets_are_unsupported() {
        for faults in [Faults::NONE, Faults::only(Fault::QueueFull)] {
            let mut m = SimMotor::new(faults);
            assert_eq!(m.start_move(-1), Err(ErrorKind::Unsupported));
            assert_eq!(m.start_move(1001), Err(ErrorKind::Unsupported));
            assert_eq!(m.start_move(i32::MIN), Err(ErrorKind::Unsupported));
            assert_eq!(m.starts(), 0);
            assert_eq!(m.state(), Ok(at(0, false, false)));
        }
        let mut m = SimMotor::default();
        assert_eq!(m.start_move(1000), Ok(()));
        assert_eq!(m.start_move(0), Ok(()));
    }

    #[test]
    fn stop_mid_move_halts_at_the_current_position() {
        let mut m = SimMotor::default();
        m.start_move(1000).unwrap();
        m.set_time(1000);
        assert_eq!(m.stop(), Ok(()));
        assert_eq!(m.state(), Ok(at(250, false, false)));
        assert_eq!(state_at(&mut m, 10_000), at(250, false, false));
        assert_eq!(m.stop(), Ok(()));
        assert_eq!(m.state(), Ok(at(250, false, false)));
        assert_eq!(m.stops(), 2);
        assert_eq!(m.starts(), 1);
        // It can move again from there.
        m.start_move(300).unwrap();
        assert_eq!(state_at(&mut m, 10_200), at(300, false, false));
    }

    #[test]
    fn stop_at_rest_is_harmless() {
        let mut m = SimMotor::default();
        assert_eq!(m.stop(), Ok(()));
        assert_eq!(m.stop(), Ok(()));
        assert_eq!(m.state(), Ok(at(0, false, false)));
        assert_eq!(m.stops(), 2);
    }

    #[test]
    fn start_while_moving_retargets_from_the_current_position() {
        let mut m = SimMotor::default();
        m.start_move(1000).unwrap();
        m.set_time(1000); // at 250
        m.start_move(100).unwrap();
        assert_eq!(m.state(), Ok(at(250, true, false)));
        assert_eq!(m.end_ms(), 1600);
        assert_eq!(state_at(&mut m, 1200), at(200, true, false));
        assert_eq!(state_at(&mut m, 1599), at(101, true, false));
        assert_eq!(state_at(&mut m, 1600), at(100, false, false));
        assert_eq!(m.starts(), 2);
    }

    #[test]
    fn motor_stall_stops_at_40_percent_and_reports_it() {
        let mut m = SimMotor::new(Faults::only(Fault::MotorStall));
        m.start_move(1000).unwrap();
        assert_eq!(m.target(), 1000);
        assert_eq!(m.end_ms(), 1600);
        assert_eq!(state_at(&mut m, 1000), at(250, true, false));
        assert_eq!(state_at(&mut m, 1599), at(399, true, false));
        assert_eq!(state_at(&mut m, 1600), at(400, false, true));
        assert_eq!(state_at(&mut m, 60_000), at(400, false, true));
        // A safe-stop after the stall keeps the stall reported.
        m.stop().unwrap();
        assert_eq!(m.state(), Ok(at(400, false, true)));
        // The next move starts from the stall point and stalls again.
        m.start_move(0).unwrap();
        assert_eq!(state_at(&mut m, 70_000), at(240, false, true));
    }

    #[test]
    fn stall_point_rounds_toward_the_start() {
        assert_eq!(SimMotor::stall_point(0, 1000), 400);
        assert_eq!(SimMotor::stall_point(1000, 0), 600);
        assert_eq!(SimMotor::stall_point(0, 7), 2); // 2.8 -> 2
        assert_eq!(SimMotor::stall_point(7, 0), 5); // 4.2 -> 5
        assert_eq!(SimMotor::stall_point(100, 103), 101); // 101.2 -> 101
        assert_eq!(SimMotor::stall_point(103, 100), 102); // 101.8 -> 102
        assert_eq!(SimMotor::stall_point(500, 501), 500);
        let mut m = SimMotor::new(Faults::only(Fault::MotorStall));
        m.set_time(5);
        m.start_move(1).unwrap();
        // Too short to move at all: stalled where it stands.
        assert_eq!(m.state(), Ok(at(0, false, true)));
    }

    #[test]
    fn stop_during_a_stalling_move_is_a_plain_stop() {
        let mut m = SimMotor::new(Faults::only(Fault::MotorStall));
        m.start_move(1000).unwrap();
        m.set_time(800);
        m.stop().unwrap();
        assert_eq!(m.state(), Ok(at(200, false, false)));
    }

    #[test]
    fn slow_runs_at_a_quarter_of_the_speed() {
        let mut m = SimMotor::new(Faults::only(Fault::Slow));
        m.start_move(1000).unwrap();
        assert_eq!(m.end_ms(), 16_000);
        assert_eq!(state_at(&mut m, 15), at(0, true, false));
        assert_eq!(state_at(&mut m, 16), at(1, true, false));
        assert_eq!(state_at(&mut m, 1000), at(62, true, false));
        assert_eq!(state_at(&mut m, 1999), at(124, true, false));
        assert_eq!(state_at(&mut m, 2000), at(125, true, false));
        assert_eq!(state_at(&mut m, 4000), at(250, true, false));
        assert_eq!(state_at(&mut m, 15_999), at(999, true, false));
        assert_eq!(state_at(&mut m, 16_000), at(1000, false, false));
    }

    #[test]
    fn slow_and_stall_combine() {
        let mut m = SimMotor::new(Faults::only(Fault::Slow).with(Fault::MotorStall));
        m.start_move(1000).unwrap();
        assert_eq!(state_at(&mut m, 6399), at(399, true, false));
        assert_eq!(state_at(&mut m, 6400), at(400, false, true));
    }

    #[test]
    fn queue_full_refuses_moves_but_not_stop() {
        let mut m = SimMotor::new(Faults::only(Fault::QueueFull));
        assert_eq!(m.start_move(500), Err(ErrorKind::QueueFull));
        assert_eq!(m.starts(), 0);
        assert_eq!(m.target(), 0);
        assert_eq!(state_at(&mut m, 5000), at(0, false, false));
        assert_eq!(m.stop(), Ok(()));
        assert_eq!(m.stops(), 1);
    }

    #[test]
    fn queue_full_set_mid_move_leaves_the_move_running() {
        let mut m = SimMotor::default();
        m.start_move(1000).unwrap();
        m.set_time(1000);
        m.set_faults(Faults::only(Fault::QueueFull).with(Fault::Slow));
        assert_eq!(m.start_move(0), Err(ErrorKind::QueueFull));
        // The leg keeps its nominal speed.
        assert_eq!(state_at(&mut m, 4000), at(1000, false, false));
        assert_eq!(m.stop(), Ok(()));
    }

    #[test]
    fn codec_and_relay_faults_leave_the_motor_nominal() {
        for fault in [
            Fault::CodecNack,
            Fault::CodecClamp,
            Fault::ReadbackMismatch,
            Fault::RelayStuck,
            Fault::Timeout,
        ] {
            let mut m = SimMotor::new(Faults::only(fault));
            assert_eq!(m.start_move(1000), Ok(()), "{fault}");
            assert_eq!(state_at(&mut m, 2000), at(500, true, false), "{fault}");
            assert_eq!(state_at(&mut m, 4000), at(1000, false, false), "{fault}");
        }
    }

    #[test]
    fn time_going_backwards_is_ignored() {
        let mut m = SimMotor::default();
        m.start_move(1000).unwrap();
        m.set_time(2000);
        m.set_time(1000);
        assert_eq!(m.now_ms(), 2000);
        assert_eq!(m.state(), Ok(at(500, true, false)));
    }
}
