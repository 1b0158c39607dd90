//! The publisher: scheduled posts go out at their time with no request. Standalone it is a
//! task of the server that looks at the schedule every step (`BLOG_PUBLISH_STEP_MS`); under
//! the Functions host it is the `PublishScheduled` timer function, every minute. Each pass
//! reads the schedule (one query of one partition of `feed`, per blog) and publishes what is
//! due (`Blog::publish_due`); running twice, or on several instances at once, publishes each
//! post once. The change feed then copies the post into the lists and takes it out of the
//! schedule.

use std::sync::Arc;
use std::time::Duration;

use super::task::BackgroundTask;
use crate::blog::{Blog, Published};
use crate::copies::scheduled_tenants;
use crate::domain::Timestamp;
use crate::error::Result;
use crate::store::tenant::TenantStore;
use crate::store::{Store, Tenancy};

/// The timer function's name.
pub const FUNCTION_NAME: &str = "PublishScheduled";
/// Every minute, on the minute (NCRONTAB with seconds): a post is out within a minute.
pub const TIMER_SCHEDULE: &str = "0 * * * * *";
/// The standalone task's step by default: a post is out within this after its time.
pub const DEFAULT_STEP_MS: u64 = 20_000;

/// Where scheduled posts are published from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    /// Nowhere (`BLOG_PUBLISH_STEP_MS=0`): scheduled posts wait.
    Off,
    /// A task of this server, every step.
    InProcess(Duration),
    /// The Functions host's timer.
    OnTimer,
}

/// One pass over every blog of `store`: in a `multi` store, every tenant the directory names.
pub async fn publish_due(store: &Arc<dyn Store>) -> Result<Published> {
    let now = Timestamp::now();
    match store.tenancy() {
        Tenancy::Single => Blog::new(Arc::clone(store)).publish_due(now).await,
        Tenancy::Multi => {
            let mut total = Published::default();
            for tenant in scheduled_tenants(&**store).await? {
                let view: Arc<dyn Store> = Arc::new(TenantStore::new(Arc::clone(store), tenant));
                let done = Blog::new(view).publish_due(now).await?;
                total.published += done.published;
                total.already_done += done.already_done;
            }
            Ok(total)
        }
    }
}

/// The log line of a pass.
pub fn log_line(done: &Published) -> String {
    format!(
        "{FUNCTION_NAME}: {} published, {} done already",
        done.published, done.already_done
    )
}

/// Starts the publisher in this server. A post half published when it is stopped is
/// published by the next pass.
pub fn start(store: Arc<dyn Store>, step: Duration) -> BackgroundTask {
    BackgroundTask::spawn(run_forever(store, step))
}

async fn run_forever(store: Arc<dyn Store>, step: Duration) {
    loop {
        match publish_due(&store).await {
            Ok(done) if done.published > 0 => tracing::info!("{}", log_line(&done)),
            Ok(_) => {}
            // The next pass tries again: nothing is lost while the store is away.
            Err(e) => tracing::warn!(error = %e, "publishing scheduled posts failed"),
        }
        tokio::time::sleep(step).await;
    }
}
