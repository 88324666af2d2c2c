//! Which requests may reach the API at all, whoever sent them: a `Host`
//! that names this service, and an `Origin` (a browser's page) that is the
//! service's own or one the operator listed. Without them a page on any
//! site could post to an open instance on loopback (a form or a `no-cors`
//! fetch needs no permission) or, once its own name resolves to 127.0.0.1,
//! read the answers too (DNS rebinding). Keys alone do not cover it: an
//! open instance has none.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::ResponseError;

use crate::error::{ApiError, Code};

/// The names and origins this instance answers to.
#[derive(Debug, Clone)]
pub struct OriginRules {
    /// Whether `Host` is checked: on a loopback address always, elsewhere
    /// when `server.allowed_hosts` names the service (a service on every
    /// interface cannot know every name its clients use).
    check_host: bool,
    listen: IpAddr,
    /// Lowercase, without port.
    allowed_hosts: Vec<String>,
    /// Lowercase, as `scheme://host[:port]`.
    cors_origins: Vec<String>,
    scheme: &'static str,
}

impl OriginRules {
    pub fn new(
        listen: SocketAddr,
        allowed_hosts: &[String],
        cors_origins: &[String],
        https: bool,
    ) -> Arc<Self> {
        let lower = |all: &[String]| all.iter().map(|s| s.to_ascii_lowercase()).collect();
        Arc::new(OriginRules {
            check_host: listen.ip().is_loopback() || !allowed_hosts.is_empty(),
            listen: listen.ip(),
            allowed_hosts: lower(allowed_hosts),
            cors_origins: lower(cors_origins),
            scheme: if https { "https" } else { "http" },
        })
    }

    /// Whether `host` (a `Host` header's value) names this service.
    fn host_allowed(&self, host: &str) -> bool {
        if !self.check_host {
            return true;
        }
        let name = host_name(host).to_ascii_lowercase();
        if name == "localhost" || name.ends_with(".localhost") {
            return true;
        }
        if let Ok(ip) = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            if ip.is_loopback() || ip == self.listen {
                return true;
            }
        }
        self.allowed_hosts.contains(&name)
    }

    /// Whether a page of `origin` may make this request: the service's
    /// own pages (the dashboard) and the listed origins.
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.to_ascii_lowercase();
        if self.cors_origins.contains(&origin) {
            return true;
        }
        host.is_some_and(|host| {
            origin == format!("{}://{}", self.scheme, host.to_ascii_lowercase())
        })
    }

    /// Why the request may not reach the API, if it may not.
    fn refusal(
        &self,
        method: &Method,
        path: &str,
        headers: &header::HeaderMap,
    ) -> Option<ApiError> {
        if any_host(path) {
            return None;
        }
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if let Some(host) = host {
            if !self.host_allowed(host) {
                return Some(ApiError::new(
                    Code::MisdirectedRequest,
                    format!(
                        "Host: {:?} is not a name of this service; list it in server.allowed_hosts",
                        host_name(host)
                    ),
                ));
            }
        }
        let changes = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !(changes || path == "/mcp") {
            return None;
        }
        let origin = headers.get(header::ORIGIN)?;
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| self.origin_allowed(origin, host));
        (!allowed).then(|| {
            ApiError::new(
                Code::PermissionDenied,
                "Origin: web pages of this origin may not call engram; list it in server.cors_origins",
            )
        })
    }
}

/// Whether `path` answers whatever `Host` names: the health checks, which
/// orchestrators probe however they reach the service, and which say
/// nothing a page could use.
pub fn any_host(path: &str) -> bool {
    path == "/healthz" || path == "/readyz"
}

/// `host` without its port.
fn host_name(host: &str) -> &str {
    if let Some(end) = host.strip_prefix('[').and_then(|rest| rest.find(']')) {
        return &host[..end + 2];
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Refuses a request from a foreign `Host` (`421`) or from a page of a
/// foreign `Origin` that would change something or speak MCP (`403`),
/// before anything else looks at it.
pub async fn guard(
    rules: Arc<OriginRules>,
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    match rules.refusal(req.method(), req.path(), req.headers()) {
        None => next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body),
        Some(error) => Ok(req
            .into_response(error.error_response())
            .map_into_right_body()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn rules(listen: &str, hosts: &[&str], origins: &[&str]) -> Arc<OriginRules> {
        let own = |all: &[&str]| all.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        OriginRules::new(listen.parse().unwrap(), &own(hosts), &own(origins), false)
    }

    fn refused(
        rules: &OriginRules,
        method: Method,
        path: &str,
        pairs: &[(&'static str, &str)],
    ) -> Option<Code> {
        let mut headers = header::HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(
                header::HeaderName::from_static(name),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        rules.refusal(&method, path, &headers).map(|e| e.code)
    }

    #[test]
    fn hosts_without_their_port() {
        assert_eq!(host_name("localhost:8080"), "localhost");
        assert_eq!(host_name("[::1]:8080"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
        assert_eq!(host_name("example.com"), "example.com");
    }

    #[test]
    fn a_loopback_service_answers_only_to_loopback_names_and_listed_ones() {
        let r = rules("127.0.0.1:8080", &["engram.internal"], &[]);
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "app.localhost",
            "127.0.0.2",
            "ENGRAM.internal:1",
        ] {
            assert_eq!(
                refused(&r, Method::POST, "/v1/retrieve", &[("host", host)]),
                None,
                "{host}"
            );
        }
        for host in [
            "evil.example.com",
            "evil.example.com:8080",
            "10.0.0.1",
            "localhost.evil.com",
        ] {
            assert_eq!(
                refused(&r, Method::GET, "/ui/", &[("host", host)]),
                Some(Code::MisdirectedRequest),
                "{host}"
            );
        }
        assert_eq!(
            refused(&r, Method::GET, "/healthz", &[("host", "pod-ip")]),
            None
        );
    }

    #[test]
    fn a_service_on_every_interface_checks_hosts_once_told_its_names() {
        let open = rules("0.0.0.0:8080", &[], &[]);
        assert_eq!(
            refused(
                &open,
                Method::POST,
                "/v1/retrieve",
                &[("host", "engram:8080")]
            ),
            None
        );
        let named = rules("10.0.0.5:8080", &["engram.example.com"], &[]);
        assert_eq!(
            refused(
                &named,
                Method::POST,
                "/v1/retrieve",
                &[("host", "10.0.0.5:8080")]
            ),
            None
        );
        assert_eq!(
            refused(
                &named,
                Method::POST,
                "/v1/retrieve",
                &[("host", "other.example.com")]
            ),
            Some(Code::MisdirectedRequest)
        );
    }

    #[test]
    fn pages_of_other_origins_may_not_change_anything_or_speak_mcp() {
        let r = rules("127.0.0.1:8080", &[], &["https://console.example.com"]);
        let host = ("host", "127.0.0.1:8080");
        let foreign = ("origin", "http://evil.example.com");
        assert_eq!(
            refused(&r, Method::POST, "/v1/ingest/event", &[host, foreign]),
            Some(Code::PermissionDenied)
        );
        assert_eq!(
            refused(
                &r,
                Method::DELETE,
                "/v1/keys/a",
                &[host, ("origin", "null")]
            ),
            Some(Code::PermissionDenied)
        );
        assert_eq!(
            refused(&r, Method::GET, "/mcp", &[host, foreign]),
            Some(Code::PermissionDenied)
        );
        assert_eq!(
            refused(&r, Method::GET, "/v1/jobs", &[host, foreign]),
            None,
            "a read it cannot see"
        );
        // The dashboard's own pages, a listed console, and clients that
        // send no Origin at all.
        assert_eq!(
            refused(
                &r,
                Method::POST,
                "/v1/retrieve",
                &[host, ("origin", "http://127.0.0.1:8080")]
            ),
            None
        );
        assert_eq!(
            refused(
                &r,
                Method::POST,
                "/mcp",
                &[host, ("origin", "https://console.example.com")]
            ),
            None
        );
        assert_eq!(refused(&r, Method::POST, "/mcp", &[host]), None);
    }
}
