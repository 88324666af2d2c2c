//! MCP's streamable HTTP transport as a client sees it: the protocol
//! version header, answers as JSON or as an event stream, JSON-RPC errors
//! for what is not a request, and batches only where the version has them.

use serde_json::{json, Value};

use crate::helpers::{raw, spawn_app};

const LOCAL: &str = "Host: 127.0.0.1";
const JSON: &str = "Content-Type: application/json";
const BOTH: &str = "Accept: application/json, text/event-stream";

fn parsed(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[actix_web::test]
async fn the_newest_version_is_agreed_and_an_unknown_one_is_refused() {
    let app = spawn_app().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH], &init).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(parsed(&body)["result"]["protocolVersion"], "2025-11-25");

    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let header = format!("MCP-Protocol-Version: {version}");
        let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH, &header], ping).await;
        assert_eq!(status, 200, "{version}: {body}");
        assert_eq!(parsed(&body)["id"], 2);
    }
    // A version no era speaks: refused with the versions that are, the
    // request's id echoed.
    let header = "MCP-Protocol-Version: 2099-01-01";
    let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH, header], ping).await;
    assert_eq!(status, 400, "{body}");
    let answer = parsed(&body);
    assert_eq!(answer["jsonrpc"], "2.0");
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["error"]["code"], -32022);
    assert_eq!(
        answer["error"]["data"],
        json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
               "requested": "2099-01-01"})
    );
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("2099-01-01"), "{message}");
}

/// A request of the stateless protocol (2026-07-28): `params._meta` names
/// the version and the client's capabilities, the headers repeat the
/// version, the method and a tool's name.
fn stateless(id: Value, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[actix_web::test]
async fn the_stateless_protocol_needs_no_handshake_and_checks_each_request() {
    let app = spawn_app().await;
    let version = "MCP-Protocol-Version: 2026-07-28";
    let post = |headers: Vec<&'static str>, body: String| {
        let app = &app;
        async move {
            let mut all = vec![LOCAL, JSON, BOTH, version];
            all.extend(headers);
            let (status, body) = raw(app, "POST", "/mcp", &all, &body).await;
            (status, parsed(&body))
        }
    };
    let (status, found) = post(
        vec!["Mcp-Method: server/discover"],
        stateless(json!("d"), "server/discover", json!({})),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let result = &found["result"];
    assert_eq!(found["id"], "d");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"][0], "2026-07-28");
    assert!(result["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2025-11-25")));
    assert_eq!(
        result["capabilities"]["tools"],
        json!({"listChanged": false})
    );
    assert_eq!(result["serverInfo"]["name"], "engram");
    assert!(result["instructions"].as_str().unwrap().contains("recall"));

    let (status, listed) = post(
        vec!["Mcp-Method: tools/list"],
        stateless(json!(1), "tools/list", json!({})),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["ttlMs"], 0);
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 11);

    // A tool call, its name in Mcp-Name (base64 where a header cannot
    // hold it as it is: the same name).
    let call = stateless(
        json!(2),
        "tools/call",
        json!({"name": "get_record", "arguments": {"id": "nothing", "trust": {"max_sensitivity": "low"}}}),
    );
    let (status, called) = post(
        vec!["Mcp-Method: tools/call", "Mcp-Name: get_record"],
        call.clone(),
    )
    .await;
    assert_eq!(status, 200, "{called}");
    assert_eq!(called["result"]["isError"], true);
    assert_eq!(called["result"]["resultType"], "complete");
    let (status, called) = post(
        vec![
            "Mcp-Method: tools/call",
            "Mcp-Name: =?base64?Z2V0X3JlY29yZA==?=",
        ],
        call.clone(),
    )
    .await;
    assert_eq!(status, 200, "{called}");

    // Headers that do not say what the body says; a missing envelope; a
    // method the stateless protocol has not; a batch; a notification.
    for (headers, body, status, code) in [
        (
            vec!["Mcp-Method: tools/call", "Mcp-Name: recall"],
            call.clone(),
            400,
            -32020,
        ),
        (vec!["Mcp-Method: tools/list"], call.clone(), 400, -32020),
        (
            vec![],
            stateless(json!(3), "tools/list", json!({})),
            400,
            -32020,
        ),
        (
            vec!["Mcp-Method: tools/list", "Mcp-Method: tools/list"],
            stateless(json!(3), "tools/list", json!({})),
            400,
            -32020,
        ),
        (
            vec!["Mcp-Method: tools/list"],
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}).to_string(),
            400,
            -32602,
        ),
        (
            vec!["Mcp-Method: initialize"],
            stateless(json!(5), "initialize", json!({})),
            404,
            -32601,
        ),
        (
            vec!["Mcp-Method: ping"],
            stateless(json!(6), "ping", json!({})),
            404,
            -32601,
        ),
    ] {
        let (got, answer) = post(headers.clone(), body).await;
        assert_eq!(got, status, "{headers:?}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{headers:?}: {answer}");
        assert_ne!(answer["id"], Value::Null, "the id is echoed: {answer}");
    }
    let mut other = stateless(json!(7), "tools/list", json!({}));
    other = other.replace("\"2026-07-28\"", "\"2026-01-01\"");
    let (status, answer) = post(vec!["Mcp-Method: tools/list"], other).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["error"]["code"], -32020,
        "the body's version is not the header's"
    );

    let batch = format!("[{}]", stateless(json!(8), "tools/list", json!({})));
    let (status, answer) = post(vec!["Mcp-Method: tools/list"], batch).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32600);
    let (status, body) = raw(
        &app,
        "POST",
        "/mcp",
        &[
            LOCAL,
            JSON,
            BOTH,
            version,
            "Mcp-Method: notifications/cancelled",
        ],
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#,
    )
    .await;
    assert_eq!(status, 202, "{body}");
}

#[actix_web::test]
async fn a_client_that_accepts_only_an_event_stream_gets_one_event() {
    let app = spawn_app().await;
    let ping = r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#;
    let accept = "Accept: text/event-stream";
    let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, accept], ping).await;
    assert_eq!(status, 200, "{body}");
    let data = body
        .strip_prefix("event: message\ndata: ")
        .and_then(|rest| rest.strip_suffix("\n\n"))
        .unwrap_or_else(|| panic!("not one event: {body:?}"));
    assert_eq!(
        parsed(data),
        json!({"jsonrpc": "2.0", "id": "p", "result": {}})
    );
    // Accepting both, or JSON alone, is answered with JSON.
    for accept in [BOTH, "Accept: application/json", "Accept: */*"] {
        let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, accept], ping).await;
        assert_eq!(status, 200, "{accept}: {body}");
        assert_eq!(parsed(&body)["id"], "p", "{accept}");
    }
    // A notification still gets no body at all.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, accept], note).await;
    assert_eq!((status, body.as_str()), (202, ""));
}

#[actix_web::test]
async fn what_is_not_a_request_gets_a_json_rpc_error() {
    let app = spawn_app().await;
    let cases = [
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, ", -32700, Value::Null),
        ("[1", -32700, Value::Null),
        ("42", -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":3}"#, -32600, json!(3)),
        (
            r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#,
            -32600,
            json!(4),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            -32600,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":5,"method":7}"#, -32600, json!(5)),
    ];
    for (body, code, id) in cases {
        let (status, answer) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH], body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        let answer = parsed(&answer);
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert_eq!(answer["id"], id, "{body}: {answer}");
        assert_eq!(answer["jsonrpc"], "2.0");
    }
    // A response (to a request this server never sends) needs no answer.
    let response = r#"{"jsonrpc":"2.0","id":9,"result":{}}"#;
    let (status, _) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH], response).await;
    assert_eq!(status, 202);
    // An unknown method is a JSON-RPC error in a 200 answer, as before.
    let unknown = r#"{"jsonrpc":"2.0","id":6,"method":"resources/list"}"#;
    let (status, answer) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH], unknown).await;
    assert_eq!(status, 200);
    assert_eq!(parsed(&answer)["error"]["code"], -32601);
}

#[actix_web::test]
async fn batches_are_answered_only_in_the_version_that_has_them() {
    let app = spawn_app().await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}},
        17,
    ])
    .to_string();
    for headers in [
        vec![LOCAL, JSON, BOTH, "MCP-Protocol-Version: 2025-03-26"],
        // Without the header a client is taken to speak 2025-03-26.
        vec![LOCAL, JSON, BOTH],
    ] {
        let (status, body) = raw(&app, "POST", "/mcp", &headers, &batch).await;
        assert_eq!(status, 200, "{body}");
        let answers = parsed(&body);
        let answers = answers.as_array().expect("an array answers a batch");
        assert_eq!(answers.len(), 4, "the notification is not answered: {body}");
        assert_eq!(answers[0]["id"], 1);
        assert_eq!(answers[0]["result"], json!({}));
        assert_eq!(answers[1]["id"], "two");
        assert!(answers[1]["result"]["tools"].as_array().unwrap().len() > 5);
        assert_eq!(answers[2]["id"], 3);
        assert_eq!(answers[2]["error"]["code"], -32600, "initialize alone");
        assert_eq!(answers[3]["id"], Value::Null);
        assert_eq!(answers[3]["error"]["code"], -32600);
    }
    let only_notes = r#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
    let (status, _) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH], only_notes).await;
    assert_eq!(status, 202);
    let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH], "[]").await;
    assert_eq!(status, 400);
    assert_eq!(parsed(&body)["error"]["code"], -32600);
    for version in ["2025-11-25", "2025-06-18"] {
        let header = format!("MCP-Protocol-Version: {version}");
        let (status, body) = raw(&app, "POST", "/mcp", &[LOCAL, JSON, BOTH, &header], &batch).await;
        assert_eq!(status, 400, "{version}: {body}");
        let answer = parsed(&body);
        assert_eq!(answer["error"]["code"], -32600);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("batch"),
            "{answer}"
        );
    }
}
