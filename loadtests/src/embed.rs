//! A deterministic test embedder: no model, the same vector for the same
//! text on every machine. Each word (lowercased, a few English suffixes
//! cut, function words left out) and each of its character trigrams adds
//! a signed weight to dimensions picked by hashing it, and the sum is
//! scaled to length 1. Texts that share words or word parts point the same
//! way, which is what retrieval by vector is measured on in the recall
//! run and exercised on in engram's tests.

/// The dimensions of the vectors of the recall run and the load tests.
pub const DIMENSIONS: usize = 384;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "me", "my", "of", "on", "or", "the", "this", "to", "was", "what", "when", "which",
    "who", "with",
];

fn hash(text: &str, seed: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn stem(word: &str) -> &str {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            if stem.len() >= 3 {
                return stem;
            }
        }
    }
    word
}

fn add(vector: &mut [f32], feature: &str, weight: f32) {
    for seed in 0..2u64 {
        let h = hash(feature, seed);
        let dimension = (h % vector.len() as u64) as usize;
        let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
        vector[dimension] += sign * weight;
    }
}

/// The vector of `text`, `dimensions` long and of length 1.
pub fn embed(text: &str, dimensions: usize) -> Vec<f32> {
    let mut vector = vec![0.0f32; dimensions.max(1)];
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() || STOP_WORDS.contains(&word) {
            continue;
        }
        let word = stem(word);
        add(&mut vector, word, 1.0);
        let padded: Vec<char> = format!("^{word}$").chars().collect();
        for trigram in padded.windows(3) {
            add(&mut vector, &trigram.iter().collect::<String>(), 0.3);
        }
    }
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm == 0.0 {
        // Nothing to go on: a fixed direction rather than no vector.
        vector[0] = 1.0;
    } else {
        for v in &mut vector {
            *v /= norm;
        }
    }
    vector
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn same_text_same_vector_and_shared_words_point_alike() {
        let a = embed("Go linker cache corrupted", DIMENSIONS);
        assert_eq!(a, embed("Go linker cache corrupted", DIMENSIONS));
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
        let near = embed("fix the go linker cache", DIMENSIONS);
        let far = embed("user prefers dark editor themes", DIMENSIONS);
        assert!(cosine(&a, &near) > cosine(&a, &far) + 0.2);
        assert_eq!(embed("", 8)[0], 1.0);
    }
}
