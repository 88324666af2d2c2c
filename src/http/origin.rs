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
use actix_web::http::{header, Method, Version};
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

    /// Whether `host` (a well-formed `Host`) names this service.
    fn host_allowed(&self, host: &HostName) -> bool {
        if !self.check_host {
            return true;
        }
        match host {
            HostName::Name(name) if name == "localhost" || name.ends_with(".localhost") => true,
            HostName::Ip(ip) if ip.is_loopback() || *ip == self.listen => true,
            other => self.allowed_hosts.contains(&other.to_string()),
        }
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
    fn refusal(&self, req: &Request<'_>) -> Option<ApiError> {
        if any_host(req.path) {
            return None;
        }
        let raw_host = req.headers.get(header::HOST).map(|h| h.as_bytes());
        // HTTP/2 names the host in the request's authority instead.
        let raw_host = raw_host.or(req.authority.map(str::as_bytes));
        match raw_host {
            None if req.version != Version::HTTP_10 => {
                return Some(ApiError::new(
                    Code::InvalidArgument,
                    "Host: the header is required",
                ));
            }
            // HTTP/1.0 has no Host of its own; where names are checked, a
            // request that names none is not for this service.
            None if self.check_host => {
                return Some(ApiError::new(
                    Code::MisdirectedRequest,
                    "Host: this service answers only requests that name it in Host",
                ));
            }
            None => {}
            Some(raw) => {
                let named = HostName::parse(raw).is_some_and(|(name, _)| self.host_allowed(&name));
                if !named {
                    let shown = String::from_utf8_lossy(raw);
                    return Some(ApiError::new(
                        Code::MisdirectedRequest,
                        format!(
                            "Host: {shown:?} is not a name of this service; list it in server.allowed_hosts"
                        ),
                    ));
                }
            }
        }
        if let Some(refused) = body_refusal(req) {
            return Some(refused);
        }
        let changes = !matches!(*req.method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !(changes || req.path == "/mcp") {
            return None;
        }
        let origin = req.headers.get(header::ORIGIN)?;
        let host = raw_host.and_then(|raw| std::str::from_utf8(raw).ok());
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

/// What the guard reads of a request.
struct Request<'a> {
    method: &'a Method,
    path: &'a str,
    version: Version,
    /// The request target's authority (HTTP/2's `:authority`).
    authority: Option<&'a str>,
    headers: &'a header::HeaderMap,
}

/// A body not declared as JSON, on any route: `415`. A page of any site
/// can post a form or `text/plain` without asking, so only JSON declared as
/// such reaches a route, even one that reads no body (`POST
/// /v1/jobs/{name}/run`). A request without a body needs no type.
fn body_refusal(req: &Request<'_>) -> Option<ApiError> {
    let declared = req.headers.get(header::CONTENT_TYPE).is_some();
    let has_body = req.headers.contains_key(header::TRANSFER_ENCODING)
        || req
            .headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|len| len.as_bytes() != b"0");
    if (declared || has_body) && !super::is_json(req.headers) {
        return Some(ApiError::new(
            Code::UnsupportedMediaType,
            "Content-Type: the request body must be sent as application/json",
        ));
    }
    None
}

/// A `Host` as the service compares it: a name (lowercase) or an address.
#[derive(Debug, Clone, PartialEq)]
enum HostName {
    Name(String),
    Ip(IpAddr),
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostName::Name(name) => f.write_str(name),
            HostName::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            HostName::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

impl HostName {
    /// A `Host` value as RFC 9110 has it, a name or an address with an
    /// optional port, and nothing else: no trailing dot, no bytes after an
    /// IPv6 literal, no number standing for an address (`2130706433`,
    /// `127.1`, `0x7f000001`), no octets outside ASCII.
    fn parse(raw: &[u8]) -> Option<(HostName, Option<u16>)> {
        let text = std::str::from_utf8(raw).ok()?;
        if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            let ip: std::net::Ipv6Addr = inside.parse().ok()?;
            let port = match after {
                "" => None,
                after => Some(port(after.strip_prefix(':')?)?),
            };
            return Some((HostName::Ip(IpAddr::V6(ip)), port));
        }
        let (name, port) = match text.split_once(':') {
            Some((name, after)) => (name, Some(port(after)?)),
            None => (text, None),
        };
        if let Ok(ip) = name.parse::<std::net::Ipv4Addr>() {
            return Some((HostName::Ip(IpAddr::V4(ip)), port));
        }
        let label_ok = |label: &str| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !label.starts_with('-')
                && !label.ends_with('-')
        };
        let labels: Vec<&str> = name.split('.').collect();
        let last = labels.last()?;
        let well_formed = name.len() <= 253
            && labels.iter().all(|l| label_ok(l))
            // A last label of digits (or hex) would be read as an address
            // by some clients: never a name.
            && !last.bytes().all(|b| b.is_ascii_digit())
            && !(last.starts_with("0x") || last.starts_with("0X"));
        well_formed.then(|| (HostName::Name(name.to_ascii_lowercase()), port))
    }
}

/// A port: one to five digits, at most 65535.
fn port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Whether `path` answers whatever `Host` names: the health checks, which
/// orchestrators probe however they reach the service, and which say
/// nothing a page could use.
pub fn any_host(path: &str) -> bool {
    path == "/healthz" || path == "/readyz"
}

/// Refuses a request without a `Host` (`400`) or from a foreign or
/// malformed one (`421`), with a body not declared as JSON (`415`), or
/// from a page of a foreign `Origin` that would change something or speak
/// MCP (`403`), before anything else looks at it.
pub async fn guard(
    rules: Arc<OriginRules>,
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let refusal = rules.refusal(&Request {
        method: req.method(),
        path: req.path(),
        version: req.version(),
        authority: req.uri().authority().map(|a| a.as_str()),
        headers: req.headers(),
    });
    match refusal {
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
        refused_in(rules, Version::HTTP_11, method, path, pairs)
    }

    fn refused_in(
        rules: &OriginRules,
        version: Version,
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
        let req = Request {
            method: &method,
            path,
            version,
            authority: None,
            headers: &headers,
        };
        rules.refusal(&req).map(|e| e.code)
    }

    #[test]
    fn hosts_are_names_or_addresses_with_an_optional_port() {
        let name = |n: &str| HostName::Name(n.to_string());
        let ip = |a: &str| HostName::Ip(a.parse().unwrap());
        assert_eq!(
            HostName::parse(b"localhost:8080"),
            Some((name("localhost"), Some(8080)))
        );
        assert_eq!(
            HostName::parse(b"Engram.Internal"),
            Some((name("engram.internal"), None))
        );
        assert_eq!(
            HostName::parse(b"[::1]:8080"),
            Some((ip("::1"), Some(8080)))
        );
        assert_eq!(HostName::parse(b"[::1]"), Some((ip("::1"), None)));
        assert_eq!(HostName::parse(b"127.0.0.1"), Some((ip("127.0.0.1"), None)));
        assert_eq!(
            HostName::parse(b"my_service:80"),
            Some((name("my_service"), Some(80)))
        );
        for bad in [
            &b"[::1]evil.com"[..],
            b"[::1].evil.com",
            b"[::1]:",
            b"[::1",
            b"localhost.",
            b"localhost:",
            b"localhost:99999",
            b"localhost:+80",
            b"localhost:80:80",
            b"2130706433",
            b"127.1",
            b"0x7f000001",
            b"0177.0.0.1",
            b"",
            b"a..b",
            b"-a.com",
            b"exa mple.com",
            b"ex\xffample.com",
            b"\xc3\xa9.com",
            b"user@localhost",
        ] {
            assert_eq!(
                HostName::parse(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_request_names_its_host() {
        let local = rules("127.0.0.1:8080", &[], &[]);
        let open = rules("0.0.0.0:8080", &[], &[]);
        for r in [&local, &open] {
            assert_eq!(
                refused(r, Method::GET, "/v1/jobs", &[]),
                Some(Code::InvalidArgument),
                "HTTP/1.1 without Host"
            );
        }
        assert_eq!(
            refused_in(&local, Version::HTTP_10, Method::GET, "/v1/jobs", &[]),
            Some(Code::MisdirectedRequest)
        );
        assert_eq!(
            refused_in(&open, Version::HTTP_10, Method::GET, "/v1/jobs", &[]),
            None
        );
        assert_eq!(
            refused(&open, Method::GET, "/v1/jobs", &[("host", "[::1]evil.com")]),
            Some(Code::MisdirectedRequest),
            "malformed, even where any name is served"
        );
        assert_eq!(refused(&local, Method::GET, "/healthz", &[]), None);
    }

    #[test]
    fn only_json_bodies_reach_a_route() {
        let r = rules("127.0.0.1:8080", &[], &[]);
        let host = ("host", "localhost:8080");
        for pairs in [
            &[
                host,
                ("content-type", "text/plain"),
                ("content-length", "2"),
            ][..],
            &[host, ("content-type", "application/x-www-form-urlencoded")],
            &[host, ("content-length", "5")],
            &[host, ("transfer-encoding", "chunked")],
        ] {
            assert_eq!(
                refused(&r, Method::POST, "/v1/jobs/decay/run", pairs),
                Some(Code::UnsupportedMediaType),
                "{pairs:?}"
            );
        }
        for pairs in [
            &[host][..],
            &[host, ("content-length", "0")],
            &[
                host,
                ("content-type", "application/json"),
                ("content-length", "2"),
            ],
            &[
                host,
                (
                    "content-type",
                    "application/merge-patch+json; charset=utf-8",
                ),
            ],
        ] {
            assert_eq!(
                refused(&r, Method::POST, "/v1/jobs/decay/run", pairs),
                None,
                "{pairs:?}"
            );
        }
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
