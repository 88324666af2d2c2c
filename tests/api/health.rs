use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::{assert_error, spawn_app};

#[actix_web::test]
async fn healthz_and_readyz_answer_ok() {
    let app = spawn_app().await;
    let (status, body) = app.get("/healthz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"status": "ok"}));
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"status": "ready"}));
}

#[actix_web::test]
async fn an_unknown_route_is_a_json_404() {
    let app = spawn_app().await;
    assert_error(
        &app.get("/v1/nothing").await,
        StatusCode::NOT_FOUND,
        "not_found",
        "/v1/nothing",
    );
}

#[actix_web::test]
async fn a_wrong_method_is_a_json_405() {
    let app = spawn_app().await;
    assert_error(
        &app.get("/v1/ingest/event").await,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "GET",
    );
}
