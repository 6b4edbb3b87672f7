//! Server-sent events framing: bytes in, `data:` payloads out, in linear time. Scans only
//! new bytes for line ends (so one 8 MB line costs one pass, not one pass per read), bounds
//! the size of one event, and accepts LF, CR and CRLF line ends. Knows no wire format.

/// A framing failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event grew past the limit (a runaway or hostile server).
    #[error("one streamed event passed {0} bytes")]
    TooLarge(usize),
}

/// Incremental SSE decoder. Feed it bytes with `push`; call `finish` at end of body.
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a line end.
    scanned: usize,
    data: String,
    has_data: bool,
    started: bool,
    max_event: usize,
}

impl SseDecoder {
    /// `max_event`: the most bytes one event (its lines together) may hold.
    pub fn new(max_event: usize) -> Self {
        SseDecoder {
            buf: Vec::new(),
            scanned: 0,
            data: String::new(),
            has_data: false,
            started: false,
            max_event,
        }
    }

    /// Appends bytes and returns the payloads of every event they complete.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<String>) -> Result<(), SseError> {
        let mut bytes = bytes;
        if !self.started && !bytes.is_empty() {
            self.started = true;
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        loop {
            let Some(rel) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                break;
            };
            let end = self.scanned + rel;
            let next = match self.buf[end] {
                b'\r' if end + 1 == self.buf.len() => {
                    // A CR at the end of what arrived: wait to see whether LF follows.
                    self.scanned = end;
                    break;
                }
                b'\r' if self.buf[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            let line = std::mem::take(&mut self.buf);
            self.line(&line[start..end], out);
            self.buf = line;
            start = next;
            self.scanned = next;
        }
        if start > 0 {
            self.buf.drain(..start);
            self.scanned -= start;
        }
        if self.buf.len() + self.data.len() > self.max_event {
            return Err(SseError::TooLarge(self.max_event));
        }
        Ok(())
    }

    /// End of body: a last line without its line end still counts, and a last event
    /// without its blank line is still delivered.
    pub fn finish(&mut self, out: &mut Vec<String>) {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let line = rest.strip_suffix(b"\r").unwrap_or(&rest);
            self.line(line, out);
        }
        self.scanned = 0;
        self.dispatch(out);
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<String>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // a comment (keep-alive)
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(&String::from_utf8_lossy(value));
            self.has_data = true;
        }
        // `event`, `id` and `retry` carry nothing the decoders need: payloads name their type.
    }

    fn dispatch(&mut self, out: &mut Vec<String>) {
        if self.has_data {
            out.push(std::mem::take(&mut self.data));
            self.has_data = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(pieces: &[&[u8]]) -> Vec<String> {
        let mut d = SseDecoder::new(1 << 20);
        let mut out = Vec::new();
        for p in pieces {
            d.push(p, &mut out).unwrap();
        }
        d.finish(&mut out);
        out
    }

    #[test]
    fn frames_lf_crlf_and_cr_split_anywhere() {
        let body = b"\xEF\xBB\xBF: keep-alive\nevent: x\ndata: {\"a\":1}\n\ndata:b\r\n\r\ndata: c\rdata: d\r\rdata: last";
        let want = vec!["{\"a\":1}".to_string(), "b".into(), "c\nd".into(), "last".into()];
        assert_eq!(decode(&[body]), want);
        for cut in 1..body.len() {
            assert_eq!(decode(&[&body[..cut], &body[cut..]]), want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode(&bytes), want);
    }

    #[test]
    fn empty_data_and_field_without_colon() {
        assert_eq!(
            decode(&[b"data\n\ndata:\n\nretry: 5\n\n"]),
            vec!["".to_string(), "".into()]
        );
        assert!(decode(&[b"event: ping\n\n"]).is_empty());
    }

    #[test]
    fn one_huge_line_in_small_reads_is_framed_once() {
        let payload = "x".repeat(3 << 20);
        let body = format!("data: {payload}\n\n");
        let mut d = SseDecoder::new(4 << 20);
        let mut out = Vec::new();
        for c in body.as_bytes().chunks(1024) {
            d.push(c, &mut out).unwrap();
        }
        assert_eq!(out, vec![payload]);
    }

    #[test]
    fn an_event_past_the_limit_is_an_error() {
        let mut d = SseDecoder::new(1024);
        let mut out = Vec::new();
        d.push(b"data: ", &mut out).unwrap();
        let big = vec![b'x'; 2048];
        assert_eq!(d.push(&big, &mut out), Err(SseError::TooLarge(1024)));
        let mut d = SseDecoder::new(1024);
        let mut err = Ok(());
        for _ in 0..40 {
            err = err.and(d.push(b"data: 0123456789012345678901234567890123456789\n", &mut out));
        }
        assert_eq!(
            err,
            Err(SseError::TooLarge(1024)),
            "many lines of one event count together"
        );
    }
}
