//! Problem documents for what the HTTP parser refuses before the application sees a request:
//! a request target over its 64 KiB (`414`), headers over its buffer (`431`), malformed
//! HTTP (`400`). hyper answers those itself, with an empty body, and has no setting for what
//! it writes; the limits are fixed in its parser. So the connection's writes are watched
//! ([`Refusals`]): a response that is such a bare refusal (an error status, `content-length:
//! 0`, the connection closing, no content type: never one of the application's, whose every
//! refusal carries a problem document) is written as the same status with a problem
//! document instead. A browser's page request refused for its URL gets the application's own
//! error page instead, rendered once at start-up ([`ProblemListener::new`]): what it asked for
//! is told from the request's opening bytes and, past the parser's limit, its `Accept`.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::{CONTENT_TYPE, Problem};

/// The parser's own refusals are a status line and three or four short headers; anything
/// longer is a response of the application's.
const MAX_BARE_REFUSAL_BYTES: usize = 512;

/// A listener whose connections answer the parser's refusals with problem documents, or
/// with the application's error page when a browser asked for a page.
pub struct ProblemListener {
    listener: TcpListener,
    uri_too_long_page: Option<Arc<[u8]>>,
}

impl ProblemListener {
    /// `uri_too_long_page`: the whole HTTP response (head and body, `connection: close`) a
    /// browser's page request gets for a URL over the parser's limit; `None`: the problem
    /// document for every client.
    pub fn new(listener: TcpListener, uri_too_long_page: Option<Vec<u8>>) -> Self {
        Self {
            listener,
            uri_too_long_page: uri_too_long_page.map(Arc::from),
        }
    }
}

impl axum::serve::Listener for ProblemListener {
    type Io = Refusals<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, address) = axum::serve::Listener::accept(&mut self.listener).await;
        let mut connection = Refusals::new(stream);
        connection.uri_too_long_page = self.uri_too_long_page.clone();
        (connection, address)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

/// A connection whose bare parser refusals are written as problem documents (or pages).
pub struct Refusals<T> {
    inner: T,
    /// A rewritten refusal being written, and how much of it is written.
    pending: Option<(Arc<[u8]>, usize)>,
    /// What has been read of the request not yet answered.
    request: RequestSeen,
    uri_too_long_page: Option<Arc<[u8]>>,
}

impl<T> Refusals<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            pending: None,
            request: RequestSeen::default(),
            uri_too_long_page: None,
        }
    }
}

/// How many opening bytes of a request are kept: enough for `HEAD /api/`.
const OPENING_BYTES: usize = 16;

/// Where in a request the search for `text/html` begins: a URL the parser refuses is over
/// 64 KiB, so the headers that follow it are past this point, and a request under it (every
/// request the application answers) is never searched.
const SEARCH_FROM: usize = 60 * 1024;

/// What has been read of the request not yet answered, as far as choosing between a problem
/// document and an error page needs: its opening bytes (the method and the start of the
/// path) and, past [`SEARCH_FROM`], whether it mentions `text/html` (its `Accept`).
#[derive(Default)]
struct RequestSeen {
    read: usize,
    opening: [u8; OPENING_BYTES],
    html: Matcher,
}

impl RequestSeen {
    fn note(&mut self, bytes: &[u8]) {
        if self.read < OPENING_BYTES {
            let take = (OPENING_BYTES - self.read).min(bytes.len());
            self.opening[self.read..self.read + take].copy_from_slice(&bytes[..take]);
        }
        let skip = SEARCH_FROM.saturating_sub(self.read);
        self.read = self.read.saturating_add(bytes.len());
        if let Some(searched) = bytes.get(skip..) {
            self.html.feed(searched);
        }
    }

    /// A `GET` or `HEAD` of a page (not of the API) by a client that accepts HTML.
    fn is_page_request(&self) -> bool {
        let opening = &self.opening[..self.read.min(OPENING_BYTES)];
        let path = opening
            .strip_prefix(b"GET ")
            .or_else(|| opening.strip_prefix(b"HEAD "));
        let is_page =
            path.is_some_and(|path| path.starts_with(b"/") && !path.starts_with(b"/api/"));
        is_page && self.html.found()
    }
}

/// Finds `text/html` (in any case) in bytes that come in pieces, a piece at a time
/// (Knuth-Morris-Pratt: a match split across two reads is found).
#[derive(Default)]
struct Matcher {
    matched: usize,
}

impl Matcher {
    const PATTERN: &'static [u8] = b"text/html";
    /// For each length matched, the longest proper prefix of the pattern that is also a
    /// suffix of what was matched (`t` is both the first and the fourth letter).
    const FALLBACK: [usize; 9] = [0, 0, 0, 1, 0, 0, 1, 0, 0];

    fn feed(&mut self, bytes: &[u8]) {
        for byte in bytes {
            if self.found() {
                return;
            }
            let byte = byte.to_ascii_lowercase();
            while self.matched > 0 && Self::PATTERN[self.matched] != byte {
                self.matched = Self::FALLBACK[self.matched - 1];
            }
            if Self::PATTERN[self.matched] == byte {
                self.matched += 1;
            }
        }
    }

    fn found(&self) -> bool {
        self.matched == Self::PATTERN.len()
    }
}

/// The status of `head` if it is a whole response the parser wrote on its own: a 4xx status
/// line, `connection: close`, `content-length: 0` and no content type.
fn bare_refusal(head: &[u8]) -> Option<StatusCode> {
    // Every response the server writes passes here: the byte tests that rule out nearly all
    // of them come first, before any copy of the text is made.
    if head.len() > MAX_BARE_REFUSAL_BYTES || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let rest = head
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| head.strip_prefix(b"HTTP/1.0 "))?;
    let status = StatusCode::from_bytes(rest.get(..3)?).ok()?;
    if !status.is_client_error() {
        return None;
    }
    let lower = std::str::from_utf8(head).ok()?.to_ascii_lowercase();
    let bare = lower.contains("\r\nconnection: close\r\n")
        && lower.contains("\r\ncontent-length: 0\r\n")
        && !lower.contains("\r\ncontent-type:");
    bare.then_some(status)
}

/// The problem document of a parser refusal of `status`, as a whole HTTP response.
fn problem_response(status: StatusCode) -> Vec<u8> {
    let (code, detail) = match status {
        StatusCode::URI_TOO_LONG => (
            "uri-too-long",
            "the URL is longer than 64 KiB; at most 8 KiB are served",
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            "headers-too-large",
            "the request's headers are larger than the server reads",
        ),
        _ => ("bad-request", "the request is not HTTP the server can read"),
    };
    let body = serde_json::to_string(&Problem::new(status, code, detail)).unwrap_or_default();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {CONTENT_TYPE}\r\ncontent-length: {}\r\nconnection: \
         close\r\n\r\n{body}",
        status.as_str(),
        status.canonical_reason().unwrap_or("Error"),
        body.len()
    )
    .into_bytes()
}

impl<T: AsyncWrite + Unpin> Refusals<T> {
    /// When `buf` is a bare refusal of the parser: its problem document goes out in its place,
    /// and `buf` counts as written (`Some` of its length).
    fn replace_bare_refusal(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> io::Result<Option<usize>> {
        let Some(status) = bare_refusal(buf) else {
            return Ok(None);
        };
        let page = match &self.uri_too_long_page {
            Some(page) if status == StatusCode::URI_TOO_LONG && self.request.is_page_request() => {
                Arc::clone(page)
            }
            _ => Arc::from(problem_response(status)),
        };
        self.pending = Some((page, 0));
        // What is not written now is written before the next write, flush or shutdown.
        if let Poll::Ready(Err(e)) = self.poll_pending(cx) {
            return Err(e);
        }
        Ok(Some(buf.len()))
    }

    /// Writes what is pending of a rewritten refusal.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written == bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Refusals<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        self.request.note(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Refusals<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(written) = self.replace_bare_refusal(cx, buf)? {
            return Poll::Ready(Ok(written));
        }
        // An answer is going out: what is read next is the next request.
        self.request = RequestSeen::default();
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    /// Vectored writes go through as the socket takes them (hyper then sends a body without
    /// copying it into its head's buffer); a bare refusal is a head alone, in one slice.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        let mut filled = bufs.iter().filter(|buf| !buf.is_empty());
        if let (Some(only), None) = (filled.next(), filled.next())
            && let Some(written) = self.replace_bare_refusal(cx, only)?
        {
            return Poll::Ready(Ok(written));
        }
        self.request = RequestSeen::default();
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_parsers_own_bare_refusals_are_rewritten() {
        let bare = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\
                     date: Fri, 27 Nov 2026 04:17:33 GMT\r\n\r\n";
        assert_eq!(bare_refusal(bare), Some(StatusCode::URI_TOO_LONG));
        let ours = b"HTTP/1.1 414 URI Too Long\r\ncontent-type: application/problem+json\r\n\
                     connection: close\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(bare_refusal(ours), None);
        let kept_open = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(bare_refusal(kept_open), None);
        let written = String::from_utf8(problem_response(StatusCode::URI_TOO_LONG)).unwrap();
        let (head, body) = written.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["code"], "uri-too-long");
    }

    #[test]
    fn text_html_is_found_however_the_reads_split_it() {
        let accept = b"x: text/tex\r\nAccept: TEXT/HTML,*/*\r\n";
        for split in 0..accept.len() {
            let mut matcher = Matcher::default();
            matcher.feed(&accept[..split]);
            matcher.feed(&accept[split..]);
            assert!(matcher.found(), "split at {split}");
        }
        let mut matcher = Matcher::default();
        matcher.feed(b"accept: text/plain, application/json, text/htm");
        assert!(!matcher.found());
    }

    #[test]
    fn a_page_request_is_told_from_its_opening_and_its_accept_past_the_limit() {
        let long = "u".repeat(SEARCH_FROM);
        let seen = |request: String| {
            let mut seen = RequestSeen::default();
            for piece in request.as_bytes().chunks(4096) {
                seen.note(piece);
            }
            seen.is_page_request()
        };
        let accept = "\r\naccept: text/html\r\n\r\n";
        assert!(seen(format!("GET /users/{long} HTTP/1.1{accept}")));
        assert!(seen(format!("HEAD /{long} HTTP/1.1{accept}")));
        assert!(!seen(format!("GET /api/users/{long} HTTP/1.1{accept}")));
        assert!(!seen(format!("POST /users/{long} HTTP/1.1{accept}")));
        assert!(!seen(format!("GET /users/{long} HTTP/1.1\r\n\r\n")));
        // Under the limit nothing is searched: an ordinary request pays for no search.
        assert!(!seen(format!("GET /users/x HTTP/1.1{accept}")));
    }
}
