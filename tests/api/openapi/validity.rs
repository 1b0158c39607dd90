//! Each document is valid OpenAPI 3.1: its links, references, path parameters, security schemes
//! and operation ids hold, and broken documents are refused.

use super::*;

/// The official JSON Schema of OpenAPI 3.1 documents (see `tests/fixtures/openapi/`).
fn openapi_3_1_validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../../fixtures/openapi/oas-3.1-schema.json"))
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
