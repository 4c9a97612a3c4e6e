//! Cost tables (`CostTable`): what a response costs by its status, as an author writes it.
//! One row per case: tables that parse, the cost of each status under them, the buttons they
//! offer, and every kind of bad table with its whole message.

use trickle_core::costs::CostTableError;
use trickle_core::{esi, CostTable};

/// How every message about a table's shape ends.
macro_rules! form {
    () => {
        "write a table as STATUS:COST entries separated by spaces, where STATUS is a status from 100 to 599 or a class 1xx to 5xx and COST a whole number of tokens, as in \"200:2 304:1 4xx:5 429:0 5xx:0\", or name the preset \"esi\""
    };
}

/// Statuses with their cost (`None`: the table has no price for it).
type Prices = &'static [(u64, Option<u64>)];

/// A table, then what it charges.
#[rustfmt::skip]
const COSTS: &[(&str, Prices)] = &[
    ("esi",                            &[(100, None), (199, None), (200, Some(2)), (299, Some(2)), (300, Some(1)), (304, Some(1)), (400, Some(5)), (428, Some(5)), (429, Some(0)), (430, Some(5)), (500, Some(0)), (599, Some(0)), (600, None), (0, None), (u64::MAX, None)]),
    ("200:2 304:1 4xx:5 429:0 5xx:0",  &[(200, Some(2)), (201, None), (304, Some(1)), (301, None), (404, Some(5)), (429, Some(0)), (503, Some(0))]),
    // An exact status wins over its class, whichever comes first.
    ("429:0 4xx:5",                    &[(429, Some(0)), (404, Some(5))]),
    ("4xx:5 429:7",                    &[(429, Some(7)), (400, Some(5))]),
    // Uppercase classes, any whitespace between entries and around the table.
    ("  2XX:1\t3xx:0\n",               &[(200, Some(1)), (399, Some(0)), (400, None)]),
    ("1xx:0",                          &[(100, Some(0)), (101, Some(0)), (199, Some(0)), (200, None)]),
    ("100:1 599:2",                    &[(100, Some(1)), (599, Some(2)), (101, None)]),
    // Costs up to u64::MAX, and leading zeros.
    ("200:18446744073709551615 500:007", &[(200, Some(u64::MAX)), (500, Some(7))]),
    // `esi` is a preset only alone.
    (" esi ",                          &[(200, Some(2))]),
];

#[test]
fn statuses_cost_what_the_table_says() {
    for (text, costs) in COSTS {
        let table: CostTable = text.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"));
        for &(status, cost) in *costs {
            assert_eq!(table.cost(status).ok(), cost, "{text:?}: {status}");
        }
    }
}

/// A table, then the statuses it offers as buttons, in table order.
#[rustfmt::skip]
const BUTTONS: &[(&str, &[u16])] = &[
    ("esi",                            &[200, 304, 404, 500]),
    ("200:2 304:1 4xx:5 429:0 5xx:0",  &[200, 304, 404, 500]),
    ("5xx:0 1xx:0 2xx:1",              &[500, 100, 200]),
    // 429 is never a button, written alone or not.
    ("429:1",                          &[]),
    // A class whose typical status has its own entry shows its first member without one.
    ("404:3 4xx:1",                    &[404, 400]),
    ("4xx:1 404:3 400:2",              &[401, 404, 400]),
    ("304:1 3xx:2",                    &[304, 300]),
    // Every member priced alone: the class has nothing left to show.
    ("200:1 2xx:2 201:1",              &[200, 202, 201]),
];

#[test]
fn buttons_follow_the_table() {
    for (text, statuses) in BUTTONS {
        let table: CostTable = text.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(table.statuses(), *statuses, "{text:?}");
        for status in table.statuses() {
            assert!(table.cost(u64::from(status)).is_ok(), "{text:?}: {status}");
        }
    }
}

/// A table, then the status asked about and the whole message.
#[rustfmt::skip]
const UNPRICED: &[(&str, u64, &str)] = &[
    ("esi",           101,   "status 101 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"),
    ("esi",           600,   "status 600 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"),
    ("esi",           70000, "status 70000 has no cost in this table, which prices 2xx, 3xx, 4xx, 429 and 5xx"),
    ("200:2",         404,   "status 404 has no cost in this table, which prices 200"),
    ("200:2 4XX:1",   500,   "status 500 has no cost in this table, which prices 200 and 4xx"),
];

#[test]
fn a_status_without_a_price_says_what_the_table_prices() {
    for (text, status, expected) in UNPRICED {
        let table: CostTable = text.parse().expect("a valid table");
        let error = table.cost(*status).expect_err("no price");
        assert_eq!(error.status, *status);
        assert_eq!(error.to_string(), *expected, "{text:?}: {status}");
        assert_eq!(error.message(), *expected);
    }
}

/// Bad text, then its whole message: what was wrong and what is allowed.
#[rustfmt::skip]
const BAD_TABLES: &[(&str, &str)] = &[
    // Empty.
    ("",              concat!("a cost table needs at least one entry; ", form!())),
    (" \t\n",         concat!("a cost table needs at least one entry; ", form!())),
    // No colon, or a stray one.
    ("200",           concat!("cost table entry \"200\" has no ':' between a status and its cost; ", form!())),
    ("200 :2",        concat!("cost table entry \"200\" has no ':' between a status and its cost; ", form!())),
    ("200=2",         concat!("cost table entry \"200=2\" has no ':' between a status and its cost; ", form!())),
    ("esi 200:1",     concat!("cost table entry \"esi\" has no ':' between a status and its cost; ", form!())),
    // A bad key: out of range, not a number, empty, a sign, a fraction, non-ASCII digits.
    ("99:1",          concat!("cost table entry \"99:1\": \"99\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    ("600:1",         concat!("cost table entry \"600:1\": \"600\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    (":1",            concat!("cost table entry \":1\": \"\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    ("+200:1",        concat!("cost table entry \"+200:1\": \"+200\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    ("ok:1",          concat!("cost table entry \"ok:1\": \"ok\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    ("4x:1",          concat!("cost table entry \"4x:1\": \"4x\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    ("２００:1",      concat!("cost table entry \"２００:1\": \"２００\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    // A class that HTTP does not have.
    ("6xx:1",         "cost table entry \"6xx:1\": \"6xx\" is not an HTTP class; the classes are 1xx, 2xx, 3xx, 4xx and 5xx"),
    ("0xx:1",         "cost table entry \"0xx:1\": \"0xx\" is not an HTTP class; the classes are 1xx, 2xx, 3xx, 4xx and 5xx"),
    // A bad cost: negative, fractional, empty, beyond u64, another colon.
    ("200:-1",        concat!("cost table entry \"200:-1\": cost \"-1\" is not a whole number of tokens from 0 to 18446744073709551615; ", form!())),
    ("200:1.5",       concat!("cost table entry \"200:1.5\": cost \"1.5\" is not a whole number of tokens from 0 to 18446744073709551615; ", form!())),
    ("200:",          concat!("cost table entry \"200:\": cost \"\" is not a whole number of tokens from 0 to 18446744073709551615; ", form!())),
    ("200:18446744073709551616", concat!("cost table entry \"200:18446744073709551616\": cost \"18446744073709551616\" is not a whole number of tokens from 0 to 18446744073709551615; ", form!())),
    ("200:1:2",       concat!("cost table entry \"200:1:2\": cost \"1:2\" is not a whole number of tokens from 0 to 18446744073709551615; ", form!())),
    // A key twice, however it is written.
    ("200:1 200:2",   "cost table prices 200 twice; write each status or class once"),
    ("4xx:1 4XX:1",   "cost table prices 4xx twice; write each status or class once"),
    // Markup and control characters stay visible text.
    ("<b>:1",         concat!("cost table entry \"<b>:1\": \"<b>\" is not a status from 100 to 599 or a class 1xx to 5xx; ", form!())),
    ("200:\u{200b}1", concat!("cost table entry \"200:\\u{200b}1\": cost \"\\u{200b}1\" is not a whole number of tokens from 0 to 18446744073709551615; ", form!())),
];

#[test]
fn bad_tables_say_what_was_wrong_and_what_is_allowed() {
    for (text, expected) in BAD_TABLES {
        let error: CostTableError = match text.parse::<CostTable>() {
            Ok(table) => panic!("{text:?} was accepted as {table}"),
            Err(error) => error,
        };
        assert_eq!(error.to_string(), *expected, "{text:?}");
        assert!(!expected.contains('\n'), "{text:?}: one line");
    }
}

#[test]
fn a_table_is_written_back_in_its_order_with_lowercase_classes() {
    #[rustfmt::skip]
    let rows = [
        ("esi",                     "2xx:2 3xx:1 4xx:5 429:0 5xx:0"),
        (" 429:0\t4XX:5 200:007 ", "429:0 4xx:5 200:7"),
    ];
    for (text, written) in rows {
        let table: CostTable = text.parse().expect("a valid table");
        assert_eq!(table.to_string(), written);
        assert_eq!(written.parse::<CostTable>().as_ref(), Ok(&table));
    }
}

/// ESI's table is written once, as the preset; `esi::cost_for_status` reads it.
#[test]
fn esi_cost_for_status_agrees_with_the_preset() {
    let preset = CostTable::esi();
    for status in 0..=1_000u16 {
        assert_eq!(
            esi::cost_for_status(status).ok(),
            preset.cost(u64::from(status)).ok(),
            "{status}"
        );
    }
}
