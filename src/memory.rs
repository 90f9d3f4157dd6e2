//! How tpi asks its allocator (mimalloc, the global allocator of the `tpi`
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

#[cfg(test)]
mod tests {
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
