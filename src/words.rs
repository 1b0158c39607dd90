//! How the commands say a count: "1 comment", "2 comments", "0 comments". One function, so
//! that every count printed agrees with its number; and a long list as its first lines and
//! how many more ([`first_lines`]). And how they print what they say to
//! standard output ([`print`]), so that a reader who goes away ends nothing but the output.

use std::fmt::Display;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// `n` and the noun that agrees with it: `one` for exactly one, `many` otherwise.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One line per item, the first `max` of them, then, when there are `total` in all and some
/// were left out, the line `more` says of how many were.
pub fn first_lines<T: Display>(
    items: &[T],
    max: usize,
    total: usize,
    more: impl FnOnce(usize) -> String,
) -> Vec<String> {
    let mut lines: Vec<String> = items.iter().take(max).map(ToString::to_string).collect();
    if total > lines.len() {
        lines.push(more(total - lines.len()));
    }
    lines
}

/// Set once standard output's reader has gone away: nothing more is written.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output. When its reader has gone away (`cosmos-blog openapi
/// --out - | head -c 200`) the rest of the output is dropped quietly and the command goes on
/// as if it were discarded: a broken pipe is no failure of the command, and no panic (which
/// is what `print!` does). Any other write error is said once on stderr.
pub fn print(text: &str) {
    if READER_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        READER_GONE.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to standard output: {e}");
        }
    }
}

/// [`print`] of `line` and a line break.
pub fn print_line(line: &str) {
    print(&format!("{line}\n"));
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1u64, "comment", "comments"), "1 comment");
        assert_eq!(count(0u64, "comment", "comments"), "0 comments");
        assert_eq!(count(2u32, "blog", "blogs"), "2 blogs");
        assert_eq!(count(1u8, "copy", "copies"), "1 copy");
    }
}
