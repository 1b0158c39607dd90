//! Patterns every tool compiles: each `pattern` in the syntax ECMA-262 and Python read alike.

use super::*;

/// Every `pattern` of `value` (a document or part of one), with where it is.
fn patterns_in(value: &Value, at: &str, found: &mut Vec<(String, String)>) {
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                let here = format!("{at}/{key}");
                match (key.as_str(), member) {
                    ("pattern", Value::String(pattern)) => found.push((here, pattern.clone())),
                    _ => patterns_in(member, &here, found),
                }
            }
        }
        Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                patterns_in(item, &format!("{at}/{n}"), found);
            }
        }
        _ => {}
    }
}

/// Why `pattern` is not in the part of regular-expression syntax that ECMA-262 (JSON
/// Schema's dialect, in its Unicode mode), Python's `re` (schemathesis, hypothesis,
/// openapi-python-client), Java and Rust read alike, if it is not: no Unicode property
/// escapes (`\p{L}`, which Python cannot compile), no `\u{...}` or `\x{...}`, no named
/// groups, lookbehinds, backreferences or inline flags, no set operations or nested `[` in
/// a class, braces only as quantifiers, and nothing but ASCII punctuation escaped.
fn portable_syntax_problem(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\\' => {
                let Some(escaped) = next else {
                    return Some("a trailing backslash".into());
                };
                match escaped {
                    'u' => {
                        let hex = chars.get(i + 2..i + 6).unwrap_or_default();
                        if hex.len() != 4 || !hex.iter().all(char::is_ascii_hexdigit) {
                            return Some(format!("`\\u` without four hex digits at {i}"));
                        }
                        i += 6;
                        continue;
                    }
                    'd' | 'D' | 's' | 'S' | 'n' | 'r' | 't' => {}
                    e if e.is_ascii_punctuation() => {}
                    e => return Some(format!("the escape `\\{e}` at {i}")),
                }
                i += 2;
                continue;
            }
            '[' if in_class => return Some(format!("a `[` inside a class at {i}")),
            '[' => {
                in_class = true;
                if next == Some(':') {
                    return Some(format!("a POSIX class at {i}"));
                }
            }
            ']' if in_class => in_class = false,
            '&' | '~' | '|' | '-' if in_class && next == Some(c) => {
                return Some(format!(
                    "`{c}{c}` inside a class at {i} (a set operation in Python)"
                ));
            }
            _ if in_class => {}
            '(' if next == Some('?') => {
                let kind: String = chars.get(i + 2).into_iter().collect();
                if !matches!(kind.as_str(), ":" | "=" | "!") {
                    return Some(format!("the group `(?{kind}` at {i}"));
                }
            }
            '{' => {
                let end = chars[i..].iter().position(|&c| c == '}').map(|n| i + n);
                let body: String =
                    end.map_or(String::new(), |end| chars[i + 1..end].iter().collect());
                let quantifier = !body.is_empty()
                    && body.split(',').count() <= 2
                    && body.split(',').next().is_some_and(|n| !n.is_empty())
                    && body.chars().all(|c| c.is_ascii_digit() || c == ',');
                match (quantifier, end) {
                    (true, Some(end)) => {
                        i = end + 1;
                        continue;
                    }
                    _ => return Some(format!("a `{{` that is no quantifier at {i}")),
                }
            }
            ']' | '}' => return Some(format!("an unescaped `{c}` at {i}")),
            _ => {}
        }
        i += 1;
    }
    in_class.then(|| "an unclosed class".into())
}

#[test]
fn every_pattern_is_in_the_syntax_that_ecma_262_and_python_read_alike() {
    for tenancy in LAYOUTS {
        let mut found = Vec::new();
        patterns_in(&document(tenancy), "", &mut found);
        assert!(
            found.len() >= 5,
            "{tenancy}: ids, texts and dates have patterns"
        );
        for (at, pattern) in found {
            if let Some(problem) = portable_syntax_problem(&pattern) {
                panic!("{tenancy}: the pattern at {at} has {problem}: {pattern}");
            }
        }
    }
    // The check itself: what it must refuse.
    for refused in [
        r"^[\p{L}]$",
        r"^\P{Cc}$",
        r"^\u{1F600}$",
        r"^(?<name>a)$",
        r"^(?<=a)b$",
        r"^(a)\1$",
        r"^(?i)a$",
        r"^[a[b]]$",
        r"^[a&&b]$",
        r"^a{x}$",
        r"^a]$",
        r"^\x{41}$",
        r"^\w+$",
    ] {
        assert!(portable_syntax_problem(refused).is_some(), "{refused}");
    }
    for taken in [
        r"^(?:a|b){1,3}$",
        r"^(?!\.{1,2}$)[^\u0000-\u001F/]*$",
        r"^\d{4}-\d{2}$",
    ] {
        assert_eq!(portable_syntax_problem(taken), None, "{taken}");
    }
}
