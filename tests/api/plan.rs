//! `cosmos-blog plan` through the binary: it answers a workload in one command, and refuses
//! bad input in one line naming the flag, exit status 2, without a panic.

use testkit::binary;

/// The binary's exit code, standard output and standard error for `plan` with `args`.
fn plan(args: &[&str]) -> (Option<i32>, String, String) {
    let output = binary!().subcommand("plan").args(args).output();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_workload_is_answered_in_one_command() {
    let (code, out, err) = plan(&["--users", "10000", "--views-per-day", "200000"]);
    assert_eq!(code, Some(0), "{err}");
    for part in [
        "RU/s: mean",
        "A month, USD:",
        "serverless",
        "provisioned",
        "autoscale",
        "functions",
        "First limit:",
        "Recommendation:",
        "C2.feed",
    ] {
        assert!(out.contains(part), "{part} in {out}");
    }
    assert!(!out.contains("NaN") && !out.contains("inf "), "{out}");
}

#[test]
fn json_has_the_listed_keys() {
    let (code, out, err) = plan(&["--json", "--tenancy", "multi", "--users", "50000"]);
    assert_eq!(code, Some(0), "{err}");
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "operations",
        "ru_per_second",
        "storage_gb",
        "monthly_usd",
        "first_limit",
        "recommendation",
    ] {
        assert!(value.get(key).is_some(), "{key}");
    }
    assert_eq!(value["workload"]["tenants"], 50.0);
}

#[test]
fn prices_can_be_overridden_by_flag_and_by_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.json");
    std::fs::write(
        &file,
        r#"{"prices": {"serverless_per_million_ru": {"value": 0.5, "source": "our contract"}}}"#,
    )
    .unwrap();
    let monthly = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (code, out, err) = plan(&all);
        assert_eq!(code, Some(0), "{err}");
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        value["monthly_usd"]["serverless"]["throughput_usd"]
            .as_f64()
            .unwrap()
    };
    let listed = monthly(&[]);
    let doubled = monthly(&["--prices", file.to_str().unwrap()]);
    assert!(
        (doubled / listed - 2.0).abs() < 1e-9,
        "{listed} → {doubled}"
    );
    let flagged = monthly(&["--price-serverless-per-million-ru", "0.125"]);
    assert!(
        (flagged / listed - 0.5).abs() < 1e-9,
        "{listed} → {flagged}"
    );
}

#[test]
fn bad_input_is_one_line_naming_the_flag_with_status_2() {
    let cases: [(&[&str], &str); 19] = [
        (&["--users", "-5"], "--users"),
        (&["--users", "0"], "--users"),
        (&["--users", "2.5"], "--users"),
        (&["--users", "1e30"], "--users"),
        (&["--posts-per-day", "abc"], "--posts-per-day"),
        (&["--posts-per-day", "NaN"], "--posts-per-day"),
        (&["--likes-per-post", "inf"], "--likes-per-post"),
        (&["--comments-per-post", "-1"], "--comments-per-post"),
        (&["--views-per-day", "1e300"], "--views-per-day"),
        (&["--peak-factor", "0.5"], "--peak-factor"),
        (&["--regions", "0"], "--regions"),
        (&["--months", "0"], "--months"),
        (&["--mix", "front=abc"], "--mix"),
        (&["--mix", "banana=10"], "--mix"),
        (&["--mix", "tag=-1"], "--mix"),
        (&["--tags-per-post", "-1"], "--tags-per-post"),
        (&["--tags-per-post", "11"], "--tags-per-post"),
        (&["--tenants", "3"], "--tenants"),
        (
            &["--price-storage-per-gb-month", "-0.25"],
            "--price-storage-per-gb-month",
        ),
    ];
    for (args, flag) in cases {
        let (code, out, err) = plan(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} names {flag}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_prices_file_that_is_wrong_is_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\"prices\": {\"storage_per_gb_month\": {\"value\": -1}}}",
    )
    .unwrap();
    for file in [&missing, &bad] {
        let (code, _, err) = plan(&["--prices", file.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--prices"), "{err}");
    }
}

#[test]
fn the_planner_assumes_the_applications_feed_cache() {
    assert_eq!(
        cosmos_blog::plan::APP_FEED_CACHE_MS,
        cosmos_blog::settings::DEFAULT_FEED_CACHE_MS
    );
}

#[test]
fn the_layout_and_the_feed_cache_are_the_servers_own_settings() {
    let workload = ["--json", "--users", "100000", "--views-per-day", "50000000"];
    let (code, cached, err) = plan(&workload);
    assert_eq!(code, Some(0), "{err}");
    let (code, uncached, err) = plan(&[&workload[..], &["--feed-cache-ms", "0"]].concat());
    assert_eq!(code, Some(0), "{err}");
    let cached: serde_json::Value = serde_json::from_str(&cached).unwrap();
    let uncached: serde_json::Value = serde_json::from_str(&uncached).unwrap();
    assert_eq!(cached["workload"]["feed_cache_ms"], 50.0, "{cached}");
    assert_eq!(uncached["workload"]["feed_cache_ms"], 0.0, "{uncached}");
    assert!(
        uncached["ru_per_second"]["peak"].as_f64() > cached["ru_per_second"]["peak"].as_f64(),
        "without the cache every front-page view reads the feed: {uncached} {cached}"
    );
    let output = binary!()
        .subcommand("plan")
        .args(["--json"])
        .env("BLOG_TENANCY", "multi")
        .output();
    let multi: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(multi["workload"]["tenancy"], "multi", "{multi}");
}

/// `plan --json` with `args`: its answer.
fn planned(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = plan(&[&["--json"], args].concat());
    assert_eq!(code, Some(0), "{args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

fn number(value: &serde_json::Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} in {value}"))
}

#[test]
fn tags_per_post_prices_a_copy_in_each_tags_partition() {
    let default = planned(&[]);
    assert_eq!(number(&default, "/workload/tags_per_post"), 1.5);
    let none = planned(&["--tags-per-post", "0"]);
    let one = planned(&["--tags-per-post", "1"]);
    let four = planned(&["--tags-per-post", "4"]);
    assert_eq!(number(&none, "/storage_gb/after/tags"), 0.0);
    assert_eq!(number(&none, "/operations/C3.tags/ru_per_day"), 0.0);
    for pointer in [
        "/storage_gb/after/tags",
        "/operations/C2.tags/ru_per_day",
        "/operations/C3.tags/ru_per_day",
        "/operations/C4.tags/ru_per_day",
    ] {
        let ratio = number(&four, pointer) / number(&one, pointer);
        assert!((ratio - 4.0).abs() < 1e-9, "{pointer}: {ratio}");
    }
    // The month's copy is there whatever the tags, and comments and likes rewrite it.
    for answer in [&none, &four] {
        assert!(number(answer, "/storage_gb/after/archive") > 0.0);
        assert!(number(answer, "/operations/C4.archive/ru_per_day") > 0.0);
        assert!(number(answer, "/ru_per_second/peak_by_container/archive") > 0.0);
    }
    assert!(number(&four, "/ru_per_second/mean") > number(&none, "/ru_per_second/mean"));
    let (code, table, err) = plan(&["--tags-per-post", "4"]);
    assert_eq!(code, Some(0), "{err}");
    for part in [
        "and 4 tags each",
        "C2.tags",
        "C3.archive",
        "tags 0.",
        "archive 0.",
    ] {
        assert!(table.contains(part), "{part} in {table}");
    }
}

#[test]
fn the_mix_reads_tag_and_month_pages() {
    let read = planned(&[
        "--views-per-day",
        "1000",
        "--mix",
        "front=8,tag=1,archive=1",
    ]);
    assert!((number(&read, "/workload/mix/tag") - 0.1).abs() < 1e-9);
    for id in ["Q8", "Q9"] {
        let per_day = number(&read, &format!("/operations/{id}/per_day"));
        assert!((per_day - 100.0).abs() < 1e-6, "{id}: {per_day}");
    }
    assert_eq!(read["operations"]["Q8"]["used"], "reference estimate");
    let unread = planned(&["--views-per-day", "1000"]);
    assert_eq!(number(&unread, "/operations/Q8/per_day"), 0.0);
    let limits: Vec<&str> = read["limits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|limit| limit["what"].as_str())
        .collect();
    for what in [
        "the month's logical partition in archive: 10000 RU/s",
        "the month's logical partition in archive: 20 GB",
        "the most used tag's logical partition in tags: 10000 RU/s",
    ] {
        assert!(limits.contains(&what), "{what} in {limits:?}");
    }
    let (code, table, err) = plan(&["--mix", "tag=1,archive=1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        table.contains("\nQ8 ") && table.contains("\nQ9 "),
        "{table}"
    );
    assert!(!table.contains("not built"), "{table}");
}
