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
