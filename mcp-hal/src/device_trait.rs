//! `device_trait!`: a device trait written once, with the impls that only forward to it.

/// Declares a device trait and the impls that do nothing but forward to it, so that each method
/// is written once, in the trait:
///
/// - `impl<T: Trait + ?Sized> Trait for &mut T`, each method calling `T`'s (the blanket impl
///   embedded-hal gives every trait);
/// - for an async twin, which names its blocking trait after the declaration
///   (`blocking crate::switch::Switch`), `impl<T: blocking trait> Trait for BlockingAsync<T>`:
///   each method calls the blocking one, an `async` one inside its future's first poll.
///
/// The trait is `pub` with `ErrorType` as its supertrait; its methods take `&self` or
/// `&mut self` (an `async` one `&mut self`) and named arguments, and end in `;` or a default
/// body.
macro_rules! device_trait {
    (
        $(#[$attr:meta])*
        pub trait $name:ident: ErrorType { $($items:tt)* }
        $(blocking $blocking:path)?
    ) => {
        $(#[$attr])*
        pub trait $name: ErrorType { $($items)* }
        device_trait!(@methods $name [$($blocking)?] [] $($items)*);
    };

    // Each method becomes `[kind name (arguments) return]`; kind is `async_mut`, `sync_mut` or
    // `sync_ref`, from its `async` and its receiver. A default body is left in the trait.
    (@methods $name:ident $blocking:tt [$($done:tt)*]
        $(#[$m:meta])* async fn $f:ident(&mut self $(, $a:ident: $t:ty)*) -> $r:ty;
        $($rest:tt)*
    ) => {
        device_trait!(
            @methods $name $blocking [$($done)* [async_mut $f ($($a: $t),*) $r]] $($rest)*
        );
    };
    (@methods $name:ident $blocking:tt [$($done:tt)*]
        $(#[$m:meta])* fn $f:ident(&mut self $(, $a:ident: $t:ty)*) -> $r:ty;
        $($rest:tt)*
    ) => {
        device_trait!(
            @methods $name $blocking [$($done)* [sync_mut $f ($($a: $t),*) $r]] $($rest)*
        );
    };
    (@methods $name:ident $blocking:tt [$($done:tt)*]
        $(#[$m:meta])* fn $f:ident(&mut self $(, $a:ident: $t:ty)*) -> $r:ty $body:block
        $($rest:tt)*
    ) => {
        device_trait!(
            @methods $name $blocking [$($done)* [sync_mut $f ($($a: $t),*) $r]] $($rest)*
        );
    };
    (@methods $name:ident $blocking:tt [$($done:tt)*]
        $(#[$m:meta])* fn $f:ident(&self $(, $a:ident: $t:ty)*) -> $r:ty;
        $($rest:tt)*
    ) => {
        device_trait!(
            @methods $name $blocking [$($done)* [sync_ref $f ($($a: $t),*) $r]] $($rest)*
        );
    };
    (@methods $name:ident $blocking:tt [$($done:tt)*]
        $(#[$m:meta])* fn $f:ident(&self $(, $a:ident: $t:ty)*) -> $r:ty $body:block
        $($rest:tt)*
    ) => {
        device_trait!(
            @methods $name $blocking [$($done)* [sync_ref $f ($($a: $t),*) $r]] $($rest)*
        );
    };
    (@methods $name:ident $blocking:tt $methods:tt) => {
        device_trait!(@impl_by_mut $name $methods);
        device_trait!(@adapter $name $blocking $methods);
    };

    (@impl_by_mut $name:ident [$([$kind:ident $($method:tt)*])*]) => {
        impl<T: $name + ?Sized> $name for &mut T {
            $(device_trait!(@by_mut $kind $($method)*);)*
        }
    };
    (@adapter $name:ident [] $methods:tt) => {};
    (@adapter $name:ident [$blocking:path] [$([$kind:ident $($method:tt)*])*]) => {
        impl<T: $blocking> $name for $crate::asynch::BlockingAsync<T> {
            $(device_trait!(@by_blocking $blocking, $kind $($method)*);)*
        }
    };

    // The `&mut T` impl's methods.
    (@by_mut async_mut $f:ident ($($a:ident: $t:ty),*) $r:ty) => {
        #[inline]
        async fn $f(&mut self, $($a: $t),*) -> $r {
            T::$f(self, $($a),*).await
        }
    };
    (@by_mut sync_mut $f:ident ($($a:ident: $t:ty),*) $r:ty) => {
        #[inline]
        fn $f(&mut self, $($a: $t),*) -> $r {
            T::$f(self, $($a),*)
        }
    };
    (@by_mut sync_ref $f:ident ($($a:ident: $t:ty),*) $r:ty) => {
        #[inline]
        fn $f(&self, $($a: $t),*) -> $r {
            T::$f(self, $($a),*)
        }
    };

    // `BlockingAsync<T>`'s methods: the blocking trait's, on the wrapped driver.
    (@by_blocking $blocking:path, async_mut $f:ident ($($a:ident: $t:ty),*) $r:ty) => {
        async fn $f(&mut self, $($a: $t),*) -> $r {
            <T as $blocking>::$f(&mut self.wrapped, $($a),*)
        }
    };
    (@by_blocking $blocking:path, sync_ref $f:ident ($($a:ident: $t:ty),*) $r:ty) => {
        fn $f(&self, $($a: $t),*) -> $r {
            <T as $blocking>::$f(&self.wrapped, $($a),*)
        }
    };
}

#[cfg(test)]
#[cfg(feature = "sim")]
mod test {
    use core::future::Future;
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};

    use crate::asynch::BlockingAsync;
    use crate::asynch::setpoint::Setpoint as AsyncSetpoint;
    use crate::setpoint::Setpoint;
    use crate::sim::SimFan;

    fn at_once<F: Future>(fut: F) -> F::Output {
        match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("a simulated device's future was pending"),
        }
    }

    /// What a device answers to every method, after `set(50)`.
    type Answers = (
        Result<(), crate::ErrorKind>,
        Result<i64, crate::ErrorKind>,
        i64,
        u32,
        Option<&'static str>,
        u32,
    );

    fn blocking(mut d: impl Setpoint<Error = crate::ErrorKind>) -> Answers {
        (
            d.set(50),
            d.read(),
            d.expected(50),
            d.tolerance(),
            d.unit(),
            d.settle_ms(),
        )
    }

    fn asynch(mut d: impl AsyncSetpoint<Error = crate::ErrorKind>) -> Answers {
        let set = at_once(d.set(50));
        (
            set,
            at_once(d.read()),
            d.expected(50),
            d.tolerance(),
            d.unit(),
            d.settle_ms(),
        )
    }

    /// Every generated impl calls the device's own methods, the ones with a default body too
    /// (the fan's `expected`, `tolerance` and `unit` are its own, not the trait's defaults).
    #[test]
    fn the_forwarding_impls_answer_as_the_device() {
        let answers = blocking(SimFan::default());
        assert_eq!(
            answers,
            (
                Ok(()),
                Ok(0),
                1500,
                SimFan::TOLERANCE_RPM,
                Some("rpm"),
                SimFan::SPIN_MS
            )
        );
        let mut fan = SimFan::default();
        assert_eq!(blocking(&mut fan), answers);
        assert_eq!(fan.writes(), 1, "the command reached the device");
        let mut fan = SimFan::default();
        assert_eq!(asynch(&mut fan), answers);
        assert_eq!(fan.writes(), 1);
        let mut fan = BlockingAsync::new(SimFan::default());
        assert_eq!(asynch(&mut fan), answers);
        assert_eq!(fan.inner().writes(), 1);
    }
}
