//! The judge's JSON decoder: a frame read into a value that borrows its strings.
//!
//! The judge reads every event and keeps none, so a value that owns its text (serde_json's own
//! `Value`: a `String` per string, a map per object) costs more than everything else the judge
//! does. This one borrows each string that needs no unescaping from the frame and keeps an
//! object's members in order in a `Vec`.
//!
//! It is read by a recursive descent of its own, not through serde: serde_json's reading into
//! this value cost 2,720 instructions an event of the benchmark's workload, the largest single
//! cost of deliver mode, and this reading costs less than half of that (docs/performance.md).
//! The fuzz target `decode` holds it to serde_json: it reads exactly the texts serde_json reads,
//! less the refusals below, and reads them to the same values.
//!
//! It reads exactly what orjson reads as parse decodes, or refuses (and the judge leaves the
//! frame to the reference): RFC 8259 JSON, UTF-8, no lone surrogate (serde_json's rules, the
//! same as orjson's), at most serde_json's 127 levels of nesting — and it refuses what the two
//! would read differently: a number serde_json reads as a float that orjson reads as an
//! integer or warns of (`-0`, an integer past 64 bits: serde_json reads both as a float, so
//! every float of magnitude 2⁶³ or more is refused, and `-0.0` with `-0`), and a member named
//! twice in one object (orjson keeps the last value at the first place).

use std::borrow::Cow;
use std::collections::HashSet;

use crate::checks::{Json, Kind, same_text};

/// A decoded JSON value; its strings borrow from the frame where they can.
#[derive(Debug, PartialEq)]
pub enum Decoded<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer past `i64::MAX` (orjson reads up to `u64::MAX` exactly).
    Unsigned(u64),
    Float(f64),
    Str(Cow<'a, str>),
    List(Vec<Decoded<'a>>),
    Object(Vec<(Cow<'a, str>, Decoded<'a>)>),
}

/// The members of an object, in order.
pub type Members<'a> = [(Cow<'a, str>, Decoded<'a>)];

impl<'a> Decoded<'a> {
    /// The JSON text `frame`, or `None` where the judge must leave it to the reference.
    ///
    /// The frame is checked to be UTF-8 once, whole (the standard library's check, which
    /// reads ASCII a word at a time), so no string is checked again one by one. Outside its
    /// strings JSON is ASCII, so every string is cut at a character's boundary.
    pub fn read(frame: &'a [u8]) -> Option<Decoded<'a>> {
        let mut reader = Reader::new(std::str::from_utf8(frame).ok()?);
        let value = reader.value()?;
        reader.skip_space();
        (reader.at == reader.bytes.len()).then_some(value)
    }

    pub fn get(&self, key: &str) -> Option<&Decoded<'a>> {
        match self {
            Decoded::Object(members) => member(members, key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Decoded::Str(text) => Some(text),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Members<'a>> {
        match self {
            Decoded::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Decoded::Null)
    }

    /// An integer count, as lint reads one (`type(count) is int`).
    pub fn count(&self) -> Option<i128> {
        match self {
            Decoded::Int(number) => Some(i128::from(*number)),
            Decoded::Unsigned(number) => Some(i128::from(*number)),
            _ => None,
        }
    }

    /// An upper bound of the bytes orjson writes for this value (the Conversation measures a
    /// tool result's content parts so): exact but for a float, which orjson writes in at most
    /// 24 bytes.
    pub fn written_bound(&self) -> usize {
        match self {
            Decoded::Null | Decoded::Bool(true) => 4,
            Decoded::Bool(false) => 5,
            Decoded::Int(number) => number.to_string().len(),
            Decoded::Unsigned(number) => number.to_string().len(),
            Decoded::Float(_) => 24,
            Decoded::Str(text) => written_str(text),
            Decoded::List(items) => {
                2 + items.len().saturating_sub(1)
                    + items.iter().map(Decoded::written_bound).sum::<usize>()
            }
            Decoded::Object(members) => {
                2 + members.len().saturating_sub(1)
                    + members
                        .iter()
                        .map(|(name, value)| written_str(name) + 1 + value.written_bound())
                        .sum::<usize>()
            }
        }
    }
}

/// The bytes of a string as orjson writes it: quoted, `"` and `\` and the control characters
/// escaped (two bytes for the five with a short escape, six for the others), the rest as is.
fn written_str(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | 0x08 | b'\t' | b'\n' | 0x0c | b'\r' => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// The member `key` of an object's members.
pub fn member<'m, 'a>(members: &'m Members<'a>, key: &str) -> Option<&'m Decoded<'a>> {
    members
        .iter()
        .find(|(name, _)| same_text(name, key))
        .map(|(_, value)| value)
}

impl Json for Decoded<'_> {
    fn kind(&self) -> Kind {
        match self {
            Decoded::Null => Kind::Null,
            Decoded::Bool(_) => Kind::Bool,
            Decoded::Int(_) | Decoded::Unsigned(_) => Kind::Int,
            Decoded::Float(_) => Kind::Float,
            Decoded::Str(_) => Kind::Str,
            Decoded::List(_) => Kind::List,
            Decoded::Object(_) => Kind::Dict,
        }
    }

    fn text(&self) -> Option<&str> {
        self.as_str()
    }

    fn integer(&self) -> Option<i64> {
        match self {
            Decoded::Int(number) => Some(*number),
            Decoded::Unsigned(number) => i64::try_from(*number).ok(),
            _ => None,
        }
    }

    fn elements(&self, min_items: usize, check: impl FnMut(&Self) -> bool) -> Option<bool> {
        let Decoded::List(items) = self else {
            return None;
        };
        Some(items.len() >= min_items && items.iter().all(check))
    }

    fn members(&self, mut visit: impl FnMut(Option<&str>, &Self) -> bool) -> Option<bool> {
        let members = self.as_object()?;
        Some(members.iter().all(|(name, value)| visit(Some(name), value)))
    }

    fn member_text<R>(&self, key: &str, read: impl FnOnce(&str) -> R) -> Option<R> {
        self.get(key)?.as_str().map(read)
    }
}

/// serde_json's nesting limit: it refuses a text with more arrays and objects open at once.
const MAX_NESTING: usize = 127;

/// The members the event's own object has room for from the start: an event of the schema has
/// at most seven, so its `Vec` is allocated once (growing it from empty cost ~300 instructions an
/// event). Only the outermost object, one a frame: a nested `{}` allocates nothing, so a frame
/// of many small objects takes no more memory than serde's reading took.
const EVENT_CAPACITY: usize = 8;

/// Floats at or past this magnitude may be integers orjson reads exactly or warns of.
const LARGEST_EXACT: f64 = 9_223_372_036_854_775_808.0;

/// A recursive descent over one frame's text. Every method answers `None` where the text is
/// not JSON or is one of the decoder's refusals; the caller then refuses the whole frame.
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Self {
        Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The next byte, consumed.
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn value(&mut self) -> Option<Decoded<'a>> {
        self.skip_space();
        match self.peek()? {
            b'{' => self.object(),
            b'[' => self.list(),
            b'"' => {
                self.at += 1;
                self.string().map(Decoded::Str)
            }
            b't' => self.literal(b"true", Decoded::Bool(true)),
            b'f' => self.literal(b"false", Decoded::Bool(false)),
            b'n' => self.literal(b"null", Decoded::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], value: Decoded<'a>) -> Option<Decoded<'a>> {
        self.bytes[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    /// Past an opening bracket, one level deeper.
    fn enter(&mut self) -> Option<()> {
        self.at += 1;
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
    }

    fn object(&mut self) -> Option<Decoded<'a>> {
        self.enter()?;
        let mut members = Vec::with_capacity(if self.depth == 1 { EVENT_CAPACITY } else { 0 });
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.skip_space();
                if self.next()? != b'"' {
                    return None;
                }
                let name = self.string()?;
                self.skip_space();
                if self.next()? != b':' {
                    return None;
                }
                let value = self.value()?;
                members.push((name, value));
                self.skip_space();
                match self.next()? {
                    b',' => {}
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        (!named_twice(&members)).then_some(Decoded::Object(members))
    }

    fn list(&mut self) -> Option<Decoded<'a>> {
        self.enter()?;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
        } else {
            loop {
                let item = self.value()?;
                items.push(item);
                self.skip_space();
                match self.next()? {
                    b',' => {}
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(Decoded::List(items))
    }

    /// A string's contents, from just past its opening quote: borrowed from the frame unless
    /// it has an escape. A control character, an unknown escape or a lone surrogate refuses it.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.at;
        self.at += plain_run(&self.bytes[self.at..]);
        match self.next()? {
            b'"' => Some(Cow::Borrowed(&self.text[start..self.at - 1])),
            b'\\' => self.escaped(start),
            _ => None,
        }
    }

    /// The rest of a string whose first escape's backslash was just read.
    fn escaped(&mut self, start: usize) -> Option<Cow<'a, str>> {
        let mut owned = String::from(&self.text[start..self.at - 1]);
        loop {
            owned.push(self.escape()?);
            let run = self.at;
            self.at += plain_run(&self.bytes[self.at..]);
            owned.push_str(&self.text[run..self.at]);
            match self.next()? {
                b'"' => return Some(Cow::Owned(owned)),
                b'\\' => {}
                _ => return None,
            }
        }
    }

    /// The character an escape stands for, from just past its backslash.
    fn escape(&mut self) -> Option<char> {
        Some(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                if (0xD800..0xDC00).contains(&unit) {
                    if !self.bytes[self.at..].starts_with(b"\\u") {
                        return None;
                    }
                    self.at += 2;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                } else {
                    char::from_u32(unit)? // a lone low surrogate is no char
                }
            }
            _ => return None,
        })
    }

    /// Four hexadecimal digits, as a UTF-16 code unit.
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        self.at += 4;
        digits.iter().try_fold(0, |unit, &digit| {
            Some(unit * 16 + char::from(digit).to_digit(16)?)
        })
    }

    /// One or more decimal digits, and their value while it fits 64 bits.
    fn digits(&mut self) -> Option<Option<u64>> {
        let start = self.at;
        let mut value = Some(0u64);
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            value = value
                .and_then(|value| value.checked_mul(10))
                .and_then(|value| value.checked_add(u64::from(digit - b'0')));
            self.at += 1;
        }
        (self.at > start).then_some(value)
    }

    /// A number, as serde_json reads it less the refusals: an integer without fraction or
    /// exponent that fits 64 bits is an integer; any other is a float, correctly rounded (the
    /// standard library's parse); `-0` reads as the float -0.0, which is refused.
    fn number(&mut self) -> Option<Decoded<'a>> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let integral = match self.peek()? {
            b'0' => {
                self.at += 1;
                Some(0)
            }
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        };
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
            float = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.digits()?;
            float = true;
        }
        if !float {
            // Past 64 bits serde_json reads a float of magnitude 2^63 or more: refused.
            let magnitude = integral?;
            return match (negative, magnitude) {
                (true, 0) => None,
                (true, _) => i64::try_from(-i128::from(magnitude)).ok().map(Decoded::Int),
                (false, _) => Some(
                    i64::try_from(magnitude).map_or(Decoded::Unsigned(magnitude), Decoded::Int),
                ),
            };
        }
        let number: f64 = self.text[start..self.at].parse().ok()?;
        let refused = !number.is_finite()
            || number.abs() >= LARGEST_EXACT
            || (number == 0.0 && number.is_sign_negative());
        (!refused).then_some(Decoded::Float(number))
    }
}

/// How many bytes open `bytes` before a quote, a backslash or a control character: eight
/// at a time while eight remain, by the classic test for a zero byte in a word. Bytes past the
/// string's end are read but never counted: the first byte found is the answer.
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let found = ((word.wrapping_sub(ONES * 0x20) & !word)
            | (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash))
            & HIGH;
        if found != 0 {
            return at + found.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    at + bytes[at..]
        .iter()
        .take_while(|&&byte| byte != b'"' && byte != b'\\' && byte >= 0x20)
        .count()
}

/// Whether two members share a name (pairwise for a small object, by a set for a large one, so
/// a hostile object of many members costs linear time).
fn named_twice(members: &Members<'_>) -> bool {
    if members.len() <= 8 {
        return members.iter().enumerate().any(|(at, (name, _))| {
            members[..at]
                .iter()
                .any(|(earlier, _)| same_text(earlier, name))
        });
    }
    let mut names = HashSet::with_capacity(members.len());
    !members.iter().all(|(name, _)| names.insert(name.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::Decoded;
    use std::borrow::Cow;

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let frame = br#"{"a":"plain","b":"esc\"aped"}"#;
        let decoded = Decoded::read(frame).unwrap();
        assert!(matches!(
            decoded.get("a"),
            Some(Decoded::Str(Cow::Borrowed("plain")))
        ));
        assert!(matches!(
            decoded.get("b"),
            Some(Decoded::Str(Cow::Owned(_)))
        ));
    }

    #[test]
    fn what_orjson_reads_otherwise_is_refused() {
        for refused in [
            &b"-0"[..],
            b"[-0.0]",
            b"123456789012345678901",
            b"18446744073709551616",
            b"-9223372036854775809",
            b"1e19",
            b"{\"a\":1,\"a\":2}",
            b"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"a\":9}",
            b"\"\\ud800\"",
            b"[1,]",
            b"1e400",
        ] {
            assert_eq!(Decoded::read(refused), None, "{refused:?}");
        }
        assert_eq!(
            Decoded::read(b"18446744073709551615"),
            Some(Decoded::Unsigned(u64::MAX))
        );
        assert_eq!(
            Decoded::read(b"-9223372036854775808"),
            Some(Decoded::Int(i64::MIN))
        );
        assert_eq!(Decoded::read(b"-0.5"), Some(Decoded::Float(-0.5)));
    }

    #[test]
    fn it_nests_as_deep_as_serde_json_and_no_deeper() {
        for depth in 120..135 {
            for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
                let text = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                let theirs = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                assert_eq!(
                    Decoded::read(text.as_bytes()).is_some(),
                    theirs,
                    "{depth} {open}"
                );
            }
        }
    }

    #[test]
    fn it_reads_strings_and_numbers_as_serde_json_does() {
        for text in [
            r#""a\u00e9\ud83d\ude00\n\/\b\f\r\t\"\\z""#,
            r#""\u0041BCDEFGHIJ\"""#,
            r#""long enough to be read eight bytes at a time, é and 東京 too""#,
            r#"" \t ""#,
            r#""\ud83d""#,
            r#""\udc00""#,
            r#""\ud83d\u0041""#,
            r#""\u12g4""#,
            r#""\x""#,
            "\"tab\there\"",
            "\"unterminated",
            " [ 1 , 2.5 , -3e2 , 1E+2 , 0.1e-2 , true , false , null ] ",
            r#"{"a" : {"b" : [ ] , "c" : { } } }"#,
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "-",
            "--1",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{1:2}",
            "tru",
            "nulll",
            "[1]]",
            "",
            "  ",
            "9223372036854775807",
            "-9223372036854775807",
            "1e-400",
            "123.456e-7",
            "2.2250738585072011e-308",
        ] {
            let theirs = serde_json::from_str::<serde_json::Value>(text).ok();
            let mine = Decoded::read(text.as_bytes()).map(|mine| as_value(&mine));
            assert_eq!(mine, theirs, "{text}");
        }
    }

    /// A decoded value as serde_json's `Value`, to compare the two.
    fn as_value(decoded: &Decoded<'_>) -> serde_json::Value {
        match decoded {
            Decoded::Null => serde_json::Value::Null,
            Decoded::Bool(flag) => (*flag).into(),
            Decoded::Int(number) => (*number).into(),
            Decoded::Unsigned(number) => (*number).into(),
            Decoded::Float(number) => (*number).into(),
            Decoded::Str(text) => text.as_ref().into(),
            Decoded::List(items) => items.iter().map(as_value).collect(),
            Decoded::Object(members) => members
                .iter()
                .map(|(name, item)| (name.to_string(), as_value(item)))
                .collect(),
        }
    }

    #[test]
    fn the_written_length_is_orjsons() {
        let frame = br#"{"a":[1,true,null,"x\"\u0001\n"],"b":{}}"#;
        // orjson.dumps(orjson.loads(frame)): {"a":[1,true,null,"x\"\u0001\n"],"b":{}}
        assert_eq!(Decoded::read(frame).unwrap().written_bound(), frame.len());
    }
}
