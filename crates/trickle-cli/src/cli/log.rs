//! The request log: CSV with a header naming `t_ms` and one of `cost` or `status`, or a
//! browser's HAR export (JSON), whose entries give each request's start and status.
//!
//! The rows' rules and messages are the core's ([`trickle_core::request_log`]), shared with
//! the docs widget; this module reads the bytes. CSV columns may come in any order and extra
//! ones (paths, user agents) are ignored. Every CSV request is checked as it is read, so a
//! bad line deep in a large log is reported after the rows before it have been replayed.
//! Line numbers are the file's own, 1-based, with the header on line 1, as an editor shows
//! them. A HAR is read whole (JSON has no rows to stream), then replayed in time order.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use csv::{ReaderBuilder, StringRecord};
use trickle_core::request_log::{Columns, HarLog, LogError, Sorted};

pub use trickle_core::request_log::Request;

use crate::cli::lines::LineCounter;

/// The header forms the messages suggest.
const EXPECTED_HEADER: &str = "t_ms,cost or t_ms,status";

/// Reads requests one at a time from a log, CSV or HAR: a HAR when its first byte that is
/// not white space is `{`, as a JSON object's is and no CSV header's can be.
pub enum RequestLog<R> {
    // Boxed: one per replay, and the HAR's variant is a few words.
    Csv(Box<CsvLog<R>>),
    Har(std::vec::IntoIter<Request>),
}

impl<R: Read> RequestLog<BufReader<R>> {
    pub fn new(input: R) -> Result<RequestLog<BufReader<R>>, InputError> {
        let mut input = BufReader::new(input);
        let har = loop {
            let buffer = input.fill_buf().map_err(|error| InputError::Read {
                line: None,
                message: format!("cannot read the input: {error}"),
            })?;
            match buffer.iter().position(|byte| !byte.is_ascii_whitespace()) {
                Some(at) => break buffer[at] == b'{',
                None if buffer.is_empty() => break false,
                None => {
                    let spaces = buffer.len();
                    // White space before a CSV header only shifts its line: keep counting.
                    if buffer.contains(&b'\n') || buffer.contains(&b'\r') {
                        break false;
                    }
                    input.consume(spaces);
                }
            }
        };
        if har {
            Ok(RequestLog::Har(read_har(input)?.into_iter()))
        } else {
            Ok(RequestLog::Csv(Box::new(CsvLog::new(input)?)))
        }
    }

    /// The next request, or `None` at the end of the log.
    pub fn next_request(&mut self) -> Result<Option<Request>, InputError> {
        match self {
            RequestLog::Csv(log) => log.next_request(),
            RequestLog::Har(requests) => Ok(requests.next()),
        }
    }
}

/// Reads a HAR whole: `log.entries[]`, each entry's `startedDateTime` and
/// `response.status`, sorted by the core's rules.
fn read_har(mut input: impl Read) -> Result<Vec<Request>, InputError> {
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .map_err(|error| InputError::Read {
            line: None,
            message: format!("cannot read the HAR: {error}; it must be UTF-8 JSON"),
        })?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| InputError::Read {
            line: Some(error.line() as u64),
            message: format!("the input starts with {{ but is not JSON, as a HAR is: {error}"),
        })?;
    let entries = json
        .get("log")
        .and_then(|log| log.get("entries"))
        .and_then(|entries| entries.as_array())
        .ok_or(InputError::NoEntries)?;
    let mut har = HarLog::new();
    for entry in entries {
        let started = entry
            .get("startedDateTime")
            .and_then(|started| started.as_str());
        let status = entry
            .get("response")
            .and_then(|response| response.get("status"))
            .and_then(|status| status.as_i64());
        har.entry(started, status)?;
    }
    Ok(har.requests())
}

/// Reads requests one at a time from a CSV log.
pub struct CsvLog<R> {
    reader: csv::Reader<LineCounter<R>>,
    columns: Columns,
    record: StringRecord,
    sorted: Sorted,
}

impl<R: Read> CsvLog<R> {
    /// Reads the header and finds the columns.
    pub fn new(input: R) -> Result<CsvLog<R>, InputError> {
        let mut reader = ReaderBuilder::new()
            .has_headers(false)
            // Rows are checked for the fields they need, with messages that name them.
            .flexible(true)
            // Names and values are trimmed where they are read: the csv crate's trimming
            // copies every record.
            .from_reader(LineCounter::new(input));
        let mut header = StringRecord::new();
        if !read_record(&mut reader, &mut header)? {
            return Err(LogError::Empty.into());
        }
        let line = line_of(&mut reader, &header);
        let columns = Columns::find(&header.iter().collect::<Vec<_>>(), line)?;
        Ok(CsvLog {
            reader,
            columns,
            record: StringRecord::new(),
            sorted: Sorted::new(),
        })
    }

    /// The next request, or `None` at the end of the log.
    pub fn next_request(&mut self) -> Result<Option<Request>, InputError> {
        if !read_record(&mut self.reader, &mut self.record)? {
            return Ok(None);
        }
        let line = line_of(&mut self.reader, &self.record);
        let record = &self.record;
        let request = self
            .columns
            .request(|index| record.get(index), record.len(), line)?;
        self.sorted.check(request.t_ms, line)?;
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

/// A log that cannot be replayed. Exit code 1.
#[derive(Debug)]
pub enum InputError {
    /// The input file could not be opened.
    Open { path: PathBuf, error: io::Error },
    /// Reading failed, or a line is not valid UTF-8.
    Read { line: Option<u64>, message: String },
    /// A HAR without the list `log.entries`.
    NoEntries,
    /// A row or entry the core's rules refuse, with the core's message.
    Log(LogError),
}

impl From<LogError> for InputError {
    fn from(error: LogError) -> InputError {
        InputError::Log(error)
    }
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
            InputError::NoEntries => write!(
                f,
                "the input is JSON but not a HAR: it has no log.entries list; export the requests \
                 from the browser's network panel as HAR, or give a CSV log, {EXPECTED_HEADER}"
            ),
            InputError::Log(error) => write!(f, "{error}"),
        }
    }
}
