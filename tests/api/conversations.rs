//! Conversations over HTTP: turns appended in order and placed in
//! sessions, read back by session, recalled with their context, erased by
//! conversation; none of it beyond what a caller may see.

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, ids, spawn_app, trust, TestApp};

fn turn(speaker: &str, text: &str, at: &str) -> Value {
    json!({"speaker": speaker, "text": text, "at": at})
}

/// POSTs `body` with `key` (none: an open service).
async fn post_as(app: &TestApp, key: Option<&str>, path: &str, body: Value) -> (StatusCode, Value) {
    let (status, body, _) = app.send("POST", path, Some(&body), key).await;
    (status, body)
}

/// Appends `turns` to `conversation` in `scope`; answers the answer.
async fn append(app: &TestApp, conversation: &str, scope: &str, turns: Vec<Value>) -> Value {
    append_as(app, None, conversation, scope, turns).await
}

async fn append_as(
    app: &TestApp,
    key: Option<&str>,
    conversation: &str,
    scope: &str,
    turns: Vec<Value>,
) -> Value {
    let (status, body) = post_as(
        app,
        key,
        "/v1/ingest/conversation",
        json!({"source": "chat", "conversation_id": conversation, "scope": scope,
               "turns": turns}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// The turns of `conversation` as `trust` sees them: (session, text) in
/// order, all pages read.
async fn read_back(app: &TestApp, conversation: &str, trust: Value) -> Vec<(String, String)> {
    read_back_as(app, None, conversation, trust).await
}

async fn read_back_as(
    app: &TestApp,
    key: Option<&str>,
    conversation: &str,
    trust: Value,
) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut body = json!({"trust": trust, "page_size": 2});
        if let Some(cursor) = &cursor {
            body["cursor"] = json!(cursor);
        }
        let (status, page) = post_as(
            app,
            key,
            &format!("/v1/conversations/{conversation}/turns"),
            body,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for session in page["sessions"].as_array().unwrap() {
            for turn in session["turns"].as_array().unwrap() {
                assert_eq!(turn["payload"]["turn"]["session_id"], session["session_id"]);
                seen.push((
                    session["session_id"].as_str().unwrap().to_string(),
                    turn["payload"]["turn"]["text"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                ));
            }
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return seen,
        }
    }
}

#[actix_web::test]
async fn turns_are_appended_in_order_and_placed_in_sessions_by_gap() {
    let app = spawn_app().await;
    let first = append(
        &app,
        "chat-1",
        "team-a",
        vec![
            turn(
                "Ann",
                "I adopted a dog last Sunday.",
                "2025-12-01T10:00:00Z",
            ),
            turn("Bo", "What breed is it?", "2025-12-01T10:01:00Z"),
        ],
    )
    .await;
    assert_eq!(first["new_session"], true);
    assert_eq!(first["session_id"], "s-20251201T100000Z");
    let records = first["records"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["type"], "episodic");
    let placed = &records[1]["payload"]["turn"];
    assert_eq!(placed["index"], 1);
    assert_eq!(placed["speaker"], "Bo");
    assert_eq!(placed["at"], "2025-12-01T10:01:00.000000Z");
    // Within 30 minutes of the last turn: the same session, numbered on.
    let more = append(
        &app,
        "chat-1",
        "team-a",
        vec![turn("Ann", "A beagle, very noisy.", "2025-12-01T10:20:00Z")],
    )
    .await;
    assert_eq!(more["new_session"], false);
    assert_eq!(more["session_id"], first["session_id"]);
    assert_eq!(more["records"][0]["payload"]["turn"]["index"], 2);
    // A day later: a new session.
    let later = append(
        &app,
        "chat-1",
        "team-a",
        vec![turn("Bo", "How is the beagle?", "2025-12-02T09:00:00Z")],
    )
    .await;
    assert_eq!(later["new_session"], true);
    assert_eq!(later["records"][0]["payload"]["turn"]["index"], 3);
    // A session named by the client, and turns with no time: now.
    let (status, named) = app
        .post(
            "/v1/ingest/conversation",
            &json!({"source": "chat", "conversation_id": "chat-1", "scope": "team-a",
                    "session_id": "evening", "turns": [{"speaker": "Ann", "text": "Walked him twice."}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{named}");
    assert_eq!(named["session_id"], "evening");
    assert_eq!(named["new_session"], true);
    assert_eq!(
        named["records"][0]["payload"]["turn"]["at"],
        crate::helpers::START_AT
    );

    let seen = read_back(&app, "chat-1", trust("low", &["team-a"])).await;
    let texts: Vec<&str> = seen.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "I adopted a dog last Sunday.",
            "What breed is it?",
            "A beagle, very noisy.",
            "How is the beagle?",
            "Walked him twice."
        ]
    );
    assert_eq!(seen[0].0, seen[2].0);
    assert_ne!(seen[2].0, seen[3].0);

    // Filters: a speaker, a session.
    let (status, page) = app
        .post(
            "/v1/conversations/chat-1/turns",
            &json!({"trust": trust("low", &["team-a"]), "speakers": ["Bo"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let sessions = page["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["started_at"], "2025-12-01T10:00:00.000000Z");
    assert!(page.get("next_cursor").is_none_or(Value::is_null), "{page}");
    let (_, page) = app
        .post(
            "/v1/conversations/chat-1/turns",
            &json!({"trust": trust("low", &["team-a"]), "session_id": "evening"}),
        )
        .await;
    assert_eq!(page["sessions"][0]["turns"].as_array().unwrap().len(), 1);
    // Any id, percent-encoded in the path.
    append(
        &app,
        "support/42 é",
        "team-a",
        vec![turn("Ann", "hello", "2025-12-01T10:00:00Z")],
    )
    .await;
    let seen = read_back(&app, "support%2F42%20%C3%A9", trust("low", &["team-a"])).await;
    assert_eq!(seen.len(), 1);
}

#[actix_web::test]
async fn a_page_of_turns_stays_within_the_response_size() {
    let app = crate::helpers::spawn_app_with(|s| s.retrieval.max_response_bytes = 65_536).await;
    // 24 turns of 8 KiB: about three times what one answer may carry.
    let turns: Vec<Value> = (0..24)
        .map(|i| {
            let text = format!("{i:02} {}", "word ".repeat(1638));
            turn("Ann", &text, &format!("2025-12-01T10:{i:02}:00Z"))
        })
        .collect();
    append(&app, "long", "team-a", turns).await;
    let (mut seen, mut pages, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let mut body = json!({"trust": trust("low", &["team-a"]), "page_size": 100});
        if let Some(cursor) = &cursor {
            body["cursor"] = json!(cursor);
        }
        let (status, raw, _) = app
            .send("POST", "/v1/conversations/long/turns", Some(&body), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{raw}");
        assert!(
            raw.to_string().len() <= 65_536,
            "{} bytes",
            raw.to_string().len()
        );
        pages += 1;
        for turn in raw["sessions"][0]["turns"].as_array().unwrap() {
            seen.push(turn["payload"]["turn"]["text"].as_str().unwrap()[..2].to_string());
        }
        match raw["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    let expected: Vec<String> = (0..24).map(|i| format!("{i:02}")).collect();
    assert_eq!(seen, expected, "every turn once, in order");
}

#[actix_web::test]
async fn bad_turns_name_their_field_and_store_nothing() {
    let app = spawn_app().await;
    append(
        &app,
        "chat-2",
        "team-a",
        vec![turn("Ann", "first", "2025-12-01T10:00:00Z")],
    )
    .await;
    let send = |turns: Value| {
        let app = &app;
        async move {
            app.post(
                "/v1/ingest/conversation",
                &json!({"source": "chat", "conversation_id": "chat-2", "scope": "team-a", "turns": turns}),
            )
            .await
        }
    };
    let good = turn("Bo", "fine", "2025-12-01T10:05:00Z");
    for (turns, field) in [
        (
            json!([good, good, good, {"speaker": " ", "text": "x"}]),
            "turns[3].speaker",
        ),
        (
            json!([good, {"speaker": "Bo", "text": ""}]),
            "turns[1].text",
        ),
        (
            json!([good, {"speaker": "Bo", "text": "x".repeat(64 * 1024 + 1)}]),
            "turns[1].text",
        ),
        (
            json!([good, {"speaker": "Bo", "text": "x", "at": "yesterday"}]),
            "turns[1].at",
        ),
        (
            json!([good, {"speaker": "Bo", "text": "x", "at": "2030-01-01T00:00:00Z"}]),
            "turns[1].at",
        ),
        // Earlier than the turn before it.
        (
            json!([good, turn("Bo", "x", "2025-12-01T10:04:00Z")]),
            "turns[1].at",
        ),
        (
            json!([good, {"speaker": "Bo", "text": "x", "attachments": [{"caption": ""}]}]),
            "turns[1].attachments[0].caption",
        ),
        (json!([]), "turns"),
    ] {
        let answer = send(turns).await;
        assert_error(&answer, StatusCode::BAD_REQUEST, "invalid_argument", field);
    }
    // Earlier than the session's last stored turn: the session refuses it.
    assert_error(
        &send(json!([turn("Bo", "x", "2025-12-01T09:59:00Z")])).await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "turns[0].at",
    );
    let (status, body) = app
        .post(
            "/v1/ingest/conversation",
            &json!({"source": "chat", "conversation_id": "", "turns": [good]}),
        )
        .await;
    assert_error(
        &(status, body),
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "conversation_id",
    );
    let too_many: Vec<Value> = (0..1001).map(|_| good.clone()).collect();
    assert_error(
        &send(json!(too_many)).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "turns",
    );
    // Nothing of any of them was stored.
    let seen = read_back(&app, "chat-2", trust("low", &["team-a"])).await;
    assert_eq!(seen.len(), 1);
}

#[actix_web::test]
async fn a_caller_sees_and_appends_after_only_the_turns_it_may_see() {
    let app = spawn_app().await;
    let root = app.root_key().await;
    let root = Some(root.as_str());
    let (status, body) = post_as(
        &app,
        root,
        "/v1/ingest/conversation",
        json!({"source": "chat", "conversation_id": "chat-3", "scope": "team-a",
               "sensitivity": "high",
               "turns": [turn("Ann", "the vault code is 4471", "2025-12-01T10:00:00Z"),
                         turn("Bo", "noted, the vault code", "2025-12-01T10:00:30Z")]}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // A writer that sees only low turns: the conversation is new to it.
    let low = app
        .make_key(
            root,
            json!({"name": "low", "roles": ["read", "write"], "max_sensitivity": "low",
                   "scopes": ["team-a"]}),
        )
        .await;
    let lunch = vec![
        turn("Ann", "lunch at noon?", "2025-12-01T10:01:00Z"),
        turn("Bo", "sure, lunch", "2025-12-01T10:02:00Z"),
        turn("Ann", "see you at lunch", "2025-12-01T10:03:00Z"),
    ];
    let answer = append_as(&app, Some(&low), "chat-3", "team-a", lunch.clone()).await;
    assert_eq!(answer["new_session"], true, "{answer}");
    assert_eq!(answer["records"][0]["payload"]["turn"]["index"], 0);
    assert_eq!(answer["records"][0]["scope"], "team-a");
    // Another scope's conversation of the same id is another conversation.
    let other = append_as(
        &app,
        root,
        "chat-3",
        "team-b",
        vec![turn("Cy", "team b lunch", "2025-12-01T10:02:30Z")],
    )
    .await;
    assert_eq!(other["records"][0]["payload"]["turn"]["index"], 0);

    let low_view = read_back_as(&app, Some(&low), "chat-3", trust("hyper", &[])).await;
    let texts: Vec<&str> = low_view.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["lunch at noon?", "sure, lunch", "see you at lunch"]);
    let all = read_back_as(&app, root, "chat-3", trust("hyper", &[])).await;
    assert_eq!(all.len(), 6);

    // Context stays within what the caller sees: the high turns are
    // neither returned nor anyone's neighbours, nor do they move a score.
    let recall = |key: String| {
        let app = &app;
        async move {
            let (status, body) = post_as(
                app,
                Some(&key),
                "/v1/retrieve",
                json!({"task_descriptor": "lunch", "conversation_id": "chat-3",
                       "context_turns": 2, "memory_types": ["episodic"]}),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body
        }
    };
    let low_answer = recall(low.clone()).await;
    let text = low_answer.to_string();
    assert!(!text.contains("vault"), "{text}");
    assert!(!text.contains("team b"), "{text}");
    for record in low_answer["records"].as_array().unwrap() {
        let context = &record["context"];
        let around = context["before"].as_array().unwrap().len()
            + context["after"].as_array().unwrap().len();
        assert_eq!(around, 2, "{record}");
    }
    // The scores a low caller gets are those of a service that never held
    // the high turns, nor the other scope's.
    let fresh = spawn_app().await;
    append(&fresh, "chat-3", "team-a", lunch).await;
    let (_, alone) = fresh
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &["team-a"]), "task_descriptor": "lunch",
                    "conversation_id": "chat-3", "context_turns": 2,
                    "memory_types": ["episodic"]}),
        )
        .await;
    let texts = |body: &Value| -> Vec<String> {
        body["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["payload"]["turn"]["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(texts(&low_answer), texts(&alone));
    let scored = |body: &Value| -> Vec<Value> {
        body["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| json!([s["score"], s["text"], s["salience"]]))
            .collect()
    };
    assert_eq!(scored(&low_answer), scored(&alone));

    // Filters: a speaker.
    let (_, by_bo) = post_as(
        &app,
        root,
        "/v1/retrieve",
        json!({"task_descriptor": "lunch vault", "speakers": ["Bo"]}),
    )
    .await;
    let mut spoken = texts(&by_bo);
    spoken.sort();
    assert_eq!(spoken, ["noted, the vault code", "sure, lunch"]);
    let (status, body) = post_as(&app, root, "/v1/retrieve", json!({"context_turns": 11})).await;
    assert_error(
        &(status, body),
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "context_turns",
    );
}

#[actix_web::test]
async fn a_conversation_is_erased_by_its_id_within_the_grant() {
    let app = spawn_app().await;
    append(
        &app,
        "chat-4",
        "team-a",
        vec![
            turn("Ann", "my address is 12 Elm Street", "2025-12-01T10:00:00Z"),
            turn("Bo", "got it", "2025-12-01T10:01:00Z"),
        ],
    )
    .await;
    append(
        &app,
        "chat-4",
        "team-b",
        vec![turn("Cy", "team b keeps this", "2025-12-01T10:00:00Z")],
    )
    .await;
    let (status, report) = app
        .post(
            "/v1/erase",
            &json!({"conversation_id": "chat-4", "actor": "dpo", "rationale": "asked to forget",
                    "trust": trust("hyper", &["team-a"])}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["erased"], 2, "{report}");
    assert!(read_back(&app, "chat-4", trust("hyper", &["team-a"]))
        .await
        .is_empty());
    let left = read_back(&app, "chat-4", trust("hyper", &[])).await;
    assert_eq!(left.len(), 1);
    let (status, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &[]), "task_descriptor": "Elm Street address"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(ids(&body).is_empty(), "{body}");
    // Nothing left of it to erase: as for any selector.
    let (status, _) = app
        .post(
            "/v1/erase",
            &json!({"conversation_id": "chat-4", "actor": "dpo", "rationale": "again",
                    "trust": trust("hyper", &["team-a"])}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// The project's conversation set (`tests/data/conversations`): turn-level
/// recall@5 beats a plain BM25 over the same turns by at least 0.08, on
/// either backend.
#[actix_web::test]
async fn turns_are_recalled_in_context_better_than_plain_bm25() {
    let app = spawn_app().await;
    let result = loadtests::conversations::run(loadtests::conversations::ConversationOptions {
        url: app.address.clone(),
        dataset: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/conversations"),
        headers: Vec::new(),
        test_embedder: false,
        one_scope: false,
        distractors: 0,
    })
    .await
    .unwrap();
    println!("{}", loadtests::conversations::report(&result));
    let at5 = |system: &str| result[system]["recall_at_5"].as_f64().unwrap();
    assert!(
        result["engram"]["questions"].as_u64().unwrap() >= 300,
        "{result}"
    );
    assert!(
        at5("engram") >= at5("baseline") + 0.08,
        "engram {} against plain BM25 {}",
        at5("engram"),
        at5("baseline")
    );
}
