//! Async twin of [`crate::audio`]: volume with read-back, and mute.
//!
//! Same contract as the blocking [`AudioCodec`](crate::audio::AudioCodec): `set_volume`
//! resolving to `Ok` means *issued*, and [`volume`](AudioCodec::volume) reads the device, never
//! a cache. [`volume_caps`](AudioCodec::volume_caps) is a plain query with no I/O, so it stays a
//! normal `fn`.
//!
//! # For HAL users
//! ```
//! use mcp_hal::asynch::audio::AudioCodec;
//! use mcp_hal::Percent;
//!
//! async fn set_and_check<C: AudioCodec>(codec: &mut C, v: Percent) -> Result<bool, C::Error> {
//!     codec.set_volume(v).await?;
//!     let caps = codec.volume_caps();
//!     Ok(caps.agrees(v, codec.volume().await?))
//! }
//! ```

pub use crate::audio::VolumeCaps;
pub use crate::{Error, ErrorKind, ErrorType};

use crate::Percent;

/// An audio codec or amplifier with a volume control (async).
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait AudioCodec: ErrorType {
    /// What the codec can represent. No I/O.
    fn volume_caps(&self) -> VolumeCaps;
    /// Sets the output volume.
    async fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error>;
    /// Reads the output volume back from the device.
    async fn volume(&mut self) -> Result<Percent, Self::Error>;
    /// Mutes or unmutes the output.
    async fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error>;
}

impl<T: AudioCodec + ?Sized> AudioCodec for &mut T {
    #[inline]
    fn volume_caps(&self) -> VolumeCaps {
        T::volume_caps(self)
    }
    #[inline]
    async fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error> {
        T::set_volume(self, volume).await
    }
    #[inline]
    async fn volume(&mut self) -> Result<Percent, Self::Error> {
        T::volume(self).await
    }
    #[inline]
    async fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        T::set_mute(self, mute).await
    }
}
