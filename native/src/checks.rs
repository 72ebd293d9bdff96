//! enforce's fast check, native: is each event of a batch exactly valid, and which ones hold a
//! member the check does not look into (open JSON, where parse's search for integers past 64
//! bits must read the frame).
//!
//! The checks are not written here: they are built from the plan the Python reference compiles
//! from `agui_pipeline.events` (`native_plan` in `stages/_checks.py`), one row per node, so the
//! schema has one statement. Only the question "clean or not" is native. An event that is not
//! clean goes to the reference's walk (`Enforce._judge`), which strips, drops or rejects and
//! words every diagnostic; so a "not clean" answer here can cost time, never change a result,
//! and the checks recurse no deeper than the schema nests (a plan that nests itself is refused
//! when it is built, so no value can drive the recursion past the plan's own depth).

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use foldhash::fast::RandomState;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::{
    self, Deserialize, DeserializeOwned, Deserializer, IgnoredAny, SeqAccess, Visitor,
};

/// The JSON kind of a Python value as the decoder makes it: exact types only, as the reference's
/// `type(x) is str` tests (a `bool` is not an `int`; a subclass is no kind).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Str,
    Bool,
    Int,
    Float,
    List,
    Dict,
    Null,
    Other,
}

impl Kind {
    fn named(name: &str) -> Result<Kind, String> {
        Ok(match name {
            "str" => Kind::Str,
            "bool" => Kind::Bool,
            "int" => Kind::Int,
            "float" => Kind::Float,
            "list" => Kind::List,
            "dict" => Kind::Dict,
            "NoneType" => Kind::Null,
            other => return Err(format!("no JSON kind {other:?}")),
        })
    }
}

/// When a member, clean, may hold what the check did not look into.
#[derive(Clone, Debug)]
enum Opens {
    Never,
    Always,
    When(Vec<Kind>),
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    node: usize,
    opens: Opens,
}

#[derive(Clone, Debug)]
struct Object {
    fields: Vec<Field>,
    /// One bit per required field, by position in `fields`.
    required: u64,
    is_open: bool,
    /// The discriminator its union matched already (not checked again).
    skip: Option<usize>,
    /// An event whose check says which members it did not look into.
    tells_opens: bool,
}

impl Object {
    fn field(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|field| same_text(&field.name, name))
    }
}

/// Whether two texts are the same. The member names, types and ids compared on every event
/// are short, and `==` on them calls the C library's `memcmp` (about 20 instructions a call,
/// several calls an event); up to 32 bytes this compares them inline, a word at a time: the
/// first and the last bytes of the width that covers them, overlapping in the middle.
pub fn same_text(one: &str, other: &str) -> bool {
    let (one, other) = (one.as_bytes(), other.as_bytes());
    one.len() == other.len()
        && match one.len() {
            4..=7 => same_ends::<4>(one, other),
            8..=15 => same_ends::<8>(one, other),
            16..=32 => same_ends::<16>(one, other),
            _ => one == other,
        }
}

/// Whether two texts of one length, `N` bytes at least, share their first and last `N` bytes
/// (arrays of a fixed size, which compare as words).
fn same_ends<const N: usize>(one: &[u8], other: &[u8]) -> bool {
    let head = |bytes: &[u8]| <[u8; N]>::try_from(&bytes[..N]).ok();
    let tail = |bytes: &[u8]| <[u8; N]>::try_from(&bytes[bytes.len() - N..]).ok();
    head(one) == head(other) && tail(one) == tail(other)
}

#[derive(Clone, Debug)]
enum Node {
    Str,
    Bool,
    OpenObject,
    Any {
        nullable: bool,
    },
    Integer {
        minimum: i64,
        maximum: i64,
    },
    Const(String),
    ClosedSet(Vec<String>),
    Pointer,
    List {
        item: usize,
        min_items: usize,
    },
    Object(Object),
    Union {
        key: String,
        members: Vec<(String, usize)>,
    },
    Alternatives(Vec<(Kind, usize)>),
}

/// The checks of every event type, built from the reference's plan. (Clone: a judge owns its
/// checks, and the fuzz target builds them once for the two judges of every input.)
#[derive(Clone, Debug)]
pub struct Checks {
    nodes: Vec<Node>,
    /// foldhash's table: looked up at each change of type, where SipHash cost ~200 a lookup.
    events: HashMap<String, usize, RandomState>,
}

/// A check's answer for one event: clean, and whether it holds a member not looked into.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    NotClean,
    Clean,
    CleanWithOpenMembers,
}

impl Checks {
    /// The checks from `rows` (`native_plan`'s: one tuple per node, referring to others by
    /// position) and `events`, each event type's node: the tuples read ([`Row`]), then
    /// [`Checks::from_rows`].
    pub fn from_plan(rows: &Bound<'_, PyList>, events: &Bound<'_, PyDict>) -> PyResult<Checks> {
        let rows = rows
            .iter()
            .map(|row| {
                let tuple = row.cast::<PyTuple>()?;
                read_row(&mut TupleItems { tuple, at: 0 })
            })
            .collect::<PyResult<Vec<Row>>>()?;
        let events = events
            .iter()
            .map(|(kind, id)| Ok((kind.extract::<String>()?, id.extract::<usize>()?)))
            .collect::<PyResult<Vec<(String, usize)>>>()?;
        Checks::from_rows(rows, events).map_err(PyValueError::new_err)
    }

    /// The checks from the plan's rows and each event type's node, or why the plan cannot be
    /// checked with: a node it lacks, a union member or an event that is not an object, a node
    /// that holds itself (a value could then drive the recursion past any stack), a kind or a
    /// discriminator it does not know, an object of more than 64 fields.
    pub fn from_rows(
        rows: Vec<Row>,
        events: impl IntoIterator<Item = (String, usize)>,
    ) -> Result<Checks, String> {
        let nodes = rows
            .into_iter()
            .map(node_of)
            .collect::<Result<Vec<Node>, String>>()?;
        let count = nodes.len();
        let within = |id: usize| {
            if id < count {
                Ok(())
            } else {
                Err(format!("the plan has no node {id}"))
            }
        };
        for node in &nodes {
            for id in held_by(node) {
                within(id)?;
            }
            if let Node::Union { members, .. } = node
                && members
                    .iter()
                    .any(|(_, id)| !matches!(nodes[*id], Node::Object(_)))
            {
                return Err("a union member is not an object".to_owned());
            }
        }
        if let Some(node) = nested_in_itself(&nodes) {
            return Err(format!(
                "the plan's node {node} holds itself: the checks would recurse without end"
            ));
        }
        let mut by_type = HashMap::default();
        for (kind, id) in events {
            within(id)?;
            if !matches!(nodes[id], Node::Object(_)) {
                return Err("an event's node is not an object".to_owned());
            }
            by_type.insert(kind, id);
        }
        Ok(Checks {
            nodes,
            events: by_type,
        })
    }

    /// The event type named `name`, as the checks spell it, and its node.
    pub fn event_node(&self, name: &str) -> Option<(&str, usize)> {
        self.events
            .get_key_value(name)
            .map(|(known, node)| (known.as_str(), *node))
    }

    /// Every name the schema gives: the event types and the members of its objects (what a
    /// conforming stream's names are drawn from, a set the producer cannot grow).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let members = self.nodes.iter().flat_map(|node| match node {
            Node::Object(object) => object.fields.as_slice(),
            _ => &[],
        });
        self.events
            .keys()
            .map(String::as_str)
            .chain(members.map(|field| field.name.as_str()))
    }

    /// The check of one event of the type whose node is `node`.
    pub fn event<V: Json>(&self, node: usize, event: &V) -> Verdict {
        let Node::Object(object) = &self.nodes[node] else {
            return Verdict::NotClean; // from_plan holds every event's node to be an object
        };
        let mut opened = false;
        if self.object(object, event, &mut opened) {
            if opened {
                Verdict::CleanWithOpenMembers
            } else {
                Verdict::Clean
            }
        } else {
            Verdict::NotClean
        }
    }

    fn check<V: Json>(&self, node: usize, value: &V) -> bool {
        let node = &self.nodes[node];
        if let Some(clean) = leaf(node, value) {
            return clean;
        }
        match node {
            Node::List { item, min_items } => value
                .elements(*min_items, |element| self.check(*item, element))
                .unwrap_or(false),
            Node::Object(object) => self.object(object, value, &mut false),
            Node::Union { key, members } => value
                .member_text(key, |tag| {
                    members
                        .iter()
                        .find(|(known, _)| known == tag)
                        .map(|(_, member)| *member)
                })
                .flatten()
                .is_some_and(|member| self.check(member, value)),
            Node::Alternatives(by_kind) => {
                let kind = value.kind();
                by_kind
                    .iter()
                    .find(|(each, _)| *each == kind)
                    .is_some_and(|(_, node)| self.check(*node, value))
            }
            _ => unreachable!("leaf() tests every other node"),
        }
    }

    /// An object: every required member present, every member present described (unless the
    /// object is open) and clean. `opened` is set when an event's check passes a member it does
    /// not look into.
    fn object<V: Json>(&self, object: &Object, value: &V, opened: &mut bool) -> bool {
        let mut seen = 0u64;
        let all_clean = value.members(|name, member| {
            let Some(position) = name.and_then(|name| object.field(name)) else {
                if !object.is_open {
                    return false; // a member the schema does not describe: the walk strips it
                }
                *opened |= object.tells_opens;
                return true;
            };
            seen |= 1 << position;
            if object.skip == Some(position) {
                return true;
            }
            let field = &object.fields[position];
            // Most members are leaves (strings, integers): tested here, without the call into
            // `check` (measured: ~90 instructions an event).
            let clean = leaf(&self.nodes[field.node], member)
                .unwrap_or_else(|| self.check(field.node, member));
            if !clean {
                return false;
            }
            if object.tells_opens {
                *opened |= match &field.opens {
                    Opens::Never => false,
                    Opens::Always => true,
                    Opens::When(kinds) => kinds.contains(&member.kind()),
                };
            }
            true
        });
        all_clean == Some(true) && seen & object.required == object.required
    }
}

/// The test of a node that holds no other, `None` for one that does. Inlined where objects'
/// members are checked, the kinds' tests in place and the texts' tests called.
#[inline(always)]
fn leaf<V: Json>(node: &Node, value: &V) -> Option<bool> {
    Some(match node {
        Node::Str => value.kind() == Kind::Str,
        Node::Bool => value.kind() == Kind::Bool,
        Node::OpenObject => value.kind() == Kind::Dict,
        Node::Any { nullable } => *nullable || value.kind() != Kind::Null,
        Node::Integer { minimum, maximum } => value
            .integer()
            .is_some_and(|number| *minimum <= number && number <= *maximum),
        Node::Const(_) | Node::ClosedSet(_) | Node::Pointer => text_leaf(node, value),
        Node::List { .. } | Node::Object(_) | Node::Union { .. } | Node::Alternatives(_) => {
            return None;
        }
    })
}

/// The tests of a leaf by its text.
#[inline(never)]
fn text_leaf<V: Json>(node: &Node, value: &V) -> bool {
    let Some(text) = value.text() else {
        return false;
    };
    match node {
        Node::Const(expected) => text == expected,
        Node::ClosedSet(values) => values.iter().any(|known| known == text),
        Node::Pointer => is_json_pointer(text),
        _ => unreachable!("only the leaves tested by their text come here"),
    }
}

/// What the checks read of a JSON value, whoever decoded it: the Python objects orjson made
/// (enforce's check of a batch) or the judge's decoded values (`decode.rs`). Both
/// answer alike for the same JSON text, so one set of checks serves both.
pub trait Json {
    /// The value's JSON kind, as the reference's exact `type(x) is ...` tests tell it.
    fn kind(&self) -> Kind;
    /// The text of a string (`None` for anything else, and for a string with a lone surrogate,
    /// which equals no name the schema has).
    fn text(&self) -> Option<&str>;
    /// An integer that fits 64 signed bits (`None` for anything else).
    fn integer(&self) -> Option<i64>;
    /// Whether a list has at least `min_items` elements and `check` passes each (`None`: not a
    /// list); the first failure ends the walk.
    fn elements(&self, min_items: usize, check: impl FnMut(&Self) -> bool) -> Option<bool>;
    /// Each member of an object, its name `None` when it is not a string, until `visit` says
    /// `false` (`None`: not an object; `Some(false)`: a visit said stop).
    fn members(&self, visit: impl FnMut(Option<&str>, &Self) -> bool) -> Option<bool>;
    /// `read` of the text of the object's member `key`, when it is a string.
    fn member_text<R>(&self, key: &str, read: impl FnOnce(&str) -> R) -> Option<R>;
}

impl Json for Bound<'_, PyAny> {
    fn kind(&self) -> Kind {
        if self.is_exact_instance_of::<PyString>() {
            Kind::Str
        } else if self.is_exact_instance_of::<PyDict>() {
            Kind::Dict
        } else if self.is_exact_instance_of::<PyInt>() {
            Kind::Int
        } else if self.is_exact_instance_of::<PyList>() {
            Kind::List
        } else if self.is_exact_instance_of::<PyBool>() {
            Kind::Bool
        } else if self.is_none() {
            Kind::Null
        } else if self.is_exact_instance_of::<PyFloat>() {
            Kind::Float
        } else {
            Kind::Other
        }
    }

    fn text(&self) -> Option<&str> {
        self.cast_exact::<PyString>().ok()?.to_str().ok()
    }

    fn integer(&self) -> Option<i64> {
        if self.is_exact_instance_of::<PyInt>() {
            self.extract::<i64>().ok()
        } else {
            None
        }
    }

    fn elements(&self, min_items: usize, mut check: impl FnMut(&Self) -> bool) -> Option<bool> {
        let list = self.cast_exact::<PyList>().ok()?;
        Some(list.len() >= min_items && list.iter().all(|element| check(&element)))
    }

    fn members(&self, mut visit: impl FnMut(Option<&str>, &Self) -> bool) -> Option<bool> {
        let dict = self.cast_exact::<PyDict>().ok()?;
        for (key, member) in dict.iter() {
            let name = key
                .cast_exact::<PyString>()
                .ok()
                .and_then(|key| key.to_str().ok());
            if !visit(name, &member) {
                return Some(false);
            }
        }
        Some(true)
    }

    fn member_text<R>(&self, key: &str, read: impl FnOnce(&str) -> R) -> Option<R> {
        let dict = self.cast_exact::<PyDict>().ok()?;
        let member = dict.get_item(key).ok()??;
        member.text().map(read)
    }
}

/// An event's `type` as `Batch.types` holds it, when it is a string (a subclass too: the
/// reference looks its check up by `==`).
pub fn type_name<'a>(kind: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    kind.cast::<PyString>().ok()?.to_str().ok()
}

/// The nodes `node` holds.
fn held_by(node: &Node) -> Vec<usize> {
    match node {
        Node::List { item, .. } => vec![*item],
        Node::Object(object) => object.fields.iter().map(|field| field.node).collect(),
        Node::Union { members, .. } => members.iter().map(|(_, id)| *id).collect(),
        Node::Alternatives(by_kind) => by_kind.iter().map(|(_, id)| *id).collect(),
        _ => Vec::new(),
    }
}

/// A node that holds itself, directly or further down (`None`: the plan nests finitely).
fn nested_in_itself(nodes: &[Node]) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks = vec![Mark::New; nodes.len()];
    for root in 0..nodes.len() {
        if marks[root] != Mark::New {
            continue;
        }
        // Depth first without recursion: (node, its children not yet visited).
        let mut stack = vec![(root, held_by(&nodes[root]))];
        marks[root] = Mark::Open;
        while let Some((node, children)) = stack.last_mut() {
            match children.pop() {
                Some(child) => match marks[child] {
                    Mark::Open => return Some(child),
                    Mark::New => {
                        marks[child] = Mark::Open;
                        stack.push((child, held_by(&nodes[child])));
                    }
                    Mark::Done => {}
                },
                None => {
                    marks[*node] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }
    None
}

/// RFC 6901: empty, or `/`-prefixed reference tokens with `~` only as `~0` or `~1`.
fn is_json_pointer(text: &str) -> bool {
    if text.is_empty() {
        return true;
    }
    let bytes = text.as_bytes();
    bytes[0] == b'/'
        && bytes
            .iter()
            .enumerate()
            .all(|(at, byte)| *byte != b'~' || matches!(bytes.get(at + 1), Some(b'0' | b'1')))
}

/// One row of the plan, as `native_plan` writes it: a tuple whose first item names the node
/// and whose others are its parameters, nodes it holds named by position. The same shape is
/// read from Python's tuples (`from_plan`) and, through serde, from JSON arrays (the fuzz
/// targets load the plan from a file so): [`read_row`] states it once for both.
#[derive(Clone, Debug, PartialEq)]
pub enum Row {
    /// `("str",)`
    Str,
    /// `("bool",)`
    Bool,
    /// `("open_object",)`
    OpenObject,
    /// `("pointer",)`
    Pointer,
    /// `("any", nullable)`
    Any { nullable: bool },
    /// `("integer", minimum, maximum)`
    Integer { minimum: i64, maximum: i64 },
    /// `("const", value)`
    Const(String),
    /// `("closed_set", [value, ...])`
    ClosedSet(Vec<String>),
    /// `("list", item, min_items)`
    List { item: usize, min_items: usize },
    /// `("union", key, [(tag, node), ...])`
    Union {
        key: String,
        members: Vec<(String, usize)>,
    },
    /// `("alternatives", [(kind name, node), ...])`
    Alternatives(Vec<(String, usize)>),
    /// `("object", is_open, tells_opens, skip, [field, ...])`
    Object {
        is_open: bool,
        tells_opens: bool,
        skip: Option<String>,
        fields: Vec<FieldRow>,
    },
}

/// An object's field in the plan: `(name, node, required, opens)`, where `opens` is `None`
/// when the member may always hold what the check does not look into, else the kinds by name
/// with which it may (none: never).
pub type FieldRow = (String, usize, bool, Option<Vec<String>>);

/// A row's items in order, wherever they are stored.
trait RowItems {
    type Error;
    /// The next item, read as `T`.
    fn next<T: RowItem>(&mut self) -> Result<T, Self::Error>;
    /// A row whose first item names no node.
    fn no_node(tag: &str) -> Self::Error;
}

/// What a row's item is read as: the same types from Python and from serde.
trait RowItem: DeserializeOwned + for<'py> pyo3::conversion::FromPyObjectOwned<'py> {}

impl<T: DeserializeOwned + for<'py> pyo3::conversion::FromPyObjectOwned<'py>> RowItem for T {}

/// The row's shape: its first item names the node, the others follow in the node's order.
/// Items past them are not read (as `from_plan` always did).
fn read_row<I: RowItems>(items: &mut I) -> Result<Row, I::Error> {
    let tag: String = items.next()?;
    Ok(match tag.as_str() {
        "str" => Row::Str,
        "bool" => Row::Bool,
        "open_object" => Row::OpenObject,
        "pointer" => Row::Pointer,
        "any" => Row::Any {
            nullable: items.next()?,
        },
        "integer" => Row::Integer {
            minimum: items.next()?,
            maximum: items.next()?,
        },
        "const" => Row::Const(items.next()?),
        "closed_set" => Row::ClosedSet(items.next()?),
        "list" => Row::List {
            item: items.next()?,
            min_items: items.next()?,
        },
        "union" => Row::Union {
            key: items.next()?,
            members: items.next()?,
        },
        "alternatives" => Row::Alternatives(items.next()?),
        "object" => Row::Object {
            is_open: items.next()?,
            tells_opens: items.next()?,
            skip: items.next()?,
            fields: items.next()?,
        },
        other => return Err(I::no_node(other)),
    })
}

/// A Python tuple's items.
struct TupleItems<'a, 'py> {
    tuple: &'a Bound<'py, PyTuple>,
    at: usize,
}

impl RowItems for TupleItems<'_, '_> {
    type Error = PyErr;

    fn next<T: RowItem>(&mut self) -> PyResult<T> {
        let item = self.tuple.get_item(self.at)?;
        self.at += 1;
        item.extract::<T>().map_err(Into::into)
    }

    fn no_node(tag: &str) -> PyErr {
        PyValueError::new_err(format!("no node {tag:?}"))
    }
}

/// A serde sequence's items (a JSON array's).
struct SeqItems<'de, A: SeqAccess<'de>> {
    seq: A,
    at: usize,
    of: PhantomData<&'de ()>,
}

impl<'de, A: SeqAccess<'de>> RowItems for SeqItems<'de, A> {
    type Error = A::Error;

    fn next<T: RowItem>(&mut self) -> Result<T, A::Error> {
        let item = self
            .seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(self.at, &"a longer row of the plan"));
        self.at += 1;
        item
    }

    fn no_node(tag: &str) -> A::Error {
        de::Error::custom(format!("no node {tag:?}"))
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a row of the plan: an array whose first item names the node")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Row, A::Error> {
        let mut items = SeqItems {
            seq,
            at: 0,
            of: PhantomData,
        };
        let row = read_row(&mut items)?;
        while items.seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(row)
    }
}

/// A row's node, its kinds and discriminator known, its fields within the bits of `required`.
fn node_of(row: Row) -> Result<Node, String> {
    Ok(match row {
        Row::Str => Node::Str,
        Row::Bool => Node::Bool,
        Row::OpenObject => Node::OpenObject,
        Row::Pointer => Node::Pointer,
        Row::Any { nullable } => Node::Any { nullable },
        Row::Integer { minimum, maximum } => Node::Integer { minimum, maximum },
        Row::Const(value) => Node::Const(value),
        Row::ClosedSet(values) => Node::ClosedSet(values),
        Row::List { item, min_items } => Node::List { item, min_items },
        Row::Union { key, members } => Node::Union { key, members },
        Row::Alternatives(by_kind) => Node::Alternatives(
            by_kind
                .into_iter()
                .map(|(kind, node)| Ok((Kind::named(&kind)?, node)))
                .collect::<Result<_, String>>()?,
        ),
        Row::Object {
            is_open,
            tells_opens,
            skip,
            fields: mut rows,
        } => {
            if rows.len() > 64 {
                return Err("an object of more than 64 fields".to_owned());
            }
            // The required fields first, in the plan's order within each group: an event's
            // members are looked up in this order, and the schema lists the base event's
            // optional fields (timestamp, rawEvent, ...) before the type's own.
            rows.sort_by_key(|(_, _, is_required, _)| !is_required);
            let mut fields = Vec::with_capacity(rows.len());
            let mut required = 0u64;
            for (position, (name, node, is_required, opens)) in rows.into_iter().enumerate() {
                if is_required {
                    required |= 1 << position;
                }
                let opens = match opens {
                    None => Opens::Always,
                    Some(kinds) if kinds.is_empty() => Opens::Never,
                    Some(kinds) => Opens::When(
                        kinds
                            .iter()
                            .map(|kind| Kind::named(kind))
                            .collect::<Result<_, String>>()?,
                    ),
                };
                fields.push(Field { name, node, opens });
            }
            let object = Object {
                skip: None,
                fields,
                required,
                is_open,
                tells_opens,
            };
            let skip = match skip {
                None => None,
                Some(name) => Some(
                    object
                        .field(&name)
                        .ok_or_else(|| format!("the discriminator {name:?} is not a field"))?,
                ),
            };
            Node::Object(Object { skip, ..object })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{Checks, Row, Verdict, is_json_pointer};
    use crate::decode::Decoded;

    fn rows(json: &str) -> Vec<Row> {
        serde_json::from_str(json).unwrap()
    }

    fn built(json: &str, events: &[(&str, usize)]) -> Result<Checks, String> {
        let events = events.iter().map(|(kind, id)| ((*kind).to_owned(), *id));
        Checks::from_rows(rows(json), events)
    }

    #[test]
    fn same_text_is_equality_at_every_length_and_place() {
        for length in 0..40 {
            let text: String = (0..length)
                .map(|at| char::from(b'a' + (at % 26) as u8))
                .collect();
            assert!(super::same_text(&text, &text.clone()), "{length}");
            assert!(!super::same_text(&text, &format!("{text}x")), "{length}");
            for at in 0..length {
                let mut other = text.clone().into_bytes();
                other[at] = b'_';
                let other = String::from_utf8(other).unwrap();
                assert!(!super::same_text(&text, &other), "{length} {at}");
            }
        }
    }

    #[test]
    fn a_plan_read_from_json_arrays_checks_as_its_tuples_would() {
        // native_plan's rows, as json.dumps writes its tuples; an item past a row's shape is
        // not read (nor is it from a tuple).
        let plan = r#"[
            ["object", false, true, "type", [["type", 1, true, []], ["n", 2, false, ["dict"]],
                                             ["any", 3, false, null]]],
            ["const", "PING", "ignored"],
            ["alternatives", [["int", 4], ["dict", 5]]],
            ["any", true],
            ["integer", 0, 9],
            ["open_object"]
        ]"#;
        let checks = built(plan, &[("PING", 0)]).unwrap();
        let (name, node) = checks.event_node("PING").unwrap();
        assert_eq!((name, node), ("PING", 0));
        let verdict = |frame: &str| checks.event(node, &Decoded::read(frame.as_bytes()).unwrap());
        assert_eq!(verdict(r#"{"type":"PING","n":3}"#), Verdict::Clean);
        assert_eq!(
            verdict(r#"{"type":"PING","n":{}}"#),
            Verdict::CleanWithOpenMembers
        );
        assert_eq!(
            verdict(r#"{"type":"PING","any":1}"#),
            Verdict::CleanWithOpenMembers
        );
        assert_eq!(verdict(r#"{"type":"PING","n":10}"#), Verdict::NotClean);
        assert_eq!(verdict(r#"{"n":1}"#), Verdict::NotClean, "type is required");
        assert_eq!(verdict(r#"{"type":"PING","m":1}"#), Verdict::NotClean);
    }

    #[test]
    fn a_plan_it_could_not_check_with_is_refused() {
        for (plan, refusal) in [
            (r#"[["list", 0, 0]]"#, "holds itself"),
            (r#"[["list", 1, 0], ["list", 0, 0]]"#, "holds itself"),
            (r#"[["list", 5, 0]]"#, "no node 5"),
            (
                r#"[["union", "type", [["A", 1]]], ["str"]]"#,
                "not an object",
            ),
            (
                r#"[["alternatives", [["set", 0]]]]"#,
                "no JSON kind \"set\"",
            ),
            (
                r#"[["object", false, false, "kind", [["type", 0, true, []]]]]"#,
                "the discriminator \"kind\" is not a field",
            ),
        ] {
            let error = built(plan, &[]).unwrap_err();
            assert!(error.contains(refusal), "{plan}: {error}");
        }
        let fields = (0..65)
            .map(|at| format!(r#"["f{at}", 0, false, []]"#))
            .collect::<Vec<_>>()
            .join(",");
        let wide = format!(r#"[["object", false, false, null, [{fields}]]]"#);
        assert!(
            built(&wide, &[])
                .unwrap_err()
                .contains("more than 64 fields")
        );
        assert!(
            built(r#"[["str"]]"#, &[("A", 0)])
                .unwrap_err()
                .contains("not an object")
        );
        assert!(
            built(r#"[["str"]]"#, &[("A", 1)])
                .unwrap_err()
                .contains("no node 1")
        );
        let error = serde_json::from_str::<Vec<Row>>(r#"[["no such node"]]"#).unwrap_err();
        assert!(
            error.to_string().contains("no node \"no such node\""),
            "{error}"
        );
        let error = serde_json::from_str::<Vec<Row>>(r#"[["integer", 0]]"#).unwrap_err();
        assert!(error.to_string().contains("invalid length 2"), "{error}");
    }

    #[test]
    fn json_pointers() {
        for good in ["", "/", "/a", "/a~0b", "/~1", "/a/0/~01"] {
            assert!(is_json_pointer(good), "{good:?}");
        }
        for bad in ["a", "~0", "/~", "/a~2", "/a~"] {
            assert!(!is_json_pointer(bad), "{bad:?}");
        }
    }
}
