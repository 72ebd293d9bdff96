//! The judge under random reads: it never panics; it answers the same however the stream is
//! cut (clean or unsure), and for a clean stream the same `read` count and the same run notes,
//! which are well formed (a start, then its end, in turn; ends at increasing indices below
//! `read`; a finish's frame holding its outcome). The judge that stands in for compat alone
//! (deliver mode's, before a stage of the user's) answers the same however cut too, notes no
//! run, and is clean, with the same count, wherever the judge of every rule is.
//!
//! The one answer that may differ is the judge's shortcut for SSE: it is unsure of a read
//! whose complete events take more bytes than one event may as sent, without measuring each,
//! and the stream fed whole is one read holding every event (a read in pieces is never larger:
//! its complete events are a part of the whole's). A frame over the limit makes no other
//! difference: framing.rs's own target holds that a frame refused in pieces is refused whole
//! or is a complete frame over the limit, which the judge is unsure of too, and the other way
//! round; so that is held here as well.
//!
//! The input is a header and the reads. The header's eight bytes: the framing (bit 0: SSE or
//! JSON lines), then the limits: max_frame_bytes (its square plus one: 1 to 65,026 bytes),
//! max_depth, max_open_items, max_text_chars (its square), max_conversation_chars (its
//! square), max_items and max_run_ids; the framing byte's other seven bits, when not all zero,
//! make max_state_bytes (their square) and max_patch_work (their cube) small. Then each read is a length byte (0: an empty read)
//! followed by that many bytes, as in the framer target.
//!
//! enforce's plan comes from the file `AGUI_JUDGE_PLAN` names (tests/test_native_fuzz.py
//! writes it from `native_plan()`): `{"rows": [...], "events": {...}, "quiet_versions": [...]}`,
//! each row the plan's tuple as a JSON array.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use agui_native::checks::{Checks, Row};
use agui_native::decode::Decoded;
use agui_native::framing::Framing;
use agui_native::judge::{Deliver, Judge, Limits, RunNote, StandsIn, Unsure};
use libfuzzer_sys::fuzz_target;

#[path = "../common/input.rs"]
mod input;
use input::{framing_of, reads_of};
use serde::Deserialize;

/// The judge's reason for the one answer that may differ between pieces and whole (judge.rs).
const A_READ_OVER_THE_BOUND: Unsure = "a read whose SSE events may be over the limit as sent";

/// The plan file's layout.
#[derive(Deserialize)]
struct PlanFile {
    rows: Vec<Row>,
    events: HashMap<String, usize>,
    quiet_versions: Vec<String>,
}

/// What every run shares: the checks (one for every judge, as in a process) and the
/// `protocolVersion` values compat is quiet about.
struct Setup {
    checks: Arc<Checks>,
    quiet_versions: Vec<String>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let path = std::env::var_os("AGUI_JUDGE_PLAN")
            .expect("AGUI_JUDGE_PLAN names the plan file (tests/test_native_fuzz.py writes it)");
        let text =
            std::fs::read(&path).unwrap_or_else(|error| panic!("the plan file {path:?}: {error}"));
        let plan: PlanFile = serde_json::from_slice(&text)
            .unwrap_or_else(|error| panic!("the plan file {path:?}: {error}"));
        let checks = Checks::from_rows(plan.rows, plan.events)
            .unwrap_or_else(|error| panic!("the plan in {path:?}: {error}"));
        Setup {
            checks: Arc::new(checks),
            quiet_versions: plan.quiet_versions,
        }
    })
}

/// What one judge answered.
#[derive(Debug)]
struct Judged {
    unsure: Option<Unsure>,
    read: usize,
    notes: Vec<RunNote>,
}

/// Counts the frames the judge passes to be delivered.
struct Passed(usize);

impl Deliver for Passed {
    fn deliver(&mut self, _event: &Decoded<'_>) {
        self.0 += 1;
    }
}

fn judge(framing: Framing, stands_in: StandsIn, limits: Limits, reads: &[&[u8]]) -> Judged {
    let setup = setup();
    let mut judge = Judge::new(
        framing,
        stands_in,
        Arc::clone(&setup.checks),
        limits,
        setup.quiet_versions.clone(),
        None,
    );
    let mut notes = Vec::new();
    let mut delivered = 0;
    for read in reads {
        let mut passed = Passed(0);
        judge.feed(read, &mut passed);
        notes.extend(judge.take_notes());
        if judge.unsure().is_none() {
            delivered += passed.0;
        }
    }
    let mut passed = Passed(0);
    let clean = judge.finish(&mut passed);
    notes.extend(judge.take_notes());
    if clean {
        assert_eq!(
            delivered + passed.0,
            judge.read(),
            "a clean stream delivers every frame it read"
        );
    }
    assert_eq!(
        clean,
        judge.unsure().is_none(),
        "finish and unsure disagree"
    );
    let read = judge.read();
    if clean {
        well_formed(&notes, read);
    }
    Judged {
        unsure: judge.unsure(),
        read,
        notes,
    }
}

/// A clean stream's notes, as the caller records them (`_record` in pipeline/_engine/judge.py).
fn well_formed(notes: &[RunNote], read: usize) {
    let mut active = false;
    let mut last_end = None;
    for note in notes {
        let index = match note {
            RunNote::Started { .. } => {
                assert!(!active, "a run started inside a run: {notes:?}");
                active = true;
                continue;
            }
            RunNote::Finished { index, outcome } => {
                if let Some(frame) = outcome {
                    let outcome = Decoded::read(frame)
                        .and_then(|event| event.get("outcome").map(Decoded::is_null));
                    assert_eq!(outcome, Some(false), "a finish's frame without its outcome");
                }
                index
            }
            RunNote::Failed { index, .. } => index,
        };
        assert!(active, "an end without its start: {notes:?}");
        active = false;
        assert!(*index < read, "an end at {index} of {read} frames read");
        assert!(
            last_end.is_none_or(|last| last < *index),
            "ends out of order: {notes:?}"
        );
        last_end = Some(*index);
    }
    assert!(
        !active,
        "a clean stream whose last run did not end: {notes:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let [
        kind,
        frame,
        depth,
        open,
        text,
        conversation,
        items,
        runs,
        rest @ ..,
    ] = data
    else {
        return;
    };
    let framing = framing_of(*kind);
    let squared = |root: &u8| usize::from(*root).pow(2);
    let limits = Limits {
        max_frame_bytes: squared(frame) + 1,
        max_depth: usize::from(*depth),
        max_open_items: usize::from(*open),
        max_text_chars: squared(text),
        max_conversation_chars: squared(conversation),
        max_items: usize::from(*items),
        max_run_ids: usize::from(*runs),
        // The framing byte's other bits: 0, the default limits; else small ones that trip.
        max_state_bytes: match kind >> 1 {
            0 => 16 << 20,
            small => usize::from(small).pow(2),
        },
        max_patch_work: match kind >> 1 {
            0 => 256 << 20,
            small => usize::from(small).pow(3),
        },
    };
    let reads = reads_of(rest);
    let whole_read = reads.concat();
    let cut = judge(framing, StandsIn::Lint, limits, &reads);
    let whole = judge(framing, StandsIn::Lint, limits, &[&whole_read]);
    same_however_cut(&cut, &whole);
    // Standing in for compat alone asks less: whatever every rule passes, it passes, with the
    // same frames read; it notes no run (verify's, in Python).
    let compat_cut = judge(framing, StandsIn::Compat, limits, &reads);
    let compat_whole = judge(framing, StandsIn::Compat, limits, &[&whole_read]);
    same_however_cut(&compat_cut, &compat_whole);
    assert!(compat_cut.notes.is_empty(), "compat's judge noted a run");
    if cut.unsure.is_none() {
        assert_eq!(
            compat_cut.unsure, None,
            "clean up to lint, unsure of compat"
        );
        assert_eq!(
            compat_cut.read, cut.read,
            "compat's judge read another count"
        );
    }
});

/// A stream judged in pieces (`cut`) and whole: the same answer, but for the SSE shortcut.
fn same_however_cut(cut: &Judged, whole: &Judged) {
    match (cut.unsure, whole.unsure) {
        (None, None) => {
            assert_eq!(
                cut.read, whole.read,
                "the reads' cut changed the count read"
            );
            assert_eq!(cut.notes, whole.notes, "the reads' cut changed the runs");
        }
        (Some(_), Some(_)) => {}
        (None, Some(reason)) => assert_eq!(
            reason, A_READ_OVER_THE_BOUND,
            "clean in pieces, unsure whole"
        ),
        (Some(reason), None) => panic!("unsure in pieces ({reason}), clean whole"),
    }
}
