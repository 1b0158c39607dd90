//! How the code waits before trying again: one policy, jittered exponential backoff
//! (`backon`), configured per use with its bounds.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// Jittered exponential backoff from `min` doubling up to `max` between attempts; forever
/// unless bounded by [`Backoff::at_most`] retries or [`Backoff::within`] a total wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    times: Option<usize>,
    total: Option<Duration>,
}

impl Backoff {
    /// Retries without end: for work that must never be skipped.
    pub const fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max,
            times: None,
            total: None,
        }
    }

    /// At most `times` retries.
    pub const fn at_most(self, times: usize) -> Self {
        Self {
            times: Some(times),
            ..self
        }
    }

    /// Waits of at most `total` in all.
    pub const fn within(self, total: Duration) -> Self {
        Self {
            total: Some(total),
            ..self
        }
    }

    /// The policy, for `backon::Retryable::retry`.
    pub fn builder(&self) -> ExponentialBuilder {
        let builder = ExponentialBuilder::default()
            .with_min_delay(self.min)
            .with_max_delay(self.max)
            .with_total_delay(self.total)
            .with_jitter();
        match self.times {
            Some(times) => builder.with_max_times(times),
            None => builder.without_max_times(),
        }
    }

    /// The waits, one per retry, for a loop that retries by hand.
    pub fn delays(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        self.builder().build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_hold() {
        let ms = Duration::from_millis;
        let bounded: Vec<Duration> = Backoff::new(ms(2), ms(100)).at_most(10).delays().collect();
        assert_eq!(bounded.len(), 10);
        // Jitter adds up to one more delay on top of the exponential one.
        assert!(
            bounded.iter().all(|d| *d >= ms(2) && *d <= ms(200)),
            "{bounded:?}"
        );
        assert_eq!(Backoff::new(ms(1), ms(1)).delays().take(1000).count(), 1000);
    }
}
