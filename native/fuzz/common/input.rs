//! How the stream targets (`framer`, `judge`) read their input, shared by both: the framing a
//! header byte picks, and the reads that follow the header.

use agui_native::framing::Framing;

/// The framing the header byte's lowest bit picks: SSE (0) or JSON lines (1).
pub fn framing_of(byte: u8) -> Framing {
    if byte & 1 == 0 {
        Framing::Sse
    } else {
        Framing::JsonLines
    }
}

/// The reads after the header: each a length byte (0: an empty read, as a socket may hand
/// over) followed by that many bytes (fewer at the input's end).
pub fn reads_of(mut rest: &[u8]) -> Vec<&[u8]> {
    let mut reads = Vec::new();
    while let [length, tail @ ..] = rest {
        let (read, after) = tail.split_at(usize::from(*length).min(tail.len()));
        reads.push(read);
        rest = after;
    }
    reads
}
