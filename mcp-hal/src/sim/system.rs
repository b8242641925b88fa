//! [`SimSystem`]: a reboot line that only ever gets scheduled.

use super::{Fault, Faults};
use crate::ErrorKind;
use crate::system::System;

/// A simulated device-level controller.
///
/// `schedule_reboot(delay_ms)` arms a restart at `now + delay_ms`
/// ([`scheduled_at`](SimSystem::scheduled_at)); a later call re-arms it. Nothing reboots by
/// itself: the simulator asks [`reboot_due`](SimSystem::reboot_due) and acts (or
/// [`take_reboot`](SimSystem::take_reboot) to consume it).
///
/// Faults: `queue-full` refuses `schedule_reboot` with [`ErrorKind::QueueFull`] and nothing is
/// armed. No other fault affects it.
#[derive(Debug, Clone)]
pub struct SimSystem {
    faults: Faults,
    now_ms: u64,
    scheduled_at: Option<u64>,
    schedules: u32,
}

impl SimSystem {
    /// A system with no reboot armed, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimSystem {
            faults,
            now_ms: 0,
            scheduled_at: None,
            schedules: 0,
        }
    }

    /// When the armed reboot is due, in milliseconds, if one is armed.
    pub const fn scheduled_at(&self) -> Option<u64> {
        self.scheduled_at
    }

    /// `true` when a reboot is armed and its time has come.
    pub fn reboot_due(&self) -> bool {
        self.scheduled_at.is_some_and(|at| self.now_ms >= at)
    }

    /// Consumes a due reboot: `true` (and disarms) when [`reboot_due`](SimSystem::reboot_due),
    /// else `false` and nothing changes.
    pub fn take_reboot(&mut self) -> bool {
        let due = self.reboot_due();
        if due {
            self.scheduled_at = None;
        }
        due
    }

    /// Accepted `schedule_reboot` calls.
    pub const fn schedules(&self) -> u32 {
        self.schedules
    }
}

sim_device!(SimSystem);

impl System for SimSystem {
    fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), ErrorKind> {
        if self.faults.contains(Fault::QueueFull) {
            return Err(ErrorKind::QueueFull);
        }
        self.scheduled_at = Some(self.now_ms.saturating_add(u64::from(delay_ms)));
        self.schedules = self.schedules.saturating_add(1);
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn schedules_a_reboot_relative_to_now() {
        let mut s = SimSystem::default();
        assert_eq!(s.scheduled_at(), None);
        assert!(!s.reboot_due());
        s.set_time(5000);
        assert_eq!(s.schedule_reboot(1000), Ok(()));
        assert_eq!(s.scheduled_at(), Some(6000));
        assert_eq!(s.schedules(), 1);
        s.set_time(5999);
        assert!(!s.reboot_due());
        assert!(!s.take_reboot());
        assert_eq!(s.scheduled_at(), Some(6000));
        s.set_time(6000);
        assert!(s.reboot_due());
        assert!(s.take_reboot());
        assert_eq!(s.scheduled_at(), None);
        assert!(!s.reboot_due());
    }

    #[test]
    fn rescheduling_replaces_the_time() {
        let mut s = SimSystem::default();
        s.schedule_reboot(1000).unwrap();
        s.set_time(500);
        s.schedule_reboot(3000).unwrap();
        assert_eq!(s.scheduled_at(), Some(3500));
        s.set_time(1000);
        assert!(!s.reboot_due());
        assert_eq!(s.schedules(), 2);
        s.schedule_reboot(0).unwrap();
        assert!(s.reboot_due());
    }

    #[test]
    fn queue_full_refuses_and_arms_nothing() {
        let mut s = SimSystem::new(Faults::only(Fault::QueueFull));
        assert_eq!(s.schedule_reboot(1000), Err(ErrorKind::QueueFull));
        assert_eq!(s.scheduled_at(), None);
        assert_eq!(s.schedules(), 0);
        s.set_time(u64::MAX);
        assert!(!s.reboot_due());
    }

    #[test]
    fn other_faults_leave_the_system_nominal() {
        for fault in Fault::ALL {
            if fault == Fault::QueueFull {
                continue;
            }
            let mut s = SimSystem::new(Faults::only(fault));
            s.set_time(100);
            assert_eq!(s.schedule_reboot(1000), Ok(()), "{fault}");
            assert_eq!(s.scheduled_at(), Some(1100), "{fault}");
        }
    }

    #[test]
    fn due_time_saturates_and_time_is_monotonic() {
        let mut s = SimSystem::default();
        s.set_time(u64::MAX - 10);
        s.schedule_reboot(u32::MAX).unwrap();
        assert_eq!(s.scheduled_at(), Some(u64::MAX));
        s.set_time(0);
        assert_eq!(s.now_ms(), u64::MAX - 10);
    }
}
