//! The planner's data: what each operation costs (measured by the harness and checked in as
//! `costs.json`), the case study's figures from the real service (the reference), and Azure's
//! prices and limits (`azure.json`, dated, each figure with the page it came from). Prices
//! and limits can be overridden by a file of the same shape holding only what changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The measured table, as the harness phase `--only plan-costs` writes it.
pub(crate) const MEASURED_COSTS: &str = include_str!("costs.json");
/// Prices and limits, dated, with their sources.
pub(crate) const AZURE: &str = include_str!("azure.json");

/// What one operation cost, mean per run, as measured through the application on the Cosmos
/// DB emulator (its RU model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredOp {
    /// What the operation is, in words.
    pub what: String,
    /// What one run is: a request, or for the rename's change-feed work, one item of the
    /// renamed user rewritten.
    pub per: String,
    /// The container whose partitions the RU land in.
    pub container: String,
    pub requests: f64,
    /// Logical partitions touched.
    pub partitions: f64,
    /// Request units charged by the emulator's model.
    pub ru: f64,
    /// Queries of the feed's partition among the requests (the feed window each post change
    /// reads): on the real service each costs about what Q6 costs.
    pub feed_queries: f64,
    pub samples: usize,
}

/// Mean stored size of each kind of item (compact JSON with the service's system
/// properties), bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemBytes {
    pub user: f64,
    pub post: f64,
    /// A post's short copy in its author's partition of `users` and in `feed`.
    pub post_copy: f64,
    pub comment: f64,
    pub like: f64,
    /// A post's short copy in a tag's partition of `tags` (the copy and its tag).
    pub tag_copy: f64,
    /// A post's short copy in its month's partition of `archive` (the copy and its month).
    pub archive_copy: f64,
}

/// The checked-in table of measured costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredCosts {
    pub about: String,
    /// UTC date of the measurement.
    pub measured_on: String,
    /// The command that measured it.
    pub command: String,
    pub backend: String,
    pub item_bytes: ItemBytes,
    /// By operation id: `C1`…`C4`, `Q1`…`Q9`, and each change-feed copy a write causes as
    /// `<write>.<container>` (`C2.feed`: what `OnPostChanged` does in `feed` after a C2). The
    /// rows of `tags` are per tag copy: a post's change makes one per tag it carries.
    pub operations: BTreeMap<String, MeasuredOp>,
}

impl MeasuredCosts {
    /// The table compiled into the binary.
    pub fn checked_in() -> Result<Self, String> {
        serde_json::from_str(MEASURED_COSTS)
            .map_err(|e| format!("the checked-in table of measured costs is unreadable: {e}"))
    }

    pub fn get(&self, id: &str) -> Option<&MeasuredOp> {
        self.operations.get(id)
    }
}

/// The case study's V3 figures, measured on the real service (SPEC section 7), RU per
/// operation: the reference where they exist.
pub const REFERENCE_RU: [(&str, f64); 10] = [
    ("C1", 5.71),
    ("Q1", 1.0),
    ("C2", 8.76),
    ("Q2", 1.0),
    ("Q3", 6.46),
    ("C3", 15.27),
    ("Q4", 7.72),
    ("C4", 14.67),
    ("Q5", 8.92),
    ("Q6", 16.97),
];

pub(crate) fn reference_ru(id: &str) -> Option<f64> {
    REFERENCE_RU
        .iter()
        .find(|(op, _)| *op == id)
        .map(|(_, ru)| *ru)
}

/// The reads the case study did not make, each with its read of the same shape: a tag's and
/// a month's posts (Q8, Q9) are, like an author's (Q3), one query of one logical partition for
/// a page of short copies, newest first, served by a composite index.
pub const PRICED_AS: [(&str, &str); 2] = [("Q8", "Q3"), ("Q9", "Q3")];

/// The case study's read of the same shape as `id`, if `id` is one the case study did not make.
pub(crate) fn priced_as(id: &str) -> Option<&'static str> {
    PRICED_AS
        .iter()
        .find(|(op, _)| *op == id)
        .map(|(_, like)| *like)
}

/// One figure and the page it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced {
    pub value: f64,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub serverless_per_million_ru: Sourced,
    pub provisioned_per_100_ru_s_hour: Sourced,
    pub autoscale_per_100_ru_s_hour: Sourced,
    pub storage_per_gb_month: Sourced,
    pub flex_per_gb_second: Sourced,
    pub flex_per_million_executions: Sourced,
    pub flex_free_gb_seconds_per_month: Sourced,
    pub flex_free_executions_per_month: Sourced,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub logical_partition_ru_s: Sourced,
    pub logical_partition_gb: Sourced,
    pub serverless_container_ru_s: Sourced,
    pub serverless_physical_partition_ru_s: Sourced,
    pub serverless_container_gb: Sourced,
    pub serverless_regions: Sourced,
    pub batch_operations: Sourced,
    pub provisioned_minimum_ru_s: Sourced,
    pub autoscale_minimum_max_ru_s: Sourced,
    pub autoscale_floor_share: Sourced,
    pub flex_http_concurrency: Sourced,
    pub flex_minimum_billed_seconds: Sourced,
}

/// Prices and limits, dated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Azure {
    pub about: String,
    pub as_of: String,
    pub currency: String,
    pub region: String,
    pub prices: Prices,
    pub limits: Limits,
}

/// A figure that must be a finite number, at least zero (a price, a limit).
fn checked(name: &str, figure: &Sourced) -> Result<(), String> {
    if figure.value.is_finite() && figure.value >= 0.0 && figure.value <= 1e12 {
        Ok(())
    } else {
        Err(format!(
            "{name} must be a finite number between 0 and 1e12, not {}",
            figure.value
        ))
    }
}

/// `[("field", &owner.field), ...]`: figures with the names their errors give them, each
/// name written once, as its field.
macro_rules! named {
    ($($owner:ident . $field:ident),* $(,)?) => {
        [$((stringify!($field), &$owner.$field)),*]
    };
}

impl Azure {
    /// The prices and limits compiled into the binary.
    pub fn checked_in() -> Result<Self, String> {
        Self::from_value(serde_json::from_str(AZURE).map_err(|e| e.to_string())?)
    }

    /// The checked-in data with `overrides` laid over it: a JSON object of the same shape
    /// holding only what changes (`{"prices": {"storage_per_gb_month": {"value": 0.3}}}`).
    pub(crate) fn with_overrides(overrides: &Value) -> Result<Self, String> {
        let mut base: Value = serde_json::from_str(AZURE).map_err(|e| e.to_string())?;
        if !overrides.is_object() {
            return Err("must hold a JSON object like azure.json".to_owned());
        }
        merge(&mut base, overrides);
        Self::from_value(base)
    }

    fn from_value(value: Value) -> Result<Self, String> {
        let azure: Azure = serde_json::from_value(value).map_err(|e| e.to_string())?;
        azure.check()?;
        Ok(azure)
    }

    fn check(&self) -> Result<(), String> {
        let p = &self.prices;
        let l = &self.limits;
        let figures = named![
            p.serverless_per_million_ru,
            p.provisioned_per_100_ru_s_hour,
            p.autoscale_per_100_ru_s_hour,
            p.storage_per_gb_month,
            p.flex_per_gb_second,
            p.flex_per_million_executions,
            p.flex_free_gb_seconds_per_month,
            p.flex_free_executions_per_month,
            l.batch_operations,
            l.provisioned_minimum_ru_s,
            l.flex_minimum_billed_seconds,
        ];
        for (name, figure) in figures {
            checked(name, figure)?;
        }
        // Capacities divide: they must be above zero.
        let capacities = named![
            l.logical_partition_ru_s,
            l.logical_partition_gb,
            l.serverless_container_ru_s,
            l.serverless_physical_partition_ru_s,
            l.serverless_container_gb,
            l.serverless_regions,
            l.autoscale_minimum_max_ru_s,
            l.flex_http_concurrency,
        ];
        for (name, figure) in capacities {
            checked(name, figure)?;
            if figure.value <= 0.0 {
                return Err(format!("{name} must be above zero"));
            }
        }
        if !(0.0..=1.0).contains(&l.autoscale_floor_share.value) {
            return Err("autoscale_floor_share must be between 0 and 1".to_owned());
        }
        Ok(())
    }
}

/// Lays `over` onto `base`, object by object; any other value replaces.
fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}
