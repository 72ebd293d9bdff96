//! The judge's decoder (`decode::Decoded::read`) against serde_json's own reading of the same
//! bytes: it never panics; it reads a text exactly when serde_json reads it and nothing in it
//! is one of the decoder's refusals (a float of magnitude 2^63 or more, a negative zero, a
//! member named twice in one object); what it reads is what serde_json's `Value` holds (the
//! same kinds, strings and numbers, an object's members in the order they were sent); and
//! `written_bound` is at least the length serde_json writes that value in, exactly it when
//! the value holds no float.
//!
//! The input is the text itself. serde_json is built here with `preserve_order`, so a `Value`
//! keeps an object's members in the order they were sent (a repeated name keeps its first
//! place and its last value), and the two are compared member by member, in order.
#![no_main]

use std::collections::BTreeSet;
use std::fmt;

use agui_native::decode::Decoded;
use libfuzzer_sys::fuzz_target;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Whether `value` is what serde_json read: the same kinds, strings and numbers (a float bit
/// for bit), members in order. `at` names where, for the panic message.
fn same(decoded: &Decoded<'_>, value: &Value, at: &str) {
    match (decoded, value) {
        (Decoded::Null, Value::Null) => {}
        (Decoded::Bool(mine), Value::Bool(theirs)) => assert_eq!(mine, theirs, "at {at}"),
        (Decoded::Int(mine), Value::Number(theirs)) => {
            assert!(
                !theirs.is_f64(),
                "at {at}: {mine} read as the float {theirs}"
            );
            assert_eq!(Some(*mine), theirs.as_i64(), "at {at}");
        }
        (Decoded::Unsigned(mine), Value::Number(theirs)) => {
            assert!(
                i64::try_from(*mine).is_err(),
                "at {at}: {mine} is an i64, held as Unsigned"
            );
            assert_eq!(Some(*mine), theirs.as_u64(), "at {at}");
        }
        (Decoded::Float(mine), Value::Number(theirs)) => {
            assert!(theirs.is_f64(), "at {at}: the float {mine} is {theirs}");
            let theirs = theirs.as_f64().map(f64::to_bits);
            assert_eq!(Some(mine.to_bits()), theirs, "at {at}: {mine}");
        }
        (Decoded::Str(mine), Value::String(theirs)) => assert_eq!(mine, theirs, "at {at}"),
        (Decoded::List(mine), Value::Array(theirs)) => {
            assert_eq!(mine.len(), theirs.len(), "at {at}: the list's length");
            for (position, (mine, theirs)) in mine.iter().zip(theirs).enumerate() {
                same(mine, theirs, &format!("{at}/{position}"));
            }
        }
        (Decoded::Object(mine), Value::Object(theirs)) => {
            assert_eq!(mine.len(), theirs.len(), "at {at}: the object's members");
            for ((name, mine), (their_name, theirs)) in mine.iter().zip(theirs) {
                assert_eq!(name, their_name, "at {at}: the members' order");
                same(mine, theirs, &format!("{at}/{name}"));
            }
        }
        (mine, theirs) => panic!("at {at}: read as {mine:?}, serde_json reads {theirs}"),
    }
}

fn holds_float(decoded: &Decoded<'_>) -> bool {
    match decoded {
        Decoded::Float(_) => true,
        Decoded::List(items) => items.iter().any(holds_float),
        Decoded::Object(members) => members.iter().any(|(_, value)| holds_float(value)),
        _ => false,
    }
}

/// Whether a JSON text holds what the decoder refuses although serde_json reads it: a float
/// orjson may read otherwise (magnitude 2^63 or more; a negative zero, which is how serde_json
/// reads `-0` too), or a member named twice in one object (which `Value` cannot show: it keeps
/// one). A visitor of its own, which keeps nothing but the answer.
struct Refused;

impl<'de> Visitor<'de> for Refused {
    type Value = bool;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E>(self, value: f64) -> Result<bool, E> {
        Ok(value.abs() >= 2f64.powi(63) || (value == 0.0 && value.is_sign_negative()))
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let mut refused = false;
        while let Some(item) = seq.next_element::<Holds>()? {
            refused |= item.0;
        }
        Ok(refused)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut refused = false;
        let mut names = BTreeSet::new();
        while let Some(name) = map.next_key::<String>()? {
            refused |= !names.insert(name);
            refused |= map.next_value::<Holds>()?.0;
        }
        Ok(refused)
    }
}

/// [`Refused`]'s answer for one value.
struct Holds(bool);

impl<'de> serde::Deserialize<'de> for Holds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Refused).map(Holds)
    }
}

fuzz_target!(|data: &[u8]| {
    let decoded = Decoded::read(data);
    let value = serde_json::from_slice::<Value>(data);
    // serde_json's reading, restated without the decoder: what it reads, less the refusals.
    let refused = serde_json::from_slice::<Holds>(data).map(|holds| holds.0);
    assert_eq!(
        value.is_ok(),
        refused.is_ok(),
        "serde_json reads a Value and the refusals' visitor apart"
    );
    let expected = matches!(refused, Ok(false));
    let (decoded, value) = match (decoded, value) {
        (None, value) => {
            assert!(
                !expected,
                "refused what serde_json reads with nothing to refuse: {value:?}"
            );
            return;
        }
        (Some(decoded), Err(error)) => {
            panic!("read what serde_json refuses ({error}): {decoded:?}")
        }
        (Some(decoded), Ok(value)) => (decoded, value),
    };
    assert!(
        expected,
        "read a float orjson may read otherwise, or a member named twice: {decoded:?}"
    );
    same(&decoded, &value, "");
    let written = serde_json::to_vec(&value)
        .expect("serde_json writes any Value")
        .len();
    let bound = decoded.written_bound();
    assert!(
        bound >= written,
        "written_bound {bound} under serde_json's {written} bytes"
    );
    if !holds_float(&decoded) {
        assert_eq!(bound, written, "written_bound is exact without a float");
    }
});
