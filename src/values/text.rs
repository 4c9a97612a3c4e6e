//! A tiny text builder for messages and limits, free of `core::fmt`.
//!
//! Every error message and every limit the crate writes is built here, once, and each
//! `Display` only hands the result to the formatter. The WebAssembly build asks for the
//! same text through `message()` and `text()`, so it carries no formatting machinery: Rust's
//! `{:?}` escaping alone links in the Unicode printability tables, several kilobytes the
//! docs widget would download for error messages. The methods are never inlined: a message
//! is built once in a while, and each inlined `push` would copy the growth logic of a
//! `String` into every call site of every message.

use alloc::string::String;

/// `Display` and `Error` for error types whose `message()` builds their text: `Display`
/// hands the message to the formatter, so there is one home for each message.
macro_rules! error_from_message {
    ($($error:ty),+ $(,)?) => {$(
        impl core::fmt::Display for $error {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(&self.message())
            }
        }

        impl core::error::Error for $error {}
    )+};
}
pub(crate) use error_from_message;

/// A message being built: plain text, whole numbers in decimal, and quoted strings.
#[derive(Default)]
pub(crate) struct Text(String);

impl Text {
    pub(crate) fn new() -> Text {
        Text(String::new())
    }

    /// Appends `text` as it is.
    #[inline(never)]
    pub(crate) fn push(&mut self, text: &str) -> &mut Text {
        self.0.push_str(text);
        self
    }

    /// Appends `number` in decimal.
    #[inline(never)]
    pub(crate) fn number(&mut self, number: u64) -> &mut Text {
        // The largest power of ten not above `number` (10^19 for u64::MAX, which fits), then
        // one digit per power: no buffer to index, so no bounds check and no panic path.
        let mut power = 1;
        while number / power >= 10 {
            power *= 10;
        }
        while power > 0 {
            self.0.push(char::from(b'0' + (number / power % 10) as u8));
            power /= 10;
        }
        self
    }

    /// Appends `text` in double quotes, as Rust's `{:?}` writes a string for the characters
    /// a message can meet: `"` and `\` escaped, `\0`, `\t`, `\r`, `\n` by name, and other
    /// control characters and the invisible ones (zero-width and directional marks, the
    /// soft hyphen, the byte-order mark, line and paragraph separators) as `\u{…}`, so a
    /// message stays one line and shows what was really typed. Everything else is kept,
    /// markup and non-ASCII letters included: a message is text, never markup.
    #[inline(never)]
    pub(crate) fn quoted(&mut self, text: &str) -> &mut Text {
        self.0.push('"');
        for c in text.chars() {
            match c {
                '"' => self.0.push_str("\\\""),
                '\\' => self.0.push_str("\\\\"),
                '\0' => self.0.push_str("\\0"),
                '\t' => self.0.push_str("\\t"),
                '\r' => self.0.push_str("\\r"),
                '\n' => self.0.push_str("\\n"),
                c if is_invisible(c) => {
                    self.0.push_str("\\u{");
                    let code = u32::from(c);
                    let mut shift = 28;
                    // Lowercase hex without leading zeros, as Rust writes it.
                    while shift > 0 && (code >> shift) & 0xf == 0 {
                        shift -= 4;
                    }
                    loop {
                        let digit = (code >> shift) & 0xf;
                        self.0.push(char::from(b"0123456789abcdef"[digit as usize]));
                        if shift == 0 {
                            break;
                        }
                        shift -= 4;
                    }
                    self.0.push('}');
                }
                c => self.0.push(c),
            }
        }
        self.0.push('"');
        self
    }

    /// The text built so far.
    pub(crate) fn build(&mut self) -> String {
        core::mem::take(&mut self.0)
    }
}

/// A non-empty run of ASCII digits that fits a `u64`: no sign, no spaces, leading zeros
/// allowed. By hand rather than `u64::from_str`, which would also take a leading `+` and
/// brings its own general-purpose parser into the WebAssembly build.
pub(crate) fn parse_digits(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    text.bytes().try_fold(0u64, |value, byte| {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// `text` split around the first `separator`, an ASCII character, which neither part keeps:
/// what `str::split_once` does, without its general pattern search.
pub(crate) fn split_once(text: &str, separator: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|byte| byte == separator)?;
    let (before, rest) = text.split_at_checked(at)?;
    Some((before, rest.get(1..)?))
}

/// Control characters, and the characters that show nothing but change how text reads.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

#[cfg(test)]
mod tests {
    use super::{parse_digits, split_once, Text};

    #[test]
    fn splitting_agrees_with_split_once() {
        for text in [
            "6/8s", "/8s", "6/", "/", "6", "", "6//8s", "６/８s", "秒/秒",
        ] {
            assert_eq!(split_once(text, b'/'), text.split_once('/'), "{text:?}");
        }
    }

    #[test]
    fn digits_parse_as_u64_does_without_a_sign() {
        for text in [
            "0",
            "007",
            "18446744073709551615",
            "18446744073709551616",
            "",
            "+1",
            "-1",
            "1 ",
            "１",
            "1e3",
        ] {
            let expected = match text.starts_with('+') {
                true => None,
                false => text.parse::<u64>().ok(),
            };
            assert_eq!(parse_digits(text), expected, "{text:?}");
        }
    }

    #[test]
    fn numbers_are_decimal() {
        for number in [0, 7, 10, 1_000, u64::MAX] {
            assert_eq!(Text::new().number(number).build(), number.to_string());
        }
    }

    /// Wherever the builder escapes, it agrees with Rust's `{:?}`.
    #[test]
    fn quoting_agrees_with_debug() {
        for text in [
            "",
            "6/8s",
            "a\"b\\c",
            "\0\t\r\n\u{1}\u{1b}\u{7f}\u{85}",
            "\u{ad}\u{200b}\u{200e}\u{2028}\u{202e}\u{2066}\u{feff}\u{e0041}",
            "flöating ６ 秒 <img src=x onerror=alert(1)>",
        ] {
            assert_eq!(Text::new().quoted(text).build(), format!("{text:?}"));
        }
    }
}
