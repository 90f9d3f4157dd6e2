//! `Chunked<T, Id>`: an append-only vector stored in fixed-size chunks, for the
//! machine's tensors, storages, nodes and version counters. A program of a
//! million statements makes millions of them; a plain `Vec` would double its
//! buffer and copy it as it grows, holding old and new buffers at once (a
//! peak of three times the data) and touching every page twice. Chunks are
//! never moved, so memory grows with what is used, and ids stay plain indices
//! (`u32` in the machine: a tensor holds several, and a node and a saved
//! tensor some).

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

const SHIFT: u32 = 12;
const CHUNK: usize = 1 << SHIFT;
const MASK: usize = CHUNK - 1;

/// The id type an arena is indexed by: `usize`, or `u32` where ids are
/// stored in bulk (a tensor holds several) and half the width matters.
pub trait Id: Copy {
    fn from_index(i: usize) -> Self;
    fn index(self) -> usize;
}

impl Id for usize {
    #[inline]
    fn from_index(i: usize) -> usize {
        i
    }

    #[inline]
    fn index(self) -> usize {
        self
    }
}

impl Id for u32 {
    #[inline]
    fn from_index(i: usize) -> u32 {
        u32::try_from(i).expect("more than 2^32 objects in one arena")
    }

    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Debug)]
pub struct Chunked<T, I = usize> {
    chunks: Vec<Vec<T>>,
    len: usize,
    id: PhantomData<fn(I) -> I>,
}

impl<T, I> Default for Chunked<T, I> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
            id: PhantomData,
        }
    }
}

impl<T, I: Id> Chunked<T, I> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Allocates the first chunk whole (for a run known to be big), so that
    /// it is not grown and copied like a Vec.
    pub fn reserve_first_chunk(&mut self) {
        if self.chunks.is_empty() {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
    }

    /// Appends `value` and returns its id.
    pub fn push(&mut self, value: T) -> I {
        if self.len >> SHIFT == self.chunks.len() {
            // The first chunk grows like a Vec (most programs are small);
            // later ones are allocated whole.
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        if let Some(last) = self.chunks.last_mut() {
            last.push(value);
        }
        self.len += 1;
        I::from_index(self.len - 1)
    }

    pub fn get(&self, id: I) -> Option<&T> {
        let i = id.index();
        self.chunks.get(i >> SHIFT)?.get(i & MASK)
    }

    pub fn get_mut(&mut self, id: I) -> Option<&mut T> {
        let i = id.index();
        self.chunks.get_mut(i >> SHIFT)?.get_mut(i & MASK)
    }

    pub fn last(&self) -> Option<&T> {
        self.chunks.last()?.last()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// The values with their ids.
    pub fn enumerate(&self) -> impl Iterator<Item = (I, &T)> + '_ {
        self.iter().enumerate().map(|(i, v)| (I::from_index(i), v))
    }
}

impl<T, I: Id> Index<I> for Chunked<T, I> {
    type Output = T;

    #[inline]
    fn index(&self, id: I) -> &T {
        let i = id.index();
        &self.chunks[i >> SHIFT][i & MASK]
    }
}

impl<T, I: Id> IndexMut<I> for Chunked<T, I> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        let i = id.index();
        &mut self.chunks[i >> SHIFT][i & MASK]
    }
}

impl<T, I: Id> FromIterator<T> for Chunked<T, I> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        let mut c = Chunked::new();
        for v in iter {
            c.push(v);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_survive_growth_across_chunks() {
        let mut c: Chunked<usize> = Chunked::new();
        for i in 0..3 * CHUNK + 5 {
            c.push(i);
        }
        assert_eq!(c.len(), 3 * CHUNK + 5);
        assert_eq!(c[0], 0);
        assert_eq!(c[CHUNK], CHUNK);
        assert_eq!(c[3 * CHUNK + 4], 3 * CHUNK + 4);
        assert_eq!(c.get(3 * CHUNK + 5), None);
        assert_eq!(c.last(), Some(&(3 * CHUNK + 4)));
        c[7] = 70;
        assert_eq!(c.iter().nth(7), Some(&70));
        assert_eq!(c.iter().count(), c.len());
    }

    #[test]
    fn a_reserved_first_chunk_is_used() {
        let mut c = Chunked::new();
        c.reserve_first_chunk();
        for i in 0..CHUNK + 1 {
            c.push(i);
        }
        assert_eq!(c.chunks.len(), 2);
        assert_eq!(c.chunks[0].capacity(), CHUNK);
        assert_eq!(c[CHUNK], CHUNK);
        assert_eq!(c.iter().count(), CHUNK + 1);
    }
}
