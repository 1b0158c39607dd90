//! The OpenAPI description of each data layout (`single`, and `multi` with its tenant
//! routes): the committed
//! `openapi.json` and `openapi.multi.json` are the generated ones; each document is valid
//! OpenAPI 3.1; it describes every route and method the application of its layout serves and
//! nothing else; and for every operation, real responses of the running application validate
//! against the document's schema for their status.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use cosmos_blog::api::openapi;
use cosmos_blog::functions::metadata;
use cosmos_blog::store::{Store, StoreError, StoreResult, Tenancy};
use jsonschema::{Draft, Registry};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;

use testkit::double::{self, Hooks};
use testkit::{Backend, TestApp, backend_tests, binary, eventually, open_backend};

backend_tests!(every_operation_answers_as_the_document_says);

/// The same, on an application of the `multi` layout, in one tenant.
mod multi {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded_every_operation_answers_as_the_document_says() {
        let app = TestApp::spawn(Backend::Embedded)
            .layout(Tenancy::Multi)
            .unaddressed()
            .start()
            .await;
        answers_as_documented(app, Tenancy::Multi).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cosmos_every_operation_answers_as_the_document_says() {
        let app = TestApp::spawn(Backend::Cosmos)
            .layout(Tenancy::Multi)
            .unaddressed()
            .start()
            .await;
        answers_as_documented(app, Tenancy::Multi).await;
    }
}

const LAYOUTS: [Tenancy; 2] = [Tenancy::Single, Tenancy::Multi];

/// The tenant the `multi` application is exercised in.
const TENANT: &str = "t-one";

/// Where the document lives for the JSON Schema validator, so that `$ref`s resolve in it.
const DOCUMENT_URI: &str = "https://cosmos-blog.invalid/openapi.json";

const OPERATION_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn document(tenancy: Tenancy) -> Value {
    serde_json::from_str(&openapi::json_for(tenancy)).expect("the document is JSON")
}

/// `{method, path template} -> operation`, with methods in upper case.
fn operations(doc: &Value) -> BTreeMap<(String, String), &Value> {
    let mut operations = BTreeMap::new();
    for (template, item) in doc["paths"].as_object().into_iter().flatten() {
        for method in OPERATION_METHODS {
            if let Some(operation) = item.get(method) {
                operations.insert((method.to_uppercase(), template.clone()), operation);
            }
        }
    }
    operations
}

/// RFC 6901 escaping of one pointer segment, then percent-encoding for a URI fragment.
fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn fragment(pointer: &str) -> String {
    pointer
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

// ---- the committed file -------------------------------------------------------------------

#[test]
fn the_committed_documents_are_the_generated_ones() {
    for tenancy in LAYOUTS {
        let file = openapi::committed_file(tenancy);
        let committed = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        assert!(
            committed == openapi::json_for(tenancy),
            "{file} is stale: run `cargo run -- openapi --tenancy {tenancy}`"
        );
    }
    assert_eq!(openapi::json(), openapi::json_for(Tenancy::Single));
}

#[test]
fn the_openapi_command_writes_each_layouts_document() {
    for tenancy in LAYOUTS {
        let output = binary!()
            .args(["openapi", "--tenancy", tenancy.name(), "--out", "-"])
            .output();
        assert!(output.status.success());
        assert!(
            output.stdout == openapi::json_for(tenancy).into_bytes(),
            "{tenancy}"
        );
    }
}

// ---- patterns every tool compiles ---------------------------------------------------------

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

// ---- a valid OpenAPI 3.1 document ---------------------------------------------------------

/// The official JSON Schema of OpenAPI 3.1 documents (see `tests/fixtures/openapi/`).
fn openapi_3_1_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../fixtures/openapi/oas-3.1-schema.json"))
            .expect("schema JSON");
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema)
        .expect("the OpenAPI 3.1 schema compiles")
}

/// Why `doc` is not a valid OpenAPI 3.1 document: the official schema's verdict, plus the
/// rules of the specification that the schema cannot express.
fn openapi_problems(doc: &Value) -> Vec<String> {
    let mut problems: Vec<String> = openapi_3_1_validator()
        .iter_errors(doc)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect();
    problems.extend(unresolved_refs(doc));
    problems.extend(path_parameter_mismatches(doc));
    problems.extend(unknown_security_schemes(doc));
    problems.extend(duplicate_operation_ids(doc));
    problems.extend(schemas_that_are_not_json_schema(doc));
    problems.extend(broken_links(doc));
    problems
}

/// The parameters of an operation, its own and its path's: `name -> (in, required)`.
fn parameters_of<'v>(
    doc: &'v Value,
    template: &str,
    operation: &'v Value,
) -> BTreeMap<&'v str, (&'v str, bool)> {
    operation["parameters"]
        .as_array()
        .into_iter()
        .chain(doc["paths"][template]["parameters"].as_array())
        .flatten()
        .filter_map(|p| {
            Some((
                p["name"].as_str()?,
                (p["in"].as_str()?, p["required"] == true),
            ))
        })
        .collect()
}

/// The schema a JSON pointer into an instance of `schema` lands in, following `$ref`s:
/// `None` when the schema has no such field.
fn schema_at<'v>(doc: &'v Value, mut schema: &'v Value, pointer: &str) -> Option<&'v Value> {
    let resolve = |mut schema: &'v Value| {
        while let Some(target) = schema["$ref"].as_str() {
            schema = doc.pointer(target.strip_prefix('#')?)?;
        }
        Some(schema)
    };
    for segment in pointer.split('/').filter(|s| !s.is_empty()) {
        schema = resolve(schema)?;
        schema = match segment.parse::<usize>() {
            Ok(_) => schema.get("items")?,
            Err(_) => schema.get("properties")?.get(segment)?,
        };
    }
    resolve(schema)
}

/// Every response link leads to an operation of the document, gives it each of its required
/// path parameters and only parameters it has, and takes each value from something that is
/// there: a path parameter of the request, or a field of the response's body.
fn broken_links(doc: &Value) -> Vec<String> {
    let operations = operations(doc);
    let by_id: BTreeMap<&str, (&String, &Value)> = operations
        .iter()
        .filter_map(|((_, template), op)| Some((op["operationId"].as_str()?, (template, *op))))
        .collect();
    let mut problems = Vec::new();
    for ((method, template), operation) in &operations {
        let own = parameters_of(doc, template, operation);
        let responses = operation["responses"].as_object().into_iter().flatten();
        for (status, response) in responses {
            let body = &response["content"]["application/json"]["schema"];
            for (name, link) in response["links"].as_object().into_iter().flatten() {
                let what = format!("{method} {template} {status}, link {name}");
                let target = link["operationId"].as_str().unwrap_or_default();
                let Some((target_template, target_operation)) = by_id.get(target) else {
                    problems.push(format!("{what}: no operation {target:?}"));
                    continue;
                };
                let wanted = parameters_of(doc, target_template, target_operation);
                let given = link["parameters"].as_object().cloned().unwrap_or_default();
                for (parameter, (place, required)) in &wanted {
                    if *place == "path" && *required && !given.contains_key(*parameter) {
                        problems.push(format!("{what}: {target} needs {parameter}"));
                    }
                }
                for (parameter, expression) in &given {
                    if !wanted.contains_key(parameter.as_str()) {
                        problems.push(format!("{what}: {target} takes no {parameter}"));
                    }
                    let expression = expression.as_str().unwrap_or_default();
                    let found = match (
                        expression.strip_prefix("$request.path."),
                        expression.strip_prefix("$response.body#"),
                    ) {
                        (Some(name), _) => own.get(name).is_some_and(|(place, _)| *place == "path"),
                        (_, Some(pointer)) => schema_at(doc, body, pointer).is_some(),
                        // The caller's id, on an operation whose caller sends it.
                        _ => expression == PRINCIPAL_EXPRESSION && by_principal(operation),
                    };
                    if !found {
                        problems.push(format!(
                            "{what}: {parameter} = {expression:?} leads nowhere"
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// The principal header of the request a link follows.
const PRINCIPAL_EXPRESSION: &str = "$request.header.x-ms-client-principal-id";

/// Whether the operation's caller may be named by the principal header.
fn by_principal(operation: &Value) -> bool {
    operation["security"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|requirement| requirement.get("principalHeader").is_some())
}

fn walk<'v>(value: &'v Value, visit: &mut impl FnMut(&'v str, &'v Value)) {
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                visit(key, child);
                walk(child, visit);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| walk(item, visit)),
        _ => {}
    }
}

/// Every `$ref` points into the document itself, at something that exists.
fn unresolved_refs(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(doc, &mut |key, value| {
        if key == "$ref" {
            let target = value.as_str().unwrap_or_default();
            let found = target
                .strip_prefix('#')
                .and_then(|pointer| doc.pointer(pointer));
            if found.is_none() {
                problems.push(format!("$ref {target:?} does not resolve in the document"));
            }
        }
    });
    problems
}

/// Each `{name}` of a path template is a required path parameter of each of its operations
/// (declared by the operation, or once for the whole path), and each path parameter is in
/// the template.
fn path_parameter_mismatches(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for ((method, template), operation) in operations(doc) {
        let in_template: BTreeSet<&str> = template
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect();
        let path_level = doc["paths"][&template]["parameters"].as_array();
        let declared: BTreeSet<&str> = operation["parameters"]
            .as_array()
            .into_iter()
            .chain(path_level)
            .flatten()
            .filter(|p| p["in"] == "path")
            .inspect(|p| {
                if p["required"] != true {
                    problems.push(format!(
                        "{method} {template}: path parameter {p} not required"
                    ));
                }
            })
            .filter_map(|p| p["name"].as_str())
            .collect();
        if in_template != declared {
            problems.push(format!(
                "{method} {template}: template parameters {in_template:?}, declared {declared:?}"
            ));
        }
    }
    problems
}

fn unknown_security_schemes(doc: &Value) -> Vec<String> {
    let schemes = &doc["components"]["securitySchemes"];
    let mut requirements: Vec<&Value> = doc["security"].as_array().into_iter().flatten().collect();
    for operation in operations(doc).into_values() {
        requirements.extend(operation["security"].as_array().into_iter().flatten());
    }
    requirements
        .into_iter()
        .flat_map(|r| r.as_object().into_iter().flatten())
        .filter(|(name, _)| schemes.get(name.as_str()).is_none())
        .map(|(name, _)| format!("security requirement {name:?} names no security scheme"))
        .collect()
}

fn duplicate_operation_ids(doc: &Value) -> Vec<String> {
    let mut seen = BTreeSet::new();
    operations(doc)
        .into_iter()
        .filter_map(
            |((method, template), operation)| match operation["operationId"].as_str() {
                None => Some(format!("{method} {template} has no operationId")),
                Some(id) if !seen.insert(id.to_owned()) => Some(format!("operationId {id} twice")),
                Some(_) => None,
            },
        )
        .collect()
}

/// The official schema only checks that a Schema Object is an object: check each against
/// JSON Schema 2020-12 (the dialect of OpenAPI 3.1).
fn schemas_that_are_not_json_schema(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    walk(doc, &mut |key, value| {
        if key == "schema" || key == "schemas" {
            let schemas: Vec<&Value> = if key == "schemas" {
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(_, s)| s)
                    .collect()
            } else {
                vec![value]
            };
            for schema in schemas {
                if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                    problems.push(format!("not a JSON Schema: {e} in {schema}"));
                }
            }
        }
    });
    problems
}

#[test]
fn the_documents_are_valid_openapi_3_1() {
    for tenancy in LAYOUTS {
        let doc = document(tenancy);
        assert_eq!(doc["openapi"], "3.1.0");
        let problems = openapi_problems(&doc);
        assert!(problems.is_empty(), "{tenancy}: {problems:#?}");
    }
}

#[test]
fn the_multi_document_puts_every_operation_under_its_tenant_and_q7_only_there() {
    let single = document(Tenancy::Single);
    let multi = document(Tenancy::Multi);
    let tenant_parameter = json!({
        "name": "tenantId",
        "in": "path",
        "description": "The blog (tenant) addressed.",
        "required": true,
        "schema": {"$ref": "#/components/schemas/TenantId"},
    });
    assert_eq!(
        multi["components"]["schemas"]["TenantId"]["pattern"],
        single["components"]["schemas"]["UserId"]["pattern"],
        "a tenant id follows the id rules"
    );
    for (template, item) in multi["paths"].as_object().expect("paths") {
        // The health probe is the site's, the same in every layout.
        if template == cosmos_blog::api::HEALTH_PATH {
            continue;
        }
        assert!(
            template.starts_with("/api/tenants/{tenantId}/"),
            "{template} is not under its tenant"
        );
        // Declared once for the path, like the user and post ids' rules, and nowhere else.
        assert_eq!(item["parameters"], json!([tenant_parameter]), "{template}");
        for (_, operation) in operations(&multi)
            .iter()
            .filter(|((_, t), _)| t == template)
        {
            let named_tenant = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"] == "tenantId");
            assert!(!named_tenant, "{template} declares tenantId twice");
            // An invalid tenant id is a bad request, whatever the operation.
            assert!(operation["responses"].get("400").is_some(), "{template}");
        }
    }
    let operation_ids = |doc: &Value| -> BTreeSet<String> {
        operations(doc)
            .values()
            .filter_map(|op| op["operationId"].as_str().map(str::to_owned))
            .collect()
    };
    let mut only_multi: Vec<String> = operation_ids(&multi)
        .difference(&operation_ids(&single))
        .cloned()
        .collect();
    only_multi.sort();
    assert_eq!(only_multi, ["ListUsers"]);
    assert!(operation_ids(&single).is_subset(&operation_ids(&multi)));
    assert_eq!(
        multi["paths"]["/api/tenants/{tenantId}/users"]["get"]["operationId"],
        "ListUsers"
    );
    assert!(single["paths"].get("/api/users").is_none());
}

/// A client can follow the answers: from a new post to it, its comments and likes and its
/// author; from a new comment or like back to its post; from a page to the next. (That each
/// link leads somewhere real is part of the validation above.)
#[test]
fn answers_link_to_the_operations_on_what_they_name() {
    for tenancy in LAYOUTS {
        let doc = document(tenancy);
        let template = |path: &str| match tenancy {
            Tenancy::Single => path.to_owned(),
            Tenancy::Multi => path.replacen("/api", "/api/tenants/{tenantId}", 1),
        };
        let links = |path: &str, method: &str, status: &str| -> BTreeSet<String> {
            doc["paths"][template(path)][method]["responses"][status]["links"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, link)| format!("{name}->{}", link["operationId"].as_str().unwrap()))
                .collect()
        };
        let created = links("/api/posts", "post", "201");
        for expected in [
            "GetPost->GetPost",
            "ListComments->ListComments",
            "ListLikes->ListLikes",
            "AddComment->AddComment",
            "LikePost->LikePost",
            "GetAuthor->GetUser",
        ] {
            assert!(
                created.contains(expected),
                "{tenancy}: {expected} in {created:?}"
            );
        }
        let comment = links("/api/posts/{postId}/comments", "post", "201");
        assert!(
            comment.contains("DeleteComment->DeleteComment"),
            "{comment:?}"
        );
        let page = links("/api/posts/{postId}/comments", "get", "200");
        assert!(page.contains("NextPage->ListComments"), "{page:?}");
        let user = links("/api/users/{userId}", "put", "201");
        assert!(user.contains("ListUserPosts->ListUserPosts"), "{user:?}");
        // A stateful client holding an identity: refused as unregistered, it registers, and
        // the new user leads on to writing.
        assert!(user.contains("CreatePost->CreatePost"), "{user:?}");
        for (path, method, status) in [
            ("/api/posts", "post", "404"),
            ("/api/posts/{postId}/comments", "post", "404"),
            ("/api/users/{userId}", "put", "403"),
        ] {
            let refused = links(path, method, status);
            assert!(
                refused.contains("RegisterCaller->PutUser"),
                "{method} {path} {status}: {refused:?}"
            );
        }
        let public = &doc["paths"][template("/api/feed")]["get"]["security"];
        assert_eq!(public, &serde_json::json!([]), "public operations say so");
        assert!(doc["servers"].as_array().is_some_and(|s| !s.is_empty()));
        let post = &doc["paths"][template("/api/posts")]["post"]["responses"]["201"];
        let tenant = &post["links"]["GetPost"]["parameters"]["tenantId"];
        match tenancy {
            Tenancy::Single => assert!(tenant.is_null()),
            Tenancy::Multi => assert_eq!(tenant, "$request.path.tenantId"),
        }
    }
}

/// The validation above can fail: each of these breakages is caught.
#[test]
fn broken_documents_are_refused() {
    type Breakage = fn(&mut Value);
    let multi_breakages: [(&str, Breakage); 2] = [
        ("the tenant parameter missing", |d| {
            d["paths"]["/api/tenants/{tenantId}/feed"]["parameters"] = json!([])
        }),
        ("the tenant parameter not required", |d| {
            d["paths"]["/api/tenants/{tenantId}/posts/{postId}"]["parameters"][0]["required"] =
                json!(false)
        }),
    ];
    let multi = document(Tenancy::Multi);
    for (what, breakage) in multi_breakages {
        let mut broken = multi.clone();
        breakage(&mut broken);
        assert!(
            !openapi_problems(&broken).is_empty(),
            "a multi document with {what} passed validation"
        );
    }
    let breakages: [(&str, Breakage); 11] = [
        ("no info", |d| d["info"] = Value::Null),
        ("OpenAPI 3.0", |d| d["openapi"] = json!("3.0.3")),
        ("a response without description", |d| {
            d["paths"]["/api/feed"]["get"]["responses"]["200"]["description"] = Value::Null
        }),
        ("an unknown field in an operation", |d| {
            d["paths"]["/api/feed"]["get"]["colour"] = json!("blue")
        }),
        ("a $ref to a missing schema", |d| {
            d["components"]["schemas"]["Timestamp"] = Value::Null;
            d["components"]["schemas"]
                .as_object_mut()
                .map(|s| s.remove("Timestamp"));
        }),
        ("an undeclared path parameter", |d| {
            d["paths"]["/api/posts/{postId}"]["get"]["parameters"] = json!([])
        }),
        ("an unknown security scheme", |d| {
            d["components"]["securitySchemes"]
                .as_object_mut()
                .map(|s| s.remove("bearerJwt"));
        }),
        ("a schema that is not JSON Schema", |d| {
            d["components"]["schemas"]["Post"]["required"] = json!("id")
        }),
        ("a link to no operation", |d| {
            d["paths"]["/api/posts"]["post"]["responses"]["201"]["links"]["GetPost"]["operationId"] =
                json!("GetPosting")
        }),
        ("a link to a field the body does not have", |d| {
            d["paths"]["/api/posts"]["post"]["responses"]["201"]["links"]["GetPost"]["parameters"]
                ["postId"] = json!("$response.body#/postIdentifier")
        }),
        ("a link without a path parameter", |d| {
            d["paths"]["/api/posts"]["post"]["responses"]["201"]["links"]["GetPost"]["parameters"] =
                json!({})
        }),
    ];
    let doc = document(Tenancy::Single);
    for (what, breakage) in breakages {
        let mut broken = doc.clone();
        breakage(&mut broken);
        assert!(
            !openapi_problems(&broken).is_empty(),
            "a document with {what} passed validation"
        );
    }
}

// ---- every route and method, and nothing else ---------------------------------------------

/// Methods probed on every documented path. HEAD is left out: axum answers it for every GET,
/// as HTTP requires, and OpenAPI does not list it separately.
const PROBED_METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"];

#[derive(Debug, PartialEq, Eq)]
enum Routing {
    /// A handler answered (whatever it said).
    Handled,
    NoSuchRoute,
    MethodNotAllowed,
}

async fn routing_of(response: reqwest::Response) -> Routing {
    let status = response.status();
    if status != StatusCode::NOT_FOUND && status != StatusCode::METHOD_NOT_ALLOWED {
        return Routing::Handled;
    }
    let problem: Value = response.json().await.unwrap_or_default();
    match problem["code"].as_str() {
        Some("route-not-found") => Routing::NoSuchRoute,
        Some("method-not-allowed") => Routing::MethodNotAllowed,
        _ => Routing::Handled,
    }
}

/// How `tenancy` addresses an `/api` path: as it is, or under [`TENANT`]'s prefix. Paths
/// already under a tenant, the site's health probe, and those outside `/api`, are left as they
/// are.
fn in_layout(tenancy: Tenancy, path: &str) -> String {
    let site_wide = path.split('?').next() == Some(cosmos_blog::api::HEALTH_PATH);
    match (tenancy, path.strip_prefix("/api/")) {
        (Tenancy::Multi, Some(rest)) if !rest.starts_with("tenants/") && !site_wide => {
            format!("/api/tenants/{TENANT}/{rest}")
        }
        _ => path.to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_document_describes_every_route_and_method_of_its_layout_and_nothing_else() {
    // Every path of either document is probed on the application of each layout.
    let all_templates: BTreeSet<String> = LAYOUTS
        .iter()
        .flat_map(|tenancy| {
            let doc = document(*tenancy);
            operations(&doc)
                .into_keys()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
        })
        .collect();
    for tenancy in LAYOUTS {
        let app = TestApp::spawn(Backend::Embedded)
            .layout(tenancy)
            .without_pump()
            .unaddressed()
            .start()
            .await;
        let served = app.get(&in_layout(tenancy, "/api/openapi.json")).await;
        assert_eq!(served.status(), StatusCode::OK);
        assert_eq!(served.headers()[CONTENT_TYPE], "application/json");
        let served = served.text().await.expect("body");
        assert!(
            served == openapi::json_for(tenancy),
            "{tenancy}: the served document is not the generated one"
        );
        let doc: Value = serde_json::from_str(&served).expect("JSON");
        let documented = operations(&doc);

        // The operations are the layout's HTTP functions (operationId = function name), which
        // tests/functions.rs shows are exactly the router's routes, the health probe among
        // them (at `/api/health` in every layout).
        let operation_ids: BTreeMap<(String, String), String> = documented
            .iter()
            .map(|(key, op)| {
                (
                    key.clone(),
                    op["operationId"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let functions: BTreeMap<(String, String), String> = metadata::http_functions(tenancy)
            .map(|f| {
                (
                    (f.method.to_uppercase(), f.path_in(tenancy)),
                    f.name.to_owned(),
                )
            })
            .collect();
        assert_eq!(
            operation_ids, functions,
            "{tenancy}: the document's operations and the HTTP functions differ"
        );
        assert!(documented.contains_key(&("GET".to_owned(), "/api/health".to_owned())));
        assert!(
            !documented.contains_key(&("GET".to_owned(), "/".to_owned())),
            "the site's root is the front page, not an operation"
        );

        // The application handles exactly the documented methods on every documented path
        // (with `{tenantId}` filled like every other parameter), and no path of the other
        // layout: in multi, the plain `/api/...` routes are not found.
        for template in &all_templates {
            let path: String = template
                .split('/')
                .map(|s| if s.starts_with('{') { "probe" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let documented_here = documented.keys().any(|(_, t)| t == template);
            for method in PROBED_METHODS {
                let response = app
                    .client
                    .request(
                        Method::from_bytes(method.as_bytes()).expect("method"),
                        app.url(&path),
                    )
                    .header(CONTENT_TYPE, "application/json")
                    .body("{}")
                    .send()
                    .await
                    .expect("request sent");
                let routing = routing_of(response).await;
                let key = (method.to_owned(), template.clone());
                let expected = if documented.contains_key(&key) {
                    Routing::Handled
                } else if documented_here {
                    Routing::MethodNotAllowed
                } else {
                    Routing::NoSuchRoute
                };
                assert_eq!(
                    routing, expected,
                    "{tenancy}: {method} {path} (template {template})"
                );
            }
        }
    }
}

// ---- real responses against the document ---------------------------------------------------

/// The document, registered so that its `$ref`s resolve while validating.
struct Described {
    doc: Value,
    registry: Registry<'static>,
}

impl Described {
    fn new(doc: Value) -> Self {
        let registry = Registry::new()
            .draft(Draft::Draft202012)
            .add(DOCUMENT_URI, doc.clone())
            .expect("document URI")
            .prepare()
            .expect("the document's references resolve");
        Self { doc, registry }
    }

    /// The path template that `path` (without its query) instantiates; literal segments win
    /// over parameters.
    fn template_for(&self, path: &str) -> String {
        let path = path.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.split('/').collect();
        self.doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(template, _)| template)
            .filter_map(|template| {
                let parts: Vec<&str> = template.split('/').collect();
                if parts.len() != segments.len() {
                    return None;
                }
                let mut literal = 0;
                for (part, segment) in parts.iter().zip(&segments) {
                    if part.starts_with('{') {
                        continue;
                    }
                    if part != segment {
                        return None;
                    }
                    literal += 1;
                }
                Some((literal, template.clone()))
            })
            .max()
            .map(|(_, template)| template)
            .unwrap_or_else(|| panic!("{path} is not in the document"))
    }

    /// Validates `instance` against the schema at `pointer` in the document.
    fn validate(&self, pointer: &str, instance: &Value) -> Vec<String> {
        let schema = json!({ "$ref": format!("{DOCUMENT_URI}#{}", fragment(pointer)) });
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .with_registry(&self.registry)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("schema at {pointer} does not compile: {e}"));
        validator
            .iter_errors(instance)
            .map(|e| format!("{e} (at {}, schema {pointer})", e.instance_path()))
            .collect()
    }

    /// How a response differs from what the document says `method template` answers.
    fn mismatches(
        &self,
        method: &str,
        template: &str,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Vec<String> {
        let operation = format!(
            "/paths/{}/{}",
            pointer_segment(template),
            method.to_lowercase()
        );
        let mut pointer = format!("{operation}/responses/{status}");
        let Some(mut response) = self.doc.pointer(&pointer) else {
            return vec![format!("status {status} is not documented")];
        };
        if let Some(target) = response["$ref"].as_str() {
            pointer = target.trim_start_matches('#').to_owned();
            response = self.doc.pointer(&pointer).expect("response $ref resolves");
        }
        let mut problems = Vec::new();
        let media_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase());
        match (response.get("content"), media_type) {
            (None, _) if body.is_empty() => {}
            (None, _) => problems.push("a body, where the document says none".to_owned()),
            (Some(_), None) => problems.push("no Content-Type".to_owned()),
            (Some(content), Some(media_type)) if content.get(&media_type).is_none() => {
                problems.push(format!("Content-Type {media_type} is not documented"));
            }
            (Some(_), Some(media_type)) => {
                let instance = if media_type.ends_with("json") {
                    serde_json::from_slice(body).unwrap_or_else(|e| json!(format!("not JSON: {e}")))
                } else {
                    Value::String(String::from_utf8_lossy(body).into_owned())
                };
                let schema = format!("{pointer}/content/{}/schema", pointer_segment(&media_type));
                problems.extend(self.validate(&schema, &instance));
            }
        }
        // The headers documented here are always sent, so each must be present and valid.
        for name in response["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(n, _)| n)
        {
            let schema = format!("{pointer}/headers/{}/schema", pointer_segment(name));
            match headers.get(name.as_str()).and_then(|v| v.to_str().ok()) {
                None => problems.push(format!("documented header {name} missing")),
                Some(value) => {
                    let instance = serde_json::from_str(value).unwrap_or_else(|_| json!(value));
                    problems.extend(self.validate(&schema, &instance));
                }
            }
        }
        problems
    }
}

/// Documented responses that no call below provokes, because only a broken application can:
/// 409 needs sixty optimistic-concurrency rounds lost in a row, 500 a bug.
const NOT_PROVOKED: [u16; 2] = [409, 500];

/// Which documented responses real ones were checked against.
#[derive(Default)]
struct Coverage(BTreeSet<(String, String, u16)>);

impl Coverage {
    fn assert_complete(&self, doc: &Value) {
        let mut missing = Vec::new();
        for ((method, template), operation) in operations(doc) {
            for status in operation["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(s, _)| s)
            {
                let status: u16 = status.parse().expect("numeric status");
                let key = (method.clone(), template.clone(), status);
                if !NOT_PROVOKED.contains(&status) && !self.0.contains(&key) {
                    missing.push(format!("{method} {template} {status}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "documented responses that no real response was checked against (add calls to \
             tests/api/openapi.rs): {missing:#?}"
        );
    }
}

enum Body {
    Empty,
    Json(Value),
    Raw(&'static str, Vec<u8>),
}

/// One request and the status it must get.
struct Call {
    method: Method,
    path: String,
    caller: Option<&'static str>,
    /// An `Idempotency-Key`, as sent.
    key: Option<&'static str>,
    body: Body,
    expect: u16,
}

fn call(method: Method, path: impl Into<String>, expect: u16) -> Call {
    Call {
        method,
        path: path.into(),
        caller: None,
        key: None,
        body: Body::Empty,
        expect,
    }
}

fn get(path: impl Into<String>, expect: u16) -> Call {
    call(Method::GET, path, expect)
}

impl Call {
    fn by(self, caller: &'static str) -> Self {
        Self {
            caller: Some(caller),
            ..self
        }
    }

    fn key(self, key: &'static str) -> Self {
        Self {
            key: Some(key),
            ..self
        }
    }

    fn json(self, body: Value) -> Self {
        Self {
            body: Body::Json(body),
            ..self
        }
    }

    /// A JSON body over the body limit.
    fn too_large(self) -> Self {
        let mut bytes = b"{\"content\": \"".to_vec();
        bytes.resize(cosmos_blog::api::MAX_BODY_BYTES + 16, b'x');
        bytes.extend_from_slice(b"\"}");
        Self {
            body: Body::Raw("application/json", bytes),
            ..self
        }
    }

    fn not_json(self) -> Self {
        Self {
            body: Body::Raw("text/plain", b"{}".to_vec()),
            ..self
        }
    }
}

/// Sends `call` (addressed as `tenancy` does), checks its status, and checks the response
/// against the document.
async fn check(
    app: &TestApp,
    tenancy: Tenancy,
    described: &Described,
    call: Call,
    coverage: &mut Coverage,
) {
    let path = in_layout(tenancy, &call.path);
    let mut request = app.client.request(call.method.clone(), app.url(&path));
    if let Some(caller) = call.caller {
        request = request.header("x-ms-client-principal-id", caller);
    }
    if let Some(key) = call.key {
        request = request.header("Idempotency-Key", key);
    }
    request = match call.body {
        Body::Empty => request,
        Body::Json(body) => request.json(&body),
        Body::Raw(content_type, bytes) => request.header(CONTENT_TYPE, content_type).body(bytes),
    };
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("body");
    let what = format!("{} {path} -> {status}", call.method);
    assert_eq!(
        status,
        call.expect,
        "{what}: {}",
        String::from_utf8_lossy(&body)
    );
    let template = described.template_for(&path);
    let mismatches = described.mismatches(call.method.as_str(), &template, status, &headers, &body);
    assert!(
        mismatches.is_empty(),
        "{what} does not match the document: {mismatches:#?}"
    );
    coverage
        .0
        .insert((call.method.to_string(), template, status));
}

/// Calls that reach each operation's success and each problem it can answer on a working
/// store. `post` is a post of ada's; bob has not commented on or liked it yet.
fn calls(post: &str) -> Vec<Call> {
    let user = |name: &str| json!({ "username": name });
    let post_body = json!({ "title": "Edited", "content": "Still mine" });
    let comments = format!("/api/posts/{post}/comments");
    let likes = format!("/api/posts/{post}/likes");
    let this_post = format!("/api/posts/{post}");
    vec![
        // C1
        call(Method::PUT, "/api/users/carol", 201)
            .by("carol")
            .json(user("Carol")),
        call(Method::PUT, "/api/users/carol", 200)
            .by("carol")
            .json(user("Caroline")),
        call(Method::PUT, "/api/users/carol", 401).json(user("Carol")),
        call(Method::PUT, "/api/users/carol", 403)
            .by("ada")
            .json(user("Carol")),
        call(Method::PUT, "/api/users/carol", 400)
            .by("carol")
            .json(user("  ")),
        call(Method::PUT, "/api/users/carol", 413)
            .by("carol")
            .too_large(),
        call(Method::PUT, "/api/users/carol", 415)
            .by("carol")
            .not_json(),
        // Q1
        get("/api/users/ada", 200),
        get("/api/users/nobody", 404),
        get("/api/users/a%23b", 400),
        // Q3: a page with a continuation, then the last page
        get("/api/users/ada/posts?limit=1", 200),
        get("/api/users/ada/posts", 200),
        get("/api/users/nobody/posts", 404),
        get("/api/users/ada/posts?limit=0", 400),
        // C2, create
        call(Method::POST, "/api/posts", 201)
            .by("ada")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 401).json(post_body.clone()),
        call(Method::POST, "/api/posts", 404)
            .by("ghost")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 400)
            .by("ada")
            .json(json!({"title": "", "content": "x"})),
        call(Method::POST, "/api/posts", 413).by("ada").too_large(),
        call(Method::POST, "/api/posts", 415).by("ada").not_json(),
        // C2, create with an Idempotency-Key: a repeat, another body, a key that is none
        call(Method::POST, "/api/posts", 201)
            .by("ada")
            .key("\"post-1\"")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 201)
            .by("ada")
            .key("\"post-1\"")
            .json(post_body.clone()),
        call(Method::POST, "/api/posts", 422)
            .by("ada")
            .key("\"post-1\"")
            .json(json!({"title": "Other", "content": "x"})),
        call(Method::POST, "/api/posts", 400)
            .by("ada")
            .key("not a key")
            .json(post_body.clone()),
        // C2, edit
        call(Method::PUT, &this_post, 200)
            .by("ada")
            .json(post_body.clone()),
        call(Method::PUT, &this_post, 401).json(post_body.clone()),
        call(Method::PUT, &this_post, 403)
            .by("bob")
            .json(post_body.clone()),
        call(Method::PUT, "/api/posts/missing", 404)
            .by("ada")
            .json(post_body.clone()),
        call(Method::PUT, &this_post, 400)
            .by("ada")
            .json(json!({"title": "t"})),
        call(Method::PUT, &this_post, 413).by("ada").too_large(),
        call(Method::PUT, &this_post, 415).by("ada").not_json(),
        // Q2
        get(&this_post, 200),
        get("/api/posts/missing", 404),
        get("/api/posts/a%23b", 400),
        // C3
        call(Method::POST, &comments, 201)
            .by("bob")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 401).json(json!({"content": "Nice"})),
        call(Method::POST, "/api/posts/missing/comments", 404)
            .by("bob")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 400)
            .by("bob")
            .json(json!({"content": ""})),
        call(Method::POST, &comments, 413).by("bob").too_large(),
        call(Method::POST, &comments, 415).by("bob").not_json(),
        call(Method::POST, &comments, 201)
            .by("bob")
            .key("comment-1")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 201)
            .by("bob")
            .key("comment-1")
            .json(json!({"content": "Nice"})),
        call(Method::POST, &comments, 422)
            .by("bob")
            .key("comment-1")
            .json(json!({"content": "Nicer"})),
        call(Method::POST, &comments, 400)
            .by("bob")
            .key("")
            .json(json!({"content": "Nice"})),
        // Q4
        get(&comments, 200),
        get("/api/posts/missing/comments", 404),
        get(format!("{comments}?continuation=nonsense"), 400),
        // C4: a new like, then the same again
        call(Method::POST, &likes, 201).by("bob"),
        call(Method::POST, &likes, 200).by("bob"),
        call(Method::POST, &likes, 401),
        call(Method::POST, "/api/posts/missing/likes", 404).by("bob"),
        call(Method::POST, "/api/posts/a%23b/likes", 400).by("bob"),
        // Q5
        get(&likes, 200),
        get("/api/posts/missing/likes", 404),
        get(format!("{likes}?limit=101"), 400),
        // Q6
        get("/api/feed?limit=10", 200),
        get("/api/feed?limit=0", 400),
        // The description, its page, and the health probe
        get("/api/openapi.json", 200),
        get("/api/docs", 200),
        get("/api/docs/swagger-ui.css", 200),
        get("/api/docs/swagger-ui-bundle.js", 200),
        get("/api/health", 200),
        // A query parameter an operation does not take is a 400, on every operation.
        get("/api/openapi.json?format=yaml", 400),
        get("/api/docs?theme=dark", 400),
        get("/api/docs/swagger-ui.css?v=1", 400),
        get("/api/docs/swagger-ui-bundle.js?v=1", 400),
        get("/api/health?probe=1", 400),
    ]
}

/// The deletes, last: `post` is ada's, liked by bob, and `comment` bob's comment on it.
fn delete_calls(post: &str, comment: &str) -> Vec<Call> {
    let this_comment = format!("/api/posts/{post}/comments/{comment}");
    let likes = format!("/api/posts/{post}/likes");
    let this_post = format!("/api/posts/{post}");
    vec![
        // A comment
        call(Method::DELETE, &this_comment, 401),
        call(
            Method::DELETE,
            format!("/api/posts/{post}/comments/a%23b"),
            400,
        )
        .by("bob"),
        call(Method::DELETE, &this_comment, 403).by("carol"),
        call(Method::DELETE, &this_comment, 204).by("bob"),
        call(Method::DELETE, &this_comment, 404).by("bob"),
        // Unlike
        call(Method::DELETE, &likes, 401),
        call(Method::DELETE, "/api/posts/a%23b/likes", 400).by("bob"),
        call(Method::DELETE, &likes, 204).by("bob"),
        call(Method::DELETE, &likes, 404).by("bob"),
        // The post
        call(Method::DELETE, &this_post, 401),
        call(Method::DELETE, "/api/posts/a%23b", 400).by("ada"),
        call(Method::DELETE, &this_post, 403).by("bob"),
        call(Method::DELETE, &this_post, 204).by("ada"),
        call(Method::DELETE, &this_post, 404).by("ada"),
        // An account
        call(Method::DELETE, "/api/users/carol", 401),
        call(Method::DELETE, "/api/users/a%23b", 400).by("carol"),
        call(Method::DELETE, "/api/users/carol", 403).by("bob"),
        call(Method::DELETE, "/api/users/carol", 202).by("carol"),
        call(Method::DELETE, "/api/users/carol", 404).by("carol"),
    ]
}

/// Q7, the list of a tenant's users (ada, bob and carol by then), in the `multi` layout.
fn tenant_user_calls() -> Vec<Call> {
    vec![
        get("/api/users?limit=1", 200),
        get("/api/users", 200),
        get("/api/users?limit=0", 400),
        get("/api/users?continuation=nonsense", 400),
    ]
}

/// Each documented operation of a `multi` document called with an invalid tenant id: 400,
/// whatever the operation.
fn invalid_tenant_calls(doc: &Value) -> Vec<Call> {
    operations(doc)
        .into_keys()
        .filter(|(_, template)| template.starts_with("/api/tenants/{tenantId}/"))
        .map(|(method, template)| {
            let path = template
                .replace("{tenantId}", "a%23b")
                .split('/')
                .map(|s| if s.starts_with('{') { "x" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            call(
                Method::from_bytes(method.as_bytes()).expect("method"),
                path,
                400,
            )
        })
        .collect()
}

/// One valid call of each operation that uses the store; on a failing store each gets
/// `expect`.
fn store_calls(expect: u16, tenancy: Tenancy) -> Vec<Call> {
    let post_body = json!({ "title": "t", "content": "c" });
    let only_multi = match tenancy {
        Tenancy::Single => vec![],
        Tenancy::Multi => vec![get("/api/users", expect)],
    };
    let mut calls = vec![
        call(Method::PUT, "/api/users/ada", expect)
            .by("ada")
            .json(json!({"username": "Ada"})),
        get("/api/users/ada", expect),
        get("/api/users/ada/posts", expect),
        call(Method::POST, "/api/posts", expect)
            .by("ada")
            .json(post_body.clone()),
        call(Method::PUT, "/api/posts/p1", expect)
            .by("ada")
            .json(post_body),
        get("/api/posts/p1", expect),
        call(Method::POST, "/api/posts/p1/comments", expect)
            .by("ada")
            .json(json!({"content": "c"})),
        get("/api/posts/p1/comments", expect),
        call(Method::POST, "/api/posts/p1/likes", expect).by("ada"),
        get("/api/posts/p1/likes", expect),
        get("/api/feed", expect),
        call(Method::DELETE, "/api/users/ada", expect).by("ada"),
        call(Method::DELETE, "/api/posts/p1", expect).by("ada"),
        call(Method::DELETE, "/api/posts/p1/comments/c1", expect).by("ada"),
        call(Method::DELETE, "/api/posts/p1/likes", expect).by("ada"),
    ];
    calls.extend(only_multi);
    calls.extend(images::store_calls(expect));
    calls
}

async fn every_operation_answers_as_the_document_says(app: TestApp) {
    answers_as_documented(app, Tenancy::Single).await;
}

/// A JSON command as `caller` on the `/api` path `path`, addressed as `tenancy` does; its
/// body, after checking the status.
async fn command(
    app: &TestApp,
    tenancy: Tenancy,
    (method, path): (Method, &str),
    caller: &str,
    body: Value,
    expect: StatusCode,
) -> Value {
    let path = in_layout(tenancy, path);
    let response = app.send(method, &path, Some(caller), Some(body)).await;
    assert_eq!(response.status(), expect, "{path}");
    response.json().await.expect("JSON body")
}

async fn answers_as_documented(app: TestApp, tenancy: Tenancy) {
    let served: Value = app.get_json(&in_layout(tenancy, "/api/openapi.json")).await;
    let described = Described::new(served);
    let mut coverage = Coverage::default();

    for (user, name) in [("ada", "Ada"), ("bob", "Bob")] {
        let path = format!("/api/users/{user}");
        let body = json!({ "username": name });
        command(
            &app,
            tenancy,
            (Method::PUT, &path),
            user,
            body,
            StatusCode::CREATED,
        )
        .await;
    }
    let new_post = |title: &str, content: String| {
        let body = json!({ "title": title, "content": content });
        command(
            &app,
            tenancy,
            (Method::POST, "/api/posts"),
            "ada",
            body,
            StatusCode::CREATED,
        )
    };
    new_post("First", "Hello".to_owned()).await;
    let post = new_post("Second", "long ".repeat(100)).await;
    let post = post["id"].as_str().expect("post id").to_owned();
    // Lists show copies made by the change feed: wait for both posts in each.
    eventually(Duration::from_secs(20), || async {
        let mine = app
            .get_json(&in_layout(tenancy, "/api/users/ada/posts"))
            .await;
        let feed = app.get_json(&in_layout(tenancy, "/api/feed")).await;
        let both = |page: &Value| page["items"].as_array().is_some_and(|i| i.len() == 2);
        (both(&mine) && both(&feed)).then_some(())
    })
    .await;
    let mut all_calls = calls(&post);
    if tenancy == Tenancy::Multi {
        all_calls.extend(tenant_user_calls());
        all_calls.extend(invalid_tenant_calls(&described.doc));
    }
    for call in all_calls {
        check(&app, tenancy, &described, call, &mut coverage).await;
    }
    let comments = format!("/api/posts/{post}/comments");
    let body = json!({ "content": "to delete" });
    let comment = command(
        &app,
        tenancy,
        (Method::POST, &comments),
        "bob",
        body,
        StatusCode::CREATED,
    )
    .await;
    let comment = comment["id"].as_str().expect("comment id").to_owned();
    for call in delete_calls(&post, &comment) {
        check(&app, tenancy, &described, call, &mut coverage).await;
    }
    images::check_image_calls(&app, tenancy, &described, &mut coverage).await;

    // What a store that is down, or throttling, makes each operation answer.
    for (failure, status) in [(Failure::Unavailable, 503), (Failure::Throttled, 429)] {
        // An empty store that no call reaches: each fails on the way.
        let dir = TempDir::new().expect("temp dir");
        let unreached = open_backend(Backend::Embedded, tenancy, &dir).await;
        let failing = TestApp::spawn_on(double::named(unreached, failure, "failing"))
            .data_dir(dir)
            .without_pump()
            .unaddressed()
            .start()
            .await;
        for call in store_calls(status, tenancy) {
            check(&failing, tenancy, &described, call, &mut coverage).await;
        }
    }
    coverage.assert_complete(&described.doc);
}

// ---- a store that fails every call ---------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Failure {
    Unavailable,
    Throttled,
}

/// Hooks that fail every call.
#[async_trait]
impl Hooks for Failure {
    async fn before(&self, _: &double::Call<'_>, _: &dyn Store) -> StoreResult<()> {
        Err(match self {
            Failure::Unavailable => StoreError::Unavailable("test: the store is down".into()),
            Failure::Throttled => StoreError::Throttled {
                retry_after: Some(Duration::from_secs(2)),
            },
        })
    }
}

mod images;
