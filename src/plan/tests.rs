//! The model's promises, on the checked-in table and prices.

use super::data::{Azure, MeasuredCosts};
use super::model::{CONTAINERS, DAYS_PER_MONTH, Mix, RuSource, Workload};
use super::render::{Plan, json, plan};

fn community() -> Workload {
    Workload::community(10_000.0)
}

fn planned(w: &Workload) -> Plan {
    let azure = Azure::checked_in().unwrap();
    let costs = MeasuredCosts::checked_in().unwrap();
    plan(w, &azure, &costs)
}

fn total_gb(plan: &Plan) -> f64 {
    plan.storage_gb.after.values().sum()
}

#[test]
fn the_checked_in_table_has_every_operation_and_copy() {
    let costs = MeasuredCosts::checked_in().unwrap();
    for id in [
        "C1", "C2", "C3", "C4", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9",
    ] {
        let op = costs.get(id).unwrap_or_else(|| panic!("{id} in the table"));
        assert!(op.ru > 0.0 && op.requests >= 1.0, "{id}: {op:?}");
    }
    for write in ["C1", "C1.post", "C1.item", "C2", "C3", "C4"] {
        for container in CONTAINERS {
            assert!(costs.get(&format!("{write}.{container}")).is_some());
        }
    }
    // A new post is copied into its author's partition and into the feed.
    assert!(costs.get("C2.users").unwrap().ru > 0.0);
    assert!(costs.get("C2.feed").unwrap().ru > 0.0);
    assert!(costs.get("C2.feed").unwrap().feed_queries >= 1.0);
    // Every change of a post, a comment and a like and a rename's included, rewrites its
    // copy in each of its tags' partitions and in its month's.
    for write in ["C2", "C3", "C4", "C1.post"] {
        let tag = costs.get(&format!("{write}.tags")).unwrap();
        assert!(tag.ru > 0.0, "{write}.tags: {tag:?}");
        assert!(costs.get(&format!("{write}.archive")).unwrap().ru > 0.0);
    }
    // A tag copy is one partition's (a rename's posts share some of their tags).
    for write in ["C2", "C3", "C4"] {
        let tag = costs.get(&format!("{write}.tags")).unwrap();
        assert!((tag.partitions - 1.0).abs() < 1e-9, "{write}.tags: {tag:?}");
    }
    // Q8 reads one tag's partition, Q9 one month's.
    assert_eq!(costs.get("Q8").unwrap().container, "tags");
    assert_eq!(costs.get("Q9").unwrap().container, "archive");
    let bytes = &costs.item_bytes;
    assert!(bytes.tag_copy > bytes.post_copy * 0.9 && bytes.archive_copy > bytes.post_copy * 0.9);
}

/// Every output that a larger figure should raise: RU/s, gigabytes, each month's bill.
fn assert_no_less(figure: &str, before: &Plan, after: &Plan) {
    let (m0, m1) = (&before.monthly_usd, &after.monthly_usd);
    assert!(
        after.ru_per_second.peak >= before.ru_per_second.peak,
        "{figure}"
    );
    assert!(
        after.ru_per_second.mean >= before.ru_per_second.mean,
        "{figure}"
    );
    assert!(total_gb(after) >= total_gb(before), "{figure}");
    assert!(m1.provisioned.total >= m0.provisioned.total, "{figure}");
    assert!(m1.autoscale.total >= m0.autoscale.total, "{figure}");
    assert!(m1.serverless.total >= m0.serverless.total, "{figure}");
    assert!(m1.functions.total >= m0.functions.total, "{figure}");
    assert!(
        after.recommendation.total_usd >= before.recommendation.total_usd,
        "{figure}"
    );
}

#[test]
fn the_model_is_monotonic_in_every_workload_figure() {
    let base = community();
    let before = planned(&base);
    let twice = |f: &dyn Fn(&mut Workload)| {
        let mut w = base.clone();
        f(&mut w);
        w
    };
    let grown = [
        ("posts", twice(&|w| w.posts_per_day *= 2.0)),
        ("comments", twice(&|w| w.comments_per_post *= 2.0)),
        ("likes", twice(&|w| w.likes_per_post *= 2.0)),
        ("tags", twice(&|w| w.tags_per_post *= 2.0)),
        ("views", twice(&|w| w.views_per_day *= 2.0)),
        ("renames", twice(&|w| w.renames_per_day *= 2.0)),
        ("peak", twice(&|w| w.peak_factor *= 2.0)),
        ("regions", twice(&|w| w.regions = 2.0)),
        ("months", twice(&|w| w.horizon_days *= 2.0)),
    ];
    for (figure, w) in grown {
        assert_no_less(figure, &before, &planned(&w));
    }
    // Users: the same renames spread over more users, each with fewer items, rewrite fewer
    // items (the one figure that lowers a cost, and rightly); without renames, more users
    // cost no less.
    let quiet = Workload {
        renames_per_day: 0.0,
        ..base.clone()
    };
    let more = Workload {
        users: quiet.users * 2.0,
        ..quiet.clone()
    };
    assert_no_less("users", &planned(&quiet), &planned(&more));
    let spread = planned(&Workload {
        users: base.users * 2.0,
        ..base.clone()
    });
    let fan_out = |p: &Plan| -> f64 {
        p.operations
            .iter()
            .filter(|(id, _)| id.starts_with("C1."))
            .map(|(_, o)| o.ru_per_day)
            .sum()
    };
    assert!(fan_out(&spread) < fan_out(&before));
}

#[test]
fn serverless_is_cheaper_small_and_provisioned_large() {
    let personal = Workload {
        users: 1.0,
        posts_per_day: 0.2,
        comments_per_post: 2.0,
        likes_per_post: 5.0,
        views_per_day: 300.0,
        renames_per_day: 0.0,
        ..community()
    };
    let small = planned(&personal).monthly_usd;
    assert!(small.serverless.holds_peak);
    assert!(
        small.serverless.total < small.provisioned.total,
        "{small:?}"
    );
    assert!(small.serverless.total < small.autoscale.total, "{small:?}");
    assert_eq!(planned(&personal).recommendation.mode, "serverless");

    let busy = Workload {
        views_per_day: 30_000_000.0,
        peak_factor: 1.5,
        ..community()
    };
    let large = planned(&busy).monthly_usd;
    assert!(
        large.provisioned.total < large.serverless.total,
        "{large:?}"
    );
    assert_ne!(planned(&busy).recommendation.mode, "serverless");
}

#[test]
fn the_first_limit_moves_when_the_feed_cache_is_on() {
    // Busy enough for provisioned throughput, whose first limit is the design's own.
    let uncached = Workload {
        views_per_day: 2_000_000.0,
        feed_cache_ms: 0.0,
        ..community()
    };
    let cached = Workload {
        feed_cache_ms: 50.0,
        ..uncached.clone()
    };
    let feed = |p: &Plan| {
        p.limits
            .iter()
            .find(|r| r.what.starts_with("feed container's logical partition"))
            .and_then(|r| r.scale)
            .unwrap()
    };
    let (off, on) = (planned(&uncached), planned(&cached));
    assert_ne!(off.recommendation.mode, "serverless");
    let first_off = off.first_limit.clone().unwrap();
    assert!(
        first_off
            .what
            .starts_with("feed container's logical partition"),
        "{first_off:?}"
    );
    assert_eq!(first_off.at.flag, Some("--views-per-day"));
    assert!(
        feed(&on) > feed(&off) * 2.0,
        "{} → {}",
        feed(&off),
        feed(&on)
    );
    let first_on = on.first_limit.unwrap();
    assert!(
        first_on.what != first_off.what || first_on.at.scale > first_off.at.scale,
        "{first_on:?}"
    );
}

#[test]
fn storage_grows_with_the_horizon() {
    let short = planned(&Workload {
        horizon_days: DAYS_PER_MONTH,
        ..community()
    });
    let long = planned(&Workload {
        horizon_days: 36.0 * DAYS_PER_MONTH,
        ..community()
    });
    assert!(total_gb(&long) > total_gb(&short) * 10.0);
    assert!(long.storage_gb.after["posts"] > long.storage_gb.now["posts"]);
    assert_eq!(long.storage_gb.now, short.storage_gb.after);
    assert!(long.monthly_usd.serverless.storage_usd > short.monthly_usd.serverless.storage_usd);
}

#[test]
fn its_json_keys_stay_as_listed() {
    let answer = json(&planned(&community())).unwrap();
    // The top-level keys are the command's promise, kept by `tests/api/plan.rs`; these are the
    // figures inside them.
    let value: serde_json::Value = serde_json::from_str(&answer).unwrap();
    for op in [
        "C1",
        "C2",
        "C3",
        "C4",
        "Q1",
        "Q2",
        "Q3",
        "Q4",
        "Q5",
        "Q6",
        "Q8",
        "Q9",
        "C2.feed",
        "C2.tags",
        "C2.archive",
    ] {
        for key in ["requests", "partitions", "ru"] {
            assert!(value["operations"][op][key].is_number(), "{op}.{key}");
        }
    }
    for key in ["mean", "peak"] {
        assert!(value["ru_per_second"][key].is_number());
    }
    for key in ["now", "after"] {
        for container in ["users", "posts", "feed", "tags", "archive"] {
            assert!(value["storage_gb"][key][container].is_number());
        }
    }
    for key in ["serverless", "provisioned", "autoscale", "functions"] {
        assert!(value["monthly_usd"][key]["total"].is_number(), "{key}");
    }
    assert!(value["monthly_usd"]["functions"]["executions"].is_number());
    assert!(value["monthly_usd"]["functions"]["gb_seconds"].is_number());
    for key in ["what", "at", "then"] {
        assert!(value["first_limit"].get(key).is_some(), "first_limit.{key}");
    }
    assert!(value["recommendation"]["mode"].is_string());
    assert!(!answer.contains("NaN") && !answer.contains("inf"));
}

#[test]
fn a_mix_names_known_kinds_only() {
    let mix = Mix::parse("front=1,post=1").unwrap();
    assert_eq!((mix.front, mix.post, mix.author), (0.5, 0.5, 0.0));
    let views = Mix::parse("front=2,tag=1,archive=1").unwrap();
    assert_eq!((views.front, views.tag, views.archive), (0.5, 0.25, 0.25));
    assert_eq!((Mix::default().tag, Mix::default().archive), (0.0, 0.0));
    let unknown = Mix::parse("banana=1").unwrap_err();
    assert!(unknown.contains("tag, archive"), "{unknown}");
    assert!(Mix::parse("front=0").is_err());
    assert!(Mix::parse("front=-1").is_err());
    assert!(Mix::parse("front=nan").is_err());
}

#[test]
fn an_override_replaces_one_price_and_keeps_the_rest() {
    let azure = Azure::with_overrides(&serde_json::json!({
        "prices": {"storage_per_gb_month": {"value": 0.5}}
    }))
    .unwrap();
    assert_eq!(azure.prices.storage_per_gb_month.value, 0.5);
    assert_eq!(azure.prices.serverless_per_million_ru.value, 0.25);
    assert!(
        Azure::with_overrides(&serde_json::json!({"prices": {"storage": {"value": 1}}})).is_err()
    );
    assert!(
        Azure::with_overrides(
            &serde_json::json!({"prices": {"storage_per_gb_month": {"value": -1}}})
        )
        .is_err()
    );
}

fn ru_per_day(plan: &Plan, id: &str) -> f64 {
    plan.operations[id].ru_per_day
}

/// RU a day of the copies one container holds (every row but the reads).
fn copies_ru_per_day(plan: &Plan, container: &str) -> f64 {
    plan.operations
        .iter()
        .filter(|(id, line)| id.contains('.') && line.cost.container == container)
        .map(|(_, line)| line.ru_per_day)
        .sum()
}

#[test]
fn a_posts_copies_in_its_tags_and_month_are_priced_and_stored() {
    let untagged = planned(&Workload {
        tags_per_post: 0.0,
        ..community()
    });
    let tagged = planned(&Workload {
        tags_per_post: 3.0,
        ..community()
    });
    // One copy per tag: none without tags, three times one tag's with three.
    assert_eq!(copies_ru_per_day(&untagged, "tags"), 0.0);
    assert_eq!(untagged.storage_gb.after["tags"], 0.0);
    let one = planned(&Workload {
        tags_per_post: 1.0,
        ..community()
    });
    let ratio = copies_ru_per_day(&tagged, "tags") / copies_ru_per_day(&one, "tags");
    assert!((ratio - 3.0).abs() < 1e-9, "{ratio}");
    let ratio = tagged.storage_gb.after["tags"] / one.storage_gb.after["tags"];
    assert!((ratio - 3.0).abs() < 1e-9, "{ratio}");
    // The month's copy: every post has one, whatever its tags; comments and likes rewrite it.
    for plan in [&untagged, &tagged] {
        assert!(plan.storage_gb.after["archive"] > 0.0);
        for write in ["C2", "C3", "C4"] {
            assert!(
                ru_per_day(plan, &format!("{write}.archive")) > 0.0,
                "{write}"
            );
            assert!(plan.ru_per_second.peak_by_container["archive"] > 0.0);
        }
    }
    assert_eq!(
        ru_per_day(&untagged, "C3.archive"),
        ru_per_day(&tagged, "C3.archive")
    );
    assert!(tagged.ru_per_second.mean > untagged.ru_per_second.mean);
    assert!(total_gb(&tagged) > total_gb(&untagged));
}

#[test]
fn tag_and_month_pages_are_read_as_the_mix_says() {
    let none = planned(&community());
    assert_eq!(ru_per_day(&none, "Q8") + ru_per_day(&none, "Q9"), 0.0);
    let w = Workload {
        mix: Mix::parse("front=40,post=40,tag=10,archive=10").unwrap(),
        ..community()
    };
    let read = planned(&w);
    let views = w.views_per_day;
    assert!((read.operations["Q8"].per_day - views * 0.1).abs() < 1e-6);
    assert!((read.operations["Q9"].per_day - views * 0.1).abs() < 1e-6);
    // The case study has no such read: each is priced as Q3, one partition's page of copies.
    for id in ["Q8", "Q9"] {
        let cost = &read.operations[id].cost;
        assert_eq!(cost.used, "reference estimate", "{id}");
        assert_eq!(cost.ru, read.operations["Q3"].cost.ru, "{id}");
    }
    let measured = planned(&Workload {
        ru_source: RuSource::Measured,
        ..w
    });
    assert_eq!(measured.operations["Q8"].cost.used, "measured");
}

/// The walk's entry for the limit whose description starts with `what`.
fn limit<'a>(plan: &'a Plan, what: &str) -> &'a super::limits::Reached {
    plan.limits
        .iter()
        .find(|r| r.what.starts_with(what))
        .unwrap_or_else(|| panic!("{what} in {:?}", plan.limits))
}

#[test]
fn the_month_partition_takes_the_write_load_of_the_months_posts() {
    let month = "the month's logical partition in archive: 10000 RU/s";
    // Writes alone load it: every comment and like rewrites a copy of this month's.
    let quiet = Workload {
        views_per_day: 0.0,
        ..community()
    };
    let busier = Workload {
        likes_per_post: quiet.likes_per_post * 4.0,
        ..quiet.clone()
    };
    let (now, then) = (planned(&quiet), planned(&busier));
    assert!(limit(&now, month).load_now > 0.0);
    assert!(limit(&then, month).load_now > limit(&now, month).load_now * 2.0);
    assert!(limit(&now, month).scale.unwrap() > 1.0);
    // A blog read by its archive meets that partition first.
    let archived = planned(&Workload {
        views_per_day: 200_000_000.0,
        mix: Mix::parse("archive=1").unwrap(),
        ..community()
    });
    let first = archived.first_limit.as_ref().unwrap();
    assert_eq!(first.what, month, "{first:?}");
    assert_eq!(first.at.flag, Some("--views-per-day"));
    assert!(limit(&archived, "the month's logical partition in archive: 20 GB").scale > Some(1.0));
}

#[test]
fn the_most_used_tags_partition_is_walked_and_needs_tags() {
    let tag = "the most used tag's logical partition in tags: 10000 RU/s";
    let untagged = planned(&Workload {
        tags_per_post: 0.0,
        ..community()
    });
    assert_eq!(limit(&untagged, tag).load_now, 0.0);
    assert_eq!(limit(&untagged, tag).scale, None);
    // Every post carries it at most: a second tag a post adds copies to other tags' partitions.
    let one = planned(&Workload {
        tags_per_post: 1.0,
        ..community()
    });
    let three = planned(&Workload {
        tags_per_post: 3.0,
        ..community()
    });
    let (a, b) = (limit(&one, tag).load_now, limit(&three, tag).load_now);
    assert!(a > 0.0 && (a - b).abs() < a * 1e-9, "{a} {b}");
    let read = planned(&Workload {
        views_per_day: 200_000_000.0,
        mix: Mix::parse("tag=1").unwrap(),
        ..community()
    });
    assert_eq!(read.first_limit.unwrap().what, tag);
}
