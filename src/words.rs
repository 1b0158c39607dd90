//! How the commands say a count: "1 comment", "2 comments", "0 comments". One function, so
//! that every count printed agrees with its number.

/// `n` and the noun that agrees with it: `one` for exactly one, `many` otherwise.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
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
