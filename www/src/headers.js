// The HTTP header names live mode sends and reads, and the headers view writes, as the
// servers this project ships write them: src/serving/esi.rs and crates/trickle-tower for
// the answers, `trickle serve` for the client id. headers.test.js checks each against those
// files.

export const LIMIT = "X-Ratelimit-Limit";
export const REMAINING = "X-Ratelimit-Remaining";
export const USED = "X-Ratelimit-Used";
export const GROUP = "X-Ratelimit-Group";
export const RETRY_AFTER = "Retry-After";
/** The IETF's fields (draft-ietf-httpapi-ratelimit-headers-11). */
export const RATELIMIT_POLICY = "RateLimit-Policy";
export const RATELIMIT = "RateLimit";
/** The request header that keys the server's bucket. */
export const CLIENT_ID = "X-Client-Id";
