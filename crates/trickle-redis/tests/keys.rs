//! No client key can move a bucket's Redis Cluster hash tag or reach another prefix's
//! bucket: checked with the server's own `CLUSTER KEYSLOT`, with buckets on a real server,
//! and by reading every written key back into the one (prefix, key) pair it came from.

mod common;

use common::{limit, slot, RedisServer};
use proptest::prelude::*;
use redis::Connection;
use trickle_core::Algorithm;
use trickle_redis::{RedisLimitError, RedisLimiter, MAX_PREFIX_LEN};

fn limiters(prefix: &str) -> Vec<RedisLimiter> {
    Algorithm::ALL
        .into_iter()
        .map(|algorithm| RedisLimiter::new(algorithm, limit("6/8s"), prefix).unwrap())
        .collect()
}

fn keyslot(conn: &mut Connection, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(conn)
        .expect("CLUSTER KEYSLOT")
}

/// Before keys were escaped, `{api:}abc}:floating` had the tag `api:`, so every client id
/// starting with `}` shared one slot (and one Cluster node's load). Now each id's slot is
/// its own tag's, on the server's reckoning, for every key a decision touches.
#[test]
fn a_client_id_starting_with_a_brace_lands_in_its_own_slot() {
    let server = RedisServer::start_cluster_node();
    let mut conn = server.connect();
    let shared_before = keyslot(&mut conn, "api:");

    for limiter in limiters("api") {
        let ids = ["}abc", "}xyz"];
        let slots: Vec<u16> = ids
            .iter()
            .map(|id| {
                let bucket = limiter.redis_key(id);
                let own = keyslot(&mut conn, &format!("api:{}", &id.replace('}', "%7D")));
                let mut every = limiter.redis_keys(id);
                every.push(limiter.reservation_key(id, 0x1234));
                for key in &every {
                    assert_eq!(keyslot(&mut conn, key), own, "{key}");
                    // The tests' own CRC16 agrees with the server.
                    assert_eq!(slot(key), own, "{key}");
                }
                assert_ne!(own, shared_before, "{bucket}");
                own
            })
            .collect();
        assert_ne!(slots[0], slots[1], "{}: {slots:?}", limiter.algorithm());
    }

    // Fifty ids that start with a brace spread over the slots as any fifty ids do.
    let limiter = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), "api").unwrap();
    let mut slots: Vec<u16> = (0..50)
        .map(|i| keyslot(&mut conn, &limiter.redis_key(&format!("}}{i}"))))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    assert!(slots.len() >= 45, "{} distinct slots", slots.len());
}

/// `api` + `v2:alice` was `api:v2` + `alice`: one bucket for two clients of two APIs.
/// Now they are two keys, and spending one leaves the other whole, on a real server.
#[test]
fn a_key_with_a_colon_never_reaches_another_prefixs_bucket() {
    let api = limiters("api");
    let v2 = limiters("api:v2");
    for (api, v2) in api.iter().zip(&v2) {
        assert_ne!(api.redis_key("v2:alice"), v2.redis_key("alice"));
        assert_ne!(api.redis_keys("v2:alice"), v2.redis_keys("alice"));
        assert_ne!(
            api.reservation_key("v2:alice", 7),
            v2.reservation_key("alice", 7)
        );
    }

    let server = RedisServer::start();
    let mut conn = server.connect();
    let (api, v2) = (&api[0], &v2[0]);
    for t in 0..6 {
        assert!(api.hit(&mut conn, "v2:alice", t, 1).unwrap().is_allowed());
    }
    assert!(!api.hit(&mut conn, "v2:alice", 6, 1).unwrap().is_allowed());
    let other = v2.hit(&mut conn, "alice", 7, 1).unwrap();
    assert_eq!(other.used.to_string(), "1.000", "{other:?}");
}

#[rustfmt::skip]
const PREFIXES: &[(&str, Option<&str>)] = &[
    ("api",              None),
    ("trickle-serve:fit", None),
    ("v1/users.read_2",  None),
    ("",                 Some("key prefix \"\" is not allowed: it is empty;")),
    ("a{b",              Some("key prefix \"a{b\" is not allowed: it holds '{';")),
    ("a}",               Some("key prefix \"a}\" is not allowed: it holds '}';")),
    ("50%",              Some("key prefix \"50%\" is not allowed: it holds '%';")),
    ("my api",           Some("key prefix \"my api\" is not allowed: it holds ' ';")),
    ("api*",             Some("key prefix \"api*\" is not allowed: it holds '*';")),
];

#[test]
fn prefixes_are_checked_and_a_refusal_says_what_is_allowed() {
    for (prefix, refused) in PREFIXES {
        let result = RedisLimiter::new(Algorithm::Floating, limit("6/8s"), prefix);
        match (result, refused) {
            (Ok(_), None) => {}
            (Err(err @ RedisLimitError::BadPrefix { .. }), Some(start)) => {
                let message = err.to_string();
                assert!(message.starts_with(start), "{prefix:?}: {message}");
                assert!(
                    message.ends_with(
                        "a prefix is 1 to 128 bytes of ASCII letters, digits, '-', '_', '.', \
                         ':' and '/' (no brace, which would cut the keys' Redis Cluster hash \
                         tag short)"
                    ),
                    "{message}"
                );
            }
            (other, _) => panic!("{prefix:?}: {other:?}"),
        }
    }
    let longest = "p".repeat(MAX_PREFIX_LEN);
    assert!(RedisLimiter::new(Algorithm::Floating, limit("6/8s"), &longest).is_ok());
    let err =
        RedisLimiter::new(Algorithm::Floating, limit("6/8s"), &format!("{longest}p")).unwrap_err();
    assert!(err.to_string().contains("it is 129 bytes long"), "{err}");
}

/// A written key read back: the hash tag (up to the first `}`), split at its last `:` into
/// the prefix and the escaped key, unescaped; and what follows the tag.
fn read_back(written: &str) -> (String, String, String) {
    let inner = written.strip_prefix('{').expect("starts with the tag");
    let close = inner.find('}').expect("a closing brace");
    let (tag, suffix) = (&inner[..close], &inner[close + 1..]);
    assert!(!tag.contains('{'), "{written}");
    let (prefix, escaped) = tag.rsplit_once(':').expect("a ':' after the prefix");
    let mut key = Vec::new();
    let mut bytes = escaped.bytes();
    while let Some(byte) = bytes.next() {
        if byte == b'%' {
            let hex: String = [bytes.next().unwrap(), bytes.next().unwrap()]
                .iter()
                .map(|&b| b as char)
                .collect();
            key.push(u8::from_str_radix(&hex, 16).expect("two hex digits"));
        } else {
            assert!(!matches!(byte, b'{' | b'}' | b':'), "{written}");
            key.push(byte);
        }
    }
    (
        prefix.to_string(),
        String::from_utf8(key).expect("UTF-8"),
        suffix.to_string(),
    )
}

proptest! {
    /// Every bucket key reads back as exactly the prefix and key it was written from, so
    /// two different pairs can never be written as one key, and the hash tag is the whole
    /// prefix and key: whatever the key holds, braces, colons, '%' and all.
    #[test]
    fn every_key_reads_back_as_its_own_prefix_and_key(
        prefix in "[a-zA-Z0-9._/-]{1,8}(:[a-zA-Z0-9._/-]{1,8}){0,3}",
        key in "([{}:%a]|%7B|%3A|\\PC){0,12}",
    ) {
        for algorithm in Algorithm::ALL {
            let limiter = RedisLimiter::new(algorithm, limit("6/8s"), &prefix).unwrap();
            let (read_prefix, read_key, suffix) = read_back(&limiter.redis_key(&key));
            prop_assert_eq!(&read_prefix, &prefix);
            prop_assert_eq!(&read_key, &key);
            prop_assert_eq!(suffix, format!(":{}", algorithm.name()));
            let (read_prefix, read_key, suffix) = read_back(&limiter.reservation_key(&key, 255));
            prop_assert_eq!((read_prefix, read_key), (prefix.clone(), key.clone()));
            prop_assert_eq!(suffix, format!(":{}:reservation:00000000000000ff", algorithm.name()));
        }
    }
}
