//! Many tenants in one memory: what a caller may not see never appears in
//! its answers, never displaces a record it may see and never changes a
//! score; and a ranked answer, paged or not, is exactly what scoring every
//! record the caller may see would give.

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{create_id, ids, spawn_app_with, trust, TestApp};
use engram::domain::analysis::{analyse, stem, term_frequency};
use engram::domain::record::MemoryType;

async fn retrieve(app: &TestApp, body: &Value) -> Value {
    let (status, answer) = app.post("/v1/retrieve", body).await;
    assert_eq!(status, StatusCode::OK, "{body} -> {answer}");
    answer
}

fn fact(scope: Option<&str>, sensitivity: &str, object: &str, vector: &[f64]) -> Value {
    let mut body = json!({"type": "semantic", "sensitivity": sensitivity, "embedding": vector,
        "payload": {"kind": "semantic", "subject": "note", "predicate": "says", "object": object}});
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    body
}

async fn retract(app: &TestApp, id: &str) {
    let (status, body) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": id, "actor": "a", "rationale": "wrong"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The case and its kin: a caller of scope `team-a` that sees up
/// to `low` and asks for facts. Records it may not see (another scope, a
/// higher sensitivity, another type, retracted), better matches than its
/// own by text and by vector, change nothing in its answers: not which
/// records, not their order, not one score.
#[actix_web::test]
async fn what_a_caller_may_not_see_changes_nothing_in_its_answers() {
    // Its slice read whole, and its terms looked up in the index.
    for scan_records in [4000, 0] {
        hidden_records_change_nothing(scan_records).await;
    }
}

async fn hidden_records_change_nothing(scan_records: usize) {
    let app = spawn_app_with(|s| s.retrieval.scan_records = scan_records).await;
    let near = [1.0, 0.0, 0.0, 0.0];
    for (object, vector) in [
        ("zqalpha zqbeta", [0.6, 0.8, 0.0, 0.0]),
        ("zqalpha rollout notes", [0.0, 1.0, 0.0, 0.0]),
        ("zqbeta cache", [0.0, 0.0, 1.0, 0.0]),
        ("unrelated words", [0.5, 0.5, 0.5, 0.5]),
    ] {
        create_id(&app, fact(Some("team-a"), "low", object, &vector)).await;
    }
    create_id(
        &app,
        fact(None, "public", "zqalpha in general", &[0.2, 0.0, 0.0, 1.0]),
    )
    .await;
    let caller = trust("low", &["team-a"]);
    let queries = [
        json!({"trust": caller, "memory_types": ["semantic"], "task_descriptor": "zqalpha zqbeta"}),
        json!({"trust": caller, "memory_types": ["semantic"], "query_embedding": near}),
        json!({"trust": caller, "memory_types": ["semantic"], "task_descriptor": "zqalpha",
               "query_embedding": near}),
    ];
    let mut before = Vec::new();
    for query in &queries {
        before.push(retrieve(&app, query).await);
    }
    let first = &before[0]["scores"];
    assert_eq!(first.as_array().unwrap().len(), 4, "{first}");
    assert!(first[0]["text"].as_f64().unwrap() > 0.99, "{first}");

    let mut hidden = Vec::new();
    for i in 0..50 {
        hidden.push(
            create_id(
                &app,
                fact(Some("team-b"), "low", "zqalpha zqalpha zqbeta", &near),
            )
            .await,
        );
        if i % 10 == 0 {
            hidden
                .push(create_id(&app, fact(Some("team-a"), "high", "zqalpha zqbeta", &near)).await);
            hidden.push(
                create_id(
                    &app,
                    json!({"type": "episodic", "sensitivity": "low", "scope": "team-a",
                           "embedding": near,
                           "payload": {"kind": "episodic", "timeline": [{"t": "2026-01-01T00:00:00Z",
                               "event_kind": "zqalpha", "ref": "zqbeta", "summary": "zqalpha zqbeta"}]}}),
                )
                .await,
            );
            let gone = create_id(&app, fact(Some("team-a"), "low", "zqalpha zqbeta", &near)).await;
            retract(&app, &gone).await;
            hidden.push(gone);
        }
    }
    for (query, before) in queries.iter().zip(&before) {
        let after = retrieve(&app, query).await;
        assert_eq!(after["scores"], before["scores"], "{query}");
        assert!(
            ids(&after).iter().all(|id| !hidden.contains(id)),
            "{query}: {after}"
        );
    }
    // Who sees the other records ranks with them.
    let everything = json!({"trust": trust("hyper", &[]), "task_descriptor": "zqalpha zqbeta"});
    let found = ids(&retrieve(&app, &everything).await);
    assert!(hidden.contains(&found[0]), "{found:?}");
}

/// A small deterministic generator, so a failure names its seed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A stored record as the oracle knows it.
struct Known {
    id: String,
    memory_type: MemoryType,
    scope: Option<&'static str>,
    sensitivity: usize,
    salience: f64,
    retracted: bool,
    text: String,
}

const WORDS: &[&str] = &[
    "lantern", "harbor", "ledger", "quartz", "meadow", "cobalt", "signal", "orchard", "tunnel",
    "falcon", "ember", "glacier",
];
const SENSITIVITIES: &[&str] = &["public", "low", "medium", "high"];

/// The answer scoring every visible record gives (`docs/api.md`: BM25 over
/// what the caller may see, blended with salience), best first.
fn oracle(known: &[Known], query: &Value) -> Vec<(String, f64)> {
    let max = SENSITIVITIES
        .iter()
        .position(|s| *s == query["trust"]["max_sensitivity"])
        .unwrap();
    let scopes: Option<Vec<&str>> = query["trust"]["scopes"]
        .as_array()
        .filter(|s| !s.is_empty())
        .map(|s| s.iter().map(|v| v.as_str().unwrap()).collect());
    let types: Vec<MemoryType> = query["memory_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| serde_json::from_value(t.clone()).unwrap())
        .collect();
    let with_retracted = query["include_retracted"].as_bool().unwrap();
    let visible: Vec<(usize, &Known)> = known
        .iter()
        .enumerate()
        .filter(|(_, k)| k.sensitivity <= max && types.contains(&k.memory_type))
        .filter(|(_, k)| with_retracted || !k.retracted)
        .filter(|(_, k)| match (&scopes, k.scope) {
            (Some(scopes), Some(scope)) => scopes.contains(&scope),
            _ => true,
        })
        .collect();
    let analysed: Vec<_> = visible.iter().map(|(_, k)| analyse(&k.text)).collect();
    let docs = visible.len() as f64;
    let tokens: i64 = analysed.iter().map(|a| a.length).sum();
    let average = if visible.is_empty() {
        1.0
    } else {
        (tokens as f64 / docs).max(1.0)
    };
    let mut terms: Vec<String> = Vec::new();
    for word in query["task_descriptor"].as_str().unwrap().split(' ') {
        let term = stem(word);
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    let has =
        |a: &engram::domain::analysis::Analysed, term: &str| a.text.split(' ').any(|t| t == term);
    let mut relevance = vec![0.0f64; visible.len()];
    let mut matched = vec![false; visible.len()];
    // BM25 as the service is configured.
    let bm25 = engram::config::Settings::embedded().retrieval.bm25();
    let (k1, b) = (bm25.k1, bm25.b);
    for term in &terms {
        let n = analysed.iter().filter(|a| has(a, term)).count() as f64;
        let idf = (1.0 + (docs - n + 0.5) / (n + 0.5)).ln();
        for (i, a) in analysed.iter().enumerate() {
            if !has(a, term) {
                continue;
            }
            let tf = term_frequency(a.repeats.as_deref(), term);
            let length = a.length.max(1) as f64 / average;
            relevance[i] += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length));
            matched[i] = true;
        }
    }
    let best = relevance.iter().copied().fold(0.0f64, f64::max);
    let mut scored: Vec<(f64, usize, usize)> = visible
        .iter()
        .enumerate()
        .filter(|(i, _)| matched[*i])
        .map(|(i, (order, k))| {
            let text = if best > 0.0 && relevance[i] > 0.0 {
                (relevance[i] / best).min(1.0)
            } else {
                0.0
            };
            let salience = if k.retracted { 0.0 } else { k.salience };
            let mut sum = 0.25 * salience.clamp(0.0, 1.0);
            sum += text.clamp(0.0, 1.0);
            (sum / 1.25, k.memory_type.layer() as usize, *order)
        })
        .collect();
    // Score, then layer, then newest (all were made at one instant, so
    // the later made first).
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
    scored
        .into_iter()
        .map(|(score, _, order)| (known[order].id.clone(), score))
        .collect()
}

/// Randomised records and callers: every answer (and every answer read
/// page by page, each page cut by the size budget) is the oracle's, on
/// either backend.
#[actix_web::test]
async fn ranked_answers_are_what_scoring_every_visible_record_gives() {
    // Each caller's slice read whole, and each term looked up.
    for scan_records in [4000, 0] {
        let app = spawn_app_with(|s| {
            // About four records a page.
            s.retrieval.max_response_bytes = 20_000;
            s.retrieval.scan_records = scan_records;
        })
        .await;
        let mut rng = Lcg(7);
        let known = load(&app, &mut rng, 160, false).await;
        let (answered, paged) = answers_match_the_oracle(&app, &known, &mut rng, 40).await;
        // Not vacuous: most rounds find records, some over three pages.
        assert!(
            answered >= 30 && paged >= 5,
            "scan {scan_records}: {answered} answered, {paged} paged"
        );
    }
}

/// The same at a size where a caller that sees much meets common words
/// (in 1,000 of its records or more, whose matches are not all read):
/// the answers are still exactly the oracle's.
#[actix_web::test]
async fn answers_with_common_words_are_exact_too() {
    let app = spawn_app_with(|s| {
        s.retrieval.max_response_bytes = 20_000;
        s.retrieval.scan_records = 0;
    })
    .await;
    let mut rng = Lcg(11);
    let known = load(&app, &mut rng, 3000, true).await;
    // The first question that meets a common word has it counted once
    // the writer is idle; from then on the answers are exact.
    let every = json!({
        "trust": trust("high", &[]), "memory_types": ["semantic", "competence"],
        "include_retracted": true, "task_descriptor": WORDS.join(" "), "limit": 3,
    });
    let want: Vec<String> = oracle(&known, &every)
        .into_iter()
        .take(3)
        .map(|(id, _)| id)
        .collect();
    let mut counted = false;
    let mut last = Value::Null;
    for _ in 0..100 {
        last = retrieve(&app, &every).await;
        if ids(&last) == want {
            counted = true;
            break;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(counted, "never counted: {want:?} {}", last["scores"]);
    let (answered, _) = answers_match_the_oracle(&app, &known, &mut rng, 40).await;
    assert!(answered >= 30, "{answered} answered");
}

/// On PostgreSQL the counts of a counted term are kept by the schema's
/// triggers: after ingests, repeats, retractions, revisions and an
/// erasure, every partition's count is what counting the records gives.
/// (SQLite's are checked beside their code, `store/sqlite/counted.rs`.)
#[actix_web::test]
async fn the_counts_of_counted_terms_follow_every_write() {
    if crate::helpers::postgres_only("the counts kept by PostgreSQL's triggers") {
        return;
    }
    let app = spawn_app_with(|_| {}).await;
    let sail = stem("sailing");
    // Counted from the start: every write below changes its counts.
    app.sql_execute(&format!(
        "INSERT INTO counted_terms (term) VALUES ('{sail}'), ('{}')",
        stem("boats")
    ));
    let mut ids = Vec::new();
    for (i, text) in [
        "sailing boats",
        "sailing",
        "boats at sea",
        "sailing sailing sailing",
    ]
    .iter()
    .enumerate()
    {
        let scope = [None, Some("a"), Some("b")][i % 3];
        let sensitivity = SENSITIVITIES[i % 4];
        ids.push(create_id(&app, fact(scope, sensitivity, text, &[1.0, 0.0])).await);
    }
    retract(&app, &ids[1]).await;
    let mut replacement = fact(Some("c"), "low", "motor boats", &[0.0, 1.0]);
    replacement["provenance"] = json!({"sources": [{"kind": "observation", "ref": "harbour log",
                                                     "timestamp": "2026-01-01T00:00:00Z"}]});
    let (status, body) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": ids[0], "new_record": replacement,
                    "actor": "a", "rationale": "sold the sailing boat"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = app
        .post(
            "/v1/erase",
            &json!({"scope": "b", "actor": "dpo", "rationale": "tenant left"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let differing = |table: &str, partition: &str, of_records: &str| {
        app.sql_number(
            &format!(
                "WITH kept AS (
                     SELECT n.term, {partition}, SUM(COALESCE(c.counts[(n.id - 1) % 256 + 1], 0)) AS d
                     FROM counted_terms n JOIN {table} c ON c.chunk = (n.id - 1) / 256
                     GROUP BY 1, {partition}
                     HAVING SUM(COALESCE(c.counts[(n.id - 1) % 256 + 1], 0)) <> 0),
                 counted AS (
                     SELECT n.term, {of_records}, COUNT(*) AS d
                     FROM records r CROSS JOIN LATERAL unnest(tsvector_to_array(r.search)) w(term)
                     JOIN counted_terms n ON n.term = w.term
                     GROUP BY 1, {partition})
                 SELECT COUNT(*) FROM kept FULL JOIN counted USING (term, {partition})
                 WHERE kept.d IS DISTINCT FROM counted.d"
            ),
            &[],
        )
    };
    let live = "r.status <> 'retracted' AS live";
    assert_eq!(
        differing(
            "term_counts",
            "scope, layer, sensitivity, live",
            &format!("COALESCE(r.scope, '') AS scope, r.layer, r.sensitivity, {live}")
        ),
        0
    );
    assert_eq!(
        differing(
            "term_counts_all",
            "layer, sensitivity, live",
            &format!("r.layer, r.sensitivity, {live}")
        ),
        0
    );
    // Not vacuous: both terms are counted in several partitions, one of
    // them retracted; and the repeated term's bound was raised.
    let partitions = app.sql_number(
        "SELECT COUNT(*) FROM term_counts WHERE EXISTS (SELECT 1 FROM unnest(counts) c WHERE c > 0)",
        &[],
    );
    assert!(partitions >= 3, "{partitions}");
    assert_eq!(
        app.sql_number("SELECT most FROM counted_terms WHERE term = $1", &[&sail]),
        3
    );
}

/// `n` records of one to six of [`WORDS`] (with `common`, half of the
/// words are one of the first three: each is then in about half the
/// records), over three scopes and none, every sensitivity, two types;
/// one in nine retracted.
async fn load(app: &TestApp, rng: &mut Lcg, n: usize, common: bool) -> Vec<Known> {
    let mut known: Vec<Known> = Vec::new();
    let mut bodies = Vec::new();
    for _ in 0..n {
        let words: Vec<&str> = (0..1 + rng.below(6))
            .map(|_| {
                if common && rng.below(2) == 0 {
                    WORDS[rng.below(3) as usize]
                } else {
                    WORDS[rng.below(WORDS.len() as u64) as usize]
                }
            })
            .collect();
        let object = words.join(" ");
        let scope = [None, Some("a"), Some("b"), Some("c")][rng.below(4) as usize];
        let sensitivity = rng.below(4) as usize;
        let salience = (2 + rng.below(9)) as f64 / 10.0;
        let (memory_type, payload, text) = if rng.below(3) == 0 {
            (
                MemoryType::Competence,
                json!({"kind": "competence", "skill_name": object}),
                object.clone(),
            )
        } else {
            (
                MemoryType::Semantic,
                json!({"kind": "semantic", "subject": "note", "predicate": "says", "object": object}),
                format!("note\nsays\n{object}"),
            )
        };
        let mut body = json!({"type": memory_type, "sensitivity": SENSITIVITIES[sensitivity],
                              "salience": salience, "payload": payload});
        if let Some(scope) = scope {
            body["scope"] = json!(scope);
        }
        bodies.push(body);
        known.push(Known {
            id: String::new(),
            memory_type,
            scope,
            sensitivity,
            salience,
            retracted: known.len() % 9 == 4,
            text,
        });
    }
    // One at a time, in order: the oracle breaks ties by it.
    for (i, body) in bodies.into_iter().enumerate() {
        known[i].id = create_id(app, body).await;
        if known[i].retracted {
            retract(app, &known[i].id).await;
        }
    }
    known
}

/// `rounds` random callers and questions, each answer (read page by page)
/// compared with the oracle's; answers how many found records and how
/// many took more than two pages.
async fn answers_match_the_oracle(
    app: &TestApp,
    known: &[Known],
    rng: &mut Lcg,
    rounds: usize,
) -> (usize, usize) {
    let (mut answered, mut paged) = (0, 0);
    for round in 0..rounds {
        let mut scopes: Vec<&str> = ["a", "b", "c"]
            .into_iter()
            .filter(|_| rng.below(2) == 0)
            .collect();
        if rng.below(4) == 0 {
            scopes.clear();
        }
        let types: Vec<&str> = match rng.below(3) {
            0 => vec!["semantic"],
            1 => vec!["competence"],
            _ => vec!["semantic", "competence"],
        };
        let text: Vec<&str> = (0..1 + rng.below(3))
            .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
            .collect();
        let query = json!({
            "trust": trust(SENSITIVITIES[rng.below(4) as usize], &scopes),
            "memory_types": types,
            "include_retracted": rng.below(4) == 0,
            "task_descriptor": text.join(" "),
            "limit": 1 + rng.below(12),
        });
        let mut expected = oracle(known, &query);
        expected.truncate(query["limit"].as_u64().unwrap() as usize);
        let mut request = query.clone();
        let mut pages = Vec::new();
        let mut requests = 0;
        loop {
            requests += 1;
            let body = retrieve(app, &request).await;
            pages.extend(body["scores"].as_array().unwrap().iter().map(|s| {
                (
                    s["id"].as_str().unwrap().to_string(),
                    s["score"].as_f64().unwrap(),
                )
            }));
            match body.get("next_cursor") {
                Some(cursor) => request["cursor"] = cursor.clone(),
                None => break,
            }
        }
        answered += usize::from(!expected.is_empty());
        paged += usize::from(requests > 2);
        let got: Vec<&str> = pages.iter().map(|(id, _)| id.as_str()).collect();
        let want: Vec<&str> = expected.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(got, want, "round {round}: {query}");
        for ((_, got), (_, want)) in pages.iter().zip(&expected) {
            assert!(
                (got - want).abs() < 1e-9,
                "round {round}: {query}: {got} != {want}"
            );
        }
    }
    (answered, paged)
}
