//! The text analyser: what a text's words are for the full-text indexes.
//! Both backends index, and query, what [`terms`] makes of a text, so the
//! same text is found by the same words whichever stores it.
//!
//! A term is a run of letters and digits after Unicode compatibility
//! folding (NFKD, combining marks dropped: `café` is `cafe`, `ﬁle` is
//! `file`) and lower-casing, stemmed with the Snowball English stemmer
//! (Porter2): `deploy`, `deploys`, `deployed` and `deployment` are all
//! `deploy`; `policy` and `policies` are `polici`.

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Longer runs (encoded blobs, hashes) are no words anyone searches by.
pub const MAX_TERM_CHARS: usize = 64;

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The text folded: compatibility decomposition, combining marks
/// dropped, lower-cased. (ASCII, most text, needs only the last.)
fn fold(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Words stemmed lately, by the thread that stemmed them: the words of
/// a memory repeat, and a look-up costs a fraction of stemming.
const STEMS_KEPT: usize = 16_384;

thread_local! {
    static STEMS: std::cell::RefCell<std::collections::HashMap<String, String>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The words of a text, folded and in order, before stemming.
pub fn words(text: &str) -> Vec<String> {
    fold(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && w.chars().count() <= MAX_TERM_CHARS)
        .map(str::to_string)
        .collect()
}

/// A folded word's term.
pub fn stem(word: &str) -> String {
    STEMS.with(|stems| {
        let mut stems = stems.borrow_mut();
        if let Some(stem) = stems.get(word) {
            return stem.clone();
        }
        if stems.len() >= STEMS_KEPT {
            stems.clear();
        }
        let stem = STEMMER.stem(word).into_owned();
        stems.insert(word.to_string(), stem.clone());
        stem
    })
}

/// The terms of a text, in order, repeats kept.
pub fn terms(text: &str) -> Vec<String> {
    words(text).iter().map(|w| stem(w)).collect()
}

/// The text as the full-text indexes hold it: its terms, space separated.
pub fn indexed(text: &str) -> String {
    terms(text).join(" ")
}

/// A text as the full-text indexes and ranking take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysed {
    /// Its terms, space separated, as [`indexed`] makes them.
    pub text: String,
    /// How many terms it has, repeats counted: its length for BM25.
    pub length: i64,
    /// The terms it has more than once, each with how often, as
    /// `term count term count …` in term order; `None` when no term
    /// repeats (most texts). Read back with [`term_frequency`].
    pub repeats: Option<String>,
    /// Each term it has once, in term order, space separated.
    pub distinct: String,
}

/// The terms of a text analysed into `distinct` and `repeats` (as
/// [`Analysed`] keeps them), each as often as the text has it, in term
/// order: the same terms as its `text`, in another order.
pub fn terms_text(distinct: &str, repeats: Option<&str>) -> String {
    let extra: std::collections::BTreeMap<&str, usize> = repeats
        .map(|r| {
            let words: Vec<&str> = r.split(' ').collect();
            words
                .chunks(2)
                .filter_map(|pair| match pair {
                    [term, n] => Some((*term, n.parse::<usize>().ok()?.saturating_sub(1))),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut terms = Vec::new();
    for term in distinct.split(' ').filter(|t| !t.is_empty()) {
        terms.push(term);
        for _ in 0..extra.get(term).copied().unwrap_or(0) {
            terms.push(term);
        }
    }
    terms.join(" ")
}

pub fn analyse(text: &str) -> Analysed {
    let terms = terms(text);
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for term in &terms {
        *counts.entry(term).or_default() += 1;
    }
    let repeats: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(term, n)| format!("{term} {n}"))
        .collect();
    Analysed {
        length: terms.len() as i64,
        repeats: (!repeats.is_empty()).then(|| repeats.join(" ")),
        distinct: counts.keys().copied().collect::<Vec<_>>().join(" "),
        text: terms.join(" "),
    }
}

/// How often a text with `repeats` (of [`Analysed`]) that has `term`
/// has it.
pub fn term_frequency(repeats: Option<&str>, term: &str) -> f64 {
    repeated(repeats)
        .find(|(t, _)| *t == term)
        .map_or(1.0, |(_, times)| f64::from(times))
}

/// The terms of `repeats` (of [`Analysed`]) and how often the text has
/// each.
pub fn repeated(repeats: Option<&str>) -> impl Iterator<Item = (&str, u32)> {
    let mut parts = repeats.unwrap_or_default().split(' ');
    std::iter::from_fn(move || loop {
        let (term, times) = (parts.next()?, parts.next()?);
        if let Ok(times) = times.parse() {
            return Some((term, times));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terms_kept_apart_make_the_texts_terms_again() {
        for text in [
            "",
            "one",
            "the run ran and the walk ran running",
            "a a a b b c 1.21 1.21",
        ] {
            let a = analyse(text);
            let mut again: Vec<String> = terms_text(&a.distinct, a.repeats.as_deref())
                .split(' ')
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect();
            let mut original: Vec<String> = a
                .text
                .split(' ')
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect();
            again.sort();
            original.sort();
            assert_eq!(again, original, "{text:?}");
        }
    }

    #[test]
    fn forms_of_a_word_are_one_term() {
        for (a, b) in [
            ("deploy", "deployment"),
            ("deploy", "deployed"),
            ("run", "running"),
            ("policy", "policies"),
            ("connect", "connections"),
        ] {
            assert_eq!(terms(a), terms(b), "{a} / {b}");
        }
        assert_ne!(terms("general"), terms("generous"));
    }

    #[test]
    fn text_is_folded_split_and_bounded() {
        assert_eq!(
            indexed("Café CRASHED at 03:14 — ﬁle build_failure, naïve"),
            "cafe crash at 03 14 file build failur naiv"
        );
        assert_eq!(indexed("日本語 ✓ x"), "日本語 x");
        assert_eq!(indexed(&"a".repeat(MAX_TERM_CHARS + 1)), "");
        assert_eq!(
            indexed(&"a".repeat(MAX_TERM_CHARS)),
            "a".repeat(MAX_TERM_CHARS)
        );
        assert_eq!(indexed("  \u{0} ?! "), "");
        // Repeats stay: they count for how often a record says a word.
        assert_eq!(terms("run, ran, running"), ["run", "ran", "run"]);
    }

    #[test]
    fn a_text_knows_its_length_and_its_repeated_terms() {
        let a = analyse("Run, ran, running; runs and walks: walking");
        assert_eq!(a.text, "run ran run run and walk walk");
        assert_eq!(a.length, 7);
        assert_eq!(a.repeats.as_deref(), Some("run 3 walk 2"));
        assert_eq!(a.distinct, "and ran run walk");
        assert_eq!(term_frequency(a.repeats.as_deref(), "run"), 3.0);
        assert_eq!(term_frequency(a.repeats.as_deref(), "walk"), 2.0);
        assert_eq!(term_frequency(a.repeats.as_deref(), "ran"), 1.0);
        let plain = analyse("one two");
        assert_eq!((plain.length, plain.repeats), (2, None));
        assert_eq!(term_frequency(None, "one"), 1.0);
    }
}
