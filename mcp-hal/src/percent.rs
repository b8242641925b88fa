//! [`Percent`]: a value that cannot leave 0..=100.

/// A percentage, 0 to 100 inclusive. Validated arguments reach drivers as `Percent`, so drivers
/// never range-check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Percent(u8);

impl Percent {
    /// 0 %.
    pub const MIN: Percent = Percent(0);
    /// 100 %.
    pub const MAX: Percent = Percent(100);

    /// `Some` when `v` is within 0..=100.
    pub const fn new(v: u8) -> Option<Self> {
        if v <= 100 { Some(Percent(v)) } else { None }
    }

    /// From an integer, `None` outside 0..=100.
    pub fn from_i64(v: i64) -> Option<Self> {
        u8::try_from(v).ok().and_then(Self::new)
    }

    /// Clamps into 0..=100.
    pub const fn saturating(v: u8) -> Self {
        if v > 100 { Percent(100) } else { Percent(v) }
    }

    /// The value.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl From<Percent> for i64 {
    fn from(p: Percent) -> i64 {
        i64::from(p.0)
    }
}
