//! Entity resolution for `auto` topic placement: whether an observation's
//! title names a topic already known. Deterministic and explainable: a
//! title is split into the tokens that tell things apart (numbers,
//! versions, identifiers: `v3`, `us-east-1`, `5`), the words that name
//! the thing (its core), the generic words that say what sort of thing it
//! is (`service`, `cache`, `database`), and filler (articles, prepositions).
//! Two titles can name the same thing only when their distinguishing tokens
//! agree; they do when their cores agree, whatever generic words one adds
//! ("Redis" / "Redis cache"); otherwise their words are compared, each
//! weighing by how rare it is among the topics compared.

use std::collections::{BTreeMap, BTreeSet};

/// Words that say nothing of which thing a title names.
const STOP: &[&str] = &[
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "of", "on", "or", "the",
    "to", "via", "with",
];

/// Words that say what sort of thing a title names, not which one.
const GENERIC: &[&str] = &[
    "api",
    "app",
    "application",
    "backend",
    "cache",
    "cluster",
    "component",
    "database",
    "endpoint",
    "frontend",
    "instance",
    "job",
    "library",
    "module",
    "node",
    "platform",
    "project",
    "queue",
    "repository",
    "server",
    "service",
    "store",
    "system",
    "team",
    "tool",
    "worker",
];

/// Abbreviations and their written-out forms, compared as one word.
const SAME_WORD: &[(&str, &str)] = &[
    ("app", "application"),
    ("auth", "authentication"),
    ("cfg", "configuration"),
    ("config", "configuration"),
    ("db", "database"),
    ("dept", "department"),
    ("env", "environment"),
    ("eng", "engineering"),
    ("infra", "infrastructure"),
    ("k8s", "kubernetes"),
    ("mgmt", "management"),
    ("msg", "message"),
    ("ops", "operations"),
    ("pg", "postgres"),
    ("postgresql", "postgres"),
    ("prod", "production"),
    ("repo", "repository"),
    ("srv", "server"),
    ("svc", "service"),
];

/// A title, taken apart for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// The title as compared for sameness: lower case, single spaces, no
    /// punctuation between words, no leading article.
    pub normal: String,
    /// Tokens holding a digit: numbers, versions, regions, ids.
    pub distinct: BTreeSet<String>,
    /// The words naming the thing, singular and written out.
    pub core: BTreeSet<String>,
    /// The generic words, singular and written out.
    pub generic: BTreeSet<String>,
}

impl Name {
    pub fn parse(title: &str) -> Name {
        let mut distinct = BTreeSet::new();
        let mut core = BTreeSet::new();
        let mut generic = BTreeSet::new();
        let mut words: Vec<String> = Vec::new();
        for piece in title.split(|c: char| !(c.is_alphanumeric() || "-._/".contains(c))) {
            let piece = piece.trim_matches(|c: char| !c.is_alphanumeric());
            if piece.is_empty() {
                continue;
            }
            let piece = piece.to_lowercase();
            // An abbreviation with a digit (`k8s`) is a word like any other.
            let abbreviation = SAME_WORD.iter().any(|(short, _)| *short == piece);
            if !abbreviation && piece.chars().any(|c| c.is_ascii_digit()) {
                // An identifier is one token: `us-east-1`, `v2.4`, `3`.
                let token = piece
                    .strip_prefix('v')
                    .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                distinct.insert(token.unwrap_or(&piece).to_string());
                words.push(piece);
                continue;
            }
            for word in piece.split(|c: char| !c.is_alphanumeric()) {
                if word.is_empty() {
                    continue;
                }
                words.push(word.to_string());
                if STOP.contains(&word) {
                    continue;
                }
                let word = canonical(word);
                if GENERIC.contains(&word.as_str()) {
                    generic.insert(word);
                } else {
                    core.insert(word);
                }
            }
        }
        if words.len() > 1 && matches!(words[0].as_str(), "the" | "a" | "an") {
            words.remove(0);
        }
        Name {
            normal: words.join(" "),
            distinct,
            core,
            generic,
        }
    }

    /// The words compared when neither title holds the other's core.
    fn words(&self) -> impl Iterator<Item = &String> {
        self.core.iter().chain(&self.generic)
    }
}

/// A word as compared: written out, singular.
fn canonical(word: &str) -> String {
    let word = SAME_WORD
        .iter()
        .find(|(short, _)| *short == word)
        .map_or(word, |(_, long)| long);
    let single = if let Some(stem) = word.strip_suffix("ies").filter(|s| s.len() >= 3) {
        format!("{stem}y")
    } else if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") {
        word[..word.len() - 1].to_string()
    } else {
        word.to_string()
    };
    // The singular of a written-out form may itself be one ("services").
    SAME_WORD
        .iter()
        .find(|(short, _)| *short == single)
        .map_or(single.clone(), |(_, long)| long.to_string())
}

/// The words to look a title up by in the topic word index (which holds
/// the words of titles as written): each word of `title`, its written-out
/// and abbreviated forms, singular and plural.
pub fn lookup_words(title: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for word in title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if STOP.contains(&word.as_str()) {
            continue;
        }
        let canon = canonical(&word);
        for form in std::iter::once(canon.as_str()).chain(
            SAME_WORD
                .iter()
                .filter(|(_, long)| *long == canon)
                .map(|(short, _)| *short),
        ) {
            words.insert(form.to_string());
            match form.strip_suffix('y') {
                Some(stem) => words.insert(format!("{stem}ies")),
                None => words.insert(format!("{form}s")),
            };
        }
        words.insert(word);
    }
    words
}

/// The score of one name given two sorts of thing ("Search API" /
/// "Search cluster"): likely related, too unlike to be one thing unasked.
pub const OTHER_SORT: f64 = 0.6;

/// How much a generic word weighs against a core word.
const GENERIC_WEIGHT: f64 = 0.3;

/// How much a word weighs among `names` (the titles compared): less the
/// more of them hold it, so a word most topics share tells little.
pub fn rarity(names: &[&Name]) -> BTreeMap<String, f64> {
    let mut holders: BTreeMap<String, usize> = BTreeMap::new();
    for name in names {
        for word in name.words() {
            *holders.entry(word.clone()).or_default() += 1;
        }
    }
    holders
        .into_iter()
        .map(|(word, n)| (word, 1.0 / (1.0 + (n.max(1) as f64).ln())))
        .collect()
}

/// How likely `a` and `b` name the same thing, in [0, 1]: 0 when their
/// distinguishing tokens differ; 1 when they have the same words (up to
/// abbreviations, plurals, order and filler); 0.9 when one adds only
/// generic words to the other; [`OTHER_SORT`] when each has generic words
/// the other has not; otherwise the weighted share of
/// their words they have in common (`rarity` weighs core words; generic
/// ones weigh [`GENERIC_WEIGHT`]).
pub fn similarity(a: &Name, b: &Name, rarity: &BTreeMap<String, f64>) -> f64 {
    if a.distinct != b.distinct {
        return 0.0;
    }
    if a.core == b.core {
        if a.generic == b.generic {
            return 1.0;
        }
        // Nothing names either thing but sort words: "API" is not
        // "Service".
        if a.core.is_empty() && a.distinct.is_empty() {
            return 0.0;
        }
        // One says more of the same sort ("Redis" / "Redis cache"), or
        // they are two sorts of one name ("Search API" / "Search cluster").
        if a.generic.is_subset(&b.generic) || b.generic.is_subset(&a.generic) {
            return 0.9;
        }
        return OTHER_SORT;
    }
    let weight = |word: &String| {
        if a.generic.contains(word) || b.generic.contains(word) {
            GENERIC_WEIGHT
        } else {
            rarity.get(word).copied().unwrap_or(1.0)
        }
    };
    let all: BTreeSet<&String> = a.words().chain(b.words()).collect();
    let total: f64 = all.iter().map(|w| weight(w)).sum();
    if total == 0.0 {
        return 0.0;
    }
    let shared: f64 = all
        .iter()
        .filter(|w| a.words().any(|x| x == **w) && b.words().any(|x| x == **w))
        .map(|w| weight(w))
        .sum();
    shared / total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(a: &str, b: &str) -> f64 {
        similarity(&Name::parse(a), &Name::parse(b), &BTreeMap::new())
    }

    #[test]
    fn a_title_is_normalised_for_case_spacing_punctuation_and_a_leading_article() {
        assert_eq!(
            Name::parse("  The  Payment   Service! ").normal,
            "payment service"
        );
        assert_eq!(Name::parse("payment-service").normal, "payment service");
        assert_eq!(
            Name::parse("A").normal,
            "a",
            "an article alone is the title"
        );
        assert_eq!(Name::parse("us-east-1 gateway").normal, "us-east-1 gateway");
    }

    #[test]
    fn numbers_versions_and_ids_must_agree() {
        assert_eq!(score("crash topic 5", "crash topic 3"), 0.0);
        assert_eq!(score("Payments API v3", "Payments API v2"), 0.0);
        assert_eq!(score("gateway us-east-1", "gateway us-west-2"), 0.0);
        assert_eq!(score("Payments API v3", "payments api V3"), 1.0);
        assert_eq!(
            score("Payments API v3", "Payments API 3"),
            1.0,
            "v3 is version 3"
        );
        assert_eq!(score("Payments API", "Payments API v2"), 0.0);
    }

    #[test]
    fn abbreviations_plurals_and_generic_words_do_not_tell_things_apart() {
        assert_eq!(score("Billing DB", "Billing database"), 1.0);
        assert_eq!(score("Auth svc", "authentication service"), 1.0);
        assert_eq!(score("k8s cluster", "Kubernetes cluster"), 1.0);
        assert_eq!(score("Payments service", "Payment services"), 1.0);
        assert_eq!(score("Redis", "Redis cache"), 0.9);
        assert_eq!(score("Billing", "Billing database"), 0.9);
        assert_eq!(
            score("API", "Service"),
            0.0,
            "sort words alone name nothing"
        );
        assert_eq!(score("Search API", "Search cluster"), OTHER_SORT);
    }

    #[test]
    fn different_names_do_not_match() {
        assert_eq!(score("Alice", "Search service"), 0.0);
        assert!(score("Alice Smith", "Alice Jones") < 0.5);
        assert!(score("Alice", "Alice Smith") <= 0.5);
        assert!(score("Payment service", "Payment gateway service") < 0.7);
    }

    #[test]
    fn a_title_is_looked_up_by_its_other_forms_too() {
        let words = lookup_words("Auth svc");
        for form in ["auth", "authentication", "svc", "service", "services"] {
            assert!(words.contains(form), "{form} in {words:?}");
        }
        assert!(lookup_words("Payments").contains("payment"));
        assert!(lookup_words("the policy").contains("policies"));
        assert!(!lookup_words("the policy").contains("the"));
    }

    #[test]
    fn a_word_many_titles_share_weighs_less() {
        let names: Vec<Name> = [
            "search index",
            "search api",
            "search ranking",
            "search cache",
        ]
        .iter()
        .map(|t| Name::parse(t))
        .collect();
        let refs: Vec<&Name> = names.iter().collect();
        let weights = rarity(&refs);
        assert!(weights["search"] < weights["ranking"]);
        let (a, b) = (Name::parse("search ranking"), Name::parse("search index"));
        assert!(similarity(&a, &b, &weights) < similarity(&a, &b, &BTreeMap::new()));
    }
}
