//! How tpi asks its allocator (mimalloc through [`Allocator`], the global allocator of the `tpi`
//! binary and of the benchmarks) to treat memory. A big check touches a
//! gigabyte; on the project's virtual machine fresh pages are most of what
//! that costs (issue 8).

/// mimalloc's `mi_option_purge_delay` and `mi_option_allow_thp` (their
/// places in `mi_option_e`, mimalloc.h).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Keeps freed memory in the process instead of handing it back to the
/// system after a delay: the eager run reuses the pages the analysis run
/// freed. A `tpi` process is short.
///
/// Asks for ordinary pages only: with transparent huge pages the kernel
/// zeroes (and on a virtual machine may first have to assemble) 2 MiB at a
/// time, which cost a 1M-statement check 3-4 s of system time, against
/// under 1 s with 4 KiB pages.
///
/// Call it first thing in `main`, with mimalloc as the global allocator
/// (under another allocator it changes nothing but mimalloc's unused state).
pub fn configure_allocator() {
    // SAFETY: sets allocator options; no memory is involved.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
    }
    // mimalloc reserved its first arena, asking for huge pages, before
    // `main`: turn them off for the whole process (pages not yet touched
    // then come as 4 KiB ones), as mimalloc itself does when the option is
    // set from the environment.
    #[cfg(target_os = "linux")]
    // SAFETY: a prctl with integer arguments; failure only leaves THP on.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// mimalloc as a global allocator, asking for alignment only when a layout
/// needs more than every block has.
///
/// The `mimalloc` crate's allocator passes every layout to
/// `mi_malloc_aligned`. In mimalloc 3 that call takes a fast path only when
/// the block size is a power of two; a 24- or 40-byte box (a shape, a node's
/// edge list) goes through the generic aligned path. Every mimalloc block is
/// aligned to a machine word, so layouts aligned to 8 bytes or less use the
/// plain calls: a 20k-statement check runs 2% fewer instructions.
pub struct Allocator;

/// The alignment every mimalloc block has (`MI_INTPTR_SIZE`).
const WORD_ALIGN: usize = std::mem::size_of::<usize>();

/// A block from mimalloc for `layout`, zeroed or not.
#[inline]
unsafe fn mi_alloc(layout: std::alloc::Layout, zeroed: bool) -> *mut u8 {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: mimalloc returns null or a block of `size` bytes aligned as
    // asked (every block is word-aligned).
    unsafe {
        match (align <= WORD_ALIGN, zeroed) {
            (true, false) => libmimalloc_sys::mi_malloc(size).cast(),
            (true, true) => libmimalloc_sys::mi_zalloc(size).cast(),
            (false, false) => libmimalloc_sys::mi_malloc_aligned(size, align).cast(),
            (false, true) => libmimalloc_sys::mi_zalloc_aligned(size, align).cast(),
        }
    }
}

// SAFETY: each method hands the layout to mimalloc, which returns null or a
// block of at least `size` bytes with the alignment asked for: `mi_malloc`,
// `mi_zalloc` and `mi_realloc` blocks are word-aligned, and larger
// alignments go to the `_aligned` calls. `mi_free` frees blocks of either.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe { mi_alloc(layout, false) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe { mi_alloc(layout, true) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        // SAFETY: see the impl.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= WORD_ALIGN {
                libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// Blocks from the word-aligned path and the aligned path have the
    /// alignment their layouts ask for, and survive a reallocation.
    #[test]
    fn allocator_honours_alignment() {
        use std::alloc::{GlobalAlloc, Layout};
        let allocator = super::Allocator;
        for (size, align) in [
            (1, 1),
            (24, 8),
            (40, 8),
            (24, 16),
            (48, 32),
            (100, 64),
            (4096, 4096),
        ] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero sizes; each block is written within its size
            // and freed once.
            unsafe {
                let p = allocator.alloc(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "{size} bytes aligned to {align}");
                p.write_bytes(7, size);
                let q = allocator.realloc(p, layout, size * 3);
                assert_eq!(
                    q as usize % align,
                    0,
                    "realloc of {size} bytes aligned to {align}"
                );
                assert_eq!(*q.add(size - 1), 7);
                allocator.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                let z = allocator.alloc_zeroed(layout);
                assert_eq!(z as usize % align, 0);
                assert!((0..size).all(|i| *z.add(i) == 0));
                allocator.dealloc(z, layout);
            }
        }
    }

    /// The option numbers name the options they mean: mimalloc's purge delay
    /// is 1 s and allow_thp on by default in mimalloc 3 (an upgrade that
    /// renumbers its options fails here, not silently).
    #[test]
    fn option_numbers_are_the_ones_we_mean() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reads an allocator option.
            let delay = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
            assert_eq!(delay, 1000);
        }
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
            // SAFETY: reads an allocator option.
            let thp = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_ALLOW_THP) };
            assert_eq!(thp, 1);
        }
    }
}
