//! The framer under random reads: it never panics, holds no more than the limit's bound
//! between reads it accepted, finds the same payloads (and holds the same unfinished frame)
//! however the stream is cut, and refuses a stream in pieces exactly when the same rule
//! refuses it whole.
//!
//! The input is a header and the reads: the first byte picks the framing, the second the
//! limit (its square plus one: 1 to 65,026 bytes); then each read is a length byte (0: an empty read, as a socket may
//! hand over) followed by that many bytes.
#![no_main]

use agui_native::framing::{Framer, Framing, each_payload, event_sent, sse_event_bound};
use libfuzzer_sys::fuzz_target;

#[path = "../common/input.rs"]
mod input;
use input::{framing_of, reads_of};

/// What the reads give: every payload, the bytes held at the end (`None` when a read was
/// refused for its size, after checking the size it named), and whether a complete frame
/// breaks the limit (which parse refuses once it has it whole).
struct Framed {
    payloads: Vec<Vec<u8>>,
    rest: Option<Vec<u8>>,
    whole_over: bool,
}

/// The longest SSE event of `region` as sent (events end at non-overlapping blank lines).
fn longest_event(region: &[u8]) -> usize {
    let (mut longest, mut start, mut at) = (0, 0, 0);
    while at + 1 < region.len() {
        if region[at] == b'\n' && region[at + 1] == b'\n' {
            longest = longest.max(event_sent(&region[start..at]));
            start = at + 2;
            at += 2;
        } else {
            at += 1;
        }
    }
    longest.max(event_sent(&region[start..]))
}

fn frame(framing: Framing, max_frame: usize, reads: &[&[u8]]) -> Framed {
    let bound = match framing {
        Framing::Sse => sse_event_bound(max_frame),
        Framing::JsonLines => max_frame,
    };
    // What is held: the frame and, for SSE, the LFs around its lines (see `event_sent`).
    let held_bound = bound + 2 * usize::from(framing == Framing::Sse);
    let mut framer = Framer::new(framing, max_frame);
    let mut payloads = Vec::new();
    let mut whole_over = false;
    for read in reads {
        let (_, too_large) = framer.feed(read, |region| {
            each_payload(framing, region, |payload| {
                whole_over |= payload.len() > max_frame;
                payloads.push(payload.to_vec());
            });
            if framing == Framing::Sse {
                whole_over |= longest_event(region) > bound;
            }
            Ok::<(), ()>(())
        });
        if let Some(too_large) = too_large {
            let limit = if too_large.as_sent { bound } else { max_frame };
            assert!(
                too_large.size > limit,
                "refused {too_large:?} within {limit}"
            );
            return Framed {
                payloads,
                rest: None,
                whole_over,
            };
        }
        assert!(
            framer.held_bytes() <= held_bound,
            "holds {} bytes past the bound {held_bound}",
            framer.held_bytes()
        );
    }
    // Blank lines before the held tail dispatch nothing: a boundary ("\n\n") and a third LF
    // cut after the first leave one of them here, while the whole stream's last boundary
    // takes both (the same in stages/parse.py).
    let rest = framer.take_rest();
    let start = rest.iter().take_while(|&&byte| byte == b'\n').count();
    Framed {
        payloads,
        rest: Some(rest[start..].to_vec()),
        whole_over,
    }
}

fuzz_target!(|data: &[u8]| {
    let [kind, limit, rest @ ..] = data else {
        return;
    };
    let framing = framing_of(*kind);
    let max_frame = usize::from(*limit).pow(2) + 1;
    let reads = reads_of(rest);
    let cut = frame(framing, max_frame, &reads);
    let whole = frame(framing, max_frame, &[&reads.concat()]);
    match (&cut.rest, &whole.rest) {
        // Accepted in pieces, so accepted whole: the same payloads, the same tail.
        (Some(_), _) => {
            assert_eq!(
                cut.payloads, whole.payloads,
                "the reads' cut changed the payloads"
            );
            assert_eq!(cut.rest, whole.rest, "the reads' cut changed the tail");
        }
        // Refused in pieces: whole, the same frame is refused, held or complete.
        (None, rest) => assert!(
            rest.is_none() || whole.whole_over,
            "refused in pieces, accepted whole"
        ),
    }
    if whole.rest.is_none() {
        assert!(
            cut.rest.is_none() || cut.whole_over,
            "refused whole, accepted in pieces"
        );
    }
});
