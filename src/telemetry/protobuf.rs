//! The OTLP trace export request (`ExportTraceServiceRequest` of
//! `opentelemetry/proto/collector/trace/v1/trace_service.proto`) in
//! protobuf's wire format, written out for the fields engram fills: a
//! dozen messages do not need a code generator and its runtime.

/// A span attribute's value (`AnyValue`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Internal = 1,
    Server = 2,
}

/// A finished span, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanData {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    /// Whether the parent is another process's (a `traceparent` header).
    pub remote_parent: bool,
    pub name: String,
    pub kind: SpanKind,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub attributes: Vec<(String, Value)>,
    /// `Status.code` ERROR, with its message, when the span failed.
    pub error: Option<String>,
}

/// W3C trace flags: sampled (every exported span is).
const SAMPLED: u32 = 0x01;
/// `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK` and `…_IS_REMOTE_MASK`.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// The body of `POST /v1/traces`: `spans` under one resource (whose
/// attributes describe the process) and one instrumentation scope.
pub fn export_request(
    resource: &[(String, Value)],
    scope: (&str, &str),
    spans: &[SpanData],
) -> Vec<u8> {
    let mut scope_spans = Vec::new();
    message(&mut scope_spans, 1, |b| {
        string(b, 1, scope.0);
        string(b, 2, scope.1);
    });
    for span in spans {
        message(&mut scope_spans, 2, |b| encode_span(b, span));
    }
    let mut resource_spans = Vec::new();
    message(&mut resource_spans, 1, |b| {
        for (key, value) in resource {
            message(b, 1, |b| key_value(b, key, value));
        }
    });
    bytes(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::new();
    bytes(&mut request, 1, &resource_spans);
    request
}

fn encode_span(b: &mut Vec<u8>, span: &SpanData) {
    bytes(b, 1, &span.trace_id);
    bytes(b, 2, &span.span_id);
    if let Some(parent) = &span.parent_span_id {
        bytes(b, 4, parent);
    }
    string(b, 5, &span.name);
    varint_field(b, 6, span.kind as u64);
    fixed64(b, 7, span.start_unix_nano);
    fixed64(b, 8, span.end_unix_nano);
    for (key, value) in &span.attributes {
        message(b, 9, |b| key_value(b, key, value));
    }
    if let Some(why) = &span.error {
        message(b, 15, |b| {
            string(b, 2, why);
            // STATUS_CODE_ERROR
            varint_field(b, 3, 2);
        });
    }
    let mut flags = SAMPLED | HAS_IS_REMOTE;
    if span.remote_parent {
        flags |= IS_REMOTE;
    }
    tag(b, 16, 5);
    b.extend_from_slice(&flags.to_le_bytes());
}

fn key_value(b: &mut Vec<u8>, key: &str, value: &Value) {
    string(b, 1, key);
    message(b, 2, |b| match value {
        Value::Str(s) => string(b, 1, s),
        Value::Bool(v) => varint_field(b, 2, u64::from(*v)),
        // int64 is sent as its two's complement, in ten bytes when negative.
        Value::Int(v) => varint_field(b, 3, *v as u64),
        Value::Float(v) => {
            tag(b, 4, 1);
            b.extend_from_slice(&v.to_le_bytes());
        }
    });
}

fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn tag(b: &mut Vec<u8>, field: u32, wire_type: u8) {
    varint(b, (u64::from(field) << 3) | u64::from(wire_type));
}

fn varint_field(b: &mut Vec<u8>, field: u32, v: u64) {
    tag(b, field, 0);
    varint(b, v);
}

fn fixed64(b: &mut Vec<u8>, field: u32, v: u64) {
    tag(b, field, 1);
    b.extend_from_slice(&v.to_le_bytes());
}

fn bytes(b: &mut Vec<u8>, field: u32, data: &[u8]) {
    tag(b, field, 2);
    varint(b, data.len() as u64);
    b.extend_from_slice(data);
}

fn string(b: &mut Vec<u8>, field: u32, s: &str) {
    bytes(b, field, s.as_bytes());
}

/// A length-delimited submessage written by `fill`.
fn message(b: &mut Vec<u8>, field: u32, fill: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    fill(&mut inner);
    bytes(b, field, &inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_take_seven_bits_a_byte_low_first() {
        let mut b = Vec::new();
        varint(&mut b, 1);
        varint(&mut b, 300);
        varint(&mut b, u64::MAX);
        assert_eq!(&b[..3], &[0x01, 0xac, 0x02]);
        assert_eq!(b.len(), 3 + 10);
        assert_eq!(b[b.len() - 1], 0x01);
    }

    #[test]
    fn an_attribute_is_a_key_and_a_one_of_value() {
        let mut b = Vec::new();
        key_value(&mut b, "a", &Value::Str("xy".into()));
        // key: field 1, len 1, "a"; value: field 2, len 4, string_value
        // field 1, len 2, "xy".
        assert_eq!(b, [0x0a, 1, b'a', 0x12, 4, 0x0a, 2, b'x', b'y']);
        let mut b = Vec::new();
        key_value(&mut b, "n", &Value::Int(-1));
        assert_eq!(b.len(), 3 + 2 + 1 + 10);
        let mut b = Vec::new();
        key_value(&mut b, "t", &Value::Bool(true));
        assert_eq!(b, [0x0a, 1, b't', 0x12, 2, 0x10, 1]);
    }

    #[test]
    fn a_span_carries_its_ids_times_flags_and_status() {
        let span = SpanData {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent_span_id: Some([3; 8]),
            remote_parent: true,
            name: "GET /x".into(),
            kind: SpanKind::Server,
            start_unix_nano: 5,
            end_unix_nano: 6,
            attributes: vec![],
            error: Some("500".into()),
        };
        let mut b = Vec::new();
        encode_span(&mut b, &span);
        let mut want = vec![0x0a, 16];
        want.extend([1; 16]);
        want.extend([0x12, 8]);
        want.extend([2; 8]);
        want.extend([0x22, 8]);
        want.extend([3; 8]);
        want.extend([0x2a, 6]);
        want.extend(b"GET /x");
        want.extend([0x30, 2]);
        want.extend([0x39, 5, 0, 0, 0, 0, 0, 0, 0]);
        want.extend([0x41, 6, 0, 0, 0, 0, 0, 0, 0]);
        want.extend([0x7a, 7, 0x12, 3]);
        want.extend(b"500");
        want.extend([0x18, 2]);
        want.extend([0x85, 0x01, 0x01, 0x03, 0, 0]);
        assert_eq!(b, want);
    }
}
