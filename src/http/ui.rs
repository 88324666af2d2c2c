//! `/ui`: the operator dashboard. Static files built into the binary; the
//! pages call the JSON API with the key the operator enters, so the files
//! themselves need none.

use actix_web::http::header;
use actix_web::{web, HttpResponse};

const INDEX: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");

/// Scripts and styles from this server only: what the pages show of the
/// API's answers can never run as code.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                      img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/ui").route(web::get().to(|| async {
        HttpResponse::PermanentRedirect()
            .insert_header((header::LOCATION, "/ui/"))
            .finish()
    })))
    .service(web::resource("/ui/").route(web::get().to(|| async { file(INDEX, "text/html") })))
    .service(
        web::resource("/ui/app.js")
            .route(web::get().to(|| async { file(SCRIPT, "text/javascript") })),
    )
    .service(
        web::resource("/ui/app.css").route(web::get().to(|| async { file(STYLE, "text/css") })),
    );
}

fn file(body: &'static str, kind: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(format!("{kind}; charset=utf-8"))
        .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

/// Whether `path` is one of the dashboard's files: anyone may load them.
pub fn is_public(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}
