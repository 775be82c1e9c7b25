//! `--web.max-requests`: a bound on concurrent requests; the request beyond it is
//! answered 503 at once instead of queueing behind slow ones.

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Hands out request slots, or none when all are taken.
#[derive(Debug, Clone)]
pub struct RequestLimit {
    slots: Option<Arc<Semaphore>>,
}

/// A taken slot; the slot is free again when this is dropped.
#[derive(Debug)]
pub struct RequestSlot {
    _permit: Option<OwnedSemaphorePermit>,
}

impl RequestLimit {
    /// At most `max` requests at once; 0 means no limit.
    pub fn new(max: usize) -> Self {
        let slots = (max > 0).then(|| Arc::new(Semaphore::new(max.min(Semaphore::MAX_PERMITS))));
        Self { slots }
    }

    /// A slot, or `None` when `max` requests are already being served.
    pub fn try_acquire(&self) -> Option<RequestSlot> {
        match &self.slots {
            None => Some(RequestSlot { _permit: None }),
            Some(slots) => slots
                .clone()
                .try_acquire_owned()
                .ok()
                .map(|permit| RequestSlot {
                    _permit: Some(permit),
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_beyond_the_limit_and_frees_on_drop() {
        let limit = RequestLimit::new(2);
        let a = limit.try_acquire().expect("first slot");
        let _b = limit.try_acquire().expect("second slot");
        assert!(
            limit.try_acquire().is_none(),
            "third request must be refused"
        );
        drop(a);
        assert!(limit.try_acquire().is_some(), "a freed slot is reusable");
    }

    #[test]
    fn zero_means_unlimited() {
        let limit = RequestLimit::new(0);
        let held: Vec<_> = (0..1000).map(|_| limit.try_acquire()).collect();
        assert!(held.iter().all(Option::is_some));
    }
}
