//! The layers of `src/`, kept: every module sits on a floor (listed, ground floor first, in the
//! module documentation of `src/lib.rs`) and imports only from the floors below it; and no
//! files import each other in a loop, directly or round about.
//!
//! It reads the code as text: each file's `use` declarations and the `crate::`, `super::` and
//! `self::` paths in its code (and paths into the child modules it declares), with comments
//! and string literals left out. A path is followed through the re-exports of the module it
//! names (`pub use child::Item`) to the file that defines the item. A module's re-exports of
//! its own children are not edges of the loop check: they are the door the rest of the crate
//! comes in by, not something the module's code uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path inside the crate: `["store", "cosmos"]`; the crate root is `[]`.
type ModulePath = Vec<String>;

/// One import of a file: the path as written, and whether it re-exports.
struct Import {
    path: String,
    reexport: bool,
}

/// A source file read for its imports.
struct SourceFile {
    name: String,
    module: ModulePath,
    imports: Vec<(Import, ModulePath)>,
    /// The items it re-exports: the name outsiders use, and the path it stands for.
    reexports: BTreeMap<String, ModulePath>,
}

#[test]
fn src_imports_run_down_the_floors_only_and_files_form_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).expect("src/lib.rs");
    let floors = floors_of(&lib);
    assert!(!floors.is_empty(), "src/lib.rs lists no floors");
    let mut sources = Vec::new();
    read_tree(&root, &root, &mut sources);
    let problems = check(&floors, &sources);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The floors of the picture in `lib.rs`'s documentation: lines `//! N. `a`, `b`: ...`, ground
/// floor first; each module named in back-quotes before the first colon.
fn floors_of(lib: &str) -> BTreeMap<String, usize> {
    let mut floors = BTreeMap::new();
    for line in lib.lines() {
        let Some(text) = line.strip_prefix("//!") else {
            continue;
        };
        let text = text.trim();
        let Some((number, rest)) = text.split_once(". ") else {
            continue;
        };
        let Ok(floor) = number.parse::<usize>() else {
            continue;
        };
        let names = rest.split(':').next().unwrap_or_default();
        for name in names.split('`').skip(1).step_by(2) {
            floors.insert(name.to_owned(), floor);
        }
    }
    floors
}

/// Every `.rs` file below `dir` but the binary's `main.rs`, which is not part of the library.
fn read_tree(root: &Path, dir: &Path, sources: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("readable src")
        .map(|entry| entry.expect("readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_tree(root, &path, sources);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .strip_prefix(root)
                .expect("below src")
                .to_string_lossy()
                .replace('\\', "/");
            if name != "main.rs" {
                let text = std::fs::read_to_string(&path).expect("readable source");
                sources.push((name, text));
            }
        }
    }
}

/// What is wrong with `sources` (`(path below src, text)`) against `floors`: each upward or
/// sideways import between modules, each module on no floor, and each loop of files.
fn check(floors: &BTreeMap<String, usize>, sources: &[(String, String)]) -> Vec<String> {
    let files: Vec<SourceFile> = sources
        .iter()
        .map(|(name, text)| read_file(name, text))
        .collect();
    let by_module: BTreeMap<&ModulePath, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (&f.module, i))
        .collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (from, file) in files.iter().enumerate() {
        let Some(home) = top(&file.module) else {
            continue;
        };
        let Some(&floor) = floors.get(home) else {
            problems.push(format!(
                "{}: module `{home}` is on no floor of the picture in src/lib.rs",
                file.name
            ));
            continue;
        };
        for (import, target) in &file.imports {
            let Some(to) = resolve(&files, &by_module, target) else {
                continue;
            };
            let Some(there) = top(&files[to].module) else {
                continue;
            };
            if there != home {
                match floors.get(there) {
                    Some(&below) if below < floor => {}
                    Some(&other) => problems.push(format!(
                        "{}: `{}` imports `{there}` (floor {other}) from `{home}` (floor \
                         {floor}): a module imports only from the floors below it",
                        file.name, import.path
                    )),
                    None => {}
                }
            }
            let into_own_child = files[to].module.starts_with(&file.module);
            if to != from && !(import.reexport && into_own_child) {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    if let Some(cycle) = find_cycle(files.len(), &edges) {
        let names: Vec<&str> = cycle.iter().map(|&i| files[i].name.as_str()).collect();
        problems.push(format!(
            "files import each other in a loop: {}",
            names.join(" -> ")
        ));
    }
    problems
}

/// The top-level module a module path belongs to; `None` for the crate root.
fn top(module: &ModulePath) -> Option<&str> {
    module.first().map(String::as_str)
}

/// The file that defines what `path` names: the deepest file module it goes through, followed
/// through that module's re-exports.
fn resolve(
    files: &[SourceFile],
    by_module: &BTreeMap<&ModulePath, usize>,
    path: &ModulePath,
) -> Option<usize> {
    let mut path = path.clone();
    // Each step follows one re-export; a chain longer than this is a loop of re-exports.
    for _ in 0..16 {
        let (depth, file) = (0..=path.len())
            .rev()
            .find_map(|n| by_module.get(&path[..n].to_vec()).map(|&f| (n, f)))?;
        match path
            .get(depth)
            .and_then(|name| files[file].reexports.get(name))
        {
            Some(target) => {
                let mut next = target.clone();
                next.extend_from_slice(&path[depth + 1..]);
                path = next;
            }
            None => return Some(file),
        }
    }
    None
}

/// A loop in `edges`, as the files in order with the first repeated at the end.
fn find_cycle(count: usize, edges: &BTreeMap<usize, BTreeSet<usize>>) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        node: usize,
        edges: &BTreeMap<usize, BTreeSet<usize>>,
        marks: &mut [Mark],
        trail: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        marks[node] = Mark::Open;
        trail.push(node);
        for &next in edges.get(&node).into_iter().flatten() {
            match marks[next] {
                Mark::Open => {
                    let start = trail.iter().position(|&n| n == next).unwrap_or(0);
                    let mut cycle = trail[start..].to_vec();
                    cycle.push(next);
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, edges, marks, trail) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        trail.pop();
        marks[node] = Mark::Done;
        None
    }
    let mut marks = vec![Mark::New; count];
    (0..count).find_map(|node| {
        (marks[node] == Mark::New)
            .then(|| visit(node, edges, &mut marks, &mut Vec::new()))
            .flatten()
    })
}

/// The module path of a file below `src/`: `store/mod.rs` and `store.rs` are `store`.
fn module_of(name: &str) -> ModulePath {
    let stem = name.strip_suffix(".rs").unwrap_or(name);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        parts.pop();
    }
    parts
}

fn read_file(name: &str, text: &str) -> SourceFile {
    let module = module_of(name);
    let code = strip_comments_and_strings(text);
    let children = declared_children(&code);
    let mut imports = Vec::new();
    let mut reexports = BTreeMap::new();
    let mut used = vec![false; code.len()];
    for (start, end, reexport) in use_declarations(&code) {
        used[start..end].fill(true);
        let scope = inline_modules_at(&code, start);
        for tree in expand_use_tree(&code[start..end]) {
            let (path, alias) = split_alias(&tree);
            let Some(target) = absolute(&module, &scope, &children, &path) else {
                continue;
            };
            if reexport && let Some(last) = path.last() {
                let name = alias.unwrap_or(last.clone());
                if name != "*" && name != "self" {
                    reexports.insert(name, target.clone());
                }
            }
            imports.push((
                Import {
                    path: tree.clone(),
                    reexport,
                },
                target,
            ));
        }
    }
    for (start, path) in code_paths(&code, &children) {
        if used[start] {
            continue;
        }
        let scope = inline_modules_at(&code, start);
        let segments: Vec<String> = path.split("::").map(str::to_owned).collect();
        if let Some(target) = absolute(&module, &scope, &children, &segments) {
            imports.push((
                Import {
                    path,
                    reexport: false,
                },
                target,
            ));
        }
    }
    SourceFile {
        name: name.to_owned(),
        module,
        imports,
        reexports,
    }
}

/// `text` with comments, string literals and character literals blanked out (same length, so
/// positions still match), lifetimes kept.
fn strip_comments_and_strings(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to.min(bytes.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < bytes.len() {
                if bytes[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if bytes[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_start(rest) {
            let open = 2 + hashes + usize::from(rest[0] == b'b');
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let end = bytes[i + open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(bytes.len(), |n| i + open + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), left alone.
            let end = if rest.get(1) == Some(&b'\\') {
                rest.iter()
                    .skip(2)
                    .position(|&b| b == b'\'')
                    .map(|n| i + 3 + n)
            } else {
                let width = std::str::from_utf8(&rest[1..])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(5)]).ok())
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (rest.get(1 + width) == Some(&b'\'')).then_some(i + 2 + width)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// `r"`, `r#"`, `br##"`...: the number of `#`s of a raw string literal starting here.
fn raw_string_start(rest: &[u8]) -> Option<usize> {
    let rest = rest.strip_prefix(b"b").unwrap_or(rest);
    let rest = rest.strip_prefix(b"r")?;
    let hashes = rest.iter().take_while(|&&b| b == b'#').count();
    (rest.get(hashes) == Some(&b'"')).then_some(hashes)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The words of `code` with their positions.
fn words(code: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = code.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !is_ident(bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        Some((start, &code[start..i]))
    })
}

/// The modules a file declares in files of their own: `mod name;`.
fn declared_children(code: &str) -> BTreeSet<String> {
    let mut children = BTreeSet::new();
    let all: Vec<(usize, &str)> = words(code).collect();
    for pair in all.windows(2) {
        let ((_, keyword), (at, name)) = (pair[0], pair[1]);
        if keyword == "mod" && code[at + name.len()..].trim_start().starts_with(';') {
            children.insert(name.to_owned());
        }
    }
    children
}

/// The names of the inline modules (`mod tests { ... }`) that enclose position `at`.
fn inline_modules_at(code: &str, at: usize) -> Vec<String> {
    let bytes = code.as_bytes();
    let all: Vec<(usize, &str)> = words(code).collect();
    let mut scope = Vec::new();
    for pair in all.windows(2) {
        let ((start, keyword), (name_at, name)) = (pair[0], pair[1]);
        if keyword != "mod" || start > at {
            continue;
        }
        let after = name_at + name.len();
        let gap = code[after..].len() - code[after..].trim_start().len();
        let open = after + gap;
        if bytes.get(open) != Some(&b'{') {
            continue;
        }
        let mut depth = 0usize;
        let mut close = bytes.len();
        for (j, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        if open < at && at < close {
            scope.push(name.to_owned());
        }
    }
    scope
}

/// The `use` declarations of `code`: the span of each one's tree, and whether it is a
/// re-export (`pub use`, `pub(crate) use`...).
fn use_declarations(code: &str) -> Vec<(usize, usize, bool)> {
    let mut found = Vec::new();
    for (start, word) in words(code) {
        let before = code[..start].trim_end();
        let boundary = before.is_empty() || before.ends_with([';', '{', '}', ']', ')']);
        if word != "use" || !(boundary || before.ends_with("pub")) {
            continue;
        }
        let reexport = before.ends_with("pub") || before.ends_with(')') && pub_paren(before);
        let tree_start = start + 3;
        let Some(length) = code[tree_start..].find(';') else {
            continue;
        };
        found.push((tree_start, tree_start + length, reexport));
    }
    found
}

/// Whether `before` ends with `pub(...)`.
fn pub_paren(before: &str) -> bool {
    before
        .rfind('(')
        .is_some_and(|open| before[..open].trim_end().ends_with("pub"))
}

/// `crate::a::{b, c::{d as e}}` as `crate::a::b`, `crate::a::c::d as e`.
fn expand_use_tree(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.trim().trim_start_matches("::");
    let Some(open) = tree.find('{') else {
        return vec![match tree.split_once(" as ") {
            Some((path, alias)) => format!("{} as {}", path.replace(' ', ""), alias.trim()),
            None => tree.replace(' ', ""),
        }];
    };
    let prefix = tree[..open].replace(' ', "");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
        .into_iter()
        .filter(|part| !part.trim().is_empty())
        .flat_map(expand_use_tree)
        .map(|tail| format!("{prefix}{tail}"))
        .collect()
}

/// A use path's segments, and the name it is imported as (`a::b as c`: `c`).
fn split_alias(tree: &str) -> (Vec<String>, Option<String>) {
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias.trim().to_owned())),
        None => (tree, None),
    };
    let segments = path
        .split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    (segments, alias)
}

/// The paths in code outside `use` declarations that start at `crate`, `super` or `self`, or
/// at a child module the file declares: `crate::telemetry::metrics::record`.
fn code_paths(code: &str, children: &BTreeSet<String>) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    for (start, word) in words(code) {
        let anchored = matches!(word, "crate" | "super" | "self") || children.contains(word);
        let after_colons = start >= 2 && &code[start - 2..start] == "::";
        if !anchored || after_colons || !code[start + word.len()..].starts_with("::") {
            continue;
        }
        let mut end = start + word.len();
        while code[end..].starts_with("::") && bytes.get(end + 2).is_some_and(|&b| is_ident(b)) {
            end += 2;
            while end < bytes.len() && is_ident(bytes[end]) {
                end += 1;
            }
        }
        found.push((start, code[start..end].to_owned()));
    }
    found
}

/// The module path `path` names, written in `module` inside the inline modules `scope`;
/// `None` for a path into another crate.
fn absolute(
    module: &ModulePath,
    scope: &[String],
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<ModulePath> {
    let mut here: ModulePath = module.iter().chain(scope).cloned().collect();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            here.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(step) = rest.first().map(String::as_str) {
                match step {
                    "super" => {
                        here.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        Some(first) if scope.is_empty() && children.contains(first) => {}
        _ => return None,
    }
    here.extend(
        rest.iter()
            .filter(|s| s.as_str() != "self" && s.as_str() != "*")
            .cloned(),
    );
    Some(here)
}

/// The guard itself, on small made-up trees: it passes what it should and fails what it should.
mod guard {
    use super::*;

    fn floors() -> BTreeMap<String, usize> {
        floors_of(
            "//! 1. `domain`: words.\n//! 2. `store`, `error`: keeping.\n//! 3. `api`: serving.\n",
        )
    }

    fn sources(files: &[(&str, &str)]) -> Vec<(String, String)> {
        files
            .iter()
            .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
            .collect()
    }

    #[test]
    fn the_picture_is_read_floor_by_floor() {
        let floors = floors();
        assert_eq!(floors["domain"], 1);
        assert_eq!(floors["store"], 2);
        assert_eq!(floors["error"], 2);
        assert_eq!(floors["api"], 3);
    }

    #[test]
    fn downward_imports_pass() {
        let problems = check(
            &floors(),
            &sources(&[
                ("lib.rs", "pub mod api;\npub mod domain;\npub mod store;\n"),
                ("domain/mod.rs", "pub struct Id;\n"),
                ("store/mod.rs", "use crate::domain::Id;\n"),
                (
                    "api/mod.rs",
                    "use crate::{domain::Id, store};\nfn f() { crate::store::g() }",
                ),
            ]),
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn an_upward_import_fails_naming_the_file_and_the_import() {
        let problems = check(
            &floors(),
            &sources(&[
                ("domain/mod.rs", "pub struct Id;\n"),
                (
                    "store/mod.rs",
                    "fn f() { let _ = crate::api::handler(); }\n",
                ),
                ("api/mod.rs", "pub fn handler() {}\n"),
            ]),
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("store/mod.rs: `crate::api::handler`"));
    }

    #[test]
    fn an_import_from_a_neighbour_on_the_same_floor_fails() {
        let problems = check(
            &floors(),
            &sources(&[
                ("store/mod.rs", "use crate::error::Error;\n"),
                ("error.rs", "pub struct Error;\n"),
            ]),
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("imports `error` (floor 2) from `store` (floor 2)"));
    }

    #[test]
    fn a_module_on_no_floor_fails() {
        let problems = check(&floors(), &sources(&[("web/mod.rs", "")]));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("`web` is on no floor"));
    }

    #[test]
    fn files_that_import_each_other_fail() {
        let problems = check(
            &floors(),
            &sources(&[
                ("store/mod.rs", "mod a;\nmod b;\npub use a::A;\n"),
                ("store/a.rs", "use super::b::B;\npub struct A;\n"),
                ("store/b.rs", "pub struct B;\nfn f() { super::A; }\n"),
            ]),
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0],
            "files import each other in a loop: store/a.rs -> store/b.rs -> store/a.rs"
        );
    }

    #[test]
    fn a_parent_that_only_re_exports_its_children_closes_no_loop() {
        let problems = check(
            &floors(),
            &sources(&[
                (
                    "store/mod.rs",
                    "mod a;\nmod b;\npub use a::A;\npub use b::{B, C};\n",
                ),
                ("store/a.rs", "use super::B;\npub struct A;\n"),
                ("store/b.rs", "pub struct B;\npub struct C;\n"),
            ]),
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn comments_strings_and_test_modules_paths_are_read_right() {
        let text = "// use crate::api;\nconst S: &str = \"crate::api::x\";\nconst C: char = '\"';\n\
                    fn f<'a>(_: &'a str) {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    \
                    use super::super::Id;\n}\n";
        let file = read_file("store/mod.rs", text);
        let targets: Vec<&ModulePath> = file.imports.iter().map(|(_, target)| target).collect();
        assert_eq!(
            targets,
            [&vec!["store".to_owned()], &vec!["Id".to_owned()]],
            "only the test module's two imports"
        );
    }
}
