//! The names, kinds, attributes and status the OpenTelemetry semantic
//! conventions give engram's spans: HTTP server spans for requests, with
//! the GenAI memory operation their route or MCP tool performs; the
//! actors and storage jobs within them.

use std::collections::HashMap;

use tracing::field::{Field, Visit};

use super::protobuf::{SpanKind, Value};

/// A span's fields by name.
#[derive(Default)]
pub struct Fields(pub(super) HashMap<&'static str, Value>);

impl Fields {
    fn str(&self, name: &str) -> Option<&str> {
        match self.0.get(name) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn int(&self, name: &str) -> Option<i64> {
        match self.0.get(name) {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), Value::Str(value.to_string()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name(), Value::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(
            field.name(),
            Value::Int(i64::try_from(value).unwrap_or(i64::MAX)),
        );
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name(), Value::Float(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name(), Value::Bool(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name(), Value::Str(format!("{value:?}")));
    }
}

/// A span as the semantic conventions name it.
#[derive(Debug, PartialEq)]
pub struct Described {
    pub name: String,
    pub kind: SpanKind,
    pub attributes: Vec<(String, Value)>,
    pub error: Option<String>,
}

/// The name, kind, attributes and status the conventions give the span
/// `name` with `fields`:
/// - `request`: an HTTP server span (`{method} {route}`), with the GenAI
///   memory operation its route performs;
/// - `actor`: an actor handling a request's message (`{actor} {message}`),
///   with the time the message waited in the actor's queue;
/// - `job`: a storage job (`job {name}`);
/// - any other: its own name, its fields under `engram.`.
pub fn describe(name: &str, fields: &Fields) -> Described {
    let mut attributes = Vec::new();
    let mut put = |key: &str, value: Value| attributes.push((key.to_string(), value));
    match name {
        "request" => {
            let method = fields.str("method").unwrap_or("_OTHER");
            let route = fields.str("route").filter(|route| *route != "unmatched");
            let known = matches!(
                method,
                "GET"
                    | "HEAD"
                    | "POST"
                    | "PUT"
                    | "DELETE"
                    | "PATCH"
                    | "OPTIONS"
                    | "CONNECT"
                    | "TRACE"
            );
            let span_method = if known { method } else { "HTTP" };
            let name = match route {
                Some(route) => format!("{span_method} {route}"),
                None => span_method.to_string(),
            };
            if known {
                put("http.request.method", Value::Str(method.to_string()));
            } else {
                put("http.request.method", Value::Str("_OTHER".to_string()));
                put(
                    "http.request.method_original",
                    Value::Str(method.to_string()),
                );
            }
            if let Some(route) = route {
                put("http.route", Value::Str(route.to_string()));
            }
            for (field, key) in [
                ("path", "url.path"),
                ("scheme", "url.scheme"),
                ("protocol", "network.protocol.version"),
                ("peer", "client.address"),
                ("user_agent", "user_agent.original"),
                ("key", "engram.key.name"),
                ("mcp_method", "mcp.method.name"),
                ("tool", "gen_ai.tool.name"),
            ] {
                if let Some(value) = fields.str(field) {
                    put(key, Value::Str(value.to_string()));
                }
            }
            let status = fields.int("status");
            if let Some(status) = status {
                put("http.response.status_code", Value::Int(status));
            }
            if let Some(operation) = fields.str("operation") {
                put("gen_ai.operation.name", Value::Str(operation.to_string()));
                if let Some(count) = fields.int("records") {
                    put("gen_ai.memory.record.count", Value::Int(count));
                }
            }
            // Only a server's own failure is the span's error: a 4xx is
            // the client's.
            let error = status.filter(|s| *s >= 500).map(|s| s.to_string());
            if let Some(error) = &error {
                put("error.type", Value::Str(error.clone()));
            }
            Described {
                name,
                kind: SpanKind::Server,
                attributes,
                error: error.map(|_| String::new()),
            }
        }
        "actor" => {
            let actor = fields.str("actor").unwrap_or("actor");
            let message = fields.str("message").unwrap_or("message");
            put("engram.actor", Value::Str(actor.to_string()));
            put("engram.message", Value::Str(message.to_string()));
            if let Some(Value::Float(ms)) = fields.0.get("queued_ms") {
                put("engram.queue.wait_ms", Value::Float(*ms));
            }
            Described {
                name: format!("{actor} {message}"),
                kind: SpanKind::Internal,
                attributes,
                error: None,
            }
        }
        "job" => {
            let job = fields.str("name").unwrap_or("job");
            put("engram.job", Value::Str(job.to_string()));
            Described {
                name: format!("job {job}"),
                kind: SpanKind::Internal,
                attributes,
                error: None,
            }
        }
        other => {
            let mut named: Vec<_> = fields.0.iter().collect();
            named.sort_by_key(|(field, _)| *field);
            for (field, value) in named {
                put(&format!("engram.{field}"), value.clone());
            }
            Described {
                name: other.to_string(),
                kind: SpanKind::Internal,
                attributes,
                error: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&'static str, Value)]) -> Fields {
        Fields(pairs.iter().cloned().collect())
    }

    fn attribute<'a>(described: &'a Described, key: &str) -> Option<&'a Value> {
        described
            .attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    #[test]
    fn a_request_is_an_http_server_span_named_by_its_route() {
        let described = describe(
            "request",
            &fields(&[
                ("method", Value::Str("POST".into())),
                ("route", Value::Str("/v1/retrieve".into())),
                ("path", Value::Str("/v1/retrieve".into())),
                ("status", Value::Int(200)),
                ("records", Value::Int(3)),
                ("key", Value::Str("agent".into())),
                ("operation", Value::Str("search_memory".into())),
            ]),
        );
        assert_eq!(described.name, "POST /v1/retrieve");
        assert_eq!(described.kind, SpanKind::Server);
        assert_eq!(described.error, None);
        assert_eq!(
            attribute(&described, "http.route"),
            Some(&Value::Str("/v1/retrieve".into()))
        );
        assert_eq!(
            attribute(&described, "http.response.status_code"),
            Some(&Value::Int(200))
        );
        assert_eq!(
            attribute(&described, "gen_ai.operation.name"),
            Some(&Value::Str("search_memory".into()))
        );
        assert_eq!(
            attribute(&described, "gen_ai.memory.record.count"),
            Some(&Value::Int(3))
        );
    }

    #[test]
    fn only_a_server_error_fails_a_request_span() {
        let with = |status| {
            describe(
                "request",
                &fields(&[
                    ("method", Value::Str("GET".into())),
                    ("route", Value::Str("unmatched".into())),
                    ("status", Value::Int(status)),
                ]),
            )
        };
        let missing = with(404);
        assert_eq!(missing.name, "GET");
        assert_eq!(missing.error, None);
        assert_eq!(attribute(&missing, "error.type"), None);
        let failed = with(503);
        assert!(failed.error.is_some());
        assert_eq!(
            attribute(&failed, "error.type"),
            Some(&Value::Str("503".into()))
        );
    }

    #[test]
    fn an_unknown_method_is_other_and_keeps_its_original() {
        let described = describe("request", &fields(&[("method", Value::Str("BREW".into()))]));
        assert_eq!(described.name, "HTTP");
        assert_eq!(
            attribute(&described, "http.request.method"),
            Some(&Value::Str("_OTHER".into()))
        );
        assert_eq!(
            attribute(&described, "http.request.method_original"),
            Some(&Value::Str("BREW".into()))
        );
    }
}
