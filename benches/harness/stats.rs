//! Latency samples and their percentiles (nearest rank: the value below which p% of the
//! samples fall; with few samples the high percentiles are simply the maximum).

use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub struct Latencies {
    samples: Vec<Duration>,
    sorted: bool,
}

impl Latencies {
    pub fn push(&mut self, sample: Duration) {
        self.samples.push(sample);
        self.sorted = false;
    }

    pub fn extend(&mut self, other: Latencies) {
        self.samples.extend(other.samples);
        self.sorted = false;
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// `p` in 0..=100; zero when there are no samples.
    pub fn percentile(&mut self, p: f64) -> Duration {
        if self.samples.is_empty() {
            return Duration::ZERO;
        }
        if !self.sorted {
            self.samples.sort_unstable();
            self.sorted = true;
        }
        let rank = ((p / 100.0) * self.samples.len() as f64).ceil() as usize;
        self.samples[rank.clamp(1, self.samples.len()) - 1]
    }
}

impl FromIterator<Duration> for Latencies {
    fn from_iter<I: IntoIterator<Item = Duration>>(iter: I) -> Self {
        Self {
            samples: iter.into_iter().collect(),
            sorted: false,
        }
    }
}

/// Milliseconds with a fractional part, for reports.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// CPU time (user + system) this process has used so far, from `/proc/self/stat`; `None`
/// where there is no such file. Clock ticks are taken as the usual 100 per second.
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces), from field 3 on.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}
