//! What the API document states beyond each field's schema: the rules
//! between fields of a body, and the document of an instance that needs
//! no key.

use std::sync::OnceLock;

use serde_json::json;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{OpenApi as Document, Ref, RefOr};
use utoipa::Modify;

use super::document;
use crate::domain::record::MemoryType;

/// The bodies whose `trust` is, without keys, all a read is granted: the
/// server refuses them without one then.
const TRUST_REQUIRED_WITHOUT_KEYS: [&str; 9] = [
    "TrustOnlyRequest",
    "RetrieveRequest",
    "GraphRequest",
    "TurnsRequest",
    "IngestBody",
    "QueryBody",
    "ViewBody",
    "TrustBody",
    "EdgeChangeBody",
];

/// The document of an instance that needs no key (`auth.mode` off, or
/// `auto` before the first key): the same, `trust` required wherever it
/// is the only grant a read has.
pub fn document_without_keys() -> &'static Document {
    static DOCUMENT: OnceLock<Document> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut doc = document().clone();
        let schemas = &mut doc.components.get_or_insert_with(Default::default).schemas;
        for name in TRUST_REQUIRED_WITHOUT_KEYS {
            let Some(RefOr::T(Schema::Object(object))) = schemas.get_mut(name) else {
                unreachable!("{name} is an object component")
            };
            object.required.push("trust".to_string());
            let mut trust = Ref::from_schema_name("TrustContext");
            trust.description = "What the caller may see: without keys, its own word.".into();
            object.properties.insert("trust".to_string(), trust.into());
        }
        doc
    })
}

/// The rules between fields of a body, which no field's schema can state
/// alone: added to the components of the types they bind.
pub(super) struct Rules;

impl Modify for Rules {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        let mut rule = |name: &str, key: &str, value: serde_json::Value| {
            let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(name) else {
                unreachable!("{name} is an object component")
            };
            object
                .extensions
                .get_or_insert_with(Default::default)
                .insert(key.to_string(), value);
        };
        // Resolving a contest names no contesting reference.
        rule(
            "ContestRequest",
            "not",
            json!({"type": "object", "required": ["resolve", "contesting_ref"], "properties": {
                "resolve": {"const": true}, "contesting_ref": {"type": "string"}}}),
        );
        // An erasure selects by exactly one of its selectors (`null` is
        // none): one given, the others are not; none given, `ids` is.
        // `if`/`then` rather than a `oneOf`, which client generators read
        // as a union of objects.
        let selectors = [
            ("ids", "array"),
            ("scope", "string"),
            ("source", "string"),
            ("subject", "string"),
            ("conversation_id", "string"),
        ];
        let absent = |except: &str| {
            let others: serde_json::Map<String, serde_json::Value> = selectors
                .iter()
                .filter(|(field, _)| *field != except)
                .map(|(field, _)| (field.to_string(), json!({"type": "null"})))
                .collect();
            json!({"type": "object", "properties": others})
        };
        let mut exactly_one: Vec<serde_json::Value> = selectors
            .iter()
            .map(|&(field, kind)| {
                json!({
                    "if": {"type": "object", "required": [field],
                        "properties": {field: {"type": kind}}},
                    "then": absent(field)
                })
            })
            .collect();
        exactly_one.push(json!({
            "if": absent("ids"),
            "then": {"type": "object", "required": ["ids"], "properties": {"ids": {"type": "array"}}}
        }));
        rule("EraseBody", "allOf", exactly_one.into());
        // A record's type is its payload's kind; a new record is active,
        // with no supersession links (only revisions make them). Stated as
        // one `if`/`then` per type, as client generators read a `oneOf`
        // beside the properties as a union of objects.
        rule(
            "NewRecord",
            "allOf",
            MemoryType::ALL
                .iter()
                .map(|kind| {
                    let mut payload = json!({"type": "object", "required": ["kind"],
                        "properties": {"kind": {"const": kind.as_str()}}});
                    if *kind == MemoryType::Semantic {
                        payload["properties"]["revision"] = json!({"type": "object", "properties": {
                            "status": {"const": "active"},
                            "supersedes": {"type": "null"},
                            "superseded_by": {"type": "null"}}});
                    }
                    json!({
                        "if": {"type": "object", "required": ["type"],
                            "properties": {"type": {"const": kind.as_str()}}},
                        "then": {"type": "object", "properties": {"payload": payload}}
                    })
                })
                .collect(),
        );
        // Where a topics ingest goes decides what it needs.
        rule(
            "IngestBody",
            "allOf",
            json!([
                {"if": {"type": "object", "required": ["placement"], "properties": {
                    "placement": {"enum": ["extend_topic", "version_field"]}}},
                 "then": {"type": "object", "required": ["topic_id"], "properties": {
                    "topic_id": {"type": "string", "minLength": 1}}},
                 "else": {"type": "object", "required": ["title"], "properties": {
                    "topic_id": {"type": ["string", "null"], "maxLength": 0},
                    "title": {"type": "string", "minLength": 1}}}},
                {"if": {"type": "object", "required": ["placement"], "properties": {
                    "placement": {"const": "version_field"}}},
                 "then": {"type": "object", "required": ["fields"], "properties": {
                    "fields": {"type": "array", "minItems": 1, "maxItems": 1}}}},
                {"if": {"type": "object", "required": ["on_ambiguous"], "properties": {
                    "on_ambiguous": {"const": "fail"}}},
                 "then": {"type": "object", "properties": {
                    "placement": {"enum": ["auto", null]}}}}
            ]),
        );
        // A semantic record a revision makes carries evidence of its own.
        for (name, field) in [
            ("SupersedeRequest", "new_record"),
            ("ForkRequest", "forked_record"),
            ("MergeRequest", "merged_record"),
        ] {
            rule(
                name,
                "allOf",
                json!([{
                    "if": {"type": "object", "required": [field], "properties": {field: {
                        "type": "object", "required": ["type"],
                        "properties": {"type": {"const": "semantic"}}}}},
                    "then": {"type": "object", "properties": {field: {"anyOf": [
                        {"type": "object", "required": ["payload"], "properties": {"payload": {
                            "type": "object", "required": ["evidence"],
                            "properties": {"evidence": {"type": "array", "minItems": 1}}}}},
                        {"type": "object", "required": ["provenance"], "properties": {"provenance": {
                            "type": "object", "required": ["sources"],
                            "properties": {"sources": {"type": "array", "minItems": 1}}}}}
                    ]}}}
                }]),
            );
        }
        // An erasure names who asks for it and why.
        let Some(RefOr::T(Schema::Object(erase))) = components.schemas.get_mut("EraseBody") else {
            unreachable!("EraseBody is an object component")
        };
        erase
            .required
            .extend(["actor".to_string(), "rationale".to_string()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_keys_every_body_whose_trust_is_a_reads_grant_requires_it() {
        let keyed = serde_json::to_value(document()).unwrap();
        let open = serde_json::to_value(document_without_keys()).unwrap();
        for (name, schema) in keyed["components"]["schemas"].as_object().unwrap() {
            if schema["properties"].get("trust").is_none() {
                continue;
            }
            let required = |doc: &serde_json::Value| {
                doc["components"]["schemas"][name]["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&json!("trust")))
            };
            assert!(
                !required(&keyed),
                "{name}: a key's grant stands in for trust"
            );
            // An erasure without keys and without trust erases as anyone.
            let listed = TRUST_REQUIRED_WITHOUT_KEYS.contains(&name.as_str());
            assert!(
                listed || name == "EraseBody" || name == "ReviseArgs" || name == "GetRecordArgs",
                "{name}: is its trust required without keys?"
            );
            assert_eq!(required(&open), listed, "{name}");
        }
    }

    #[test]
    fn every_path_parameter_states_what_the_handler_takes() {
        let doc = serde_json::to_value(document()).unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for parameter in op["parameters"].as_array().into_iter().flatten() {
                    if parameter["in"] == "path" {
                        let schema = &parameter["schema"];
                        assert!(
                            schema.get("maxLength").is_some()
                                || schema.get("enum").is_some()
                                || schema.get("pattern").is_some(),
                            "{method} {path}: {parameter}"
                        );
                    }
                }
            }
        }
    }
}
