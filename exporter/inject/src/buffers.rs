//! A fixed pool of activity buffers handed to CUPTI.
//!
//! CUPTI asks for a buffer from whichever application thread launches work, so
//! handing one out must not lock or allocate: the pool is one allocation made at start
//! and a bitmask of free slots updated with compare-and-swap. When every buffer is in
//! use the request gets none and CUPTI drops (and counts) records; that bounds the
//! library's memory whatever the launch rate.
//!
//! Buffers are handed out zeroed: the allocation starts zeroed and
//! [`BufferPool::release_zeroed`] clears a buffer before it is free again. CUPTI
//! otherwise zeroes each buffer itself on the application thread that asked for it
//! (`CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER`), a stall on the launch path.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};

/// Most buffers a pool can hold (one bit each in the free mask).
pub const MAX_BUFFERS: usize = 64;
/// CUPTI requires buffers aligned to 8 bytes.
const ALIGN: usize = 8;

/// Buffers of `size` bytes, `count` of them, allocated once.
pub struct BufferPool {
    base: *mut u8,
    layout: Layout,
    size: usize,
    count: usize,
    free: AtomicU64,
}

// SAFETY: the pool only hands out disjoint slices of its allocation, each to one
// holder at a time, tracked by the atomic mask.
unsafe impl Send for BufferPool {}
// SAFETY: as above; all shared state is the atomic mask.
unsafe impl Sync for BufferPool {}

impl BufferPool {
    /// Allocates `count` (1..=64) zeroed buffers of `size` bytes (a multiple of 8);
    /// `None` if the arguments are out of range or memory is short. The pages are only
    /// touched as buffers are used.
    pub fn new(size: usize, count: usize) -> Option<BufferPool> {
        if !(1..=MAX_BUFFERS).contains(&count) || size == 0 || size % ALIGN != 0 {
            return None;
        }
        let layout = Layout::from_size_align(size.checked_mul(count)?, ALIGN).ok()?;
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        if base.is_null() {
            return None;
        }
        let free = if count == 64 {
            u64::MAX
        } else {
            (1u64 << count) - 1
        };
        Some(BufferPool {
            base,
            layout,
            size,
            count,
            free: AtomicU64::new(free),
        })
    }

    /// Bytes in one buffer.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// Buffers currently handed out.
    pub fn in_use(&self) -> usize {
        self.count - self.free.load(Ordering::Acquire).count_ones() as usize
    }

    /// A free buffer, or `None` when all are in use. Lock-free.
    pub fn acquire(&self) -> Option<*mut u8> {
        let mut mask = self.free.load(Ordering::Acquire);
        loop {
            if mask == 0 {
                return None;
            }
            let slot = mask.trailing_zeros() as usize;
            match self.free.compare_exchange_weak(
                mask,
                mask & !(1u64 << slot),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                // SAFETY: slot < count, so the offset stays inside the allocation.
                Ok(_) => return Some(unsafe { self.base.add(slot * self.size) }),
                Err(now) => mask = now,
            }
        }
    }

    /// Returns a buffer to the pool; `false` if `ptr` is not one of this pool's
    /// buffers or is already free (then nothing changes).
    pub fn release(&self, ptr: *mut u8) -> bool {
        let Some(slot) = self.slot(ptr) else {
            return false;
        };
        let bit = 1u64 << slot;
        self.free.fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Zeroes the first `used` bytes of a buffer (CUPTI's records; the rest is still
    /// zero) and returns it to the pool, so the next holder gets a zeroed buffer
    /// without paying for it on its own thread. `false`, touching nothing, if `ptr` is
    /// not a buffer of this pool or is free.
    pub fn release_zeroed(&self, ptr: *mut u8, used: usize) -> bool {
        let Some(slot) = self.slot(ptr) else {
            return false;
        };
        if self.free.load(Ordering::Acquire) & (1u64 << slot) != 0 {
            return false;
        }
        // SAFETY: slot < count, so this is a buffer of `size` bytes inside the
        // allocation (the one `ptr` starts), held by the caller (not free), so no one
        // else writes it.
        unsafe { std::ptr::write_bytes(self.base.add(slot * self.size), 0, used.min(self.size)) };
        self.release(ptr)
    }

    /// The slot `ptr` starts, if it starts one of this pool's buffers.
    fn slot(&self, ptr: *mut u8) -> Option<usize> {
        let offset = (ptr as usize).wrapping_sub(self.base as usize);
        (offset % self.size == 0 && offset / self.size < self.count).then_some(offset / self.size)
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.base, self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn hands_out_each_buffer_once_then_none() {
        let pool = BufferPool::new(1024, 4).unwrap();
        let got: Vec<_> = (0..4).map(|_| pool.acquire().unwrap()).collect();
        assert_eq!(got.iter().collect::<HashSet<_>>().len(), 4);
        assert!(got.iter().all(|p| (*p as usize) % 8 == 0));
        assert_eq!(pool.acquire(), None);
        assert_eq!(pool.in_use(), 4);
        assert!(pool.release(got[2]));
        assert_eq!(pool.acquire(), Some(got[2]));
    }

    #[test]
    fn foreign_and_double_releases_are_refused() {
        let pool = BufferPool::new(64, 2).unwrap();
        let a = pool.acquire().unwrap();
        let mut other = [0u64; 8];
        assert!(!pool.release(other.as_mut_ptr().cast()));
        assert!(!pool.release(unsafe { a.add(3) }));
        assert!(pool.release(a));
        assert!(!pool.release(a), "second release of the same buffer");
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn buffers_start_zeroed_and_come_back_zeroed() {
        let pool = BufferPool::new(64, 1).unwrap();
        let a = pool.acquire().unwrap();
        // SAFETY: `a` is a held buffer of 64 bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(a, 64) };
        assert!(bytes.iter().all(|b| *b == 0));
        bytes[..40].fill(0xAB);
        assert!(pool.release_zeroed(a, 40));
        assert!(!pool.release_zeroed(a, 40), "already free");
        let b = pool.acquire().unwrap();
        assert_eq!(a, b);
        // SAFETY: as above.
        assert!(unsafe { std::slice::from_raw_parts(b, 64) }
            .iter()
            .all(|x| *x == 0));
    }

    #[test]
    fn release_zeroed_ignores_foreign_pointers_and_clamps_the_length() {
        let pool = BufferPool::new(64, 2).unwrap();
        let mut other = [0xCDu8; 64];
        assert!(!pool.release_zeroed(other.as_mut_ptr(), 64));
        assert!(other.iter().all(|b| *b == 0xCD), "foreign memory untouched");
        let a = pool.acquire().unwrap();
        let b = pool.acquire().unwrap();
        // SAFETY: `b` is a held buffer of 64 bytes.
        unsafe { std::slice::from_raw_parts_mut(b, 64) }.fill(7);
        assert!(
            pool.release_zeroed(a, usize::MAX),
            "length clamped to the buffer"
        );
        // SAFETY: as above; `a` zeroing must not have reached `b`.
        assert!(unsafe { std::slice::from_raw_parts(b, 64) }
            .iter()
            .all(|x| *x == 7));
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(BufferPool::new(0, 4).is_none());
        assert!(BufferPool::new(1001, 4).is_none());
        assert!(BufferPool::new(1024, 0).is_none());
        assert!(BufferPool::new(1024, 65).is_none());
        assert!(BufferPool::new(8, 64).is_some());
    }

    #[test]
    fn concurrent_acquires_never_share_a_buffer() {
        let pool = Arc::new(BufferPool::new(64, 64).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let pool = Arc::clone(&pool);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for _ in 0..1000 {
                        if let Some(p) = pool.acquire() {
                            mine.push(p as usize);
                        }
                        if mine.len() > 4 {
                            assert!(pool.release(mine.remove(0) as *mut u8));
                        }
                    }
                    mine
                })
            })
            .collect();
        let held: Vec<usize> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(held.iter().collect::<HashSet<_>>().len(), held.len());
        assert_eq!(pool.in_use(), held.len());
    }
}
