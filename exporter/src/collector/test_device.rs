//! A scriptable [`Device`] and [`Backend`] for collector and runner tests: every
//! field is a [`Reading`] the test can change between collections.

use super::Gpu;
use crate::backend::*;
use std::sync::{Arc, Mutex};

/// What each method of [`TestDevice`] answers.
#[derive(Clone)]
pub struct Fields {
    pub identity: Reading<Identity>,
    pub utilization: Reading<Utilization>,
    pub memory: Reading<Memory>,
    pub power_usage: Reading<f64>,
    pub power_limit: Reading<f64>,
    pub energy: Reading<f64>,
    pub temperatures: Reading<Vec<Temperature>>,
    pub clocks: Reading<Vec<ClockReading>>,
    pub pcie_throughput: Reading<PcieThroughput>,
    pub pcie_replays: Reading<u64>,
    pub pcie_link: Reading<PcieLink>,
    pub clock_events: Reading<ClockEventReasons>,
    pub ecc: Reading<EccErrors>,
    pub remapped_rows: Reading<RemappedRows>,
    pub nvlinks: Reading<Vec<NvLink>>,
    pub encoder: Reading<f64>,
    pub decoder: Reading<f64>,
    pub processes: Reading<Vec<ProcessUsage>>,
    pub gpm: Reading<GpmMetrics>,
    pub mig: Reading<Vec<MigInstance>>,
}

/// A GPU whose answers are [`Fields`].
pub struct TestDevice(pub Mutex<Fields>);

impl TestDevice {
    /// A healthy H100-like GPU with index `index`, every field supported.
    pub fn healthy(index: u32) -> Arc<Self> {
        Arc::new(Self(Mutex::new(Fields::healthy(index))))
    }

    /// Changes what the device answers from now on.
    pub fn set(&self, change: impl FnOnce(&mut Fields)) {
        change(&mut self.0.lock().unwrap());
    }

    /// The device wrapped as a [`Gpu`] with its identity's labels.
    pub fn gpu(self: &Arc<Self>) -> Gpu {
        let id = self.identity().unwrap();
        Gpu {
            index: id.index.to_string(),
            uuid: id.uuid,
            device: self.clone(),
        }
    }

    fn get<T>(&self, pick: impl FnOnce(&Fields) -> &Reading<T>) -> Reading<T>
    where
        T: Clone,
    {
        pick(&self.0.lock().unwrap()).clone()
    }
}

fn gpm(v: f64) -> GpmMetrics {
    GpmMetrics {
        sm_active: Some(v),
        sm_occupancy: Some(v / 2.0),
        graphics_engine_active: Some(v),
        tensor_any: Some(v / 3.0),
        tensor_hmma: Some(v / 4.0),
        tensor_imma: Some(0.0),
        tensor_dfma: Some(0.0),
        dram_active: Some(v / 5.0),
        pipe_fp64: Some(0.01),
        pipe_fp32: Some(0.2),
        pipe_fp16: Some(0.1),
        pipe_integer: Some(0.05),
        pcie_tx_bytes_per_second: Some(1e9),
        pcie_rx_bytes_per_second: Some(2e9),
        nvlink_tx_bytes_per_second: Some(3e9),
        nvlink_rx_bytes_per_second: Some(4e9),
    }
}

impl Fields {
    /// Plausible readings of a busy H100.
    pub fn healthy(index: u32) -> Self {
        let gib = 1u64 << 30;
        Self {
            identity: Ok(Identity {
                index,
                uuid: format!("GPU-test-{index}"),
                name: "NVIDIA H100 80GB HBM3".into(),
                pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + index),
            }),
            utilization: Ok(Utilization {
                gpu: 0.75,
                memory: 0.4,
            }),
            memory: Ok(Memory {
                total_bytes: 80 * gib,
                used_bytes: 30 * gib,
                free_bytes: 49 * gib,
                reserved_bytes: Some(gib),
            }),
            power_usage: Ok(350.5),
            power_limit: Ok(700.0),
            energy: Ok(1.5e6),
            temperatures: Ok(vec![
                Temperature {
                    sensor: "gpu",
                    celsius: 55.0,
                },
                Temperature {
                    sensor: "memory",
                    celsius: 60.0,
                },
            ]),
            clocks: Ok(vec![
                ClockReading {
                    clock: "sm",
                    hz: 1.98e9,
                },
                ClockReading {
                    clock: "memory",
                    hz: 2.619e9,
                },
            ]),
            pcie_throughput: Ok(PcieThroughput {
                tx_bytes_per_second: 1e8,
                rx_bytes_per_second: 2e8,
            }),
            pcie_replays: Ok(3),
            pcie_link: Ok(PcieLink {
                generation: 5,
                width: 16,
            }),
            clock_events: Ok(ClockEventReasons(0x4 | 0x20)),
            ecc: Ok(EccErrors {
                corrected_total: 7,
                uncorrected_total: 1,
            }),
            remapped_rows: Ok(RemappedRows {
                correctable: 2,
                uncorrectable: 0,
                pending: true,
                failed: false,
            }),
            nvlinks: Ok(vec![
                NvLink {
                    link: 0,
                    active: true,
                    tx_bytes: Some(100),
                    rx_bytes: Some(200),
                },
                NvLink {
                    link: 1,
                    active: false,
                    tx_bytes: None,
                    rx_bytes: None,
                },
            ]),
            encoder: Ok(0.0),
            decoder: Ok(0.125),
            processes: Ok(vec![ProcessUsage {
                pid: 4242,
                used_memory_bytes: Some(10 * gib),
                sm_ratio: Some(0.6),
                memory_ratio: Some(0.3),
                gpu_instance_id: None,
                workload: Some("train".into()),
            }]),
            gpm: Ok(gpm(0.9)),
            mig: Ok(vec![]),
        }
    }
}

impl Device for TestDevice {
    fn identity(&self) -> Reading<Identity> {
        self.get(|f| &f.identity)
    }
    fn utilization(&self) -> Reading<Utilization> {
        self.get(|f| &f.utilization)
    }
    fn memory(&self) -> Reading<Memory> {
        self.get(|f| &f.memory)
    }
    fn power_usage_watts(&self) -> Reading<f64> {
        self.get(|f| &f.power_usage)
    }
    fn power_limit_watts(&self) -> Reading<f64> {
        self.get(|f| &f.power_limit)
    }
    fn energy_joules(&self) -> Reading<f64> {
        self.get(|f| &f.energy)
    }
    fn temperatures(&self) -> Reading<Vec<Temperature>> {
        self.get(|f| &f.temperatures)
    }
    fn clocks(&self) -> Reading<Vec<ClockReading>> {
        self.get(|f| &f.clocks)
    }
    fn pcie_throughput(&self) -> Reading<PcieThroughput> {
        self.get(|f| &f.pcie_throughput)
    }
    fn pcie_replays(&self) -> Reading<u64> {
        self.get(|f| &f.pcie_replays)
    }
    fn pcie_link(&self) -> Reading<PcieLink> {
        self.get(|f| &f.pcie_link)
    }
    fn clock_event_reasons(&self) -> Reading<ClockEventReasons> {
        self.get(|f| &f.clock_events)
    }
    fn ecc_errors(&self) -> Reading<EccErrors> {
        self.get(|f| &f.ecc)
    }
    fn remapped_rows(&self) -> Reading<RemappedRows> {
        self.get(|f| &f.remapped_rows)
    }
    fn nvlinks(&self) -> Reading<Vec<NvLink>> {
        self.get(|f| &f.nvlinks)
    }
    fn encoder_utilization(&self) -> Reading<f64> {
        self.get(|f| &f.encoder)
    }
    fn decoder_utilization(&self) -> Reading<f64> {
        self.get(|f| &f.decoder)
    }
    fn processes(&self) -> Reading<Vec<ProcessUsage>> {
        self.get(|f| &f.processes)
    }
    fn gpm(&self) -> Reading<GpmMetrics> {
        self.get(|f| &f.gpm)
    }
    fn mig_instances(&self) -> Reading<Vec<MigInstance>> {
        self.get(|f| &f.mig)
    }
}

/// A backend over [`TestDevice`]s with a queue of Xid events.
pub struct TestBackend {
    pub devices: Vec<Arc<TestDevice>>,
    pub xids: Mutex<Vec<XidEvent>>,
}

impl TestBackend {
    /// `n` healthy GPUs.
    pub fn healthy(n: u32) -> Arc<Self> {
        Arc::new(Self {
            devices: (0..n).map(TestDevice::healthy).collect(),
            xids: Mutex::new(Vec::new()),
        })
    }
}

impl Backend for TestBackend {
    fn kind(&self) -> &'static str {
        "test"
    }
    fn system(&self) -> Reading<SystemInfo> {
        Ok(SystemInfo {
            driver_version: "580.159.04".into(),
            cuda_version: "13.0".into(),
        })
    }
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices
            .iter()
            .map(|d| d.clone() as Arc<dyn Device>)
            .collect()
    }
    fn drain_xid_events(&self) -> Vec<XidEvent> {
        std::mem::take(&mut self.xids.lock().unwrap())
    }
}

/// Runs `collector` once over `gpus` and returns what it wrote and its result.
pub fn run(
    collector: &mut dyn super::Collector,
    gpus: &[Gpu],
) -> (crate::registry::MetricSet, Result<(), super::CollectError>) {
    let mut out = crate::registry::MetricSet::new();
    let result = collector.collect(gpus, &mut out);
    (out, result)
}

/// The value of the sample of `name` whose labels include every pair of `labels`.
pub fn value(set: &crate::registry::MetricSet, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    set.value(name, labels)
}

/// Number of samples of `name`.
pub fn count(set: &crate::registry::MetricSet, name: &str) -> usize {
    set.get(name).map_or(0, |f| f.get_metric().len())
}
