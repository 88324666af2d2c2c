//! What no single request may exhaust or slip past: MCP batches bounded
//! like one request, rates that are numbers a limiter can hold and never
//! above the maker's, hosts read strictly, bodies only as JSON, times in
//! one form and JSON-RPC ids echoed as sent.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, raw, spawn_app, spawn_app_with};

const LOCAL: &str = "Host: 127.0.0.1";
const JSON: &str = "Content-Type: application/json";

fn parsed(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// POSTs `body` to `/mcp` as an open client on loopback.
async fn mcp(app: &crate::helpers::TestApp, body: &str) -> (u16, String) {
    raw(app, "POST", "/mcp", &[LOCAL, JSON], body).await
}

/// `count` JSON-RPC requests of `method` as one batch.
fn batch(count: usize, method: &str, params: Value) -> String {
    let messages: Vec<Value> = (0..count)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": method, "params": params}))
        .collect();
    Value::Array(messages).to_string()
}

/// Resident anonymous memory of this process (the server runs in it), in
/// kB.
fn anonymous_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[actix_web::test]
async fn an_mcp_batch_is_bounded_like_one_request() {
    let app = spawn_app().await;
    // Two batches of 3,000 messages at once: refused before any runs, and
    // the service answers its health check meanwhile.
    let huge = batch(3000, "tools/list", json!({}));
    let before = anonymous_kb();
    let sends: Vec<_> = (0..2)
        .map(|_| {
            let address = app.address.clone();
            let body = huge.clone();
            std::thread::spawn(move || {
                let head = format!(
                    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                crate::helpers::read_answer(crate::helpers::raw_request(&address, &head)).unwrap()
            })
        })
        .collect();
    let probe = Instant::now();
    let (status, _) = app.get("/healthz").await;
    let health = probe.elapsed();
    for send in sends {
        let answer = send.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer:.300}");
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        let error = &parsed(body)["error"];
        assert_eq!(error["code"], -32600, "{body}");
        assert!(
            error["message"].as_str().unwrap().contains("at most 32"),
            "{body}"
        );
    }
    assert_eq!(status, StatusCode::OK);
    assert!(health < Duration::from_secs(2), "/healthz took {health:?}");
    let grown_mb = anonymous_kb().saturating_sub(before) / 1024;
    assert!(grown_mb < 256, "anonymous memory grew by {grown_mb} MB");

    // A batch within the bound runs whole, the tool list built once.
    let (status, body) = mcp(&app, &batch(32, "tools/list", json!({}))).await;
    assert_eq!(status, 200, "{body:.300}");
    let answers = parsed(&body);
    assert_eq!(answers.as_array().unwrap().len(), 32);
    assert_eq!(answers[0]["result"], answers[31]["result"]);
    let (status, body) = mcp(&app, &batch(33, "ping", json!({}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(parsed(&body)["error"]["code"], -32600);
}

#[actix_web::test]
async fn a_batch_answers_within_the_response_size_of_one_request() {
    // Room for one tool list (about 130 KB with the tools' output
    // schemas), not for 32.
    let app = spawn_app_with(|s| s.retrieval.max_response_bytes = 262_144).await;
    let (status, body) = mcp(&app, &batch(32, "tools/list", json!({}))).await;
    assert_eq!(status, 200);
    assert!(body.len() <= 262_144, "{} bytes", body.len());
    let answers = parsed(&body);
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 32, "every message is answered");
    assert!(answers[0]["result"]["tools"].is_array(), "the first fits");
    let cut = answers.last().unwrap();
    assert_eq!(cut["id"], 31);
    assert_eq!(cut["error"]["code"], -32000, "{cut}");
    assert!(
        cut["error"]["message"]
            .as_str()
            .unwrap()
            .contains("262144 bytes"),
        "{cut}"
    );
}

#[actix_web::test]
async fn each_message_of_a_batch_counts_against_the_keys_rate() {
    let app = spawn_app().await;
    let admin = app.root_key().await;
    let slow = app
        .make_key(
            Some(&admin),
            json!({"name": "slow", "roles": ["read", "write"], "rate": 2}),
        )
        .await;
    let bearer = format!("Authorization: Bearer {slow}");
    let events = batch(
        5,
        "tools/call",
        json!({"name": "remember_event", "arguments": {"source": "s", "event_kind": "system", "ref": "r", "summary": "batched"}}),
    );
    let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, &bearer], &events).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("rate_limited"), "{body}");
    let (_, found, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&admin))
        .await;
    assert_eq!(found["records"], json!([]), "nothing of it was stored");
}

#[actix_web::test]
async fn json_rpc_ids_come_back_exactly_as_sent() {
    let app = spawn_app().await;
    for id in [
        "123456789012345678901234567890",
        "-0.10",
        "18446744073709551616",
        r#""x""#,
    ] {
        let ping = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON], &ping).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!(r#""id":{id}"#)), "{id}: {body}");
        let one = format!("[{ping}]");
        let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON], &one).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!(r#""id":{id}"#)), "{id}: {body}");
    }
}

#[actix_web::test]
async fn a_rate_is_a_number_a_limiter_holds_and_no_key_outpaces_its_maker() {
    let app = spawn_app().await;
    for rate in [json!(1e-19), json!(5e-324), json!(0), json!(-1), json!(1e9)] {
        let answer = app
            .send(
                "POST",
                "/v1/keys",
                Some(&json!({"name": "tiny", "rate": rate})),
                None,
            )
            .await;
        assert_error(
            &(answer.0, answer.1),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "rate",
        );
    }
    let admin = app
        .make_key(
            None,
            json!({"name": "ops", "roles": ["admin"], "max_sensitivity": "hyper", "rate": 2}),
        )
        .await;
    let (status, body, _) = app
        .send(
            "POST",
            "/v1/keys",
            Some(&json!({"name": "fast", "roles": ["admin"], "rate": 1000})),
            Some(&admin),
        )
        .await;
    assert_error(
        &(status, body),
        StatusCode::FORBIDDEN,
        "permission_denied",
        "rate",
    );
    // Asked for none, it gets its maker's, not the faster default.
    actix_web::rt::time::sleep(Duration::from_secs(1)).await;
    let (status, body, _) = app
        .send(
            "POST",
            "/v1/keys",
            Some(&json!({"name": "child", "roles": ["read"]})),
            Some(&admin),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["key"]["rate"], json!(2.0));
    assert_eq!(body["key"]["rate_is_default"], json!(false));
}

#[test]
fn the_cli_refuses_a_rate_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("engram.db");
    for rate in ["1e-300", "0", "1e9", "NaN", "inf"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["keys", "create", "--name", "tiny", "--rate", rate])
            .envs(crate::helpers::database_env_for(&db))
            .env_remove("ENGRAM_CONFIG")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{rate}: {out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("rate"), "{rate}: {said}");
    }
}

/// Sends raw bytes as a request; answers the status line's code.
fn status_of(address: &str, request: &[u8]) -> u16 {
    let mut stream = std::net::TcpStream::connect(address.trim_start_matches("http://")).unwrap();
    stream.write_all(request).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.get(9..12)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"))
}

#[actix_web::test]
async fn only_a_well_formed_host_that_names_the_service_passes() {
    let app = spawn_app().await;
    let address = app.address.clone();
    let statuses = actix_web::rt::task::spawn_blocking(move || {
        let get = |host: &[u8]| {
            let mut request = b"GET /v1/jobs HTTP/1.1\r\nConnection: close\r\nHost: ".to_vec();
            request.extend_from_slice(host);
            request.extend_from_slice(b"\r\n\r\n");
            status_of(&address, &request)
        };
        let mut statuses = Vec::new();
        for host in [
            &b"[::1]evil.com"[..],
            b"[::1].evil.com",
            b"localhost.",
            b"127.1",
            b"2130706433",
            b"0x7f000001",
            b"local\xffhost",
            b"localhost:80:80",
        ] {
            statuses.push((String::from_utf8_lossy(host).into_owned(), get(host)));
        }
        statuses.push(("[::1]:8080".into(), get(b"[::1]:8080")));
        statuses.push(("localhost:8080".into(), get(b"localhost:8080")));
        statuses.push((
            "HTTP/1.1 without Host".into(),
            status_of(
                &address,
                b"GET /v1/jobs HTTP/1.1\r\nConnection: close\r\n\r\n",
            ),
        ));
        statuses.push((
            "HTTP/1.0 without Host".into(),
            status_of(&address, b"GET /v1/jobs HTTP/1.0\r\n\r\n"),
        ));
        statuses
    })
    .await
    .unwrap();
    let expected = [421, 421, 421, 421, 421, 421, 421, 421, 200, 200, 400, 421];
    for ((host, status), expected) in statuses.iter().zip(expected) {
        assert_eq!(*status, expected, "Host: {host}");
    }
}

#[actix_web::test]
async fn a_body_that_is_not_json_reaches_no_route() {
    let app = spawn_app().await;
    for content_type in [
        "Content-Type: text/plain",
        "Content-Type: application/x-www-form-urlencoded",
    ] {
        let (status, body) = raw(
            &app,
            "POST",
            "/v1/jobs/decay/run",
            &[LOCAL, content_type],
            "x=1",
        )
        .await;
        assert_eq!(status, 415, "{content_type}: {body}");
        assert!(body.contains("unsupported_media_type"), "{body}");
    }
    let (status, body) = raw(&app, "POST", "/v1/jobs/decay/run", &[LOCAL], "x=1").await;
    assert_eq!(status, 415, "a body without a type: {body}");
    let (status, body) = raw(&app, "POST", "/v1/jobs/decay/run", &[LOCAL], "").await;
    assert_eq!(status, 200, "no body needs no type: {body}");
}

#[actix_web::test]
async fn every_time_in_an_answer_has_one_form() {
    let app = spawn_app().await;
    let (_, body) = app
        .post("/v1/ingest/event", &crate::helpers::event("clock"))
        .await;
    let mut times = Vec::new();
    collect_times(&body, &mut times);
    let (_, jobs) = app.get("/v1/jobs").await;
    collect_times(&jobs, &mut times);
    assert!(times.len() >= 3, "{times:?}");
    for time in &times {
        assert_eq!(time.len(), 27, "{time}");
        assert!(time.ends_with('Z') && time.as_bytes()[19] == b'.', "{time}");
    }
}

fn collect_times(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s)
            if s.len() > 19 && s.as_bytes()[10] == b'T' && s[..4].parse::<u32>().is_ok() =>
        {
            out.push(s.clone())
        }
        Value::Array(items) => items.iter().for_each(|v| collect_times(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_times(v, out)),
        _ => {}
    }
}

#[actix_web::test]
async fn a_cursor_is_opaque_and_opens_only_for_its_caller_and_query() {
    let app = spawn_app().await;
    let admin = app.root_key().await;
    let team = app
        .make_key(
            Some(&admin),
            json!({"name": "team", "roles": ["read", "write"], "scopes": ["t"]}),
        )
        .await;
    for i in 0..6 {
        let fact = json!({"source": "s", "subject": "billing", "predicate": "fact",
            "object": format!("billing fact {i}"), "scope": "t"});
        let (status, body, _) = app
            .send("POST", "/v1/ingest/observation", Some(&fact), Some(&team))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let query = json!({"task_descriptor": "billing fact", "page_size": 2});
    let (status, first, _) = app
        .send("POST", "/v1/retrieve", Some(&query), Some(&team))
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    // Nothing inside can be read: no row key, no count, no time.
    assert!(
        cursor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{cursor}"
    );
    assert!(!cursor.contains('.'), "{cursor}");
    let mut next = query.clone();
    next["cursor"] = json!(cursor);
    let (status, second, _) = app
        .send("POST", "/v1/retrieve", Some(&next), Some(&team))
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(crate::helpers::ids(&second).len(), 2);

    let refused = |answer: (StatusCode, Value, awc::http::header::HeaderMap)| {
        assert_error(
            &(answer.0, answer.1),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "cursor",
        );
    };
    // Another caller, another query, or a cursor the service never issued.
    refused(
        app.send("POST", "/v1/retrieve", Some(&next), Some(&admin))
            .await,
    );
    let mut other = next.clone();
    other["task_descriptor"] = json!("billing");
    refused(
        app.send("POST", "/v1/retrieve", Some(&other), Some(&team))
            .await,
    );
    let mut bigger = next.clone();
    bigger["page_size"] = json!(3);
    refused(
        app.send("POST", "/v1/retrieve", Some(&bigger), Some(&team))
            .await,
    );
    let mut tampered = cursor.clone().into_bytes();
    let last = tampered.len() - 5;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    for forged in [
        String::from_utf8(tampered).unwrap(),
        "1.1764288000000000.3ff0000000000000.0.0.0.5".to_string(),
        String::new(),
        "+".to_string(),
    ] {
        let mut bad = query.clone();
        bad["cursor"] = json!(forged);
        refused(
            app.send("POST", "/v1/retrieve", Some(&bad), Some(&team))
                .await,
        );
    }
}

#[actix_web::test]
async fn a_batch_runs_within_the_deadline_of_one_request() {
    let app = spawn_app_with(|s| {
        s.storage.write_timeout_ms = 300;
        s.storage.read_timeout_ms = 300;
    })
    .await;
    // The writer is held: each ingest would wait out its own deadline, one
    // after the other.
    let held = app.block_writer().await;
    let events = batch(
        10,
        "tools/call",
        json!({"name": "remember_event", "arguments": {"source": "s", "event_kind": "system", "ref": "r", "summary": "late"}}),
    );
    let started = Instant::now();
    let (status, body) = mcp(&app, &events).await;
    let took = started.elapsed();
    drop(held);
    assert_eq!(status, 200, "{body}");
    let answers = parsed(&body);
    let answers = answers.as_array().unwrap();
    assert_eq!(answers.len(), 10, "every message is answered");
    let cut = answers
        .iter()
        .filter(|a| a["error"]["code"] == -32000)
        .count();
    assert!(cut >= 8, "{body}");
    assert!(
        answers.last().unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("300 ms"),
        "{body}"
    );
    // One deadline and a little, not ten.
    assert!(took < Duration::from_millis(1500), "{took:?}");
}
