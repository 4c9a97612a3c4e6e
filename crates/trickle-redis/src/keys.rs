//! How a bucket's Redis keys are written: `{PREFIX:KEY}:ALGORITHM`, with the prefix checked
//! and the key escaped, so that no key a client sends can move the Redis Cluster hash tag or
//! land in another prefix's buckets.
//!
//! Redis Cluster hashes the text between the first `{` and the first `}` after it. Built by
//! plain concatenation, a key holding `}` cut that tag short (every key starting with `}`
//! hashed as `PREFIX:`, one slot for all of them), and a key holding `:` could be read with
//! another split (`api` + `v2:alice` and `api:v2` + `alice` were one key). So:
//!
//! - the **prefix** is checked, not escaped: 1 to [`MAX_PREFIX_LEN`] bytes of ASCII letters,
//!   digits, `-`, `_`, `.`, `:` and `/`. No brace, so the tag is never cut inside it; no `%`,
//!   so the escape character only ever appears in keys; nothing a shell, `redis-cli` or a
//!   `SCAN MATCH` pattern reads specially (spaces, `*`, `?`, `[`, `\`), so an operator can
//!   type every key.
//! - the **key** is escaped: `%` → `%25`, `{` → `%7B`, `}` → `%7D`, `:` → `%3A`, as in a
//!   URL, everything else kept. An escaped key holds no brace, so the tag runs to the `}`
//!   this module writes, and no `:`, so the tag's last `:` is where the prefix ends: the tag
//!   reads back as exactly one (prefix, key) pair, and two different pairs never share a
//!   key. Escaping `%` itself is what makes the reading unique (`a%3Ab` is written
//!   `a%253Ab`, and `a:b` is written `a%3Ab`).
//!
//! A key with none of the four characters is written as it is (`user-42`); ESI's
//! `7:90000001` is written `7%3A90000001`.

use std::fmt::Write;

use trickle_core::Algorithm;

/// The longest key prefix, in bytes: room for a service, a version and a group name
/// (`trickle-serve:` and a group of 64 characters is 78), and short enough that every key
/// stays readable.
pub const MAX_PREFIX_LEN: usize = 128;

/// Whether `byte` may appear in a key prefix.
fn is_prefix_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b':' | b'/')
}

/// Whether `prefix` may start keys; [`prefix_problem`] says why not.
pub(crate) fn prefix_is_allowed(prefix: &str) -> bool {
    !prefix.is_empty() && prefix.len() <= MAX_PREFIX_LEN && prefix.bytes().all(is_prefix_byte)
}

/// What is wrong with a prefix [`prefix_is_allowed`] refused, for its error message.
pub(crate) fn prefix_problem(prefix: &str) -> String {
    if prefix.is_empty() {
        return "it is empty".to_string();
    }
    if let Some(bad) = prefix
        .chars()
        .find(|c| !c.is_ascii() || !is_prefix_byte(*c as u8))
    {
        return format!("it holds {bad:?}");
    }
    format!("it is {} bytes long", prefix.len())
}

/// The bucket's key: `{PREFIX:KEY}:ALGORITHM`, the key escaped.
pub(crate) fn bucket_key(prefix: &str, key: &str, algorithm: Algorithm) -> String {
    let name = algorithm.name();
    let mut out = String::with_capacity(prefix.len() + key.len() + name.len() + 4);
    out.push('{');
    out.push_str(prefix);
    out.push(':');
    escape_into(&mut out, key);
    out.push_str("}:");
    out.push_str(name);
    out
}

/// The bucket of a policy's limit named `name`: `{PREFIX:KEY}:ALGORITHM:limit:NAME`, in the
/// same hash tag as every other key of `key`. A limit's name is never escaped: it holds only
/// `a-z`, `0-9`, `_`, `-`, `.` or a limit's text (`10/1s`), never a `:`, so the name is the
/// key's last part and no two limits, nor a limit and a [`RedisLimiter`](crate::RedisLimiter)'s
/// bucket (`{PREFIX:KEY}:ALGORITHM`, its entries and its reservations), share a key.
pub(crate) fn limit_key(prefix: &str, key: &str, algorithm: Algorithm, name: &str) -> String {
    let mut out = bucket_key(prefix, key, algorithm);
    out.push_str(":limit:");
    out.push_str(name);
    out
}

/// Appends `key` to `out` with `%`, `{`, `}` and `:` written as `%25`, `%7B`, `%7D`, `%3A`.
fn escape_into(out: &mut String, key: &str) {
    let mut rest = key;
    while let Some(at) = rest.find(['%', '{', '}', ':']) {
        out.push_str(&rest[..at]);
        let byte = rest.as_bytes()[at];
        // Writing to a String cannot fail.
        let _ = write!(out, "%{byte:02X}");
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    const WRITTEN: &[(&str, &str, &str)] = &[
        // prefix,   key,          the bucket's key (floating)
        ("api",      "user-42",    "{api:user-42}:floating"),
        ("api",      "",           "{api:}:floating"),
        ("api",      "}abc",       "{api:%7Dabc}:floating"),
        ("api",      "{x}",        "{api:%7Bx%7D}:floating"),
        ("api",      "v2:alice",   "{api:v2%3Aalice}:floating"),
        ("api:v2",   "alice",      "{api:v2:alice}:floating"),
        ("api",      "a%3Ab",      "{api:a%253Ab}:floating"),
        ("api",      "a:b",        "{api:a%3Ab}:floating"),
        ("api",      "é",          "{api:é}:floating"),
    ];

    #[test]
    fn keys_are_escaped_and_plain_keys_kept_as_they_are() {
        for (prefix, key, written) in WRITTEN {
            assert_eq!(
                bucket_key(prefix, key, Algorithm::Floating),
                *written,
                "{prefix} {key}"
            );
        }
    }

    #[test]
    fn a_policy_limit_is_in_the_keys_hash_tag_under_its_name() {
        assert_eq!(
            limit_key("api", "v2:alice", Algorithm::TokenBucket, "burst"),
            "{api:v2%3Aalice}:token-bucket:limit:burst"
        );
        assert_eq!(
            limit_key("api", "bob", Algorithm::Floating, "1000/1h"),
            "{api:bob}:floating:limit:1000/1h"
        );
    }

    #[rustfmt::skip]
    const PREFIXES: &[(&str, Option<&str>)] = &[
        ("api",                  None),
        ("trickle-serve:fitting", None),
        ("a/b_c.d-e:1",          None),
        ("",                     Some("it is empty")),
        ("a{b",                  Some("it holds '{'")),
        ("a}b",                  Some("it holds '}'")),
        ("a%b",                  Some("it holds '%'")),
        ("a b",                  Some("it holds ' '")),
        ("a*",                   Some("it holds '*'")),
        ("é",                    Some("it holds 'é'")),
    ];

    #[test]
    fn prefixes_are_checked_and_the_refusal_says_why() {
        for (prefix, problem) in PREFIXES {
            assert_eq!(prefix_is_allowed(prefix), problem.is_none(), "{prefix:?}");
            if let Some(problem) = problem {
                assert_eq!(prefix_problem(prefix), *problem, "{prefix:?}");
            }
        }
        let long = "p".repeat(MAX_PREFIX_LEN + 1);
        assert!(prefix_is_allowed(&"p".repeat(MAX_PREFIX_LEN)));
        assert!(!prefix_is_allowed(&long));
        assert_eq!(prefix_problem(&long), "it is 129 bytes long");
    }
}
