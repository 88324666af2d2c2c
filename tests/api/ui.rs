//! The dashboard's files at `/ui`: served to anyone, with a policy that
//! lets no other origin's code run. (Its pages are driven in a browser by
//! tests/ui/run.sh.)

use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::spawn_app;

#[actix_web::test]
async fn the_dashboard_files_need_no_key_and_allow_only_their_own_scripts() {
    let app = spawn_app().await;
    app.make_key(None, json!({"name": "root", "roles": ["admin"]}))
        .await;
    let (status, _, _) = app.send("GET", "/v1/metrics", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    assert_eq!(app.permanent_redirect("/ui").await, "/ui/");
    for (path, kind, needle) in [
        ("/ui/", "text/html", "<script src=\"/ui/app.js\""),
        ("/ui/app.js", "text/javascript", "sessionStorage"),
        ("/ui/app.css", "text/css", "body {"),
    ] {
        let (status, body, headers) = app.send("GET", path, None, None).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_string();
        assert!(header("content-type").starts_with(kind), "{path}");
        let policy = header("content-security-policy");
        assert!(policy.contains("script-src 'self'"), "{policy}");
        assert!(!policy.contains("unsafe-eval"), "{policy}");
        assert_eq!(header("x-content-type-options"), "nosniff");
        assert!(body.as_str().unwrap().contains(needle), "{path}");
    }
    let (status, _, _) = app.send("GET", "/ui/nothing.js", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Every static file answers `HEAD` as its `GET` without the body, and
/// other methods with a JSON `405` naming what is allowed; the site's icon
/// is served without a key, so a page shows no console error once keys
/// exist.
#[actix_web::test]
async fn static_files_answer_head_and_the_icon_needs_no_key() {
    let app = spawn_app().await;
    app.make_key(None, json!({"name": "root", "roles": ["admin"]}))
        .await;
    let (status, body, headers) = app.send("GET", "/favicon.ico", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers.get("content-type").unwrap(),
        "image/svg+xml; charset=utf-8"
    );
    assert!(body.as_str().unwrap().starts_with("<svg"));
    for path in [
        "/ui/",
        "/ui/app.js",
        "/ui/app.css",
        "/favicon.ico",
        "/docs/",
        "/docs/swagger-ui-bundle.js",
        "/openapi.json",
        "/healthz",
    ] {
        let (_, got, get_headers) = app.send("GET", path, None, None).await;
        let (status, body, headers) = app.send("HEAD", path, None, None).await;
        assert_eq!(status, StatusCode::OK, "HEAD {path}");
        assert_eq!(body, serde_json::Value::Null, "HEAD {path} has no body");
        assert_eq!(
            headers.get("content-type"),
            get_headers.get("content-type"),
            "HEAD {path}"
        );
        assert!(!got.is_null(), "GET {path} has a body");
        let (status, error, headers) = app.send("POST", path, None, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "POST {path}");
        assert_eq!(error["error"]["code"], "method_not_allowed", "POST {path}");
        assert_eq!(headers.get("allow").unwrap(), "GET, HEAD", "POST {path}");
    }
    // Sent on to the page (the client follows the redirect).
    for path in ["/ui", "/docs"] {
        let (status, _, _) = app.send("HEAD", path, None, None).await;
        assert_eq!(status, StatusCode::OK, "HEAD {path}");
    }
    let (status, error, _) = app.send("GET", "/docs/nothing.js", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["error"]["code"], "not_found");
}
