//! Zeroed scratch counters for the hot paths (a fault's per-node counts, a
//! balance pass's core bitmap): on the caller's stack up to
//! [`STACK_WORDS`], on the heap beyond, so the common machine sizes never
//! reach the allocator. Models nothing; leaves out every other type.

/// Words a caller keeps on its stack: 16 covers every preset's nodes and
/// 1024 cores' worth of bitmap words.
pub const STACK_WORDS: usize = 16;

/// `n` zeroed words: `stack` when they fit, else `heap` (both the
/// caller's, so the slice lives in its frame).
pub fn zeroed<'a>(
    n: usize,
    stack: &'a mut [u64; STACK_WORDS],
    heap: &'a mut Vec<u64>,
) -> &'a mut [u64] {
    if n <= STACK_WORDS {
        let s = &mut stack[..n];
        s.fill(0);
        s
    } else {
        heap.clear();
        heap.resize(n, 0);
        heap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_counts_use_the_stack_and_large_the_heap_all_zeroed() {
        let (mut stack, mut heap) = ([7u64; STACK_WORDS], vec![9u64; 3]);
        let s = zeroed(4, &mut stack, &mut heap);
        assert_eq!(s, &[0; 4]);
        assert!(heap.len() == 3, "the heap is left alone");
        let h = zeroed(STACK_WORDS + 1, &mut stack, &mut heap);
        assert_eq!(h.len(), STACK_WORDS + 1);
        assert!(h.iter().all(|&x| x == 0));
    }
}
