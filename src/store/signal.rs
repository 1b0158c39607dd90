//! The word that a container may have new changes, from this process's own writes: what lets
//! the change-feed pump of this process sleep until there is work instead of polling. Writes
//! by other processes (another instance on the same Cosmos DB account, a second server on the
//! same embedded file) send no word: the pump still sees them, at its next poll.

use std::time::Duration;

use tokio::sync::Notify;

use super::Container;

/// One waker per container. A word sent while nobody waits is kept for the next wait (one
/// word at most), so a write between two reads of the change log is never missed.
#[derive(Default)]
pub struct ChangeSignal {
    containers: [Notify; Container::ALL.len()],
}

impl ChangeSignal {
    /// Says that `container` may have new changes (after a write committed).
    pub fn notify(&self, container: Container) {
        self.containers[container.index()].notify_one();
    }

    /// Resolves at the next word about `container` (or one sent since the last wait), or after
    /// `timeout`.
    pub async fn wait(&self, container: Container, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.containers[container.index()].notified()).await;
    }
}
