//! Finding frames in a stream of reads: SSE events and JSON lines.
//!
//! The reference is `stages/parse.py` (`Parse._feed_delimited`, `_normalise_newlines`,
//! `_sse_payloads`, `_jsonl_payloads`): the same buffer, the same search, the same limit and
//! the same payloads, read for read. `tests/test_parse_differential.py` holds the two equal.

use std::borrow::Cow;

use memchr::{memchr, memchr_iter, memmem, memrchr};

/// The delimited framings the native framer reads (a JSON array document is read whole, in
/// Python).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `/spec/1.1/basic/transports/http-sse`: events end at a blank line.
    Sse,
    /// One JSON value per line.
    JsonLines,
}

impl Framing {
    /// The bytes between two frames.
    pub fn boundary(self) -> &'static [u8] {
        match self {
            Framing::Sse => b"\n\n",
            Framing::JsonLines => b"\n",
        }
    }
}

/// The frame held past the last boundary is over the limit, whatever follows it.
#[derive(Debug, PartialEq, Eq)]
pub struct FrameTooLarge {
    /// Its payload so far (over `max_frame_bytes`), or its bytes as sent (over
    /// [`sse_event_bound`]).
    pub size: usize,
    /// `size` is an SSE event's bytes as sent, comments and other fields included.
    pub as_sent: bool,
}

/// The most bytes one SSE event may take as sent, whole or still arriving (parse's
/// `sse_event_bound`): four times the frame limit covers a payload sent one character per
/// `data: ` line; comments and other fields carry nothing and are only held.
pub fn sse_event_bound(max_frame: usize) -> usize {
    max_frame.saturating_mul(4).saturating_add(64)
}

/// One stream's framing state: the bytes after the last boundary, and how far they were searched.
#[derive(Debug)]
pub struct Framer {
    framing: Framing,
    max_frame: usize,
    buffer: Vec<u8>,
    /// The previous read ended in CR: a leading LF is its CRLF pair (SSE only).
    skip_lf: bool,
    /// SSE: bytes of `buffer` whose whole lines `held_data` counts (0: none counted yet).
    held_lines: usize,
    /// The payload length of those lines (`None`: no `data` line among them).
    held_data: Option<usize>,
}

impl Framer {
    pub fn new(framing: Framing, max_frame: usize) -> Self {
        Framer {
            framing,
            max_frame,
            buffer: Vec::new(),
            skip_lf: false,
            held_lines: 0,
            held_data: None,
        }
    }

    /// Take one read. When it completes frames, `on_region` gets the bytes from the start of
    /// the first frame to the last boundary (that boundary cut) — in two pieces when a frame
    /// was held from the reads before: that frame, then the rest of this read, cut at a
    /// boundary, so that a read is copied no further than the end of the held frame. The
    /// answer is the first error of `on_region`, after which it is not called again for this
    /// read. What is left waits for the next read; when it is already over the limit, that
    /// comes too: the caller decodes the frames first and then refuses the held one, as in
    /// Python.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        mut on_region: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> (Option<Result<(), E>>, Option<FrameTooLarge>) {
        let normalised;
        let mut chunk = chunk;
        if self.framing == Framing::Sse && (self.skip_lf || memchr(b'\r', chunk).is_some()) {
            normalised = self.normalise_newlines(chunk);
            chunk = &normalised;
        }
        let boundary = self.framing.boundary();
        let mut answer = None;
        if !self.buffer.is_empty() {
            let Some(past) = self.complete_held(chunk) else {
                self.buffer.extend_from_slice(chunk);
                return (None, self.check_held());
            };
            answer = Some(on_region(&self.buffer));
            self.buffer.clear();
            chunk = &chunk[past..];
        }
        // Nothing held: the read is searched where it lies, and only its tail is copied.
        match memmem::rfind(chunk, boundary) {
            None => self.hold(chunk),
            Some(end) => {
                self.hold(&chunk[end + boundary.len()..]);
                if !matches!(answer, Some(Err(_))) {
                    answer = Some(on_region(&chunk[..end]));
                }
            }
        }
        (answer, self.check_held())
    }

    /// The frame held, completed from `chunk` when the chunk holds the boundary that ends it:
    /// the buffer becomes that frame (the boundary cut) and the answer is where in `chunk` the
    /// bytes after the boundary start. `None`: `chunk` ends no frame.
    fn complete_held(&mut self, chunk: &[u8]) -> Option<usize> {
        let boundary = self.framing.boundary();
        let held = self.buffer.len();
        // A boundary may straddle the previous read's end: an SSE blank line whose first LF
        // ended the held bytes (the held bytes hold no whole boundary).
        if boundary.len() == 2
            && self.buffer.last() == Some(&b'\n')
            && chunk.first() == Some(&b'\n')
        {
            self.buffer.truncate(held - 1);
            return Some(1);
        }
        let found = memmem::find(chunk, boundary)?;
        self.buffer.extend_from_slice(&chunk[..found]);
        Some(found + boundary.len())
    }

    /// The bytes held past the last boundary (never more than `max_frame` after a read that
    /// was not refused): what a stream costs between reads.
    pub fn held_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Nothing held and no CR waiting for its LF: a read starts afresh (parse's one-event
    /// path may then take it whole).
    pub fn is_idle(&self) -> bool {
        self.buffer.is_empty() && !self.skip_lf
    }

    /// Everything held at the end of the stream (the buffer is left empty).
    pub fn take_rest(&mut self) -> Vec<u8> {
        self.held_lines = 0;
        std::mem::take(&mut self.buffer)
    }

    fn hold(&mut self, tail: &[u8]) {
        self.buffer.clear();
        self.buffer.extend_from_slice(tail);
        self.held_lines = 0;
    }

    /// Whether the frame held is already over the limit (parse's `_held_overflow`): its
    /// payload as far as it arrived (a JSON line's bytes; an SSE event's whole `data` lines
    /// joined with LF, and the value so far of a `data:` line still arriving), which never
    /// shrinks and ends as the payload the whole frame is measured by; or an SSE event's bytes
    /// as sent past [`sse_event_bound`]. Each line is counted once, so a trickle stays linear.
    fn check_held(&mut self) -> Option<FrameTooLarge> {
        let held = self.buffer.len();
        if held <= self.max_frame {
            return None; // the payload is never longer than the bytes
        }
        if self.framing == Framing::JsonLines {
            return Some(FrameTooLarge {
                size: held,
                as_sent: false,
            });
        }
        let sent = event_sent(&self.buffer);
        if sent > sse_event_bound(self.max_frame) {
            return Some(FrameTooLarge {
                size: sent,
                as_sent: true,
            });
        }
        let mut start = self.held_lines;
        let mut payload = if start == 0 { None } else { self.held_data };
        if let Some(last_line) = memrchr(b'\n', &self.buffer[start..]) {
            let lines = &self.buffer[start..start + last_line];
            if let Some(data) = sse_event_data(lines, memchr(b'\n', lines).is_none()) {
                payload = Some(joined(payload, data.len()));
            }
            start += last_line + 1;
            self.held_lines = start;
            self.held_data = payload;
        }
        if let Some(value) = self.buffer[start..].strip_prefix(b"data:") {
            payload = Some(joined(payload, field_value(value).len()));
        }
        payload
            .filter(|&size| size > self.max_frame)
            .map(|size| FrameTooLarge {
                size,
                as_sent: false,
            })
    }

    /// CRLF and lone CR become LF; a CR at a read's end may pair with the next read's LF.
    fn normalise_newlines(&mut self, chunk: &[u8]) -> Vec<u8> {
        if chunk.is_empty() {
            return Vec::new(); // an empty read: a CR before it still waits for its LF
        }
        let chunk = match chunk {
            [b'\n', rest @ ..] if self.skip_lf => rest,
            _ => chunk,
        };
        self.skip_lf = chunk.last() == Some(&b'\r');
        let mut out = Vec::with_capacity(chunk.len());
        let mut bytes = chunk.iter().copied().peekable();
        while let Some(byte) = bytes.next() {
            if byte == b'\r' {
                out.push(b'\n');
                if bytes.peek() == Some(&b'\n') {
                    bytes.next();
                }
            } else {
                out.push(byte);
            }
        }
        out
    }
}

/// Each frame's payload in `region` (whole frames, the last boundary cut), in order: the `data`
/// of each SSE event, or each non-empty line.
pub fn each_payload(framing: Framing, region: &[u8], mut emit: impl FnMut(&[u8])) {
    match framing {
        Framing::JsonLines => {
            let mut start = 0;
            for end in memchr_iter(b'\n', region).chain([region.len()]) {
                if end > start {
                    emit(&region[start..end]);
                }
                start = end + 1;
            }
        }
        Framing::Sse => {
            // The blocks between blank lines ("\n\n", taken left to right), read in one pass
            // over the region's LFs, which also tells a block of one line (the usual event: a
            // single `data:` line) from one of several.
            let mut start = 0;
            let mut one_line = true;
            for at in memchr_iter(b'\n', region) {
                if at < start {
                    continue; // the second LF of a blank line already taken
                }
                if region.get(at + 1) == Some(&b'\n') {
                    if let Some(data) = sse_event_data(&region[start..at], one_line) {
                        emit(&data);
                    }
                    start = at + 2;
                    one_line = true;
                } else {
                    one_line = false;
                }
            }
            if let Some(data) = sse_event_data(&region[start..], one_line) {
                emit(&data);
            }
        }
    }
}

/// The SSE field grammar for one event, a block with no blank line inside (WHATWG HTML,
/// "Interpreting an event stream"): its `data` lines joined with LF, or `None` without any.
/// `one_line`: the block has no LF.
fn sse_event_data(block: &[u8], one_line: bool) -> Option<Cow<'_, [u8]>> {
    if one_line && block.starts_with(b"data:") {
        return Some(Cow::Borrowed(field_value(&block[5..])));
    }
    let mut data: Option<Cow<'_, [u8]>> = None;
    for line in block.split(|&byte| byte == b'\n') {
        if line.is_empty() || line[0] == b':' {
            continue; // a leading blank (dispatches nothing) or a comment
        }
        let (name, value) = match memchr(b':', line) {
            Some(colon) => (&line[..colon], field_value(&line[colon + 1..])),
            None => (line, &line[line.len()..]),
        };
        if name != b"data" {
            continue; // event:, id:, retry: and unknown fields carry nothing for AG-UI
        }
        data = Some(match data {
            None => Cow::Borrowed(value),
            Some(joined) => {
                let mut joined = joined.into_owned();
                joined.push(b'\n');
                joined.extend_from_slice(value);
                Cow::Owned(joined)
            }
        });
    }
    data
}

/// An SSE event's bytes as sent (parse's `sse_event_bound`): without the LFs around its lines,
/// a blank line's LF before them or the LF after them that begins the next blank line, which
/// fall on either side of a boundary depending on where the reads were cut.
pub fn event_sent(block: &[u8]) -> usize {
    let start = block.iter().take_while(|&&byte| byte == b'\n').count();
    let end = block.len()
        - block[start..]
            .iter()
            .rev()
            .take_while(|&&byte| byte == b'\n')
            .count();
    end - start
}

/// The length of a payload of `so_far` bytes once a `data` line of `more` bytes is joined.
fn joined(so_far: Option<usize>, more: usize) -> usize {
    so_far.map_or(more, |before| before + 1 + more)
}

/// A field's value: what follows the colon, one leading space dropped.
fn field_value(after_colon: &[u8]) -> &[u8] {
    after_colon.strip_prefix(b" ").unwrap_or(after_colon)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(framing: Framing, max_frame: usize, reads: &[&[u8]]) -> Vec<Vec<Vec<u8>>> {
        let mut framer = Framer::new(framing, max_frame);
        let mut out = Vec::new();
        for read in reads {
            let mut payloads = Vec::new();
            let (found, over) = framer.feed(read, |region| {
                each_payload(framing, region, |payload| payloads.push(payload.to_vec()));
                Ok::<(), ()>(())
            });
            assert_eq!(over, None, "within the limit");
            if found.is_some() {
                out.push(payloads);
            }
        }
        out
    }

    #[test]
    fn sse_events_across_reads() {
        let got = frames(
            Framing::Sse,
            100,
            &[b"data: {\"a\"", b":1}\n", b"\ndata: 2\n\n"],
        );
        // The third read completes both events: one region.
        assert_eq!(got, vec![vec![b"{\"a\":1}".to_vec(), b"2".to_vec()]]);
    }

    #[test]
    fn sse_multiline_data_comments_and_other_fields() {
        let got = frames(
            Framing::Sse,
            100,
            &[b": hi\nevent: x\ndata:1\ndata: 2\nid: 3\n\n"],
        );
        assert_eq!(got, vec![vec![b"1\n2".to_vec()]]);
        let got = frames(Framing::Sse, 100, &[b"data\n\n: only a comment\n\n"]);
        assert_eq!(got, vec![vec![b"".to_vec()]]);
    }

    #[test]
    fn sse_crlf_split_between_reads_is_one_newline() {
        let got = frames(Framing::Sse, 100, &[b"data: 1\r", b"\n\r", b"\n"]);
        assert_eq!(got, vec![vec![b"1".to_vec()]]);
        let got = frames(Framing::Sse, 100, &[b"data: 1\r\r"]);
        assert_eq!(got, vec![vec![b"1".to_vec()]]);
    }

    #[test]
    fn an_empty_read_between_cr_and_lf_keeps_the_pair() {
        let got = frames(
            Framing::Sse,
            100,
            &[b"data: 1\r", b"", b"\ndata: 2\r\n\r\n"],
        );
        assert_eq!(got, vec![vec![b"1\n2".to_vec()]]);
    }

    #[test]
    fn a_boundary_straddling_two_reads_is_found() {
        let got = frames(Framing::Sse, 100, &[b"data: 1\n", b"\n"]);
        assert_eq!(got, vec![vec![b"1".to_vec()]]);
    }

    #[test]
    fn json_lines_skip_empty_lines() {
        let got = frames(Framing::JsonLines, 100, &[b"{}\n\n{\"b\":2}\n{", b"}\n"]);
        assert_eq!(
            got,
            vec![
                vec![b"{}".to_vec(), b"{\"b\":2}".to_vec()],
                vec![b"{}".to_vec()]
            ]
        );
    }

    /// The pieces `feed` hands over for each of `reads`, and what it holds at the end.
    fn pieces(reads: &[&[u8]], refuse_first: bool) -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut framer = Framer::new(Framing::Sse, 100);
        let mut pieces = Vec::new();
        for read in reads {
            framer.feed(read, |piece| {
                pieces.push(piece.to_vec());
                if refuse_first { Err(()) } else { Ok(()) }
            });
        }
        (pieces, framer.take_rest())
    }

    #[test]
    fn a_held_frame_is_handed_apart_from_the_rest_of_the_read_cut_where_the_whole_was() {
        // Joined by the boundary, the pieces are the region the whole read was cut to:
        // a blank line straddling two reads (its first LF ended the held bytes) is cut whole.
        let straddling: [&[u8]; 3] = [b"data: {\"a\"", b":1}\n", b"\ndata: 2\n\ndata: 3\n\nda"];
        let expected = vec![b"data: {\"a\":1}".to_vec(), b"data: 2\n\ndata: 3".to_vec()];
        assert_eq!(pieces(&straddling, false), (expected, b"da".to_vec()));
        let within: [&[u8]; 2] = [b"data: 1", b"\n\ndata: 2\n\nx"];
        let expected = vec![b"data: 1".to_vec(), b"data: 2".to_vec()];
        assert_eq!(pieces(&within, false), (expected, b"x".to_vec()));
        // After an error on the held frame the rest of the read is not handed over, and it
        // is held all the same.
        let expected = vec![b"data: 1".to_vec()];
        assert_eq!(pieces(&within, true), (expected, b"x".to_vec()));
    }

    /// A region's handler that takes no notice of it.
    fn ok(_: &[u8]) -> Result<(), ()> {
        Ok(())
    }

    fn over(size: usize, as_sent: bool) -> Option<FrameTooLarge> {
        Some(FrameTooLarge { size, as_sent })
    }

    #[test]
    fn what_is_held_past_the_limit_is_too_large_after_the_frames_before_it() {
        let mut framer = Framer::new(Framing::JsonLines, 4);
        let mut region = Vec::new();
        let fed = framer.feed(b"{}\n{\"a\"}", |bytes| {
            region = bytes.to_vec();
            Ok::<(), ()>(())
        });
        assert_eq!(
            (fed, region),
            ((Some(Ok(())), over(5, false)), b"{}".to_vec())
        );
        let mut framer = Framer::new(Framing::JsonLines, 4);
        assert_eq!(framer.feed(b"{\"", ok), (None, None));
        assert_eq!(framer.feed(b"abc", ok), (None, over(5, false)));
        assert_eq!(framer.take_rest(), b"{\"abc".to_vec());
    }

    #[test]
    fn an_sse_event_held_is_measured_by_its_payload_so_far() {
        // At the limit (4), held across reads: the `data: ` and the LF between lines are
        // not the payload's, the LF joining two data lines is.
        let mut framer = Framer::new(Framing::Sse, 4);
        assert_eq!(
            framer.feed(b": c\nevent: e\ndata: ab\nda", ok),
            (None, None)
        );
        assert_eq!(framer.feed(b"ta: c", ok), (None, None));
        assert_eq!(framer.feed(b"d", ok), (None, over(5, false)));
        let mut framer = Framer::new(Framing::Sse, 4);
        assert_eq!(framer.feed(b"data: ab\ndata:\ndata", ok), (None, None));
        assert_eq!(framer.feed(b":x", ok), (None, over(5, false)));
    }

    #[test]
    fn an_sse_event_of_comments_is_bounded_as_sent() {
        let mut framer = Framer::new(Framing::Sse, 4);
        let comments = b": comment\n".repeat(8); // 80 bytes = 4 x 4 + 64
        assert_eq!(framer.feed(&comments, ok), (None, None));
        assert_eq!(framer.feed(b":", ok), (None, over(81, true)));
        // The LFs around an event's lines are not the event's (found by the fuzz target).
        assert_eq!(event_sent(b"\nab\n"), 2);
        assert_eq!(event_sent(b"\n"), 0);
        let mut framer = Framer::new(Framing::Sse, 4);
        let mut comments = b": comment\n".repeat(7);
        comments.extend_from_slice(b": comment1"); // 80 bytes: at the bound
        assert_eq!(framer.feed(&comments, ok), (None, None));
        assert_eq!(framer.feed(b"\n", ok), (None, None));
        assert_eq!(framer.feed(b"\n", ok), (Some(Ok(())), None));
    }
}
