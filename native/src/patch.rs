//! The state document, native: STATE_SNAPSHOT and STATE_DELTA applied the way the Python
//! reference applies them, for the judge that decides a stream is clean without building Python
//! objects.
//!
//! The reference is `PatchedDocuments.take_state` and `patch_state`
//! (`pipeline/model/documents.py`) over `apply_patch` (`pipeline/model/patch.py`): RFC 6902, atomic,
//! held to `Limits.max_state_bytes` (measured by `size`), `max_patch_work` (an allowance that each
//! operation adds `WORK_PER_OPERATION` to) and `max_depth`. This mirror vouches or declines:
//! [`State::take`] and [`State::patch`] answer `Ok` only when the reference returns normally
//! (no rejection, no `PatchFailed`, so no diagnostic) and the document here is then the
//! reference's. Everything else is [`Unsure`], and the reference re-runs the stream: a failing
//! operation, any budget that would run out (the reference then recounts the state, which this
//! does not model), a `test` that compares a float, a `-0.0` (serde_json reads the text `-0` as a
//! float, orjson as the integer 0), a document deeper than `max_depth` or [`DEEPEST`].
//!
//! The budgets here are the reference's exactly (the same measure, the same charges): the size
//! budget is never above the reference's, so a patch this accepts never makes the reference
//! recount. Nothing recurses over a value: the walks keep their own stacks, and a document held
//! here is never deeper than [`DEEPEST`], so that dropping or cloning one recurses no further.
//!
//! Two things are the caller's: the reference's allowance also pays for ACTIVITY_DELTA patches
//! (one allowance per stream), which this does not see; and floats are only as exact as the parse
//! that made the values (serde_json's default one can be a unit in the last place off orjson's),
//! which no answer here depends on, since a `test` comparing floats is [`Unsure`].

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

/// The native judge cannot vouch for this: the Python reference decides.
#[derive(Debug, PartialEq, Eq)]
pub struct Unsure;

/// The limits of `agui_pipeline.options.Limits` that bear on the state.
#[derive(Debug, Clone, Copy)]
pub struct StateLimits {
    pub max_state_bytes: usize,
    pub max_patch_work: usize,
    pub max_depth: usize,
}

/// What each operation applied adds to the work allowance (`patch.WORK_PER_OPERATION`).
pub const WORK_PER_OPERATION: usize = 4096;

/// What `size` adds per value (`patch.VALUE_OVERHEAD`).
const VALUE_OVERHEAD: usize = 16;

/// The deepest document held here, whatever `max_depth` says: serde_json's own parse limit, and
/// within what dropping or cloning a `Value` (which recurse) may do on any stack.
pub const DEEPEST: usize = 128;

/// The stream's state document and what patches may still spend on it.
#[derive(Debug)]
pub struct State {
    document: Value,
    /// `Limits.max_state_bytes`.
    limit: usize,
    budget: Budget,
}

/// The reference's `PatchBudget` and `Allowance` for the state.
#[derive(Debug)]
struct Budget {
    /// What patches may still insert, in `size` units (`PatchBudget.remaining`).
    remaining: usize,
    /// Work patches may still do (`Allowance.left`).
    work: usize,
    /// `max_depth`, at most [`DEEPEST`].
    depth: usize,
}

impl State {
    /// The state before any event: an empty object, as the Conversation starts (a run input's
    /// `state` is then [`State::take`]n, as `take_state` takes it).
    pub fn new(limits: StateLimits) -> State {
        State {
            document: Value::Object(Map::new()),
            limit: limits.max_state_bytes,
            budget: Budget {
                remaining: limits.max_state_bytes,
                work: limits.max_patch_work,
                depth: limits.max_depth.min(DEEPEST),
            },
        }
    }

    /// The document as it stands.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// A STATE_SNAPSHOT's `snapshot` value.
    pub fn take(&mut self, snapshot: &Value) -> Result<(), Unsure> {
        // The reference measures no depth here; the mirror holds nothing deeper than a patch
        // may make it (`max_depth`, at most DEEPEST).
        let measured = measure(snapshot, self.limit, self.budget.depth)?;
        self.budget.remaining = self.limit.checked_sub(measured).ok_or(Unsure)?;
        self.document = snapshot.clone();
        Ok(())
    }

    /// A STATE_DELTA's `delta` value (the patch: any JSON value, as enforce lets it through).
    ///
    /// After an `Unsure` the document may be part-patched: the caller abandons the state.
    pub fn patch(&mut self, patch: &Value) -> Result<(), Unsure> {
        let operations = patch.as_array().ok_or(Unsure)?;
        for operation in operations {
            // Added before the operation runs, whether it applies or not (`apply_patch`).
            self.budget.work = self.budget.work.saturating_add(WORK_PER_OPERATION);
            self.apply(operation)?;
        }
        Ok(())
    }

    /// One operation, as `_OPERATIONS` applies it.
    fn apply(&mut self, operation: &Value) -> Result<(), Unsure> {
        let operation = operation.as_object().ok_or(Unsure)?;
        let member = |name: &str| operation.get(name).ok_or(Unsure);
        let budget = &mut self.budget;
        match member("op")?.as_str().ok_or(Unsure)? {
            "add" => {
                let path = tokens(member("path")?)?;
                let value = budget.put(member("value")?, path.len(), false)?;
                insert(&mut self.document, &mut budget.work, &path, value)
            }
            "remove" => {
                let path = tokens(member("path")?)?;
                remove(&mut self.document, &mut budget.work, &path).map(drop)
            }
            "replace" => {
                let path = tokens(member("path")?)?;
                let value = budget.put(member("value")?, path.len(), false)?;
                // What `_replace` finds is what `_get` finds: an existing member, an index
                // before the end, or the root.
                *get_mut(&mut self.document, &path)? = value;
                Ok(())
            }
            "move" => {
                let (source, target) = (member("from")?, member("path")?);
                let (from, path) = (tokens(source)?, tokens(target)?);
                // As the reference: the pointers as written decide "the same place".
                let same = source == target;
                if path.starts_with(&from) && !same {
                    return Err(Unsure); // into its own child
                }
                let value = get(&self.document, &from)?;
                if same {
                    return Ok(());
                }
                if path.len() > from.len() {
                    // Moved deeper: its depth is checked, and walking it is work (`moved`).
                    let room = budget.depth.checked_sub(path.len()).ok_or(Unsure)?;
                    let weight = measure(value, budget.work, room)?;
                    budget.work = budget.work.checked_sub(weight).ok_or(Unsure)?;
                }
                let value = remove(&mut self.document, &mut budget.work, &from)?;
                insert(&mut self.document, &mut budget.work, &path, value)
            }
            "copy" => {
                let value = get(&self.document, &tokens(member("from")?)?)?;
                let path = tokens(member("path")?)?;
                let value = budget.put(value, path.len(), true)?;
                insert(&mut self.document, &mut budget.work, &path, value)
            }
            "test" => {
                let path = tokens(member("path")?)?;
                if surely_equal(get(&self.document, &path)?, member("value")?) {
                    Ok(())
                } else {
                    Err(Unsure) // not equal, or equal only as floats are
                }
            }
            _ => Err(Unsure),
        }
    }
}

impl Budget {
    /// `_Journal.put`: `value` to insert `at` tokens deep, charged by its size (and, when
    /// `copied` out of the document, by the work of walking it), within the depth.
    fn put(&mut self, value: &Value, at: usize, copied: bool) -> Result<Value, Unsure> {
        let room = self.depth.checked_sub(at).ok_or(Unsure)?;
        let cap = if copied {
            self.remaining.min(self.work)
        } else {
            self.remaining
        };
        let weight = measure(value, cap, room)?;
        if copied {
            self.work = self.work.checked_sub(weight).ok_or(Unsure)?;
        }
        self.remaining = self.remaining.checked_sub(weight).ok_or(Unsure)?;
        Ok(value.clone())
    }
}

/// `_Journal.shift`: an array insert or removal that moves `moved` elements (a short one is free).
fn shift(work: &mut usize, moved: usize) -> Result<(), Unsure> {
    if moved > 64 {
        *work = work.checked_sub(moved).ok_or(Unsure)?;
    }
    Ok(())
}

/// `size` (Python's `_walk`) of `value`: its JSON text estimated from its structure, plus
/// `VALUE_OVERHEAD` per value (twice that more per object). Unsure once past `cap`, when a
/// container is more than `room` levels deep, or on a `-0.0`.
fn measure(value: &Value, cap: usize, room: usize) -> Result<usize, Unsure> {
    let mut total = VALUE_OVERHEAD;
    // Each value with its depth were it a container; its own overhead is its holder's charge.
    let mut pending = vec![(value, 1_usize)];
    while let Some((node, depth)) = pending.pop() {
        let own = match node {
            Value::Array(items) => {
                if depth > room {
                    return Err(Unsure);
                }
                pending.extend(items.iter().map(|item| (item, depth.saturating_add(1))));
                items
                    .len()
                    .saturating_mul(1 + VALUE_OVERHEAD)
                    .saturating_add(2)
            }
            Value::Object(members) => {
                if depth > room {
                    return Err(Unsure);
                }
                let names = members
                    .keys()
                    .map(|name| name.chars().count())
                    .fold(0, usize::saturating_add);
                pending.extend(members.values().map(|item| (item, depth.saturating_add(1))));
                members
                    .len()
                    .saturating_mul(4 + VALUE_OVERHEAD)
                    .saturating_add(names)
                    .saturating_add(2 + 2 * VALUE_OVERHEAD)
            }
            scalar => scalar_size(scalar)?,
        };
        total = total.saturating_add(own);
        if total > cap {
            return Err(Unsure);
        }
    }
    Ok(total)
}

/// `_scalar`: a string's characters (code points, as Python counts) and quotes, an integer's
/// most digits and sign, a double's longest, `true`, `false` and `null` as 5.
fn scalar_size(value: &Value) -> Result<usize, Unsure> {
    Ok(match value {
        Value::String(text) => text.chars().count().saturating_add(2),
        Value::Number(number) => match integer(number) {
            Some(integer) => bit_length(integer) / 3 + 2,
            // orjson reads `-0` as the integer 0, serde_json as -0.0: which one Python holds
            // (and so its size, and what it equals) is not known here.
            None if number
                .as_f64()
                .is_some_and(|f| f == 0.0 && f.is_sign_negative()) =>
            {
                return Err(Unsure);
            }
            None => 24,
        },
        _ => 5,
    })
}

/// An integer's value (serde_json holds 64 bits, signed or not, as orjson reads), `None` for
/// a float.
fn integer(number: &Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

/// Python's `int.bit_length`.
fn bit_length(integer: i128) -> usize {
    (u128::BITS - integer.unsigned_abs().leading_zeros()) as usize
}

/// `json_equal` where it is sure: `true` only when the reference's `test` finds the values
/// equal and no float was compared (floats are as exact as their parse, and an integer equal
/// to a float is Python's exact comparison), `false` when unequal or unsure.
fn surely_equal(left: &Value, right: &Value) -> bool {
    let mut pending = vec![(left, right)];
    while let Some(pair) = pending.pop() {
        match pair {
            (Value::Object(a), Value::Object(b)) => {
                if a.len() != b.len() {
                    return false;
                }
                for (name, value) in a {
                    let Some(other) = b.get(name) else {
                        return false;
                    };
                    pending.push((value, other));
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                if a.len() != b.len() {
                    return false;
                }
                pending.extend(a.iter().zip(b));
            }
            (Value::Number(a), Value::Number(b)) => match (integer(a), integer(b)) {
                (Some(x), Some(y)) if x == y => {}
                _ => return false,
            },
            (Value::String(a), Value::String(b)) if a == b => {}
            (Value::Bool(a), Value::Bool(b)) if a == b => {}
            (Value::Null, Value::Null) => {}
            _ => return false,
        }
    }
    true
}

/// `_tokens`: RFC 6901 as the reference reads it (`""` is the root; each token's `~1` then
/// `~0` unescaped, and a `~` left over once both are taken out refused).
fn tokens(pointer: &Value) -> Result<Vec<Cow<'_, str>>, Unsure> {
    let pointer = pointer.as_str().ok_or(Unsure)?;
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer.strip_prefix('/').ok_or(Unsure)?;
    rest.split('/')
        .map(|token| {
            if !token.contains('~') {
                Ok(Cow::Borrowed(token))
            } else if token.replace("~0", "").replace("~1", "").contains('~') {
                Err(Unsure)
            } else {
                Ok(Cow::Owned(token.replace("~1", "/").replace("~0", "~")))
            }
        })
        .collect()
}

/// `_index`: an array position in `length` elements, `-` the end when `end_allowed`; digits
/// only, no leading zero.
fn index(token: &str, length: usize, end_allowed: bool) -> Result<usize, Unsure> {
    if token == "-" && end_allowed {
        return Ok(length);
    }
    let digits = !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return Err(Unsure);
    }
    let index: usize = token.parse().map_err(|_| Unsure)?;
    if index < length || (index == length && end_allowed) {
        Ok(index)
    } else {
        Err(Unsure)
    }
}

/// `_get`: the value at `path`, which must exist.
fn get<'a>(document: &'a Value, path: &[Cow<'_, str>]) -> Result<&'a Value, Unsure> {
    let mut node = document;
    for token in path {
        node = match node {
            Value::Object(members) => members.get(token.as_ref()),
            Value::Array(items) => items.get(index(token, items.len(), false)?),
            _ => None,
        }
        .ok_or(Unsure)?;
    }
    Ok(node)
}

/// [`get`], for changing the value.
fn get_mut<'a>(document: &'a mut Value, path: &[Cow<'_, str>]) -> Result<&'a mut Value, Unsure> {
    let mut node = document;
    for token in path {
        node = match node {
            Value::Object(members) => members.get_mut(token.as_ref()),
            Value::Array(items) => {
                let at = index(token, items.len(), false)?;
                items.get_mut(at)
            }
            _ => None,
        }
        .ok_or(Unsure)?;
    }
    Ok(node)
}

/// `_insert`: `value` put at `path` (an array's elements after it shift; the root is replaced).
fn insert(
    document: &mut Value,
    work: &mut usize,
    path: &[Cow<'_, str>],
    value: Value,
) -> Result<(), Unsure> {
    let Some((last, parent)) = path.split_last() else {
        *document = value;
        return Ok(());
    };
    match get_mut(document, parent)? {
        Value::Array(items) => {
            let at = index(last, items.len(), true)?;
            shift(work, items.len().saturating_sub(at))?;
            items.insert(at, value);
        }
        Value::Object(members) => {
            members.insert(last.clone().into_owned(), value);
        }
        _ => return Err(Unsure),
    }
    Ok(())
}

/// `_delete`: the value at `path` taken out (never the root).
fn remove(document: &mut Value, work: &mut usize, path: &[Cow<'_, str>]) -> Result<Value, Unsure> {
    let (last, parent) = path.split_last().ok_or(Unsure)?;
    match get_mut(document, parent)? {
        Value::Array(items) => {
            let at = index(last, items.len(), false)?;
            shift(work, items.len().saturating_sub(at))?;
            Ok(items.remove(at))
        }
        Value::Object(members) => members.remove(last.as_ref()).ok_or(Unsure),
        _ => Err(Unsure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOMY: StateLimits = StateLimits {
        max_state_bytes: 1 << 24,
        max_patch_work: 1 << 28,
        max_depth: 128,
    };

    fn state(snapshot: Value) -> State {
        let mut state = State::new(ROOMY);
        state.take(&snapshot).expect("a small snapshot is taken");
        state
    }

    /// The document after `patch`, or Unsure.
    fn patched(snapshot: Value, patch: Value) -> Result<Value, Unsure> {
        let mut state = state(snapshot);
        state.patch(&patch)?;
        Ok(state.document)
    }

    #[test]
    fn the_state_starts_as_an_empty_object_with_the_whole_budget() {
        let state = State::new(ROOMY);
        assert_eq!(state.document(), &json!({}));
        assert_eq!(state.budget.remaining, 1 << 24);
        assert_eq!(state.budget.work, 1 << 28);
    }

    #[test]
    fn each_operation_applies_as_rfc_6902_says() {
        let doc = json!({"a": [1, 2], "b": {"c": "x"}});
        let cases = [
            (
                json!({"op": "add", "path": "/a/1", "value": 9}),
                json!({"a": [1, 9, 2], "b": {"c": "x"}}),
            ),
            (
                json!({"op": "add", "path": "/a/-", "value": 9}),
                json!({"a": [1, 2, 9], "b": {"c": "x"}}),
            ),
            (
                json!({"op": "add", "path": "/b/c", "value": null}),
                json!({"a": [1, 2], "b": {"c": null}}),
            ),
            (json!({"op": "add", "path": "", "value": 5}), json!(5)),
            (
                json!({"op": "remove", "path": "/a/0"}),
                json!({"a": [2], "b": {"c": "x"}}),
            ),
            (
                json!({"op": "remove", "path": "/b/c"}),
                json!({"a": [1, 2], "b": {}}),
            ),
            (
                json!({"op": "replace", "path": "/a/1", "value": [true]}),
                json!({"a": [1, [true]], "b": {"c": "x"}}),
            ),
            (json!({"op": "replace", "path": "", "value": []}), json!([])),
            (
                json!({"op": "move", "from": "/b/c", "path": "/a/0"}),
                json!({"a": ["x", 1, 2], "b": {}}),
            ),
            (
                json!({"op": "move", "from": "/a/0", "path": "/a/-"}),
                json!({"a": [2, 1], "b": {"c": "x"}}),
            ),
            (
                json!({"op": "move", "from": "/a", "path": "/a"}),
                doc.clone(),
            ),
            (
                json!({"op": "copy", "from": "/b", "path": "/b/d"}),
                json!({"a": [1, 2], "b": {"c": "x", "d": {"c": "x"}}}),
            ),
            (
                json!({"op": "test", "path": "/a", "value": [1, 2]}),
                doc.clone(),
            ),
            (
                json!({"op": "test", "path": "", "value": {"b": {"c": "x"}, "a": [1, 2]}}),
                doc.clone(),
            ),
            (
                json!({"op": "add", "path": "/b/a~1b~0c", "value": 1}),
                json!({"a": [1, 2], "b": {"c": "x", "a/b~c": 1}}),
            ),
            (
                json!({"op": "add", "path": "/", "value": 1}),
                json!({"a": [1, 2], "b": {"c": "x"}, "": 1}),
            ),
        ];
        for (operation, after) in cases {
            assert_eq!(
                patched(doc.clone(), json!([operation])),
                Ok(after),
                "{operation}"
            );
        }
    }

    #[test]
    fn operations_apply_in_order_on_what_the_ones_before_made() {
        let patch = json!([
            {"op": "add", "path": "/list", "value": []},
            {"op": "add", "path": "/list/0", "value": {"n": 1}},
            {"op": "copy", "from": "/list/0", "path": "/list/-"},
            {"op": "replace", "path": "/list/1/n", "value": 2},
            {"op": "test", "path": "/list/1", "value": {"n": 2}},
            {"op": "move", "from": "/list/0", "path": "/first"},
        ]);
        assert_eq!(
            patched(json!({}), patch),
            Ok(json!({"list": [{"n": 2}], "first": {"n": 1}}))
        );
        assert_eq!(patched(json!({}), json!([])), Ok(json!({})));
    }

    #[test]
    fn what_does_not_apply_is_unsure() {
        let doc = json!({"a": [1, 2], "b": {"c": "x"}, "n": 3});
        let failing = [
            json!({"op": "replace", "path": "/missing", "value": 1}),
            json!({"op": "remove", "path": "/missing"}),
            json!({"op": "remove", "path": ""}),
            json!({"op": "remove", "path": "/a/2"}),
            json!({"op": "replace", "path": "/a/-", "value": 1}),
            json!({"op": "add", "path": "/a/3", "value": 1}),
            json!({"op": "add", "path": "/a/01", "value": 1}),
            json!({"op": "add", "path": "/a/+1", "value": 1}),
            json!({"op": "add", "path": "/a/", "value": 1}),
            json!({"op": "add", "path": "/a/99999999999999999999999", "value": 1}),
            json!({"op": "add", "path": "/n/x", "value": 1}),
            json!({"op": "add", "path": "/x/y", "value": 1}),
            json!({"op": "add", "path": "a", "value": 1}),
            json!({"op": "add", "path": "/b/~2", "value": 1}),
            json!({"op": "add", "path": "/b/~", "value": 1}),
            json!({"op": "add", "path": 7, "value": 1}),
            json!({"op": "add", "path": "/x"}),
            json!({"op": "move", "from": "/b", "path": "/b/c"}),
            json!({"op": "move", "from": "", "path": "/x"}),
            json!({"op": "move", "from": "/missing", "path": "/missing"}),
            json!({"op": "copy", "from": "/missing", "path": "/x"}),
            json!({"op": "copy", "path": "/x"}),
            json!({"op": "test", "path": "/n", "value": 4}),
            json!({"op": "test", "path": "/missing", "value": null}),
            json!({"op": "test", "path": "/b", "value": {"c": "x", "d": 1}}),
            json!({"op": "test", "path": "/a", "value": [1]}),
            json!({"op": "frobnicate", "path": "/x"}),
            json!({"op": 1, "path": "/x"}),
            json!({"path": "/x", "value": 1}),
            json!("add"),
        ];
        for operation in failing {
            assert_eq!(
                patched(doc.clone(), json!([operation])),
                Err(Unsure),
                "{operation}"
            );
        }
        assert_eq!(patched(doc.clone(), json!({"op": "add"})), Err(Unsure));
        assert_eq!(patched(doc, json!(null)), Err(Unsure));
    }

    #[test]
    fn pointer_escapes_are_read_as_the_reference_reads_them() {
        let read = |pointer: &str| {
            tokens(&json!(pointer)).map(|t| t.into_iter().map(Cow::into_owned).collect::<Vec<_>>())
        };
        assert_eq!(read(""), Ok(vec![]));
        assert_eq!(read("/"), Ok(vec![String::new()]));
        assert_eq!(read("/a~1b/~0"), Ok(vec!["a/b".to_owned(), "~".to_owned()]));
        assert_eq!(read("/~01"), Ok(vec!["~1".to_owned()]));
        // The reference's reading of what RFC 6901 leaves out: `~~01` passes its check
        // (`~0` and then `~1` taken out leave nothing) and unescapes `~1` first.
        assert_eq!(read("/~~01"), Ok(vec!["~~1".to_owned()]));
        assert_eq!(read("/~2"), Err(Unsure));
        assert_eq!(read("/a~"), Err(Unsure));
        assert_eq!(read("a"), Err(Unsure));
    }

    #[test]
    fn a_move_between_pointers_that_read_alike_is_into_its_own_child() {
        // "/~~01" and "/~0~01" both name "~~1": written differently, the reference refuses.
        let doc = json!({"~~1": 1});
        let between = json!([{"op": "move", "from": "/~~01", "path": "/~0~01"}]);
        assert_eq!(patched(doc.clone(), between), Err(Unsure));
        let same = json!([{"op": "move", "from": "/~~01", "path": "/~~01"}]);
        assert_eq!(patched(doc.clone(), same), Ok(doc));
    }

    #[test]
    fn a_test_is_vouched_for_only_without_floats() {
        let doc = json!({"i": 1, "f": 1.5, "t": true, "big": u64::MAX, "neg": i64::MIN});
        let test = |path: &str, value: Value| {
            patched(
                doc.clone(),
                json!([{"op": "test", "path": path, "value": value}]),
            )
        };
        assert!(test("/i", json!(1)).is_ok());
        assert!(test("/big", json!(u64::MAX)).is_ok());
        assert!(test("/neg", json!(i64::MIN)).is_ok());
        assert!(test("/t", json!(true)).is_ok());
        // Python: 1 == 1.0 and 1.5 == 1.5, but which float each text is depends on the parse.
        assert_eq!(test("/i", json!(1.0)), Err(Unsure));
        assert_eq!(test("/f", json!(1.5)), Err(Unsure));
        // json_equal: true is not 1.
        assert_eq!(test("/t", json!(1)), Err(Unsure));
        assert_eq!(test("/i", json!(true)), Err(Unsure));
        assert_eq!(test("/big", json!(-1)), Err(Unsure));
    }

    #[test]
    fn size_is_the_references_measure() {
        // Each figure is `size(value, cap)` in pipeline/model/patch.py.
        let cases = [
            (json!({}), 50),
            (json!([]), 18),
            (json!(null), 21),
            (json!("é✅𝄞"), 21),
            (json!(0), 18),
            (json!(7), 19),
            (json!(-8), 19),
            (json!(u64::MAX), 39),
            (json!(i64::MIN), 39),
            (json!(0.5), 40),
            (json!({"ab": [1, "x"], "c": {}}), 168),
        ];
        for (value, size) in cases {
            assert_eq!(measure(&value, usize::MAX, DEEPEST), Ok(size), "{value}");
            assert_eq!(
                measure(&value, size, DEEPEST),
                Ok(size),
                "{value} at its size"
            );
            assert_eq!(
                measure(&value, size - 1, DEEPEST),
                Err(Unsure),
                "{value} below it"
            );
        }
    }

    #[test]
    fn minus_zero_is_unsure_wherever_it_comes_in() {
        let minus_zero: Value = serde_json::from_str("-0").expect("JSON");
        assert_eq!(minus_zero.as_f64().map(f64::is_sign_negative), Some(true));
        assert_eq!(
            State::new(ROOMY).take(&json!({"a": [minus_zero.clone()]})),
            Err(Unsure)
        );
        let add = json!([{"op": "add", "path": "/a", "value": minus_zero}]);
        assert_eq!(patched(json!({}), add), Err(Unsure));
    }

    #[test]
    fn a_snapshot_over_the_limit_is_unsure_and_one_at_it_is_taken() {
        let snapshot = json!({"ab": [1, "x"], "c": {}}); // size 168
        let limits = |max_state_bytes| StateLimits {
            max_state_bytes,
            ..ROOMY
        };
        let mut state = State::new(limits(168));
        assert_eq!(state.take(&snapshot), Ok(()));
        assert_eq!(state.budget.remaining, 0);
        assert_eq!(State::new(limits(167)).take(&snapshot), Err(Unsure));
    }

    #[test]
    fn the_size_budget_is_charged_and_unsure_when_it_would_run_out() {
        // {} is 50: 30 left, and a scalar value is charged its size (7 is 19).
        let limits = StateLimits {
            max_state_bytes: 80,
            ..ROOMY
        };
        let mut state = State::new(limits);
        state.take(&json!({})).expect("taken");
        let add = json!([{"op": "add", "path": "/a", "value": 7}]);
        assert_eq!(state.patch(&add), Ok(()));
        assert_eq!(state.budget.remaining, 11);
        // Removing refunds nothing: the reference would recount here, which is not modelled.
        let remove = json!([{"op": "remove", "path": "/a"}]);
        assert_eq!(state.patch(&remove), Ok(()));
        assert_eq!(state.patch(&add), Err(Unsure));
        // A copy is charged what it copies: the snapshot is 92, the string 37.
        let mut state = State::new(StateLimits {
            max_state_bytes: 92 + 37 + 36,
            ..ROOMY
        });
        state.take(&json!({"s": "x".repeat(19)})).expect("taken");
        let copy = json!([{"op": "copy", "from": "/s", "path": "/t"}]);
        assert_eq!(state.patch(&copy), Ok(()));
        assert_eq!(state.budget.remaining, 36);
        assert_eq!(state.patch(&copy), Err(Unsure));
    }

    #[test]
    fn the_work_allowance_is_the_references() {
        // A copy spends its size; each operation adds WORK_PER_OPERATION first.
        let big = "x".repeat(WORK_PER_OPERATION); // size 4,114
        let copy = json!([{"op": "copy", "from": "/s", "path": "/t"}]);
        for (work, vouched) in [(18, Ok(())), (17, Err(Unsure))] {
            let mut state = State::new(StateLimits {
                max_patch_work: work,
                ..ROOMY
            });
            state.take(&json!({"s": big})).expect("taken");
            assert_eq!(state.patch(&copy), vouched, "allowance {work}");
        }
        // An insert at the head of an array moves its elements: past 64 they are charged.
        let head = json!([{"op": "add", "path": "/a/0", "value": 0}]);
        let mut state = state(json!({"a": vec![0; 64]}));
        state.patch(&head).expect("applies");
        assert_eq!(state.budget.work, (1 << 28) + WORK_PER_OPERATION);
        state.patch(&head).expect("applies");
        assert_eq!(state.budget.work, (1 << 28) + 2 * WORK_PER_OPERATION - 65);
        let mut state = State::new(StateLimits {
            max_patch_work: 0,
            ..ROOMY
        });
        state.take(&json!({"a": vec![0; 5000]})).expect("taken");
        assert_eq!(state.patch(&head), Err(Unsure));
        // A value moved deeper is walked: its size is spent.
        let deeper = json!([{"op": "move", "from": "/s", "path": "/o/s"}]);
        let mut state = State::new(StateLimits {
            max_patch_work: 17,
            ..ROOMY
        });
        state.take(&json!({"s": big, "o": {}})).expect("taken");
        assert_eq!(state.patch(&deeper), Err(Unsure));
        let mut state = State::new(StateLimits {
            max_patch_work: 18,
            ..ROOMY
        });
        state.take(&json!({"s": big, "o": {}})).expect("taken");
        assert_eq!(state.patch(&deeper), Ok(()));
        assert_eq!(state.budget.work, 0);
    }

    #[test]
    fn depth_is_held_to_max_depth_and_to_the_deepest_held_here() {
        let limits = StateLimits {
            max_depth: 3,
            ..ROOMY
        };
        let add = |path: &str, value: Value| json!([{"op": "add", "path": path, "value": value}]);
        let mut state = State::new(limits);
        state.take(&json!({"a": {"b": {}}})).expect("3 deep");
        assert_eq!(state.patch(&add("/a/b/c", json!(1))), Ok(()));
        assert_eq!(state.patch(&add("/a/b/d", json!([]))), Err(Unsure));
        let mut state = State::new(limits);
        state.take(&json!({"a": {"b": {}}})).expect("3 deep");
        assert_eq!(state.patch(&add("/a/x", json!([]))), Ok(()));
        assert_eq!(State::new(limits).take(&json!([[[[]]]])), Err(Unsure));
        // Moved deeper, the moved value's depth counts.
        let mut state = State::new(limits);
        state.take(&json!({"a": {}, "b": [[]]})).expect("3 deep");
        let deeper = json!([{"op": "move", "from": "/b", "path": "/a/b"}]);
        assert_eq!(state.patch(&deeper), Err(Unsure));
        // Whatever max_depth says, nothing deeper than DEEPEST is held.
        let mut deep = json!(0);
        for _ in 0..=DEEPEST {
            deep = json!([deep]);
        }
        let mut state = State::new(StateLimits {
            max_depth: usize::MAX,
            ..ROOMY
        });
        assert_eq!(state.take(&deep), Err(Unsure));
        assert_eq!(state.patch(&add("/x", deep)), Err(Unsure));
    }

    /// A chain of one-element arrays taken apart without recursion (`Value`'s drop recurses).
    fn dismantle(mut node: Value) {
        while let Value::Array(mut items) = node {
            node = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn a_value_deeper_than_any_stack_is_measured_and_compared_without_recursion() {
        let mut deep = Value::Null;
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(measure(&deep, usize::MAX, DEEPEST), Err(Unsure));
        assert!(measure(&deep, usize::MAX, usize::MAX).is_ok());
        assert!(surely_equal(&deep, &deep));
        let mut state = state(json!({"a": [null]}));
        let mut test = Map::new();
        test.insert("op".to_owned(), json!("test"));
        test.insert("path".to_owned(), json!("/a"));
        test.insert("value".to_owned(), deep);
        let mut patch = Value::Array(vec![Value::Object(test)]);
        assert_eq!(state.patch(&patch), Err(Unsure));
        dismantle(patch[0]["value"].take());
    }

    #[test]
    fn the_workload_shape_is_vouched_for() {
        // The benchmark workload's state events (agui_pipeline.testing.workload).
        let mut state = state(
            json!({"status": "working", "progress": 0, "todos": [], "user": {"locale": "fr-CH"}}),
        );
        let deltas = [
            json!([{"op": "replace", "path": "/progress", "value": 33}, {"op": "add", "path": "/todos/-", "value": {"title": " ✅", "done": false}}]),
            json!([{"op": "replace", "path": "/progress", "value": 67}, {"op": "replace", "path": "/todos/0/done", "value": true}]),
        ];
        for delta in &deltas {
            assert_eq!(state.patch(delta), Ok(()));
        }
        assert_eq!(
            state.document()["todos"],
            json!([{"title": " ✅", "done": true}])
        );
    }
}
