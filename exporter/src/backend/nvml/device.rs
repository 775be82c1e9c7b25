//! One NVML GPU behind the backend's [`Device`](crate::backend::Device) trait.

use super::convert::{
    kib_per_second_to_bytes, kib_to_bytes, mhz_to_hz, millijoules_to_joules, milliwatts_to_watts,
    percent_u32_to_ratio,
};
use super::error::read_error;
use super::fields::{self, FieldRequest};
use super::gpm::GpmState;
use super::lists::{self, ListCapacity};
use super::reuse::Reused;
use super::{mig, processes};
use crate::backend::{
    ClockEventReasons, ClockReading, EccErrors, GpmMetrics, Identity, Memory, MigInstance, NvLink,
    PcieLink, PcieThroughput, ProcessUsage, ReadError, Reading, RemappedRows, Temperature,
    Utilization,
};
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, TemperatureSensor,
};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{nvmlReturn_enum_NVML_SUCCESS, NVML_NVLINK_MAX_LINKS};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Clock domains published as `poolprof_gpu_clock_hz{clock}`.
const CLOCKS: [(Clock, &str); 4] = [
    (Clock::Graphics, "graphics"),
    (Clock::SM, "sm"),
    (Clock::Memory, "memory"),
    (Clock::Video, "video"),
];

// Readings reused for a while because taking them costs CPU that a 1 s collection
// cannot afford, for values that change slowly or are counters (which still give
// exact `rate()`s). CPU per read on an H100 with a GEMM running, driver 580
// (`docs/validation/cost/h100-collector-cpu.md`): the energy counter 4.0 ms (one
// read every 5 s was 0.08% of a core alone), PCIe replays and link 0.5 ms, MIG mode
// 0.14 ms, process-utilization samples 2.1 ms.

/// How long an energy reading is reused (the counter then moves every 30 s, as
/// DCGM's default field interval does).
const ENERGY_REFRESH: Duration = Duration::from_secs(30);

/// How long the PCIe replay counter and link state are reused.
const PCIE_REFRESH: Duration = Duration::from_secs(30);

/// How long the MIG mode is reused. MIG mode changes only when an operator
/// reconfigures the GPU; instances are still read every time while it is on.
const MIG_MODE_REFRESH: Duration = Duration::from_secs(10);

/// How long memory and utilization readings are reused: long enough that the GPU's
/// up check and the memory collector, or the utilization and process collectors, of
/// one collection share one query; far shorter than the shortest interval (100 ms).
const SAME_COLLECTION: Duration = Duration::from_millis(50);

/// One GPU and the state its two-sample reads keep between calls.
pub struct NvmlDevice {
    nvml: &'static Nvml,
    device: Device<'static>,
    /// `None` when the GPU has no GPM (checked once at start).
    gpm: Option<GpmState>,
    /// Process-utilization samples, reused for `--collector.process.sample-interval`:
    /// each read's ratios are the driver's mean over that stretch, at most that old.
    process_sampling: Mutex<processes::Sampling>,
    /// The energy counter, reused for [`ENERGY_REFRESH`].
    energy: Mutex<Reused<f64>>,
    /// The PCIe replay counter and link, reused for [`PCIE_REFRESH`].
    pcie_replays: Mutex<Reused<u64>>,
    pcie_link: Mutex<Reused<PcieLink>>,
    /// Whether MIG is on, reused for [`MIG_MODE_REFRESH`].
    mig_enabled: Mutex<Reused<bool>>,
    /// Memory and utilization, reused within one collection ([`SAME_COLLECTION`]).
    memory: Mutex<Reused<Memory>>,
    utilization: Mutex<Reused<Utilization>>,
    /// Buffer sizes of the list queries, so each is one driver call.
    process_list: ListCapacity,
    sample_list: ListCapacity,
    /// Whether the GPU has any NVLink, learnt on the first successful probe: a GPU
    /// without links need not be asked about all 18 possible links every interval.
    has_links: OnceLock<bool>,
}

impl NvmlDevice {
    /// Wraps a handle, reading per-process utilization every `process_sample_interval`;
    /// asks once whether the GPU offers GPM.
    pub fn new(
        nvml: &'static Nvml,
        device: Device<'static>,
        process_sample_interval: Duration,
    ) -> Self {
        let gpm = device
            .gpm_support()
            .unwrap_or(false)
            .then(|| GpmState::new(nvml));
        Self {
            nvml,
            device,
            gpm,
            process_sampling: Mutex::new(processes::Sampling::new(process_sample_interval)),
            energy: Mutex::new(Reused::new(ENERGY_REFRESH)),
            pcie_replays: Mutex::new(Reused::new(PCIE_REFRESH)),
            pcie_link: Mutex::new(Reused::new(PCIE_REFRESH)),
            mig_enabled: Mutex::new(Reused::new(MIG_MODE_REFRESH)),
            memory: Mutex::new(Reused::new(SAME_COLLECTION)),
            utilization: Mutex::new(Reused::new(SAME_COLLECTION)),
            process_list: ListCapacity::default(),
            sample_list: ListCapacity::default(),
            has_links: OnceLock::new(),
        }
    }

    /// The NVML handle, for the Xid event set.
    pub fn handle(&self) -> &Device<'static> {
        &self.device
    }

    /// The kept process-utilization samples, locked.
    fn sampling(&self) -> Reading<std::sync::MutexGuard<'_, processes::Sampling>> {
        self.process_sampling
            .lock()
            .map_err(|_| ReadError::Failed("process sampling lock poisoned".into()))
    }

    /// Utilization samples of the last read, taken again once they are
    /// `--collector.process.sample-interval` old (and then since the newest seen); `None`
    /// when the GPU cannot sample.
    fn process_samples(
        &self,
    ) -> Reading<Option<Vec<nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample>>> {
        self.sampling()?.get(Instant::now(), |last| {
            match lists::process_utilization(
                self.nvml,
                &self.device,
                last.unwrap_or(0),
                &self.sample_list,
            ) {
                Ok(samples) => Ok(Some(samples)),
                // NVML answers NotFound when no process was busy since `last`.
                Err(NvmlError::NotFound) => Ok(Some(Vec::new())),
                Err(e) => match read_error(e) {
                    ReadError::GpuLost(m) => Err(ReadError::GpuLost(m)),
                    _ => Ok(None),
                },
            }
        })
    }

    /// Whether each possible link exists and is up. Links the GPU does not have
    /// answer NotSupported or InvalidArg and are left out.
    fn link_states(&self) -> Reading<Vec<(u32, bool)>> {
        let mut links = Vec::new();
        for link in 0..NVML_NVLINK_MAX_LINKS {
            match self.device.link_wrapper_for(link).is_active() {
                Ok(active) => links.push((link, active)),
                Err(NvmlError::NotSupported | NvmlError::InvalidArg) => {}
                Err(e) => return Err(read_error(e)),
            }
        }
        Ok(links)
    }
}

impl crate::backend::Device for NvmlDevice {
    fn identity(&self) -> Reading<Identity> {
        Ok(Identity {
            index: self.device.index().map_err(read_error)?,
            uuid: self.device.uuid().map_err(read_error)?,
            name: self.device.name().map_err(read_error)?,
            pci_bus_id: self.device.pci_info().map_err(read_error)?.bus_id,
        })
    }

    fn utilization(&self) -> Reading<Utilization> {
        reused(&self.utilization, || {
            let u = self.device.utilization_rates().map_err(read_error)?;
            Ok(Utilization {
                gpu: percent_u32_to_ratio(u.gpu),
                memory: percent_u32_to_ratio(u.memory),
            })
        })
    }

    fn memory(&self) -> Reading<Memory> {
        reused(&self.memory, || {
            let m = self.device.memory_info().map_err(read_error)?;
            Ok(Memory {
                total_bytes: m.total,
                used_bytes: m.used,
                free_bytes: m.free,
                reserved_bytes: Some(m.reserved),
            })
        })
    }

    fn power_usage_watts(&self) -> Reading<f64> {
        self.device
            .power_usage()
            .map(milliwatts_to_watts)
            .map_err(read_error)
    }

    fn power_limit_watts(&self) -> Reading<f64> {
        self.device
            .enforced_power_limit()
            .map(milliwatts_to_watts)
            .map_err(read_error)
    }

    fn energy_joules(&self) -> Reading<f64> {
        reused(&self.energy, || {
            self.device
                .total_energy_consumption()
                .map(millijoules_to_joules)
                .map_err(read_error)
        })
    }

    fn temperatures(&self) -> Reading<Vec<Temperature>> {
        let gpu = self
            .device
            .temperature(TemperatureSensor::Gpu)
            .map_err(read_error)?;
        let mut out = vec![Temperature {
            sensor: "gpu",
            celsius: f64::from(gpu),
        }];
        let request = [FieldRequest {
            field: fields::NVML_FI_DEV_MEMORY_TEMP,
            scope: 0,
        }];
        // HBM temperature is a field value; 0 is what GPUs without the sensor report.
        if let Ok(values) = fields::read(self.nvml, &self.device, &request) {
            if let Some(Ok(v)) = values.first() {
                let celsius = v.as_f64();
                if celsius > 0.0 {
                    out.push(Temperature {
                        sensor: "memory",
                        celsius,
                    });
                }
            }
        }
        Ok(out)
    }

    fn clocks(&self) -> Reading<Vec<ClockReading>> {
        let mut out = Vec::new();
        let mut first_error = None;
        for (clock, name) in CLOCKS {
            match self.device.clock_info(clock) {
                Ok(mhz) => out.push(ClockReading {
                    clock: name,
                    hz: mhz_to_hz(mhz),
                }),
                Err(e) => {
                    first_error.get_or_insert(read_error(e));
                }
            }
        }
        match first_error {
            Some(err @ ReadError::GpuLost(_)) => Err(err),
            Some(err) if out.is_empty() => Err(err),
            _ => Ok(out),
        }
    }

    fn pcie_throughput(&self) -> Reading<PcieThroughput> {
        // NVML samples each direction over a 20 ms window (40 ms of wall time and
        // ~1.7 ms of CPU per GPU). Where GPM exists it measures the same bytes over
        // the whole interval, so the GPM collector publishes them instead.
        if self.gpm.is_some() {
            return Err(ReadError::Replaced(
                "poolprof_gpu_pcie_bytes_per_second (GPM)",
            ));
        }
        let tx = self
            .device
            .pcie_throughput(PcieUtilCounter::Send)
            .map_err(read_error)?;
        let rx = self
            .device
            .pcie_throughput(PcieUtilCounter::Receive)
            .map_err(read_error)?;
        Ok(PcieThroughput {
            tx_bytes_per_second: kib_per_second_to_bytes(tx),
            rx_bytes_per_second: kib_per_second_to_bytes(rx),
        })
    }

    fn pcie_replays(&self) -> Reading<u64> {
        reused(&self.pcie_replays, || {
            self.device
                .pcie_replay_counter()
                .map(u64::from)
                .map_err(read_error)
        })
    }

    fn pcie_link(&self) -> Reading<PcieLink> {
        reused(&self.pcie_link, || {
            Ok(PcieLink {
                generation: self.device.current_pcie_link_gen().map_err(read_error)?,
                width: self.device.current_pcie_link_width().map_err(read_error)?,
            })
        })
    }

    fn clock_event_reasons(&self) -> Reading<ClockEventReasons> {
        self.device
            .current_throttle_reasons()
            .map(|r| ClockEventReasons(r.bits()))
            .map_err(read_error)
    }

    fn ecc_errors(&self) -> Reading<EccErrors> {
        let count = |kind| {
            self.device
                .total_ecc_errors(kind, EccCounter::Aggregate)
                .map_err(read_error)
        };
        Ok(EccErrors {
            corrected_total: count(MemoryError::Corrected)?,
            uncorrected_total: count(MemoryError::Uncorrected)?,
        })
    }

    fn remapped_rows(&self) -> Reading<RemappedRows> {
        let get = self
            .nvml
            .lib()
            .nvmlDeviceGetRemappedRows
            .as_ref()
            .map_err(|_| ReadError::NotSupported)?;
        let (mut corr, mut unc, mut pending, mut failed) = (0u32, 0u32, 0u32, 0u32);
        // SAFETY: the handle comes from this library; the four outputs outlive the call.
        let status = unsafe {
            get(
                self.device.handle(),
                &mut corr,
                &mut unc,
                &mut pending,
                &mut failed,
            )
        };
        if status != nvmlReturn_enum_NVML_SUCCESS {
            return Err(read_error(NvmlError::from(status)));
        }
        Ok(RemappedRows {
            correctable: u64::from(corr),
            uncorrectable: u64::from(unc),
            pending: pending != 0,
            failed: failed != 0,
        })
    }

    fn nvlinks(&self) -> Reading<Vec<NvLink>> {
        if self.has_links.get() == Some(&false) {
            return Err(ReadError::NotSupported);
        }
        let links = self.link_states()?;
        let _ = self.has_links.set(!links.is_empty());
        if links.is_empty() {
            return Err(ReadError::NotSupported);
        }
        let requests: Vec<FieldRequest> = links
            .iter()
            .flat_map(|&(link, _)| {
                [
                    fields::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                    fields::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
                ]
                .map(|field| FieldRequest { field, scope: link })
            })
            .collect();
        let values = fields::read(self.nvml, &self.device, &requests).unwrap_or_default();
        let bytes = |i: usize| {
            values
                .get(i)
                .and_then(|v| v.as_ref().ok())
                .and_then(|v| v.as_u64())
                .map(kib_to_bytes)
        };
        Ok(links
            .iter()
            .enumerate()
            .map(|(i, &(link, active))| NvLink {
                link,
                active,
                tx_bytes: bytes(2 * i),
                rx_bytes: bytes(2 * i + 1),
            })
            .collect())
    }

    fn encoder_utilization(&self) -> Reading<f64> {
        self.device
            .encoder_utilization()
            .map(|u| percent_u32_to_ratio(u.utilization))
            .map_err(read_error)
    }

    fn decoder_utilization(&self) -> Reading<f64> {
        self.device
            .decoder_utilization()
            .map(|u| percent_u32_to_ratio(u.utilization))
            .map_err(read_error)
    }

    fn processes(&self) -> Reading<Vec<ProcessUsage>> {
        // The v3 query (drivers ≥ 510); the older v2 entry point needs nvml-wrapper's
        // legacy feature and brings nothing a current driver lacks.
        let running = lists::compute_processes(self.nvml, &self.device, &self.process_list)
            .map_err(read_error)?;
        // A lone process is all the GPU's work: its share is the GPU's utilization,
        // and the samples query (~2.1 ms of CPU) is needed only to split it. Under
        // MIG the GPU's utilization is not offered and the samples are read.
        // Samples kept from a time with two or more processes are dropped while there
        // are fewer, so a process that joins later is not scored on a stale batch.
        let lone = match running.as_slice() {
            [] => Some(Vec::new()),
            [only] => crate::backend::Device::utilization(self)
                .ok()
                .map(|utilization| vec![processes::lone(only, utilization)]),
            _ => None,
        };
        if let Some(usage) = lone {
            self.sampling()?.forget();
            return Ok(usage);
        }
        let samples = self.process_samples()?;
        let sampled = samples.is_some();
        Ok(processes::merge(
            &running,
            samples.as_deref().unwrap_or(&[]),
            sampled,
        ))
    }

    fn gpm(&self) -> Reading<GpmMetrics> {
        let state = self.gpm.as_ref().ok_or(ReadError::NotSupported)?;
        let sample = self.device.gpm_sample().map_err(read_error)?;
        state.advance(None, sample)
    }

    fn mig_instances(&self) -> Reading<Vec<MigInstance>> {
        let enabled = reused(&self.mig_enabled, || mig::enabled(&self.device))?;
        if !enabled {
            return Ok(Vec::new());
        }
        mig::instances(self.nvml, &self.device, self.gpm.as_ref())
    }
}

/// A reading from `cache` while it is fresh, else a new one from `read`.
fn reused<T: Copy>(cache: &Mutex<Reused<T>>, read: impl FnOnce() -> Reading<T>) -> Reading<T> {
    let mut cache = cache
        .lock()
        .map_err(|_| ReadError::Failed("reading cache lock poisoned".into()))?;
    cache.get(Instant::now(), read)
}
