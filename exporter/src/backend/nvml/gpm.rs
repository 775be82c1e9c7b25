//! GPM (Hopper and newer): metrics are the difference of two samples, so each
//! device keeps its previous sample and every read takes a new one.

use super::convert::{mib_per_second_to_bytes, percent_to_ratio};
use super::error::read_error;
use crate::backend::{GpmMetrics, ReadError, Reading};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::gpm::gpm_metrics_get;
use nvml_wrapper::{GpmSample, Nvml};
use std::collections::HashMap;
use std::sync::Mutex;

/// The metrics asked for on every read, one per [`GpmMetrics`] field.
pub const REQUESTED: [GpmMetricId; 16] = [
    GpmMetricId::SmUtil,
    GpmMetricId::SmOccupancy,
    GpmMetricId::GraphicsUtil,
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

/// Computes the metrics between two samples. Metrics the device does not offer
/// stay `None`; if it offers none of them the read is `NotSupported`.
fn metrics_between(
    nvml: &'static Nvml,
    older: &GpmSample<'static>,
    newer: &GpmSample<'static>,
) -> Reading<GpmMetrics> {
    let results = gpm_metrics_get(nvml, older, newer, &REQUESTED).map_err(read_error)?;
    let mut metrics = GpmMetrics::default();
    for result in results.into_iter().flatten() {
        apply(&mut metrics, result.metric_id, result.value);
    }
    if metrics == GpmMetrics::default() {
        return Err(ReadError::NotSupported);
    }
    Ok(metrics)
}

/// The previous sample of one device (or of its MIG instances), behind a lock
/// because a sample is not `Sync`.
pub struct GpmState {
    nvml: &'static Nvml,
    previous: Mutex<HashMap<Option<u32>, GpmSample<'static>>>,
}

impl GpmState {
    /// No samples yet.
    pub fn new(nvml: &'static Nvml) -> Self {
        Self {
            nvml,
            previous: Mutex::new(HashMap::new()),
        }
    }

    /// Stores `sample` as the newest for `key` (`None`: the whole GPU; `Some(gi)`:
    /// one MIG GPU instance) and returns the metrics since the one before it, or
    /// `Pending` when this is the first.
    pub fn advance(&self, key: Option<u32>, sample: GpmSample<'static>) -> Reading<GpmMetrics> {
        let mut previous = self
            .previous
            .lock()
            .map_err(|_| ReadError::Failed("GPM state lock poisoned".into()))?;
        let result = match previous.get(&key) {
            Some(older) => metrics_between(self.nvml, older, &sample),
            None => Err(ReadError::Pending),
        };
        previous.insert(key, sample);
        result
    }

    /// Forgets MIG instances that no longer exist, so their samples are freed.
    pub fn retain_instances(&self, live: &[u32]) {
        if let Ok(mut previous) = self.previous.lock() {
            previous.retain(|key, _| key.is_none_or(|gi| live.contains(&gi)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_requested_metric_fills_a_distinct_field() {
        let mut filled = Vec::new();
        for (i, id) in REQUESTED.iter().enumerate() {
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
