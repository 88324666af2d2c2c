//! The ranking engine's contract, on every backend: the answer to a
//! retrieval is the true top of what the caller may see, whatever the
//! backend reads it from.
//!
//! These tests talk to the store directly rather than over HTTP, on
//! purpose: they check the engine against brute-force rankings of records
//! written in ways no request makes at will (stale decay sweeps at chosen
//! moments, retractions by rewrite), through the storage traits only, so
//! they hold for any backend. The engine is called through [`rank`] alone.

use std::cmp::Ordering;
use std::collections::HashMap;

use engram::domain::decay::{salience_at, Anchor, DecayState};
use engram::domain::record::{MemoryRecord, MemoryType, Sensitivity, Status};
use engram::domain::relevance::{Signals, Weights};
use engram::domain::retrieval::{Filters, RecordQuery};
use engram::domain::search::TextQuery;
use engram::domain::time::{format_rfc3339, Timestamp};
use engram::domain::vector::{Embedding, QueryVector};
use engram::store::{DecayChange, RecordPage, SalienceChange, StoreError, Transaction};
use serde_json::json;

use crate::backend::{backend_name, now, record, Backend};

/// The engine's answer to `query` at `now`: the one place the suite
/// reaches the engine.
fn rank(
    tx: &mut dyn Transaction,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    engram::store::ranking::query_records(&*tx.ranking_source(), query, now)
}

/// A small deterministic generator, so a failure names its seed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
}

/// Every record, any sensitivity and scope, by salience alone.
fn everything(limit: usize) -> RecordQuery {
    RecordQuery {
        memory_types: MemoryType::ALL.to_vec(),
        max_sensitivity: Sensitivity::Hyper,
        scopes: None,
        min_salience: 0.0,
        limit,
        answer_limit: limit,
        include_retracted: false,
        after: None,
        max_bytes: usize::MAX,
        page_size: usize::MAX,
        filters: Filters::default(),
        text: None,
        vector: None,
        weights: Weights::default(),
        bm25: Default::default(),
        turns: Default::default(),
        max_salience: 1.0,
        scan_records: 0,
    }
}

/// A query of `text`, every record.
fn text_query(text: &str, limit: usize) -> RecordQuery {
    RecordQuery {
        text: TextQuery::new(text),
        ..everything(limit)
    }
}

/// The ids of the engine's answer, read through the read pool.
#[track_caller]
fn ids(store: &mut Backend, query: &RecordQuery) -> Vec<String> {
    page(store, query)
        .records
        .into_iter()
        .map(|r| r.id)
        .collect()
}

#[track_caller]
fn page(store: &mut Backend, query: &RecordQuery) -> RecordPage {
    let backend = backend_name();
    store
        .read(|tx| rank(tx, query, now()))
        .unwrap_or_else(|e| panic!("the retrieval failed on {backend}: {e}"))
}

/// A semantic record whose object is `object`.
fn fact(id: &str, object: &str) -> MemoryRecord {
    record(
        id,
        json!({"type": "semantic", "sensitivity": "low",
               "payload": {"kind": "semantic", "subject": "s", "predicate": "p", "object": object}}),
    )
}

/// Rewrites stored record `id` with `change`, its salience untouched.
fn rewrite(tx: &mut dyn Transaction, id: &str, change: impl FnOnce(&mut MemoryRecord)) {
    let loaded = tx.get_for_update(id, now()).unwrap().expect("the record");
    let mut changed = loaded.record.clone();
    change(&mut changed);
    tx.update_record(&loaded.version, &changed, SalienceChange::Unchanged)
        .unwrap();
}

/// A record's place in an answer by salience alone: salience descending,
/// then layer order, then newest, then most recently stored (the higher
/// key).
fn salience_order(a: &Known, b: &Known) -> Ordering {
    b.salience
        .total_cmp(&a.salience)
        .then(
            a.record
                .memory_type
                .layer()
                .cmp(&b.record.memory_type.layer()),
        )
        .then(b.record.created_at.cmp(&a.record.created_at))
        .then(b.key.cmp(&a.key))
}

#[test]
fn the_visibility_query_filters_and_orders() {
    let mut store = Backend::open();
    let cases = [
        ("w", "working", "low", None, 0.5),
        ("s", "semantic", "low", Some("p1"), 0.5),
        ("hi", "semantic", "high", None, 0.9),
        ("other", "semantic", "low", Some("p2"), 0.9),
        ("top", "working", "public", None, 1.0),
    ];
    let records: Vec<MemoryRecord> = cases
        .into_iter()
        .map(|(id, kind, sensitivity, scope, salience)| {
            let payload = if kind == "working" {
                json!({"kind": "working", "thread_id": "t", "state": "done"})
            } else {
                json!({"kind": "semantic", "subject": "a", "predicate": "b"})
            };
            record(
                id,
                json!({"type": kind, "sensitivity": sensitivity, "scope": scope,
                       "salience": salience, "payload": payload}),
            )
        })
        .collect();
    store.insert(&records);
    let query = RecordQuery {
        max_sensitivity: Sensitivity::Medium,
        scopes: Some(vec!["p1".into()]),
        ..everything(10)
    };
    assert_eq!(ids(&mut store, &query), ["top", "w", "s"]);
    let two = RecordQuery {
        limit: 2,
        ..query.clone()
    };
    assert_eq!(ids(&mut store, &two), ["top", "w"]);
    let salient = RecordQuery {
        min_salience: 0.8,
        scopes: None,
        max_sensitivity: Sensitivity::Hyper,
        ..query.clone()
    };
    assert_eq!(ids(&mut store, &salient), ["top", "other", "hi"]);
    // No scope beyond the unscoped ones: those alone.
    let unscoped = RecordQuery {
        scopes: Some(Vec::new()),
        ..query
    };
    assert_eq!(ids(&mut store, &unscoped), ["top", "w"]);
    // Types are asked for in layer order; none asked, none answered.
    let working = RecordQuery {
        memory_types: vec![MemoryType::Working],
        ..everything(10)
    };
    assert_eq!(ids(&mut store, &working), ["top", "w"]);
    let none = RecordQuery {
        memory_types: Vec::new(),
        ..everything(10)
    };
    assert!(ids(&mut store, &none).is_empty());
}

fn random_filters(rng: &mut Lcg) -> Filters {
    let names = ["n0", "n1", "n2"];
    let mut filters = Filters::default();
    match rng.below(4) {
        0 => filters.thread_id = Some(rng.pick(&names).to_string()),
        1 => filters.subject = Some(rng.pick(&names).to_string()),
        _ => {}
    }
    if rng.below(3) == 0 {
        filters.tags = ["x", "y"][..1 + rng.below(2) as usize]
            .iter()
            .map(|t| t.to_string())
            .collect();
    }
    if rng.below(3) == 0 {
        filters.sources = vec!["agent-1".into(), "agent-3".into()];
    }
    if rng.below(3) == 0 {
        filters.created_after = Some(now() - chrono::Duration::days(10));
    }
    if rng.below(3) == 0 {
        filters.created_before = Some(now() - chrono::Duration::days(5));
    }
    filters
}

/// A stored record as the brute-force ranking sees it: the record as
/// made, its key, and its salience now, computed from what was written.
struct Known {
    record: MemoryRecord,
    key: i64,
    salience: f64,
}

/// Records with random decay states, their stored salience as of random
/// past sweeps (or none), some retracted by a rewrite, against a
/// brute-force ranking of every record at its current salience.
#[test]
fn the_answer_is_the_true_top_by_current_salience_whatever_the_sweep_age() {
    let types = [
        MemoryType::Working,
        MemoryType::Semantic,
        MemoryType::Episodic,
    ];
    for seed in 1..=4 {
        let mut store = Backend::open();
        let mut rng = Lcg(seed);
        let mut made = Vec::new();
        // More records per range than a first page holds.
        for i in 0..800 {
            let memory_type = rng.pick(&types);
            let name = rng.pick(&["n0", "n1", "n2"]);
            let payload = match memory_type {
                MemoryType::Working => {
                    json!({"kind": "working", "thread_id": name, "state": "done"})
                }
                MemoryType::Semantic => {
                    json!({"kind": "semantic", "subject": name, "predicate": "b"})
                }
                _ => json!({"kind": "episodic"}),
            };
            let tags: Vec<&str> = ["x", "y", "z"]
                .into_iter()
                .filter(|_| rng.below(2) == 0)
                .collect();
            let source = rng.pick(&["agent-1", "agent-2", "agent-3"]);
            let sensitivity = rng.pick(&["public", "low"]);
            let scope = rng.pick(&[None, Some("a"), Some("b")]);
            // A few records recent, most days old.
            let age = if rng.below(6) == 0 {
                rng.below(600)
            } else {
                rng.below(3 * 86_400)
            } as i64;
            let reinforced = now() - chrono::Duration::seconds(age);
            // Creation order says nothing of freshness. Whole hours, so
            // records equal in salience and type often tie on age too and
            // their keys decide.
            let created = now() - chrono::Duration::seconds(age + rng.below(30 * 86_400) as i64);
            let created = created - chrono::Duration::seconds(created.timestamp() % 3600);
            // Mostly the initial 1.0, as ingested; few distinct values, so
            // ties occur.
            let salience = if rng.below(3) == 0 {
                (rng.below(5) as f64 + 1.0) / 5.0
            } else {
                1.0
            };
            let body = json!({
                "type": memory_type, "sensitivity": sensitivity, "scope": scope,
                "salience": salience,
                "created_at": format_rfc3339(&created),
                "lifecycle": {
                    "last_reinforced_at": format_rfc3339(&reinforced),
                    "pinned": rng.below(10) == 0,
                    "decay": {
                        "curve": if rng.below(2) == 0 { "linear" } else { "exponential" },
                        // Short half-lives: stored values far above current
                        // ones, as in a long gap between sweeps.
                        "half_life_seconds": if rng.below(5) > 0 {
                            60 + rng.below(3600)
                        } else {
                            86_400 + rng.below(30 * 86_400)
                        },
                        "min_salience": if rng.below(4) == 0 { 0.3 } else { 0.0 }
                    }
                },
                "payload": payload,
                "tags": tags,
                "provenance": {"created_by": source}
            });
            let r = record(&format!("r{i}"), body);
            // The last sweep, if any, ran somewhere between the
            // reinforcement and now (it leaves pinned records be).
            let swept_at = (rng.below(3) == 0 && !r.lifecycle.pinned)
                .then(|| reinforced + chrono::Duration::seconds(rng.below(age as u64 + 1) as i64));
            made.push((r, swept_at));
        }
        let records: Vec<MemoryRecord> = made.iter().map(|(r, _)| r.clone()).collect();
        store.insert(&records);
        let mut known: Vec<Known> = store.written(|tx| {
            let mut known = Vec::new();
            for (i, (r, swept_at)) in made.iter().enumerate() {
                let loaded = tx.get_for_update(&r.id, now())?.expect("stored");
                let state = DecayState {
                    anchor: Anchor {
                        salience: r.salience,
                        at: r.lifecycle.last_reinforced_at,
                    },
                    profile: &r.lifecycle.decay,
                    pinned: r.lifecycle.pinned,
                    created_at: r.created_at,
                };
                if let Some(swept_at) = swept_at {
                    // As the sweep writes it: the salience then, from then.
                    let change = DecayChange {
                        key: loaded.version.key,
                        version: loaded.version.number,
                        salience: salience_at(&state, *swept_at),
                    };
                    assert_eq!(tx.apply_decay(&[change], *swept_at)?, 1);
                }
                let mut record = loaded.record;
                // Some retracted, as revisions leave them (salience as it
                // was: retracted and live records must merge whatever the
                // values).
                if i % 7 == 0 {
                    let again = tx.get_for_update(&r.id, now())?.expect("stored");
                    record = again.record;
                    record.status = Status::Retracted;
                    tx.update_record(&again.version, &record, SalienceChange::Unchanged)?;
                }
                known.push(Known {
                    record,
                    key: loaded.version.key,
                    salience: salience_at(&state, now()),
                });
            }
            Ok(known)
        });
        // Reads give each record its salience now, whatever the sweep wrote.
        let keys: Vec<i64> = known.iter().map(|k| k.key).collect();
        let loaded = store.read(|tx| tx.load_records(&keys, now())).unwrap();
        for (stored, k) in loaded.iter().zip(&known) {
            assert_eq!(stored.id, k.record.id);
            assert_eq!(stored.status, k.record.status, "{}", k.record.id);
            assert!(
                (stored.salience - k.salience).abs() < 1e-9,
                "{}: read at {}, decays to {} on {}",
                k.record.id,
                stored.salience,
                k.salience,
                backend_name()
            );
        }
        for k in &mut known {
            k.record.salience = k.salience;
        }
        for _ in 0..30 {
            let mut memory_types: Vec<MemoryType> =
                types.iter().copied().filter(|_| rng.below(3) > 0).collect();
            if memory_types.is_empty() {
                memory_types.push(rng.pick(&types));
            }
            memory_types.sort_by_key(|t| t.layer());
            // Now and then more than a first page of a range holds.
            let limit = if rng.below(8) == 0 {
                40 + rng.below(60) as usize
            } else {
                1 + rng.below(10) as usize
            };
            let query = RecordQuery {
                memory_types,
                max_sensitivity: Sensitivity::ALL[rng.below(3) as usize],
                scopes: rng.pick(&[
                    None,
                    Some(vec!["a".to_string()]),
                    Some(vec!["a".into(), "b".into()]),
                ]),
                min_salience: rng.pick(&[0.0, 0.05, 0.3, 0.5]),
                include_retracted: rng.below(3) == 0,
                // A third of the queries filtered, each filter by chance:
                // by index (thread, subject, tags) and within the salience
                // ranges (sources, creation times).
                filters: if rng.below(3) == 0 {
                    random_filters(&mut rng)
                } else {
                    Filters::default()
                },
                ..everything(limit)
            };
            let mut expected: Vec<&Known> = known
                .iter()
                .filter(|k| query.filters.matches(&k.record))
                .filter(|k| query.include_retracted || k.record.status != Status::Retracted)
                .filter(|k| query.memory_types.contains(&k.record.memory_type))
                .filter(|k| k.record.sensitivity <= query.max_sensitivity)
                .filter(|k| match (&query.scopes, &k.record.scope) {
                    (Some(allowed), Some(scope)) => allowed.contains(scope),
                    _ => true,
                })
                .filter(|k| k.salience >= query.min_salience)
                .collect();
            expected.sort_by(|a, b| salience_order(a, b));
            expected.truncate(query.limit);
            let expected: Vec<&str> = expected.iter().map(|k| k.record.id.as_str()).collect();
            let answer = page(&mut store, &query);
            let actual: Vec<&str> = answer.records.iter().map(|r| r.id.as_str()).collect();
            assert_eq!(
                actual,
                expected,
                "on {}, seed {seed}, {query:?}",
                backend_name()
            );
            // Each record's score says its salience now.
            for (score, id) in answer.scores.iter().zip(&actual) {
                let k = known.iter().find(|k| k.record.id == *id).unwrap();
                assert_eq!(score.id, *id);
                assert!((score.salience - k.salience).abs() < 1e-9, "{id}");
            }
        }
    }
}

/// An answer cut by its byte budget or page size goes on where it
/// stopped: its pages, followed one after another, are the whole answer,
/// none skipped, none repeated.
#[test]
fn pages_of_an_answer_neither_skip_nor_repeat_records() {
    let mut store = Backend::open();
    let mut rng = Lcg(7);
    let records: Vec<MemoryRecord> = (0..120)
        .map(|i| {
            let object = "word ".repeat(1 + rng.below(20) as usize);
            let created = now() - chrono::Duration::hours(rng.below(3) as i64);
            record(
                &format!("p{i:03}"),
                json!({"type": "semantic", "sensitivity": "low",
                       // Few values: ties, decided by age and key.
                       "salience": rng.pick(&[0.2, 0.6, 1.0]),
                       "created_at": format_rfc3339(&created),
                       "lifecycle": {"decay": {"half_life_seconds": 3600}},
                       "payload": {"kind": "semantic", "subject": "s", "predicate": "p",
                                   "object": object}}),
            )
        })
        .collect();
    store.insert(&records);
    for (round, query) in [everything(100), text_query("word", 100)]
        .into_iter()
        .enumerate()
    {
        let whole = page(&mut store, &query);
        assert_eq!(whole.records.len(), 100, "round {round}");
        assert!(whole.next.is_none());
        for (max_bytes, page_size) in [(usize::MAX, 7), (2000, usize::MAX), (1, usize::MAX)] {
            let mut seen: Vec<String> = Vec::new();
            let mut next = RecordQuery {
                max_bytes,
                page_size,
                ..query.clone()
            };
            let mut at = now();
            loop {
                let answer = store.read(|tx| rank(tx, &next, at)).unwrap();
                assert!(!answer.records.is_empty(), "a page holds a record at least");
                assert!(answer.records.len() <= page_size);
                seen.extend(answer.records.into_iter().map(|r| r.id));
                let Some(cursor) = answer.next else {
                    break;
                };
                // The next page ranks as of the first one's moment, as the
                // service asks for it.
                at = engram::domain::time::from_micros(cursor.as_of);
                assert_eq!(at, now());
                next = RecordQuery {
                    limit: cursor.remaining,
                    after: Some(cursor),
                    ..next
                };
            }
            let expected: Vec<String> = whole.records.iter().map(|r| r.id.clone()).collect();
            assert_eq!(
                seen,
                expected,
                "on {}, round {round}, {max_bytes} bytes, pages of {page_size}",
                backend_name()
            );
        }
    }
}

/// Common words are left out while the rarer ones fill the answer, and
/// brought back when they do not; counted or not (the backend's upkeep
/// counts the terms retrievals found common), the answer is the same.
#[test]
fn common_words_give_way_to_rarer_ones_only_while_those_fill_the_answer() {
    // As many matches as make a word common.
    const COMMON: usize = 1000;
    let mut store = Backend::open();
    let mut records: Vec<MemoryRecord> = (0..COMMON)
        .map(|i| fact(&format!("c{i}"), "common filler"))
        .collect();
    records.extend((0..3).map(|i| fact(&format!("r{i}"), "rare")));
    store.insert(&records);
    for pass in ["before upkeep", "after upkeep"] {
        let found = ids(&mut store, &text_query("common rare", 2));
        assert_eq!(found.len(), 2, "{pass}: {found:?}");
        assert!(
            found.iter().all(|id| id.starts_with('r')),
            "{pass}: {found:?}"
        );
        // Three rare matches cannot fill five places: every word counts.
        let found = ids(&mut store, &text_query("common rare", 5));
        assert_eq!(found.len(), 5, "{pass}: {found:?}");
        assert!(
            found[..3].iter().all(|id| id.starts_with('r')),
            "{pass}: {found:?}"
        );
        assert!(
            found[3..].iter().all(|id| id.starts_with('c')),
            "{pass}: {found:?}"
        );
        // Common words alone: the newest matches.
        let last = COMMON - 1;
        assert_eq!(
            ids(&mut store, &text_query("filler common", 2)),
            [format!("c{last}"), format!("c{}", last - 1)],
            "{pass}"
        );
        store.writer.upkeep().expect("the upkeep runs");
    }
}

/// A record the caller may not see changes no score: relevance is
/// computed over what the caller may see alone.
#[test]
fn records_the_caller_may_not_see_change_no_score() {
    let mut store = Backend::open();
    let mut visible: Vec<MemoryRecord> = Vec::new();
    for (i, object) in [
        "apple pie recipe",
        "apple orchard",
        "pie crust",
        "recipe book with apple",
        "orchard pie apple apple",
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = fact(&format!("v{i}"), object);
        r.scope = (i % 2 == 0).then(|| "mine".to_string());
        visible.push(r);
    }
    store.insert(&visible);
    let query = RecordQuery {
        scopes: Some(vec!["mine".into()]),
        max_sensitivity: Sensitivity::Low,
        ..text_query("apple pie", 10)
    };
    let before = page(&mut store, &query);
    assert_eq!(before.records.len(), 5, "{:?}", before.scores);
    // The same words, many times, where the caller may not look: another
    // scope, a higher sensitivity, retracted.
    let mut hidden: Vec<MemoryRecord> = Vec::new();
    for i in 0..40 {
        let mut r = fact(&format!("h{i}"), ["apple", "pie", "apple pie"][i % 3]);
        match i % 3 {
            0 => r.scope = Some("theirs".into()),
            1 => r.sensitivity = Sensitivity::High,
            _ => {}
        }
        hidden.push(r);
    }
    store.insert(&hidden);
    store.written(|tx| {
        for i in (2..40).step_by(3) {
            rewrite(tx, &format!("h{i}"), |r| r.status = Status::Retracted);
        }
        Ok(())
    });
    let after = page(&mut store, &query);
    assert_eq!(after, before, "on {}", backend_name());
}

/// The vector scan gives exactly the answer of reading every visible
/// record's vector, whatever the trust, status, salience floor and limit,
/// with or without text; and that answer is the true top of the blended
/// scores.
#[test]
fn the_vector_scan_finds_the_true_top() {
    let mut store = Backend::open();
    let mut seed = 11u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let scopes = [None, Some("a"), Some("b")];
    let sensitivities = ["public", "low", "medium", "high"];
    let mut records = Vec::new();
    for i in 0..300 {
        let vector: Vec<f64> = (0..8).map(|_| next(2001) as f64 / 1000.0 - 1.0).collect();
        let kind = ["semantic", "episodic", "competence"][next(3) as usize];
        let payload = match kind {
            "semantic" => json!({"kind": "semantic", "subject": "s", "predicate": "p"}),
            "episodic" => json!({"kind": "episodic"}),
            _ => json!({"kind": "competence", "skill_name": "k"}),
        };
        let mut body = json!({"type": kind,
            "sensitivity": sensitivities[next(4) as usize],
            "salience": next(101) as f64 / 100.0,
            "embedding": vector,
            "payload": payload});
        if let Some(scope) = scopes[next(3) as usize] {
            body["scope"] = json!(scope);
        }
        records.push(record(&format!("v{i}"), body));
    }
    store.insert(&records);
    // Some retracted after the fact, by a rewrite of the record.
    store.written(|tx| {
        for i in (0..300).step_by(5) {
            rewrite(tx, &format!("v{i}"), |r| r.status = Status::Retracted);
        }
        Ok(())
    });
    for r in records.iter_mut().step_by(5) {
        r.status = Status::Retracted;
    }
    for round in 0..60 {
        let query_vector: Vec<f64> = (0..8).map(|_| next(2001) as f64 / 1000.0 - 1.0).collect();
        let embedding = Embedding::new("q", query_vector).unwrap();
        let limit = 1 + next(15) as usize;
        let mut query = RecordQuery {
            memory_types: [
                MemoryType::Semantic,
                MemoryType::Competence,
                MemoryType::Episodic,
            ][..1 + next(3) as usize]
                .to_vec(),
            max_sensitivity: Sensitivity::ALL[next(4) as usize],
            scopes: [None, Some(vec![]), Some(vec!["a".to_string()])][next(3) as usize].clone(),
            min_salience: [0.0, 0.3][next(2) as usize],
            include_retracted: next(2) == 0,
            vector: Some(QueryVector::new(&embedding)),
            ..everything(limit)
        };
        query.memory_types.sort_by_key(|t| t.layer());
        // Half the rounds blend in a text query.
        if round % 2 == 0 {
            query.text = TextQuery::new("k s");
        }
        let fast = page(&mut store, &query);
        // A filter every record passes takes the path that reads every
        // visible vector whole.
        let exact = RecordQuery {
            filters: Filters {
                created_after: Some(
                    engram::domain::time::parse_rfc3339("2000-01-01T00:00:00Z").unwrap(),
                ),
                ..Filters::default()
            },
            ..query.clone()
        };
        let full = page(&mut store, &exact);
        assert_eq!(
            fast.scores,
            full.scores,
            "on {}, round {round}",
            backend_name()
        );
        if query.text.is_some() {
            continue;
        }
        // By vector and salience alone, the scores a brute force gives
        // every visible record: the answer's are the best of them.
        let vector = query.vector.as_ref().unwrap();
        let mut expected: Vec<f64> = records
            .iter()
            .filter(|r| query.include_retracted || r.status != Status::Retracted)
            .filter(|r| query.memory_types.contains(&r.memory_type))
            .filter(|r| r.sensitivity <= query.max_sensitivity)
            .filter(|r| match (&query.scopes, &r.scope) {
                (Some(allowed), Some(scope)) => allowed.contains(scope),
                _ => true,
            })
            .filter(|r| r.salience >= query.min_salience)
            .map(|r| {
                let e = r.embedding.as_ref().unwrap();
                Signals {
                    text: None,
                    vector: vector.signal(&e.to_bytes(), e.norm()),
                    salience: r.salience,
                }
                .score(&query.weights, query.max_salience)
            })
            .collect();
        expected.sort_by(|a, b| b.total_cmp(a));
        expected.truncate(limit);
        let actual: Vec<f64> = fast.scores.iter().map(|s| s.score).collect();
        assert_eq!(actual.len(), expected.len(), "round {round}");
        for (a, e) in actual.iter().zip(&expected) {
            assert!(
                (a - e).abs() < 1e-6,
                "on {}, round {round}: {actual:?} against {expected:?}",
                backend_name()
            );
        }
    }
}

/// A record's vector is found as its record may be seen now: moved to
/// another scope or retracted by a rewrite, and back.
#[test]
fn a_vector_follows_its_record_visibility() {
    let mut store = Backend::open();
    let mut r = fact("a", "tea");
    r.embedding = Some(Embedding::new("embedding", vec![1.0, 0.0]).unwrap());
    let mut other = fact("b", "coffee");
    other.embedding = Some(Embedding::new("embedding", vec![0.0, 1.0]).unwrap());
    store.insert(&[r, other]);
    let by_vector = |scopes: Option<Vec<String>>, include_retracted: bool| RecordQuery {
        vector: Some(QueryVector::new(
            &Embedding::new("q", vec![1.0, 0.1]).unwrap(),
        )),
        scopes,
        include_retracted,
        ..everything(1)
    };
    let unscoped = by_vector(Some(Vec::new()), false);
    assert_eq!(ids(&mut store, &unscoped), ["a"]);
    store.written(|tx| {
        rewrite(tx, "a", |r| r.scope = Some("team".into()));
        Ok(())
    });
    assert_eq!(ids(&mut store, &unscoped), ["b"]);
    let team = by_vector(Some(vec!["team".into()]), false);
    assert_eq!(ids(&mut store, &team), ["a"]);
    store.written(|tx| {
        rewrite(tx, "a", |r| r.status = Status::Retracted);
        Ok(())
    });
    assert_eq!(ids(&mut store, &team), ["b"]);
    assert_eq!(ids(&mut store, &by_vector(None, true)), ["a"]);
    // A rewrite that brings a new vector moves the visibility too.
    store.written(|tx| {
        rewrite(tx, "a", |r| {
            r.scope = None;
            r.status = Status::Active;
            r.embedding = Some(Embedding::new("embedding", vec![0.9, 0.1]).unwrap());
        });
        Ok(())
    });
    assert_eq!(ids(&mut store, &unscoped), ["a"]);
    // A state retracted by a newer one leaves the scan with it.
    let mut state = record(
        "w",
        json!({"type": "working", "sensitivity": "low", "salience": 1.0,
               "payload": {"kind": "working", "thread_id": "t", "state": "executing"}}),
    );
    state.embedding = Some(Embedding::new("embedding", vec![1.0, 0.1]).unwrap());
    store.insert(&[state]);
    assert_eq!(ids(&mut store, &unscoped), ["w"]);
    let entry = engram::domain::record::Attribution::new("writer", "a newer state")
        .entry(engram::domain::record::AuditAction::Revise, now());
    let retracted =
        store.written(|tx| tx.retract_current_states("t", None, Sensitivity::Low, &entry, now()));
    assert_eq!(retracted, ["w"]);
    assert_eq!(ids(&mut store, &unscoped), ["a"]);
    // Still there for a caller who asks for retracted records, at the
    // salience of 0 the retraction left it with.
    let all = RecordQuery {
        limit: 3,
        answer_limit: 3,
        ..by_vector(Some(Vec::new()), true)
    };
    let answer = page(&mut store, &all);
    let found: Vec<(&str, f64)> = answer
        .scores
        .iter()
        .map(|s| (s.id.as_str(), s.salience))
        .collect();
    assert_eq!(found, [("a", 1.0), ("w", 0.0), ("b", 1.0)]);
}

/// What text finds follows the writes: stemmed words, a rewrite's new
/// text and not its old, nothing of an erased record.
#[test]
fn the_text_index_follows_inserts_rewrites_and_erasures() {
    let mut store = Backend::open();
    store.insert(&[fact("a", "running marathons"), fact("b", "green tea")]);
    let found = |store: &mut Backend, text: &str| ids(store, &text_query(text, 10));
    // Stemmed: "run" finds "running".
    assert_eq!(found(&mut store, "run"), ["a"]);
    assert_eq!(found(&mut store, "tea or coffee?"), ["b"]);
    store.written(|tx| {
        rewrite(tx, "b", |r| r.payload = fact("b", "black coffee").payload);
        Ok(())
    });
    assert!(found(&mut store, "tea").is_empty());
    assert_eq!(found(&mut store, "coffee"), ["b"]);
    store.written(|tx| {
        let key = tx.get_for_update("a", now())?.unwrap().version.key;
        tx.erase_records(&[key], false)
    });
    assert!(found(&mut store, "marathon").is_empty());
    assert_eq!(found(&mut store, "coffee green black"), ["b"]);
}

/// No client text is a query error, whatever the query syntax of the
/// backend's index.
#[test]
fn no_client_text_is_a_query_error() {
    let mut store = Backend::open();
    store.insert(&[fact("a", "near the end")]);
    for text in [
        "\"unbalanced",
        "a\" OR \"b",
        "prefix*",
        "NEAR(a b, 2)",
        "-excluded",
        "(open",
        "close)",
        "AND OR NOT",
        "col:umn",
        "^start",
        "{a b}: c",
        "'single'",
        "a & b | !c <-> d",
        "ünïcödé ✓ 日本語",
        "\u{0}",
        "%_\\",
    ] {
        let query = text_query(text, 10);
        let backend = backend_name();
        store
            .read(|tx| rank(tx, &query, now()))
            .unwrap_or_else(|e| panic!("{text:?} on {backend}: {e}"));
    }
    assert_eq!(ids(&mut store, &text_query("NEAR", 10)), ["a"]);
}

/// A job rolled back to its savepoint, or a transaction rolled back
/// whole, leaves nothing to find; within a transaction, the last rewrite
/// is what is found, and a removal whose job failed is undone.
#[test]
fn what_is_found_is_what_was_committed() {
    let mut store = Backend::open();
    store.insert(&[fact("a", "rowing"), fact("d", "diving")]);
    store.writer.begin().unwrap();
    store
        .job(|tx| tx.insert_record(&fact("k", "kayaking")))
        .unwrap();
    let failed: Result<(), StoreError> = store.job(|tx| {
        tx.insert_record(&fact("f", "fencing"))?;
        Err(StoreError::Database("the job failed".into()))
    });
    assert!(failed.is_err());
    store
        .job(|tx| {
            // Inserted and erased in one transaction: nothing at all.
            tx.insert_record(&fact("e", "sculling"))?;
            let key = tx.get_for_update("e", now())?.unwrap().version.key;
            tx.erase_records(&[key], false)?;
            // Rewritten twice: the last text is the one found.
            rewrite(tx, "a", |r| r.payload = fact("a", "sculling").payload);
            rewrite(tx, "a", |r| r.payload = fact("a", "canoeing").payload);
            Ok(())
        })
        .unwrap();
    // A removal whose job failed leaves the record where it was.
    let failed: Result<(), StoreError> = store.job(|tx| {
        let key = tx.get_for_update("d", now())?.unwrap().version.key;
        tx.erase_records(&[key], false)?;
        Err(StoreError::Database("the job failed".into()))
    });
    assert!(failed.is_err());
    store.writer.commit().unwrap();
    // A transaction rolled back whole leaves nothing either.
    store.writer.begin().unwrap();
    store
        .job(|tx| tx.insert_record(&fact("s", "surfing")))
        .unwrap();
    store.writer.rollback();
    let found = |store: &mut Backend, text: &str| ids(store, &text_query(text, 10));
    assert_eq!(found(&mut store, "kayak"), ["k"]);
    for gone in ["fence", "rowing", "sculling", "surfing"] {
        assert!(found(&mut store, gone).is_empty(), "{gone}");
    }
    assert_eq!(found(&mut store, "canoeing"), ["a"]);
    assert_eq!(found(&mut store, "dive"), ["d"]);
    let mut all = ids(&mut store, &everything(10));
    all.sort();
    assert_eq!(all, ["a", "d", "k"]);
    // A transaction after a rollback writes as any other.
    store.insert(&[fact("t", "tennis")]);
    assert_eq!(found(&mut store, "tennis"), ["t"]);
}

/// Scores of a text query rank the records by relevance, so that a
/// record with more of the query's words comes first, all else equal;
/// and a record without any of them is not found.
#[test]
fn text_relevance_ranks_by_the_words_a_record_shares() {
    let mut store = Backend::open();
    store.insert(&[
        fact("one", "blue whale"),
        fact("two", "blue whale song"),
        fact("none", "red fox"),
        fact("three", "the song of the blue whale"),
    ]);
    let answer = page(&mut store, &text_query("blue whale song", 10));
    let found: Vec<&str> = answer.records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(found[2], "one", "{found:?}");
    let texts: HashMap<&str, f64> = answer
        .scores
        .iter()
        .map(|s| (s.id.as_str(), s.text.expect("a text signal")))
        .collect();
    assert!(texts["two"] > texts["one"], "{texts:?}");
    assert!(texts["three"] > texts["one"], "{texts:?}");
    assert_eq!(
        answer
            .scores
            .iter()
            .map(|s| s.text.unwrap())
            .fold(0.0, f64::max),
        1.0,
        "the best is the measure of the others"
    );
}
