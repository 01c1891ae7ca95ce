//! A global allocator that records the largest single allocation made by each thread (tests
//! run in parallel), for tests that check a decoder reserves no more than its input justifies.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The recording allocator.
struct MaxAlloc;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|c| c.set(c.get().max(size)));
}

/// Forgets the largest allocation of this thread so far.
pub(crate) fn reset_largest() {
    LARGEST.with(|c| c.set(0));
}

/// The largest allocation of this thread since the last reset.
pub(crate) fn largest() -> usize {
    LARGEST.with(|c| c.get())
}

#[allow(unsafe_code)] // wraps the system allocator to measure the largest allocation
unsafe impl GlobalAlloc for MaxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: MaxAlloc = MaxAlloc;
