//! Who pays for a request, and the answer for one that cannot say: the values the subject
//! function a layer is built with returns.

use std::borrow::Cow;
use std::fmt;

use http::StatusCode;

/// Who pays for a request: the bucket of `key` in `group`. ESI's key is the application
/// and the user (`"7:90000001"`), within a route group (`"fitting"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subject {
    /// The route group, whose limit applies.
    pub group: String,
    /// The bucket within the group.
    pub key: String,
}

impl Subject {
    /// The bucket of `key` in `group`.
    pub fn new(group: impl Into<String>, key: impl Into<String>) -> Subject {
        Subject {
            group: group.into(),
            key: key.into(),
        }
    }
}

/// A request the layer answers itself, without a bucket and without calling the handler:
/// what the subject function returns when a request lacks what its key is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    status: StatusCode,
    message: Cow<'static, str>,
}

impl Rejection {
    /// Answers `status` with `{"error": message}`.
    pub fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection {
            status,
            message: message.into(),
        }
    }

    /// Answers 400 Bad Request with `{"error": message}`; say what was missing and what is
    /// allowed.
    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Rejection {
        Rejection::new(StatusCode::BAD_REQUEST, message)
    }

    /// The status it answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message its body carries.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Rejection {}
