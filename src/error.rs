//! The one place errors become HTTP: a `Code` per kind of failure, each
//! with its status and stable snake_case name, and the body
//! `{"error":{"code","message"}}` for every error the API returns.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use crate::actors::ServiceError;
use crate::domain::validate::ValidationError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    PermissionDenied,
    NotFound,
    MethodNotAllowed,
    Conflict,
    FailedPrecondition,
    PayloadTooLarge,
    Overloaded,
    Unavailable,
    Internal,
}

impl Code {
    pub fn status(self) -> StatusCode {
        match self {
            Code::InvalidArgument => StatusCode::BAD_REQUEST,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Code::Conflict | Code::FailedPrecondition => StatusCode::CONFLICT,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::Overloaded | Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::PermissionDenied => "permission_denied",
            Code::NotFound => "not_found",
            Code::MethodNotAllowed => "method_not_allowed",
            Code::Conflict => "conflict",
            Code::FailedPrecondition => "failed_precondition",
            Code::PayloadTooLarge => "payload_too_large",
            Code::Overloaded => "overloaded",
            Code::Unavailable => "unavailable",
            Code::Internal => "internal",
        }
    }
}

/// Seconds a client is asked to wait after a 503.
const RETRY_AFTER_SECONDS: &str = "1";

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: Code,
    pub message: String,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: &'a str,
    message: &'a str,
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.code.status());
        if matches!(self.code, Code::Overloaded | Code::Unavailable) {
            response.insert_header((header::RETRY_AFTER, RETRY_AFTER_SECONDS));
        }
        response.json(ErrorBody {
            error: ErrorDetail {
                code: self.code.name(),
                message: &self.message,
            },
        })
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
            ServiceError::FailedPrecondition(m) => ApiError::new(Code::FailedPrecondition, m),
            ServiceError::Overloaded(m) => ApiError::new(Code::Overloaded, m),
            ServiceError::Unavailable(m) => ApiError::new(Code::Unavailable, m),
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
        ServiceError::from(error).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_distinct_name() {
        let codes = [
            Code::InvalidArgument,
            Code::PermissionDenied,
            Code::NotFound,
            Code::MethodNotAllowed,
            Code::Conflict,
            Code::FailedPrecondition,
            Code::PayloadTooLarge,
            Code::Overloaded,
            Code::Unavailable,
            Code::Internal,
        ];
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
