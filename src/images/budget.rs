//! The memory that decoding images may take, all uploads together. Each upload's cost (its
//! decoded pixels and the working copies of re-encoding them, read from its header before
//! anything is decoded) is reserved from one budget before it is decoded: an upload that would
//! take more than the whole budget is refused, and one that does not fit beside those under
//! way waits its turn, for a short while, then is told to come back later.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::check::ImageRefusal;

/// The budget is counted in KiB: a semaphore's permits are counted in `u32` per request.
const UNIT: u64 = 1024;

/// What an upload told to come back later is told to wait, in seconds (`Retry-After`).
const RETRY_AFTER_SECONDS: u64 = 5;

/// The budget of the images being decoded at once, shared by every upload of the process.
#[derive(Clone)]
pub struct DecodeBudget {
    units: Arc<Semaphore>,
    total_units: u32,
    wait: Duration,
}

impl DecodeBudget {
    /// A budget of `bytes` (at least 1 KiB), for which an upload waits at most `wait`.
    pub fn new(bytes: u64, wait: Duration) -> Self {
        let total_units = u32::try_from(bytes / UNIT).unwrap_or(u32::MAX).max(1);
        Self {
            units: Arc::new(Semaphore::new(total_units as usize)),
            total_units,
            wait,
        }
    }

    /// The whole budget, in bytes.
    pub fn bytes(&self) -> u64 {
        u64::from(self.total_units) * UNIT
    }

    /// The bytes of the budget no decode holds now.
    pub fn available_bytes(&self) -> u64 {
        self.units.available_permits() as u64 * UNIT
    }

    /// `cost` bytes of the budget, held until the [`Reservation`] is dropped: at once if they
    /// are free, else after those ahead have given theirs back; refused if the whole budget
    /// is smaller, and `Busy` if they are not free within the wait.
    pub(super) async fn reserve(
        &self,
        cost: u64,
        width: u32,
        height: u32,
    ) -> Result<Reservation, ImageRefusal> {
        let units = units_of(cost);
        if units > self.total_units {
            return Err(ImageRefusal::TooLargeToDecode {
                width,
                height,
                needed: cost,
                budget: self.bytes(),
            });
        }
        let permits = Arc::clone(&self.units).acquire_many_owned(units);
        match tokio::time::timeout(self.wait, permits).await {
            Ok(Ok(permit)) => Ok(Reservation(permit)),
            // Timed out, or the semaphore closed (it never is): either way, not now.
            Ok(Err(_)) | Err(_) => Err(ImageRefusal::Busy {
                retry_after_seconds: RETRY_AFTER_SECONDS,
            }),
        }
    }
}

/// The units of `bytes`, rounded up.
fn units_of(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX)
}

/// Bytes of the [`DecodeBudget`] held by one upload; given back when dropped.
pub struct Reservation(OwnedSemaphorePermit);

impl Reservation {
    /// Keeps `bytes` of the reservation (what is left once the pixels are gone: the encoded
    /// image until it is stored) and gives the rest back now.
    pub(super) fn shrink_to(mut self, bytes: u64) -> Self {
        let kept = (units_of(bytes) as usize).min(self.0.num_permits());
        match self.0.split(kept) {
            Some(kept) => Self(kept),
            None => self,
        }
    }

    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.0.num_permits() as u64 * UNIT
    }
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reservation({} bytes)", self.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_decode_waits_for_the_bytes_it_needs_and_gives_up_after_the_wait() {
        let budget = DecodeBudget::new(10 * UNIT, Duration::ZERO);
        let first = budget.reserve(6 * UNIT, 1, 1).await.unwrap();
        assert_eq!(budget.available_bytes(), 4 * UNIT);
        let refused = budget.reserve(6 * UNIT, 1, 1).await.unwrap_err();
        assert_eq!(refused.code(), "images-busy");
        let kept = first.shrink_to(UNIT + 1);
        assert_eq!(kept.bytes(), 2 * UNIT);
        let second = budget.reserve(6 * UNIT, 1, 1).await.unwrap();
        drop((kept, second));
        assert_eq!(budget.available_bytes(), 10 * UNIT);
        let too_large = budget.reserve(10 * UNIT + 1, 3, 4).await.unwrap_err();
        assert_eq!(too_large.code(), "image-too-large-to-decode");
    }
}
