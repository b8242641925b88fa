//! # mcp-hal
//!
//! Hardware traits for [`mcp_core`] devices, in the style of `embedded-hal`, built around one
//! idea: `Ok(())` from a driver means "issued", and the tool result must say what the device can
//! honestly prove beyond that.
//!
//! | trait | evidence it can give |
//! |---|---|
//! | [`audio::AudioCodec`] | `read_back` (the volume register read after the write) |
//! | [`backlight::Backlight`] | `read_back` where the hardware reports its level, else `applied` |
//! | [`switch::Switch`] | `measured` with a feedback input, else `applied` |
//! | [`setpoint::Setpoint`] | `measured` (its own sensor, after the settle time, within its tolerance) |
//! | [`motor::Actuator`] | `measured` (encoder position at the end of a move, as an MCP task) |
//! | [`system::System`] | `scheduled` (a reboot never confirms itself) |
//! | [`sensor::Sensor`], [`sensor::Button`] | — (readings: live resources that publish their changes) |
//!
//! Every trait method is fallible; every trait has a blanket `&mut T` impl and an async twin in
//! [`asynch`]. Errors share one [`ErrorKind`].
//!
//! ## Modules
//! | module | what |
//! |---|---|
//! | [`audio`], [`backlight`], [`switch`], [`setpoint`], [`motor`], [`system`], [`sensor`] | the blocking device traits |
//! | [`publish`] | when a reading is worth telling clients: threshold, hysteresis, minimum interval, heartbeat; a button debouncer |
//! | [`asynch`] | async twins, and `BlockingAsync` to use a blocking driver where async is wanted |
//! | [`drivers`] | reference drivers: ES8311 codec (I2C; async in [`drivers::asynch`]), GPIO relay with feedback (blocking and async), PWM backlight |
//! | [`kits`] | ready-made MCP tools over the traits (`self.audio_speaker.set_volume`, `self.motor.move_to`, …), and live resources (`device://sensors/temperature`, `device://sensors/battery`, `device://buttons/main`); [`kits::asynch`]: the same over the async twins, for `Server::handle_async`, dispatched with [`dispatch_kits!`] |
//! | `sim` (feature `sim`) | in-memory devices with fault injection, and `DemoBoard` (them bound to every kit, with the standard tool set), for simulators, emulator firmwares and tests |
//!
//! ## Features
#![doc = document_features::document_features!()]
//!
//! This crate depends on `mcp-core` without its default features, so that a firmware that turns
//! them off (see mcp-core's crate docs) does not get them back through here.
//!
//! The relay kit runs its interlock guard and the action inside a `critical-section`; the
//! firmware (or `critical-section/std` on a host) provides the implementation.
//!
//! ## Minimum supported Rust version
//! Rust 1.88. Raising it is a minor-version change, noted in the changelog.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::allow_attributes_without_reason)]

pub mod asynch;
pub mod audio;
pub mod backlight;
pub mod drivers;
mod error;
pub mod firmware;
pub mod kits;
pub mod motor;
mod percent;
pub mod publish;
pub mod sensor;
pub mod setpoint;
#[cfg(feature = "sim")]
pub mod sim;
pub mod switch;
pub mod system;

/// The Rust of the workspace README, compiled and run as doctests: they use the demo devices,
/// live resources and a person's yes (`cargo test -p mcp-hal --features sim,resources,confirm`,
/// or the workspace's tests, whose features include them).
#[cfg(all(doctest, feature = "sim", feature = "resources", feature = "confirm"))]
#[doc = include_str!("../../README.md")]
pub struct WorkspaceReadme;

/// The Rust of this crate's README, compiled as doctests.
#[cfg(all(doctest, feature = "sim", feature = "resources", feature = "confirm"))]
#[doc = include_str!("../README.md")]
pub struct CrateReadme;

/// The Rust of `docs/OTA.md`, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/OTA.md")]
pub struct OtaDoc;

pub use error::{Error, ErrorKind, ErrorType};
pub use mcp_core::{Evidence, Level, Reading};
pub use percent::Percent;
