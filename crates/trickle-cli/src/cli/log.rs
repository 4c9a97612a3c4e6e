//! The request log: CSV with a header naming `t_ms` and one of `cost` or `status`.
//!
//! Columns may come in any order and extra ones (paths, user agents) are ignored. Every
//! request is checked as it is read, so a bad line deep in a large log is reported after
//! the rows before it have been replayed. Line numbers are the file's own, 1-based, with
//! the header on line 1, as an editor shows them.

use std::fmt;
use std::io::{self, Read};
use std::path::PathBuf;

use csv::{ReaderBuilder, StringRecord};
use trickle_core::esi::cost_for_status;
use trickle_core::StatusError;

use crate::cli::lines::LineCounter;

/// The header forms the error messages suggest.
const EXPECTED_HEADER: &str = "t_ms,cost or t_ms,status";

/// One request of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub t_ms: u64,
    /// Its cost in tokens: given, or ESI's price for its status.
    pub cost: u64,
}

/// Where each needed column sits in a row.
#[derive(Debug, Clone, Copy)]
struct Columns {
    t_ms: usize,
    price: Price,
}

/// How a row says what its request costs.
#[derive(Debug, Clone, Copy)]
enum Price {
    /// The `cost` column, in tokens.
    Cost(usize),
    /// The `status` column, priced by ESI's table.
    Status(usize),
}

/// Reads requests one at a time from a CSV log.
pub struct RequestLog<R> {
    reader: csv::Reader<LineCounter<R>>,
    columns: Columns,
    record: StringRecord,
    /// The time and line of the request before, to insist the log is sorted.
    previous: Option<(u64, u64)>,
}

impl<R: Read> RequestLog<R> {
    /// Reads the header and finds the columns.
    pub fn new(input: R) -> Result<RequestLog<R>, InputError> {
        let mut reader = ReaderBuilder::new()
            .has_headers(false)
            // Rows are checked for the fields they need, with messages that name them.
            .flexible(true)
            // Names and values are trimmed where they are read: the csv crate's trimming
            // copies every record.
            .from_reader(LineCounter::new(input));
        let mut header = StringRecord::new();
        if !read_record(&mut reader, &mut header)? {
            return Err(InputError::Empty);
        }
        let line = line_of(&mut reader, &header);
        let columns = Columns::find(&header, line)?;
        Ok(RequestLog {
            reader,
            columns,
            record: StringRecord::new(),
            previous: None,
        })
    }

    /// The next request, or `None` at the end of the log.
    pub fn next_request(&mut self) -> Result<Option<Request>, InputError> {
        if !read_record(&mut self.reader, &mut self.record)? {
            return Ok(None);
        }
        let line = line_of(&mut self.reader, &self.record);
        let request = self.columns.request(&self.record, line)?;
        if let Some((previous_t_ms, previous_line)) = self.previous {
            if request.t_ms < previous_t_ms {
                return Err(InputError::Unsorted {
                    line,
                    t_ms: request.t_ms,
                    previous_t_ms,
                    previous_line,
                });
            }
        }
        self.previous = Some((request.t_ms, line));
        Ok(Some(request))
    }
}

/// Reads the next record that is not blank; false at the end of the input.
fn read_record<R: Read>(
    reader: &mut csv::Reader<LineCounter<R>>,
    record: &mut StringRecord,
) -> Result<bool, InputError> {
    loop {
        let more = reader.read_record(record).map_err(|error| {
            let line = error
                .position()
                .map(|position| reader.get_mut().record_line(position.byte()));
            InputError::from_csv(&error, line)
        })?;
        // The csv crate skips empty lines itself; a line of spaces is as blank.
        let blank = record.len() == 1 && record[0].trim().is_empty();
        if !more || !blank {
            return Ok(more);
        }
    }
}

/// The line `record` starts on.
fn line_of<R: Read>(reader: &mut csv::Reader<LineCounter<R>>, record: &StringRecord) -> u64 {
    let start = record.position().map_or(0, |position| position.byte());
    reader.get_mut().record_line(start)
}

impl Columns {
    fn find(header: &StringRecord, line: u64) -> Result<Columns, InputError> {
        let column = |name: &'static str| -> Result<Option<usize>, InputError> {
            let mut found = header
                .iter()
                .enumerate()
                .filter(|(_, field)| field.trim() == name);
            match (found.next(), found.next()) {
                (Some((index, _)), None) => Ok(Some(index)),
                (None, _) => Ok(None),
                (Some(_), Some(_)) => Err(InputError::RepeatedColumn { line, name }),
            }
        };
        let found = || header.iter().map(str::trim).collect::<Vec<_>>().join(",");

        let t_ms = column("t_ms")?.ok_or_else(|| InputError::MissingColumn {
            line,
            name: "t_ms",
            found: found(),
        })?;
        let price = match (column("cost")?, column("status")?) {
            (Some(cost), None) => Price::Cost(cost),
            (None, Some(status)) => Price::Status(status),
            (Some(_), Some(_)) => return Err(InputError::CostAndStatus { line }),
            (None, None) => {
                return Err(InputError::MissingColumn {
                    line,
                    name: "cost or status",
                    found: found(),
                })
            }
        };
        Ok(Columns { t_ms, price })
    }

    fn request(&self, record: &StringRecord, line: u64) -> Result<Request, InputError> {
        let field = |column: &'static str, index: usize| {
            record
                .get(index)
                .map(str::trim)
                .ok_or(InputError::MissingField {
                    line,
                    column,
                    index,
                    fields: record.len(),
                })
        };

        let t_ms_text = field("t_ms", self.t_ms)?;
        let t_ms = parse_whole(t_ms_text).ok_or_else(|| InputError::BadNumber {
            line,
            column: "t_ms",
            text: t_ms_text.to_string(),
            unit: "milliseconds",
        })?;
        let cost = match self.price {
            Price::Cost(index) => {
                let text = field("cost", index)?;
                parse_whole(text).ok_or_else(|| InputError::BadNumber {
                    line,
                    column: "cost",
                    text: text.to_string(),
                    unit: "tokens",
                })?
            }
            Price::Status(index) => {
                let text = field("status", index)?;
                let status = parse_whole(text).ok_or_else(|| InputError::BadStatus {
                    line,
                    text: text.to_string(),
                })?;
                u16::try_from(status)
                    .ok()
                    .and_then(|status| cost_for_status(status).ok())
                    .ok_or(InputError::UnpricedStatus { line, status })?
            }
        };
        Ok(Request { t_ms, cost })
    }
}

/// A whole number from 0 to `u64::MAX`, in plain digits. `u64::from_str` alone would also
/// take a leading `+`.
fn parse_whole(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A log that cannot be replayed. Exit code 1.
#[derive(Debug)]
pub enum InputError {
    /// The input file could not be opened.
    Open {
        path: PathBuf,
        error: io::Error,
    },
    /// Reading failed, or a line is not valid UTF-8.
    Read {
        line: Option<u64>,
        message: String,
    },
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
        line: u64,
        status: u64,
    },
    Unsorted {
        line: u64,
        t_ms: u64,
        previous_t_ms: u64,
        previous_line: u64,
    },
}

impl InputError {
    fn from_csv(error: &csv::Error, line: Option<u64>) -> InputError {
        let message = match error.kind() {
            csv::ErrorKind::Utf8 { err, .. } => {
                format!(
                    "field {} is not valid UTF-8; the log must be UTF-8 text",
                    err.field() + 1
                )
            }
            csv::ErrorKind::Io(io) => format!("cannot read the input: {io}"),
            _ => format!("cannot read the input: {error}"),
        };
        InputError::Read { line, message }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Open { path, error } => write!(f, "cannot open {path:?}: {error}"),
            InputError::Read {
                line: Some(line),
                message,
            } => write!(f, "line {line}: {message}"),
            InputError::Read {
                line: None,
                message,
            } => write!(f, "{message}"),
            InputError::Empty => write!(
                f,
                "the input is empty; expected a CSV header line, {EXPECTED_HEADER}, then one line per request"
            ),
            InputError::MissingColumn { line, name, found } => write!(
                f,
                "line {line}: the header has no {name} column; expected a header with t_ms and \
                 one of cost or status, as in {EXPECTED_HEADER}, but found {found:?}"
            ),
            InputError::RepeatedColumn { line, name } => write!(
                f,
                "line {line}: the header names the {name} column more than once; expected it once, \
                 as in {EXPECTED_HEADER}"
            ),
            InputError::CostAndStatus { line } => write!(
                f,
                "line {line}: the header has both a cost and a status column; give one of them: \
                 cost for tokens per request, or status to charge ESI's cost for each status"
            ),
            InputError::MissingField {
                line,
                column,
                index,
                fields,
            } => write!(
                f,
                "line {line}: no {column} value; expected it in field {}, as the header says, \
                 but the line has {fields} field{}",
                index + 1,
                if *fields == 1 { "" } else { "s" }
            ),
            InputError::BadNumber {
                line,
                column,
                text,
                unit,
            } => write!(
                f,
                "line {line}: {column} {text:?} is not a whole number of {unit} from 0 to {}",
                u64::MAX
            ),
            InputError::BadStatus { line, text } => write!(
                f,
                "line {line}: status {text:?} is not an HTTP status; expected a whole number from 200 to 599"
            ),
            InputError::UnpricedStatus { line, status } => match u16::try_from(*status) {
                Ok(status) => write!(f, "line {line}: {}", StatusError { status }),
                // Too large for StatusError to hold; said the same way.
                Err(_) => write!(
                    f,
                    "line {line}: status {status} has no cost in ESI's table; \
                     expected an HTTP status from 200 to 599"
                ),
            },
            InputError::Unsorted {
                line,
                t_ms,
                previous_t_ms,
                previous_line,
            } => write!(
                f,
                "line {line}: t_ms {t_ms} is earlier than {previous_t_ms} on line {previous_line}; \
                 the log must be sorted by time"
            ),
        }
    }
}
