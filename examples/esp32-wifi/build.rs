//! Links with esp-hal's `linkall.x` (memory map, sections, ROM functions).

fn main() {
    println!("cargo:rustc-link-arg=-Tlinkall.x");
    println!("cargo:rerun-if-changed=build.rs");
}
