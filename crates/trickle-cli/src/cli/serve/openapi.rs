//! The demo API's OpenAPI document (3.1, JSON), served at `GET /openapi.json`: every route
//! of every group as a GET, with the answers the server really sends and the group's rate
//! limit in ESI's `x-rate-limit` extension, so that a docs page (or the widget's `openapi`
//! attribute) reads the limit the server enforces rather than a copy that can drift.
//!
//! ESI writes one limit per route: `x-rate-limit: {"group": "fitting", "window-size": "15m",
//! "max-tokens": 150}`. A group of one limit gets exactly that object. A group whose policy
//! has several limits gets an array of such objects, one per limit in the policy's order,
//! each also naming its limit (`"name": "burst"`, or the limit's own text, `"6/1h"`, when
//! it was not given one): the names `RateLimit-Policy` and a 429's `violated-policies` use.
//! `max-tokens` counts tokens, which each answer costs by the group's cost table.
//!
//! The document is built once, from the checked config, when the app is: serving it costs
//! a copy of the bytes, and it is never charged to any bucket.

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::routing::{get, MethodRouter};
use serde_json::{json, Map, Value};
use trickle_core::{Limit, Policy};
use trickle_tower::HeaderDialect;

use crate::cli::serve::config::{Config, Group};
use crate::cli::serve::request::{MAX_CLIENT_ID, MAX_DELAY_MS, OPENAPI_PATH};

/// Where the document is served.
pub const PATH: &str = OPENAPI_PATH;

/// The OpenAPI version the document is written in.
const OPENAPI: &str = "3.1.0";

/// `GET /openapi.json` (and HEAD): the document for `config`, serialised once.
pub fn route(config: &Config) -> MethodRouter {
    let body = Bytes::from(format!("{}\n", document(config)));
    get(move || {
        let body = body.clone();
        async move {
            (
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                body,
            )
        }
    })
}

/// The whole document for `config`.
pub fn document(config: &Config) -> Value {
    let mut paths = Map::new();
    for group in &config.groups {
        let operation = json!({ "get": operation(group) });
        for route in &group.routes {
            paths.insert(route.clone(), operation.clone());
        }
    }
    paths.insert(PATH.to_string(), json!({ "get": own_operation() }));
    let tags: Vec<Value> = config
        .groups
        .iter()
        .map(|group| {
            json!({
                "name": group.name,
                "description": format!(
                    "Rate limit {} ({}), per X-Client-Id; each answer costs by the table {}.",
                    group.policy,
                    group.algorithm,
                    group.costs
                ),
            })
        })
        .collect();
    let shadow = config.groups.iter().any(|group| group.shadow);
    json!({
        "openapi": OPENAPI,
        "info": {
            "title": "trickle serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A demo API behind trickle's rate limits: each route answers GET \
                with a small JSON body, charged to its group's bucket for the client named by \
                X-Client-Id. Each operation's x-rate-limit is its group's limit as ESI writes \
                it ({group, window-size, max-tokens}), or, for a group of several limits \
                decided together, an array of one such object per limit, each with the \
                limit's name.",
        },
        "tags": tags,
        "paths": paths,
        "components": components(config.headers, shadow),
    })
}

/// `x-rate-limit` for `group`'s `policy`: ESI's object for one limit, an array of them,
/// each named, for several.
pub fn x_rate_limit(group: &str, policy: &Policy) -> Value {
    let esi = |limit: Limit| {
        json!({
            "group": group,
            "window-size": window_size(limit),
            "max-tokens": limit.tokens(),
        })
    };
    match (policy.len(), policy.limit(0)) {
        (1, Some(limit)) => esi(limit),
        _ => Value::Array(
            policy
                .iter()
                .map(|(name, limit)| {
                    let mut object = esi(limit);
                    object["name"] = json!(name);
                    object
                })
                .collect(),
        ),
    }
}

/// The window as ESI writes it, in the limit's own text: `15m`, `8s`, `1500ms`.
fn window_size(limit: Limit) -> String {
    let text = limit.text();
    match text.split_once('/') {
        Some((_, window)) => window.to_string(),
        None => format!("{}ms", limit.window_ms()),
    }
}

/// The GET of each of `group`'s routes.
fn operation(group: &Group) -> Value {
    let mut responses = Map::new();
    let answer = if group.shadow {
        "ShadowAnswer"
    } else {
        "Answer"
    };
    responses.insert("200".into(), reference("responses", answer));
    responses.insert("400".into(), reference("responses", "BadRequest"));
    // Shadow mode refuses nothing: a request over the limit is answered and marked, and
    // a store that cannot decide lets it through.
    if !group.shadow {
        responses.insert("429".into(), reference("responses", "TooManyRequests"));
        responses.insert("503".into(), reference("responses", "Unavailable"));
    }
    responses.insert("default".into(), reference("responses", "AskedFor"));
    json!({
        "summary": format!("A demo answer, charged to group {}", group.name),
        "description": format!(
            "Answers the status ?status= asks for (200 unless given), after ?delay_ms=, \
             charged to the caller's bucket in group {}: {} ({}), each answer costing by \
             the table {}.",
            group.name, group.policy, group.algorithm, group.costs
        ),
        "tags": [group.name],
        "parameters": [
            reference("parameters", "X-Client-Id"),
            reference("parameters", "status"),
            reference("parameters", "delay_ms"),
        ],
        "responses": responses,
        "x-rate-limit": x_rate_limit(&group.name, &group.policy),
    })
}

/// The GET of the document itself: no client id, no limit.
fn own_operation() -> Value {
    json!({
        "summary": "This document",
        "description": "The OpenAPI document of this server, uncharged.",
        "responses": {
            "200": {
                "description": "The document.",
                "content": { "application/json": { "schema": { "type": "object" } } },
            },
        },
    })
}

/// `#/components/KIND/NAME`.
fn reference(kind: &str, name: &str) -> Value {
    json!({ "$ref": format!("#/components/{kind}/{name}") })
}

/// The rate-limit headers the layer writes in `dialect`: with the counts after a decision
/// (`counted`), or the policy alone (a 503, where nothing was decided); `extra` are added
/// (`Retry-After`, `X-Ratelimit-Shadow`).
fn headers(dialect: HeaderDialect, counted: bool, extra: &[&str]) -> Value {
    let mut names = Vec::new();
    if dialect != HeaderDialect::Ietf {
        names.extend(["X-Ratelimit-Limit", "X-Ratelimit-Group"]);
        if counted {
            names.extend(["X-Ratelimit-Remaining", "X-Ratelimit-Used"]);
        }
    }
    if dialect != HeaderDialect::Esi {
        names.push("RateLimit-Policy");
        if counted {
            names.push("RateLimit");
        }
    }
    names.extend(extra);
    Value::Object(
        names
            .into_iter()
            .map(|name| (name.to_string(), reference("headers", name)))
            .collect(),
    )
}

/// The parameters, headers, schemas and responses the operations refer to.
fn components(dialect: HeaderDialect, shadow: bool) -> Value {
    let problem = json!({ "application/problem+json": {
        "schema": reference("schemas", "Problem"),
    } });
    let answer = json!({ "application/json": { "schema": reference("schemas", "Answer") } });
    let mut responses = json!({
        "Answer": {
            "description": "The demo's answer, charged by its status.",
            "headers": headers(dialect, true, &[]),
            "content": answer,
        },
        "AskedFor": {
            "description": "The status ?status= asked for, with the demo's body (none for \
                204, 205 and 304), charged by that status.",
            "headers": headers(dialect, true, &[]),
            "content": answer,
        },
        "BadRequest": {
            "description": "No valid X-Client-Id, ?status= or ?delay_ms=; the detail says \
                which and what is allowed. Nothing is charged.",
            "content": problem,
        },
        "TooManyRequests": {
            "description": "Refused by the rate limit, nothing charged: the problem type \
                quota-exceeded with violated-policies, the names of the limits that had no \
                room (or, with free_runs, abnormal-usage-detected). Retry-After says when \
                the request fits, and is left out when it never can.",
            "headers": headers(dialect, true, &["Retry-After"]),
            "content": problem,
        },
        "Unavailable": {
            "description": "The rate limiter cannot take the request now (its table of \
                clients is full, or its store is away and the server fails closed): the \
                problem type temporary-reduced-capacity, and Retry-After.",
            "headers": headers(dialect, false, &["Retry-After"]),
            "content": problem,
        },
    });
    if shadow {
        responses["ShadowAnswer"] = json!({
            "description": "The demo's answer, charged by its status; in shadow mode, \
                X-Ratelimit-Shadow marks an answer the limit would have refused.",
            "headers": headers(dialect, true, &["X-Ratelimit-Shadow"]),
            "content": answer,
        });
    }
    json!({
        "parameters": {
            "X-Client-Id": {
                "name": "X-Client-Id",
                "in": "header",
                "required": true,
                "description": "The client whose bucket the request spends, one per group.",
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_CLIENT_ID,
                    "pattern": "^[!-~]+$",
                },
                "example": "docs-demo",
            },
            "status": {
                "name": "status",
                "in": "query",
                "description": "The status to answer with, 200 unless given.",
                "schema": { "type": "integer", "minimum": 200, "maximum": 599 },
            },
            "delay_ms": {
                "name": "delay_ms",
                "in": "query",
                "description": "How long to wait before answering, once admitted.",
                "schema": { "type": "integer", "minimum": 0, "maximum": MAX_DELAY_MS },
            },
        },
        "headers": header_components(),
        "schemas": {
            "Answer": {
                "type": "object",
                "required": ["group", "route", "status"],
                "properties": {
                    "group": { "type": "string" },
                    "route": { "type": "string" },
                    "status": { "type": "integer", "minimum": 200, "maximum": 599 },
                },
            },
            "Problem": {
                "description": "An RFC 9457 problem.",
                "type": "object",
                "required": ["type", "title", "status", "detail"],
                "properties": {
                    "type": { "type": "string", "format": "uri-reference" },
                    "title": { "type": "string" },
                    "status": { "type": "integer", "minimum": 400, "maximum": 599 },
                    "detail": { "type": "string" },
                    "violated-policies": {
                        "description": "The names of the limits that refused the request \
                            (draft-ietf-httpapi-ratelimit-headers).",
                        "type": "array",
                        "items": { "type": "string" },
                    },
                },
            },
        },
        "responses": responses,
    })
}

/// Every rate-limit header an answer may carry, described once.
fn header_components() -> Value {
    let string = |description: &str, example: &str| {
        json!({
            "description": description,
            "schema": { "type": "string" },
            "example": example,
        })
    };
    let count = |description: &str| {
        json!({
            "description": description,
            "schema": { "type": "integer", "minimum": 0 },
        })
    };
    json!({
        "X-Ratelimit-Limit": string(
            "ESI's: the limit nearest to refusing, TOKENS/WINDOW (the whole policy when \
             nothing was decided).",
            "150/15m",
        ),
        "X-Ratelimit-Group": string("ESI's: the route group charged.", "market"),
        "X-Ratelimit-Remaining": count("ESI's: whole tokens left in that limit."),
        "X-Ratelimit-Used": count("ESI's: the tokens this request spent."),
        "RateLimit-Policy": string(
            "The IETF draft's (Structured Field): each limit's name, quota q, unit qu and \
             window w in seconds.",
            "\"burst\";q=2;qu=\"tokens\";w=1, \"6/1h\";q=6;qu=\"tokens\";w=3600",
        ),
        "RateLimit": string(
            "The IETF draft's (Structured Field): each limit's remaining r and seconds t \
             until more is free.",
            "\"burst\";r=0;t=1, \"6/1h\";r=4;t=3600",
        ),
        "Retry-After": count("Seconds until the request would be admitted."),
        "X-Ratelimit-Shadow": string(
            "Shadow mode: the answer a limit would have refused, why, and the wait the 429 \
             would have said.",
            "would-refuse;reason=limit;retry-after=9",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    #[test]
    fn x_rate_limit_is_esi_s_object_for_one_limit_and_a_named_array_for_several() {
        let cases: [(&str, Value); 4] = [
            ("150/15m", json!({"group": "g", "window-size": "15m", "max-tokens": 150})),
            ("7/1500ms", json!({"group": "g", "window-size": "1500ms", "max-tokens": 7})),
            ("hourly=150/1h", json!({"group": "g", "window-size": "1h", "max-tokens": 150})),
            ("burst=2/1s 6/1h", json!([
                {"group": "g", "name": "burst", "window-size": "1s", "max-tokens": 2},
                {"group": "g", "name": "6/1h", "window-size": "1h", "max-tokens": 6},
            ])),
        ];
        for (policy, want) in cases {
            assert_eq!(x_rate_limit("g", &policy.parse().unwrap()), want, "{policy}");
        }
    }
}
