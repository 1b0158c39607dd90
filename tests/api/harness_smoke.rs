//! Runs the whole benchmark harness (`benches/harness`) at a tiny scale so that it cannot
//! rot: generator, profiler, a few seconds of HTTP load, start-up timing and the report.
//! It checks the shapes the product promises (which model wins each operation, as in the
//! case study's figures), never timings: those are reported.

use std::path::Path;
use std::time::Duration;

use clap::Parser;

use cosmos_blog::store::Tenancy;
use cosmos_blog_harness::layouts::{LayoutOp, LayoutRow};
use cosmos_blog_harness::profile::Row;
use cosmos_blog_harness::versions::{Op, Version};
use cosmos_blog_harness::{hotpost, layouts, stats, suite, tenants};

/// The report of the one phase that `args` (after the program's name) choose with `--only`.
async fn phase_alone(args: &[&str]) -> String {
    let args = suite::Args::parse_from(std::iter::once("harness").chain(args.iter().copied()));
    let only = args.only.expect("the arguments choose a phase with --only");
    let binary = Path::new(env!("CARGO_BIN_EXE_cosmos-blog"));
    suite::run_only(&args, only, "harness_smoke", binary)
        .await
        .unwrap()
}

/// The ceiling phase alone, briefly, at tiny scale, on `routes` (each as `--route`); its
/// report shows each present row and none of the absent ones.
async fn assert_ceiling_rows(routes: &[&str], present: &[&str], absent: &[&str]) {
    let mut args = vec!["--only", "ceiling", "--users", "3", "--quiet"];
    args.extend(["--load-seconds", "0.6", "--concurrency", "2"]);
    for route in routes {
        args.extend(["--route", route]);
    }
    let markdown = phase_alone(&args).await;
    for row in present {
        assert!(markdown.contains(row), "{row} in {markdown}");
    }
    for row in absent {
        assert!(!markdown.contains(row), "{row} in {markdown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_runs_at_tiny_scale_and_v3_keeps_its_shape() {
    let out = tempfile::tempdir().unwrap();
    let args = suite::Args::parse_from([
        "harness",
        "--users",
        "5",
        "--samples",
        "5",
        "--op-seconds",
        "0.2",
        "--load-seconds",
        "1",
        "--concurrency",
        "2",
        "--sequential",
        "10",
        "--post-rate",
        "20",
        "--startup-runs",
        "1",
        "--hot-post-writers",
        "10",
        "--tenants",
        "3",
        "--emulator-users",
        "5",
        "--physical-partitions",
        "4",
        "--fault-users",
        "2",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let outcome = suite::run(
        &args,
        "harness_smoke",
        Path::new(env!("CARGO_BIN_EXE_cosmos-blog")),
    )
    .await
    .unwrap();

    let data = &outcome.dataset;
    assert_eq!(data.users.len(), 5);
    assert!(
        (25..=250).contains(&data.posts.len()),
        "5–50 posts per user"
    );
    assert!(data.posts.iter().all(|p| p.comments <= 25 && p.likes <= 5));

    for op in Op::ALL {
        for version in Version::ALL {
            let row = Row::get(&outcome.rows, op, version).unwrap();
            assert!(row.samples >= 3, "{op:?} {version:?} ran");
        }
    }
    for op in Op::ALL.into_iter().filter(|op| op.is_query()) {
        let v3 = Row::get(&outcome.rows, op, Version::V3).unwrap();
        assert_eq!(
            (v3.requests, v3.partitions, v3.fan_out),
            (1.0, 1.0, false),
            "V3 {op:?} is one request to one logical partition"
        );
    }
    let v1_feed = Row::get(&outcome.rows, Op::Q6, Version::V1).unwrap();
    let v3_feed = Row::get(&outcome.rows, Op::Q6, Version::V3).unwrap();
    assert!(v1_feed.requests > v3_feed.requests);
    assert!(v1_feed.fan_out);

    let load = outcome.load.as_ref().unwrap();
    assert!(load.phases.iter().all(|p| p.total.requests > 0));
    let reads = load.phases.iter().filter(|p| !p.name.starts_with("write"));
    assert!(reads.into_iter().all(|p| p.total.errors == 0));
    assert!(load.lags.iter().all(|l| l.posts > 0));
    assert!(outcome.startup.as_ref().unwrap().rss_kib > 0);
    let recheck = outcome.recheck.as_ref().unwrap();
    assert!(recheck.changes > 0, "the re-check saw the load's changes");
    assert_eq!(
        (recheck.repaired, recheck.unfixable),
        (0, 0),
        "the pump kept the copies right: the re-check finds nothing to repair"
    );
    let hot = outcome.hot_post.as_ref().unwrap();
    assert_eq!(hot.len(), 2, "one run per backend");
    assert!(hot.iter().all(hotpost::HotPostRun::exact), "{hot:?}");

    assert_eq!(
        outcome.checks.len(),
        2,
        "verify after generation and after the load"
    );
    for check in &outcome.checks {
        assert!(
            check.holds(),
            "verify after {}:\n{}",
            check.after,
            check.report.violation_lines(100).join("\n")
        );
    }

    let moved = outcome.transfer.as_ref().expect("export and import ran");
    assert_eq!(
        moved.items,
        data.items() as u64,
        "every source item exported"
    );
    assert!(moved.verified, "the imported store verifies");
    assert!(
        moved.copies > data.posts.len(),
        "a copy per post, and the feed's"
    );

    let faults = outcome.faults.as_ref().unwrap();
    assert_eq!(faults.len(), 3, "no faults, throttled, answers lost");
    for run in faults {
        assert!(run.writes() > 0, "{:?} wrote nothing", run.run);
        assert!(run.account_requests > 0);
        assert!(
            run.verify.holds() && run.counts_exact(),
            "{:?}:\n{}",
            run.run,
            run.verify.violation_lines(50).join("\n")
        );
    }
    assert_eq!(faults[0].injected, 0);
    assert!(faults[1].injected > 0, "nothing was throttled");

    let markdown = std::fs::read_to_string(&outcome.report).unwrap();
    assert!(markdown.contains("## Faults (Cosmos DB emulator, write mix)"));
    assert!(markdown.contains("## Moving the data: export and import"));
    assert!(markdown.contains("| Q6 |") && markdown.contains("2063.54 RU"));
    assert!(markdown.contains("| HTTP load (change feed drained) | ✅ holds |"));
    // A delete is one read and one write (a comment: the post and the comment read side by
    // side); the change-feed work comes after it. The unlike and the comment delete go through
    // the combiner, whose worker has let go of the post before it answers the write just
    // before: each reads the post again, every time.
    let cost = |op: &str| {
        outcome
            .deletes
            .iter()
            .find(|c| c.op == op)
            .map(|c| c.requests)
            .unwrap_or_else(|| panic!("no {op} in the delete costs"))
    };
    assert_eq!(cost("unlike"), 2.0, "{:?}", outcome.deletes);
    assert_eq!(cost("delete a comment"), 3.0, "{:?}", outcome.deletes);
    assert_eq!(cost("delete a post"), 2.0);
    assert_eq!(cost("delete an account"), 2.0);
    assert!(
        outcome
            .deletes
            .iter()
            .skip(2)
            .all(|c| c.change_feed_requests > 0.0)
    );
    assert!(markdown.contains("## Deletes (store requests)"));
    let chart = std::fs::read_to_string(&outcome.chart).unwrap();
    assert!(chart.starts_with("<svg") && chart.trim_end().ends_with("</svg>"));

    the_layouts_compare_on_the_same_data(outcome.layouts.as_ref().unwrap(), &markdown, 4);
}

/// `--tenants`: both layouts hold the same data, every read stays one request to one
/// logical partition, and the searches that cross partitions in `single` are prefix queries
/// on the tenant in `multi`, which the SDK sends to fewer physical partitions.
fn the_layouts_compare_on_the_same_data(
    layouts: &layouts::LayoutsReport,
    markdown: &str,
    physical: u32,
) {
    let emulator = layouts.emulator.as_ref().expect("an emulator run");
    for run in [&layouts.embedded, emulator] {
        for (when, check) in &run.checks {
            assert!(
                check.report.holds(),
                "{} {when}:\n{}",
                run.backend,
                check.report.violation_lines(50).join("\n")
            );
        }
        assert_eq!(
            run.checks.len(),
            4,
            "each layout after loading and after the profile"
        );
        assert_eq!(run.data.tenants.len(), 3);
        let row = |op, layout| {
            LayoutRow::get(&run.rows, op, layout)
                .unwrap_or_else(|| panic!("{op:?} in {layout} on {}", run.backend))
        };
        for layout in [Tenancy::Single, Tenancy::Multi] {
            for op in [
                LayoutOp::Q1,
                LayoutOp::Q2,
                LayoutOp::Q3,
                LayoutOp::Q4,
                LayoutOp::Q5,
                LayoutOp::Q6,
                LayoutOp::Q8,
                LayoutOp::Q9,
                LayoutOp::Drafts,
            ] {
                let r = row(op, layout);
                assert!(r.samples >= 3);
                assert_eq!(
                    (
                        r.requests,
                        r.partitions,
                        r.fan_out_queries,
                        r.prefix_queries
                    ),
                    (1.0, 1.0, 0.0, 0.0),
                    "{op:?} in {layout} on {}: one request to one logical partition",
                    run.backend
                );
            }
        }
        for op in [LayoutOp::Q7, LayoutOp::UsernameFanOut] {
            let (single, multi) = (row(op, Tenancy::Single), row(op, Tenancy::Multi));
            assert!(
                single.fan_out_queries >= 1.0 && single.prefix_queries == 0.0,
                "{single:?}"
            );
            assert!(
                multi.prefix_queries >= 1.0 && multi.fan_out_queries == 0.0,
                "{multi:?}"
            );
            assert!(
                multi.in_scope.unwrap() < single.in_scope.unwrap(),
                "a tenant's partitions are fewer than all of them: {single:?} {multi:?}"
            );
        }
        for layout in [Tenancy::Single, Tenancy::Multi] {
            // The generated posts carry tags and some are drafts: the new reads have data.
            for op in [LayoutOp::Q8, LayoutOp::Q9, LayoutOp::Drafts] {
                let r = row(op, layout);
                assert!(r.answer_items > 0.0, "{op:?} in {layout}: {r:?}");
            }
            let copies = row(LayoutOp::PostCopies, layout);
            assert!(
                copies.samples >= 3 && copies.items_written > 0.0,
                "a new post's copies and views cost writes: {copies:?}"
            );
        }
        let fan_out = row(LayoutOp::UsernameFanOut, Tenancy::Single);
        assert!(
            fan_out.items_written > 0.0,
            "the rename reached the user's items"
        );
        let walks: Vec<_> = run
            .walks
            .iter()
            .filter(|w| w.layout == Tenancy::Multi)
            .collect();
        assert_eq!(walks.len(), 2, "the largest and the smallest tenant");
        assert!(walks.iter().all(|w| w.prefix && !w.fan_out));
    }
    let routed = |op, layout| {
        LayoutRow::get(&emulator.rows, op, layout)
            .unwrap()
            .routed
            .unwrap()
    };
    assert_eq!(
        routed(LayoutOp::UsernameFanOut, Tenancy::Single).1,
        f64::from(physical),
        "across all partitions: every physical partition"
    );
    assert_eq!(
        routed(LayoutOp::UsernameFanOut, Tenancy::Multi).1,
        1.0,
        "a tenant's prefix: the physical partition holding it"
    );
    assert_eq!(routed(LayoutOp::Q3, Tenancy::Multi), (1.0, 1.0));

    assert!(markdown.contains("## Layouts compared: `single` and `multi` on the same data"));
    assert!(markdown.contains("| OnUserChanged: the username fan-out | single |"));
    assert!(markdown.contains("| OnUserChanged: the username fan-out | multi |"));
    for label in [
        "Q8 a tag's posts",
        "Q9 a month's posts",
        "a user's drafts",
        "OnPostChanged: a new post's copies and views",
    ] {
        assert!(
            markdown.contains(&format!("| {label} | multi |")),
            "{label}"
        );
    }
    assert_eq!(routed(LayoutOp::Q8, Tenancy::Multi), (1.0, 1.0));
    assert_eq!(routed(LayoutOp::Q9, Tenancy::Multi), (1.0, 1.0));
    assert_eq!(routed(LayoutOp::Drafts, Tenancy::Multi), (1.0, 1.0));
    assert!(markdown.contains("prefix `[tenantId]` ×"));
    assert!(markdown.contains(&format!("of {physical} physical partitions**")));
    assert!(!markdown.contains("❌"), "{markdown}");
}

#[test]
fn the_tenants_are_a_few_large_and_many_small() {
    let skewed = tenants::shares(1_000, 50).unwrap();
    assert_eq!(skewed.iter().sum::<usize>(), 1_000);
    assert!(skewed.windows(2).all(|w| w[0] >= w[1]));
    assert!(skewed[0] > 200 && skewed[49] < 10 && skewed[49] >= 1);
    assert_eq!(tenants::shares(3, 3).unwrap(), [1, 1, 1]);
    assert!(
        tenants::shares(2, 3).is_err(),
        "a tenant exists once it has a user"
    );
}

#[test]
fn percentiles_are_nearest_rank() {
    let mut l: stats::Latencies = (1..=100).rev().map(Duration::from_millis).collect();
    assert_eq!(l.percentile(50.0), Duration::from_millis(50));
    assert_eq!(l.percentile(99.0), Duration::from_millis(99));
    assert_eq!(l.percentile(100.0), Duration::from_millis(100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_phase_runs_alone() {
    let markdown = phase_alone(&[
        "--only",
        "write-mix",
        "--users",
        "3",
        "--load-seconds",
        "1",
        "--concurrency",
        "2",
        "--post-rate",
        "20",
        "--quiet",
    ])
    .await;
    assert!(markdown.contains("**write mix (20% posts, 40% comments, 40% likes)**"));
    assert!(
        markdown.contains("| under the write mix | 20 | 20 |"),
        "{markdown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hot_post_phase_runs_alone_on_both_backends() {
    let markdown = phase_alone(&[
        "--only",
        "hot-post",
        "--hot-post-writers",
        "8,30",
        "--quiet",
    ])
    .await;
    for backend in ["embedded", "Cosmos DB emulator, +5 ms per request"] {
        for writers in [8, 30] {
            let row = format!("| {backend} | {writers} | {writers} | 0 | 0 |");
            assert!(markdown.contains(&row), "{row} in {markdown}");
        }
    }
    assert!(!markdown.contains("**no**"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transfer_phase_runs_alone() {
    let markdown = phase_alone(&["--only", "transfer", "--users", "3", "--quiet"]).await;
    assert!(markdown.contains("| export |"), "{markdown}");
    assert!(
        markdown.contains("| import, copies derived |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("`verify` on the imported store: holds"),
        "{markdown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ceiling_phase_measures_the_chosen_routes_beside_the_health_route() {
    assert_ceiling_rows(
        &["Q2", "Q4", "page GET /posts"],
        &[
            "| GET /api/health (ceiling) | ",
            "| Q2 GET /api/posts/{id} | ",
            "| Q4 GET /api/posts/{id}/comments | ",
            "| page GET /posts/{id} | ",
            "| page GET /posts/{id} | Q2 GET /api/posts/{id} + Q4 GET /api/posts/{id}/comments | ",
        ],
        &["| Q1 ", "| Q3 ", "| page GET / (front page) |", "errors)"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planner_agrees_with_the_application_within_ten_percent() {
    // The phase fails unless the RU charged and the planner's prediction agree within ±10 %.
    let markdown = phase_alone(&["--only", "plan", "--users", "4", "--quiet"]).await;
    assert!(
        markdown.contains("## The planner against the application"),
        "{markdown}"
    );
    let row = markdown
        .lines()
        .find(|line| line.ends_with("| yes |"))
        .unwrap_or_else(|| panic!("no agreeing row in {markdown}"));
    let figures: Vec<f64> = row
        .split('|')
        .filter_map(|cell| cell.trim().parse().ok())
        .collect();
    let (charged, predicted) = (figures[0], figures[1]);
    assert!(charged > 0.0 && predicted > 0.0, "{row}");
    assert!((charged / predicted - 1.0).abs() <= 0.10, "{row}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ceiling_phase_measures_image_upload_and_serving_beside_the_health_route() {
    assert_ceiling_rows(
        &["image"],
        &[
            "| GET /api/health (ceiling) | ",
            "| image POST /api/images (upload) | ",
            "| image GET /images/{id} | ",
        ],
        &["| Q1 ", "| Q2 ", "| page GET", "errors)"],
    )
    .await;
}
