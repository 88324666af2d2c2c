//! The storage traits' contracts, on every backend: what the service may
//! rely on of any database, as the doc comments of `engram::store` state
//! it (conditional writes, taken ids and names, dimensions, versions of
//! topic fields, leases...).
//!
//! These tests talk to the store directly rather than over HTTP, on
//! purpose: a contract is about the traits, and most of what they promise
//! (a write refused because another came first, a stale sweep skipped) no
//! request can bring about at a chosen moment. They use the traits alone,
//! never SQL, so each holds for any backend.

use std::collections::BTreeSet;

use engram::domain::access::{ApiKey, Grant, Role};
use engram::domain::decay::{salience_at, DecayState};
use engram::domain::erasure::TableCounts;
use engram::domain::record::{
    AuditAction, AuditEntry, MemoryRecord, MemoryType, Relation, Sensitivity, Status,
    SCHEDULER_ACTOR,
};
use engram::domain::time::Timestamp;
use engram::domain::topic::{index_words, Topic};
use engram::domain::trust::TrustContext;
use engram::domain::vector::{Embedding, QueryVector};
use engram::store::{
    DecayChange, Embedded, ErasureEntry, FieldVersion, JobClaim, JobRunRecord, JobSetting,
    LogPlace, LogReach, SalienceChange, Step, StoreError, Tombstone, Transaction, WordReach,
};
use serde_json::json;

use crate::backend::{at, backend_name, now, record, Backend};

/// A semantic record about `subject` whose object is `object`.
/// Links `record` to `target` by `predicate`, as revisions do.
fn link(record: &mut MemoryRecord, predicate: &str, target: &str) {
    record.relations.push(Relation {
        predicate: predicate.into(),
        target_id: target.into(),
        weight: 1.0,
        created_at: now(),
    });
}

fn fact(id: &str, object: &str) -> MemoryRecord {
    record(
        id,
        json!({"type": "semantic", "sensitivity": "low",
               "payload": {"kind": "semantic", "subject": "user", "predicate": "likes",
                           "object": object}}),
    )
}

/// `fact` with a vector of its own.
fn fact_with(id: &str, object: &str, vector: &[f64]) -> MemoryRecord {
    let mut r = fact(id, object);
    r.embedding = Some(Embedding::new("embedding", vector.to_vec()).unwrap());
    r
}

/// The key storage gave record `id`.
fn key_of(tx: &mut dyn Transaction, id: &str) -> i64 {
    tx.get_for_update(id, now())
        .unwrap()
        .unwrap_or_else(|| panic!("no record {id}"))
        .version
        .key
}

/// Asserts `result` failed as `expected` says, naming the backend.
#[track_caller]
fn assert_fails<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    expected: impl FnOnce(&StoreError) -> bool,
) {
    match result {
        Err(e) if expected(&e) => {}
        other => panic!("on {}: {other:?}", backend_name()),
    }
}

/// A trust of `max` over `scopes` (none: every scope).
fn trust(max: Sensitivity, scopes: &[&str]) -> TrustContext {
    TrustContext {
        max_sensitivity: max,
        authenticated: true,
        actor_id: Some("tester".into()),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        scopes_narrowed: false,
    }
}

#[test]
fn a_record_round_trips_with_all_its_parts() {
    let mut store = Backend::open();
    let mut original = record(
        "r1",
        json!({
            "type": "competence", "sensitivity": "high", "scope": "p", "tags": ["z", "a"],
            "provenance": {"sources": [{"kind": "artifact", "ref": "doc", "hash": "h",
                                        "timestamp": "2025-01-01T00:00:00Z"}],
                           "created_by": "me"},
            "relations": [{"predicate": "supports", "target_id": "other", "weight": 0.5}],
            "lifecycle": {"decay": {"curve": "linear", "max_age_seconds": 60}, "pinned": true,
                          "deletion_policy": "never"},
            "payload": {"kind": "competence", "skill_name": "s",
                        "performance": {"success_count": 3, "failure_count": 1}}
        }),
    );
    original.embedding = Some(Embedding::new("embedding", vec![0.5, -0.25, 1.0]).unwrap());
    store.insert(std::slice::from_ref(&original));
    // A record read back has no vector: it is kept for ranking alone.
    let expected = MemoryRecord {
        embedding: None,
        ..original.clone()
    };
    let read = store.read(|tx| tx.get_record("r1", now())).unwrap();
    assert_eq!(read, Some(expected.clone()), "on {}", backend_name());
    // The writer reads what it wrote, in its own transaction too.
    let written = store.written(|tx| tx.get_record("r1", now()));
    assert_eq!(written, Some(expected.clone()));
    let loaded = store.written(|tx| tx.get_for_update("r1", now())).unwrap();
    assert_eq!(loaded.record, expected);
    assert_eq!(loaded.version.audit_len, original.audit_log.len());
    assert_eq!(
        store.read(|tx| tx.get_record("missing", now())).unwrap(),
        None
    );
    assert_eq!(
        store
            .read(|tx| tx.get_for_update("missing", now()))
            .unwrap(),
        None
    );
    // Who may see it.
    let visibility = store
        .read(|tx| tx.record_visibility("r1"))
        .unwrap()
        .unwrap();
    assert_eq!(visibility.sensitivity, Sensitivity::High);
    assert_eq!(visibility.scope.as_deref(), Some("p"));
    assert_eq!(
        store.read(|tx| tx.record_visibility("missing")).unwrap(),
        None
    );
    // The payload's size as served; missing ones count nothing.
    let payload = serde_json::to_string(&original.payload).unwrap().len() as u64;
    let bytes = store
        .read(|tx| tx.payload_bytes(&["r1".into(), "missing".into()]))
        .unwrap();
    assert_eq!(bytes, payload, "on {}", backend_name());
    // Loaded by key, in the order given, missing ones left out.
    store.insert(&[fact("r2", "tea")]);
    let (k1, k2) = store.written(|tx| Ok((key_of(tx, "r1"), key_of(tx, "r2"))));
    let loaded = store
        .read(|tx| tx.load_records(&[k2, k1 + k2 + 100, k1], now()))
        .unwrap();
    let ids: Vec<&str> = loaded.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["r2", "r1"]);
    assert_eq!(loaded[1], expected);
    store.read(|tx| tx.ping()).unwrap();
}

#[test]
fn an_id_is_never_taken_twice() {
    let mut store = Backend::open();
    store.insert(&[fact("a", "tea")]);
    assert_fails(
        store.write(|tx| tx.insert_record(&fact("a", "coffee"))),
        |e| matches!(e, StoreError::AlreadyExists(id) if id == "a"),
    );
    // Many at once: the taken one fails the job, which is undone whole.
    let (b, taken, c) = (fact("b", "water"), fact("a", "juice"), fact("c", "milk"));
    assert_fails(
        store.write(|tx| tx.insert_records(&[&b, &taken, &c])),
        |e| matches!(e, StoreError::AlreadyExists(id) if id == "a"),
    );
    for id in ["b", "c"] {
        assert_eq!(store.read(|tx| tx.get_record(id, now())).unwrap(), None);
    }
    // Twice in one batch.
    assert_fails(
        store.write(|tx| tx.insert_records(&[&b, &b])),
        |e| matches!(e, StoreError::AlreadyExists(id) if id == "b"),
    );
    // The first stands as it was; the writer goes on.
    let stored = store.read(|tx| tx.get_record("a", now())).unwrap().unwrap();
    assert_eq!(stored, fact("a", "tea"));
    store.insert(&[b, c]);
}

#[test]
fn an_update_appends_only_new_audit_entries_and_moves_the_version() {
    let mut store = Backend::open();
    store.insert(&[fact("r1", "tea")]);
    let loaded = store.written(|tx| tx.get_for_update("r1", now())).unwrap();
    assert_eq!(loaded.version.audit_len, 1);
    let mut changed = loaded.record.clone();
    changed.salience = 0.5;
    changed.tags = vec!["new".into()];
    changed.scope = Some("moved".into());
    changed.updated_at = at(10);
    changed.audit_log.push(AuditEntry {
        action: AuditAction::Revise,
        actor: "x".into(),
        timestamp: at(10),
        rationale: "why".into(),
        imported: false,
    });
    store.written(|tx| tx.update_record(&loaded.version, &changed, SalienceChange::SetAt(at(10))));
    let read = store.read(|tx| tx.get_record("r1", at(10))).unwrap();
    assert_eq!(read, Some(changed.clone()), "on {}", backend_name());
    let again = store.written(|tx| tx.get_for_update("r1", at(10))).unwrap();
    assert_eq!(again.version.key, loaded.version.key);
    assert_ne!(again.version.number, loaded.version.number);
    assert_eq!(again.version.audit_len, 2);
    // Entries already stored are not appended again.
    let mut next = again.record.clone();
    next.tags.push("more".into());
    store.written(|tx| tx.update_record(&again.version, &next, SalienceChange::Unchanged));
    let read = store
        .read(|tx| tx.get_record("r1", at(10)))
        .unwrap()
        .unwrap();
    assert_eq!(read.audit_log, changed.audit_log);
    assert_eq!(read.tags, ["new", "more"]);
}

#[test]
fn an_update_against_a_version_that_moved_on_is_refused() {
    let mut store = Backend::open();
    store.insert(&[fact("r1", "tea")]);
    let first = store.written(|tx| tx.get_for_update("r1", now())).unwrap();
    let second = store.written(|tx| tx.get_for_update("r1", now())).unwrap();
    let mut changed = first.record.clone();
    changed.tags = vec!["first".into()];
    store.written(|tx| tx.update_record(&first.version, &changed, SalienceChange::Unchanged));
    let mut lost = second.record.clone();
    lost.tags = vec!["second".into()];
    assert_fails(
        store.write(|tx| tx.update_record(&second.version, &lost, SalienceChange::Unchanged)),
        |e| matches!(e, StoreError::Changed(id) if id == "r1"),
    );
    let stored = store
        .read(|tx| tx.get_record("r1", now()))
        .unwrap()
        .unwrap();
    assert_eq!(stored.tags, ["first"], "the first change stands");
    // Gone: not found, whatever the version.
    store.written(|tx| tx.erase_records(&[first.version.key], false));
    assert_fails(
        store.write(|tx| tx.update_record(&first.version, &changed, SalienceChange::Unchanged)),
        |e| matches!(e, StoreError::NotFound(id) if id == "r1"),
    );
}

/// A change that sets salience makes the record decay from the new value
/// at that moment; one that leaves it keeps it decaying from where it did.
#[test]
fn salience_decays_from_where_the_last_change_set_it() {
    let mut store = Backend::open();
    let mut r = record(
        "r",
        json!({"type": "semantic", "sensitivity": "low", "salience": 0.8,
               "lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 3600}},
               "payload": {"kind": "semantic", "subject": "s", "predicate": "p"}}),
    );
    r.lifecycle.last_reinforced_at = now();
    store.insert(std::slice::from_ref(&r));
    let salience = |store: &mut Backend, when| {
        store
            .read(|tx| tx.get_record("r", when))
            .unwrap()
            .unwrap()
            .salience
    };
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(near(salience(&mut store, at(3600)), 0.4));
    // Untouched salience: still from the insert.
    let loaded = store
        .written(|tx| tx.get_for_update("r", at(3600)))
        .unwrap();
    let mut retagged = loaded.record.clone();
    retagged.tags = vec!["t".into()];
    store.written(|tx| tx.update_record(&loaded.version, &retagged, SalienceChange::Unchanged));
    assert!(near(salience(&mut store, at(7200)), 0.2));
    // Set to 1.0 an hour in: half of it an hour later.
    let loaded = store
        .written(|tx| tx.get_for_update("r", at(3600)))
        .unwrap();
    let mut reinforced = loaded.record.clone();
    reinforced.salience = 1.0;
    store.written(|tx| {
        tx.update_record(
            &loaded.version,
            &reinforced,
            SalienceChange::SetAt(at(3600)),
        )
    });
    let now_then = salience(&mut store, at(7200));
    assert!(near(now_then, 0.5), "on {}: {now_then}", backend_name());
}

#[test]
fn the_supersession_chain_is_read_oldest_first_and_a_cycle_once() {
    let mut store = Backend::open();
    let supersedes = |id: &str, older: &str| {
        let mut r = fact(id, id);
        link(&mut r, "supersedes", older);
        r
    };
    store.insert(&[
        fact("v1", "one"),
        supersedes("v2", "v1"),
        supersedes("v3", "v2"),
    ]);
    for start in ["v1", "v2", "v3"] {
        let chain = store
            .read(|tx| tx.supersession_chain(start, now()))
            .unwrap()
            .unwrap();
        let ids: Vec<&str> = chain.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["v1", "v2", "v3"], "from {start}");
    }
    assert_eq!(
        store
            .read(|tx| tx.supersession_chain("none", now()))
            .unwrap(),
        None
    );
    // c supersedes b supersedes a supersedes c: only stored data from
    // elsewhere can hold this, but the walk must end on it.
    store.insert(&[
        supersedes("a", "c"),
        supersedes("b", "a"),
        supersedes("c", "b"),
    ]);
    for start in ["a", "b", "c"] {
        let chain = store
            .read(|tx| tx.supersession_chain(start, now()))
            .unwrap()
            .unwrap();
        let mut ids: Vec<String> = chain.into_iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), 3, "from {start}: {ids:?}");
        ids.sort();
        assert_eq!(ids, ["a", "b", "c"]);
    }
}

/// A working state of `thread` in `scope`.
fn state(id: &str, thread: &str, scope: Option<&str>, sensitivity: &str) -> MemoryRecord {
    record(
        id,
        json!({"type": "working", "sensitivity": sensitivity, "scope": scope,
               "salience": 0.9,
               "payload": {"kind": "working", "thread_id": thread, "state": "executing"}}),
    )
}

#[test]
fn a_new_state_retracts_the_current_states_of_its_thread_the_writer_sees() {
    let mut store = Backend::open();
    store.insert(&[
        state("s1", "t", Some("p"), "low"),
        state("s2", "t", Some("p"), "medium"),
        state("secret", "t", Some("p"), "high"),
        state("elsewhere", "t", Some("q"), "low"),
        state("unscoped", "t", None, "low"),
        state("other", "u", Some("p"), "low"),
        fact("t", "not a state"),
    ]);
    let entry = AuditEntry {
        action: AuditAction::Revise,
        actor: "writer".into(),
        timestamp: at(60),
        rationale: "a newer state".into(),
        imported: false,
    };
    let retracted = store.written(|tx| {
        tx.retract_current_states("t", Some("p"), Sensitivity::Medium, &entry, at(60))
    });
    assert_eq!(retracted, ["s1", "s2"], "oldest first");
    for id in ["s1", "s2"] {
        let r = store.read(|tx| tx.get_record(id, at(60))).unwrap().unwrap();
        assert_eq!(r.status, Status::Retracted, "{id}");
        assert_eq!(r.salience, 0.0, "{id}");
        assert_eq!(r.audit_log.last(), Some(&entry), "{id}");
        assert_eq!(r.audit_log.len(), 2, "{id}");
        assert_eq!(r.payload, state(id, "t", Some("p"), "low").payload);
        let later = store
            .read(|tx| tx.get_record(id, at(9000)))
            .unwrap()
            .unwrap();
        assert_eq!(later.salience, 0.0, "{id} stays at 0");
    }
    for id in ["secret", "elsewhere", "unscoped", "other", "t"] {
        let r = store.read(|tx| tx.get_record(id, at(60))).unwrap().unwrap();
        assert_eq!(r.status, Status::Active, "{id}");
    }
    // Retracted ones are not retracted again.
    let again = store.written(|tx| {
        tx.retract_current_states("t", Some("p"), Sensitivity::Hyper, &entry, at(120))
    });
    assert_eq!(again, ["secret"]);
    let unscoped =
        store.written(|tx| tx.retract_current_states("t", None, Sensitivity::Low, &entry, at(120)));
    assert_eq!(unscoped, ["unscoped"]);
}

fn key(name: &str, roles: &[Role], scopes: &[&str]) -> ApiKey {
    ApiKey {
        name: name.to_string(),
        grant: Grant {
            max_sensitivity: Sensitivity::Medium,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            roles: roles.iter().copied().collect(),
        },
        rate: Some(50.0),
        created_at: now(),
        revoked_at: None,
    }
}

#[test]
fn keys_are_stored_found_by_hash_and_revoked() {
    let mut store = Backend::open();
    assert!(!store.read(|tx| tx.any_key()).unwrap());
    let a = key("indexer", &[Role::Read, Role::Write], &["a", "b"]);
    let b = key("admin", &[Role::Admin], &[]);
    store.written(|tx| {
        tx.insert_key(&a, b"hash-a")?;
        tx.insert_key(&b, b"hash-b")
    });
    assert!(store.read(|tx| tx.any_key()).unwrap());
    assert_eq!(
        store.read(|tx| tx.active_key(b"hash-a")).unwrap(),
        Some(a.clone())
    );
    assert_eq!(store.read(|tx| tx.active_key(b"nope")).unwrap(), None);
    assert_eq!(
        store.read(|tx| tx.list_keys()).unwrap(),
        vec![b.clone(), a.clone()],
        "by name"
    );
    assert!(store.written(|tx| tx.revoke_key("indexer", at(5))));
    assert_eq!(store.read(|tx| tx.active_key(b"hash-a")).unwrap(), None);
    assert_eq!(
        store.read(|tx| tx.active_key(b"hash-b")).unwrap(),
        Some(b.clone())
    );
    assert!(!store.written(|tx| tx.revoke_key("indexer", at(6))));
    let listed = store.read(|tx| tx.list_keys()).unwrap();
    assert_eq!(listed[1].revoked_at, Some(at(5)));
    assert_fails(
        store.write(|tx| tx.revoke_key("ghost", now())),
        |e| matches!(e, StoreError::NotFound(name) if name == "ghost"),
    );
    // Revoked keys count as made.
    store.written(|tx| tx.revoke_key("admin", at(7)));
    assert!(store.read(|tx| tx.any_key()).unwrap());
}

#[test]
fn a_key_name_is_never_given_twice() {
    let mut store = Backend::open();
    store.written(|tx| tx.insert_key(&key("k", &[Role::Read], &[]), b"h1"));
    store.written(|tx| tx.revoke_key("k", now()));
    assert_fails(
        store.write(|tx| tx.insert_key(&key("k", &[Role::Write], &[]), b"h2")),
        |e| matches!(e, StoreError::AlreadyExists(name) if name == "k"),
    );
    assert_eq!(store.read(|tx| tx.active_key(b"h2")).unwrap(), None);
    assert_eq!(store.read(|tx| tx.list_keys()).unwrap().len(), 1);
}

#[test]
fn the_first_vector_fixes_the_dimensions() {
    let mut store = Backend::open();
    assert_eq!(store.read(|tx| tx.vector_dimensions()).unwrap(), None);
    store.insert(&[fact("a", "tea")]);
    assert_eq!(store.read(|tx| tx.vector_dimensions()).unwrap(), None);
    store.insert(&[fact_with("b", "coffee", &[1.0, 0.0, 0.0])]);
    assert_eq!(store.read(|tx| tx.vector_dimensions()).unwrap(), Some(3));
    let two = |id: &str| fact_with(id, "water", &[1.0, 0.0]);
    let refused = |e: &StoreError| {
        matches!(
            e,
            StoreError::Dimensions {
                given: 2,
                expected: 3
            }
        )
    };
    assert_fails(store.write(|tx| tx.insert_record(&two("c"))), refused);
    assert_fails(store.write(|tx| tx.insert_records(&[&two("c")])), refused);
    assert_eq!(store.read(|tx| tx.get_record("c", now())).unwrap(), None);
    // A rewrite, or a topic, brings no other number either.
    let loaded = store.written(|tx| tx.get_for_update("a", now())).unwrap();
    let mut changed = loaded.record.clone();
    changed.embedding = two("a").embedding;
    assert_fails(
        store.write(|tx| tx.update_record(&loaded.version, &changed, SalienceChange::Unchanged)),
        refused,
    );
    let topic = store.written(|tx| tx.insert_topic(&sample_topic("t", None, Sensitivity::Low)));
    let vector = Embedding::new("embedding", vec![0.0, 1.0]).unwrap();
    assert_fails(
        store.write(|tx| tx.put_topic_vector(topic, &vector)),
        refused,
    );
    // Opened again, the configuration must agree with the vectors stored.
    let (error, dir) = match store.reopen(Some(4)) {
        Ok(_) => panic!("4 configured dimensions accepted over vectors of 3"),
        Err(refused) => refused,
    };
    assert!(
        matches!(error, StoreError::Schema(_)),
        "on {}: {error}",
        backend_name()
    );
    let mut store = Backend::open_in(dir, Some(3)).expect("3 dimensions agree");
    assert_eq!(store.read(|tx| tx.vector_dimensions()).unwrap(), Some(3));
}

#[test]
fn configured_dimensions_hold_before_any_vector() {
    let mut store = Backend::open_with(Some(4));
    assert_eq!(store.read(|tx| tx.vector_dimensions()).unwrap(), Some(4));
    assert_fails(
        store.write(|tx| tx.insert_record(&fact_with("a", "tea", &[1.0, 0.0, 0.0]))),
        |e| {
            matches!(
                e,
                StoreError::Dimensions {
                    given: 3,
                    expected: 4
                }
            )
        },
    );
    store.insert(&[fact_with("a", "tea", &[1.0, 0.0, 0.0, 0.0])]);
}

#[test]
fn the_embedder_works_through_records_without_a_vector() {
    let mut store = Backend::open();
    store.insert(&[fact("a", "tea"), fact_with("b", "coffee", &[0.0, 1.0])]);
    let todo = store.read(|tx| tx.to_embed(0, 10, now())).unwrap();
    assert_eq!(todo.len(), 1);
    let a = store.written(|tx| Ok(key_of(tx, "a")));
    assert_eq!(todo[0].key, a);
    assert!(todo[0].text.contains("tea"), "{}", todo[0].text);
    assert!(store
        .read(|tx| tx.to_embed(a, 10, now()))
        .unwrap()
        .is_empty());
    let made = Embedded {
        key: a,
        version: todo[0].version,
        text: todo[0].text.clone(),
        embedding: Embedding::new("embedding", vec![1.0, 0.0]).unwrap(),
    };
    // A record changed since it was read is left for the next pass.
    let stale = Embedded {
        version: made.version - 1,
        ..made.clone()
    };
    assert!(!store.written(|tx| tx.store_embedded(&stale)));
    assert!(store.written(|tx| tx.store_embedded(&made)));
    assert!(!store.written(|tx| tx.store_embedded(&made)), "it has one");
    assert!(store
        .read(|tx| tx.to_embed(0, 10, now()))
        .unwrap()
        .is_empty());
    // A rewrite that keeps the text keeps the vector; one that changes it
    // drops the embedder's vector, never a client's.
    store.written(|tx| {
        let loaded = tx.get_for_update("a", now())?.unwrap();
        tx.update_record(&loaded.version, &loaded.record, SalienceChange::Unchanged)
    });
    assert!(store
        .read(|tx| tx.to_embed(0, 10, now()))
        .unwrap()
        .is_empty());
    store.written(|tx| {
        for id in ["a", "b"] {
            let loaded = tx.get_for_update(id, now())?.unwrap();
            let mut changed = loaded.record.clone();
            changed.payload = fact(id, "water").payload;
            tx.update_record(&loaded.version, &changed, SalienceChange::Unchanged)?;
        }
        Ok(())
    });
    let todo = store.read(|tx| tx.to_embed(0, 10, now())).unwrap();
    let keys: Vec<i64> = todo.iter().map(|t| t.key).collect();
    assert_eq!(keys, [a], "on {}", backend_name());
    assert!(todo[0].text.contains("water"));
    // The vector read for an older text is not stored over the new one.
    let old_text = Embedded {
        key: a,
        version: made.version,
        text: made.text.clone(),
        embedding: made.embedding.clone(),
    };
    assert!(!store.written(|tx| tx.store_embedded(&old_text)));
    // Retracted records are not embedded.
    store.insert(&[fact("c", "juice")]);
    store.written(|tx| {
        let loaded = tx.get_for_update("c", now())?.unwrap();
        let mut retracted = loaded.record.clone();
        retracted.status = Status::Retracted;
        tx.update_record(&loaded.version, &retracted, SalienceChange::Unchanged)
    });
    let todo = store.read(|tx| tx.to_embed(0, 10, now())).unwrap();
    assert_eq!(todo.len(), 1, "{todo:?}");
}

/// A record for the decay sweep: decays by half an hour, from `now`.
fn decaying(id: &str, memory_type: &str) -> MemoryRecord {
    let payload = match memory_type {
        "episodic" => json!({"kind": "episodic"}),
        _ => json!({"kind": "semantic", "subject": id, "predicate": "p"}),
    };
    record(
        id,
        json!({"type": memory_type, "sensitivity": "low", "salience": 0.8,
               "lifecycle": {"decay": {"curve": "exponential", "half_life_seconds": 1800}},
               "payload": payload}),
    )
}

#[test]
fn decay_writes_hold_only_at_the_version_their_scan_saw() {
    let mut store = Backend::open();
    let records: Vec<MemoryRecord> = (0..5)
        .map(|i| decaying(&format!("d{i}"), "semantic"))
        .collect();
    store.insert(&records);
    // In key order, in chunks.
    let first = store.read(|tx| tx.scan_for_decay(0, 3)).unwrap();
    assert_eq!(first.len(), 3);
    let rest = store.read(|tx| tx.scan_for_decay(first[2].key, 3)).unwrap();
    assert_eq!(rest.len(), 2);
    let rows: Vec<_> = first.into_iter().chain(rest).collect();
    assert!(rows.windows(2).all(|w| w[0].key < w[1].key));
    let r = &records[0];
    assert_eq!(rows[0].stored_salience, 0.8);
    assert_eq!(rows[0].status, Status::Active);
    assert_eq!(rows[0].profile, r.lifecycle.decay);
    assert_eq!(rows[0].created_at, r.created_at);
    assert_eq!(rows[0].anchor.salience, 0.8);
    assert_eq!(rows[0].anchor.at, r.lifecycle.last_reinforced_at);
    // One of them changes after the scan.
    store.written(|tx| {
        let loaded = tx.get_for_update("d1", now())?.unwrap();
        let mut changed = loaded.record.clone();
        changed.tags = vec!["touched".into()];
        tx.update_record(&loaded.version, &changed, SalienceChange::Unchanged)
    });
    let sweep = |rows: &[engram::store::DecayRow], when: Timestamp| -> Vec<DecayChange> {
        rows.iter()
            .map(|row| DecayChange {
                key: row.key,
                version: row.version,
                salience: salience_at(
                    &DecayState {
                        anchor: row.anchor,
                        profile: &row.profile,
                        pinned: row.pinned,
                        created_at: row.created_at,
                    },
                    when,
                ),
            })
            .collect()
    };
    let changed = store.written(|tx| tx.apply_decay(&sweep(&rows, at(1800)), at(1800)));
    assert_eq!(
        changed,
        4,
        "on {}: the changed record is skipped",
        backend_name()
    );
    let after = store.read(|tx| tx.scan_for_decay(0, 10)).unwrap();
    for row in &after {
        let expected = if row.key == rows[1].key { 0.8 } else { 0.4 };
        assert!(
            (row.stored_salience - expected).abs() < 1e-9,
            "{}: {}",
            row.key,
            row.stored_salience
        );
        // The anchor stays: reads decay from it whatever the sweep wrote.
        assert_eq!(row.anchor.salience, 0.8);
    }
    let read = store
        .read(|tx| tx.get_record("d0", at(3600)))
        .unwrap()
        .unwrap();
    assert!((read.salience - 0.2).abs() < 1e-9, "{}", read.salience);
    // One scheduler entry per stretch of decay: a second sweep updates it.
    store.written(|tx| tx.apply_decay(&sweep(&after, at(3600)), at(3600)));
    fn decays(r: &MemoryRecord) -> Vec<&AuditEntry> {
        r.audit_log
            .iter()
            .filter(|e| e.action == AuditAction::Decay)
            .collect()
    }
    let read = store
        .read(|tx| tx.get_record("d0", at(3600)))
        .unwrap()
        .unwrap();
    let entries = decays(&read);
    assert_eq!(entries.len(), 1, "{:?}", read.audit_log);
    assert_eq!(entries[0].actor, SCHEDULER_ACTOR);
    assert_eq!(entries[0].timestamp, at(3600));
    // After another change, the next sweep starts a new stretch.
    store.written(|tx| {
        let loaded = tx.get_for_update("d0", at(3600))?.unwrap();
        let mut changed = loaded.record.clone();
        changed.audit_log.push(AuditEntry {
            action: AuditAction::Reinforce,
            actor: "agent".into(),
            timestamp: at(3600),
            rationale: "useful".into(),
            imported: false,
        });
        changed.salience = 0.9;
        tx.update_record(&loaded.version, &changed, SalienceChange::SetAt(at(3600)))
    });
    let rows = store.read(|tx| tx.scan_for_decay(0, 10)).unwrap();
    store.written(|tx| tx.apply_decay(&sweep(&rows, at(5400)), at(5400)));
    let read = store
        .read(|tx| tx.get_record("d0", at(5400)))
        .unwrap()
        .unwrap();
    assert_eq!(decays(&read).len(), 2, "{:?}", read.audit_log);
    assert!((read.salience - 0.45).abs() < 1e-9, "{}", read.salience);
}

#[test]
fn pruning_spares_what_changed_is_retracted_chained_or_not_yet_consolidated() {
    let mut store = Backend::open();
    let mut newer = decaying("newer", "semantic");
    link(&mut newer, "supersedes", "older");
    store.insert(&[
        decaying("plain", "semantic"),
        decaying("changed", "semantic"),
        decaying("retracted", "semantic"),
        decaying("older", "semantic"),
        newer,
        decaying("episode", "episodic"),
        decaying("compressed", "episodic"),
    ]);
    let rows = store.read(|tx| tx.scan_for_decay(0, 100)).unwrap();
    let ids = [
        "plain",
        "changed",
        "retracted",
        "older",
        "newer",
        "episode",
        "compressed",
    ];
    assert_eq!(rows.len(), ids.len());
    let candidates: Vec<DecayChange> = rows
        .iter()
        .map(|row| DecayChange {
            key: row.key,
            version: row.version,
            salience: 0.0,
        })
        .collect();
    store.written(|tx| {
        let loaded = tx.get_for_update("changed", now())?.unwrap();
        let mut changed = loaded.record.clone();
        changed.tags = vec!["touched".into()];
        tx.update_record(&loaded.version, &changed, SalienceChange::Unchanged)?;
        let loaded = tx.get_for_update("retracted", now())?.unwrap();
        let mut retracted = loaded.record.clone();
        retracted.status = Status::Retracted;
        tx.update_record(&loaded.version, &retracted, SalienceChange::Unchanged)?;
        let compressed = key_of(tx, "compressed");
        tx.mark(compressed, Step::Compressed)
    });
    // The retracted one is at the version scanned again only by its
    // rewrite's: prune it as scanned now.
    let retracted_now = store
        .read(|tx| tx.scan_for_decay(0, 100))
        .unwrap()
        .into_iter()
        .find(|row| row.status == Status::Retracted)
        .unwrap();
    let mut candidates = candidates;
    candidates[2] = DecayChange {
        key: retracted_now.key,
        version: retracted_now.version,
        salience: 0.0,
    };
    let pruned = store.written(|tx| tx.prune(&candidates));
    assert_eq!(pruned, 2, "on {}", backend_name());
    let mut left: Vec<String> = Vec::new();
    for id in ids {
        if store.read(|tx| tx.get_record(id, now())).unwrap().is_some() {
            left.push(id.to_string());
        }
    }
    assert_eq!(
        left,
        ["changed", "retracted", "older", "newer", "episode"],
        "on {}",
        backend_name()
    );
}

/// A low topic titled `title`, unscoped unless told, made at `now`.
fn sample_topic(title: &str, scope: Option<&str>, sensitivity: Sensitivity) -> Topic {
    Topic {
        id: uuid::Uuid::now_v7().to_string(),
        title: title.to_string(),
        summary: String::new(),
        kind: None,
        sensitivity,
        scope: scope.map(str::to_string),
        tags: Vec::new(),
        salience: 1.0,
        archived: false,
        created_at: now(),
        updated_at: now(),
        anchor: engram::domain::decay::Anchor {
            salience: 1.0,
            at: now(),
        },
    }
}

#[test]
fn a_word_lookup_reads_only_the_scopes_and_sensitivities_it_may() {
    let mut store = Backend::open();
    let add = |store: &mut Backend, scope: Option<&str>, sensitivity| {
        let made = sample_topic("Billing", scope, sensitivity);
        store.written(|tx| {
            let key = tx.insert_topic(&made)?;
            tx.set_topic_words(key, &made, &BTreeSet::new(), &index_words("Billing"))?;
            Ok(key)
        })
    };
    let own = add(&mut store, Some("a"), Sensitivity::Low);
    let open = add(&mut store, None, Sensitivity::Low);
    let others: Vec<i64> = (0..5)
        .map(|_| add(&mut store, Some("b"), Sensitivity::Low))
        .collect();
    let secret = add(&mut store, Some("a"), Sensitivity::High);
    let found = |store: &mut Backend, scopes: Option<&[&str]>, max, per_word| -> Vec<i64> {
        let reach = WordReach {
            scopes: scopes.map(|s| s.iter().map(|s| s.to_string()).collect()),
            max_sensitivity: max,
        };
        store
            .read(|tx| tx.topics_sharing(&index_words("billing"), &reach, per_word))
            .unwrap()
            .into_iter()
            .map(|shared| {
                assert_eq!(shared.shared, 1);
                shared.key
            })
            .collect()
    };
    // Newer topics beyond the reach do not take the one place there is.
    assert_eq!(found(&mut store, Some(&["a"]), Sensitivity::Low, 1), [own]);
    assert_eq!(found(&mut store, Some(&[""]), Sensitivity::Low, 1), [open]);
    let mut both = found(&mut store, Some(&["", "a"]), Sensitivity::Low, 1);
    both.sort();
    assert_eq!(both, [own, open]);
    assert_eq!(
        found(&mut store, Some(&["a"]), Sensitivity::High, 1),
        [secret]
    );
    assert!(found(&mut store, Some(&[]), Sensitivity::Hyper, 10).is_empty());
    // Every scope: the newest visible ones.
    assert_eq!(
        found(&mut store, None, Sensitivity::Low, 2),
        [others[4], others[3]],
        "on {}",
        backend_name()
    );
    // A topic's words leave the index (as when it is archived).
    let gone = sample_topic("Billing", Some("a"), Sensitivity::Low);
    store.written(|tx| tx.set_topic_words(own, &gone, &index_words("Billing"), &BTreeSet::new()));
    assert!(found(&mut store, Some(&["a"]), Sensitivity::Low, 1).is_empty());
}

#[test]
fn a_topic_round_trips_and_is_found_by_its_title() {
    let mut store = Backend::open();
    let mut topic = sample_topic("Payment  Service", Some("team"), Sensitivity::Medium);
    topic.summary = "Takes the money".into();
    topic.kind = Some("service".into());
    topic.tags = vec!["b".into(), "a".into()];
    let key = store.written(|tx| tx.insert_topic(&topic));
    let by_id = store.read(|tx| tx.topic_by_id(&topic.id)).unwrap().unwrap();
    assert_eq!(by_id.key, key);
    assert_eq!(by_id.topic, topic, "on {}", backend_name());
    assert_eq!(
        store.read(|tx| tx.topic_by_key(key)).unwrap(),
        Some(topic.clone())
    );
    assert_eq!(store.read(|tx| tx.topic_by_id("none")).unwrap(), None);
    // Titles are compared normalised, within one scope.
    let titled = store
        .read(|tx| tx.topics_titled("payment service", Some("team")))
        .unwrap();
    assert_eq!(titled.len(), 1);
    assert!(store
        .read(|tx| tx.topics_titled("payment service", None))
        .unwrap()
        .is_empty());
    // A change comes back as written; archived, it is no longer found.
    let mut changed = topic.clone();
    changed.summary = "Takes and returns the money".into();
    changed.updated_at = at(10);
    changed.archived = true;
    store.written(|tx| tx.update_topic(key, &changed));
    assert_eq!(
        store.read(|tx| tx.topic_by_key(key)).unwrap(),
        Some(changed)
    );
    assert!(store
        .read(|tx| tx.topics_titled("Payment Service", Some("team")))
        .unwrap()
        .is_empty());
    assert_eq!(store.read(|tx| tx.active_topics()).unwrap(), 0);
}

/// Field version `seq` of `name`, held by record `record_id`, from
/// `seconds` after now.
fn version(name: &str, seq: i64, record_id: &str, seconds: i64) -> FieldVersion {
    FieldVersion {
        name: name.into(),
        seq,
        record_id: record_id.into(),
        valid_from: at(seconds),
        value: json!(record_id),
        source: "agent".into(),
        why_changed: (seq > 1).then(|| format!("version {seq}")),
        retracted: false,
        ended: false,
    }
}

#[test]
fn field_versions_stand_in_order_and_as_of_a_time() {
    let mut store = Backend::open();
    let ids = ["o1", "o2", "o3", "t1"];
    let records: Vec<MemoryRecord> = ids.iter().map(|id| fact(id, id)).collect();
    store.insert(&records);
    let topic = sample_topic("Service", None, Sensitivity::Low);
    let key = store.written(|tx| {
        let key = tx.insert_topic(&topic)?;
        tx.add_version(key, &version("owner", 1, "o1", 0))?;
        tx.add_version(key, &version("owner", 2, "o2", 100))?;
        tx.add_version(key, &version("tier", 1, "t1", 50))?;
        Ok(key)
    });
    let heads = store.read(|tx| tx.field_heads(key, None)).unwrap();
    assert_eq!(
        heads,
        [version("owner", 2, "o2", 100), version("tier", 1, "t1", 50)],
        "on {}",
        backend_name()
    );
    let then = store.read(|tx| tx.field_heads(key, Some(at(60)))).unwrap();
    assert_eq!(
        then,
        [version("owner", 1, "o1", 0), version("tier", 1, "t1", 50)]
    );
    let first = store.read(|tx| tx.field_heads(key, Some(at(10)))).unwrap();
    assert_eq!(first, [version("owner", 1, "o1", 0)]);
    assert!(store
        .read(|tx| tx.field_heads(key, Some(at(-10))))
        .unwrap()
        .is_empty());
    assert_eq!(
        store.read(|tx| tx.topic_of_record("o1")).unwrap(),
        Some(key)
    );
    assert_eq!(store.read(|tx| tx.topic_of_record("none")).unwrap(), None);
    // A retracted record's version says so; an ended one stays ended.
    store.written(|tx| {
        let loaded = tx.get_for_update("o2", now())?.unwrap();
        let mut retracted = loaded.record.clone();
        retracted.status = Status::Retracted;
        tx.update_record(&loaded.version, &retracted, SalienceChange::Unchanged)?;
        tx.add_version(
            key,
            &FieldVersion {
                ended: true,
                ..version("tier", 2, "o3", 200)
            },
        )
    });
    let heads = store.read(|tx| tx.field_heads(key, None)).unwrap();
    assert!(heads[0].retracted && !heads[0].ended, "{heads:?}");
    assert!(heads[1].ended && !heads[1].retracted, "{heads:?}");
    // History: oldest first; trimmed to the newest; dropped.
    let owner = store.read(|tx| tx.field_versions(key, "owner")).unwrap();
    let seqs: Vec<i64> = owner.iter().map(|v| v.seq).collect();
    assert_eq!(seqs, [1, 2]);
    let trimmed = store.written(|tx| tx.trim_versions(key, "owner", 1));
    assert_eq!(trimmed, 1);
    let owner = store.read(|tx| tx.field_versions(key, "owner")).unwrap();
    assert_eq!(owner.len(), 1);
    assert_eq!(owner[0].seq, 2);
    assert_eq!(store.written(|tx| tx.trim_versions(key, "owner", 5)), 0);
    store.written(|tx| tx.drop_versions(key, "tier"));
    assert!(store
        .read(|tx| tx.field_versions(key, "tier"))
        .unwrap()
        .is_empty());
    let heads = store.read(|tx| tx.field_heads(key, None)).unwrap();
    assert_eq!(heads.len(), 1);
    assert_eq!(heads[0].name, "owner");
}

#[test]
fn edges_stand_until_removed_and_are_read_as_of_a_time() {
    let mut store = Backend::open();
    let (a, b, c) = (
        sample_topic("A", None, Sensitivity::Low),
        sample_topic("B", None, Sensitivity::Low),
        sample_topic("C", None, Sensitivity::Low),
    );
    let (ka, kb, kc) = store.written(|tx| {
        Ok((
            tx.insert_topic(&a)?,
            tx.insert_topic(&b)?,
            tx.insert_topic(&c)?,
        ))
    });
    assert!(store.written(|tx| tx.add_edge(ka, kb, "depends_on", at(10))));
    assert!(
        !store.written(|tx| tx.add_edge(ka, kb, "depends_on", at(20))),
        "stands already"
    );
    assert!(store.written(|tx| tx.add_edge(ka, kb, "owns", at(20))));
    assert!(store.written(|tx| tx.add_edge(kc, ka, "depends_on", at(30))));
    let edges = |store: &mut Backend, key: i64, when: Option<Timestamp>| {
        let mut found: Vec<(i64, String, String, String, Timestamp)> = store
            .read(|tx| tx.edges_of(key, when))
            .unwrap()
            .into_iter()
            .map(|e| {
                (
                    e.other,
                    e.edge.from_topic_id,
                    e.edge.to_topic_id,
                    e.edge.kind,
                    e.edge.created_at,
                )
            })
            .collect();
        found.sort_by(|x, y| (x.0, &x.3).cmp(&(y.0, &y.3)));
        found
    };
    let edge = |other, from: &Topic, to: &Topic, kind: &str, seconds| {
        (
            other,
            from.id.clone(),
            to.id.clone(),
            kind.to_string(),
            at(seconds),
        )
    };
    assert_eq!(
        edges(&mut store, ka, None),
        [
            edge(kb, &a, &b, "depends_on", 10),
            edge(kb, &a, &b, "owns", 20),
            edge(kc, &c, &a, "depends_on", 30),
        ],
        "on {}",
        backend_name()
    );
    assert_eq!(
        edges(&mut store, kb, None),
        [
            edge(ka, &a, &b, "depends_on", 10),
            edge(ka, &a, &b, "owns", 20),
        ]
    );
    assert!(store.written(|tx| tx.remove_edge(ka, kb, "depends_on", at(40))));
    assert!(!store.written(|tx| tx.remove_edge(ka, kb, "depends_on", at(50))));
    assert!(
        !store.written(|tx| tx.remove_edge(kb, ka, "owns", at(50))),
        "no such edge"
    );
    assert_eq!(
        edges(&mut store, ka, None),
        [
            edge(kb, &a, &b, "owns", 20),
            edge(kc, &c, &a, "depends_on", 30)
        ]
    );
    // As of a time: those made by then and not yet removed.
    assert_eq!(
        edges(&mut store, ka, Some(at(15))),
        [edge(kb, &a, &b, "depends_on", 10)]
    );
    assert_eq!(
        edges(&mut store, ka, Some(at(35))),
        [
            edge(kb, &a, &b, "depends_on", 10),
            edge(kb, &a, &b, "owns", 20),
            edge(kc, &c, &a, "depends_on", 30),
        ]
    );
    assert_eq!(edges(&mut store, ka, Some(at(45))).len(), 2);
    assert!(edges(&mut store, ka, Some(at(5))).is_empty());
    // A removed edge can be made again.
    assert!(store.written(|tx| tx.add_edge(ka, kb, "depends_on", at(60))));
    assert_eq!(edges(&mut store, ka, None).len(), 3);
    assert_eq!(edges(&mut store, ka, Some(at(45))).len(), 2);
}

#[test]
fn a_topic_sweep_writes_only_from_the_anchor_it_read() {
    let mut store = Backend::open();
    let keys: Vec<i64> = store.written(|tx| {
        (0..3)
            .map(|i| tx.insert_topic(&sample_topic(&format!("T{i}"), None, Sensitivity::Low)))
            .collect()
    });
    let chunk = store.read(|tx| tx.topic_decay_chunk(0, 2)).unwrap();
    assert_eq!(chunk.iter().map(|t| t.key).collect::<Vec<_>>(), keys[..2]);
    assert_eq!(chunk[0].stored, 1.0);
    assert_eq!(chunk[0].anchor.at, now());
    let rest = store
        .read(|tx| tx.topic_decay_chunk(chunk[1].key, 2))
        .unwrap();
    assert_eq!(rest.len(), 1);
    // Topic 1 is reinforced after the chunk was read.
    store.written(|tx| {
        let mut topic = tx.topic_by_key(keys[1])?.unwrap();
        topic.anchor = engram::domain::decay::Anchor {
            salience: 1.0,
            at: at(100),
        };
        topic.salience = 1.0;
        tx.update_topic(keys[1], &topic)
    });
    store.written(|tx| {
        for (i, t) in chunk.iter().chain(&rest).enumerate() {
            tx.set_topic_salience(t.key, t.anchor.at, 0.1 * (i + 1) as f64)?;
        }
        Ok(())
    });
    let stored = |store: &mut Backend, key| {
        store
            .read(|tx| tx.topic_by_key(key))
            .unwrap()
            .unwrap()
            .salience
    };
    assert!(stored(&mut store, keys[0]) < 0.5);
    assert_eq!(stored(&mut store, keys[1]), 1.0, "on {}", backend_name());
    assert!(stored(&mut store, keys[2]) < 0.5);
    // The faded ones, least salient first.
    let fading = store.read(|tx| tx.fading_topics(0.5, 10)).unwrap();
    assert_eq!(fading, [keys[0], keys[2]]);
    assert_eq!(
        store.read(|tx| tx.fading_topics(0.5, 1)).unwrap(),
        [keys[0]]
    );
    assert_eq!(store.read(|tx| tx.active_topics()).unwrap(), 3);
}

#[test]
fn topic_vectors_are_compared_within_what_the_caller_may_see() {
    let mut store = Backend::open();
    let topics = [
        ("near", None, Sensitivity::Low, vec![1.0, 0.0]),
        (
            "nearer scoped",
            Some("a"),
            Sensitivity::Low,
            vec![1.0, 0.03],
        ),
        ("secret", None, Sensitivity::High, vec![1.0, 0.02]),
        ("far", None, Sensitivity::Low, vec![0.0, 1.0]),
    ];
    let mut keys = Vec::new();
    for (title, scope, sensitivity, vector) in topics {
        let topic = sample_topic(title, scope, sensitivity);
        keys.push(store.written(|tx| {
            let key = tx.insert_topic(&topic)?;
            tx.put_topic_vector(key, &Embedding::new("embedding", vector).unwrap())?;
            Ok(key)
        }));
    }
    let query = QueryVector::new(&Embedding::new("q", vec![1.0, 0.02]).unwrap());
    let nearest = |store: &mut Backend, trust: &TrustContext, limit| -> Vec<i64> {
        store
            .read(|tx| tx.nearest_topics(&query, trust, None, limit))
            .unwrap()
            .into_iter()
            .map(|s| s.key)
            .collect()
    };
    let low_unscoped = trust(Sensitivity::Low, &["b"]);
    assert_eq!(
        nearest(&mut store, &low_unscoped, 10),
        [keys[0], keys[3]],
        "on {}",
        backend_name()
    );
    assert_eq!(
        nearest(&mut store, &trust(Sensitivity::High, &[]), 2),
        [keys[2], keys[1]]
    );
    assert_eq!(
        nearest(&mut store, &trust(Sensitivity::Low, &["a"]), 1),
        [keys[1]]
    );
    let similarity = store
        .read(|tx| tx.topic_similarity(keys[3], &query))
        .unwrap()
        .unwrap();
    assert!(similarity < 0.1, "{similarity}");
    let plain = sample_topic("no vector", None, Sensitivity::Low);
    let without = store.written(|tx| tx.insert_topic(&plain));
    assert_eq!(
        store
            .read(|tx| tx.topic_similarity(without, &query))
            .unwrap(),
        None
    );
    // A vector replaces the one before.
    store.written(|tx| {
        tx.put_topic_vector(
            keys[3],
            &Embedding::new("embedding", vec![1.0, 0.02]).unwrap(),
        )
    });
    assert_eq!(nearest(&mut store, &low_unscoped, 1), [keys[3]]);
}

fn claim(name: &str, holder: &str, now_s: i64, tick: Option<i64>) -> JobClaim {
    JobClaim {
        name: name.into(),
        holder: holder.into(),
        now: at(now_s),
        until: at(now_s + 60),
        live_since: at(now_s - 30),
        tick: tick.map(at),
    }
}

#[test]
fn a_job_is_held_by_one_live_process_at_a_time() {
    let mut store = Backend::open();
    let beat = |store: &mut Backend, who: &str, when: i64| {
        store.written(|tx| tx.heartbeat(who, at(when), at(when - 30), at(when - 3600)))
    };
    assert_eq!(beat(&mut store, "one", 0), 1);
    assert_eq!(beat(&mut store, "two", 0), 2);
    assert!(store.written(|tx| tx.claim_job(&claim("decay", "one", 0, None))));
    // Another live process waits; the holder may take its own lease again.
    assert!(!store.written(|tx| tx.claim_job(&claim("decay", "two", 10, None))));
    assert!(store.written(|tx| tx.claim_job(&claim("decay", "one", 10, None))));
    let held = store.read(|tx| tx.held_jobs(at(10), at(-20))).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(
        (held[0].name.as_str(), held[0].holder.as_str()),
        ("decay", "one")
    );
    assert!(held[0].live);
    // Given back, it is anyone's.
    store.written(|tx| tx.release_job("decay", "two"));
    assert!(
        !store.written(|tx| tx.claim_job(&claim("decay", "two", 20, None))),
        "not its lease"
    );
    store.written(|tx| tx.release_job("decay", "one"));
    assert!(store
        .read(|tx| tx.held_jobs(at(20), at(-10)))
        .unwrap()
        .is_empty());
    assert!(store.written(|tx| tx.claim_job(&claim("decay", "two", 20, None))));
    // A holder not seen alive lately is dead: its lease is taken over.
    beat(&mut store, "one", 100);
    let held = store.read(|tx| tx.held_jobs(at(40), at(70))).unwrap();
    assert!(!held[0].live, "{held:?}");
    assert!(store.written(|tx| tx.claim_job(&claim("decay", "one", 100, None))));
    // An expired lease is anyone's.
    beat(&mut store, "two", 200);
    assert!(store.written(|tx| tx.claim_job(&claim("decay", "two", 200, None))));
    // Heartbeats forget the long gone.
    assert_eq!(beat(&mut store, "three", 5000), 1);
}

#[test]
fn a_scheduled_time_is_run_once() {
    let mut store = Backend::open();
    for who in ["one", "two"] {
        store.written(|tx| tx.heartbeat(who, at(0), at(-30), at(-3600)));
    }
    assert!(store.written(|tx| tx.claim_job(&claim("consolidation", "one", 0, Some(0)))));
    store.written(|tx| tx.release_job("consolidation", "one"));
    // The run of that time finished: no one runs it again.
    assert!(!store.written(|tx| tx.claim_job(&claim("consolidation", "two", 5, Some(0)))));
    assert!(!store.written(|tx| tx.claim_job(&claim("consolidation", "one", 5, Some(0)))));
    // The next time is anyone's; on demand runs are not bound to a time.
    assert!(store.written(|tx| tx.claim_job(&claim("consolidation", "two", 10, Some(10)))));
    store.written(|tx| tx.release_job("consolidation", "two"));
    assert!(store.written(|tx| tx.claim_job(&claim("consolidation", "one", 15, None))));
}

#[test]
fn job_settings_and_runs_are_kept() {
    let mut store = Backend::open();
    let setting = JobSetting {
        name: "decay".into(),
        schedule: "0 */5 * * * *".into(),
        enabled: false,
    };
    store.written(|tx| tx.save_job_setting(&setting, now()));
    let changed = JobSetting {
        enabled: true,
        ..setting.clone()
    };
    store.written(|tx| tx.save_job_setting(&changed, at(1)));
    let settings = store.read(|tx| tx.job_settings()).unwrap();
    let decay: Vec<&JobSetting> = settings.iter().filter(|s| s.name == "decay").collect();
    assert_eq!(decay, [&changed]);
    let run = |name: &str, i: i64, outcome: Result<serde_json::Value, String>| JobRunRecord {
        name: name.into(),
        started_at: at(i),
        finished_at: at(i + 1),
        duration_ms: 1000,
        outcome,
    };
    store.written(|tx| {
        for i in 0..4 {
            tx.save_job_run(&run("decay", i * 10, Ok(json!({"run": i}))), 3)?;
        }
        tx.save_job_run(&run("consolidation", 5, Err("it failed".into())), 3)
    });
    let runs = store.read(|tx| tx.recent_job_runs(2)).unwrap();
    assert_eq!(
        runs,
        [
            run("consolidation", 5, Err("it failed".into())),
            run("decay", 30, Ok(json!({"run": 3}))),
            run("decay", 20, Ok(json!({"run": 2}))),
        ],
        "on {}",
        backend_name()
    );
    // Only the newest three of a job were kept.
    let runs = store.read(|tx| tx.recent_job_runs(10)).unwrap();
    assert_eq!(runs.iter().filter(|r| r.name == "decay").count(), 3);
}

#[test]
fn consolidation_remembers_what_each_step_used_and_made() {
    let mut store = Backend::open();
    let episode = |id: &str, seconds: i64| {
        let mut r = record(
            id,
            json!({"type": "episodic", "sensitivity": "low", "payload": {"kind": "episodic"}}),
        );
        r.created_at = at(seconds);
        r
    };
    let mut pinned = episode("pinned", 0);
    pinned.lifecycle.pinned = true;
    store.insert(&[
        episode("e1", 0),
        episode("e2", 10),
        episode("late", 100),
        pinned,
    ]);
    store.insert(&[episode("gone", 5)]);
    store.written(|tx| {
        let loaded = tx.get_for_update("gone", now())?.unwrap();
        let mut retracted = loaded.record.clone();
        retracted.status = Status::Retracted;
        tx.update_record(&loaded.version, &retracted, SalienceChange::Unchanged)
    });
    let unmarked = |store: &mut Backend, step, after| -> Vec<String> {
        store
            .read(|tx| tx.unmarked_episodes(step, at(50), after, 10))
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect()
    };
    // Compression takes every episode (the other steps, those whose
    // payloads they can learn from).
    assert_eq!(unmarked(&mut store, Step::Compressed, 0), ["e1", "e2"]);
    let e1 = store.written(|tx| Ok(key_of(tx, "e1")));
    assert_eq!(unmarked(&mut store, Step::Compressed, e1), ["e2"]);
    // Marks are per step.
    store.written(|tx| tx.mark(e1, Step::Semantic));
    assert_eq!(unmarked(&mut store, Step::Compressed, 0), ["e1", "e2"]);
    store.written(|tx| tx.mark(e1, Step::Compressed));
    assert_eq!(unmarked(&mut store, Step::Compressed, 0), ["e2"]);
    // Groups: who was seen in them, what was made of them.
    let e2 = store.written(|tx| Ok(key_of(tx, "e2")));
    store.written(|tx| {
        tx.add_sighting(Step::Competence, "deploy", e1, Some("success"))?;
        tx.add_sighting(Step::Competence, "deploy", e2, None)
    });
    let seen = store
        .read(|tx| tx.sightings(Step::Competence, "deploy"))
        .unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].key, seen[0].detail.as_deref()),
        (e1, Some("success"))
    );
    assert_eq!((seen[1].key, seen[1].detail.as_deref()), (e2, None));
    assert_eq!(
        store
            .read(|tx| tx.output(Step::Competence, "deploy"))
            .unwrap(),
        None
    );
    store.insert(&[fact("skill", "deploying"), fact("merged", "deploying")]);
    store.written(|tx| tx.set_output(Step::Competence, "deploy", "skill"));
    assert_eq!(
        store
            .read(|tx| tx.output(Step::Competence, "deploy"))
            .unwrap(),
        Some("skill".to_string())
    );
    store.written(|tx| tx.move_outputs("skill", "merged"));
    assert_eq!(
        store
            .read(|tx| tx.output(Step::Competence, "deploy"))
            .unwrap(),
        Some("merged".to_string()),
        "on {}",
        backend_name()
    );
}

#[test]
fn duplicate_facts_are_grouped_oldest_first() {
    let mut store = Backend::open();
    let same = |id: &str, scope: Option<&str>| {
        let mut r = fact(id, "tea");
        r.scope = scope.map(str::to_string);
        r
    };
    store.insert(&[
        same("a1", None),
        fact("other", "coffee"),
        same("a2", None),
        same("s1", Some("p")),
        same("a3", None),
        same("s2", Some("p")),
        same("alone", Some("q")),
    ]);
    let mut groups = store.read(|tx| tx.duplicate_fact_groups()).unwrap();
    groups.sort();
    assert_eq!(
        groups,
        [vec!["a1", "a2", "a3"], vec!["s1", "s2"]],
        "on {}",
        backend_name()
    );
}

#[test]
fn an_erasure_takes_every_part_and_leaves_tombstones_and_its_log() {
    let mut store = Backend::open();
    let mut v2 = fact_with("v2", "tea", &[1.0, 0.0]);
    link(&mut v2, "supersedes", "v1");
    let mut v3 = fact("v3", "green tea");
    link(&mut v3, "supersedes", "v2");
    let mut derived = fact("derived", "tea drinkers");
    link(&mut derived, "derived_from", "v2");
    let mut scoped = fact("scoped", "milk");
    scoped.scope = Some("team".into());
    scoped.provenance.created_by = Some("importer".into());
    store.insert(&[fact("v1", "coffee"), v2, v3, derived, scoped]);
    // What an erasure selects, as the caller may see it.
    let everyone = trust(Sensitivity::Hyper, &[]);
    let found = store
        .read(|tx| tx.erasable_in_scope("team", &everyone))
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, "scoped");
    assert_eq!(found[0].memory_type, MemoryType::Semantic);
    assert!(store
        .read(|tx| tx.erasable_in_scope("team", &trust(Sensitivity::Hyper, &["other"])))
        .unwrap()
        .is_empty());
    let by_source = store
        .read(|tx| tx.erasable_by_source("importer", &everyone))
        .unwrap();
    assert_eq!(by_source.len(), 1);
    let named = store
        .read(|tx| tx.erasable_ids(&["v2".into(), "none".into()]))
        .unwrap();
    assert_eq!(named.len(), 1);
    let v2_key = named[0].key;
    let made_from = store
        .read(|tx| tx.derived_from_any(&["v2".into()]))
        .unwrap();
    assert_eq!(
        made_from.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        ["derived"]
    );
    let mut linking: Vec<String> = store
        .read(|tx| tx.linking_to_any(&["v2".into()]))
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    linking.sort();
    assert_eq!(linking, ["derived", "v3"]);
    let neighbours = store.read(|tx| tx.chain_neighbours(&[v2_key])).unwrap();
    assert_eq!(neighbours.len(), 1);
    assert_eq!(neighbours[0].older_id.as_deref(), Some("v1"));
    assert_eq!(neighbours[0].newer_id.as_deref(), Some("v3"));
    let counts = store.read(|tx| tx.erasure_counts(&[v2_key])).unwrap();
    assert_eq!(
        (counts.records, counts.vectors, counts.edges),
        (1, 1, 1),
        "on {}: {counts:?}",
        backend_name()
    );
    assert!(counts.audit >= 1);
    // Erased, with a tombstone where it stood in its chain.
    let tombstone = Tombstone {
        id: "v2".into(),
        memory_type: MemoryType::Semantic,
        sensitivity: Sensitivity::Low,
        scope: None,
        erased_at: at(10),
        actor: "admin".into(),
        rationale: "asked to".into(),
        older_id: Some("v1".into()),
        newer_id: Some("v3".into()),
    };
    store.written(|tx| {
        tx.erase_records(&[v2_key], false)?;
        tx.add_tombstone(&tombstone)
    });
    assert_eq!(store.read(|tx| tx.get_record("v2", now())).unwrap(), None);
    let counts = store.read(|tx| tx.erasure_counts(&[v2_key])).unwrap();
    assert_eq!(counts, TableCounts::default(), "on {}", backend_name());
    assert_eq!(
        store.read(|tx| tx.tombstone("v2")).unwrap(),
        Some(tombstone.clone())
    );
    assert_eq!(
        store
            .read(|tx| tx.tombstone_next_to(Some("v1"), None))
            .unwrap(),
        Some(tombstone.clone())
    );
    assert_eq!(
        store
            .read(|tx| tx.tombstone_next_to(None, Some("v3")))
            .unwrap(),
        Some(tombstone.clone())
    );
    assert_eq!(
        store
            .read(|tx| tx.tombstone_next_to(Some("v3"), None))
            .unwrap(),
        None
    );
    // The log: newest first, read within the grant it was made in.
    let entry = |id: &str, seconds: i64, scopes: Option<&[&str]>, max| ErasureEntry {
        id: id.into(),
        at: at(seconds),
        actor: "admin".into(),
        rationale: "asked to".into(),
        selector: "ids".into(),
        name: None,
        ids: 1,
        erased: 1,
        derived_erased: 0,
        tombstones: 1,
        tables: TableCounts {
            records: 1,
            ..TableCounts::default()
        },
        took_ms: 3,
        grant_scopes: scopes.map(|s| s.iter().map(|s| s.to_string()).collect()),
        max_sensitivity: max,
    };
    let entries = [
        entry("e1", 10, None, Sensitivity::Hyper),
        entry("e2", 20, Some(&["team"]), Sensitivity::Low),
        entry("e3", 30, Some(&[]), Sensitivity::Low),
        entry("e4", 40, Some(&["team", "other"]), Sensitivity::Medium),
    ];
    store.written(|tx| {
        for e in &entries {
            tx.log_erasure(e)?;
        }
        Ok(())
    });
    let read = |store: &mut Backend, scopes: Option<&[&str]>, max, after: &LogPlace, limit| {
        let reach = LogReach {
            max_sensitivity: max,
            scopes: scopes.map(|s| s.iter().map(|s| s.to_string()).collect()),
        };
        store
            .read(|tx| tx.erasures(&reach, after, limit))
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    let start = LogPlace::start();
    assert_eq!(
        read(&mut store, None, Sensitivity::Hyper, &start, 10),
        ["e4", "e3", "e2", "e1"]
    );
    assert_eq!(
        read(&mut store, None, Sensitivity::Medium, &start, 10),
        ["e4", "e3", "e2"]
    );
    assert_eq!(
        read(
            &mut store,
            Some(&["", "team"]),
            Sensitivity::Hyper,
            &start,
            10
        ),
        ["e3", "e2"],
        "on {}",
        backend_name()
    );
    assert_eq!(
        read(
            &mut store,
            Some(&["", "team"]),
            Sensitivity::Hyper,
            &start,
            1
        ),
        ["e3"],
        "entries beyond the grant take no place"
    );
    let after = LogPlace {
        at: engram::domain::time::to_micros(&at(30)),
        id: "e3".into(),
    };
    assert_eq!(
        read(&mut store, None, Sensitivity::Hyper, &after, 10),
        ["e2", "e1"]
    );
    let stored = store
        .read(|tx| {
            tx.erasures(
                &LogReach {
                    max_sensitivity: Sensitivity::Hyper,
                    scopes: None,
                },
                &start,
                10,
            )
        })
        .unwrap();
    assert_eq!(stored[0], entries[3]);
}

/// A turn of conversation `c`, as an episode holds it.
fn turn(id: &str, session: &str, index: u64, speaker: &str, seconds: i64) -> MemoryRecord {
    record(
        id,
        json!({"type": "episodic", "sensitivity": "low",
               "payload": {"kind": "episodic", "turn": {
                   "conversation_id": "c", "session_id": session, "index": index,
                   "speaker": speaker, "text": format!("{speaker} says {id}"),
                   "at": engram::domain::time::format_rfc3339(&at(seconds))}}}),
    )
}

#[test]
fn a_conversation_is_read_in_order_as_the_caller_may_see_it() {
    use engram::domain::conversation::{TurnQuery, TurnSight};
    let mut store = Backend::open();
    let mut secret = turn("t1", "s1", 1, "Bo", 10);
    secret.sensitivity = Sensitivity::High;
    let mut elsewhere = turn("p0", "s9", 0, "Ann", 5);
    elsewhere.scope = Some("p".into());
    store.insert(&[
        turn("t0", "s1", 0, "Ann", 0),
        secret,
        turn("t2", "s1", 2, "Ann", 20),
        elsewhere,
        turn("t3", "s2", 3, "Bo", 100),
        turn("t4", "s2", 4, "Ann", 110),
    ]);
    let keys: std::collections::HashMap<i64, String> = store.written(|tx| {
        Ok(["t0", "t1", "t2", "p0", "t3", "t4"]
            .into_iter()
            .map(|id| (key_of(tx, id), id.to_string()))
            .collect())
    });
    let sight = |max, scopes: Option<&[&str]>| TurnSight {
        max_sensitivity: max,
        scopes: scopes.map(|s| s.iter().map(|s| s.to_string()).collect()),
        include_retracted: false,
    };
    let low = sight(Sensitivity::Low, Some(&[]));
    let query = TurnQuery {
        conversation_id: engram::domain::ids::ConversationId::stored("c".into()),
        sight: low.clone(),
        scope: None,
        session_id: None,
        speakers: Vec::new(),
        after: None,
        before: None,
        from: None,
        limit: 100,
        max_bytes: usize::MAX,
    };
    let read = |store: &mut Backend, query: &TurnQuery| -> Vec<String> {
        store
            .read(|tx| tx.turns(query))
            .unwrap()
            .into_iter()
            .map(|row| keys[&row.key].clone())
            .collect()
    };
    assert_eq!(read(&mut store, &query), ["t0", "t2", "t3", "t4"]);
    let everything = TurnQuery {
        sight: sight(Sensitivity::High, None),
        ..query.clone()
    };
    assert_eq!(
        read(&mut store, &everything),
        ["t0", "p0", "t1", "t2", "t3", "t4"],
        "on {}",
        backend_name()
    );
    let rows = store.read(|tx| tx.turns(&everything)).unwrap();
    assert_eq!(rows[1].scope.as_deref(), Some("p"));
    assert_eq!(rows[1].session_id, "s9");
    assert_eq!(rows[2].index, 1);
    assert_eq!(rows[2].at, engram::domain::time::to_micros(&at(10)));
    assert!(rows.iter().all(|row| row.payload_bytes > 0));
    let narrowed = [
        TurnQuery {
            scope: Some(Some("p".into())),
            ..everything.clone()
        },
        TurnQuery {
            session_id: Some("s2".into()),
            ..query.clone()
        },
        TurnQuery {
            speakers: vec!["Ann".into()],
            ..query.clone()
        },
        TurnQuery {
            after: Some(at(0)),
            before: Some(at(110)),
            ..query.clone()
        },
        TurnQuery {
            from: Some((rows[3].at, rows[3].key)),
            limit: 1,
            ..query.clone()
        },
    ];
    let expected: [&[&str]; 5] = [
        &["p0"],
        &["t3", "t4"],
        &["t0", "t2", "t4"],
        &["t2", "t3"],
        &["t3"],
    ];
    for (query, expected) in narrowed.iter().zip(expected) {
        assert_eq!(read(&mut store, query), expected, "{query:?}");
    }
    // Where a writer appends: its latest visible turn, the highest index.
    let latest = store
        .read(|tx| tx.latest_turn("c", None, Sensitivity::Low, None))
        .unwrap()
        .unwrap();
    assert_eq!(
        (latest.session_id.as_str(), latest.at, latest.index),
        ("s2", at(110), 4)
    );
    let in_s1 = store
        .read(|tx| tx.latest_turn("c", None, Sensitivity::Low, Some("s1")))
        .unwrap()
        .unwrap();
    assert_eq!(
        (in_s1.session_id.as_str(), in_s1.at, in_s1.index),
        ("s1", at(20), 4)
    );
    assert_eq!(
        store
            .read(|tx| tx.latest_turn("c", Some("q"), Sensitivity::Hyper, None))
            .unwrap(),
        None
    );
    // When a session started, as the caller sees it.
    let started = |store: &mut Backend, session: &str, sight: &TurnSight| {
        store
            .read(|tx| tx.session_started("c", None, session, sight))
            .unwrap()
    };
    assert_eq!(
        started(&mut store, "s2", &low),
        Some(engram::domain::time::to_micros(&at(100)))
    );
    let mut late = sight(Sensitivity::Low, Some(&[]));
    late.max_sensitivity = Sensitivity::Public;
    assert_eq!(started(&mut store, "s2", &late), None);
    // The turns around one, nearest first, in its session.
    let around = |store: &mut Backend, id: &str, n, sight: &TurnSight| {
        let found = store.read(|tx| tx.around(id, n, sight)).unwrap();
        (
            found
                .before
                .iter()
                .map(|k| keys[k].clone())
                .collect::<Vec<_>>(),
            found
                .after
                .iter()
                .map(|k| keys[k].clone())
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        around(&mut store, "t2", 5, &low),
        (vec!["t0".to_string()], vec![])
    );
    assert_eq!(
        around(&mut store, "t0", 1, &sight(Sensitivity::High, None)),
        (vec![], vec!["t1".to_string()])
    );
}

#[test]
fn a_topic_keeps_its_other_names_and_its_summaries() {
    let mut store = Backend::open();
    let topic = sample_topic("Billing", Some("team"), Sensitivity::Low);
    let key = store.written(|tx| tx.insert_topic(&topic));
    assert!(store.written(|tx| tx.add_alias(key, "Invoicing", at(1))));
    assert!(
        !store.written(|tx| tx.add_alias(key, "  invoicing ", at(2))),
        "on {}: the same name, normalised",
        backend_name()
    );
    let aliased = store
        .read(|tx| tx.topics_aliased("INVOICING", Some("team")))
        .unwrap();
    assert_eq!(aliased.len(), 1);
    assert_eq!(aliased[0].key, key);
    assert!(store
        .read(|tx| tx.topics_aliased("invoicing", None))
        .unwrap()
        .is_empty());
    let summary = |seq: i64, text: &str, seconds| engram::store::SummaryVersion {
        seq,
        summary: text.into(),
        valid_from: at(seconds),
        source: "agent".into(),
        why_changed: (seq > 1).then(|| "more known".to_string()),
    };
    store.written(|tx| {
        tx.add_summary(key, &summary(1, "Bills", 0))?;
        tx.add_summary(key, &summary(2, "Bills and invoices", 10))
    });
    assert_eq!(
        store.read(|tx| tx.summaries(key)).unwrap(),
        [summary(1, "Bills", 0), summary(2, "Bills and invoices", 10)]
    );
}

#[test]
fn topics_are_searched_and_listed_within_what_the_caller_may_see() {
    let mut store = Backend::open();
    let made = [
        (
            "Payment service",
            "takes payments",
            Some("svc"),
            None,
            Sensitivity::Low,
            30,
        ),
        (
            "Payment gateway",
            "card payments",
            Some("svc"),
            Some("p"),
            Sensitivity::Low,
            20,
        ),
        (
            "Payment secrets",
            "keys",
            Some("svc"),
            None,
            Sensitivity::High,
            10,
        ),
        (
            "Email",
            "sends mail",
            Some("svc"),
            None,
            Sensitivity::Low,
            40,
        ),
        (
            "Payroll",
            "pays people",
            Some("team"),
            None,
            Sensitivity::Low,
            0,
        ),
    ];
    let mut keys = Vec::new();
    for (title, summary, kind, scope, sensitivity, seconds) in made {
        let mut topic = sample_topic(title, scope, sensitivity);
        topic.summary = summary.into();
        topic.kind = kind.map(str::to_string);
        topic.updated_at = at(seconds);
        keys.push(store.written(|tx| {
            let key = tx.insert_topic(&topic)?;
            tx.index_topic(key, topic.text(), true)?;
            Ok(key)
        }));
    }
    assert!(store.read(|tx| tx.topics_to_index()).unwrap().is_empty());
    let search = |store: &mut Backend, text: &str, trust: &TrustContext, kind| {
        let found = store
            .read(|tx| tx.search_topics(text, trust, kind, 10))
            .unwrap();
        assert!(
            found.windows(2).all(|w| w[0].score >= w[1].score),
            "best first"
        );
        let mut keys: Vec<i64> = found.into_iter().map(|f| f.key).collect();
        keys.sort();
        keys
    };
    let low = trust(Sensitivity::Low, &["q"]);
    assert_eq!(
        search(&mut store, "payment", &low, None),
        [keys[0]],
        "on {}",
        backend_name()
    );
    assert_eq!(
        search(&mut store, "payments", &trust(Sensitivity::High, &[]), None),
        [keys[0], keys[1], keys[2]]
    );
    assert_eq!(search(&mut store, "mail", &low, Some("svc")), [keys[3]]);
    assert!(search(&mut store, "mail", &low, Some("team")).is_empty());
    assert!(search(&mut store, "", &low, None).is_empty());
    // Searched again with its new text; archived, never found.
    store.written(|tx| tx.index_topic(keys[4], "Payroll pays payments".into(), false));
    assert_eq!(
        search(&mut store, "payment", &low, None),
        [keys[0], keys[4]]
    );
    store.written(|tx| {
        let mut archived = tx.topic_by_key(keys[0])?.unwrap();
        archived.archived = true;
        tx.update_topic(keys[0], &archived)
    });
    assert_eq!(search(&mut store, "payment", &low, None), [keys[4]]);
    // Listed most recently changed first.
    let recent = |store: &mut Backend, trust: &TrustContext, kind, limit| -> Vec<i64> {
        store
            .read(|tx| tx.recent_topics(trust, kind, limit))
            .unwrap()
            .into_iter()
            .map(|t| t.key)
            .collect()
    };
    assert_eq!(recent(&mut store, &low, None, 10), [keys[3], keys[4]]);
    assert_eq!(
        recent(&mut store, &trust(Sensitivity::High, &[]), Some("svc"), 2),
        [keys[3], keys[1]]
    );
}

#[test]
fn the_memory_statistics_count_what_is_stored() {
    let mut store = Backend::open();
    let mut pinned = fact("pinned", "tea");
    pinned.lifecycle.pinned = true;
    pinned.salience = 0.9;
    let mut secret = record(
        "secret",
        json!({"type": "episodic", "sensitivity": "high", "salience": 0.1,
               "payload": {"kind": "episodic"}}),
    );
    secret.confidence = 0.5;
    store.insert(&[
        pinned,
        secret,
        fact("plain", "coffee"),
        fact("gone", "water"),
    ]);
    store.written(|tx| {
        let loaded = tx.get_for_update("gone", now())?.unwrap();
        let mut retracted = loaded.record.clone();
        retracted.status = Status::Retracted;
        retracted.audit_log.push(AuditEntry {
            action: AuditAction::Revise,
            actor: "reviser".into(),
            timestamp: at(5),
            rationale: "wrong".into(),
            imported: false,
        });
        tx.update_record(&loaded.version, &retracted, SalienceChange::Unchanged)
    });
    let stats = store.read(|tx| tx.memory_stats(at(10))).unwrap();
    assert_eq!(stats.total_records, 4, "on {}: {stats:?}", backend_name());
    assert_eq!(stats.records_by_type["semantic"], 3);
    assert_eq!(stats.records_by_type["episodic"], 1);
    assert_eq!(stats.records_by_type["working"], 0);
    assert_eq!(stats.active_records, 3);
    assert_eq!(stats.pinned_records, 1);
    assert_eq!(stats.records_by_sensitivity["low"], 3);
    assert_eq!(stats.records_by_sensitivity["high"], 1);
    assert_eq!(stats.records_by_status["retracted"], 1);
    assert_eq!(stats.records_by_status["active"], 3);
    assert_eq!(stats.total_audit_entries, 5);
    assert!((stats.revision_rate - 0.2).abs() < 1e-9, "{stats:?}");
    assert!((stats.avg_salience - (0.9 + 0.1 + 1.0 + 1.0) / 4.0).abs() < 1e-9);
    assert!((stats.avg_confidence - 3.5 / 4.0).abs() < 1e-9);
    assert_eq!(stats.salience_distribution["0.0-0.2"], 1);
    assert_eq!(stats.salience_distribution["0.8-1.0"], 3);
    assert!(
        (stats.growth_rate - 1.0).abs() < 1e-9,
        "all made within a day"
    );
    assert_eq!(stats.recent_activity.len(), 5);
    assert_eq!(stats.recent_activity[0].actor, "reviser", "newest first");
}
