//! Line numbers as an editor shows them, for error messages.
//!
//! The csv crate's own record positions are off in two common cases: a record after
//! blank lines is placed on the first blank line (the parser skips them inside the
//! record), and with CRLF endings every record after the first is placed one line early
//! (the `\n` of a `\r\n` is consumed with the next record). So [`LineCounter`] sits
//! between the input and the parser and notes where the runs of line-break bytes are;
//! a record's line is then the line of its first byte that is not a line break, which is
//! where the parser starts a record. It keeps only the runs the parser has read ahead,
//! a buffer's worth at most.

use std::collections::VecDeque;
use std::io::{self, Read};

/// Passes bytes through unchanged, counting lines: `\n`, `\r\n` and a lone `\r` each end
/// one, as they do for the csv parser.
pub struct LineCounter<R> {
    inner: R,
    /// Bytes passed through so far.
    offset: u64,
    /// The line the byte at `offset` will be on.
    line: u64,
    /// Whether the last byte was `\r`, so that a `\n` after it ends no second line.
    after_cr: bool,
    /// Runs of `\r` and `\n` bytes not yet behind the parser, oldest first.
    breaks: VecDeque<Breaks>,
    /// The line of every byte before the first run in `breaks` that has not been dropped.
    line_before_breaks: u64,
}

/// A run of consecutive line-break bytes at `start..end`; the byte at `end` is on
/// `line_after`.
#[derive(Debug, Clone, Copy)]
struct Breaks {
    start: u64,
    end: u64,
    line_after: u64,
}

impl<R: Read> LineCounter<R> {
    pub fn new(inner: R) -> LineCounter<R> {
        LineCounter {
            inner,
            offset: 0,
            line: 1,
            after_cr: false,
            breaks: VecDeque::new(),
            line_before_breaks: 1,
        }
    }

    /// The line of a record the parser began reading at byte `start`. Records must be
    /// asked about in order: what lies before `start` is forgotten.
    pub fn record_line(&mut self, start: u64) -> u64 {
        while let Some(breaks) = self.breaks.front().filter(|breaks| breaks.end <= start) {
            self.line_before_breaks = breaks.line_after;
            self.breaks.pop_front();
        }
        match self.breaks.front() {
            // The parser skips line breaks before a record: it begins after the run.
            Some(breaks) if breaks.start <= start => breaks.line_after,
            _ => self.line_before_breaks,
        }
    }

    fn count(&mut self, byte: u8) {
        if byte == b'\r' || byte == b'\n' {
            if byte == b'\r' || !self.after_cr {
                self.line += 1;
            }
            match self.breaks.back_mut() {
                Some(breaks) if breaks.end == self.offset => {
                    breaks.end += 1;
                    breaks.line_after = self.line;
                }
                _ => self.breaks.push_back(Breaks {
                    start: self.offset,
                    end: self.offset + 1,
                    line_after: self.line,
                }),
            }
        }
        self.after_cr = byte == b'\r';
        self.offset += 1;
    }
}

impl<R: Read> Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        for &byte in &buf[..read] {
            self.count(byte);
        }
        Ok(read)
    }
}
