//! Audio output: volume with read-back, and mute.
//!
//! # For driver authors
//! `set_volume` returning `Ok` means the command was *issued*. [`volume`](AudioCodec::volume) must
//! read the state back from the device (its register), not return a cached copy: the tool kit
//! compares the two and reports `read_back` evidence only when they agree. Declare what the codec
//! can really do in [`VolumeCaps`]: a codec that cannot go above 63 % says `max: 63`, and the kit
//! refuses higher values instead of pretending.
//!
//! # For HAL users
//! ```
//! use mcp_hal::audio::AudioCodec;
//! use mcp_hal::Percent;
//!
//! fn set_and_check<C: AudioCodec>(codec: &mut C, v: Percent) -> Result<bool, C::Error> {
//!     codec.set_volume(v)?;
//!     Ok(codec.volume()? == v)
//! }
//! ```

use crate::{ErrorType, Percent};

/// What a codec can represent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeCaps {
    /// The highest volume the codec produces; higher requests are refused by the kit.
    pub max: Percent,
    /// `true` when [`AudioCodec::volume`] reads the device (otherwise the kit claims only
    /// `applied`).
    pub read_back: bool,
    /// Milliseconds a change may take to show in the read-back (0: at once).
    pub settle_ms: u32,
}

/// An audio codec or amplifier with a volume control.
pub trait AudioCodec: ErrorType {
    /// What the codec can represent.
    fn volume_caps(&self) -> VolumeCaps;
    /// Sets the output volume.
    fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error>;
    /// Reads the output volume back from the device.
    fn volume(&mut self) -> Result<Percent, Self::Error>;
    /// Mutes or unmutes the output.
    fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error>;
}

impl<T: AudioCodec + ?Sized> AudioCodec for &mut T {
    fn volume_caps(&self) -> VolumeCaps {
        T::volume_caps(self)
    }
    fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error> {
        T::set_volume(self, volume)
    }
    fn volume(&mut self) -> Result<Percent, Self::Error> {
        T::volume(self)
    }
    fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        T::set_mute(self, mute)
    }
}
