//! How much a [`Server`] holds: one type, `K` in `Server<'t, C, K>`, names every capacity.
//!
//! A server keeps everything in one value (a `static` is fine): the tool table, the task table,
//! the answers remembered for retransmissions, the live resources and listen streams, and the
//! bytes a call waits in while a person is asked. Each of them is an array whose length is a
//! capacity. [`Caps`] names them all, each but the tool count with a default; the
//! [`Capacities`] trait is what code over *any* server is written against:
//!
//! ```
//! use mcp_core::{Capacities, Caps, Config, Server};
//!
//! struct Board;
//!
//! // A firmware's own helper, for a server of any capacities.
//! fn tools_free<K: Capacities>(server: &Server<'_, Board, K>) -> usize {
//!     K::TOOLS - server.registry().len()
//! }
//!
//! // 8 tools, no task table, everything else the default.
//! let server: Server<'static, Board, Caps<8, 0>> = Server::new(Config::new("board", "1.0"));
//! assert_eq!(tools_free(&server), 8);
//! // The default capacities, `Caps<16>`, fit a typical board.
//! let typical: Server<'static, Board> = Server::new(Config::new("board", "1.0"));
//! assert_eq!(tools_free(&typical), 16);
//! ```
//!
//! To change one capacity further down the list without spelling those before it, name it:
//! [`caps!`](crate::caps) (`caps!(tools = 8, hold = 0)`) or
//! [`server_type!`](crate::server_type) (`server_type!(Board; tools = 8, hold = 0)`).
//!
//! # Why a capacities type, and not lent storage
//! Stable Rust cannot size an array by a trait's constant (`[Slot; K::TASKS]`), so `K` carries
//! its storage as associated types (`Caps<N, …>`'s are arrays of its lengths), and the code over
//! them is written once, on slices and views (the way `heapless` writes `Vec` once as
//! `VecView`): the tool table is a [`RegistryView`], the task table a view of the same kind.
//! The other shape, embassy-net's `Stack` over `StackResources<N>` that the caller lends, would
//! take the const generics off `Server` too, but it adds a lifetime to every use of the server,
//! and a firmware must then keep two statics in step (the resources, and the server borrowing
//! them). One value with one type parameter keeps `static SERVER: Server<…> = Server::new(…)`
//! and makes a helper over any server one generic parameter, `K: Capacities`.
//!
//! [`RegistryView`]: crate::registry::RegistryView

#[cfg(feature = "resources")]
use heapless::VecView;

#[cfg(feature = "resources")]
use super::live::Listen;
use super::{Config, Server, Session, cache, tasks};
use crate::registry::{Registry, RegistryView};

/// A bounded vector of `T` behind an associated type, seen without its capacity (sealed).
#[cfg(feature = "resources")]
pub trait Slots<T> {
    /// The elements and the room left, as a view.
    fn view(&self) -> &VecView<T>;
    /// The same, to change.
    fn view_mut(&mut self) -> &mut VecView<T>;
}

#[cfg(feature = "resources")]
impl<T, const N: usize> Slots<T> for heapless::Vec<T, N> {
    fn view(&self) -> &VecView<T> {
        self.as_view()
    }
    fn view_mut(&mut self) -> &mut VecView<T> {
        self.as_mut_view()
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The capacities of a [`Server`]: how many tools, tasks, remembered answers, live resources
/// and listen streams it holds, and the bytes for a call held for a person's confirmation.
///
/// Implemented by [`Caps`] (sealed): write code over any server as
/// `fn f<K: Capacities>(server: &mut Server<'_, Board, K>)`, and read the capacities as
/// `K::TOOLS`, `K::TASKS`, ….
///
/// Every storage type below is `Send` and `Sync`, and a server holds its tools' function
/// pointers and static texts, never the board: `Server<'static, C, K>` is `Send` and `Sync`
/// for every `C` and `K`, so a threaded host keeps one in a `Mutex` written over any `K`.
///
/// What each costs in RAM (about): `CACHE * CACHE_BYTES + TASKS * 320 + 8 * TOOLS +
/// 4 * RESOURCES + 150 * LISTEN + HOLD + 100` bytes for the whole server
/// (`examples/qemu-riscv` prints the figures for riscv32; docs/FOOTPRINT.md).
pub trait Capacities: sealed::Sealed + 'static {
    /// Tools the table holds.
    const TOOLS: usize;
    /// Long-running actions (MCP Tasks) tracked at once; 0: no task table, long-running tools
    /// are refused at registration and no task code is linked.
    const TASKS: usize;
    /// Answers of acting calls remembered for retransmissions; 0: none.
    const CACHE: usize;
    /// Bytes of one remembered answer (a larger one is remembered as "ran, not replayable").
    const CACHE_BYTES: usize;
    /// Live resources (feature `resources`; at most
    /// [`MAX_LIVE_RESOURCES`](super::MAX_LIVE_RESOURCES)).
    const RESOURCES: usize;
    /// 2026-07-28 `subscriptions/listen` streams served at once (feature `resources`).
    const LISTEN: usize;
    /// Bytes for a call held while a person is asked to confirm it (feature `confirm`):
    /// [`HOLD_RECORD`](super::HOLD_RECORD) of them keep its record, the rest its message (352
    /// holds a call of 221 bytes, 253 without the feature `modern`); `HOLD_RECORD` or less:
    /// nothing is held, and tools that ask first are refused at registration.
    const HOLD: usize;

    /// The tool table: a [`Registry`] of `TOOLS` tools, lent as its [`RegistryView`].
    type Tools<'t, C: 't>: core::ops::DerefMut<Target = RegistryView<'t, C>> + Send + Sync;
    /// The task table.
    #[doc(hidden)]
    type Tasks: core::ops::DerefMut<Target = tasks::TasksView>
        + crate::result::TaskLookup
        + Send
        + Sync;
    /// The remembered answers' records.
    #[doc(hidden)]
    type CacheSlots: AsRef<[cache::Slot]> + AsMut<[cache::Slot]> + Send + Sync;
    /// The remembered answers' bytes.
    #[doc(hidden)]
    type CacheBytes: cache::Chunks + Send + Sync;
    /// The live resources.
    #[cfg(feature = "resources")]
    #[doc(hidden)]
    type Live<'t, C: 't>: Slots<&'t crate::registry::LiveResource<C>> + Send + Sync;
    /// The listen streams.
    #[cfg(feature = "resources")]
    #[doc(hidden)]
    type Listens: AsRef<[Listen]> + AsMut<[Listen]> + Send + Sync;
    /// The bytes of a held call.
    #[cfg(feature = "confirm")]
    #[doc(hidden)]
    type Hold: AsRef<[u8]> + AsMut<[u8]> + Send + Sync;
}

/// Capacities by number: `TOOLS` tools, and the rest with the defaults a typical board takes.
///
/// | parameter | what ([`Capacities`]) | default |
/// |---|---|---|
/// | `TOOLS` | tools | — |
/// | `TASKS` | long-running actions tracked at once (0: no MCP Tasks) | 2 |
/// | `CACHE` | answers remembered for retransmissions (0: none) | 4 |
/// | `CACHE_BYTES` | bytes of each remembered answer (a 2026-07-28 answer with its evidence twice, as a member and in `_meta`, is about 400) | 448 |
/// | `RESOURCES` | live resources (feature `resources`) | 4 |
/// | `LISTEN` | 2026-07-28 listen streams (feature `resources`) | 1 |
/// | `HOLD` | bytes for a call held for a person's confirmation (feature `confirm`; 0: none) | 352 |
///
/// `Caps<16>` is the default of [`Server`]. To set a later parameter without spelling the ones
/// before it, name it with [`caps!`](crate::caps).
pub struct Caps<
    const TOOLS: usize,
    const TASKS: usize = 2,
    const CACHE: usize = 4,
    const CACHE_BYTES: usize = 448,
    const RESOURCES: usize = 4,
    const LISTEN: usize = 1,
    const HOLD: usize = 352,
>(());

impl<
    const TOOLS: usize,
    const TASKS: usize,
    const CACHE: usize,
    const CACHE_BYTES: usize,
    const RESOURCES: usize,
    const LISTEN: usize,
    const HOLD: usize,
> sealed::Sealed for Caps<TOOLS, TASKS, CACHE, CACHE_BYTES, RESOURCES, LISTEN, HOLD>
{
}

impl<
    const TOOLS: usize,
    const TASKS: usize,
    const CACHE: usize,
    const CACHE_BYTES: usize,
    const RESOURCES: usize,
    const LISTEN: usize,
    const HOLD: usize,
> Capacities for Caps<TOOLS, TASKS, CACHE, CACHE_BYTES, RESOURCES, LISTEN, HOLD>
{
    const TOOLS: usize = TOOLS;
    const TASKS: usize = TASKS;
    const CACHE: usize = CACHE;
    const CACHE_BYTES: usize = CACHE_BYTES;
    const RESOURCES: usize = RESOURCES;
    const LISTEN: usize = LISTEN;
    const HOLD: usize = HOLD;

    type Tools<'t, C: 't> = Registry<'t, C, TOOLS>;
    type Tasks = tasks::Tasks<heapless::Vec<tasks::Entry, TASKS>>;
    type CacheSlots = [cache::Slot; CACHE];
    type CacheBytes = [[u8; CACHE_BYTES]; CACHE];
    #[cfg(feature = "resources")]
    type Live<'t, C: 't> = heapless::Vec<&'t crate::registry::LiveResource<C>, RESOURCES>;
    #[cfg(feature = "resources")]
    type Listens = [Listen; LISTEN];
    #[cfg(feature = "confirm")]
    type Hold = [u8; HOLD];
}

/// The capacities [`caps!`](crate::caps) names: each one left out is `Caps`'s default.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Named {
    pub tools: usize,
    pub tasks: usize,
    pub cache: usize,
    pub cache_bytes: usize,
    pub resources: usize,
    pub listen: usize,
    pub hold: usize,
}

#[doc(hidden)]
impl Named {
    /// `Caps`'s defaults; the tool capacity has none.
    pub const DEFAULT: Named = Named {
        tools: usize::MAX,
        tasks: 2,
        cache: 4,
        cache_bytes: 448,
        resources: 4,
        listen: 1,
        hold: 352,
    };

    /// The tool capacity, which must be named.
    pub const fn tools(self) -> usize {
        assert!(
            self.tools != usize::MAX,
            "caps!: name the tool capacity, `tools = N`"
        );
        self.tools
    }
}

impl<
    't,
    C,
    const TOOLS: usize,
    const TASKS: usize,
    const CACHE: usize,
    const CACHE_BYTES: usize,
    const RESOURCES: usize,
    const LISTEN: usize,
    const HOLD: usize,
> Server<'t, C, Caps<TOOLS, TASKS, CACHE, CACHE_BYTES, RESOURCES, LISTEN, HOLD>>
{
    /// A server with no tools. With the feature `modern`, the `tools/list` page budget reserves
    /// room for the members a 2026-07-28 result adds, so the same pages fit both eras.
    pub const fn new(config: Config) -> Self {
        #[cfg(feature = "modern")]
        let reserve = super::initialize::modern_reserve(&config);
        #[cfg(not(feature = "modern"))]
        let reserve = 0;
        Server {
            config,
            registry: Registry::new(config.page_bytes.saturating_sub(reserve)),
            session: Session::NEW,
            cache: cache::RecentCalls::new(
                [const { cache::Slot::FREE }; CACHE],
                [[0; CACHE_BYTES]; CACHE],
            ),
            tasks: tasks::Tasks::new(),
            now_ms: 0,
            last_advance: u64::MAX,
            unix_offset_ms: 0,
            call_seq: 0,
            entropy: (0, 0),
            #[cfg(feature = "resources")]
            live: super::live::Live::new(heapless::Vec::new(), [const { Listen::FREE }; LISTEN]),
            #[cfg(feature = "confirm")]
            confirm: super::confirm::Confirmations::new([0; HOLD]),
        }
    }
}

#[cfg(test)]
mod test {
    use super::{Capacities, Caps, Config, Server};

    fn assert_send<T: Send>() {}
    fn assert_sync<T: Sync>() {}

    /// What a threaded host writes once for every server: it compiles only if the capacities'
    /// storage is `Send` and `Sync` whatever `K` is.
    fn shareable<C: 'static, K: Capacities>() {
        assert_send::<Server<'static, C, K>>();
        assert_sync::<Server<'static, C, K>>();
    }

    /// A board a thread may own.
    struct Board;

    #[test]
    fn a_server_of_any_capacities_is_send_and_sync() {
        shareable::<Board, Caps<8, 0>>();
        shareable::<Board, Caps<32, 4, 4, 448, 4, 8, 1024>>();
        // Boards no thread may share or own: the server holds its tools' function pointers,
        // never the board, so a server over one still moves and is still shared.
        shareable::<core::cell::Cell<u8>, Caps<1>>();
        shareable::<std::rc::Rc<u8>, Caps<1>>();
    }

    #[test]
    fn a_server_moves_to_another_thread_and_back() {
        fn round_trip<K: Capacities>(server: Server<'static, Board, K>) -> usize {
            let back = std::thread::spawn(move || server).join();
            back.map(|s| K::TOOLS - s.registry().len()).unwrap_or(0)
        }
        let server: Server<'static, Board, Caps<8, 1>> = Server::new(Config::new("board", "1.0"));
        assert_eq!(round_trip(server), 8);
    }
}
