//! The plan put together, and told: a table for people, JSON for programs, and the chart of
//! monthly cost against users in `docs/capacity.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::bill::{Demand, ModeBill, MonthlyUsd, monthly};
use super::data::{Azure, MeasuredCosts};
use super::limits::{Reached, design_limit_past, walk};
use super::model::{
    DAYS_PER_MONTH, RuSource, SECONDS_PER_DAY, UnitCost, Workload, operations_per_second,
    ru_per_second_by_container, ru_per_second_by_operation, storage_gb, unit_costs,
};

/// One operation's line: its cost per run and how often it runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperationLine {
    #[serde(flatten)]
    pub cost: UnitCost,
    pub per_day: f64,
    pub ru_per_day: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuPerSecond {
    pub mean: f64,
    pub peak: f64,
    pub peak_by_container: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StorageGb {
    /// After the first month.
    pub now: BTreeMap<String, f64>,
    /// At the horizon.
    pub after: BTreeMap<String, f64>,
    pub horizon_months: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct At {
    pub scale: f64,
    pub flag: Option<&'static str>,
    pub value: Option<f64>,
    pub workload: BTreeMap<&'static str, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstLimit {
    pub what: String,
    pub at: At,
    pub then: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub mode: &'static str,
    pub settings: String,
    pub ru_per_second: Option<f64>,
    pub regions: f64,
    pub cosmos_usd: f64,
    pub functions_usd: f64,
    pub total_usd: f64,
    /// A limit of the design already past: no setting of any mode holds it.
    pub warning: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sources {
    pub ru: &'static str,
    pub costs_measured_on: String,
    pub costs_command: String,
    pub costs_backend: String,
    pub prices_as_of: String,
    pub prices_region: String,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub workload: Workload,
    pub operations: BTreeMap<String, OperationLine>,
    pub ru_per_second: RuPerSecond,
    pub storage_gb: StorageGb,
    pub monthly_usd: MonthlyUsd,
    pub first_limit: Option<FirstLimit>,
    /// Every limit, nearest first.
    pub limits: Vec<Reached>,
    pub recommendation: Recommendation,
    pub sources: Sources,
}

impl Plan {
    /// RU a day of the operations (what the harness's validation compares).
    pub fn ru_per_day(&self) -> f64 {
        self.operations.values().map(|o| o.ru_per_day).sum()
    }
}

pub fn plan(w: &Workload, azure: &Azure, measured: &MeasuredCosts) -> Plan {
    let costs = unit_costs(measured, w.ru_source);
    let per_second = operations_per_second(w, azure, 1.0);
    let operations: BTreeMap<String, OperationLine> = costs
        .iter()
        .map(|(id, cost)| {
            let per_day = per_second.get(id).copied().unwrap_or(0.0) * SECONDS_PER_DAY;
            let line = OperationLine {
                cost: cost.clone(),
                per_day,
                ru_per_day: per_day * cost.ru,
            };
            (id.clone(), line)
        })
        .collect();
    let by_container = |rate: f64| {
        ru_per_second_by_container(&costs, &ru_per_second_by_operation(w, azure, &costs, rate))
    };
    let mean: f64 = by_container(1.0).values().sum();
    let peak_by_container = by_container(w.peak_factor);
    let peak: f64 = peak_by_container.values().sum();
    let storage = StorageGb {
        now: storage_gb(w, measured, DAYS_PER_MONTH.min(w.horizon_days)),
        after: storage_gb(w, measured, w.horizon_days),
        horizon_months: w.horizon_days / DAYS_PER_MONTH,
    };
    let monthly_usd = monthly(
        &Demand {
            workload: w,
            mean_ru_s: mean,
            peak_ru_s: peak,
            peak_by_container: &peak_by_container,
            storage_gb: &storage.after,
        },
        azure,
    );
    let limits = walk(w, azure, &costs, measured);
    let recommendation = recommend(w, &monthly_usd, &limits);
    // Serverless's own ceilings count only where serverless is the choice.
    let first_limit = limits
        .iter()
        .filter(|r| recommendation.mode == "serverless" || !r.serverless_only())
        .find_map(|r| {
            r.scale.map(|scale| FirstLimit {
                what: r.what.clone(),
                at: At {
                    scale,
                    flag: r.flag,
                    value: r.value,
                    workload: r.workload.clone(),
                },
                then: r.then,
            })
        });
    Plan {
        workload: w.clone(),
        operations,
        ru_per_second: RuPerSecond {
            mean,
            peak,
            peak_by_container,
        },
        storage_gb: storage,
        monthly_usd,
        first_limit,
        limits,
        recommendation,
        sources: Sources {
            ru: match w.ru_source {
                RuSource::Reference => {
                    "reference: the case study's V3 figures from the real service for C1-C4 and Q1-Q6; Q8 and Q9 priced as Q3 (the same query shape); for the copies that read the feed's window, the emulator's figure with each window read priced as Q6; the emulator's measured figures for the rest"
                }
                RuSource::Measured => "measured: the emulator's RU model for every operation",
            },
            costs_measured_on: measured.measured_on.clone(),
            costs_command: measured.command.clone(),
            costs_backend: measured.backend.clone(),
            prices_as_of: azure.as_of.clone(),
            prices_region: azure.region.clone(),
        },
    }
}

/// The cheapest mode that holds the peak, with what to set.
fn recommend(w: &Workload, bills: &MonthlyUsd, limits: &[Reached]) -> Recommendation {
    let regions = w.regions;
    let candidates: [(&'static str, &ModeBill); 3] = [
        ("serverless", &bills.serverless),
        ("provisioned", &bills.provisioned),
        ("autoscale", &bills.autoscale),
    ];
    let (mode, bill) = candidates
        .into_iter()
        .filter(|(_, bill)| bill.holds_peak)
        .min_by(|a, b| a.1.total.total_cmp(&b.1.total))
        .unwrap_or(("provisioned", &bills.provisioned));
    let settings = match (mode, bill.ru_per_second) {
        ("serverless", _) => "a serverless account in one region".to_owned(),
        ("autoscale", Some(max)) => format!(
            "autoscale throughput shared by the database, maximum {max:.0} RU/s (it never bills under {:.0} RU/s), {regions:.0} region(s)",
            max / 10.0
        ),
        (_, Some(ru)) => format!(
            "manual throughput shared by the database, {ru:.0} RU/s, {regions:.0} region(s)"
        ),
        (_, None) => String::new(),
    };
    Recommendation {
        mode,
        settings,
        ru_per_second: bill.ru_per_second,
        regions,
        cosmos_usd: bill.total,
        functions_usd: bills.functions.total,
        total_usd: bill.total + bills.functions.total,
        warning: design_limit_past(limits).map(|r| {
            format!(
                "the workload is past {}: no throughput setting holds it; {}",
                r.what, r.then
            )
        }),
    }
}

/// The plan as JSON (every number finite, or an error: never NaN nor infinity).
pub fn json(plan: &Plan) -> Result<String, String> {
    let value = serde_json::to_value(plan).map_err(|e| e.to_string())?;
    // serde_json writes a non-finite float as null: a null where a number belongs is a bug.
    if !all_finite(plan) {
        return Err("the plan holds a number that is not finite".to_owned());
    }
    serde_json::to_string_pretty(&value).map_err(|e| e.to_string())
}

fn all_finite(plan: &Plan) -> bool {
    let numbers = [
        plan.ru_per_second.mean,
        plan.ru_per_second.peak,
        plan.monthly_usd.serverless.total,
        plan.monthly_usd.provisioned.total,
        plan.monthly_usd.autoscale.total,
        plan.monthly_usd.functions.total,
        plan.recommendation.total_usd,
    ];
    let lines = plan
        .operations
        .values()
        .flat_map(|o| [o.per_day, o.ru_per_day, o.cost.ru]);
    let stored = plan
        .storage_gb
        .now
        .values()
        .chain(plan.storage_gb.after.values())
        .copied();
    numbers
        .into_iter()
        .chain(lines)
        .chain(stored)
        .all(f64::is_finite)
}

/// `1234567.8` as `1,234,568`; small figures that are not whole keep two decimals.
pub fn figure(value: f64) -> String {
    if value.abs() < 10.0 && value.fract() != 0.0 {
        return format!("{value:.2}");
    }
    let whole = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 { format!("-{out}") } else { out }
}

/// The plan as a table for people.
pub fn table(plan: &Plan) -> String {
    let w = &plan.workload;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Workload: {} users, {} posts/day ({} comments, {} likes and {} tags each), {} views/day, {} renames/day; peak hour x{}; {} region(s); {} months; {}",
        figure(w.users),
        figure(w.posts_per_day),
        figure(w.comments_per_post),
        figure(w.likes_per_post),
        figure(w.tags_per_post),
        figure(w.views_per_day),
        figure(w.renames_per_day),
        w.peak_factor,
        w.regions,
        figure(plan.storage_gb.horizon_months),
        match w.tenancy {
            super::model::Tenancy::Single => "one blog".to_owned(),
            super::model::Tenancy::Multi => format!("{} tenants", figure(w.tenants)),
        }
    );
    let _ = writeln!(out, "RU per operation: {}.\n", plan.sources.ru);
    let _ = writeln!(
        out,
        "{:<15} {:>12} {:>9} {:>10} {:>9} {:>9} {:>9} {:>13}  per",
        "operation", "per day", "requests", "partitions", "RU used", "RU ref", "RU emul", "RU/day"
    );
    for (id, line) in &plan.operations {
        let c = &line.cost;
        let reference = c.ru_reference.map_or("-".to_owned(), figure);
        let mark = if c.used == "measured" { "*" } else { "" };
        let _ = writeln!(
            out,
            "{:<15} {:>12} {:>9} {:>10} {:>8}{mark:<1} {:>9} {:>9} {:>13}  {}",
            id,
            figure(line.per_day),
            figure(c.requests),
            figure(c.partitions),
            figure(c.ru),
            reference,
            figure(c.ru_measured),
            figure(line.ru_per_day),
            c.per
        );
    }
    let _ = writeln!(out, "(* the emulator's figure is the one used)\n");
    let r = &plan.ru_per_second;
    let by_container: Vec<String> = r
        .peak_by_container
        .iter()
        .map(|(c, ru)| format!("{c} {}", figure(*ru)))
        .collect();
    let _ = writeln!(
        out,
        "RU/s: mean {}, peak {} ({})",
        figure(r.mean),
        figure(r.peak),
        by_container.join(", ")
    );
    let gb = |m: &BTreeMap<String, f64>| {
        let total: f64 = m.values().sum();
        let parts: Vec<String> = m.iter().map(|(c, g)| format!("{c} {g:.3}")).collect();
        format!("{total:.3} GB ({})", parts.join(", "))
    };
    let _ = writeln!(out, "Storage after a month: {}", gb(&plan.storage_gb.now));
    let _ = writeln!(
        out,
        "Storage after {} months: {}\n",
        figure(plan.storage_gb.horizon_months),
        gb(&plan.storage_gb.after)
    );
    let m = &plan.monthly_usd;
    let _ = writeln!(out, "A month, USD:");
    for (name, bill) in [
        ("serverless", &m.serverless),
        ("provisioned", &m.provisioned),
        ("autoscale", &m.autoscale),
    ] {
        let setting = bill
            .ru_per_second
            .map_or(String::new(), |ru| format!(" at {} RU/s", figure(ru)));
        let holds = match &bill.why_not {
            None => "holds the peak".to_owned(),
            Some(why) => format!("cannot: {why}"),
        };
        let _ = writeln!(
            out,
            "  {name:<12} {:>12}  (throughput {}{setting}, storage {}; {holds})",
            format!("${:.2}", bill.total),
            figure(bill.throughput_usd),
            figure(bill.storage_usd)
        );
    }
    let f = &m.functions;
    let _ = writeln!(
        out,
        "  {:<12} {:>12}  (Flex Consumption: {} executions, {} GB-s; free grants applied)\n",
        "functions",
        format!("${:.2}", f.total),
        figure(f.executions),
        figure(f.gb_seconds)
    );
    match &plan.first_limit {
        Some(limit) => {
            let at = match (limit.at.flag, limit.at.value) {
                (Some(flag), Some(value)) => format!(" ({flag} {})", figure(value)),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "First limit: {}, at {}x today's workload{at}.\n  Then: {}",
                limit.what,
                figure(limit.at.scale),
                limit.then
            );
        }
        None => {
            let _ = writeln!(
                out,
                "First limit: none within a billion times this workload."
            );
        }
    }
    let rec = &plan.recommendation;
    let _ = writeln!(
        out,
        "\nRecommendation: {}: {}; ${:.2} a month for Cosmos DB + ${:.2} for Functions = ${:.2}.",
        rec.mode, rec.settings, rec.cosmos_usd, rec.functions_usd, rec.total_usd
    );
    if let Some(warning) = &rec.warning {
        let _ = writeln!(out, "Warning: {warning}");
    }
    let _ = writeln!(
        out,
        "\nPrices: {} list prices as of {} (src/plan/azure.json). Costs per operation measured {} on {} (src/plan/costs.json).",
        plan.sources.prices_region,
        plan.sources.prices_as_of,
        plan.sources.costs_measured_on,
        plan.sources.costs_backend
    );
    out
}

/// One blog size on the chart: its users and each mode's month, USD (serverless `None`
/// where it cannot hold the peak).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostPoint {
    pub users: f64,
    pub serverless: Option<f64>,
    pub provisioned: f64,
    pub autoscale: f64,
}

/// One mode's month at a point of the chart.
type ModeCost = fn(&CostPoint) -> Option<f64>;

/// A chart of the monthly Cosmos DB cost of each mode against users; a mode that cannot hold
/// a point's peak has no point there.
pub fn svg_chart(title: &str, points: &[CostPoint]) -> String {
    let (width, height, left, bottom, top, right) = (720.0, 420.0, 70.0, 50.0, 40.0, 150.0);
    let users: Vec<f64> = points.iter().map(|p| p.users.max(1.0).log10()).collect();
    let costs: Vec<f64> = points
        .iter()
        .flat_map(|p| {
            [
                p.serverless.unwrap_or(p.provisioned),
                p.provisioned,
                p.autoscale,
            ]
        })
        .map(|c| c.max(0.01).log10())
        .collect();
    let (x0, x1) = (
        users.iter().copied().fold(f64::MAX, f64::min),
        users.iter().copied().fold(f64::MIN, f64::max),
    );
    let (y0, y1) = (
        costs.iter().copied().fold(f64::MAX, f64::min).floor(),
        costs.iter().copied().fold(f64::MIN, f64::max).ceil(),
    );
    let sx = |x: f64| left + (x - x0) / (x1 - x0).max(1e-9) * (width - left - right);
    let sy = |y: f64| height - bottom - (y - y0) / (y1 - y0).max(1e-9) * (height - top - bottom);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"14\">{title}</text>\n"
    );
    for decade in (y0 as i32)..=(y1 as i32) {
        let y = sy(decade as f64);
        let _ = writeln!(
            svg,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">${}</text>",
            width - right,
            left - 6.0,
            y + 4.0,
            figure(10f64.powi(decade))
        );
    }
    for (x, p) in users.iter().zip(points) {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            sx(*x),
            height - bottom + 18.0,
            figure(p.users)
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">users (log scale); USD a month (log scale)</text>",
        (left + width - right) / 2.0,
        height - 10.0
    );
    let series: [(&str, &str, ModeCost); 3] = [
        ("serverless", "#2a7ab0", |p| p.serverless),
        ("provisioned", "#c0392b", |p| Some(p.provisioned)),
        ("autoscale", "#27ae60", |p| Some(p.autoscale)),
    ];
    for (n, (name, colour, value)) in series.iter().enumerate() {
        let path: Vec<String> = users
            .iter()
            .zip(points)
            .filter_map(|(x, p)| {
                value(p).map(|v| format!("{:.1},{:.1}", sx(*x), sy(v.max(0.01).log10())))
            })
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        let ly = top + 20.0 + n as f64 * 20.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{:.1}\" y1=\"{ly}\" x2=\"{:.1}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
            width - right + 10.0,
            width - right + 30.0,
            width - right + 36.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}
