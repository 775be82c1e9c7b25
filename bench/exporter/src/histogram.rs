//! Latency histogram in microseconds with log-linear buckets: exact below 128 µs,
//! then 64 buckets per power of two (under 1.6% error), in constant memory however
//! long the run.

/// Values below this are stored exactly.
const LINEAR: u64 = 128;
/// Sub-buckets per power of two above `LINEAR`.
const SUB: u64 = 64;
/// Powers of two covered above `LINEAR` (up to 2^63 µs).
const OCTAVES: u64 = 57;

/// Counts of latencies.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
    sum: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; (LINEAR + OCTAVES * SUB) as usize],
            total: 0,
            max: 0,
            sum: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let exp = 63 - u64::from(v.leading_zeros()); // >= 7
    let shift = exp - 6;
    let mantissa = (v >> shift) - SUB; // 0..64
    (LINEAR + (exp - 7) * SUB + mantissa) as usize
}

/// The largest value that falls in bucket `i`.
fn upper_bound(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR {
        return i;
    }
    let exp = (i - LINEAR) / SUB + 7;
    let mantissa = (i - LINEAR) % SUB + SUB;
    let shift = exp - 6;
    let edge = (u128::from(mantissa) + 1) << shift;
    u64::try_from(edge - 1).unwrap_or(u64::MAX)
}

impl Histogram {
    /// Adds one latency.
    pub fn record(&mut self, micros: u64) {
        self.counts[bucket(micros)] += 1;
        self.total += 1;
        self.max = self.max.max(micros);
        self.sum += u128::from(micros);
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Largest latency, exact.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean latency.
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.sum as f64 / self.total as f64
    }

    /// The latency at quantile `q` (0–1): the upper edge of its bucket, never above
    /// the maximum. Zero when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper_bound(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_bounded() {
        let mut previous = None;
        for v in (0..5000).chain([1 << 20, (1 << 20) + 12345, u64::MAX / 4, u64::MAX]) {
            let b = bucket(v);
            assert!(v <= upper_bound(b), "{v} above its bucket's bound");
            if b > 0 {
                assert!(v > upper_bound(b - 1), "{v} belongs to an earlier bucket");
            }
            if let Some(p) = previous {
                assert!(b >= p);
            }
            previous = Some(b);
        }
    }

    #[test]
    fn quantiles_match_sorted_values_within_two_percent() {
        let mut h = Histogram::default();
        // A deterministic spread from 50 µs to about 50 ms.
        let mut values: Vec<u64> = (0..10_000u64)
            .map(|i| 50 + (i * i * 7919) % 50_000)
            .collect();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let exact = values[((q * values.len() as f64).ceil() as usize) - 1] as f64;
            let got = h.quantile(q) as f64;
            assert!((got - exact).abs() / exact < 0.02, "q{q}: {got} vs {exact}");
        }
        assert_eq!(h.quantile(1.0), *values.last().unwrap());
        assert_eq!(h.max(), *values.last().unwrap());
    }

    #[test]
    fn merge_adds_counts_and_empty_is_zero() {
        let mut a = Histogram::default();
        assert_eq!(a.quantile(0.99), 0);
        assert_eq!(a.mean(), 0.0);
        let mut b = Histogram::default();
        a.record(10);
        b.record(30);
        b.record(1000);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.quantile(0.5), 30);
        assert_eq!(a.max(), 1000);
        assert!((a.mean() - 346.666).abs() < 0.01);
    }
}
