//! The one place errors become HTTP: a `Code` per kind of failure, each
//! with its status and stable snake_case name, and the body
//! `{"error":{"code","message"}}` for every error the API returns.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use crate::domain::validate::ValidationError;
use crate::service::ServiceError;

/// Declares the codes with their status and name in one table, so a new
/// code cannot be added without both, and `Code::ALL` lists every one.
macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident => ($status:ident, $name:literal),)+) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Code {
            $($(#[$doc])* $variant,)+
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)+];

            pub fn status(self) -> StatusCode {
                match self {
                    $(Code::$variant => StatusCode::$status,)+
                }
            }

            /// The stable snake_case name clients match on.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)+
                }
            }
        }
    };
}

codes! {
    InvalidArgument => (BAD_REQUEST, "invalid_argument"),
    /// No API key, or one that is unknown or revoked.
    Unauthenticated => (UNAUTHORIZED, "unauthenticated"),
    PermissionDenied => (FORBIDDEN, "permission_denied"),
    NotFound => (NOT_FOUND, "not_found"),
    MethodNotAllowed => (METHOD_NOT_ALLOWED, "method_not_allowed"),
    Conflict => (CONFLICT, "conflict"),
    /// The request is valid but the record's state forbids it.
    FailedPrecondition => (CONFLICT, "failed_precondition"),
    /// The request body did not arrive within `server.body_read_timeout_ms`.
    RequestTimeout => (REQUEST_TIMEOUT, "request_timeout"),
    PayloadTooLarge => (PAYLOAD_TOO_LARGE, "payload_too_large"),
    /// A body that is not declared `application/json`.
    UnsupportedMediaType => (UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
    /// The `Host` names no name of this service (DNS rebinding).
    MisdirectedRequest => (MISDIRECTED_REQUEST, "misdirected_request"),
    /// The key (or, without one, the client address) is over its rate;
    /// retry after `Retry-After`.
    RateLimited => (TOO_MANY_REQUESTS, "rate_limited"),
    /// A queue or bound is full; retry after `Retry-After`.
    Overloaded => (SERVICE_UNAVAILABLE, "overloaded"),
    Unavailable => (SERVICE_UNAVAILABLE, "unavailable"),
    Internal => (INTERNAL_SERVER_ERROR, "internal"),
}

/// In the API document: a string, one of the codes' names.
impl utoipa::PartialSchema for Code {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Code::ALL.iter().map(|code| code.name())))
            .into()
    }
}

impl utoipa::ToSchema for Code {
    fn name() -> std::borrow::Cow<'static, str> {
        "ErrorCode".into()
    }
}

/// Seconds a client is asked to wait after a 503.
const RETRY_AFTER_SECONDS: u64 = 1;

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// Seconds to wait before retrying, when it is known.
    pub retry_after: Option<u64>,
    /// The topics an ambiguous `auto` placement could have chosen.
    pub similar_topic_ids: Option<Vec<String>>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after: None,
            similar_topic_ids: None,
        }
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }
}

/// Every error the API answers: `{"error": {"code", "message"}}`.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(example = json!({"error": {"code": "invalid_argument", "message": "source: candidate source is required"}}))]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

impl ErrorBody<'_> {
    /// The body of `error`.
    pub fn of(error: &ApiError) -> ErrorBody<'_> {
        ErrorBody {
            error: ErrorDetail {
                code: error.code.name(),
                message: &error.message,
                similar_topic_ids: error.similar_topic_ids.as_deref(),
            },
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct ErrorDetail<'a> {
    /// Stable, for clients to match on.
    #[schema(value_type = Code)]
    code: &'a str,
    /// For people; names the field at fault.
    message: &'a str,
    /// With `409` from a topics ingest asked to fail when ambiguous: the
    /// topics it could have been placed on, best first.
    #[serde(skip_serializing_if = "Option::is_none")]
    similar_topic_ids: Option<&'a [String]>,
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.code.status());
        let retry_after = match self.code {
            Code::Overloaded | Code::Unavailable => Some(RETRY_AFTER_SECONDS),
            Code::RateLimited => Some(self.retry_after.unwrap_or(RETRY_AFTER_SECONDS)),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response.insert_header((header::RETRY_AFTER, seconds.to_string()));
        }
        if self.code == Code::Unauthenticated {
            response.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
        }
        response.json(ErrorBody::of(self))
    }
}

impl From<ValidationError> for ApiError {
    fn from(error: ValidationError) -> Self {
        ApiError::new(Code::InvalidArgument, error.to_string())
    }
}

impl From<ServiceError> for ApiError {
    fn from(error: ServiceError) -> Self {
        match error {
            ServiceError::Invalid(e) => e.into(),
            ServiceError::NotFound(m) => ApiError::new(Code::NotFound, m),
            ServiceError::PermissionDenied(m) => ApiError::new(Code::PermissionDenied, m),
            ServiceError::Conflict(m) => ApiError::new(Code::Conflict, m),
            ServiceError::Ambiguous {
                message,
                similar_topic_ids,
            } => ApiError {
                similar_topic_ids: Some(similar_topic_ids),
                ..ApiError::new(Code::Conflict, message)
            },
            ServiceError::FailedPrecondition(m) => ApiError::new(Code::FailedPrecondition, m),
            ServiceError::Overloaded(m) => ApiError::new(Code::Overloaded, m),
            ServiceError::Unavailable(m) => ApiError::new(Code::Unavailable, m),
            ServiceError::Internal(m) => {
                tracing::error!(error = %m, "internal failure");
                ApiError::new(Code::Internal, "internal error")
            }
            ServiceError::Store(e) => {
                // The client learns that it failed; the log learns why.
                tracing::error!(error = %e, "storage failure");
                ApiError::new(Code::Internal, "internal error")
            }
        }
    }
}

/// An actor that cannot be reached (the service is stopping).
impl From<actix::MailboxError> for ApiError {
    fn from(error: actix::MailboxError) -> Self {
        ApiError::new(
            Code::Unavailable,
            format!("service is shutting down: {error}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_documented_with_its_status() {
        let docs = include_str!("../docs/api.md");
        for code in Code::ALL {
            let row = format!("| {} | `{}` |", code.status().as_u16(), code.name());
            assert!(
                docs.contains(&row),
                "docs/api.md has no error table row starting {row:?}"
            );
        }
    }

    #[test]
    fn every_code_has_a_distinct_name() {
        let codes = Code::ALL;
        let mut names: Vec<&str> = codes.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), codes.len());
        assert_eq!(Code::FailedPrecondition.status(), StatusCode::CONFLICT);
    }

    #[test]
    fn storage_failures_do_not_leak_details() {
        let err: ApiError =
            ServiceError::Store(crate::store::StoreError::Corrupt("secret path".into())).into();
        assert_eq!(err.code, Code::Internal);
        assert!(!err.message.contains("secret"));
    }
}
