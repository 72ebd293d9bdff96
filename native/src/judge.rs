//! The judge: a whole stream read in Rust, for a caller that asks only for the verdict.
//!
//! `check FILE` wants the verdict, the diagnostics and the counters, never the events, so the
//! Python objects the pipeline builds per event are its whole cost. The judge frames, decodes
//! and follows the stream here and answers one of two things: the stream is clean — it
//! completes, and no stage of the reference pipeline (parse, compat, enforce, expand, verify,
//! lint, metadata, the Conversation) would say anything about it — with its counters and its
//! runs; or it is unsure, and the caller runs the reference over the stream from its start.
//!
//! Deliver mode (`pipeline/_engine/deliver.py`) runs the same judge read by read in front of
//! the stages that hand events to the application: while it is sure, the frames it passed are
//! those events as sent, and it hands each one, decoded, to the caller's `Deliver` (which builds
//! the Python event from the decoding the judge made anyway); where it becomes unsure, the caller
//! drops what it was handed of that read and hands the stream to the reference from there on.
//!
//! So the judge words no diagnostic and never decides a verdict other than "completed": every
//! finding, warning or rejection comes from the reference, and a stream the judge is unsure of
//! costs the judge's pass on top of the reference's. Each rule below is the reference's rule
//! restricted to what the judge follows, and wherever following a rule exactly would take more
//! than that (subagents, snapshots, chunks, retired shapes, an echoed run input, an id used twice
//! or one of the run input's history), the judge is unsure instead: it may give up on a clean
//! stream, never pass one that is not.
//! Where each rule lives in the reference is named beside it.
//!
//! Everything it keeps is bounded by the pipeline's limits: items by `max_items`, open ones by
//! `max_open_items`, runs' ids by `max_run_ids`, a run's text by `max_text_chars`, the state by
//! `max_state_bytes` (past any of them it is unsure, and the reference says what happens).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::checks::{Checks, Verdict, same_text};
use crate::decode::{Decoded, Members, member};
use crate::framing::{Framer, Framing, each_payload, sse_event_bound};
use crate::patch::{State, StateLimits};

/// Why the judge left a stream to the reference (for tests and for `--explain`-style curiosity:
/// never a diagnostic).
pub type Unsure = &'static str;

/// The pipeline's limits the judge keeps to (`Limits` in `pipeline/options.py`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_frame_bytes: usize,
    pub max_depth: usize,
    pub max_open_items: usize,
    pub max_text_chars: usize,
    pub max_conversation_chars: usize,
    pub max_items: usize,
    pub max_run_ids: usize,
    pub max_state_bytes: usize,
    pub max_patch_work: usize,
}

/// What the caller records of a run (verify's `RunRecord`), in stream order.
#[derive(Debug, PartialEq)]
pub enum RunNote {
    Started {
        run_id: String,
        thread_id: String,
    },
    /// `RUN_FINISHED` at `index`; `outcome` is its frame when it carries one (the caller reads
    /// the outcome from it: one per run, not per event).
    Finished {
        index: usize,
        outcome: Option<Vec<u8>>,
    },
    Failed {
        index: usize,
        message: String,
    },
}

/// Where the stream stands with respect to its runs (verify's `Phase`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    BeforeFirst,
    Active,
    Finished,
    Errored,
}

/// What an id names, as far as the judge follows it: the union of what verify, lint and the
/// Conversation record under a message id.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Known {
    /// A text message; whether its role is `assistant` (the Conversation hangs calls only there).
    Text {
        assistant: bool,
    },
    Reasoning,
    /// A tool message a `TOOL_CALL_RESULT` minted.
    Tool,
    /// A message only a tool call named as its parent (an assistant message to the Conversation).
    Carrier,
    /// An id the run input's history holds (a message's or a tool call's): every rule that
    /// looks it up judges the stream against the history, which the judge does not follow.
    History,
}

/// The run input a stream answers, as far as the judge follows it (`RunInput` below, which the
/// caller reads from the input: `input_for_judge` in `pipeline/_engine/judging.py`).
#[derive(Debug)]
struct Answering {
    thread_id: String,
    run_id: String,
    /// The application's tools, when the input lists them.
    tools: Option<HashSet<String>>,
}

/// The run input a stream answers, read by the caller into what the judge's rules need: the
/// requested thread and run, the tools it lists (`None`: it lists none), every id its history
/// holds, an upper bound of the characters of text the Conversation takes from it, and its state
/// as JSON, if it has one.
#[derive(Debug)]
pub struct RunInput {
    pub thread_id: String,
    pub run_id: String,
    pub tools: Option<Vec<String>>,
    pub history_ids: Vec<String>,
    pub history_chars: usize,
    pub state: Option<String>,
}

/// The kinds of item a run opens and closes (verify's open-item dicts), each with its set of
/// open ids in `Stream::open`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Item {
    Text,
    Reasoning,
    Call,
    /// A reasoning span (`REASONING_START`): it namespaces nothing.
    Span,
    Step,
}

/// The item the last delta went to, known to be open, and for a call its place in `run_calls`:
/// deltas come in runs to one item, and this spares each its lookups. It is let go whenever an
/// item closes; its buffer is kept for the next one (the items alternate).
#[derive(Default)]
struct Recent {
    item: Option<Item>,
    id: String,
    at: usize,
}

impl Recent {
    /// Whether `id` is the item of `item`'s kind the last delta went to (so it is open).
    fn is(&self, item: Item, id: &str) -> bool {
        self.item == Some(item) && same_text(&self.id, id)
    }

    fn set(&mut self, item: Item, id: &str, at: usize) {
        self.item = Some(item);
        id.clone_into(&mut self.id);
        self.at = at;
    }

    fn forget(&mut self) {
        self.item = None;
    }
}

/// The rules' state for one stream.
struct Stream {
    stands_in: StandsIn,
    limits: Limits,
    quiet_versions: Vec<String>,
    phase: Phase,
    run: Option<(String, String)>,
    first_thread: Option<String>,
    run_ids: HashSet<String>,
    messages: HashMap<String, Known>,
    /// Every tool call the stream started → whether a result answered it.
    calls: HashMap<String, bool>,
    /// Messages and tool calls recorded, against `max_items` (verify's `_new_item`; the judge
    /// counts every id it records, a superset of verify's).
    items: usize,
    /// The ids open in this run, by `Item` (what `max_open_items` counts).
    open: [HashSet<String>; 5],
    /// This run's calls in order, with their argument text and whether they ended (lint's
    /// `_new_calls`, `_args` and `_ends`).
    run_calls: Vec<(String, String, bool)>,
    run_call_at: HashMap<String, usize>,
    /// The item the last delta went to, known to be open.
    recent: Recent,
    /// The last event's type and its check's node.
    last_type: Option<(String, usize)>,
    /// Characters of text and arguments this run streamed (lint's text budget).
    run_chars: usize,
    /// Characters the Conversation holds (`max_conversation_chars`).
    conversation_chars: usize,
    notes: Vec<RunNote>,
    /// The Conversation's state, as the reference holds it (`patch.rs`).
    state: State,
    /// The run input the stream answers, if the caller knows it.
    answering: Option<Answering>,
}

/// What a caller that delivers the events does with each frame the judge passes, decoded.
pub trait Deliver {
    fn deliver(&mut self, event: &Decoded<'_>);
}

/// The caller that asks only for the verdict: nothing is delivered.
impl Deliver for () {
    fn deliver(&mut self, _event: &Decoded<'_>) {}
}

/// The last of the reference's stages, from parse, whose work the judge stands in for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StandsIn {
    /// Parse to lint: every rule below (a pipeline whose stages of the user's all come after
    /// lint, or that has none).
    Lint,
    /// Parse and compat only (a pipeline with a stage of the user's before lint, which must
    /// be handed the events compat passes): the frames as parse reads them, each one that
    /// compat would leave as sent (`compat_quiet`); enforce and every stage after it run in
    /// Python on what the judge passes.
    Compat,
}

/// The judge of one stream.
pub struct Judge {
    framer: Framer,
    framing: Framing,
    /// enforce's checks, built once per process and shared by every judge.
    checks: Arc<Checks>,
    stream: Stream,
    read: usize,
    unsure: Option<Unsure>,
}

impl Judge {
    pub fn new(
        framing: Framing,
        stands_in: StandsIn,
        checks: Arc<Checks>,
        limits: Limits,
        quiet_versions: Vec<String>,
        input: Option<RunInput>,
    ) -> Judge {
        let mut judge = Judge {
            framer: Framer::new(framing, limits.max_frame_bytes),
            framing,
            checks,
            stream: Stream {
                stands_in,
                limits,
                quiet_versions,
                phase: Phase::BeforeFirst,
                run: None,
                first_thread: None,
                run_ids: HashSet::new(),
                messages: HashMap::new(),
                calls: HashMap::new(),
                items: 0,
                open: Default::default(),
                run_calls: Vec::new(),
                run_call_at: HashMap::new(),
                recent: Recent::default(),
                last_type: None,
                run_chars: 0,
                conversation_chars: 0,
                notes: Vec::new(),
                state: State::new(StateLimits {
                    max_state_bytes: limits.max_state_bytes,
                    max_patch_work: limits.max_patch_work,
                    max_depth: limits.max_depth,
                }),
                answering: None,
            },
            read: 0,
            unsure: None,
        };
        if let Some(input) = input {
            judge.unsure = judge.stream.answer(input).err();
        }
        judge
    }

    /// Why the judge gave up on the stream, once it has.
    pub fn unsure(&self) -> Option<Unsure> {
        self.unsure
    }

    /// Frames decoded so far (the `read` counter; on a clean stream every one is delivered).
    pub fn read(&self) -> usize {
        self.read
    }

    /// Whether runs were noted since the last `take_notes`.
    pub fn noted(&self) -> bool {
        !self.stream.notes.is_empty()
    }

    /// The runs noted since the last call.
    pub fn take_notes(&mut self) -> Vec<RunNote> {
        std::mem::take(&mut self.stream.notes)
    }

    /// One read of the stream (its bytes from the first frame on: the caller has taken the
    /// byte order mark off and told the framing, as parse's `_start` does). Each frame judged
    /// goes to `deliver` as it passes; only what it was handed of a read the judge is still
    /// sure of after the read may be delivered.
    pub fn feed(&mut self, chunk: &[u8], deliver: &mut impl Deliver) {
        if self.unsure.is_some() {
            return;
        }
        let Judge {
            framer,
            framing,
            checks,
            stream,
            read,
            ..
        } = self;
        let framing = *framing;
        let (judged, too_large) = framer.feed(chunk, |region| {
            frames(framing, region, checks, stream, read, deliver)
        });
        if let Some(Err(unsure)) = judged {
            self.unsure = Some(unsure);
        } else if too_large.is_some() {
            self.unsure = Some("a frame over max_frame_bytes");
        }
    }

    /// The end of the stream: whether it was clean to its end (a JSON line the stream ends
    /// without a newline goes to `deliver`, as `feed`'s frames do).
    pub fn finish(&mut self, deliver: &mut impl Deliver) -> bool {
        if self.unsure.is_none() {
            let rest = self.framer.take_rest();
            let ends = if rest.iter().all(|byte| b" \t\r\n".contains(byte)) {
                Ok(())
            } else if self.framing == Framing::JsonLines {
                // The last line needs no newline (parse's `finish`).
                let Judge {
                    checks,
                    stream,
                    read,
                    ..
                } = self;
                frame(&rest, checks, stream, read, deliver)
            } else {
                Err("an SSE event the stream ended inside")
            };
            // Standing in for compat alone, the judge does not follow runs: verify, in Python,
            // says how the stream ended.
            let closed = self.stream.stands_in == StandsIn::Compat
                || matches!(self.stream.phase, Phase::Finished | Phase::Errored);
            let ended = ends.and(if closed {
                Ok(())
            } else {
                Err("a stream that ends with a run active or before any run")
            });
            if let Err(unsure) = ended {
                self.unsure = Some(unsure);
            }
        }
        self.unsure.is_none()
    }
}

/// The frames of one read's complete region.
fn frames(
    framing: Framing,
    region: &[u8],
    checks: &Checks,
    stream: &mut Stream,
    read: &mut usize,
    deliver: &mut impl Deliver,
) -> Result<(), Unsure> {
    if framing == Framing::Sse && region.len() > sse_event_bound(stream.limits.max_frame_bytes) {
        return Err("a read whose SSE events may be over the limit as sent");
    }
    let mut judged = Ok(());
    each_payload(framing, region, |payload| {
        if judged.is_ok() {
            judged = frame(payload, checks, stream, read, deliver);
        }
    });
    judged
}

/// Bytes Python's `bytes.isspace` calls blank: a frame of only these is skipped.
fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Whether a payload may nest past `max_depth`: each level takes two bytes and opens with `[`
/// or `{`, so a payload no longer than twice the limit, or with no more openers than the limit,
/// cannot (parse's own first tests; a `[` inside a string counts too, which errs on the safe
/// side).
fn may_nest_too_deep(payload: &[u8], max_depth: usize) -> bool {
    payload.len() / 2 > max_depth
        && payload
            .iter()
            .filter(|byte| matches!(byte, b'[' | b'{'))
            .count()
            > max_depth
}

/// One frame: decoded, checked as enforce checks it, and followed.
fn frame(
    payload: &[u8],
    checks: &Checks,
    stream: &mut Stream,
    read: &mut usize,
    deliver: &mut impl Deliver,
) -> Result<(), Unsure> {
    if payload.len() > stream.limits.max_frame_bytes {
        return Err("a frame over max_frame_bytes");
    }
    if !payload.is_empty() && payload.iter().all(|byte| is_blank(*byte)) {
        return Ok(()); // a blank JSON line, or a data field of blanks: no frame
    }
    if may_nest_too_deep(payload, stream.limits.max_depth) {
        return Err("a frame that may nest past max_depth");
    }
    let Some(value) = Decoded::read(payload) else {
        return Err("a frame that is not JSON as the reference reads it alike");
    };
    let index = *read;
    *read += 1;
    let Some(event) = value.as_object() else {
        return Err("a frame that is not an object");
    };
    let Some(kind) = member(event, "type").and_then(Decoded::as_str) else {
        return Err("an event without a string type");
    };
    if stream.stands_in == StandsIn::Compat {
        compat_quiet(kind, event, &stream.quiet_versions)?;
        deliver.deliver(&value);
        return Ok(());
    }
    let node = match &stream.last_type {
        Some((known, node)) if same_text(known, kind) => *node, // deltas come in runs of one type
        _ => {
            let Some((_, node)) = checks.event_node(kind) else {
                return Err("an event type enforce does not know");
            };
            // The types alternate: the buffer is reused, not made anew each time.
            let (last, at) = stream.last_type.get_or_insert_with(Default::default);
            kind.clone_into(last);
            *at = node;
            node
        }
    };
    if checks.event(node, &value) == Verdict::NotClean {
        return Err("an event enforce's check does not pass");
    }
    stream.event(kind, event, payload, index)?;
    deliver.deliver(&value);
    Ok(())
}

/// Whether compat (`stages/compat.py`) leaves an event exactly as sent and says nothing of it,
/// the peer's version gating no shim (the caller's to know): no retired event type, no retired
/// `null` or legacy part where compat looks for one (on the event, and in the documents it
/// carries: a run's echoed input, a snapshot's messages, a tool result's content parts), no
/// version its negotiation warns of. Any other type, known to the protocol or not, compat
/// passes on untouched.
fn compat_quiet(kind: &str, event: &Members<'_>, quiet_versions: &[String]) -> Result<(), Unsure> {
    let null = |field: &str| member(event, field).is_some_and(Decoded::is_null);
    if null("rawEvent") {
        return Err("a rawEvent sent as null (compat translates it)");
    }
    match kind {
        "THINKING_START"
        | "THINKING_END"
        | "THINKING_TEXT_MESSAGE_START"
        | "THINKING_TEXT_MESSAGE_CONTENT"
        | "THINKING_TEXT_MESSAGE_END" => Err("a retired event type compat translates"),
        "TOOL_CALL_START" | "TOOL_CALL_CHUNK" if null("parentMessageId") => {
            Err("a parentMessageId sent as null (compat translates it)")
        }
        "RUN_FINISHED" if null("outcome") || null("result") => {
            Err("a run's outcome or result sent as null (compat translates it)")
        }
        "SUBAGENT_FINISHED" if null("result") => {
            Err("a subagent's result sent as null (compat translates it)")
        }
        "RUN_STARTED" => {
            if member(event, "input").is_some_and(retired_input) {
                return Err("a run input with a retired shape (compat translates it)");
            }
            negotiation_quiet(event, quiet_versions)
        }
        "MESSAGES_SNAPSHOT" if retired_messages(member(event, "messages")) => {
            Err("a snapshot's message with a retired part (compat translates it)")
        }
        "TOOL_CALL_RESULT" if retired_parts(member(event, "content")) => {
            Err("a content part compat translates")
        }
        _ => Ok(()),
    }
}

/// compat's version negotiation (`Compat._negotiate`): quiet about a run that declares no
/// `protocolVersion`, one of `quiet_versions`, or one that is not a string (enforce's to
/// refuse).
fn negotiation_quiet(event: &Members<'_>, quiet_versions: &[String]) -> Result<(), Unsure> {
    match member(event, "protocolVersion").and_then(Decoded::as_str) {
        Some(version) if !quiet_versions.iter().any(|known| known == version) => {
            Err("a protocolVersion compat may warn of")
        }
        _ => Ok(()),
    }
}

/// Whether a content part is one compat translates (`model/retired.py`, `upgrade_parts`): a
/// legacy `binary` part, or a `metadata` sent as null (compat drops it on a media part; the
/// judge asks it of any part).
fn retired_part(part: &Decoded<'_>) -> bool {
    part.get("type").and_then(Decoded::as_str) == Some("binary")
        || part.get("metadata").is_some_and(Decoded::is_null)
}

/// Whether a list of content parts holds one compat translates (anything but a list: none).
fn retired_parts(content: Option<&Decoded<'_>>) -> bool {
    matches!(content, Some(Decoded::List(parts)) if parts.iter().any(retired_part))
}

/// Whether a list of messages holds a content part compat translates (`upgrade_messages`).
fn retired_messages(messages: Option<&Decoded<'_>>) -> bool {
    matches!(messages, Some(Decoded::List(items))
        if items.iter().any(|message| retired_parts(message.get("content"))))
}

/// Whether an echoed run input holds a shape compat translates (`upgrade_input`): a
/// `forwardedProps`, a tool's `parameters` or a resume entry's `payload` sent as null, or a
/// message's retired part.
fn retired_input(input: &Decoded<'_>) -> bool {
    let null = |holder: &Decoded<'_>, field: &str| holder.get(field).is_some_and(Decoded::is_null);
    let any_null = |list: Option<&Decoded<'_>>, field: &str| match list {
        Some(Decoded::List(items)) => items.iter().any(|item| null(item, field)),
        _ => false,
    };
    null(input, "forwardedProps")
        || any_null(input.get("tools"), "parameters")
        || any_null(input.get("resume"), "payload")
        || retired_messages(input.get("messages"))
}

fn text<'a>(event: &'a Members<'_>, field: &str) -> Result<&'a str, Unsure> {
    // enforce's check has passed: a required string is there. A miss is the judge's own
    // mistake about the schema, and the reference is the safe answer to it.
    member(event, field)
        .and_then(Decoded::as_str)
        .ok_or("a member the judge expected to be a string")
}

/// Characters of a string as Python counts them (code points).
fn chars(text: &str) -> usize {
    text.chars().count()
}

impl Stream {
    /// The run input the stream answers, taken in before its first event: its history's ids
    /// known as history (verify's `_learn_history`, lint's `_learn_input`), its text counted
    /// toward the Conversation's (from above), its state taken as the Conversation takes it.
    fn answer(&mut self, input: RunInput) -> Result<(), Unsure> {
        for id in input.history_ids {
            self.messages.insert(id.clone(), Known::History);
            self.calls.insert(id, true); // a result for it would be a second one
        }
        self.conversation_chars = input.history_chars;
        if self.conversation_chars > self.limits.max_conversation_chars {
            return Err("a run input with more text than max_conversation_chars");
        }
        if let Some(state) = input.state {
            let Ok(state) = serde_json::from_str::<Value>(&state) else {
                return Err("a run input's state serde_json does not read");
            };
            self.state
                .take(&state)
                .map_err(|_| "a run input's state the reference must take")?;
        }
        self.answering = Some(Answering {
            thread_id: input.thread_id,
            run_id: input.run_id,
            tools: input.tools.map(HashSet::from_iter),
        });
        Ok(())
    }

    /// One event enforce passed clean.
    fn event(
        &mut self,
        kind: &str,
        event: &Members<'_>,
        payload: &[u8],
        index: usize,
    ) -> Result<(), Unsure> {
        for (name, value) in event {
            match name.as_ref() {
                // compat (stages/compat.py): a retired null is translated with a warning.
                "rawEvent" if value.is_null() => {
                    return Err("a rawEvent sent as null (compat translates it)");
                }
                // Attribution (verify, lint, the Conversation): subagents are not followed here.
                "subagentRunId" => return Err("an event attributed to a subagent"),
                _ => {}
            }
        }
        if kind == "RUN_STARTED" {
            return self.run_started(event);
        }
        if self.phase != Phase::Active {
            // verify's `_between_runs`: only a run's start or error, outside a run.
            // (A RUN_ERROR before the first run, or after a finish, is one verify admits; the
            // judge leaves it to the reference all the same.)
            return Err("an event outside a run");
        }
        match kind {
            "RUN_FINISHED" => self.run_finished(event, payload, index),
            "RUN_ERROR" => self.run_error(event, index),
            "STEP_STARTED" => self.opened(Item::Step, text(event, "stepName")?),
            "STEP_FINISHED" => self.closed(Item::Step, text(event, "stepName")?),
            "TEXT_MESSAGE_START" => {
                let role = member(event, "role")
                    .and_then(Decoded::as_str)
                    .unwrap_or("assistant");
                self.message_start(
                    text(event, "messageId")?,
                    Known::Text {
                        assistant: role == "assistant",
                    },
                )
            }
            "REASONING_MESSAGE_START" => {
                self.message_start(text(event, "messageId")?, Known::Reasoning)
            }
            "TEXT_MESSAGE_CONTENT" | "REASONING_MESSAGE_CONTENT" => {
                let item = if kind == "TEXT_MESSAGE_CONTENT" {
                    Item::Text
                } else {
                    Item::Reasoning
                };
                let message = text(event, "messageId")?;
                if !self.recent.is(item, message) {
                    if !self.open[item as usize].contains(message) {
                        return Err("a delta to an item that is not open");
                    }
                    self.recent.set(item, message, 0);
                }
                self.streamed(chars(text(event, "delta")?))
            }
            "TEXT_MESSAGE_END" => self.closed(Item::Text, text(event, "messageId")?),
            "REASONING_MESSAGE_END" => self.closed(Item::Reasoning, text(event, "messageId")?),
            "REASONING_START" => self.opened(Item::Span, text(event, "messageId")?),
            "REASONING_END" => self.closed(Item::Span, text(event, "messageId")?),
            "TOOL_CALL_START" => self.call_start(event),
            "TOOL_CALL_ARGS" => {
                let call = text(event, "toolCallId")?;
                let at = if self.recent.is(Item::Call, call) {
                    self.recent.at
                } else {
                    if !self.open[Item::Call as usize].contains(call) {
                        return Err("arguments to a call that is not open");
                    }
                    // Every open call was started in this run, so it has its place.
                    let at = *self
                        .run_call_at
                        .get(call)
                        .ok_or("an open call without its place in the run")?;
                    self.recent.set(Item::Call, call, at);
                    at
                };
                let delta = text(event, "delta")?;
                self.streamed(chars(delta))?;
                self.run_calls[at].1.push_str(delta);
                Ok(())
            }
            "TOOL_CALL_END" => {
                let call = text(event, "toolCallId")?;
                self.closed(Item::Call, call)?;
                if let Some(&at) = self.run_call_at.get(call) {
                    self.run_calls[at].2 = true;
                }
                Ok(())
            }
            "TOOL_CALL_RESULT" => self.call_result(event),
            "STATE_SNAPSHOT" | "STATE_DELTA" => self.state_event(kind, payload),
            "CUSTOM" | "RAW" => Ok(()),
            _ => Err("an event type the judge does not follow"),
        }
    }

    fn run_started(&mut self, event: &Members<'_>) -> Result<(), Unsure> {
        if self.phase == Phase::Active {
            return Err("a run started inside a run"); // verify.nested-run
        }
        if member(event, "input").is_some() {
            return Err("a run that echoes its input"); // compat, verify and lint read it
        }
        // enforce's check has passed: a protocolVersion sent is a string.
        negotiation_quiet(event, &self.quiet_versions)?;
        let run_id = text(event, "runId")?;
        let thread_id = text(event, "threadId")?;
        // lint.run-identity against the run input: every run on its thread, and the first one
        // the run it asked for (lint's finish looks for it among the first runs).
        if let Some(answering) = &self.answering
            && (thread_id != answering.thread_id
                || (self.run_ids.is_empty() && run_id != answering.run_id))
        {
            return Err("a run other than the one its input asked for");
        }
        // lint: a runId reused, the thread changed.
        if self.run_ids.len() >= self.limits.max_run_ids || !self.run_ids.insert(run_id.to_owned())
        {
            return Err("a runId seen before, or more runs than max_run_ids");
        }
        match &self.first_thread {
            None => self.first_thread = Some(thread_id.to_owned()),
            Some(first) if first != thread_id => return Err("a run on another thread"),
            Some(_) => {}
        }
        self.run = Some((run_id.to_owned(), thread_id.to_owned()));
        self.phase = Phase::Active;
        self.notes.push(RunNote::Started {
            run_id: run_id.to_owned(),
            thread_id: thread_id.to_owned(),
        });
        Ok(())
    }

    fn run_finished(
        &mut self,
        event: &Members<'_>,
        payload: &[u8],
        index: usize,
    ) -> Result<(), Unsure> {
        // verify.open-at-finish
        if !self.open.iter().all(HashSet::is_empty) {
            return Err("a run finished with items open");
        }
        // compat's retired nulls; lint's and verify's outcomes: only success, nothing pending.
        if member(event, "result").is_some_and(Decoded::is_null) {
            return Err("a result sent as null");
        }
        if let Some(outcome) = member(event, "outcome") {
            let success = outcome.get("type").and_then(Decoded::as_str) == Some("success");
            let nothing_pending = match outcome.get("pendingToolCallIds") {
                None => true,
                Some(Decoded::List(named)) => named.is_empty(),
                Some(_) => false,
            };
            if !(success && nothing_pending) {
                return Err("an outcome other than a plain success");
            }
        }
        // lint.run-identity: the finish names the run it ends.
        let (run_id, thread_id) = self.run.as_ref().ok_or("a finish without its run")?;
        if member(event, "runId").and_then(Decoded::as_str) != Some(run_id)
            || member(event, "threadId").and_then(Decoded::as_str) != Some(thread_id)
        {
            return Err("a finish naming another run");
        }
        // lint's `_check_unlisted`: with the application's tools listed, a call the run leaves
        // unanswered is pending, whoever was to answer it.
        if self.answering.as_ref().is_some_and(|a| a.tools.is_some())
            && self
                .run_calls
                .iter()
                .any(|(call, _, _)| self.calls.get(call) != Some(&true))
        {
            return Err("a call left unanswered when the input lists its tools");
        }
        self.end_run(event)?;
        let outcome = member(event, "outcome").map(|_| payload.to_vec());
        self.notes.push(RunNote::Finished { index, outcome });
        self.phase = Phase::Finished;
        Ok(())
    }

    fn run_error(&mut self, event: &Members<'_>, index: usize) -> Result<(), Unsure> {
        if !self.open[Item::Call as usize].is_empty() {
            // lint keeps a call open past its run's error, and judges its result by it.
            return Err("a run error with tool calls open");
        }
        let message = text(event, "message")?.to_owned();
        self.end_run(event)?;
        self.notes.push(RunNote::Failed { index, message });
        self.phase = Phase::Errored;
        Ok(())
    }

    /// What lint's `_end_run` judges (usage, each call's arguments), and the run's state let go
    /// (verify's `_close_run_state`, lint's `_reset_run`).
    fn end_run(&mut self, event: &Members<'_>) -> Result<(), Unsure> {
        if let Some(usage) = member(event, "usage") {
            usage_adds_up(usage)?;
        }
        for (_, arguments, ended) in &self.run_calls {
            if *ended && !arguments.is_empty() && !is_json_document(arguments) {
                return Err("a call whose arguments lint may find are not JSON");
            }
        }
        self.open.iter_mut().for_each(HashSet::clear);
        self.run_calls.clear();
        self.run_call_at.clear();
        self.recent.forget();
        self.run_chars = 0;
        Ok(())
    }

    /// An item opened (verify's `_*_start`): not open already, and one more within
    /// `max_open_items`.
    fn opened(&mut self, item: Item, id: &str) -> Result<(), Unsure> {
        if self.open[item as usize].contains(id) {
            return Err("an item opened while it is open");
        }
        self.make_room()?;
        self.open[item as usize].insert(id.to_owned());
        Ok(())
    }

    /// An item closed (verify's `_*_end`): only while it is open. The last delta's item may be
    /// the one closing, so it is let go.
    fn closed(&mut self, item: Item, id: &str) -> Result<(), Unsure> {
        self.recent.forget();
        if !self.open[item as usize].remove(id) {
            return Err("the end of an item that is not open");
        }
        Ok(())
    }

    /// verify's `_make_room`: one more open item within `max_open_items`.
    fn make_room(&self) -> Result<(), Unsure> {
        let open: usize = self.open.iter().map(HashSet::len).sum();
        if open >= self.limits.max_open_items {
            return Err("more items open than max_open_items");
        }
        Ok(())
    }

    /// One more id recorded, within `max_items`.
    fn new_item(&mut self) -> Result<(), Unsure> {
        self.items += 1;
        if self.items > self.limits.max_items {
            return Err("more messages and tool calls than max_items");
        }
        Ok(())
    }

    /// Text streamed into an item: lint's budget for the run (`max_text_chars`, which also
    /// bounds each item's text, as every item lives in one run here) and the Conversation's.
    fn streamed(&mut self, count: usize) -> Result<(), Unsure> {
        self.run_chars += count;
        self.conversation_chars += count;
        if self.run_chars > self.limits.max_text_chars
            || self.conversation_chars > self.limits.max_conversation_chars
        {
            return Err("more text than max_text_chars or max_conversation_chars");
        }
        Ok(())
    }

    fn message_start(&mut self, message_id: &str, known: Known) -> Result<(), Unsure> {
        // An id met before (a reopened message, one a tool call named, a reuse) is judged by
        // rules the judge does not follow: verify's owners, lint's reuse, the Conversation's.
        if self.messages.contains_key(message_id) {
            return Err("a message id met before");
        }
        self.new_item()?;
        self.messages.insert(message_id.to_owned(), known);
        let item = if known == Known::Reasoning {
            Item::Reasoning
        } else {
            Item::Text
        };
        self.opened(item, message_id)
    }

    fn call_start(&mut self, event: &Members<'_>) -> Result<(), Unsure> {
        let call_id = text(event, "toolCallId")?;
        // lint: a call to one of the application's tools is pending, or answered in-stream.
        if let Some(Answering {
            tools: Some(tools), ..
        }) = &self.answering
            && tools.contains(text(event, "toolCallName")?)
        {
            return Err("a call to a tool the run input lists");
        }
        if self.calls.contains_key(call_id) {
            return Err("a tool call id met before"); // verify, lint.reopen-disagrees
        }
        let parent = match member(event, "parentMessageId") {
            None => call_id,
            Some(Decoded::Str(parent)) => parent,
            Some(_) => return Err("a parentMessageId that is not a string"), // compat's null
        };
        // The Conversation hangs a call on an assistant message, or makes one to carry it.
        match self.messages.get(parent) {
            None => {
                self.new_item()?;
                self.messages.insert(parent.to_owned(), Known::Carrier);
            }
            Some(Known::Carrier | Known::Text { assistant: true }) => {}
            Some(_) => return Err("a tool call whose parent is not an assistant message"),
        }
        self.new_item()?;
        self.calls.insert(call_id.to_owned(), false);
        self.opened(Item::Call, call_id)?;
        self.run_call_at
            .insert(call_id.to_owned(), self.run_calls.len());
        self.run_calls
            .push((call_id.to_owned(), String::new(), false));
        Ok(())
    }

    /// The Conversation's state (`PatchedDocuments.take_state`, `patch_state`): a snapshot
    /// taken, a patch applied, as the reference would, or unsure. The state is kept as
    /// serde_json's value, so the frame is read again as one (state events are few).
    fn state_event(&mut self, kind: &str, payload: &[u8]) -> Result<(), Unsure> {
        let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(payload) else {
            return Err("a state event serde_json does not read as an object");
        };
        let applied = if kind == "STATE_SNAPSHOT" {
            event
                .get("snapshot")
                .map(|snapshot| self.state.take(snapshot))
        } else {
            event.get("delta").map(|delta| self.state.patch(delta))
        };
        match applied {
            Some(Ok(())) => Ok(()),
            _ => Err("a state change the reference must make"),
        }
    }

    fn call_result(&mut self, event: &Members<'_>) -> Result<(), Unsure> {
        let call_id = text(event, "toolCallId")?;
        let message_id = text(event, "messageId")?;
        let content = content_chars(member(event, "content"))?;
        // lint: a result before its call ends, for a call nothing started, a second one.
        if self.open[Item::Call as usize].contains(call_id) {
            return Err("a tool result before its call ended");
        }
        let Some(answered) = self.calls.get_mut(call_id) else {
            return Err("a tool result for a call the stream did not start");
        };
        if *answered {
            return Err("a second tool result for one call");
        }
        *answered = true;
        // lint.message-id-reused: a result always mints a message of its own.
        if self.messages.contains_key(message_id) {
            return Err("a tool result under a message id met before");
        }
        self.new_item()?;
        self.messages.insert(message_id.to_owned(), Known::Tool);
        self.conversation_chars += content;
        if self.conversation_chars > self.limits.max_conversation_chars {
            return Err("more text than max_conversation_chars");
        }
        Ok(())
    }
}

/// What a tool result's content counts against `max_conversation_chars` (the Conversation's
/// `_text_chars`): a string's characters; for a list of content parts, its JSON text's bytes as
/// orjson writes them (bounded from above: `Decoded::written_bound`). Parts compat would change — a retired
/// `binary` part, a `metadata` sent as null — are the reference's to translate.
fn content_chars(content: Option<&Decoded<'_>>) -> Result<usize, Unsure> {
    match content {
        Some(Decoded::Str(text)) => Ok(chars(text)),
        Some(parts @ Decoded::List(items)) => {
            if items.iter().any(retired_part) {
                return Err("a content part compat translates");
            }
            Ok(parts.written_bound())
        }
        _ => Err("a tool result's content the judge does not follow"),
    }
}

/// lint's token usage rules (`_check_usage`): each entry's parts within their totals, and the
/// total the sum of input and output, where every count named is an integer.
fn usage_adds_up(usage: &Decoded<'_>) -> Result<(), Unsure> {
    const RULES: [(&[&str], &str); 4] = [
        (&["cachedInputTokens"], "inputTokens"),
        (&["cacheWriteInputTokens"], "inputTokens"),
        (
            &["cachedInputTokens", "cacheWriteInputTokens"],
            "inputTokens",
        ),
        (&["reasoningTokens"], "outputTokens"),
    ];
    let Decoded::List(entries) = usage else {
        return Ok(()); // lint reads a list only
    };
    for entry in entries {
        let count = |name: &str| entry.get(name).and_then(Decoded::count);
        for (parts, whole) in RULES {
            let counted: Option<Vec<i128>> = parts.iter().map(|part| count(part)).collect();
            if let (Some(counted), Some(total)) = (counted, count(whole))
                && counted.iter().sum::<i128>() > total
            {
                return Err("token usage that does not add up");
            }
        }
        if let (Some(input), Some(output), Some(total)) = (
            count("inputTokens"),
            count("outputTokens"),
            count("totalTokens"),
        ) && input + output != total
        {
            return Err("token usage that does not add up");
        }
    }
    Ok(())
}

/// Whether lint's `orjson.loads` surely reads `text` as a JSON document: the judge's decoder
/// reads it (which refuses what the two read differently; nesting past serde_json's 128 levels
/// fails here first, so deeper text is the reference's to judge).
fn is_json_document(text: &str) -> bool {
    Decoded::read(text.as_bytes()).is_some()
}

#[cfg(test)]
mod tests {
    use super::{compat_quiet, is_json_document, may_nest_too_deep, usage_adds_up};
    use crate::decode::Decoded;

    /// `compat_quiet` of one event, given as JSON text, with 1.0 the one quiet version.
    fn quiet(event: &str) -> bool {
        let decoded = Decoded::read(event.as_bytes()).unwrap();
        let members = decoded.as_object().unwrap();
        let kind = members[0].1.as_str().unwrap();
        compat_quiet(kind, members, &["1.0".to_owned()]).is_ok()
    }

    #[test]
    fn what_compat_leaves_as_sent() {
        assert!(quiet(
            r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}"#
        ));
        assert!(quiet(
            r#"{"type": "SOMETHING_NEW", "rawEvent": {"a": null}}"#
        ));
        assert!(quiet(
            r#"{"type": "RUN_STARTED", "protocolVersion": "1.0"}"#
        ));
        assert!(quiet(r#"{"type": "RUN_STARTED", "protocolVersion": 1}"#));
        assert!(quiet(
            r#"{"type": "TOOL_CALL_START", "parentMessageId": "m"}"#
        ));
        assert!(quiet(r#"{"type": "TOOL_CALL_RESULT", "content": "text"}"#));
        assert!(quiet(r#"{"type": "RUN_FINISHED", "result": {"a": null}}"#));
        let parts = r#"[{"type": "text", "text": "hi"}, {"type": "image", "metadata": {}}]"#;
        assert!(quiet(&format!(
            r#"{{"type": "TOOL_CALL_RESULT", "content": {parts}}}"#
        )));
        let messages = format!(r#"[{{"id": "m", "role": "user", "content": {parts}}}]"#);
        assert!(quiet(&format!(
            r#"{{"type": "MESSAGES_SNAPSHOT", "messages": {messages}}}"#
        )));
        let input = format!(
            r#"{{"forwardedProps": {{}}, "tools": [{{"name": "t", "parameters": {{}}}}],
                "resume": [{{"payload": 1}}], "messages": {messages}}}"#
        );
        assert!(quiet(&format!(
            r#"{{"type": "RUN_STARTED", "input": {input}}}"#
        )));
    }

    #[test]
    fn the_retired_shapes_inside_documents() {
        let binary = r#"[{"type": "binary", "mimeType": "image/png", "data": "AA=="}]"#;
        let null_metadata = r#"[{"type": "image", "metadata": null}]"#;
        for parts in [binary, null_metadata] {
            let result = format!(r#"{{"type": "TOOL_CALL_RESULT", "content": {parts}}}"#);
            assert!(!quiet(&result), "{result}");
            let messages = format!(r#"[{{"id": "m", "role": "user", "content": {parts}}}]"#);
            let snapshot = format!(r#"{{"type": "MESSAGES_SNAPSHOT", "messages": {messages}}}"#);
            assert!(!quiet(&snapshot), "{snapshot}");
            let input =
                format!(r#"{{"type": "RUN_STARTED", "input": {{"messages": {messages}}}}}"#);
            assert!(!quiet(&input), "{input}");
        }
        for input in [
            r#"{"forwardedProps": null}"#,
            r#"{"tools": [{"name": "t"}, {"name": "u", "parameters": null}]}"#,
            r#"{"resume": [{"payload": null}]}"#,
        ] {
            let started = format!(r#"{{"type": "RUN_STARTED", "input": {input}}}"#);
            assert!(!quiet(&started), "{started}");
        }
    }

    #[test]
    fn what_compat_changes_or_reads() {
        assert!(!quiet(r#"{"type": "TEXT_MESSAGE_END", "rawEvent": null}"#));
        assert!(!quiet(r#"{"type": "THINKING_START"}"#));
        assert!(!quiet(
            r#"{"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "x"}"#
        ));
        assert!(!quiet(
            r#"{"type": "TOOL_CALL_CHUNK", "parentMessageId": null}"#
        ));
        assert!(!quiet(r#"{"type": "RUN_FINISHED", "outcome": null}"#));
        assert!(!quiet(r#"{"type": "RUN_FINISHED", "result": null}"#));
        assert!(!quiet(r#"{"type": "SUBAGENT_FINISHED", "result": null}"#));
        assert!(!quiet(
            r#"{"type": "RUN_STARTED", "protocolVersion": "9.0"}"#
        ));
    }

    fn usage(text: &str) -> Decoded<'_> {
        Decoded::read(text.as_bytes()).unwrap()
    }

    #[test]
    fn nesting() {
        assert!(may_nest_too_deep(b"[[[1]]]", 2));
        assert!(!may_nest_too_deep(b"[[[1]]]", 3));
        assert!(
            !may_nest_too_deep(b"[[[1]]]", 4),
            "too short to nest past the limit"
        );
    }

    #[test]
    fn usage_that_does_not_add_up() {
        let fine = r#"[{"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}]"#;
        assert!(usage_adds_up(&usage(fine)).is_ok());
        let total = r#"[{"inputTokens": 3, "outputTokens": 4, "totalTokens": 8}]"#;
        assert!(usage_adds_up(&usage(total)).is_err());
        let cached = r#"[{"inputTokens": 3, "cachedInputTokens": 4}]"#;
        assert!(usage_adds_up(&usage(cached)).is_err());
        let float = r#"[{"inputTokens": 3.0, "cachedInputTokens": 4}]"#;
        assert!(
            usage_adds_up(&usage(float)).is_ok(),
            "lint counts integers only"
        );
        assert!(usage_adds_up(&usage(r#""not a list""#)).is_ok());
    }

    #[test]
    fn argument_text() {
        assert!(is_json_document("{\"city\": \"Bern\"}"));
        assert!(is_json_document(" [1, 2] "));
        assert!(!is_json_document("{\"city\": "));
        assert!(!is_json_document("[-0]"));
    }
}
