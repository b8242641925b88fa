//! The counting allocator counts every thread of the process, so its own check runs alone in a
//! process of its own: next to the unit tests, whose threads allocate at the same time, it would
//! count their allocations too.

use mcp_benches::alloc_count;

#[test]
fn the_counter_counts_one_allocation_and_its_size() {
    let a = alloc_count::count(|| {
        std::hint::black_box(vec![0u8; 100]);
    });
    assert_eq!(a.count, 1);
    assert_eq!(a.bytes, 100);
    let none = alloc_count::count(|| {
        std::hint::black_box([0u8; 100]);
    });
    assert_eq!(none.count, 0);
}
