//! Embeddings: the vectors clients (or the embedder) attach to records and
//! to queries, and the cosine similarity retrieval ranks them by.
//!
//! Values are kept as `f32`, the precision embedding models produce, so a
//! 384-dimension vector takes 1.5 KiB on disk. Every vector of one
//! database has the same number of dimensions: the first one stored fixes
//! it, unless the configuration does (`retrieval.embedding_dimensions`).

use super::validate::{Validated, ValidationError};

/// The most dimensions a vector may have (the largest common embedding
/// models have 3,072).
pub const MAX_DIMENSIONS: usize = 8192;

/// The magnitude one number of a vector must reach: the smallest normal
/// 32-bit float. Below it every number would round to zero or lose its
/// precision, leaving no direction to compare.
pub const MIN_SIGNAL: f64 = f32::MIN_POSITIVE as f64;

/// A checked vector: at least one dimension, at most [`MAX_DIMENSIONS`],
/// every value finite, not all zero (a zero vector has no direction, so no
/// similarity to anything).
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding(Vec<f32>);

impl Embedding {
    /// Checks the numbers a client sent for `field`.
    pub fn new(field: &str, values: Vec<f64>) -> Validated<Embedding> {
        if values.is_empty() {
            return Err(ValidationError::new(
                field,
                "an embedding needs at least one number",
            ));
        }
        if values.len() > MAX_DIMENSIONS {
            return Err(ValidationError::new(
                field,
                format!(
                    "too many dimensions: {} given, maximum is {MAX_DIMENSIONS}",
                    values.len()
                ),
            ));
        }
        let mut vector = Vec::with_capacity(values.len());
        // Bounds on the numbers as sent, not as rounded to 32 bits, so the
        // rule is the one the API document states.
        let mut signal = false;
        for (i, value) in values.into_iter().enumerate() {
            if value.is_nan() || value.abs() > f64::from(f32::MAX) {
                return Err(ValidationError::new(
                    format!("{field}[{i}]"),
                    format!("{value} is not a finite 32-bit number"),
                ));
            }
            signal |= value.abs() >= MIN_SIGNAL;
            vector.push(value as f32);
        }
        if !signal {
            return Err(ValidationError::new(
                field,
                "an embedding cannot be all zeros (or all below the smallest normal 32-bit number)",
            ));
        }
        Ok(Embedding(vector))
    }

    /// A vector a client may send (`null` or absent: none).
    pub fn optional(field: &str, values: Option<Vec<f64>>) -> Validated<Option<Embedding>> {
        values.map(|v| Embedding::new(field, v)).transpose()
    }

    pub fn dimensions(&self) -> usize {
        self.0.len()
    }

    pub fn values(&self) -> &[f32] {
        &self.0
    }

    /// Euclidean length, computed in `f64`.
    pub fn norm(&self) -> f64 {
        self.0
            .iter()
            .map(|v| f64::from(*v) * f64::from(*v))
            .sum::<f64>()
            .sqrt()
    }

    /// Little-endian `f32`s, the stored form.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// The vector scaled to length 1, one signed byte per dimension:
    /// `(scale, bytes)`, value i being `bytes[i] as i8 · scale`, each
    /// within `scale / 2` of the exact one.
    pub fn quantized(&self) -> (f64, Vec<u8>) {
        let norm = self.norm();
        let largest = self
            .0
            .iter()
            .map(|v| (f64::from(*v) / norm).abs())
            .fold(0.0f64, f64::max);
        let scale = largest / 127.0;
        let bytes = self
            .0
            .iter()
            .map(|v| ((f64::from(*v) / norm / scale).round().clamp(-127.0, 127.0) as i8) as u8)
            .collect();
        (scale, bytes)
    }
}

/// A query vector scaled to length 1, so the cosine with a stored vector is
/// their dot product over the stored vector's norm.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryVector {
    values: Vec<f32>,
    /// The sum of the values' magnitudes: what half a rounding step per
    /// stored dimension can add up to, in steps (see [`Self::signal_at_most`]).
    weight: f64,
    /// The values in steps of `step`, rounded: the query side of the
    /// integer dot product with a quantized stored vector.
    steps: Vec<i16>,
    step: f64,
}

/// Dimensions per partial integer sum: 256 products of an i8 and an i16
/// stay well inside an i32 (127 × 32,767 × 256 < 2³¹).
const DOT_CHUNK: usize = 256;

impl QueryVector {
    pub fn new(embedding: &Embedding) -> QueryVector {
        let norm = embedding.norm();
        let values: Vec<f32> = embedding
            .values()
            .iter()
            .map(|v| (f64::from(*v) / norm) as f32)
            .collect();
        let weight = values.iter().map(|v| f64::from(v.abs())).sum();
        let largest = values
            .iter()
            .map(|v| f64::from(v.abs()))
            .fold(0.0, f64::max);
        let step = largest / f64::from(i16::MAX);
        let steps = values
            .iter()
            .map(|v| (f64::from(*v) / step).round() as i16)
            .collect();
        QueryVector {
            values,
            weight,
            steps,
            step,
        }
    }

    pub fn dimensions(&self) -> usize {
        self.values.len()
    }

    /// The most the similarity signal of a stored vector can be, from its
    /// [`Embedding::quantized`] form: the approximate cosine plus the most
    /// the rounding of either side can hide (half a step per dimension,
    /// weighed by the other side), plus more than [`Self::signal`]'s own
    /// f32 rounding can reach. `None` when the dimensions differ.
    ///
    /// This runs once per visible vector of a query, so the dot product is
    /// taken in integers (exact, and the compiler vectorises it).
    pub fn signal_at_most(&self, scale: f64, bytes: &[u8]) -> Option<f64> {
        if bytes.len() != self.steps.len() {
            return None;
        }
        let (mut dot, mut magnitude) = (0i64, 0i64);
        for (b, q) in bytes.chunks(DOT_CHUNK).zip(self.steps.chunks(DOT_CHUNK)) {
            let (mut d, mut m) = (0i32, 0i32);
            for (b, q) in b.iter().zip(q) {
                let b = i32::from(*b as i8);
                d += b * i32::from(*q);
                m += b.abs();
            }
            dot += i64::from(d);
            magnitude += i64::from(m);
        }
        // Σ b·q ≤ step·Σ b·steps + (step / 2)·Σ|b|, then the stored side.
        let query_side = dot as f64 * self.step + magnitude as f64 * self.step / 2.0;
        let most = query_side * scale + self.weight * scale / 2.0 + 1e-5;
        Some(most.clamp(0.0, 1.0))
    }

    /// The similarity signal of a stored vector (its bytes and norm): the
    /// cosine, below 0 counted as 0. `None` when the stored vector has
    /// another number of dimensions.
    pub fn signal(&self, stored: &[u8], norm: f64) -> Option<f64> {
        if stored.len() != self.values.len() * 4 || norm <= 0.0 {
            return None;
        }
        // Four partial sums let the compiler vectorise the loop.
        let mut sums = [0.0f32; 4];
        let mut chunks = stored.chunks_exact(16).zip(self.values.chunks_exact(4));
        for (bytes, query) in &mut chunks {
            for lane in 0..4 {
                let b = &bytes[lane * 4..lane * 4 + 4];
                sums[lane] += f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * query[lane];
            }
        }
        let done = self.values.len() / 4 * 4;
        let mut dot: f64 = sums.iter().map(|s| f64::from(*s)).sum();
        for (i, query) in self.values.iter().enumerate().skip(done) {
            let b = &stored[i * 4..i * 4 + 4];
            dot += f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * query);
        }
        Some((dot / norm).clamp(0.0, 1.0))
    }
}

/// `field`'s vector against the dimensions the database's vectors have.
pub fn check_dimensions(field: &str, given: usize, expected: usize) -> Validated<()> {
    if given == expected {
        Ok(())
    } else {
        Err(dimensions_mismatch(field, given, expected))
    }
}

pub fn dimensions_mismatch(field: &str, given: usize, expected: usize) -> ValidationError {
    ValidationError::new(
        field,
        format!("has {given} dimensions, but the vectors of this database have {expected}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedding(values: &[f64]) -> Embedding {
        Embedding::new("embedding", values.to_vec()).unwrap()
    }

    #[test]
    fn a_vector_must_be_finite_non_empty_and_not_zero() {
        let field = |values: Vec<f64>| Embedding::new("embedding", values).unwrap_err().field;
        assert_eq!(field(vec![]), "embedding");
        assert_eq!(field(vec![0.0, 0.0]), "embedding");
        assert_eq!(field(vec![1.0, 1e39]), "embedding[1]");
        assert_eq!(field(vec![0.0; MAX_DIMENSIONS + 1]), "embedding");
        assert_eq!(embedding(&[3.0, 4.0]).norm(), 5.0);
    }

    #[test]
    fn the_signal_is_the_cosine_floored_at_zero() {
        let stored = embedding(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        let same_direction = QueryVector::new(&embedding(&[2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]));
        let signal = same_direction
            .signal(&stored.to_bytes(), stored.norm())
            .unwrap();
        assert!((signal - 1.0).abs() < 1e-6, "{signal}");

        let a = embedding(&[1.0, 0.0, 1.0, 0.0, 1.0]);
        let b = embedding(&[1.0, 1.0, 0.0, 0.0, 0.0]);
        let cosine = 1.0 / (3f64.sqrt() * 2f64.sqrt());
        let signal = QueryVector::new(&b)
            .signal(&a.to_bytes(), a.norm())
            .unwrap();
        assert!((signal - cosine).abs() < 1e-6, "{signal} vs {cosine}");

        let opposite = QueryVector::new(&embedding(&[-1.0, 0.0, -1.0, 0.0, -1.0]));
        assert_eq!(opposite.signal(&a.to_bytes(), a.norm()), Some(0.0));
        assert_eq!(opposite.signal(&[0; 8], 1.0), None);
    }

    #[test]
    fn the_quantized_bound_is_never_below_the_signal() {
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 2000) as f64 / 1000.0 - 1.0
        };
        for _ in 0..200 {
            let stored = embedding(&(0..48).map(|_| next()).collect::<Vec<_>>());
            let query = QueryVector::new(&embedding(&(0..48).map(|_| next()).collect::<Vec<_>>()));
            let exact = query.signal(&stored.to_bytes(), stored.norm()).unwrap();
            let (scale, bytes) = stored.quantized();
            let most = query.signal_at_most(scale, &bytes).unwrap();
            assert!(most >= exact, "{most} < {exact}");
            assert!(most - exact < 0.2, "a loose bound: {most} vs {exact}");
        }
        let same = embedding(&[3.0, 4.0]);
        let (scale, bytes) = same.quantized();
        let most = QueryVector::new(&same)
            .signal_at_most(scale, &bytes)
            .unwrap();
        assert!((most - 1.0).abs() < 1e-9, "{most}");
        assert_eq!(QueryVector::new(&same).signal_at_most(scale, &[1]), None);
    }

    #[test]
    fn dimensions_must_match() {
        assert!(check_dimensions("query_embedding", 3, 3).is_ok());
        let error = check_dimensions("query_embedding", 3, 384).unwrap_err();
        assert_eq!(error.field, "query_embedding");
        assert!(error.message.contains("384"), "{}", error.message);
    }
}
