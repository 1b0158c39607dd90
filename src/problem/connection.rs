//! Problem documents for what the HTTP parser refuses before the application sees a request:
//! a request target over its 64 KiB (`414`), headers over its buffer (`431`), malformed
//! HTTP (`400`). hyper answers those itself, with an empty body, and has no setting for what
//! it writes; the limits are fixed in its parser. So the connection's writes are watched
//! ([`Refusals`]): a response that is such a bare refusal (an error status, `content-length:
//! 0`, the connection closing, no content type: never one of the application's, whose every
//! refusal carries a problem document) is written as the same status with a problem
//! document instead.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::{CONTENT_TYPE, Problem};

/// The parser's own refusals are a status line and three or four short headers; anything
/// longer is a response of the application's.
const MAX_BARE_REFUSAL_BYTES: usize = 512;

/// A listener whose connections answer the parser's refusals with problem documents.
pub struct ProblemListener(pub TcpListener);

impl axum::serve::Listener for ProblemListener {
    type Io = Refusals<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, address) = axum::serve::Listener::accept(&mut self.0).await;
        (Refusals::new(stream), address)
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// A connection whose bare parser refusals are written as problem documents.
pub struct Refusals<T> {
    inner: T,
    /// A rewritten refusal being written, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<T> Refusals<T> {
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            pending: None,
        }
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
        self.pending = Some((problem_response(status), 0));
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
        Pin::new(&mut self.inner).poll_read(cx, buf)
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
}
