//! Logging shim: `debug!` and `warn!` go to `log`, to `defmt`, or nowhere, by feature.
//!
//! Arguments must be formattable by both back-ends: use `{}` with integers and `&str` only.

#[cfg(feature = "defmt")]
macro_rules! debug {
    ($($arg:tt)*) => { ::defmt::debug!($($arg)*) };
}

#[cfg(feature = "log")]
macro_rules! debug {
    ($($arg:tt)*) => { ::log::debug!($($arg)*) };
}

#[cfg(not(any(feature = "log", feature = "defmt")))]
macro_rules! debug {
    ($($arg:tt)*) => {{
        // Type-check the arguments without evaluating them.
        if false {
            let _ = ::core::format_args!($($arg)*);
        }
    }};
}

pub(crate) use debug;
