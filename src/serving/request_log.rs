//! The request logs a replay reads, row by row, with one set of rules and messages for
//! `trickle replay` and the `<rate-limit-demo replay>` widget.
//!
//! - **CSV**: a header naming `t_ms` and one of `cost` or `status` (columns in any order,
//!   extra ones ignored), then one request per line, sorted by time. A status is priced by
//!   ESI's table ([`crate::esi::cost_for_status`]). Line numbers are the file's own, from 1,
//!   the header on line 1, blank lines counted. The CLI splits a line into fields with the
//!   `csv` crate and hands them to [`Columns`]; [`TextLog`] splits them the same way (quoted
//!   fields included, but not one that runs on to the next line), for the widget.
//! - **HAR**, a browser's export: each entry's `startedDateTime` and `response.status`.
//!   [`HarLog`] takes them entry by entry, whoever read the JSON, and gives the requests
//!   sorted by time, each at its milliseconds after the earliest; an entry that got no
//!   response (status 0, a request blocked or aborted) is left out.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

use crate::serving::esi::{cost_for_status, StatusError};
use crate::values::text::{error_from_message, parse_digits, Text};

/// The header forms the messages suggest.
const EXPECTED_HEADER: &str = "t_ms,cost or t_ms,status";

/// One request of a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub t_ms: u64,
    /// Its cost in tokens: given, or ESI's price for its status.
    pub cost: u64,
}

/// Where a problem is: a line of a CSV log or an entry of a HAR, each from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Line(u64),
    Entry(u64),
}

impl Place {
    fn write(self, text: &mut Text) {
        match self {
            Place::Line(line) => text.push("line ").number(line),
            Place::Entry(entry) => text.push("entry ").number(entry),
        };
    }
}

/// Where each needed column sits in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns {
    t_ms: usize,
    price: Price,
}

/// How a row says what its request costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Price {
    /// The `cost` column, in tokens.
    Cost(usize),
    /// The `status` column, priced by ESI's table.
    Status(usize),
}

impl Columns {
    /// Finds the columns in the header's fields (trimmed here), on line `line`.
    pub fn find(header: &[&str], line: u64) -> Result<Columns, LogError> {
        let column = |name: &'static str| -> Result<Option<usize>, LogError> {
            let mut found = header
                .iter()
                .enumerate()
                .filter(|(_, field)| field.trim() == name);
            match (found.next(), found.next()) {
                (Some((index, _)), None) => Ok(Some(index)),
                (None, _) => Ok(None),
                (Some(_), Some(_)) => Err(LogError::RepeatedColumn { line, name }),
            }
        };
        let found = || {
            let mut text = String::new();
            for (index, field) in header.iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                text.push_str(field.trim());
            }
            text
        };

        let t_ms = column("t_ms")?.ok_or_else(|| LogError::MissingColumn {
            line,
            name: "t_ms",
            found: found(),
        })?;
        let price = match (column("cost")?, column("status")?) {
            (Some(cost), None) => Price::Cost(cost),
            (None, Some(status)) => Price::Status(status),
            (Some(_), Some(_)) => return Err(LogError::CostAndStatus { line }),
            (None, None) => {
                return Err(LogError::MissingColumn {
                    line,
                    name: "cost or status",
                    found: found(),
                })
            }
        };
        Ok(Columns { t_ms, price })
    }

    /// The request of a row of `fields` fields on line `line`; `field(i)` is the i-th, as
    /// read (trimmed here).
    pub fn request<'a>(
        &self,
        field: impl Fn(usize) -> Option<&'a str>,
        fields: usize,
        line: u64,
    ) -> Result<Request, LogError> {
        let field = |column: &'static str, index: usize| {
            field(index).map(str::trim).ok_or(LogError::MissingField {
                line,
                column,
                index,
                fields,
            })
        };
        let t_ms_text = field("t_ms", self.t_ms)?;
        let t_ms = parse_digits(t_ms_text).ok_or_else(|| LogError::BadNumber {
            line,
            column: "t_ms",
            text: t_ms_text.into(),
            unit: "milliseconds",
        })?;
        let cost = match self.price {
            Price::Cost(index) => {
                let text = field("cost", index)?;
                parse_digits(text).ok_or_else(|| LogError::BadNumber {
                    line,
                    column: "cost",
                    text: text.into(),
                    unit: "tokens",
                })?
            }
            Price::Status(index) => {
                let text = field("status", index)?;
                let status = parse_digits(text).ok_or_else(|| LogError::BadStatus {
                    line,
                    text: text.into(),
                })?;
                price_status(status, Place::Line(line))?
            }
        };
        Ok(Request { t_ms, cost })
    }
}

/// ESI's price for `status`, or the error that names `place`.
fn price_status(status: u64, place: Place) -> Result<u64, LogError> {
    u16::try_from(status)
        .ok()
        .and_then(|status| cost_for_status(status).ok())
        .ok_or(LogError::UnpricedStatus { place, status })
}

/// Insists that a log's times never go back.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sorted {
    /// The time and line of the request before.
    previous: Option<(u64, u64)>,
}

impl Sorted {
    pub fn new() -> Sorted {
        Sorted::default()
    }

    /// Checks the request at `t_ms` on line `line`, which comes after those checked before.
    pub fn check(&mut self, t_ms: u64, line: u64) -> Result<(), LogError> {
        if let Some((previous_t_ms, previous_line)) = self.previous {
            if t_ms < previous_t_ms {
                return Err(LogError::Unsorted {
                    line,
                    t_ms,
                    previous_t_ms,
                    previous_line,
                });
            }
        }
        self.previous = Some((t_ms, line));
        Ok(())
    }
}

/// A CSV log fed line by line, its fields split as the csv crate splits them, quoted fields
/// included, except that a quoted field cannot hold a line break.
///
/// ```
/// use trickle_core::request_log::{Request, TextLog};
///
/// let mut log = TextLog::new();
/// assert_eq!(log.line("t_ms,status"), Ok(None));
/// assert_eq!(log.line("0,200"), Ok(Some(Request { t_ms: 0, cost: 2 })));
/// assert_eq!(log.line(""), Ok(None));
/// assert_eq!(
///     log.line("5,ok").unwrap_err().to_string(),
///     "line 4: status \"ok\" is not an HTTP status; expected a whole number from 200 to 599"
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct TextLog {
    columns: Option<Columns>,
    /// The lines seen so far.
    line: u64,
    sorted: Sorted,
}

impl TextLog {
    pub fn new() -> TextLog {
        TextLog::default()
    }

    /// Reads the next line (without its line break; a `\r` before it is dropped): the
    /// request it holds, or `None` for the header and blank lines.
    pub fn line(&mut self, text: &str) -> Result<Option<Request>, LogError> {
        self.line += 1;
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            return Ok(None);
        }
        let fields = split_fields(text);
        let fields: Vec<&str> = fields.iter().map(|field| field.as_ref()).collect();
        let Some(columns) = self.columns else {
            self.columns = Some(Columns::find(&fields, self.line)?);
            return Ok(None);
        };
        let request =
            columns.request(|index| fields.get(index).copied(), fields.len(), self.line)?;
        self.sorted.check(request.t_ms, self.line)?;
        Ok(Some(request))
    }

    /// Checks the log had a header, once every line is read.
    pub fn finish(&self) -> Result<(), LogError> {
        match self.columns {
            Some(_) => Ok(()),
            None => Err(LogError::Empty),
        }
    }
}

/// A line's fields, as the csv crate reads them: split at commas, except inside a field that
/// starts with `"`, which runs to the next lone `"` (`""` standing for one); anything after
/// that quote up to the comma is kept as written. A quote elsewhere is an ordinary character.
/// Unlike the csv crate, a quoted field cannot run on to the next line.
fn split_fields(text: &str) -> Vec<Cow<'_, str>> {
    let mut fields = Vec::new();
    let mut rest = text;
    loop {
        let field = match rest.strip_prefix('"') {
            Some(mut inside) => {
                let mut field = String::new();
                loop {
                    let Some(at) = inside.bytes().position(|byte| byte == b'"') else {
                        // Never closed: the field runs to the end of the line.
                        field.push_str(inside);
                        inside = "";
                        break;
                    };
                    field.push_str(&inside[..at]);
                    if inside.as_bytes().get(at + 1) == Some(&b'"') {
                        field.push('"');
                        inside = &inside[at + 2..];
                    } else {
                        inside = &inside[at + 1..];
                        break;
                    }
                }
                let end = inside.bytes().position(|byte| byte == b',');
                field.push_str(&inside[..end.unwrap_or(inside.len())]);
                rest = &inside[end.map_or(inside.len(), |at| at)..];
                Cow::Owned(field)
            }
            None => {
                let end = rest
                    .bytes()
                    .position(|byte| byte == b',')
                    .unwrap_or(rest.len());
                let field = &rest[..end];
                rest = &rest[end..];
                Cow::Borrowed(field)
            }
        };
        fields.push(field);
        match rest.strip_prefix(',') {
            Some(after) => rest = after,
            None => return fields,
        }
    }
}

/// A HAR's entries, fed one by one in the file's order.
///
/// ```
/// use trickle_core::request_log::{HarLog, Request};
///
/// let mut har = HarLog::new();
/// har.entry(Some("2026-12-04T10:00:01.250Z"), Some(429)).unwrap();
/// har.entry(Some("2026-12-04T11:00:00.000+01:00"), Some(200)).unwrap();
/// har.entry(Some("2026-12-04T10:00:02Z"), Some(0)).unwrap(); // no response: left out
/// assert_eq!(
///     har.requests(),
///     [Request { t_ms: 0, cost: 2 }, Request { t_ms: 1_250, cost: 0 }]
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct HarLog {
    /// Each answered entry's start, in ms since 1970, and cost.
    entries: Vec<(u64, u64)>,
    /// The entries seen so far, answered or not.
    seen: u64,
}

impl HarLog {
    pub fn new() -> HarLog {
        HarLog::default()
    }

    /// Reads the next entry: its `startedDateTime` and `response.status`, `None` where the
    /// entry has none (or not a string, not a whole number).
    pub fn entry(&mut self, started: Option<&str>, status: Option<i64>) -> Result<(), LogError> {
        self.seen += 1;
        let entry = self.seen;
        let started = started.ok_or(LogError::HarField {
            entry,
            field: "startedDateTime",
        })?;
        let status = status.ok_or(LogError::HarField {
            entry,
            field: "response.status",
        })?;
        let at_ms = time_ms(started).ok_or_else(|| LogError::BadTime {
            entry,
            text: started.into(),
        })?;
        if status <= 0 {
            return Ok(());
        }
        let cost = price_status(status.unsigned_abs(), Place::Entry(entry))?;
        self.entries.push((at_ms, cost));
        Ok(())
    }

    /// The entries read, answered ones only, sorted by their start (entries that started
    /// at the same millisecond keep the file's order), each at its ms after the earliest.
    pub fn requests(mut self) -> Vec<Request> {
        self.entries.sort_by_key(|&(at_ms, _)| at_ms);
        let first = self.entries.first().map_or(0, |&(at_ms, _)| at_ms);
        self.entries
            .into_iter()
            .map(|(at_ms, cost)| Request {
                t_ms: at_ms - first,
                cost,
            })
            .collect()
    }
}

/// An RFC 3339 date and time, as HAR writes `startedDateTime`
/// (`2026-12-04T16:55:28.123Z`, or with an offset such as `+01:00`), in ms since 1970-01-01
/// UTC; digits past the milliseconds are dropped. `None` for anything else or before 1970.
pub fn time_ms(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let number = |from: usize, to: usize| -> Option<u64> { parse_digits(text.get(from..to)?) };
    let separator = |at: usize, byte: u8| bytes.get(at) == Some(&byte);
    if !(separator(4, b'-') && separator(7, b'-') && separator(13, b':') && separator(16, b':')) {
        return None;
    }
    if !matches!(bytes.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    let mut at = 19;
    let mut ms = 0;
    if separator(at, b'.') {
        at += 1;
        let digits = bytes[at..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        for (place, byte) in bytes[at..at + digits.min(3)].iter().enumerate() {
            ms += u64::from(byte - b'0') * [100, 10, 1][place];
        }
        at += digits;
    }
    // The offset, in minutes east of UTC.
    let offset: i64 = match bytes.get(at) {
        Some(b'Z' | b'z') if at + 1 == bytes.len() => 0,
        Some(&sign @ (b'+' | b'-')) if at + 6 == bytes.len() && separator(at + 3, b':') => {
            let (hours, minutes) = (number(at + 1, at + 3)?, number(at + 4, at + 6)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let minutes = (hours * 60 + minutes) as i64;
            if sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month) || day == 0 || day > month_days[month as usize - 1] {
        return None;
    }
    // A leap second (60) counts as the second before the next minute's first.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_since_1970(year as i64, month as i64, day as i64);
    let seconds = days * 86_400 + (hour * 3_600 + minute * 60 + second) as i64 - offset * 60;
    u64::try_from(seconds)
        .ok()
        .map(|seconds| seconds * 1_000 + ms)
}

/// Days from 1970-01-01 to the date, in the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_since_1970(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// A row or entry that cannot be replayed: what is wrong, where, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogError {
    /// Not even a header.
    Empty,
    MissingColumn {
        line: u64,
        name: &'static str,
        found: String,
    },
    RepeatedColumn {
        line: u64,
        name: &'static str,
    },
    CostAndStatus {
        line: u64,
    },
    /// A row too short to reach a needed column.
    MissingField {
        line: u64,
        column: &'static str,
        index: usize,
        fields: usize,
    },
    /// `t_ms` or `cost` is not a whole number that fits a u64.
    BadNumber {
        line: u64,
        column: &'static str,
        text: String,
        unit: &'static str,
    },
    BadStatus {
        line: u64,
        text: String,
    },
    /// A number ESI's table has no price for (1XX, below 100, above 599).
    UnpricedStatus {
        place: Place,
        status: u64,
    },
    Unsorted {
        line: u64,
        t_ms: u64,
        previous_t_ms: u64,
        previous_line: u64,
    },
    /// A HAR entry without `startedDateTime` or `response.status`.
    HarField {
        entry: u64,
        field: &'static str,
    },
    /// A HAR entry whose `startedDateTime` is not a date and time.
    BadTime {
        entry: u64,
        text: String,
    },
}

impl LogError {
    /// What `Display` writes, built without `core::fmt`.
    pub fn message(&self) -> String {
        let mut text = Text::new();
        let line = |text: &mut Text, line: u64| {
            text.push("line ").number(line).push(": ");
        };
        match self {
            LogError::Empty => {
                text.push("the input is empty; expected a CSV header line, ")
                    .push(EXPECTED_HEADER)
                    .push(", then one line per request");
            }
            LogError::MissingColumn {
                line: at,
                name,
                found,
            } => {
                line(&mut text, *at);
                text.push("the header has no ")
                    .push(name)
                    .push(" column; expected a header with t_ms and one of cost or status, as in ")
                    .push(EXPECTED_HEADER)
                    .push(", but found ")
                    .quoted(found);
            }
            LogError::RepeatedColumn { line: at, name } => {
                line(&mut text, *at);
                text.push("the header names the ")
                    .push(name)
                    .push(" column more than once; expected it once, as in ")
                    .push(EXPECTED_HEADER);
            }
            LogError::CostAndStatus { line: at } => {
                line(&mut text, *at);
                text.push(
                    "the header has both a cost and a status column; give one of them: \
                     cost for tokens per request, or status to charge ESI's cost for each status",
                );
            }
            LogError::MissingField {
                line: at,
                column,
                index,
                fields,
            } => {
                line(&mut text, *at);
                text.push("no ")
                    .push(column)
                    .push(" value; expected it in field ")
                    .number(*index as u64 + 1)
                    .push(", as the header says, but the line has ")
                    .number(*fields as u64)
                    .push(if *fields == 1 { " field" } else { " fields" });
            }
            LogError::BadNumber {
                line: at,
                column,
                text: value,
                unit,
            } => {
                line(&mut text, *at);
                text.push(column)
                    .push(" ")
                    .quoted(value)
                    .push(" is not a whole number of ")
                    .push(unit)
                    .push(" from 0 to ")
                    .number(u64::MAX);
            }
            LogError::BadStatus {
                line: at,
                text: value,
            } => {
                line(&mut text, *at);
                text.push("status ")
                    .quoted(value)
                    .push(" is not an HTTP status; expected a whole number from 200 to 599");
            }
            LogError::UnpricedStatus { place, status } => {
                place.write(&mut text);
                text.push(": ");
                match u16::try_from(*status) {
                    Ok(status) => text.push(&StatusError { status }.message()),
                    // Too large for StatusError to hold; said the same way.
                    Err(_) => text.push("status ").number(*status).push(
                        " has no cost in ESI's table; expected an HTTP status from 200 to 599",
                    ),
                };
            }
            LogError::Unsorted {
                line: at,
                t_ms,
                previous_t_ms,
                previous_line,
            } => {
                line(&mut text, *at);
                text.push("t_ms ")
                    .number(*t_ms)
                    .push(" is earlier than ")
                    .number(*previous_t_ms)
                    .push(" on line ")
                    .number(*previous_line)
                    .push("; the log must be sorted by time");
            }
            LogError::HarField { entry, field } => {
                text.push("entry ")
                    .number(*entry)
                    .push(": no ")
                    .push(field)
                    .push("; a HAR entry needs startedDateTime (a date and time) and response.status (a whole number)");
            }
            LogError::BadTime { entry, text: value } => {
                text.push("entry ")
                    .number(*entry)
                    .push(": startedDateTime ")
                    .quoted(value)
                    .push(" is not a date and time from 1970 on, as HAR writes it: 2026-12-04T16:55:28.123Z");
            }
        }
        text.build()
    }
}

error_from_message!(LogError);

#[cfg(test)]
mod tests {
    use super::{split_fields, time_ms, Columns, HarLog, LogError, Request, TextLog};

    #[test]
    fn fields_split_as_the_csv_crate_splits_them() {
        #[rustfmt::skip]
        let rows: [(&str, &[&str]); 9] = [
            ("0,1",                 &["0", "1"]),
            ("",                    &[""]),
            (",",                   &["", ""]),
            ("\"1,5\",2",            &["1,5", "2"]),
            ("\"say \"\"hi\"\"\",3",   &["say \"hi\"", "3"]),
            ("\"12\"3,4",            &["123", "4"]),
            ("a\"b,\"\"",            &["a\"b", ""]),
            (" \"1\",2",             &[" \"1\"", "2"]),
            ("\"open,1",            &["open,1"]),
        ];
        for (line, expected) in rows {
            assert_eq!(split_fields(line), expected, "{line:?}");
        }
    }

    #[test]
    fn times_are_ms_since_1970_in_utc() {
        #[rustfmt::skip]
        let rows = [
            ("1970-01-01T00:00:00Z",          Some(0)),
            ("1970-01-01T00:00:00.001Z",      Some(1)),
            ("1970-01-01T00:00:00.9999Z",     Some(999)),
            ("2000-02-29T12:00:00Z",          Some(951_825_600_000)),
            ("2026-12-04T16:55:28.123Z",      Some(1_796_403_328_123)),
            ("2026-12-04T17:55:28.123+01:00", Some(1_796_403_328_123)),
            ("2026-12-04T15:25:28.123-01:30", Some(1_796_403_328_123)),
            ("1969-12-31T23:59:59Z",          None),
            ("2001-02-29T00:00:00Z",          None),
            ("2026-12-04T16:55:28",           None),
            ("2026-12-04T16:55:28.Z",         None),
            ("2026-12-04T24:00:00Z",          None),
            ("2026-13-04T16:55:28Z",          None),
            ("2026-12-04T16:55:28+0100",      None),
            ("Fri, 04 Dec 2026 16:55:28 GMT", None),
            ("",                              None),
        ];
        for (text, expected) in rows {
            assert_eq!(time_ms(text), expected, "{text:?}");
        }
    }

    #[test]
    fn a_header_needs_t_ms_and_one_price() {
        assert_eq!(Columns::find(&["cost", "t_ms"], 1).map(|_| ()), Ok(()));
        assert_eq!(
            Columns::find(&["t_ms", "cost", "status"], 3),
            Err(LogError::CostAndStatus { line: 3 })
        );
        assert_eq!(
            Columns::find(&["t_ms", "t_ms", "cost"], 1).unwrap_err().to_string(),
            "line 1: the header names the t_ms column more than once; expected it once, as in t_ms,cost or t_ms,status"
        );
        assert_eq!(
            Columns::find(&[" when ", "cost"], 2).unwrap_err().to_string(),
            "line 2: the header has no t_ms column; expected a header with t_ms and one of cost or status, \
             as in t_ms,cost or t_ms,status, but found \"when,cost\""
        );
    }

    #[test]
    fn rows_are_checked_with_their_line() {
        let mut log = TextLog::new();
        assert_eq!(log.finish(), Err(LogError::Empty));
        for line in ["", "path,t_ms,cost\r", "/a,0,1", "/b, 10 ,2"] {
            log.line(line).unwrap();
        }
        assert_eq!(log.line("/c,10,0"), Ok(Some(Request { t_ms: 10, cost: 0 })));
        #[rustfmt::skip]
        let rows = [
            ("/d,9,1",  "line 6: t_ms 9 is earlier than 10 on line 5; the log must be sorted by time"),
            ("/e,+1,1", "line 7: t_ms \"+1\" is not a whole number of milliseconds from 0 to 18446744073709551615"),
            ("/f,11",   "line 8: no cost value; expected it in field 3, as the header says, but the line has 2 fields"),
            ("/g,12,x", "line 9: cost \"x\" is not a whole number of tokens from 0 to 18446744073709551615"),
        ];
        for (line, message) in rows {
            assert_eq!(log.line(line).unwrap_err().to_string(), message);
        }
        assert_eq!(log.finish(), Ok(()));
    }

    #[test]
    fn statuses_are_priced_by_esi() {
        let mut log = TextLog::new();
        log.line("t_ms,status").unwrap();
        assert_eq!(log.line("0,304"), Ok(Some(Request { t_ms: 0, cost: 1 })));
        assert_eq!(
            log.line("1,101").unwrap_err().to_string(),
            "line 3: status 101 has no cost in ESI's table; expected an HTTP status from 200 to 599"
        );
        assert_eq!(
            log.line("1,70000").unwrap_err().to_string(),
            "line 4: status 70000 has no cost in ESI's table; expected an HTTP status from 200 to 599"
        );
    }

    #[test]
    fn a_har_entry_names_what_it_lacks() {
        let mut har = HarLog::new();
        har.entry(Some("2026-12-04T10:00:00Z"), Some(200)).unwrap();
        assert_eq!(
            har.entry(None, Some(200)).unwrap_err().to_string(),
            "entry 2: no startedDateTime; a HAR entry needs startedDateTime (a date and time) and response.status (a whole number)"
        );
        assert_eq!(
            har.entry(Some("yesterday"), Some(200)).unwrap_err().to_string(),
            "entry 3: startedDateTime \"yesterday\" is not a date and time from 1970 on, as HAR writes it: 2026-12-04T16:55:28.123Z"
        );
        assert_eq!(
            har.entry(Some("2026-12-04T10:00:00Z"), Some(102)).unwrap_err().to_string(),
            "entry 4: status 102 has no cost in ESI's table; expected an HTTP status from 200 to 599"
        );
        assert_eq!(har.requests(), [Request { t_ms: 0, cost: 2 }]);
    }
}
