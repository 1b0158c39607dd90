//! A loop that runs beside the server on a task of its own, until the server stops it.

use std::future::Future;

use tokio::task::JoinHandle;

/// A loop running on its own task; dropping it does not stop it, [`BackgroundTask::stop`]
/// does.
pub struct BackgroundTask {
    task: JoinHandle<()>,
}

impl BackgroundTask {
    pub(super) fn spawn(work: impl Future<Output = ()> + Send + 'static) -> Self {
        Self {
            task: tokio::spawn(work),
        }
    }

    /// Stops the loop at its next await point; what it was in the middle of is its next
    /// run's to finish.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}
