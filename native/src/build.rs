//! Deliver mode's events: each frame the judge passes, built as a Python object from the
//! judge's own decoding, so that a delivered frame is decoded once, not once in Rust to judge it
//! and again by orjson to build it.
//!
//! What is built is what `orjson.loads` builds from the same frame: the decoder refuses every
//! frame the two would read differently (`decode.rs`), and reads floats correctly rounded, as
//! orjson does (the standard library's parse). Objects keep their members' order. Member
//! names, and the values of `type` members, are built once per stream and shared by every event
//! that repeats them (a bounded table, as orjson keeps its own cache of names); so are the last
//! few ids (`messageId`, `toolCallId`, ...), which a streamed message's events repeat. The schema's
//! names are interned Python strings, built once per process ([`Known`]): a handler's
//! `event["type"]` and dispatch's lookup by type then find the very string they hold.
//!
//! Only the schema's names are interned. A name the producer makes up is built as a plain
//! string: on early Python 3.12 releases an interned string is immortal (CPython's
//! gh-113993), so interning the producer's names would let a hostile stream fill the process's
//! memory with names it never frees.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use foldhash::fast::RandomState;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};

use crate::checks::{Checks, same_text};
use crate::decode::Decoded;
use crate::judge::Deliver;

/// The most names of its own a stream's table keeps: past it, a name is built anew each time.
const MAX_NAMES: usize = 1024;
/// The longest name the table keeps, in bytes.
const MAX_NAME_BYTES: usize = 64;
/// The member positions whose last name is kept to be compared first.
const MAX_POSITIONS: usize = 32;
/// The ids kept to be shared ([`Names::ids`]).
const MAX_IDS: usize = 4;

/// The schema's names (its event types and its objects' members) as interned Python strings:
/// built once per process, with the checks they come from.
pub struct Known(HashMap<Box<str>, Py<PyString>, RandomState>);

impl Known {
    pub fn new(py: Python<'_>, checks: &Checks) -> Known {
        let names = checks
            .names()
            .map(|name| (name.into(), PyString::intern(py, name).unbind()));
        Known(names.collect())
    }
}

/// A stream's member names (and event types): the schema's, interned ([`Known`]), and the
/// stream's own, up to `MAX_NAMES` of them.
///
/// Events of one type name their members alike, in the same order, so each name is first
/// compared with the last name at its position in an object (and a `type` value with the last
/// one), which costs less than hashing it; the tables answer the rest. Their hash is
/// foldhash's, seeded at random: names are the producer's to choose.
pub struct Names {
    known: Arc<Known>,
    /// The names of the stream's own, as plain Python strings.
    own: HashMap<Box<str>, Py<PyString>, RandomState>,
    /// The last name at each position of an object, up to `MAX_POSITIONS`.
    at: Vec<Kept>,
    /// The last `type` value.
    kind: Option<Kept>,
    /// The last few values of members named `…Id` (`messageId`, `toolCallId`, …), each the
    /// Python string built for it: an event of a streamed message or call names the same id as
    /// the one before, and comparing it costs a tenth of building its string.
    ids: Vec<Kept>,
    /// The place in `ids` the next new id takes once it is full.
    next_id: usize,
}

impl Names {
    pub fn new(known: Arc<Known>) -> Names {
        Names {
            known,
            own: HashMap::default(),
            at: Vec::new(),
            kind: None,
            ids: Vec::new(),
            next_id: 0,
        }
    }
}

/// A text and the Python string built for it. When another takes its place, the text's buffer
/// is reused: the event types alternate, and a new buffer each time cost more than the lookup
/// it spares.
struct Kept {
    text: String,
    string: Py<PyString>,
}

impl Kept {
    fn new(text: &str, string: Py<PyString>) -> Kept {
        Kept {
            text: text.to_owned(),
            string,
        }
    }

    fn replace(&mut self, text: &str, string: Py<PyString>) {
        text.clone_into(&mut self.text);
        self.string = string;
    }
}

/// A set of event types (`Built`'s `built_types`).
pub type TypeSet = HashSet<String, RandomState>;

/// The events built from one read's frames (a `Deliver` for the judge's `feed`), and which of
/// them metadata must read.
pub struct Built<'py, 'n> {
    py: Python<'py>,
    names: &'n mut Names,
    events: Vec<Bound<'py, PyAny>>,
    /// The event types metadata reads whatever their members.
    marked_types: &'n [String],
    /// The only event types built, when not every event is (judge mode with a declaration:
    /// the types reconcile reads); the others are passed over, unbuilt.
    built_types: Option<&'n TypeSet>,
    /// The events the judge passed so far in the read, built or not.
    passed: usize,
    /// The positions, among the events passed, of those built that carry a `metadata` member
    /// or are of a type in `marked_types`: the only ones metadata reads (`stages/metadata.py`).
    /// Where every event is built, a position among the passed is one among the built.
    marked: Vec<usize>,
    /// The first error building an event (Python out of memory): the read's answer.
    error: Option<PyErr>,
}

impl<'py, 'n> Built<'py, 'n> {
    pub fn new(
        py: Python<'py>,
        names: &'n mut Names,
        marked_types: &'n [String],
        built_types: Option<&'n TypeSet>,
    ) -> Self {
        Built {
            py,
            names,
            events: Vec::new(),
            marked_types,
            built_types,
            passed: 0,
            marked: Vec::new(),
            error: None,
        }
    }

    /// The events built and the positions of the marked ones, when the judge is still `sure`
    /// of the stream after the read and it passed any (`None` otherwise: what it was handed of
    /// a read it gave up on is dropped).
    pub fn into_list(self, sure: bool) -> PyResult<Option<(Bound<'py, PyList>, Vec<usize>)>> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if !sure || self.events.is_empty() {
            return Ok(None);
        }
        Ok(Some((PyList::new(self.py, self.events)?, self.marked)))
    }

    /// Whether `event` is built: every event is, unless `built_types` names the only ones.
    fn builds(&self, event: &Decoded<'_>) -> bool {
        let Some(types) = self.built_types else {
            return true;
        };
        let Decoded::Object(members) = event else {
            return false;
        };
        members.iter().any(|(name, value)| {
            &**name == "type" && value.as_str().is_some_and(|kind| types.contains(kind))
        })
    }

    /// Whether metadata must read `event`: it has a `metadata` member, or its type is marked.
    fn marks(&self, event: &Decoded<'_>) -> bool {
        let Decoded::Object(members) = event else {
            return false;
        };
        members.iter().any(|(name, value)| match (&**name, value) {
            ("metadata", _) => true,
            ("type", Decoded::Str(kind)) => self.marked_types.iter().any(|marked| marked == kind),
            _ => false,
        })
    }

    fn object(&mut self, value: &Decoded<'_>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match value {
            Decoded::Null => py.None().into_bound(py),
            Decoded::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
            Decoded::Int(number) => number.into_pyobject(py)?.into_any(),
            Decoded::Unsigned(number) => number.into_pyobject(py)?.into_any(),
            Decoded::Float(number) => PyFloat::new(py, *number).into_any(),
            Decoded::Str(text) => PyString::new(py, text).into_any(),
            Decoded::List(items) => {
                let built = items
                    .iter()
                    .map(|item| self.object(item))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, built)?.into_any()
            }
            Decoded::Object(members) => {
                let dict = PyDict::new(py);
                for (at, (name, value)) in members.iter().enumerate() {
                    let value = match value {
                        Decoded::Str(kind) if name == "type" => self.kind(kind),
                        Decoded::Str(id) if name.ends_with("Id") => self.id(id),
                        _ => self.object(value)?,
                    };
                    dict.set_item(self.name_at(at, name), value)?;
                }
                dict.into_any()
            }
        })
    }

    /// The name of an object's member at position `at`, as the table shares it.
    fn name_at(&mut self, at: usize, name: &str) -> Bound<'py, PyAny> {
        let py = self.py;
        if let Some(last) = self.names.at.get(at)
            && same_text(&last.text, name)
        {
            return last.string.bind(py).clone().into_any();
        }
        let shared = self.name(name);
        if at < MAX_POSITIONS && name.len() <= MAX_NAME_BYTES {
            let string = shared.clone().unbind();
            let positions = &mut self.names.at;
            if let Some(last) = positions.get_mut(at) {
                last.replace(name, string);
            } else if at == positions.len() {
                positions.push(Kept::new(name, string)); // positions are reached in order
            }
        }
        shared.into_any()
    }

    /// A `type` member's value, as the table shares it.
    fn kind(&mut self, kind: &str) -> Bound<'py, PyAny> {
        let py = self.py;
        if let Some(last) = &self.names.kind
            && same_text(&last.text, kind)
        {
            return last.string.bind(py).clone().into_any();
        }
        let shared = self.name(kind);
        if kind.len() <= MAX_NAME_BYTES {
            let string = shared.clone().unbind();
            match &mut self.names.kind {
                Some(last) => last.replace(kind, string),
                None => self.names.kind = Some(Kept::new(kind, string)),
            }
        }
        shared.into_any()
    }

    /// The value of a member named `…Id`, shared with the last events that had the same one.
    fn id(&mut self, id: &str) -> Bound<'py, PyAny> {
        let py = self.py;
        let names = &mut *self.names;
        if let Some(kept) = names.ids.iter().find(|kept| same_text(&kept.text, id)) {
            return kept.string.bind(py).clone().into_any();
        }
        let built = PyString::new(py, id);
        if id.len() <= MAX_NAME_BYTES {
            let string = built.clone().unbind();
            if names.ids.len() < MAX_IDS {
                names.ids.push(Kept::new(id, string));
            } else {
                names.ids[names.next_id].replace(id, string);
                names.next_id = (names.next_id + 1) % MAX_IDS;
            }
        }
        built.into_any()
    }

    /// `name` as a Python string: the schema's interned one, or the stream's own where its
    /// table has it, or a new one (kept while the table has room).
    fn name(&mut self, name: &str) -> Bound<'py, PyString> {
        let py = self.py;
        let names = &mut *self.names;
        if let Some(kept) = names.known.0.get(name).or_else(|| names.own.get(name)) {
            return kept.bind(py).clone();
        }
        let built = PyString::new(py, name);
        if name.len() <= MAX_NAME_BYTES && names.own.len() < MAX_NAMES {
            names.own.insert(name.into(), built.clone().unbind());
        }
        built
    }
}

impl Deliver for Built<'_, '_> {
    fn deliver(&mut self, event: &Decoded<'_>) {
        let position = self.passed;
        self.passed += 1;
        if self.error.is_some() || !self.builds(event) {
            return;
        }
        match self.object(event) {
            Ok(built) => {
                if self.marks(event) {
                    self.marked.push(position);
                }
                self.events.push(built);
            }
            Err(error) => self.error = Some(error),
        }
    }
}
