//! The process's memory allocator: jemalloc (`tikv-jemallocator`, the maintained Rust binding
//! rustc, TiKV and others ship), in place of glibc's malloc.
//!
//! Why: the metadata path allocates and frees many small blocks per request (redb's pages and
//! builders, XDR buffers, tokio tasks); glibc's malloc and free were 12-15 % of the server's
//! CPU removing files. An A/B of the builds with the same client (issue 22, two rounds, 2,000
//! files, 3 runs each): one-task creates of 4 KiB files 3,011 / 2,854 -> 3,694 / 3,821
//! files/s, one-task removes 7,676 / 8,403 -> 8,690 / 9,453, 8-task removes of 4 KiB files
//! 12,908 / 14,262 -> 15,725 / 15,117, stats +5-10 %.
//!
//! Giving memory back: glibc kept what a burst of large blocks freed (the replies a server
//! queued for peers that did not read, up to its reply budget), and `pnfs` called
//! `malloc_trim(0)` every 2 s for it. jemalloc returns unused pages itself; the settings
//! below make it do so within about a second, from its own background thread, instead of
//! its default ten seconds (`tests/conn_limits.rs` checks what stays resident after such a
//! burst). mimalloc was tried before and kept 25 MiB more after the burst, and could only be
//! told otherwise from the environment.

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its first allocation: a background thread purges unused
/// dirty pages after 1 s and returns them to the system at once (no "muzzy" stage).
// SAFETY (of the exported name): jemalloc's prefixed build reads its options from this
// symbol, a NUL-terminated C string; nothing else defines it.
#[allow(unsafe_code, non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
static malloc_conf: &[u8; 60] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";
