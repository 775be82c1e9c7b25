//! A reading reused for a while because taking it is expensive (the energy counter).

use std::time::{Duration, Instant};

/// Holds the last successful reading and reuses it until it is `max_age` old.
#[derive(Debug)]
pub struct Reused<T> {
    max_age: Duration,
    last: Option<(Instant, T)>,
}

impl<T: Copy> Reused<T> {
    /// Nothing read yet; readings are reused for `max_age`.
    pub const fn new(max_age: Duration) -> Self {
        Self {
            max_age,
            last: None,
        }
    }

    /// The last reading if younger than `max_age` at `now`, else a fresh one from
    /// `read`. Errors are returned and never kept, so the next call reads again.
    pub fn get<E>(&mut self, now: Instant, read: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        if let Some((at, value)) = self.last {
            if now.saturating_duration_since(at) < self.max_age {
                return Ok(value);
            }
        }
        let value = read()?;
        self.last = Some((now, value));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_within_max_age_and_reads_again_after() {
        let mut reused = Reused::new(Duration::from_secs(5));
        let t0 = Instant::now();
        let mut reads = 0;
        let mut read = |v: f64| {
            reads += 1;
            Ok::<_, ()>(v)
        };
        assert_eq!(reused.get(t0, || read(1.0)), Ok(1.0));
        assert_eq!(
            reused.get(t0 + Duration::from_secs(4), || read(2.0)),
            Ok(1.0)
        );
        assert_eq!(
            reused.get(t0 + Duration::from_secs(5), || read(3.0)),
            Ok(3.0)
        );
        assert_eq!(reads, 2);
    }

    #[test]
    fn an_error_is_not_kept() {
        let mut reused: Reused<f64> = Reused::new(Duration::from_secs(5));
        let t0 = Instant::now();
        assert_eq!(reused.get(t0, || Err("lost")), Err("lost"));
        assert_eq!(reused.get(t0, || Ok::<_, &str>(7.0)), Ok(7.0));
        assert_eq!(reused.get(t0, || Err("lost")), Ok(7.0));
    }
}
