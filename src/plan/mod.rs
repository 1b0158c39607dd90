//! `cosmos-blog plan`: the capacity and cost planner. For a workload (users, posts, comments,
//! likes, views, renames, their peak, regions, horizon, layout) it says how many RU/s and
//! gigabytes the blog needs, what a month costs on Cosmos DB serverless, provisioned and
//! autoscale throughput plus the Functions plan, which limit of the design binds first and at
//! what load, and which mode to choose. It needs no store and no network: its costs per
//! operation are the harness's measurements (checked in), its prices and limits dated data.

mod bill;
mod data;
mod limits;
mod model;
mod render;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde_json::Value;

use crate::domain::MAX_TAGS;

pub use bill::{FunctionsBill, ModeBill, MonthlyUsd};
pub use data::{Azure, ItemBytes, MeasuredCosts, MeasuredOp, PRICED_AS, REFERENCE_RU};
pub use limits::Reached;
pub use model::{DAYS_PER_MONTH, INDEX_OVERHEAD, Mix, RuSource, TAGS_PER_POST, Tenancy, Workload};
pub use render::{CostPoint, Plan, plan, svg_chart, table};

/// The application's default feed cache period (`BLOG_FEED_CACHE_MS`), which the planner
/// assumes unless told otherwise.
pub const APP_FEED_CACHE_MS: u64 = 50;

/// The planner's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanArgs {
    /// Registered users.
    #[arg(long, default_value = "100", value_parser = whole_in(1.0, 1e10), allow_negative_numbers = true)]
    pub users: f64,
    /// New posts a day.
    #[arg(long, default_value = "5", value_parser = number_in(0.0, 1e9), allow_negative_numbers = true)]
    pub posts_per_day: f64,
    /// Comments a post gets, on average.
    #[arg(long, default_value = "3", value_parser = number_in(0.0, 1e6), allow_negative_numbers = true)]
    pub comments_per_post: f64,
    /// Likes a post gets, on average.
    #[arg(long, default_value = "10", value_parser = number_in(0.0, 1e6), allow_negative_numbers = true)]
    pub likes_per_post: f64,
    /// Tags a post carries, on average (at most 10): a post has a copy in each of its tags'
    /// partitions, rewritten with every comment and like. The default is the harness data
    /// set's mean (none to three tags a post).
    #[arg(long, default_value_t = TAGS_PER_POST, value_parser = number_in(0.0, MAX_TAGS as f64), allow_negative_numbers = true)]
    pub tags_per_post: f64,
    /// Page views and API reads a day, split by --mix.
    #[arg(long, default_value = "10000", value_parser = number_in(0.0, 1e12), allow_negative_numbers = true)]
    pub views_per_day: f64,
    /// Username changes a day (each rewrites the user's posts, comments and likes).
    #[arg(long, default_value = "1", value_parser = number_in(0.0, 1e9), allow_negative_numbers = true)]
    pub renames_per_day: f64,
    /// The peak hour's rate over the day's mean (1 to 24).
    // The peak hour is part of the day, so it is at most 24 times the day's mean.
    #[arg(long, default_value = "3", value_parser = number_in(1.0, 24.0), allow_negative_numbers = true)]
    pub peak_factor: f64,
    /// Azure regions the account replicates to.
    #[arg(long, default_value = "1", value_parser = whole_in(1.0, 50.0), allow_negative_numbers = true)]
    pub regions: f64,
    /// The horizon, in months: the storage it grows to is billed.
    #[arg(long, default_value = "12", value_parser = above_zero_to(1200.0), allow_negative_numbers = true)]
    pub months: f64,
    /// Data layout: one blog, or many tenants on hierarchical keys. Not a flag of its own: the
    /// global `--tenancy` (BLOG_TENANCY) of every command says it, and `main` copies it here.
    #[arg(skip = Tenancy::Single)]
    pub tenancy: Tenancy,
    /// Tenants (`multi` only) [default: one per 1,000 users].
    #[arg(long, value_parser = whole_in(1.0, 1e9), allow_negative_numbers = true)]
    pub tenants: Option<f64>,
    /// How views split: `front=40,post=40,likes=5,author=10,user=5` (the default), plus
    /// `tag` (a tag's posts, Q8), `archive` (a month's posts, Q9) and, in `multi`, `users` (a
    /// tenant's users, Q7). Shares are scaled to add up to 1.
    #[arg(long, value_parser = Mix::parse)]
    pub mix: Option<Mix>,
    /// The feed cache's period per instance, ms; 0: off. Not a flag of its own: the global
    /// `--feed-cache-ms` (BLOG_FEED_CACHE_MS), the one the server runs with, says it, and
    /// `main` copies it here.
    #[arg(skip = APP_FEED_CACHE_MS as f64)]
    pub feed_cache_ms: f64,
    /// Mean duration of one function execution, milliseconds.
    #[arg(long, default_value = "20", value_parser = above_zero_to(600_000.0), allow_negative_numbers = true)]
    pub function_ms: f64,
    /// Memory of a Flex Consumption instance, MB (512, 2048 or 4096).
    #[arg(long, default_value = "2048", value_parser = instance_memory_mb, allow_negative_numbers = true)]
    pub instance_memory_mb: f64,
    /// RU figures for the operations the case study measured: its real-service figures
    /// (`reference`), or the emulator's measured ones for every operation (`measured`).
    #[arg(long, value_enum, default_value_t = RuSource::Reference, ignore_case = true)]
    pub ru_source: RuSource,
    /// Prices and limits to lay over the checked-in ones: a JSON file shaped like
    /// src/plan/azure.json holding only what changes.
    #[arg(long, value_parser = prices_file)]
    pub prices: Option<Value>,
    /// Serverless: USD per million RU.
    #[arg(long, value_parser = price, allow_negative_numbers = true)]
    pub price_serverless_per_million_ru: Option<f64>,
    /// Manual provisioned throughput: USD per 100 RU/s for an hour.
    #[arg(long, value_parser = price, allow_negative_numbers = true)]
    pub price_provisioned_per_100_ru_s_hour: Option<f64>,
    /// Autoscale throughput: USD per 100 RU/s for an hour.
    #[arg(long, value_parser = price, allow_negative_numbers = true)]
    pub price_autoscale_per_100_ru_s_hour: Option<f64>,
    /// Storage: USD per GB for a month.
    #[arg(long, value_parser = price, allow_negative_numbers = true)]
    pub price_storage_per_gb_month: Option<f64>,
    /// Flex Consumption: USD per GB-second.
    #[arg(long, value_parser = price, allow_negative_numbers = true)]
    pub price_flex_per_gb_second: Option<f64>,
    /// Flex Consumption: USD per million executions.
    #[arg(long, value_parser = price, allow_negative_numbers = true)]
    pub price_flex_per_million_executions: Option<f64>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Why the planner could not answer.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The input is wrong: exit status 2, one line naming the flag.
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Internal(String),
}

impl PlanArgs {
    /// The workload the flags describe.
    pub fn workload(&self) -> Result<Workload, PlanError> {
        let tenants = match (self.tenancy, self.tenants) {
            (Tenancy::Single, Some(_)) => {
                return Err(PlanError::Usage(
                    "--tenants needs --tenancy multi".to_owned(),
                ));
            }
            (Tenancy::Single, None) => 1.0,
            (Tenancy::Multi, Some(n)) if n > self.users => {
                return Err(PlanError::Usage(format!(
                    "--tenants {n} is more than --users {}: a tenant has a user at least",
                    self.users
                )));
            }
            (Tenancy::Multi, Some(n)) => n,
            (Tenancy::Multi, None) => (self.users / 1000.0).round().max(1.0),
        };
        let mix = self.mix.clone().unwrap_or_default();
        if self.tenancy == Tenancy::Single && mix.users > 0.0 {
            return Err(PlanError::Usage(
                "--mix users=… (a tenant's users, Q7) needs --tenancy multi".to_owned(),
            ));
        }
        Ok(Workload {
            users: self.users,
            posts_per_day: self.posts_per_day,
            comments_per_post: self.comments_per_post,
            likes_per_post: self.likes_per_post,
            tags_per_post: self.tags_per_post,
            views_per_day: self.views_per_day,
            renames_per_day: self.renames_per_day,
            peak_factor: self.peak_factor,
            regions: self.regions,
            horizon_days: self.months * DAYS_PER_MONTH,
            tenancy: self.tenancy,
            tenants,
            mix,
            feed_cache_ms: self.feed_cache_ms,
            function_ms: self.function_ms,
            instance_memory_mb: self.instance_memory_mb,
            ru_source: self.ru_source,
        })
    }

    /// The checked-in prices and limits with the file's and the flags' overrides.
    pub fn azure(&self) -> Result<Azure, PlanError> {
        let mut overrides = self
            .prices
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let flags = [
            (
                "serverless_per_million_ru",
                self.price_serverless_per_million_ru,
            ),
            (
                "provisioned_per_100_ru_s_hour",
                self.price_provisioned_per_100_ru_s_hour,
            ),
            (
                "autoscale_per_100_ru_s_hour",
                self.price_autoscale_per_100_ru_s_hour,
            ),
            ("storage_per_gb_month", self.price_storage_per_gb_month),
            ("flex_per_gb_second", self.price_flex_per_gb_second),
            (
                "flex_per_million_executions",
                self.price_flex_per_million_executions,
            ),
        ];
        for (name, value) in flags {
            if let Some(value) = value {
                overrides["prices"][name] = serde_json::json!({
                    "value": value,
                    "source": format!("--price-{}", name.replace('_', "-")),
                });
            }
        }
        Azure::with_overrides(&overrides)
            .map_err(|e| PlanError::Usage(format!("invalid value for '--prices': {e}")))
    }
}

/// Runs the planner: the table, or JSON with `--json`.
pub fn run(args: &PlanArgs) -> Result<String, PlanError> {
    let workload = args.workload()?;
    let azure = args.azure()?;
    let costs = MeasuredCosts::checked_in().map_err(PlanError::Internal)?;
    let plan = plan(&workload, &azure, &costs);
    if args.json {
        render::json(&plan)
            .map(|json| json + "\n")
            .map_err(PlanError::Internal)
    } else {
        Ok(table(&plan))
    }
}

/// A usage error of `plan` on one line (clap adds a hint on further lines), exit status 2;
/// help and version are printed as usual.
pub fn exit_on_usage_error(error: clap::Error) -> ! {
    if !error.use_stderr() {
        error.exit();
    }
    let rendered = error.render().to_string();
    let line = rendered
        .lines()
        .next()
        .unwrap_or("error: invalid arguments");
    eprintln!("{line}");
    std::process::exit(2);
}

/// A number in `[min, max]`, finite.
fn number(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if !value.is_finite() {
        return Err(format!("`{text}` is not a finite number"));
    }
    if value < min || value > max {
        return Err(format!("must be between {min} and {max}"));
    }
    Ok(value)
}

/// A number above 0 and at most `max`: a figure the plan divides by.
fn above_zero(text: &str, max: f64) -> Result<f64, String> {
    let value = number(text, 0.0, max)?;
    if value == 0.0 {
        return Err("must be above 0".to_owned());
    }
    Ok(value)
}

fn whole(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let value = number(text, min, max)?;
    if value.fract() != 0.0 {
        return Err("must be a whole number".to_owned());
    }
    Ok(value)
}

/// The parser of a flag that takes a number in `[min, max]`: the bounds stand at the flag.
fn number_in(min: f64, max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text| number(text, min, max)
}

/// The parser of a flag that takes a whole number in `[min, max]`.
fn whole_in(min: f64, max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text| whole(text, min, max)
}

/// The parser of a flag that takes a number above 0 and at most `max`.
fn above_zero_to(max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |text| above_zero(text, max)
}

fn instance_memory_mb(text: &str) -> Result<f64, String> {
    match text.trim() {
        "512" | "2048" | "4096" => number(text, 512.0, 4096.0),
        _ => Err("must be 512, 2048 or 4096".to_owned()),
    }
}

fn price(text: &str) -> Result<f64, String> {
    number(text, 0.0, 1e6)
}

fn prices_file(text: &str) -> Result<Value, String> {
    let path = PathBuf::from(text);
    let content = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {text}: {e}"))?;
    let value: Value =
        serde_json::from_str(&content).map_err(|e| format!("{text} is not JSON: {e}"))?;
    // Checked here too, so that a wrong file is refused as the flag's value.
    Azure::with_overrides(&value).map_err(|e| format!("{text}: {e}"))?;
    Ok(value)
}
