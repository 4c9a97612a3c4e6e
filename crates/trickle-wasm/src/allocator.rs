//! The module's allocator: blocks of power-of-two sizes, one free list per size.
//!
//! The widget allocates little and seldom: the texts of a limit, an algorithm or a cost
//! table while building one, an error message, the sliding log's queue and a cost table's
//! entries. A general allocator (dlmalloc, talc) spends more code on splitting and
//! coalescing than this module spends on its algorithms, so this one does neither: a
//! request is rounded up to a power of two, served from that size's free list when a block
//! was freed before, or else cut from fresh memory after everything else, which grows by
//! whole 64 KiB pages. A freed block waits for the next request of its size. Memory is never
//! given back (WebAssembly cannot shrink a memory), and a block is at most twice the size
//! asked for.
//!
//! The module is single-threaded (wasm32-unknown-unknown without atomics), so the lists
//! need no lock.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::UnsafeCell;
use core::ptr;

/// The largest alignment a block is given; nothing in this crate asks for more.
const MAX_ALIGN: usize = 16;

/// The smallest block, which must hold a free list's link.
const MIN_BLOCK: usize = 8;

const PAGE: usize = 65_536;

pub struct Allocator {
    state: UnsafeCell<State>,
}

struct State {
    /// The first free block of each size 2^i, linked through their first word; 0 is none.
    free: [usize; usize::BITS as usize],
    /// Fresh memory: `next` up to `end` has never been handed out. 0 before the first
    /// request, which starts it at the memory's initial end.
    next: usize,
    end: usize,
}

impl Allocator {
    pub const fn new() -> Allocator {
        Allocator {
            state: UnsafeCell::new(State {
                free: [0; usize::BITS as usize],
                next: 0,
                end: 0,
            }),
        }
    }
}

// SAFETY: one thread only (see the module's docs).
unsafe impl Sync for Allocator {}

/// The index of the size class for `layout`: i for blocks of 2^i bytes.
fn class(layout: &Layout) -> usize {
    let size = layout.size().max(layout.align()).max(MIN_BLOCK);
    // The mask keeps the index provably in bounds, so no panic path is generated; a size
    // above 2^31 is refused before it gets here (`next_power_of_two` would overflow).
    (size.next_power_of_two().trailing_zeros() as usize) & (usize::BITS as usize - 1)
}

unsafe impl GlobalAlloc for Allocator {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > MAX_ALIGN || layout.size() > isize::MAX as usize / 2 {
            return ptr::null_mut();
        }
        // SAFETY: one thread, and no reference to the state outlives this call.
        let state = unsafe { &mut *self.state.get() };
        let class = class(&layout);
        let head = state.free[class];
        if head != 0 {
            // SAFETY: a free block's first word is the link `dealloc` wrote there.
            state.free[class] = unsafe { *(head as *const usize) };
            return head as *mut u8;
        }
        let size = 1usize << class;
        if state.next == 0 {
            state.next = wasm32::memory_size(0) * PAGE;
            state.end = state.next;
        }
        let start = (state.next + MAX_ALIGN - 1) & !(MAX_ALIGN - 1);
        let Some(stop) = start.checked_add(size) else {
            return ptr::null_mut();
        };
        if stop > state.end {
            let pages = (stop - state.end).div_ceil(PAGE);
            if wasm32::memory_grow(0, pages) == usize::MAX {
                return ptr::null_mut();
            }
            state.end += pages * PAGE;
        }
        state.next = stop;
        start as *mut u8
    }

    #[inline(never)]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`.
        let state = unsafe { &mut *self.state.get() };
        let class = class(&layout);
        // SAFETY: the block is at least MIN_BLOCK bytes, aligned, and no longer in use.
        unsafe { *(block as *mut usize) = state.free[class] };
        state.free[class] = block as usize;
    }

    #[inline(never)]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > isize::MAX as usize / 2 {
            return ptr::null_mut();
        }
        // SAFETY: `realloc`'s contract makes this a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // A block already big enough for the new size stays where it is.
        if class(&new_layout) == class(&layout) {
            return block;
        }
        // SAFETY: as `GlobalAlloc::realloc`'s default: a new block, the old bytes copied.
        unsafe {
            let moved = self.alloc(new_layout);
            if !moved.is_null() {
                ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                self.dealloc(block, layout);
            }
            moved
        }
    }
}
