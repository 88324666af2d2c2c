//! MCP 2026-07-28 and later: the stateless protocol, beside the
//! handshake-era versions on the same endpoint. There is no `initialize`:
//! each request names its protocol version and the client's capabilities
//! in `params._meta`, and repeats the version, its method and (for a tool
//! call) the tool's name in its `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers. `server/discover` says which versions are spoken.
//! A request whose header names a version no era speaks is refused with
//! the versions that are (`-32022`), its id echoed.

use actix_web::http::StatusCode;
use actix_web::HttpRequest;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{
    call, every_version, read_message, respond_with, rpc_error, Access, Answer, AppState,
    HttpResponse, RpcError, RpcResponse, HEADER_MISMATCH, INSTRUCTIONS, INVALID_PARAMS,
    INVALID_REQUEST, METHOD_NOT_FOUND, MODERN_VERSIONS, PARSE_ERROR, PROTOCOL_VERSION_HEADER,
    UNSUPPORTED_PROTOCOL_VERSION,
};

const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// The answer to a message sent with a protocol version that is not one of
/// the handshake era's.
pub(super) async fn answer(
    state: &AppState,
    access: &Access,
    req: &HttpRequest,
    message: &RawValue,
    stream: bool,
) -> HttpResponse {
    let version = header(req, PROTOCOL_VERSION_HEADER).unwrap_or_default();
    if message.get().starts_with('[') {
        let refused = RpcResponse::failed(
            None,
            INVALID_REQUEST,
            format!("invalid request: MCP {version} takes one JSON-RPC message per request, not a batch"),
        );
        return respond_with(StatusCode::BAD_REQUEST, stream, &refused);
    }
    let (id, request) = match read_message(message, false) {
        Err(refused) => return respond_with(StatusCode::BAD_REQUEST, stream, &refused),
        // A notification needs no answer; the core protocol defines none a
        // client sends, so it is taken and dropped.
        Ok(None) if MODERN_VERSIONS.contains(&version.as_str()) => {
            return HttpResponse::Accepted().finish()
        }
        Ok(None) => {
            let refused = RpcResponse::new(None, Err(super::unsupported_version(&version)));
            return respond_with(StatusCode::BAD_REQUEST, stream, &refused);
        }
        Ok(Some(read)) => read,
    };
    let outcome = match envelope(req, &request.method, request.params.as_ref(), &version) {
        Err(refused) => Err(refused),
        Ok(()) => {
            run(
                state,
                access,
                &request.method,
                request.params.unwrap_or(Value::Null),
            )
            .await
        }
    };
    let status = outcome
        .as_ref()
        .err()
        .map_or(StatusCode::OK, |error| http_status(error.code));
    respond_with(status, stream, &RpcResponse::new(id, outcome))
}

/// A header's value as text (`None` when absent or not text).
fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

/// The HTTP status of a request refused with JSON-RPC error `code`.
fn http_status(code: i64) -> StatusCode {
    match code {
        PARSE_ERROR
        | INVALID_REQUEST
        | INVALID_PARAMS
        | HEADER_MISMATCH
        | UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// Checks what every request of the stateless protocol carries, in the
/// specification's order: `params._meta` with the protocol version and
/// the client's capabilities; headers that say what the body says (each
/// once); a version spoken here.
fn envelope(
    req: &HttpRequest,
    method: &str,
    params: Option<&Value>,
    header_version: &str,
) -> Result<(), RpcError> {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    // A client that names a version no era speaks, and none of the
    // stateless protocol's fields, is told the versions first.
    if meta.is_none() && !MODERN_VERSIONS.contains(&header_version) {
        return Err(super::unsupported_version(header_version));
    }
    let Some(meta) = meta else {
        return Err(rpc_error(
            INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying {PROTOCOL_VERSION_META:?} and \
                 {CLIENT_CAPABILITIES_META:?}"
            ),
        ));
    };
    let missing: Vec<&str> = [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(rpc_error(
            INVALID_PARAMS,
            format!("params._meta lacks {}", missing.join(" and ")),
        ));
    }
    for name in [PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER] {
        if req.headers().get_all(name).count() > 1 {
            return Err(rpc_error(
                HEADER_MISMATCH,
                format!("the {name} header is sent more than once"),
            ));
        }
    }
    let version = &meta[PROTOCOL_VERSION_META];
    if version.as_str() != Some(header_version) {
        return Err(rpc_error(
            HEADER_MISMATCH,
            "the MCP-Protocol-Version header does not match params._meta's protocol version",
        ));
    }
    if header(req, METHOD_HEADER).as_deref() != Some(method) {
        return Err(rpc_error(
            HEADER_MISMATCH,
            "the Mcp-Method header does not match the request's method",
        ));
    }
    if method == "tools/call" {
        if let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) {
            let sent = header(req, NAME_HEADER).and_then(|value| decode_header(&value));
            if sent.as_deref() != Some(name) {
                return Err(rpc_error(
                    HEADER_MISMATCH,
                    "the Mcp-Name header does not match the tool's name",
                ));
            }
        }
    }
    if !MODERN_VERSIONS.contains(&header_version) {
        return Err(super::unsupported_version(header_version));
    }
    Ok(())
}

/// A header value as the client meant it: text that would not survive as
/// a header is sent as `=?base64?...?=` (standard base64, canonical).
/// `None` for a malformed one.
fn decode_header(value: &str) -> Option<String> {
    use base64::Engine;
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Runs a request of the stateless protocol; its result says it is
/// complete, and a list a client may cache says for how long (not at all).
async fn run(
    state: &AppState,
    access: &Access,
    method: &str,
    params: Value,
) -> Result<Answer, RpcError> {
    crate::telemetry::record_mcp_method(method);
    let result = match method {
        "server/discover" => json!({
            "supportedVersions": every_version(),
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
            "ttlMs": 0,
            "cacheScope": "private",
        }),
        "tools/list" => return Ok(Answer::Written(tools_listed())),
        "tools/call" => call(state, access.clone(), params).await?,
        other => {
            return Err(rpc_error(
                METHOD_NOT_FOUND,
                format!("unknown method {other:?} in the stateless protocol (there is no initialize or ping)"),
            ))
        }
    };
    Ok(Answer::Made(completed(result)))
}

fn server_info() -> Value {
    json!({"name": "engram", "version": env!("CARGO_PKG_VERSION")})
}

/// A result as this protocol gives it: complete, and naming the server.
fn completed(mut result: Value) -> Value {
    result["resultType"] = json!("complete");
    result["_meta"] = json!({SERVER_INFO_META: server_info()});
    result
}

/// The answer to `tools/list` in this protocol, written as JSON once (from
/// the handshake era's), as that one is.
fn tools_listed() -> &'static RawValue {
    static LISTED: std::sync::LazyLock<Box<RawValue>> = std::sync::LazyLock::new(|| {
        let mut listed: Value =
            serde_json::from_str(super::tools_listed().get()).expect("the tool list is JSON");
        listed["ttlMs"] = json!(0);
        listed["cacheScope"] = json!("private");
        serde_json::value::to_raw_value(&completed(listed)).expect("the tool list is JSON")
    });
    &LISTED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_decode_from_their_base64_form_only_when_canonical() {
        use base64::Engine;
        assert_eq!(decode_header("recall").as_deref(), Some("recall"));
        let encoded = base64::engine::general_purpose::STANDARD.encode("café ☕");
        assert_eq!(
            decode_header(&format!("=?base64?{encoded}?=")).as_deref(),
            Some("café ☕")
        );
        // Not canonical (bits where the padding drops them), or not base64.
        assert_eq!(decode_header("=?base64?aGVsbG9=?="), None);
        assert_eq!(decode_header("=?base64?a$==?="), None);
        assert_eq!(decode_header("=?base64?abc?="), None);
    }
}
