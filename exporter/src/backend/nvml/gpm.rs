//! GPM (Hopper and newer): metrics are the difference of two samples, so each
//! device keeps its previous sample and every read takes a new one.
//!
//! One metric is computed less often. On an H100 (driver 580) `nvmlGpmMetricsGet`
//! spends 1.5 ms of CPU on the graphics-engine activity alone and 6 µs on each other
//! metric (`docs/validation/exporter-cost.sh`), so graphics-engine activity is
//! averaged over windows of [`SLOW_WINDOW`] instead of every interval.

use super::convert::{mib_per_second_to_bytes, percent_to_ratio};
use super::error::read_error;
use crate::backend::{GpmMetrics, ReadError, Reading};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::gpm::gpm_metrics_get;
use nvml_wrapper::{GpmSample, Nvml};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The metrics computed on every read.
pub const EVERY_READ: [GpmMetricId; 15] = [
    GpmMetricId::SmUtil,
    GpmMetricId::SmOccupancy,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::HmmaTensorUtil,
    GpmMetricId::ImmaTensorUtil,
    GpmMetricId::DfmaTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::Fp64Util,
    GpmMetricId::Fp32Util,
    GpmMetricId::Fp16Util,
    GpmMetricId::IntegerUtil,
    GpmMetricId::PcieTxPerSec,
    GpmMetricId::PcieRxPerSec,
    GpmMetricId::NvlinkTotalTxPerSec,
    GpmMetricId::NvlinkTotalRxPerSec,
];

/// The metrics computed once per [`SLOW_WINDOW`], over that window.
pub const SLOW: [GpmMetricId; 1] = [GpmMetricId::GraphicsUtil];

/// How long a window the [`SLOW`] metrics average over (0.05 ms of CPU per second at
/// 30 s, against 0.15 at 10 s).
pub const SLOW_WINDOW: Duration = Duration::from_secs(30);

/// Stores one GPM value in its field, in base units. Metrics we do not publish
/// are ignored; a value that makes no sense (NaN, negative rate) leaves the field
/// empty.
pub fn apply(metrics: &mut GpmMetrics, id: GpmMetricId, value: f64) {
    let (slot, converted) = match id {
        GpmMetricId::SmUtil => (&mut metrics.sm_active, percent_to_ratio(value)),
        GpmMetricId::SmOccupancy => (&mut metrics.sm_occupancy, percent_to_ratio(value)),
        GpmMetricId::GraphicsUtil => (&mut metrics.graphics_engine_active, percent_to_ratio(value)),
        GpmMetricId::AnyTensorUtil => (&mut metrics.tensor_any, percent_to_ratio(value)),
        GpmMetricId::HmmaTensorUtil => (&mut metrics.tensor_hmma, percent_to_ratio(value)),
        GpmMetricId::ImmaTensorUtil => (&mut metrics.tensor_imma, percent_to_ratio(value)),
        GpmMetricId::DfmaTensorUtil => (&mut metrics.tensor_dfma, percent_to_ratio(value)),
        GpmMetricId::DramBwUtil => (&mut metrics.dram_active, percent_to_ratio(value)),
        GpmMetricId::Fp64Util => (&mut metrics.pipe_fp64, percent_to_ratio(value)),
        GpmMetricId::Fp32Util => (&mut metrics.pipe_fp32, percent_to_ratio(value)),
        GpmMetricId::Fp16Util => (&mut metrics.pipe_fp16, percent_to_ratio(value)),
        GpmMetricId::IntegerUtil => (&mut metrics.pipe_integer, percent_to_ratio(value)),
        GpmMetricId::PcieTxPerSec => (
            &mut metrics.pcie_tx_bytes_per_second,
            mib_per_second_to_bytes(value),
        ),
        GpmMetricId::PcieRxPerSec => (
            &mut metrics.pcie_rx_bytes_per_second,
            mib_per_second_to_bytes(value),
        ),
        GpmMetricId::NvlinkTotalTxPerSec => (
            &mut metrics.nvlink_tx_bytes_per_second,
            mib_per_second_to_bytes(value),
        ),
        GpmMetricId::NvlinkTotalRxPerSec => (
            &mut metrics.nvlink_rx_bytes_per_second,
            mib_per_second_to_bytes(value),
        ),
        _ => return,
    };
    *slot = converted;
}

/// Computes `ids` between two samples into `metrics`. Metrics the device does not
/// offer stay `None`.
fn compute_into(
    nvml: &'static Nvml,
    older: &GpmSample<'static>,
    newer: &GpmSample<'static>,
    ids: &[GpmMetricId],
    metrics: &mut GpmMetrics,
) -> Result<(), ReadError> {
    let results = gpm_metrics_get(nvml, older, newer, ids).map_err(read_error)?;
    for result in results.into_iter().flatten() {
        apply(metrics, result.metric_id, result.value);
    }
    Ok(())
}

/// A sample (`S`: an NVML GPM sample; tests use plain numbers) and when it was taken.
struct Taken<S> {
    at: Instant,
    sample: S,
}

/// What one device (or MIG instance) remembers between reads.
struct History<S> {
    /// The newest sample, the start of the next read's interval.
    previous: Taken<S>,
    /// Where the current [`SLOW`] window starts; `None` before the first window.
    slow_start: Option<Taken<S>>,
    /// The [`SLOW`] metrics of the last window.
    slow: GpmMetrics,
}

impl<S> History<S> {
    fn new(first: Taken<S>) -> Self {
        Self {
            previous: first,
            slow_start: None,
            slow: GpmMetrics::default(),
        }
    }

    /// Makes `newer` the previous sample and returns the metrics since the one before
    /// it. `compute(older, newer, ids, into)` asks the driver. The [`SLOW`] metrics are
    /// those of the last window: the first read computes them over its own interval,
    /// later ones over about [`SLOW_WINDOW`]; windows overlap by one interval, so no
    /// sample is kept beyond the two a read needs and the window's start.
    fn advance(
        &mut self,
        newer: Taken<S>,
        mut compute: impl FnMut(&S, &S, &[GpmMetricId], &mut GpmMetrics) -> Result<(), ReadError>,
    ) -> Reading<GpmMetrics> {
        let older = std::mem::replace(&mut self.previous, newer);
        let newer = &self.previous;
        let mut metrics = GpmMetrics::default();
        compute(&older.sample, &newer.sample, &EVERY_READ, &mut metrics)?;
        let due = self
            .slow_start
            .as_ref()
            .is_none_or(|start| newer.at.saturating_duration_since(start.at) >= SLOW_WINDOW);
        if due {
            let start = self.slow_start.as_ref().unwrap_or(&older);
            let mut slow = GpmMetrics::default();
            if compute(&start.sample, &newer.sample, &SLOW, &mut slow).is_ok() {
                self.slow = slow;
                self.slow_start = Some(older);
            }
        }
        metrics.graphics_engine_active = self.slow.graphics_engine_active;
        if metrics == GpmMetrics::default() {
            return Err(ReadError::NotSupported);
        }
        Ok(metrics)
    }
}

/// The previous samples of one device (or of its MIG instances), behind a lock
/// because a sample is not `Sync`.
pub struct GpmState {
    nvml: &'static Nvml,
    history: Mutex<HashMap<Option<u32>, History<GpmSample<'static>>>>,
}

impl GpmState {
    /// No samples yet.
    pub fn new(nvml: &'static Nvml) -> Self {
        Self {
            nvml,
            history: Mutex::new(HashMap::new()),
        }
    }

    /// Stores `sample` as the newest for `key` (`None`: the whole GPU; `Some(gi)`:
    /// one MIG GPU instance) and returns the metrics since the one before it, or
    /// `Pending` when this is the first.
    pub fn advance(&self, key: Option<u32>, sample: GpmSample<'static>) -> Reading<GpmMetrics> {
        let mut history = self
            .history
            .lock()
            .map_err(|_| ReadError::Failed("GPM state lock poisoned".into()))?;
        let newer = Taken {
            at: Instant::now(),
            sample,
        };
        match history.get_mut(&key) {
            Some(entry) => entry.advance(newer, |older, newer, ids, into| {
                compute_into(self.nvml, older, newer, ids, into)
            }),
            None => {
                history.insert(key, History::new(newer));
                Err(ReadError::Pending)
            }
        }
    }

    /// Forgets MIG instances that no longer exist, so their samples are freed.
    pub fn retain_instances(&self, live: &[u32]) {
        if let Ok(mut history) = self.history.lock() {
            history.retain(|key, _| key.is_none_or(|gi| live.contains(&gi)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake driver: every metric asked for is `end - start` (sample numbers are
    /// seconds), and each call is recorded as (start, end, asked for the slow set).
    fn fake(
        calls: &mut Vec<(u64, u64, bool)>,
        fail_slow: bool,
    ) -> impl FnMut(&u64, &u64, &[GpmMetricId], &mut GpmMetrics) -> Result<(), ReadError> + '_ {
        move |start, end, ids, into| {
            let slow = ids == SLOW.as_slice();
            calls.push((*start, *end, slow));
            if slow && fail_slow {
                return Err(ReadError::Failed("no".into()));
            }
            for id in ids {
                apply(into, *id, (*end - *start) as f64);
            }
            Ok(())
        }
    }

    fn at(t0: Instant, s: u64) -> Taken<u64> {
        Taken {
            at: t0 + Duration::from_secs(s),
            sample: s,
        }
    }

    #[test]
    fn graphics_activity_is_computed_once_per_window_and_the_rest_every_read() {
        let t0 = Instant::now();
        let mut history = History::new(at(t0, 0));
        let mut calls = Vec::new();
        let mut graphics = Vec::new();
        for s in 1..=62 {
            let m = history.advance(at(t0, s), fake(&mut calls, false)).unwrap();
            assert_eq!(
                m.sm_active,
                Some(0.01),
                "every-read metrics span one interval"
            );
            graphics.push(m.graphics_engine_active);
        }
        let slow: Vec<(u64, u64)> = calls.iter().filter(|c| c.2).map(|c| (c.0, c.1)).collect();
        // First over its own interval, then windows of 30 s starting one interval
        // before the previous window's end.
        assert_eq!(slow, vec![(0, 1), (0, 30), (29, 59)]);
        assert_eq!(calls.iter().filter(|c| !c.2).count(), 62);
        assert_eq!(graphics[0], Some(0.01));
        assert_eq!(graphics[28], Some(0.01), "kept until the window ends");
        assert_eq!(graphics[29], Some(0.30));
        assert_eq!(graphics[58], Some(0.30));
        assert_eq!(graphics[61], Some(0.30));
    }

    #[test]
    fn a_failed_slow_computation_is_retried_next_read_and_never_fails_the_rest() {
        let t0 = Instant::now();
        let mut history = History::new(at(t0, 0));
        let mut calls = Vec::new();
        let m = history.advance(at(t0, 1), fake(&mut calls, true)).unwrap();
        assert_eq!(m.graphics_engine_active, None);
        assert_eq!(m.dram_active, Some(0.01));
        history.advance(at(t0, 2), fake(&mut calls, true)).unwrap();
        let slow = calls.iter().filter(|c| c.2).count();
        assert_eq!(slow, 2, "retried on the next read");
    }

    #[test]
    fn a_device_without_any_metric_is_not_supported() {
        let t0 = Instant::now();
        let mut history = History::new(at(t0, 0));
        let nothing = |_: &u64, _: &u64, _: &[GpmMetricId], _: &mut GpmMetrics| Ok(());
        assert_eq!(
            history.advance(at(t0, 1), nothing),
            Err(ReadError::NotSupported)
        );
    }

    #[test]
    fn every_requested_metric_fills_a_distinct_field() {
        let mut filled = Vec::new();
        for (i, id) in EVERY_READ.iter().chain(&SLOW).enumerate() {
            let mut m = GpmMetrics::default();
            apply(&mut m, *id, 10.0 + i as f64);
            assert_ne!(m, GpmMetrics::default(), "{id:?} filled nothing");
            assert!(
                !filled.contains(&m),
                "{id:?} filled the same field as another"
            );
            filled.push(m);
        }
    }

    #[test]
    fn utilisations_become_ratios_and_rates_bytes_per_second() {
        let mut m = GpmMetrics::default();
        apply(&mut m, GpmMetricId::AnyTensorUtil, 87.5);
        apply(&mut m, GpmMetricId::DramBwUtil, 12.0);
        apply(&mut m, GpmMetricId::SmUtil, 100.4);
        apply(&mut m, GpmMetricId::PcieTxPerSec, 2.0);
        apply(&mut m, GpmMetricId::NvlinkTotalRxPerSec, 0.5);
        assert_eq!(m.tensor_any, Some(0.875));
        assert_eq!(m.dram_active, Some(0.12));
        assert_eq!(m.sm_active, Some(1.0));
        assert_eq!(m.pcie_tx_bytes_per_second, Some(2.0 * 1048576.0));
        assert_eq!(m.nvlink_rx_bytes_per_second, Some(524288.0));
    }

    #[test]
    fn sm_util_is_sm_active_and_graphics_util_is_the_engine() {
        let mut m = GpmMetrics::default();
        apply(&mut m, GpmMetricId::SmUtil, 30.0);
        apply(&mut m, GpmMetricId::GraphicsUtil, 90.0);
        apply(&mut m, GpmMetricId::SmOccupancy, 20.0);
        assert_eq!(m.sm_active, Some(0.3));
        assert_eq!(m.graphics_engine_active, Some(0.9));
        assert_eq!(m.sm_occupancy, Some(0.2));
    }

    #[test]
    fn unpublished_metrics_and_nonsense_values_leave_fields_empty() {
        let mut m = GpmMetrics::default();
        apply(&mut m, GpmMetricId::Nvdec0Util, 50.0);
        apply(&mut m, GpmMetricId::PcieRxPerSec, -3.0);
        apply(&mut m, GpmMetricId::Fp32Util, f64::NAN);
        assert_eq!(m, GpmMetrics::default());
    }
}
