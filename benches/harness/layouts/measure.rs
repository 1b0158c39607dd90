//! Measuring the two layouts: each operation profiled in both in lock step (summed per
//! operation and layout, with the scope of its queries), Q7 walked through every page, and
//! `verify` run on each store.

use super::*;

#[derive(Default)]
struct Sum {
    runs: usize,
    metrics: Metrics,
    in_scope: Option<u64>,
    routed: Option<Routed>,
    answer_items: usize,
    latencies: Latencies,
}

impl Sum {
    fn add(&mut self, step: Step, in_scope: Option<u64>) {
        let m = &step.measured.metrics;
        self.runs += 1;
        self.metrics += m;
        if m.fan_out_queries + m.prefix_queries > 0
            && let Some(n) = in_scope
        {
            *self.in_scope.get_or_insert(0) += n;
        }
        if let Some(r) = step.measured.routed {
            let sum = self.routed.get_or_insert_with(Routed::default);
            sum.query_requests += r.query_requests;
            sum.physical_partitions += r.physical_partitions;
        }
        self.answer_items += step.answer;
        self.latencies.push(step.latency);
    }

    fn row(mut self, op: LayoutOp, layout: Tenancy) -> LayoutRow {
        let n = self.runs.max(1) as f64;
        let mean = |total: u64| total as f64 / n;
        LayoutRow {
            op,
            layout,
            samples: self.runs,
            requests: mean(self.metrics.requests),
            partitions: mean(self.metrics.partitions),
            fan_out_queries: mean(self.metrics.fan_out_queries),
            prefix_queries: mean(self.metrics.prefix_queries),
            in_scope: self.in_scope.map(mean),
            items_read: mean(self.metrics.items_read),
            items_written: mean(self.metrics.items_written),
            answer_items: self.answer_items as f64 / n,
            request_units: self.metrics.request_units.map(|ru| ru / n),
            routed: self
                .routed
                .map(|r| (mean(r.query_requests), mean(r.physical_partitions))),
            p50: self.latencies.percentile(50.0),
            p99: self.latencies.percentile(99.0),
        }
    }
}

/// Logical partitions of `container` that a query of `layout` for `tenant` searches: the
/// whole container across all partitions, the tenant's part by prefix. One per user in
/// `users`, one per post in `posts`; what the profile made itself is counted in.
struct Scope {
    users: Vec<u64>,
    posts: Vec<u64>,
}

impl Scope {
    fn new(data: &TenantsData) -> Self {
        Self {
            users: data.tenants.iter().map(|t| t.users.len() as u64).collect(),
            posts: data.tenants.iter().map(|t| t.posts.len() as u64).collect(),
        }
    }

    fn of(&self, layout: Tenancy, container: Container, tenant: usize) -> u64 {
        let counts = match container {
            Container::Users => &self.users,
            _ => &self.posts,
        };
        match layout {
            Tenancy::Single => counts.iter().sum(),
            Tenancy::Multi => counts[tenant],
        }
    }
}

/// Profiles every operation in both layouts in lock step: run `i` of an operation works on
/// the same target in each layout, one layout right after the other, so that both have the
/// same runs (the time budget is the layouts' together).
pub(super) async fn profile(
    subjects: &[Subject],
    data: &TenantsData,
    config: &LayoutsConfig,
) -> anyhow::Result<Vec<LayoutRow>> {
    let targets = Targets::new(data);
    let bar = if config.progress {
        ProgressBar::new(LayoutOp::RUN_ORDER.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    let mut scopes: Vec<Scope> = subjects.iter().map(|_| Scope::new(data)).collect();
    let mut created: Vec<Vec<(usize, PostId)>> = vec![Vec::new(); subjects.len()];
    let budget = config.budget * subjects.len() as u32;
    // Warm-up runs are for the latencies; on the emulator only the counts are reported.
    let warm_up = if subjects.iter().any(|s| s.routing.is_some()) {
        0
    } else {
        WARM_UP
    };
    let mut rows = Vec::new();
    for op in LayoutOp::RUN_ORDER {
        bar.set_message(op.label());
        // One generator per layout, seeded alike: they draw the same targets.
        let mut rngs: Vec<fastrand::Rng> = subjects
            .iter()
            .map(|_| fastrand::Rng::with_seed(config.seed ^ (op as u64 * 7919)))
            .collect();
        let mut sums: Vec<HashMap<LayoutOp, Sum>> =
            subjects.iter().map(|_| HashMap::new()).collect();
        let started = Instant::now();
        let mut i = 0;
        while i < warm_up + config.samples
            && (i < warm_up + MIN_SAMPLES || started.elapsed() < budget)
        {
            // Each layout goes first every other run, so that neither pays for the other's
            // writes still settling (write-ahead log, page cache) more often.
            for s in (0..subjects.len()).map(|k| (k + i) % subjects.len()) {
                let subject = &subjects[s];
                let target = targets.target(&mut rngs[s], op, i, &created[s]);
                let made = created[s].len();
                let steps = run_once(subject, data, op, &target, &mut created[s])
                    .await
                    .map_err(|e| anyhow::anyhow!("{} in {}: {e:#}", op.label(), subject.layout))?;
                match op {
                    LayoutOp::C1 => scopes[s].users[target.tenant] += 1,
                    LayoutOp::C2 => {
                        scopes[s].posts[target.tenant] += (created[s].len() - made) as u64
                    }
                    _ => {}
                }
                if i >= warm_up {
                    for step in steps {
                        let in_scope = step
                            .op
                            .searched()
                            .map(|c| scopes[s].of(subject.layout, c, target.tenant));
                        sums[s].entry(step.op).or_default().add(step, in_scope);
                    }
                }
            }
            i += 1;
        }
        for (subject, sums) in subjects.iter().zip(sums) {
            rows.extend(
                sums.into_iter()
                    .map(|(op, sum)| sum.row(op, subject.layout)),
            );
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    rows.sort_by_key(|r| (r.op, r.layout == Tenancy::Multi));
    Ok(rows)
}

/// Q7 through every page: in `multi` for the largest and the smallest tenant, in `single`
/// for the whole blog. Each walk must list exactly the users it should: a tenant's own.
pub(super) async fn walks(
    subjects: &[Subject],
    data: &TenantsData,
) -> anyhow::Result<Vec<UsersWalk>> {
    let mut walks = Vec::new();
    for subject in subjects {
        let tenants: Vec<usize> = match subject.layout {
            Tenancy::Single => vec![0],
            Tenancy::Multi => {
                let mut ends = vec![0, data.tenants.len() - 1];
                ends.dedup();
                ends
            }
        };
        for t in tenants {
            let tenant = &data.tenants[t];
            let blog = subject.blog(&tenant.id)?;
            let (expected, named) = match subject.layout {
                Tenancy::Single => (data.users(), None),
                Tenancy::Multi => (tenant.users.len(), Some(tenant.id.clone())),
            };
            let mut sum = Sum::default();
            let mut continuation: Option<String> = None;
            let mut listed = 0;
            // The metrics page by page; the routing over the whole walk.
            subject.take();
            loop {
                let page = blog
                    .list_users::<User>(ListRequest::new(
                        PageSize::DEFAULT,
                        continuation.as_deref(),
                    ))
                    .await?;
                listed += page.items.len();
                let step = Step {
                    op: LayoutOp::Q7,
                    measured: Measured {
                        metrics: subject.metered.take(),
                        routed: None,
                    },
                    answer: page.items.len(),
                    latency: Duration::ZERO,
                };
                sum.add(step, None);
                continuation = page.continuation.clone();
                if continuation.is_none() {
                    break;
                }
            }
            anyhow::ensure!(
                listed == expected,
                "Q7 in {} listed {listed} users, not {expected}",
                subject.layout
            );
            let row = sum.row(LayoutOp::Q7, subject.layout);
            walks.push(UsersWalk {
                layout: subject.layout,
                tenant: named,
                listed,
                pages: row.samples,
                requests_per_page: row.requests,
                partitions_per_page: row.partitions,
                fan_out: row.fan_out_queries > 0.0,
                prefix: row.prefix_queries > 0.0,
                routed: subject.routing.as_ref().map(|r| r.take()),
            });
        }
    }
    Ok(walks)
}

/// `verify` on `store`, as the report lists it.
pub(super) async fn checked(
    store: &Arc<dyn Store>,
    layout: Tenancy,
    after: &str,
    progress: bool,
) -> anyhow::Result<(String, Check)> {
    let check = invariants::after_generation(store, progress).await?;
    Ok((format!("{layout}, {after}"), check))
}
