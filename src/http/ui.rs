//! `/ui`: the operator dashboard. Static files built into the binary; the
//! pages call the JSON API with the key the operator enters, so the files
//! themselves need none.

use actix_web::http::{header, Method};
use actix_web::{web, HttpResponse};

use super::public_resource;

const INDEX: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");
const ICON: &str = include_str!("ui/favicon.svg");

/// Scripts and styles from this server only: what the pages show of the
/// API's answers can never run as code.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                      img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

pub(super) fn configure(cfg: &mut web::ServiceConfig) {
    let get = |handler: fn() -> HttpResponse| {
        vec![(
            Method::GET,
            web::route().to(move || async move { handler() }),
        )]
    };
    cfg.service(public_resource(
        "/ui",
        get(|| {
            HttpResponse::PermanentRedirect()
                .insert_header((header::LOCATION, "/ui/"))
                .finish()
        }),
    ))
    .service(public_resource("/ui/", get(|| file(INDEX, "text/html"))))
    .service(public_resource(
        "/ui/app.js",
        get(|| file(SCRIPT, "text/javascript")),
    ))
    .service(public_resource(
        "/ui/app.css",
        get(|| file(STYLE, "text/css")),
    ))
    // Browsers ask for the site's icon at this path on every page.
    .service(public_resource(
        "/favicon.ico",
        get(|| file(ICON, "image/svg+xml")),
    ));
}

fn file(body: &'static str, kind: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(format!("{kind}; charset=utf-8"))
        .insert_header((header::CONTENT_SECURITY_POLICY, POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

/// Whether `path` is one of the dashboard's files (or the site's icon):
/// anyone may load them.
pub fn is_public(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/") || path == "/favicon.ico"
}
