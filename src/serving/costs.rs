//! What a response costs by its HTTP status, as a table a docs author writes as text.
//!
//! Some APIs charge a request only once they know how it went: ESI takes 2 tokens for a
//! success, 1 for a redirect or `304 Not Modified`, 5 for a client error (but nothing for a
//! 429, which the limiter itself sent) and nothing for a server error. A [`CostTable`] holds
//! such a price list, written `"2xx:2 3xx:1 4xx:5 429:0 5xx:0"`; ESI's is the preset `esi`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use crate::values::text::{error_from_message, parse_digits, split_once, Text};

/// A status → cost table: exact statuses and whole classes, an exact status winning over
/// its class.
///
/// ```
/// use trickle_core::CostTable;
///
/// let table: CostTable = "200:2 304:1 4xx:5 429:0 5xx:0".parse().unwrap();
/// assert_eq!(table.cost(200), Ok(2));
/// assert_eq!(table.cost(404), Ok(5));
/// assert_eq!(table.cost(429), Ok(0)); // the exact status wins over 4xx
/// assert_eq!(
///     table.cost(201).unwrap_err().to_string(),
///     "status 201 has no cost in this table, which prices 200, 304, 4xx, 429 and 5xx"
/// );
/// // Buttons to offer, in table order: a class by a typical status, never 429.
/// assert_eq!(table.statuses(), [200, 304, 404, 500]);
///
/// let esi: CostTable = "esi".parse().unwrap();
/// assert_eq!(esi, CostTable::esi());
/// assert_eq!(esi.to_string(), "2xx:2 3xx:1 4xx:5 429:0 5xx:0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostTable {
    /// In the order written, each key once.
    entries: Vec<(Key, u64)>,
}

/// What an entry prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// One status, 100 to 599.
    Status(u16),
    /// A whole class by its first digit, 1 to 5: `4` is 400 to 499.
    Class(u16),
}

/// ESI's table, the preset `esi`.
const ESI: &str = "2xx:2 3xx:1 4xx:5 429:0 5xx:0";

/// The status a button shows for a class (1 to 5): 100, 200, 304, 404, 500.
fn typical(class: u16) -> u16 {
    match class {
        3 => 304,
        4 => 404,
        class => class * 100,
    }
}

/// The status the limiter itself answers with; a response never costs it as a button.
const TOO_MANY_REQUESTS: u16 = 429;

const TABLE_FORM: &str = "write a table as STATUS:COST entries separated by spaces, where \
STATUS is a status from 100 to 599 or a class 1xx to 5xx and COST a whole number of tokens, \
as in \"200:2 304:1 4xx:5 429:0 5xx:0\", or name the preset \"esi\"";

impl CostTable {
    /// ESI's table: 2xx 2, 3xx 1, 4xx 5 but 429 0, 5xx 0.
    pub fn esi() -> CostTable {
        parse_entries(ESI).unwrap_or_else(|_| CostTable {
            entries: Vec::new(),
        })
    }

    /// What a response with `status` costs: its exact entry, else its class's. A status
    /// with neither (or no HTTP status at all) is an error naming what the table prices.
    pub fn cost(&self, status: u64) -> Result<u64, UnpricedStatus> {
        let find = |wanted: Key| {
            self.entries
                .iter()
                .find(|(key, _)| *key == wanted)
                .map(|&(_, cost)| cost)
        };
        let found = match u16::try_from(status) {
            Ok(status @ 100..=599) => {
                find(Key::Status(status)).or_else(|| find(Key::Class(status / 100)))
            }
            _ => None,
        };
        found.ok_or_else(|| UnpricedStatus {
            status,
            priced: self.keys(),
        })
    }

    /// One status per entry to offer as a button, in table order: an exact status as
    /// itself, a class as a typical member (200, 304, 404, 500; 100 for 1xx) or, when that
    /// one has an entry of its own, the first member that has none. Never 429, which only
    /// the limiter answers; never the same status twice.
    pub fn statuses(&self) -> Vec<u16> {
        let mut statuses: Vec<u16> = Vec::new();
        for &(key, _) in &self.entries {
            let status = match key {
                Key::Status(status) => Some(status),
                Key::Class(class) => {
                    let priced_alone = |status: &u16| {
                        *status == TOO_MANY_REQUESTS
                            || self.entries.iter().any(|(k, _)| *k == Key::Status(*status))
                    };
                    core::iter::once(typical(class))
                        .chain(class * 100..class * 100 + 100)
                        .find(|status| !priced_alone(status))
                }
            };
            if let Some(status) = status {
                if status != TOO_MANY_REQUESTS && !statuses.contains(&status) {
                    statuses.push(status);
                }
            }
        }
        statuses
    }

    /// The table as it is written, `2xx:2 3xx:1 4xx:5 429:0 5xx:0`: what `Display` writes,
    /// built without `core::fmt`.
    pub fn text(&self) -> String {
        let mut text = Text::new();
        for (i, &(key, cost)) in self.entries.iter().enumerate() {
            if i > 0 {
                text.push(" ");
            }
            key.write(&mut text).push(":").number(cost);
        }
        text.build()
    }

    /// The keys, for a message: `200, 304, 4xx and 5xx`.
    fn keys(&self) -> String {
        let mut text = Text::new();
        let count = self.entries.len();
        for (i, &(key, _)) in self.entries.iter().enumerate() {
            key.write(match i {
                0 => &mut text,
                _ if i + 1 == count => text.push(" and "),
                _ => text.push(", "),
            });
        }
        text.build()
    }
}

impl Key {
    fn write(self, text: &mut Text) -> &mut Text {
        match self {
            Key::Status(status) => text.number(u64::from(status)),
            Key::Class(class) => text.number(u64::from(class)).push("xx"),
        }
    }
}

impl FromStr for CostTable {
    type Err = CostTableError;

    /// Parses `STATUS:COST` entries separated by whitespace, or the preset `esi`.
    fn from_str(text: &str) -> Result<CostTable, CostTableError> {
        if text.trim() == "esi" {
            return Ok(CostTable::esi());
        }
        parse_entries(text)
    }
}

fn parse_entries(text: &str) -> Result<CostTable, CostTableError> {
    let mut entries: Vec<(Key, u64)> = Vec::new();
    for entry in text.split_ascii_whitespace() {
        let owned = || entry.to_string();
        let (key, cost) = split_once(entry, b':')
            .ok_or_else(|| CostTableError::MissingColon { entry: owned() })?;
        let key = parse_key(key).map_err(|class| match class {
            true => CostTableError::BadClass {
                entry: owned(),
                class: key.to_string(),
            },
            false => CostTableError::BadKey {
                entry: owned(),
                key: key.to_string(),
            },
        })?;
        let cost = parse_digits(cost).ok_or_else(|| CostTableError::BadCost {
            entry: owned(),
            cost: cost.to_string(),
        })?;
        if entries.iter().any(|&(seen, _)| seen == key) {
            return Err(CostTableError::DuplicateKey {
                key: key.write(&mut Text::new()).build(),
            });
        }
        entries.push((key, cost));
    }
    if entries.is_empty() {
        return Err(CostTableError::Empty);
    }
    Ok(CostTable { entries })
}

/// A status 100 to 599, or a class `1xx` to `5xx` (`X` too). `Err(true)` for something
/// shaped like a class that is none (`6xx`, `0xx`), `Err(false)` for anything else.
fn parse_key(key: &str) -> Result<Key, bool> {
    match key.as_bytes() {
        [digit @ b'1'..=b'5', b'x' | b'X', b'x' | b'X'] => Ok(Key::Class(u16::from(digit - b'0'))),
        [b'0'..=b'9', b'x' | b'X', b'x' | b'X'] => Err(true),
        _ => match parse_digits(key) {
            Some(status @ 100..=599) => Ok(Key::Status(status as u16)),
            _ => Err(false),
        },
    }
}

impl fmt::Display for CostTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// A cost table written as text could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CostTableError {
    /// No entries at all.
    Empty,
    /// An entry without `:` between the status and the cost.
    MissingColon { entry: String },
    /// The key is neither a status from 100 to 599 nor a class.
    BadKey { entry: String, key: String },
    /// The key looks like a class, but there is no such HTTP class (`6xx`).
    BadClass { entry: String, class: String },
    /// The cost is not a whole number of tokens.
    BadCost { entry: String, cost: String },
    /// The same status or class twice.
    DuplicateKey { key: String },
}

impl CostTableError {
    /// What `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        let mut text = Text::new();
        fn entry<'a>(text: &'a mut Text, written: &str) -> &'a mut Text {
            text.push("cost table entry ").quoted(written)
        }
        match self {
            CostTableError::Empty => text
                .push("a cost table needs at least one entry; ")
                .push(TABLE_FORM),
            CostTableError::MissingColon { entry: written } => entry(&mut text, written)
                .push(" has no ':' between a status and its cost; ")
                .push(TABLE_FORM),
            CostTableError::BadKey {
                entry: written,
                key,
            } => entry(&mut text, written)
                .push(": ")
                .quoted(key)
                .push(" is not a status from 100 to 599 or a class 1xx to 5xx; ")
                .push(TABLE_FORM),
            CostTableError::BadClass {
                entry: written,
                class,
            } => entry(&mut text, written)
                .push(": ")
                .quoted(class)
                .push(" is not an HTTP class; the classes are 1xx, 2xx, 3xx, 4xx and 5xx"),
            CostTableError::BadCost {
                entry: written,
                cost,
            } => entry(&mut text, written)
                .push(": cost ")
                .quoted(cost)
                .push(" is not a whole number of tokens from 0 to ")
                .number(u64::MAX)
                .push("; ")
                .push(TABLE_FORM),
            CostTableError::DuplicateKey { key } => text
                .push("cost table prices ")
                .push(key)
                .push(" twice; write each status or class once"),
        }
        .build()
    }
}

/// A status a [`CostTable`] has no price for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpricedStatus {
    /// The status asked about.
    pub status: u64,
    /// What the table prices, as a message lists it: `200, 304, 4xx and 5xx`.
    pub priced: String,
}

impl UnpricedStatus {
    /// What `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        Text::new()
            .push("status ")
            .number(self.status)
            .push(" has no cost in this table, which prices ")
            .push(&self.priced)
            .build()
    }
}

error_from_message!(CostTableError, UnpricedStatus);
