//! Lets the linker find `memory.x`, next to this file (`-Tmemory.x` in `.cargo/config.toml`).

fn main() {
    println!("cargo:rustc-link-search={}", env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=memory.x");
}
