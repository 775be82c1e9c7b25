//! Video encoder and decoder engines.
//!
//! Metrics:
//! - `poolprof_gpu_encoder_utilization_ratio{gpu,uuid}`
//! - `poolprof_gpu_decoder_utilization_ratio{gpu,uuid}`

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "codec";

/// Reads the encoder and decoder busy ratios.
#[derive(Debug, Default)]
pub struct CodecCollector {
    readings: Readings,
}

impl Collector for CodecCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            if let Some(r) =
                self.readings
                    .take(gpu, "encoder_utilization", gpu.device.encoder_utilization())
            {
                out.gauge(
                    "poolprof_gpu_encoder_utilization_ratio",
                    "Fraction of time the video encoder was busy.",
                    &gpu.labels(),
                    r,
                );
            }
            if let Some(r) =
                self.readings
                    .take(gpu, "decoder_utilization", gpu.device.decoder_utilization())
            {
                out.gauge(
                    "poolprof_gpu_decoder_utilization_ratio",
                    "Fraction of time the video decoder was busy.",
                    &gpu.labels(),
                    r,
                );
            }
        }
        self.readings.finish(NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::{run, value, TestDevice};

    #[test]
    fn publishes_encoder_and_decoder() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut CodecCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(
            value(&set, "poolprof_gpu_encoder_utilization_ratio", &[]),
            Some(0.0)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_decoder_utilization_ratio", &[]),
            Some(0.125)
        );
    }
}
