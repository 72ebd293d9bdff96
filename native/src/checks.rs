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

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

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
    fn named(name: &str) -> PyResult<Kind> {
        Ok(match name {
            "str" => Kind::Str,
            "bool" => Kind::Bool,
            "int" => Kind::Int,
            "float" => Kind::Float,
            "list" => Kind::List,
            "dict" => Kind::Dict,
            "NoneType" => Kind::Null,
            other => return Err(PyValueError::new_err(format!("no JSON kind {other:?}"))),
        })
    }
}

/// When a member, clean, may hold what the check did not look into.
#[derive(Debug)]
enum Opens {
    Never,
    Always,
    When(Vec<Kind>),
}

#[derive(Debug)]
struct Field {
    name: String,
    node: usize,
    opens: Opens,
}

#[derive(Debug)]
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
        self.fields.iter().position(|field| field.name == name)
    }
}

#[derive(Debug)]
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

/// The checks of every event type, built from the reference's plan.
#[derive(Debug)]
pub struct Checks {
    nodes: Vec<Node>,
    events: HashMap<String, usize>,
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
    /// position) and `events`, each event type's object node.
    pub fn from_plan(rows: &Bound<'_, PyList>, events: &Bound<'_, PyDict>) -> PyResult<Checks> {
        let mut nodes = Vec::with_capacity(rows.len());
        for row in rows.iter() {
            nodes.push(node_of(row.cast::<PyTuple>()?)?);
        }
        let count = nodes.len();
        let within = |id: usize| {
            if id < count {
                Ok(())
            } else {
                Err(PyValueError::new_err(format!("the plan has no node {id}")))
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
                return Err(PyValueError::new_err("a union member is not an object"));
            }
        }
        if let Some(node) = nested_in_itself(&nodes) {
            return Err(PyValueError::new_err(format!(
                "the plan's node {node} holds itself: the checks would recurse without end"
            )));
        }
        let mut by_type = HashMap::new();
        for (kind, id) in events.iter() {
            let id: usize = id.extract()?;
            within(id)?;
            if !matches!(nodes[id], Node::Object(_)) {
                return Err(PyValueError::new_err("an event's node is not an object"));
            }
            by_type.insert(kind.extract::<String>()?, id);
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
        match &self.nodes[node] {
            Node::Str => value.kind() == Kind::Str,
            Node::Bool => value.kind() == Kind::Bool,
            Node::OpenObject => value.kind() == Kind::Dict,
            Node::Any { nullable } => *nullable || value.kind() != Kind::Null,
            Node::Integer { minimum, maximum } => value
                .integer()
                .is_some_and(|number| *minimum <= number && number <= *maximum),
            Node::Const(expected) => value.text().is_some_and(|text| text == expected),
            Node::ClosedSet(values) => value
                .text()
                .is_some_and(|text| values.iter().any(|known| known == text)),
            Node::Pointer => value.text().is_some_and(is_json_pointer),
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
            if !self.check(field.node, member) {
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

fn node_of(row: &Bound<'_, PyTuple>) -> PyResult<Node> {
    let tag: String = row.get_item(0)?.extract()?;
    let at = |position: usize| row.get_item(position);
    Ok(match tag.as_str() {
        "str" => Node::Str,
        "bool" => Node::Bool,
        "open_object" => Node::OpenObject,
        "pointer" => Node::Pointer,
        "any" => Node::Any {
            nullable: at(1)?.extract()?,
        },
        "integer" => Node::Integer {
            minimum: at(1)?.extract()?,
            maximum: at(2)?.extract()?,
        },
        "const" => Node::Const(at(1)?.extract()?),
        "closed_set" => Node::ClosedSet(at(1)?.extract()?),
        "list" => Node::List {
            item: at(1)?.extract()?,
            min_items: at(2)?.extract()?,
        },
        "union" => Node::Union {
            key: at(1)?.extract()?,
            members: at(2)?.extract()?,
        },
        "alternatives" => {
            let by_kind: Vec<(String, usize)> = at(1)?.extract()?;
            Node::Alternatives(
                by_kind
                    .into_iter()
                    .map(|(kind, node)| Ok((Kind::named(&kind)?, node)))
                    .collect::<PyResult<_>>()?,
            )
        }
        "object" => {
            // ("object", is_open, tells_opens, skip, [(name, node, required, opens)])
            let is_open: bool = at(1)?.extract()?;
            let tells_opens: bool = at(2)?.extract()?;
            let skip: Option<String> = at(3)?.extract()?;
            let rows: Vec<(String, usize, bool, Option<Vec<String>>)> = at(4)?.extract()?;
            if rows.len() > 64 {
                return Err(PyValueError::new_err("an object of more than 64 fields"));
            }
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
                            .collect::<PyResult<_>>()?,
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
                Some(name) => Some(object.field(&name).ok_or_else(|| {
                    PyValueError::new_err(format!("the discriminator {name:?} is not a field"))
                })?),
            };
            Node::Object(Object { skip, ..object })
        }
        other => return Err(PyValueError::new_err(format!("no node {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::is_json_pointer;

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
