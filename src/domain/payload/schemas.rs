//! The schemas of the payloads' lists, counts and free-form objects, for
//! the API document (`schema_with`): as the payloads read them, `null`
//! for a list is none.

use super::super::schema;

fn list_of(name: &str) -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name(name),
        0,
        usize::MAX,
        true,
    )
}

pub(super) fn timeline() -> utoipa::openapi::Array {
    list_of("TimelineEvent")
}

pub(super) fn tool_graph() -> utoipa::openapi::Array {
    list_of("ToolNode")
}

pub(super) fn artifacts() -> utoipa::openapi::Array {
    schema::list(utoipa::openapi::ObjectBuilder::new(), 0, usize::MAX, true)
}

pub(super) fn evidence() -> utoipa::openapi::Array {
    list_of("Evidence")
}

pub(super) fn triggers() -> utoipa::openapi::Array {
    list_of("Trigger")
}

pub(super) fn recipe() -> utoipa::openapi::Array {
    list_of("RecipeStep")
}

pub(super) fn plan_nodes() -> utoipa::openapi::Array {
    let mut nodes = list_of("PlanNode");
    nodes.description = Some("Each node's `id` once.".into());
    nodes
}

pub(super) fn plan_edges() -> utoipa::openapi::Array {
    let mut edges = list_of("PlanEdge");
    edges.description = Some("Each edge's `from` and `to` name nodes of `nodes`.".into());
    edges
}

pub(super) fn conditions() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::Object,
            utoipa::openapi::schema::Type::Null,
        ]))
        .build()
}

pub(super) fn count() -> utoipa::openapi::Object {
    schema::count(false)
}

pub(super) fn optional_count() -> utoipa::openapi::Object {
    schema::count(true)
}

pub(super) fn rate() -> utoipa::openapi::Object {
    schema::unit_interval(true)
}

pub(super) fn latency() -> utoipa::openapi::Object {
    schema::non_negative(true)
}
