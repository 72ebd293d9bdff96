//! The framer under random reads: it never panics, holds no more than `max_frame` bytes
//! between reads it accepted, and finds the same payloads (and holds the same unfinished
//! frame) however the stream is cut.
//!
//! The input is a header and the reads: the first byte picks the framing, the second the
//! limit (its square plus one: 1 to 65,026 bytes); then each read is a length byte (0: an empty read, as a socket may
//! hand over) followed by that many bytes.
#![no_main]

use agui_native::framing::{Framer, Framing, each_payload};
use libfuzzer_sys::fuzz_target;

/// Every payload the reads give, the bytes held at the end, or `None` when a read was
/// refused for its size (after checking the size it named).
fn frame(framing: Framing, max_frame: usize, reads: &[&[u8]]) -> Option<(Vec<Vec<u8>>, Vec<u8>)> {
    let mut framer = Framer::new(framing, max_frame);
    let mut payloads = Vec::new();
    for read in reads {
        let fed = framer.feed(read, |region| {
            each_payload(framing, region, |payload| payloads.push(payload.to_vec()));
        });
        if let Err(too_large) = fed {
            assert!(
                too_large.0 > max_frame,
                "refused {} bytes within the limit",
                too_large.0
            );
            return None;
        }
        assert!(
            framer.held_bytes() <= max_frame,
            "holds {} bytes past the limit {max_frame}",
            framer.held_bytes()
        );
    }
    // Blank lines before the held tail dispatch nothing: a boundary ("\n\n") and a third LF
    // cut after the first leave one of them here, while the whole stream's last boundary
    // takes both (the same in stages/parse.py).
    let rest = framer.take_rest();
    let start = rest.iter().take_while(|&&byte| byte == b'\n').count();
    Some((payloads, rest[start..].to_vec()))
}

fuzz_target!(|data: &[u8]| {
    let [kind, limit, rest @ ..] = data else {
        return;
    };
    let framing = if kind & 1 == 0 {
        Framing::Sse
    } else {
        Framing::JsonLines
    };
    let max_frame = usize::from(*limit).pow(2) + 1;
    let mut reads = Vec::new();
    let mut rest = rest;
    while let [length, tail @ ..] = rest {
        let (read, after) = tail.split_at(usize::from(*length).min(tail.len()));
        reads.push(read);
        rest = after;
    }
    let Some(cut) = frame(framing, max_frame, &reads) else {
        return;
    };
    // Accepted in pieces, so accepted whole: what is held at the end is the same tail.
    let whole = frame(framing, max_frame, &[&reads.concat()]).expect("the whole stream refused");
    assert_eq!(cut, whole, "the reads' cut changed the payloads");
});
