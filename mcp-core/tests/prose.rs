//! Numbers the docs state about the code are the code's: the capacity defaults in the tables of
//! `caps!` (lib.rs) and `Caps` (server/capacities.rs), the `Caps<…>` that `caps!(tools = 16,
//! hold = 0)` is said to be, and the defaults `Server`'s docs list. A default changed in code
//! without its sentence, or the other way round, fails here.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::server::Named;

const LIB: &str = include_str!("../src/lib.rs");
const CAPACITIES: &str = include_str!("../src/server/capacities.rs");
const SERVER: &str = include_str!("../src/server/mod.rs");

/// The defaults, by the names `caps!` takes.
fn defaults() -> [(&'static str, usize); 6] {
    let d = Named::DEFAULT;
    [
        ("tasks", d.tasks),
        ("cache", d.cache),
        ("cache_bytes", d.cache_bytes),
        ("resources", d.resources),
        ("listen", d.listen),
        ("hold", d.hold),
    ]
}

/// The last cell of the doc table row whose first cell is `` `name` ``, as a number.
fn table_default(source: &str, name: &str) -> usize {
    let head = format!("/// | `{name}` |");
    let row = source
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&head))
        .unwrap_or_else(|| panic!("no table row for `{name}`"));
    let cells: Vec<&str> = row.trim_end_matches('|').split('|').collect();
    let last = cells.last().unwrap().trim();
    last.parse()
        .unwrap_or_else(|_| panic!("`{name}`'s default {last:?} is not a number: {row}"))
}

/// Where `caps!` and `Caps` are not the same type, this does not compile.
fn same_type<T>(_: core::marker::PhantomData<T>, _: core::marker::PhantomData<T>) {}

#[test]
fn the_caps_macro_table_states_the_defaults() {
    for (name, value) in defaults() {
        assert_eq!(table_default(LIB, name), value, "caps!'s table, `{name}`");
    }
}

#[test]
fn the_caps_table_states_the_defaults() {
    for (name, value) in defaults() {
        let upper = name.to_uppercase();
        assert_eq!(
            table_default(CAPACITIES, &upper),
            value,
            "Caps's table, `{upper}`"
        );
    }
}

#[test]
fn the_spelled_example_of_caps_is_what_caps_makes() {
    same_type(
        core::marker::PhantomData::<mcp_core::caps!(tools = 16, hold = 0)>,
        core::marker::PhantomData::<mcp_core::Caps<16, 2, 4, 448, 4, 1, 0>>,
    );
    let d = Named::DEFAULT;
    let claim = "`caps!(tools = 16, hold = 0)` is `Caps<";
    let at = LIB.find(claim).expect("the sentence") + claim.len();
    let spelled: Vec<usize> = LIB[at..]
        .split('>')
        .next()
        .unwrap()
        .split(',')
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert_eq!(
        spelled,
        [
            16,
            d.tasks,
            d.cache,
            d.cache_bytes,
            d.resources,
            d.listen,
            0
        ]
    );
}

#[test]
fn the_server_docs_state_the_defaults() {
    let d = Named::DEFAULT;
    let said = format!(
        "16 tools, {} task\n/// slots, {} remembered answers of {} bytes, {} live resources, {} listen stream, {} bytes for a\n/// held call",
        d.tasks, d.cache, d.cache_bytes, d.resources, d.listen, d.hold
    );
    assert!(SERVER.contains(&said), "Server's docs should say: {said}");
}
