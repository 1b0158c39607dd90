//! A month's bill in each Cosmos DB mode (serverless, provisioned, autoscale) and for the
//! Functions plan (Flex Consumption, on demand), with the free grants applied.

use std::collections::BTreeMap;

use serde::Serialize;

use super::data::Azure;
use super::model::{
    DAYS_PER_MONTH, HOURS_PER_MONTH, PEAK_HOURS_PER_DAY, SECONDS_PER_DAY, Workload,
    executions_per_second,
};

/// One Cosmos DB mode's month.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeBill {
    /// Whether the mode can serve the peak at all.
    pub holds_peak: bool,
    /// Why not, when it cannot.
    pub why_not: Option<String>,
    /// What to set: RU/s provisioned, or autoscale's maximum.
    pub ru_per_second: Option<f64>,
    pub throughput_usd: f64,
    pub storage_usd: f64,
    pub total: f64,
}

/// The Functions plan's month.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionsBill {
    pub executions: f64,
    pub gb_seconds: f64,
    pub executions_usd: f64,
    pub gb_seconds_usd: f64,
    pub total: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonthlyUsd {
    pub serverless: ModeBill,
    pub provisioned: ModeBill,
    pub autoscale: ModeBill,
    pub functions: FunctionsBill,
}

/// What the bill is computed from.
pub(crate) struct Demand<'a> {
    pub workload: &'a Workload,
    pub mean_ru_s: f64,
    pub peak_ru_s: f64,
    /// Peak RU/s by container.
    pub peak_by_container: &'a BTreeMap<String, f64>,
    /// Gigabytes by container at the horizon.
    pub storage_gb: &'a BTreeMap<String, f64>,
}

fn round_up(value: f64, step: f64) -> f64 {
    (value / step).ceil() * step
}

/// Serverless's ceiling for a container of `gb`: 5,000 RU/s up to 250 GB, then 1,000 per
/// physical partition of 50 GB.
pub(crate) fn serverless_ceiling(azure: &Azure, gb: f64) -> f64 {
    let base = azure.limits.serverless_container_ru_s.value;
    if gb <= 250.0 {
        base
    } else {
        base.max(1000.0 * (gb / 50.0).ceil())
    }
}

pub fn monthly(demand: &Demand<'_>, azure: &Azure) -> MonthlyUsd {
    let w = demand.workload;
    let prices = &azure.prices;
    let total_gb: f64 = demand.storage_gb.values().sum();
    let storage_usd = total_gb * prices.storage_per_gb_month.value * w.regions;
    MonthlyUsd {
        serverless: serverless(demand, azure, total_gb),
        provisioned: provisioned(demand, azure, storage_usd),
        autoscale: autoscale(demand, azure, storage_usd),
        functions: functions(w, azure),
    }
}

fn serverless(demand: &Demand<'_>, azure: &Azure, total_gb: f64) -> ModeBill {
    let w = demand.workload;
    let limits = &azure.limits;
    let ru_month = demand.mean_ru_s * SECONDS_PER_DAY * DAYS_PER_MONTH;
    let throughput_usd = ru_month / 1e6 * azure.prices.serverless_per_million_ru.value;
    let storage_usd = total_gb * azure.prices.storage_per_gb_month.value;
    let mut why_not = None;
    if w.regions > limits.serverless_regions.value {
        why_not = Some(format!(
            "serverless accounts run in {} region",
            limits.serverless_regions.value
        ));
    }
    for (container, &peak) in demand.peak_by_container {
        let gb = demand.storage_gb.get(container).copied().unwrap_or(0.0);
        let ceiling = serverless_ceiling(azure, gb);
        if why_not.is_none() && peak > ceiling {
            why_not = Some(format!(
                "{container} peaks at {peak:.0} RU/s, over serverless's {ceiling:.0} RU/s per container"
            ));
        }
        if why_not.is_none() && gb > limits.serverless_container_gb.value {
            why_not = Some(format!(
                "{container} holds {gb:.0} GB, over serverless's {:.0} GB per container",
                limits.serverless_container_gb.value
            ));
        }
    }
    ModeBill {
        holds_peak: why_not.is_none(),
        why_not,
        ru_per_second: None,
        throughput_usd,
        storage_usd,
        total: throughput_usd + storage_usd,
    }
}

/// Manual throughput shared by the database's containers, set to the peak.
fn provisioned(demand: &Demand<'_>, azure: &Azure, storage_usd: f64) -> ModeBill {
    let w = demand.workload;
    let ru_s = round_up(demand.peak_ru_s, 100.0).max(azure.limits.provisioned_minimum_ru_s.value);
    let throughput_usd = ru_s / 100.0
        * azure.prices.provisioned_per_100_ru_s_hour.value
        * HOURS_PER_MONTH
        * w.regions;
    ModeBill {
        holds_peak: true,
        why_not: None,
        ru_per_second: Some(ru_s),
        throughput_usd,
        storage_usd,
        total: throughput_usd + storage_usd,
    }
}

/// Autoscale with its maximum at the peak, billed each hour for the highest RU/s reached
/// (never under its floor): the peak hours at the peak, the other hours at what is left of
/// the day's mean.
fn autoscale(demand: &Demand<'_>, azure: &Azure, storage_usd: f64) -> ModeBill {
    let w = demand.workload;
    let limits = &azure.limits;
    let max_ru_s = round_up(demand.peak_ru_s, 1000.0).max(limits.autoscale_minimum_max_ru_s.value);
    let floor = max_ru_s * limits.autoscale_floor_share.value;
    let peak_hours = PEAK_HOURS_PER_DAY.min(24.0);
    let rest =
        ((24.0 * demand.mean_ru_s - peak_hours * demand.peak_ru_s) / (24.0 - peak_hours)).max(0.0);
    let billed =
        (peak_hours * demand.peak_ru_s.max(floor) + (24.0 - peak_hours) * rest.max(floor)) / 24.0;
    let throughput_usd = billed / 100.0
        * azure.prices.autoscale_per_100_ru_s_hour.value
        * HOURS_PER_MONTH
        * w.regions;
    ModeBill {
        holds_peak: true,
        why_not: None,
        ru_per_second: Some(max_ru_s),
        throughput_usd,
        storage_usd,
        total: throughput_usd + storage_usd,
    }
}

/// Flex Consumption, on demand: an instance is billed for its memory while it executes, at
/// least the minimum billed period per execution when executions are sparse, and never more
/// than all the time; beyond one instance's concurrency, more instances.
fn functions(w: &Workload, azure: &Azure) -> FunctionsBill {
    let prices = &azure.prices;
    let limits = &azure.limits;
    let rate = executions_per_second(w, 1.0);
    let seconds = SECONDS_PER_DAY * DAYS_PER_MONTH;
    let executions = rate * seconds;
    let busy = rate * w.function_ms / 1000.0 / limits.flex_http_concurrency.value;
    let sparse = (rate * limits.flex_minimum_billed_seconds.value).min(1.0);
    let active_instances = busy.max(sparse);
    let gb_seconds = active_instances * seconds * w.instance_memory_mb / 1024.0;
    let gb_seconds_usd = (gb_seconds - prices.flex_free_gb_seconds_per_month.value).max(0.0)
        * prices.flex_per_gb_second.value;
    let executions_usd = (executions - prices.flex_free_executions_per_month.value).max(0.0) / 1e6
        * prices.flex_per_million_executions.value;
    FunctionsBill {
        executions,
        gb_seconds,
        executions_usd,
        gb_seconds_usd,
        total: executions_usd + gb_seconds_usd,
    }
}
