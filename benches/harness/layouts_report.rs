//! The report's section of the layout comparison (`--tenants N`, see [`crate::layouts`]).

use std::fmt::Write as _;
use std::time::Duration;

use cosmos_blog::store::Tenancy;

use crate::layouts::{BackendRun, LAYOUTS, LayoutOp, LayoutRow, LayoutsReport, UsersWalk};
use crate::markdown::table_head;
use crate::stats::ms;
use crate::tenants::SKEW_RULE;

fn num(v: f64) -> String {
    if (v - v.round()).abs() < 0.005 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn millis(d: Duration) -> String {
    let v = ms(d);
    if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// How a row's queries were scoped.
fn scope(row: &LayoutRow) -> String {
    match (row.fan_out_queries > 0.0, row.prefix_queries > 0.0) {
        (true, false) => format!("across all partitions ×{}", num(row.fan_out_queries)),
        (false, true) => format!("prefix `[tenantId]` ×{}", num(row.prefix_queries)),
        (true, true) => format!(
            "across all ×{}, prefix ×{}",
            num(row.fan_out_queries),
            num(row.prefix_queries)
        ),
        (false, false) => "one partition".into(),
    }
}

fn data_summary(out: &mut String, run: &BackendRun, tenants: usize) {
    let d = &run.data;
    let sizes: Vec<usize> = d.tenants.iter().map(|t| t.users.len()).collect();
    let largest: Vec<String> = sizes.iter().take(5).map(|n| n.to_string()).collect();
    let _ = writeln!(
        out,
        "- {}: {} users over {tenants} tenants ({} …, median {}, smallest {}), {} posts, {} comments, {} likes ({} items); the largest tenant holds {:.0} % of the users.",
        run.backend,
        d.users(),
        largest.join(", "),
        sizes[sizes.len() / 2],
        sizes.last().copied().unwrap_or_default(),
        d.posts(),
        d.comments,
        d.likes,
        d.items(),
        100.0 * sizes.first().copied().unwrap_or_default() as f64 / d.users().max(1) as f64
    );
    for (layout, load, rebuilt) in &run.loads {
        let _ = writeln!(
            out,
            "  - `{layout}`: loaded in {:.1} s, copies rebuilt in {:.1} s",
            load.as_secs_f64(),
            rebuilt.as_secs_f64()
        );
    }
}

fn embedded_table(out: &mut String, rows: &[LayoutRow]) {
    table_head(
        out,
        "operation | layout | requests | logical partitions | queries | logical partitions in their scope | items read | items written | items answered | p50 ms | p99 ms | runs",
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.op.label(),
            row.layout,
            num(row.requests),
            num(row.partitions),
            scope(row),
            row.in_scope.map_or("—".into(), num),
            num(row.items_read),
            num(row.items_written),
            num(row.answer_items),
            millis(row.p50),
            millis(row.p99),
            row.samples
        );
    }
}

fn emulator_table(out: &mut String, rows: &[LayoutRow]) {
    table_head(
        out,
        "operation | layout | requests | queries | query requests sent | physical partitions they reached | RU (emulator's model)",
    );
    for row in rows {
        let (sent, reached) = row
            .routed
            .map_or(("—".into(), "—".into()), |(s, r)| (num(s), num(r)));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {sent} | {reached} | {} |",
            row.op.label(),
            row.layout,
            num(row.requests),
            scope(row),
            row.request_units
                .map_or("—".into(), |ru| format!("{ru:.1}"))
        );
    }
}

fn walks_table(out: &mut String, walks: &[UsersWalk], routed: bool) {
    let _ = writeln!(
        out,
        "| layout | whose users | listed | pages | requests per page | logical partitions per page | query |{}",
        if routed {
            " query requests / physical partitions, all pages |"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|{}",
        if routed { "---|" } else { "" }
    );
    for walk in walks {
        let whose = walk
            .tenant
            .as_ref()
            .map_or("the whole blog (no tenants)".into(), |t| format!("`{t}`"));
        let query = if walk.prefix {
            "prefix `[tenantId]`"
        } else if walk.fan_out {
            "across all partitions"
        } else {
            "one partition"
        };
        let mut line = format!(
            "| {} | {whose} | {} | {} | {} | {} | {query} |",
            walk.layout,
            walk.listed,
            walk.pages,
            num(walk.requests_per_page),
            num(walk.partitions_per_page)
        );
        if routed {
            let routed = walk.routed.unwrap_or_default();
            let _ = write!(
                line,
                " {} / {} |",
                routed.query_requests, routed.physical_partitions
            );
        }
        let _ = writeln!(out, "{line}");
    }
}

/// The username fan-out in a sentence per layout.
fn fan_out_summary(out: &mut String, run: &BackendRun, physical: Option<u32>) {
    for layout in LAYOUTS {
        let Some(row) = LayoutRow::get(&run.rows, LayoutOp::UsernameFanOut, layout) else {
            continue;
        };
        let how = match layout {
            Tenancy::Single => "across all partitions of `posts`",
            Tenancy::Multi => "on the prefix `[tenantId]` of `posts`",
        };
        let _ = write!(
            out,
            "- {}, `{layout}`: {} query pages (of up to 100 items) {how}, a scope of {} logical partitions; {} requests in all, touching {} logical partitions (the user's posts and the posts they commented on or liked), {} items rewritten",
            run.backend,
            num(row.fan_out_queries + row.prefix_queries),
            row.in_scope.map_or("—".into(), num),
            num(row.requests),
            num(row.partitions),
            num(row.items_written)
        );
        match (row.routed, physical) {
            (Some((sent, reached)), Some(p)) => {
                let _ = writeln!(
                    out,
                    "; the SDK sent {} query requests to **{} of {p} physical partitions**.",
                    num(sent),
                    num(reached)
                );
            }
            _ => {
                let _ = writeln!(out, ".");
            }
        }
    }
}

fn checks_table(out: &mut String, runs: &[&BackendRun]) {
    table_head(
        out,
        "backend | store, when | verdict | items scanned | violations | scan",
    );
    for run in runs {
        for (when, check) in &run.checks {
            let _ = writeln!(
                out,
                "| {} | {when} | {} | {} | {} | {:.1} s |",
                run.backend,
                if check.report.holds() {
                    "✅ holds"
                } else {
                    "❌ FAILS"
                },
                check.report.scanned.total(),
                check.report.total_violations,
                check.scan.as_secs_f64()
            );
        }
    }
    for run in runs {
        for (when, check) in run.checks.iter().filter(|(_, c)| !c.report.holds()) {
            let _ = writeln!(
                out,
                "\nViolations ({}, {when}):\n\n```\n{}\n```",
                run.backend,
                check.report.violation_lines(20).join("\n")
            );
        }
    }
}

/// The report's section.
pub fn markdown(out: &mut String, report: &LayoutsReport) {
    let config = &report.config;
    let _ = writeln!(
        out,
        "\n## Layouts compared: `single` and `multi` on the same data (`--tenants {}`)\n",
        config.tenants
    );
    let _ = writeln!(
        out,
        "The data set: users split over the tenants by this rule: {SKEW_RULE}; per user 5–50 posts, per post up to 25 comments and up to 100 likes, by users of the same tenant. The same items are loaded into a `single` store (one blog holding every tenant's users and posts side by side) and into a `multi` store (each tenant under its key prefix, every item with its `tenantId`), and the copies are derived by `rebuild`.\n"
    );
    data_summary(out, &report.embedded, config.tenants);
    if let Some(emulator) = &report.emulator {
        data_summary(out, emulator, config.tenants);
    }
    let _ = writeln!(
        out,
        "\nEach operation is what a tenant's user asks for, run in-process through `MeteredStore`, one at a time, on the same targets in both layouts (drawn uniformly over all users and posts, so large tenants are drawn more often); in `multi` through the tenant's view of the store, as the API runs it. Q6 is the blog's one feed in `single` and the tenant's feed in `multi`; Q7 exists only in `multi` (`single` has no tenants), and its row in `single` is the nearest query, the blog's users. Both layouts run each operation the same number of times, in lock step. \"Logical partitions in their scope\": the logical partitions of the container that a query across all partitions or on a prefix searches (one per user in `users`, one per post in `posts`).\n"
    );
    let _ = writeln!(out, "### Embedded store (means per run)\n");
    embedded_table(out, &report.embedded.rows);

    let _ = writeln!(out, "\n### The username fan-out\n");
    let _ = writeln!(
        out,
        "A rename (C1 with a new username) is one request; the change feed then brings the user item to `OnUserChanged`, which finds every post, comment and like of the user whose `userUsername` differs and rewrites it.\n"
    );
    fan_out_summary(out, &report.embedded, None);
    if let Some(emulator) = &report.emulator {
        fan_out_summary(out, emulator, Some(config.physical_partitions));
    }
    let _ = writeln!(
        out,
        "\nThe logical partitions touched are the same in both layouts: those holding the user's items. What differs is where the query must look: in `single` every partition of the container — Cosmos DB sends it to every physical partition, page by page until the result is complete — and in `multi` the tenant's own, which Cosmos DB finds by the key prefix in the physical partitions that hold it."
    );

    let _ = writeln!(out, "\n### Q7 page by page (50 users a page)\n");
    let routed = report.emulator.is_some();
    let mut walks = report.embedded.walks.clone();
    if let Some(emulator) = &report.emulator {
        // The emulator's walks carry the routing; the embedded ones the larger data set.
        let _ = writeln!(out, "Embedded store:\n");
        walks_table(out, &walks, false);
        let _ = writeln!(out, "\n{}:\n", emulator.backend);
        walks = emulator.walks.clone();
    }
    walks_table(out, &walks, routed);

    if let Some(emulator) = &report.emulator {
        let _ = writeln!(
            out,
            "\n### {} (means per run, smaller data set)\n",
            emulator.backend
        );
        let _ = writeln!(
            out,
            "The Cosmos DB SDK on its in-memory emulator, whose containers are created with {} physical partitions each (a large account's; this data set would fit in one). \"Query requests sent\" and \"physical partitions\" are what the SDK sent to the emulator, seen by an observer of its requests. The emulator's RU model is crude — 1 RU per query request (one per physical partition and page), reads 1 RU per KB, writes 5.8 RU per KB plus 0.3 per property — so compare the layouts with it, not the case study.\n",
            config.physical_partitions
        );
        emulator_table(out, &emulator.rows);
    }

    let _ = writeln!(
        out,
        "\n### Invariants (`verify`: one scan, each tenant checked as its own model in `multi`)\n"
    );
    let mut runs = vec![&report.embedded];
    runs.extend(report.emulator.as_ref());
    checks_table(out, &runs);
}
