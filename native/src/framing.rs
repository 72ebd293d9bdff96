//! Finding frames in a stream of reads: SSE events and JSON lines.
//!
//! The reference is `stages/parse.py` (`Parse._feed_delimited`, `_normalise_newlines`,
//! `_sse_payloads`, `_jsonl_payloads`): the same buffer, the same search, the same limit and
//! the same payloads, read for read. `tests/test_parse_differential.py` holds the two equal.

use std::borrow::Cow;

use memchr::{memchr, memchr_iter, memmem};

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
    fn boundary(self) -> &'static [u8] {
        match self {
            Framing::Sse => b"\n\n",
            Framing::JsonLines => b"\n",
        }
    }
}

/// What is held past the last boundary grew beyond `max_frame_bytes`: its size in bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct FrameTooLarge(pub usize);

/// One stream's framing state: the bytes after the last boundary, and how far they were searched.
#[derive(Debug)]
pub struct Framer {
    framing: Framing,
    max_frame: usize,
    buffer: Vec<u8>,
    /// Bytes of `buffer` already searched for a boundary.
    scanned: usize,
    /// The previous read ended in CR: a leading LF is its CRLF pair (SSE only).
    skip_lf: bool,
}

impl Framer {
    pub fn new(framing: Framing, max_frame: usize) -> Self {
        Framer {
            framing,
            max_frame,
            buffer: Vec::new(),
            scanned: 0,
            skip_lf: false,
        }
    }

    /// Take one read. When it completes frames, `on_region` gets the bytes from the start of
    /// the first frame to the last boundary (that boundary cut), and its answer is returned.
    /// What is left waits for the next read; when it is longer than the limit, that is
    /// [`FrameTooLarge`] (and `on_region` is not called), as in Python.
    pub fn feed<R>(
        &mut self,
        chunk: &[u8],
        on_region: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>, FrameTooLarge> {
        let normalised;
        let mut chunk = chunk;
        if self.framing == Framing::Sse && (self.skip_lf || memchr(b'\r', chunk).is_some()) {
            normalised = self.normalise_newlines(chunk);
            chunk = &normalised;
        }
        let boundary = self.framing.boundary();
        if self.buffer.is_empty() {
            // Nothing held: the read is searched where it lies, and only its tail is copied.
            return match memmem::rfind(chunk, boundary) {
                None => {
                    self.hold(chunk)?;
                    Ok(None)
                }
                Some(end) => {
                    self.hold(&chunk[end + boundary.len()..])?;
                    Ok(Some(on_region(&chunk[..end])))
                }
            };
        }
        self.buffer.extend_from_slice(chunk);
        // A boundary may straddle the previous read's end: search from just before it.
        let from = (self.scanned + 1).saturating_sub(boundary.len());
        match memmem::rfind(&self.buffer[from..], boundary) {
            None => {
                self.scanned = self.buffer.len();
                self.check_held()?;
                Ok(None)
            }
            Some(found) => {
                let end = from + found;
                let rest = self.buffer.len() - end - boundary.len();
                if rest > self.max_frame {
                    return Err(FrameTooLarge(rest));
                }
                let answer = on_region(&self.buffer[..end]);
                self.buffer.drain(..end + boundary.len());
                self.scanned = self.buffer.len();
                Ok(Some(answer))
            }
        }
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
        self.scanned = 0;
        std::mem::take(&mut self.buffer)
    }

    fn hold(&mut self, tail: &[u8]) -> Result<(), FrameTooLarge> {
        self.buffer.clear();
        self.buffer.extend_from_slice(tail);
        self.scanned = self.buffer.len();
        self.check_held()
    }

    fn check_held(&self) -> Result<(), FrameTooLarge> {
        if self.buffer.len() > self.max_frame {
            return Err(FrameTooLarge(self.buffer.len()));
        }
        Ok(())
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
            let mut start = 0;
            let ends = memmem::find_iter(region, b"\n\n").chain([region.len()]);
            for end in ends {
                if let Some(data) = sse_event_data(&region[start..end]) {
                    emit(&data);
                }
                start = end + 2;
            }
        }
    }
}

/// The SSE field grammar for one event, a block with no blank line inside (WHATWG HTML,
/// "Interpreting an event stream"): its `data` lines joined with LF, or `None` without any.
fn sse_event_data(block: &[u8]) -> Option<Cow<'_, [u8]>> {
    if block.starts_with(b"data:") && memchr(b'\n', block).is_none() {
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
            let found = framer.feed(read, |region| {
                let mut payloads = Vec::new();
                each_payload(framing, region, |payload| payloads.push(payload.to_vec()));
                payloads
            });
            if let Some(payloads) = found.expect("within the limit") {
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

    #[test]
    fn what_is_held_past_the_limit_is_too_large() {
        let mut framer = Framer::new(Framing::JsonLines, 4);
        assert_eq!(framer.feed(b"{}\n{\"a\"}", |_| ()), Err(FrameTooLarge(5)));
        let mut framer = Framer::new(Framing::JsonLines, 4);
        assert_eq!(framer.feed(b"{\"", |_| ()), Ok(None));
        assert_eq!(framer.feed(b"abc", |_| ()), Err(FrameTooLarge(5)));
        assert_eq!(framer.take_rest(), b"{\"abc".to_vec());
    }
}
