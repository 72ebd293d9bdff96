//! The judge's JSON decoder: serde_json reading a frame into a value that borrows its strings.
//!
//! The judge reads every event and keeps none, so a value that owns its text (serde_json's own
//! `Value`: a `String` per string, a `BTreeMap` per object) costs more than everything else
//! the judge does. This one borrows each string that needs no unescaping from the frame and
//! keeps an object's members in order in a `Vec`.
//!
//! It reads exactly what orjson reads as parse decodes, or refuses (and the judge leaves the
//! frame to the reference): RFC 8259 JSON, UTF-8, no lone surrogate (serde_json's own rules,
//! the same as orjson's), nesting within serde_json's 128 levels — and it refuses what the two
//! would read differently: a number serde_json reads as a float that orjson reads as an
//! integer or warns of (`-0`, an integer past 64 bits: both arrive here as a float, so every
//! float of magnitude 2⁶³ or more is refused, and `-0.0` with `-0`), and a member named twice
//! in one object (orjson keeps the last value at the first place).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::checks::{Json, Kind};

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
    /// reads ASCII a word at a time), and decoded as text: serde_json then checks no string
    /// again, which it does one by one reading bytes (measured: 650 instructions an event).
    /// Outside its strings JSON is ASCII, so the two checks refuse the same frames.
    pub fn read(frame: &'a [u8]) -> Option<Decoded<'a>> {
        serde_json::from_str(std::str::from_utf8(frame).ok()?).ok()
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
        .find(|(name, _)| name == key)
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

/// A member's name, borrowed from the frame when it has no escape.
struct Name<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(Reader)
            .and_then(|value| match value {
                Decoded::Str(text) => Ok(Name(text)),
                _ => Err(de::Error::custom("a member name that is not a string")),
            })
    }
}

impl<'de> Deserialize<'de> for Decoded<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Reader)
    }
}

/// Floats at or past this magnitude may be integers orjson reads exactly or warns of.
const LARGEST_EXACT: f64 = 9_223_372_036_854_775_808.0;

struct Reader;

impl<'de> Visitor<'de> for Reader {
    type Value = Decoded<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Decoded::Null)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Self::Value, E> {
        Ok(Decoded::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Decoded::Int(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(value).map_or(Decoded::Unsigned(value), Decoded::Int))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        if value.abs() >= LARGEST_EXACT || (value == 0.0 && value.is_sign_negative()) {
            return Err(E::custom("a number orjson may read otherwise"));
        }
        Ok(Decoded::Float(value))
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Self::Value, E> {
        Ok(Decoded::Str(Cow::Borrowed(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(Decoded::Str(Cow::Owned(value.to_owned())))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(Decoded::Str(Cow::Owned(value)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Decoded::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Decoded<'de>)> = Vec::new();
        while let Some(Name(name)) = map.next_key()? {
            members.push((name, map.next_value()?));
        }
        if named_twice(&members) {
            return Err(de::Error::custom("a member named twice"));
        }
        Ok(Decoded::Object(members))
    }
}

/// Whether two members share a name (pairwise for a small object, by a set for a large one, so
/// a hostile object of many members costs linear time).
fn named_twice(members: &Members<'_>) -> bool {
    if members.len() <= 8 {
        return members
            .iter()
            .enumerate()
            .any(|(at, (name, _))| members[..at].iter().any(|(earlier, _)| earlier == name));
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
    fn the_written_length_is_orjsons() {
        let frame = br#"{"a":[1,true,null,"x\"\u0001\n"],"b":{}}"#;
        // orjson.dumps(orjson.loads(frame)): {"a":[1,true,null,"x\"\u0001\n"],"b":{}}
        assert_eq!(Decoded::read(frame).unwrap().written_bound(), frame.len());
    }
}
