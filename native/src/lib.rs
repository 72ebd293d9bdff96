//! The native core of agui-pipeline, imported as `agui_pipeline._native`.
//!
//! The native core so far (issue 36): parse's framing of SSE and JSON lines ([`framing`]),
//! enforce's fast check of each event ([`checks`]), and the judge ([`judge`]): a whole stream
//! read here when `check` wants only its verdict, decoded by [`decode`], its state followed by
//! [`patch`] (whose mirror the differential test also reaches through [`state_probe`]). The
//! Python implementation stays the reference (`stages/`, `pipeline/_engine/judge.py`), and
//! runs when this module is not built or `AGUI_PIPELINE_PURE=1` is set (`pipeline/_cores.py`).
//!
//! A panic never crosses into Python as PyO3's `PanicException` (a `BaseException` that would
//! slip past the engine's handling of a stage's bug): every entry point runs under
//! [`guarded`], and a panic becomes [`InternalError`] naming the stage.

pub mod build;
pub mod checks;
pub mod decode;
pub mod framing;
pub mod judge;
pub mod patch;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::checks::Verdict;
use crate::framing::{FrameTooLarge, Framing, each_payload};
use crate::judge::RunNote;

create_exception!(
    _native,
    InternalError,
    PyRuntimeError,
    "A bug in the native core (a Rust panic), with the stage it happened in."
);

/// Run `work`, turning a panic into an error message that names `stage`.
pub fn guarded<T>(stage: &str, work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|panic| {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        format!(
            "internal error in the native core's {stage} stage: {reason} (a bug in agui-pipeline; \
             AGUI_PIPELINE_PURE=1 runs the Python core instead)"
        )
    })
}

/// What a read gave: complete frames with their region, and, when the frame held after them
/// is over the limit, its size and whether that is an SSE event's size as sent.
#[derive(IntoPyObject)]
enum Fed<'py> {
    Frames(Bound<'py, PyList>, Bound<'py, PyBytes>),
    TooLarge(Bound<'py, PyList>, Bound<'py, PyBytes>, usize, bool),
}

/// The framing parse names `name`; `reader` is who refuses any other.
fn framing_named(name: &str, reader: &str) -> PyResult<Framing> {
    match name {
        "sse" => Ok(Framing::Sse),
        "jsonl" => Ok(Framing::JsonLines),
        other => Err(PyValueError::new_err(format!(
            "{reader} reads 'sse' or 'jsonl', not {other:?}"
        ))),
    }
}

/// parse's framer for one stream: `feed` a read, get its complete frames.
#[pyclass(module = "agui_pipeline._native")]
struct Framer {
    framer: framing::Framer,
    framing: Framing,
}

#[pymethods]
impl Framer {
    #[new]
    fn new(framing: &str, max_frame_bytes: usize) -> PyResult<Self> {
        let framing = framing_named(framing, "the native framer")?;
        Ok(Framer {
            framer: framing::Framer::new(framing, max_frame_bytes),
            framing,
        })
    }

    /// `None` when the read completes no frame; otherwise the frames' payloads and the bytes
    /// they were cut from (the region parse's integer search reads); and, when the frame held
    /// past the last boundary is over the limit, its size and whether it is measured as sent
    /// (parse decodes the frames, then raises LIMIT_FRAME_SIZE).
    fn feed<'py>(&mut self, py: Python<'py>, chunk: &[u8]) -> PyResult<Option<Fed<'py>>> {
        let framing = self.framing;
        let framer = &mut self.framer;
        let mut payloads = Vec::new();
        // The bytes the frames were cut from, as one region: the framer hands a held frame
        // and the rest of the read apart, a boundary between them.
        let mut region = Vec::new();
        let mut pieces = 0;
        let fed = guarded("parse", || {
            framer.feed(chunk, |piece| {
                each_payload(framing, piece, |payload| {
                    payloads.push(PyBytes::new(py, payload));
                });
                if pieces > 0 {
                    region.extend_from_slice(framing.boundary());
                }
                region.extend_from_slice(piece);
                pieces += 1;
                Ok::<(), ()>(())
            })
        })
        .map_err(InternalError::new_err)?;
        let region = PyBytes::new(py, &region);
        match fed {
            (None, None) => Ok(None),
            (Some(_), None) => Ok(Some(Fed::Frames(PyList::new(py, payloads)?, region))),
            (_, Some(FrameTooLarge { size, as_sent })) => {
                let payloads = PyList::new(py, payloads)?;
                Ok(Some(Fed::TooLarge(payloads, region, size, as_sent)))
            }
        }
    }

    /// Whether nothing is held (no partial frame, no CR waiting for its LF).
    #[getter]
    fn idle(&self) -> bool {
        self.framer.is_idle()
    }

    /// The bytes held at the end of the stream (the framer is left empty).
    fn take_rest<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.framer.take_rest())
    }
}

/// enforce's fast check of every event type (`checks.rs`), built once from the reference's plan.
#[pyclass(module = "agui_pipeline._native", frozen)]
struct Checks {
    /// Shared with every judge made from it: built once per process, not per stream.
    checks: Arc<checks::Checks>,
    /// The schema's names, interned, for the events judges built from it deliver.
    known: Arc<build::Known>,
}

#[pymethods]
impl Checks {
    #[new]
    fn new(py: Python<'_>, rows: &Bound<'_, PyList>, events: &Bound<'_, PyDict>) -> PyResult<Self> {
        let built = guarded("enforce", || checks::Checks::from_plan(rows, events))
            .map_err(InternalError::new_err)??;
        let known = build::Known::new(py, &built);
        Ok(Checks {
            checks: Arc::new(built),
            known: Arc::new(known),
        })
    }

    /// The position of the first event that is not clean (`len(events)` if none), and, for
    /// each clean event before it holding a member the check does not look into, how many
    /// events follow it (what parse's integer search reads: `IntegerSearch.search`).
    fn scan(
        &self,
        events: &Bound<'_, PyList>,
        types: &Bound<'_, PyList>,
    ) -> PyResult<(usize, Vec<usize>)> {
        let checks = &self.checks;
        guarded("enforce", || {
            let count = events.len().min(types.len());
            let mut opened = Vec::new();
            let mut last: Option<(&str, usize)> = None;
            for position in 0..count {
                let (Ok(event), Ok(kind)) = (events.get_item(position), types.get_item(position))
                else {
                    return (position, opened);
                };
                // Runs of one type (text deltas) look their check up once.
                let known = checks::type_name(&kind).and_then(|name| match last {
                    Some((previous, node)) if previous == name => Some((previous, node)),
                    _ => checks.event_node(name),
                });
                let Some((name, node)) = known else {
                    return (position, opened);
                };
                last = Some((name, node));
                match checks.event(node, &event) {
                    Verdict::NotClean => return (position, opened),
                    Verdict::Clean => {}
                    Verdict::CleanWithOpenMembers => opened.push(count - 1 - position),
                }
            }
            (count, opened)
        })
        .map_err(InternalError::new_err)
    }

    /// Whether `event`, of type `kind`, is clean (the fused pass's one event).
    fn clean(&self, event: &Bound<'_, PyAny>, kind: &Bound<'_, PyAny>) -> PyResult<bool> {
        let checks = &self.checks;
        guarded("enforce", || {
            checks::type_name(kind)
                .and_then(|name| checks.event_node(name))
                .is_some_and(|(_, node)| checks.event(node, event) != Verdict::NotClean)
        })
        .map_err(InternalError::new_err)
    }
}

/// The probe the differential test drives (`tests/test_native_state.py`): the state after
/// `snapshot` (when given) and then each of `patches`, each read as JSON by serde_json, as
/// [`patch::State`] holds it, serialised; `None` when the mirror is unsure at any step.
#[pyfunction]
fn state_probe(
    snapshot: Option<&[u8]>,
    patches: Vec<Vec<u8>>,
    max_state_bytes: usize,
    max_patch_work: usize,
    max_depth: usize,
) -> PyResult<Option<Vec<u8>>> {
    let read = |text: &[u8]| {
        serde_json::from_slice::<serde_json::Value>(text)
            .map_err(|error| format!("state_probe reads JSON: {error}"))
    };
    let probed = guarded("state", || -> Result<Option<Vec<u8>>, String> {
        let mut state = patch::State::new(patch::StateLimits {
            max_state_bytes,
            max_patch_work,
            max_depth,
        });
        if let Some(snapshot) = snapshot
            && state.take(&read(snapshot)?).is_err()
        {
            return Ok(None);
        }
        for delta in &patches {
            if state.patch(&read(delta)?).is_err() {
                return Ok(None);
            }
        }
        serde_json::to_vec(state.document())
            .map(Some)
            .map_err(|error| error.to_string())
    })
    .map_err(InternalError::new_err)?;
    probed.map_err(PyValueError::new_err)
}

/// A run noted by the judge, as Python reads it: `("started", runId, threadId)`,
/// `("finished", index, frame or None)` (the frame when it carries an outcome), or
/// `("failed", index, message)`.
#[derive(IntoPyObject)]
enum Note<'py> {
    Started(&'static str, String, String),
    Finished(&'static str, usize, Option<Bound<'py, PyBytes>>),
    Failed(&'static str, usize, String),
}

/// A run input as the judge takes it (`judge::RunInput`): thread, run, listed tools, history
/// ids, history characters (from above), state as JSON text.
type JudgeInput = (
    String,
    String,
    Option<Vec<String>>,
    Vec<String>,
    usize,
    Option<String>,
);

/// The judge of one stream (`judge.rs`): `feed` each read, then `finish`; clean, or `unsure`
/// says why the reference must judge it.
#[pyclass(module = "agui_pipeline._native")]
struct Judge {
    judge: judge::Judge,
    /// Whether the events the judge passes are built for the caller (deliver mode).
    delivers: bool,
    /// The names the events built share: the schema's, interned, and the stream's own.
    names: build::Names,
    /// The event types metadata reads whatever their members (`Built::marks`).
    marked_types: Vec<String>,
    /// The only event types built, when not every event is (`Built`'s `built_types`).
    built_types: Option<build::TypeSet>,
    /// What `finish` built, for `take_ended`.
    ended: Option<Py<PyList>>,
    /// The positions, among the events the last read passed, of those built that metadata must
    /// read (`Built::marks`), for `take_marked`: asked only of a read of several events, so a
    /// live read of one event pays nothing more for them.
    marked: Vec<usize>,
}

#[pymethods]
impl Judge {
    /// `limits`: max_frame_bytes, max_depth, max_open_items, max_text_chars,
    /// max_conversation_chars, max_items, max_run_ids, max_state_bytes, max_patch_work;
    /// `quiet_versions`: the protocolVersion values compat is quiet about; `input`: the run
    /// input the stream answers (`JudgeInput`), if known; `delivers`: for a judge that builds
    /// the events it passes, as `orjson.loads` builds them, for `feed` and `take_ended` to
    /// return (`None`: it builds none), the event types whose events it marks whatever their
    /// members (besides every event with a `metadata` member), and the only event types it
    /// builds, the others passed over (`None`: every one); `stands_in`: the last of the
    /// reference's stages the judge stands in for, `"lint"` (every rule) or `"compat"` (the
    /// frames and compat alone: `judge::StandsIn`).
    #[new]
    #[pyo3(signature = (framing, checks, limits, quiet_versions, input=None, delivers=None, stands_in="lint"))]
    fn new(
        framing: &str,
        checks: &Checks,
        limits: (
            usize,
            usize,
            usize,
            usize,
            usize,
            usize,
            usize,
            usize,
            usize,
        ),
        quiet_versions: Vec<String>,
        input: Option<JudgeInput>,
        delivers: Option<(Vec<String>, Option<Vec<String>>)>,
        stands_in: &str,
    ) -> PyResult<Self> {
        let framing = framing_named(framing, "the judge")?;
        let stands_in = match stands_in {
            "lint" => judge::StandsIn::Lint,
            "compat" => judge::StandsIn::Compat,
            other => {
                return Err(PyValueError::new_err(format!(
                    "the judge stands in for parse up to 'lint' or 'compat', not {other:?}"
                )));
            }
        };
        let (
            max_frame_bytes,
            max_depth,
            max_open_items,
            max_text_chars,
            max_conversation_chars,
            max_items,
            max_run_ids,
            max_state_bytes,
            max_patch_work,
        ) = limits;
        let limits = judge::Limits {
            max_frame_bytes,
            max_depth,
            max_open_items,
            max_text_chars,
            max_conversation_chars,
            max_items,
            max_run_ids,
            max_state_bytes,
            max_patch_work,
        };
        let input = input.map(
            |(thread_id, run_id, tools, history_ids, history_chars, state)| judge::RunInput {
                thread_id,
                run_id,
                tools,
                history_ids,
                history_chars,
                state,
            },
        );
        // Taking the run input reads its state (serde_json, the state's mirror): guarded as
        // every read is.
        let names = build::Names::new(Arc::clone(&checks.known));
        let checks = Arc::clone(&checks.checks);
        let judge = guarded("judge", || {
            judge::Judge::new(framing, stands_in, checks, limits, quiet_versions, input)
        })
        .map_err(InternalError::new_err)?;
        let delivering = delivers.is_some();
        let (marked_types, built_types) = delivers.unwrap_or_default();
        Ok(Judge {
            judge,
            delivers: delivering,
            names,
            marked_types,
            built_types: built_types.map(|types| types.into_iter().collect()),
            ended: None,
            marked: Vec::new(),
        })
    }

    /// One read of the stream, from its first frame on; for a judge made to deliver, the
    /// events it passed of the read, when it is still sure of the stream after it (`None`:
    /// none, or it is unsure; a live read is often one event), and those it marked are then
    /// `take_marked`'s.
    fn feed<'py>(&mut self, py: Python<'py>, chunk: &[u8]) -> PyResult<Option<Bound<'py, PyList>>> {
        let Judge {
            judge,
            delivers,
            names,
            marked_types,
            built_types,
            marked,
            ..
        } = self;
        if !*delivers {
            guarded("judge", || judge.feed(chunk, &mut ())).map_err(InternalError::new_err)?;
            return Ok(None);
        }
        let mut built = build::Built::new(py, names, marked_types, built_types.as_ref());
        guarded("judge", || judge.feed(chunk, &mut built)).map_err(InternalError::new_err)?;
        let passed = built.into_list(judge.unsure().is_none())?;
        Ok(passed.map(|(events, marks)| {
            *marked = marks;
            events
        }))
    }

    /// The end of the stream: whether it was clean to its end. For a judge made to deliver,
    /// the events the end passed (a JSON line without a newline) are then `take_ended`'s.
    fn finish(&mut self, py: Python<'_>) -> PyResult<bool> {
        let Judge {
            judge,
            delivers,
            names,
            marked_types,
            built_types,
            ended,
            marked,
        } = self;
        let mut built = build::Built::new(py, names, marked_types, built_types.as_ref());
        let clean = if *delivers {
            guarded("judge", || judge.finish(&mut built))
        } else {
            guarded("judge", || judge.finish(&mut ()))
        }
        .map_err(InternalError::new_err)?;
        *ended = built.into_list(clean)?.map(|(events, marks)| {
            *marked = marks;
            events.unbind()
        });
        Ok(clean)
    }

    /// For a judge made to deliver that finished clean, the events the end passed (`None`:
    /// none).
    fn take_ended<'py>(&mut self, py: Python<'py>) -> Option<Bound<'py, PyList>> {
        self.ended.take().map(|events| events.into_bound(py))
    }

    /// The positions, among the events the last `feed` (or `finish`) passed, of those built
    /// that carry a `metadata` member or are of one of `marked_types`: what metadata must read.
    fn take_marked(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.marked)
    }

    /// Why the judge left the stream to the reference (`None` while it has not).
    #[getter]
    fn unsure(&self) -> Option<&'static str> {
        self.judge.unsure()
    }

    /// Frames decoded so far.
    #[getter]
    fn read(&self) -> usize {
        self.judge.read()
    }

    /// Whether runs were noted since `take_runs` was last called.
    #[getter]
    fn noted(&self) -> bool {
        self.judge.noted()
    }

    /// The runs noted since the last call, in order.
    fn take_runs<'py>(&mut self, py: Python<'py>) -> Vec<Note<'py>> {
        self.judge
            .take_notes()
            .into_iter()
            .map(|note| match note {
                RunNote::Started { run_id, thread_id } => {
                    Note::Started("started", run_id, thread_id)
                }
                RunNote::Finished { index, outcome } => Note::Finished(
                    "finished",
                    index,
                    outcome.map(|frame| PyBytes::new(py, &frame)),
                ),
                RunNote::Failed { index, message } => Note::Failed("failed", index, message),
            })
            .collect()
    }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_class::<Framer>()?;
    module.add_class::<Checks>()?;
    module.add_class::<Judge>()?;
    module.add_function(wrap_pyfunction!(state_probe, module)?)?;
    module.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::guarded;

    #[test]
    fn a_panic_becomes_a_message_naming_the_stage() {
        let message = guarded("parse", || -> u8 { panic!("index out of range") }).unwrap_err();
        assert!(message.starts_with("internal error in the native core's parse stage: index out"));
        assert_eq!(guarded("parse", || 7), Ok(7));
    }
}
