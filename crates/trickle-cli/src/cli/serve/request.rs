//! What a request to the demo API may bring: its client id, its wait, its headers' size.
//! The app checks them, and the OpenAPI document states them.

use axum::http::HeaderName;

/// Where the OpenAPI document is served. No group may list it as a route.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The request header naming the bucket within a group.
pub const CLIENT_ID: HeaderName = HeaderName::from_static("x-client-id");

/// The longest `X-Client-Id`.
pub const MAX_CLIENT_ID: usize = 64;

/// The longest wait `?delay_ms=` may ask for: enough to show a slow handler (and for a test
/// to stop the server while one runs), short enough that a request which was admitted
/// holds its connection no longer than an idle client may.
pub const MAX_DELAY_MS: u64 = 1000;

/// The most bytes of request headers (names and values) a request may bring. hyper's own
/// limit is its read buffer, about 400 kB; this answers far sooner, with a message.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
