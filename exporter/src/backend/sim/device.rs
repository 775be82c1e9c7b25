//! One simulated H100: turns the workload's activity at "now" into what NVML would
//! report (power, clocks, temperatures, counters, processes, GPM, MIG instances).

use super::clock::SimClock;
use super::h100;
use super::noise;
use super::scenario::{GpuMode, GpuSpec, MigInstanceSpec, ProcessSpec, Tenant};
use super::workload::{Activity, GIB};
use crate::backend::{
    ClockEventReasons, ClockReading, Device, EccErrors, GpmMetrics, Identity, Memory, MigInstance,
    NvLink, PcieLink, PcieThroughput, ProcessUsage, ReadError, Reading, RemappedRows, Temperature,
    Utilization,
};
use std::sync::Mutex;

/// Power above which the board is held at its power cap, in watts.
const POWER_CAP_WATTS: f64 = 680.0;
/// Watts drawn above idle when the busiest mix of SM, tensor and DRAM runs.
const DYNAMIC_WATTS: f64 = 620.0;
/// Sustained NVML reading of the GPU temperature when idle, in °C.
const IDLE_CELSIUS: f64 = 31.0;
/// Degrees of warming from idle to full power.
const WARMING_CELSIUS: f64 = 38.0;
/// The HBM runs this much warmer than the core.
const MEMORY_DELTA_CELSIUS: f64 = 3.0;
/// PCI bus numbers of an 8-GPU HGX H100 board, in NVML's order.
const HGX_BUSES: [u8; 8] = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb];
/// Noise channels of device-level signals.
const POWER_NOISE: u64 = 101;
const TEMPERATURE_NOISE: u64 = 102;

/// Counters integrated over whole seconds since the scenario started.
#[derive(Debug, Clone, Copy, Default)]
struct Integrals {
    /// Seconds integrated so far.
    second: u64,
    /// Joules consumed from second 0 to `second`.
    energy_joules: f64,
    /// NVLink bytes sent from second 0 to `second`.
    nvlink_tx_bytes: f64,
    /// NVLink bytes received from second 0 to `second`.
    nvlink_rx_bytes: f64,
}

/// A simulated GPU.
#[derive(Debug)]
pub struct SimDevice {
    identity: Identity,
    spec: GpuSpec,
    clock: SimClock,
    /// The running integral, a cache only: values stay a pure function of the time.
    integrals: Mutex<Integrals>,
}

impl SimDevice {
    /// GPU `index` of a scenario, reading the time from `clock`.
    pub fn new(index: u32, spec: GpuSpec, clock: SimClock) -> Self {
        Self {
            identity: identity(index),
            spec,
            clock,
            integrals: Mutex::new(Integrals::default()),
        }
    }

    /// The scenario's description of this GPU.
    pub fn spec(&self) -> &GpuSpec {
        &self.spec
    }

    /// Index, UUID, name and bus id (also while the GPU is lost).
    pub fn cached_identity(&self) -> &Identity {
        &self.identity
    }

    /// When a failing GPU stops answering; `None` for the others.
    pub fn fail_at_seconds(&self) -> Option<f64> {
        match self.spec.mode {
            GpuMode::Failing {
                fail_at_seconds, ..
            } => Some(fail_at_seconds),
            _ => None,
        }
    }

    /// Whether the GPU is lost at scenario time `t`.
    pub fn is_lost_at(&self, t: f64) -> bool {
        match self.spec.mode {
            GpuMode::Failing {
                fail_at_seconds,
                recover_at_seconds,
                ..
            } => t >= fail_at_seconds && recover_at_seconds.is_none_or(|at| t < at),
            _ => false,
        }
    }

    /// "Now" in scenario seconds, or `GpuLost` when the GPU fails now.
    fn now(&self) -> Reading<f64> {
        let t = self.clock.now_seconds();
        if self.is_lost_at(t) {
            return Err(ReadError::GpuLost(format!(
                "simulated failure of GPU {} at {t:.0} s (scenario)",
                self.identity.index
            )));
        }
        Ok(t)
    }

    fn instance_seed(&self, instance: &MigInstanceSpec) -> u64 {
        self.spec
            .seed
            .wrapping_mul(0x100_0000_01b3)
            .wrapping_add(u64::from(instance.gpu_instance_id))
    }

    fn instance_activity(&self, instance: &MigInstanceSpec, t: f64) -> Activity {
        instance
            .tenant
            .load
            .activity(self.instance_seed(instance), t)
    }

    /// The whole GPU's activity at `t` (MIG instances weighted by compute slices).
    fn activity(&self, t: f64) -> Activity {
        match &self.spec.mode {
            GpuMode::Whole(tenant) => tenant.load.activity(self.spec.seed, t),
            GpuMode::Failing { tenant, .. } if !self.is_lost_at(t) => {
                tenant.load.activity(self.spec.seed, t)
            }
            GpuMode::Failing { .. } => Activity::default(),
            GpuMode::Mig(instances) => Activity::weighted(
                &instances
                    .iter()
                    .map(|i| (f64::from(i.profile.slices), self.instance_activity(i, t)))
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// Board power at `t`: idle power plus a weighted mix of SM, tensor and DRAM work.
    fn power_at(&self, t: f64) -> f64 {
        let a = self.activity(t);
        let load = (0.55 * a.sm_active + 0.45 * a.tensor + 0.35 * a.dram).min(1.0);
        let jitter = 1.5 * noise::signed(self.spec.seed, POWER_NOISE, t.floor() as i64);
        (h100::IDLE_WATTS + DYNAMIC_WATTS * load + jitter).clamp(60.0, h100::POWER_LIMIT_WATTS)
    }

    /// Counters at `t`: sums over whole seconds plus the part of the current second,
    /// so they only grow and their rate matches the reported power and link traffic.
    fn integrals(&self, t: f64) -> Integrals {
        let target = t.max(0.0).floor() as u64;
        let mut cache = self.integrals.lock().expect("lock poisoned");
        if cache.second > target {
            *cache = Integrals::default();
        }
        while cache.second < target {
            let s = cache.second as f64;
            let a = self.activity(s);
            cache.energy_joules += self.power_at(s);
            cache.nvlink_tx_bytes += a.nvlink_tx;
            cache.nvlink_rx_bytes += a.nvlink_rx;
            cache.second += 1;
        }
        let fraction = t.max(0.0) - target as f64;
        let a = self.activity(target as f64);
        Integrals {
            second: target,
            energy_joules: cache.energy_joules + fraction * self.power_at(target as f64),
            nvlink_tx_bytes: cache.nvlink_tx_bytes + fraction * a.nvlink_tx,
            nvlink_rx_bytes: cache.nvlink_rx_bytes + fraction * a.nvlink_rx,
        }
    }

    fn is_mig(&self) -> bool {
        matches!(self.spec.mode, GpuMode::Mig(_))
    }

    fn memory_used_bytes(&self) -> u64 {
        match &self.spec.mode {
            GpuMode::Whole(tenant) | GpuMode::Failing { tenant, .. } => tenant.memory_used_bytes,
            GpuMode::Mig(instances) => instances.iter().map(|i| i.tenant.memory_used_bytes).sum(),
        }
    }
}

/// A stable `MIG-…` UUID for instance `gpu_instance` of simulated GPU `index`.
pub fn mig_uuid(index: u32, gpu_instance: u32) -> String {
    format!("MIG-00000000-0000-4000-9000-{index:06x}{gpu_instance:06x}")
}

fn identity(index: u32) -> Identity {
    let domain = index / HGX_BUSES.len() as u32;
    let bus = HGX_BUSES[index as usize % HGX_BUSES.len()];
    Identity {
        index,
        uuid: format!("GPU-00000000-0000-4000-8000-{index:012x}"),
        name: h100::NAME.to_string(),
        pci_bus_id: format!("{domain:08X}:{bus:02X}:00.0"),
    }
}

fn gib_bytes(gib: f64) -> u64 {
    (gib * GIB) as u64
}

fn gpm(a: &Activity) -> GpmMetrics {
    GpmMetrics {
        sm_active: Some(a.sm_active),
        sm_occupancy: Some(a.sm_occupancy),
        graphics_engine_active: Some(busy_ratio(a)),
        tensor_any: Some(a.tensor),
        tensor_hmma: Some(a.tensor),
        tensor_imma: Some(0.0),
        tensor_dfma: Some(0.0),
        dram_active: Some(a.dram),
        pipe_fp64: Some(a.fp64),
        pipe_fp32: Some(a.fp32),
        pipe_fp16: Some(a.fp16),
        pipe_integer: Some(a.integer),
        pcie_tx_bytes_per_second: Some(a.pcie_tx),
        pcie_rx_bytes_per_second: Some(a.pcie_rx),
        nvlink_tx_bytes_per_second: Some(a.nvlink_tx),
        nvlink_rx_bytes_per_second: Some(a.nvlink_rx),
    }
}

/// NVML's "GPU utilization": the share of time any kernel ran, above the SM activity.
fn busy_ratio(a: &Activity) -> f64 {
    (a.sm_active * 1.06).min(1.0)
}

/// The processes of one workload with their share of its memory and activity.
fn tenant_processes(
    tenant: &Tenant,
    activity: &Activity,
    instance: Option<u32>,
) -> Vec<ProcessUsage> {
    let explicit: u64 = tenant.processes.iter().filter_map(|p| p.memory_bytes).sum();
    let implicit = tenant
        .processes
        .iter()
        .filter(|p| p.memory_bytes.is_none())
        .count() as u64;
    let shared = tenant.memory_used_bytes.saturating_sub(explicit) / implicit.max(1);
    let share = 1.0 / tenant.processes.len().max(1) as f64;
    // NVML has no per-process utilization samples for MIG instances.
    let ratio = |v: f64| {
        instance
            .is_none()
            .then_some((v * share * 1e4).round() / 1e4)
    };
    tenant
        .processes
        .iter()
        .map(|p: &ProcessSpec| ProcessUsage {
            pid: p.pid,
            used_memory_bytes: Some(p.memory_bytes.unwrap_or(shared)),
            sm_ratio: ratio(activity.sm_active),
            memory_ratio: ratio(activity.dram),
            gpu_instance_id: instance,
            workload: Some(p.workload.clone()),
        })
        .collect()
}

impl Device for SimDevice {
    fn identity(&self) -> Reading<Identity> {
        self.now()?;
        Ok(self.identity.clone())
    }

    fn utilization(&self) -> Reading<Utilization> {
        let t = self.now()?;
        if self.is_mig() {
            // NVML answers NOT_SUPPORTED for device utilization in MIG mode.
            return Err(ReadError::NotSupported);
        }
        let a = self.activity(t);
        Ok(Utilization {
            gpu: busy_ratio(&a),
            memory: (a.dram * 0.9).min(1.0),
        })
    }

    fn memory(&self) -> Reading<Memory> {
        self.now()?;
        let total = gib_bytes(h100::MEMORY_GIB);
        let reserved = gib_bytes(h100::RESERVED_GIB);
        let used = self.memory_used_bytes();
        Ok(Memory {
            total_bytes: total,
            used_bytes: used,
            free_bytes: total.saturating_sub(used + reserved),
            reserved_bytes: Some(reserved),
        })
    }

    fn power_usage_watts(&self) -> Reading<f64> {
        let t = self.now()?;
        Ok((self.power_at(t) * 1000.0).round() / 1000.0)
    }

    fn power_limit_watts(&self) -> Reading<f64> {
        self.now()?;
        Ok(h100::POWER_LIMIT_WATTS)
    }

    fn energy_joules(&self) -> Reading<f64> {
        let t = self.now()?;
        // The driver loaded before the scenario started.
        let since_load = 1.0e6 * f64::from(self.identity.index + 1);
        Ok(((since_load + self.integrals(t).energy_joules) * 1000.0).floor() / 1000.0)
    }

    fn temperatures(&self) -> Reading<Vec<Temperature>> {
        let t = self.now()?;
        let heat = (self.power_at(t) - h100::IDLE_WATTS).max(0.0)
            / (h100::POWER_LIMIT_WATTS - h100::IDLE_WATTS);
        let jitter = 0.4 * noise::signed(self.spec.seed, TEMPERATURE_NOISE, t.floor() as i64);
        let gpu = (IDLE_CELSIUS + WARMING_CELSIUS * heat + jitter).clamp(30.0, 75.0);
        let memory = (gpu + MEMORY_DELTA_CELSIUS).clamp(30.0, 75.0);
        Ok(vec![
            Temperature {
                sensor: "gpu",
                celsius: gpu.round(),
            },
            Temperature {
                sensor: "memory",
                celsius: memory.round(),
            },
        ])
    }

    fn clocks(&self) -> Reading<Vec<ClockReading>> {
        let t = self.now()?;
        let busy = self.activity(t).sm_active > 0.02;
        let sm = match (busy, self.power_at(t) > POWER_CAP_WATTS) {
            (false, _) => h100::SM_CLOCK_IDLE_HZ,
            (true, true) => h100::SM_CLOCK_CAPPED_HZ,
            (true, false) => h100::SM_CLOCK_BUSY_HZ,
        };
        let video = if busy {
            h100::VIDEO_CLOCK_HZ.1
        } else {
            h100::VIDEO_CLOCK_HZ.0
        };
        Ok(vec![
            ClockReading {
                clock: "graphics",
                hz: sm,
            },
            ClockReading {
                clock: "sm",
                hz: sm,
            },
            ClockReading {
                clock: "memory",
                hz: h100::MEMORY_CLOCK_HZ,
            },
            ClockReading {
                clock: "video",
                hz: video,
            },
        ])
    }

    fn pcie_throughput(&self) -> Reading<PcieThroughput> {
        // Like NVML on an H100: GPM measures the same bytes over the whole interval.
        self.now()?;
        Err(ReadError::Replaced(
            "poolprof_gpu_pcie_bytes_per_second (GPM)",
        ))
    }

    fn pcie_replays(&self) -> Reading<u64> {
        self.now()?;
        Ok(self.spec.seed % 3)
    }

    fn pcie_link(&self) -> Reading<PcieLink> {
        self.now()?;
        Ok(PcieLink {
            generation: h100::PCIE.0,
            width: h100::PCIE.1,
        })
    }

    fn clock_event_reasons(&self) -> Reading<ClockEventReasons> {
        let t = self.now()?;
        let reasons = if self.activity(t).sm_active <= 0.02 {
            0x1
        } else if self.power_at(t) > POWER_CAP_WATTS {
            0x4
        } else {
            0
        };
        Ok(ClockEventReasons(reasons))
    }

    fn ecc_errors(&self) -> Reading<EccErrors> {
        let t = self.now()?;
        // A healthy HBM3 corrects a bit now and then: one every two hours here.
        Ok(EccErrors {
            corrected_total: self.spec.seed % 5 + (t / 7200.0).floor() as u64,
            uncorrected_total: 0,
        })
    }

    fn remapped_rows(&self) -> Reading<RemappedRows> {
        self.now()?;
        Ok(RemappedRows {
            correctable: self.spec.seed % 2,
            ..RemappedRows::default()
        })
    }

    fn nvlinks(&self) -> Reading<Vec<NvLink>> {
        let t = self.now()?;
        let totals = self.integrals(t);
        let per_link = |bytes: f64| Some((bytes / f64::from(h100::NVLINKS)) as u64);
        Ok((0..h100::NVLINKS)
            .map(|link| NvLink {
                link,
                active: true,
                tx_bytes: per_link(totals.nvlink_tx_bytes),
                rx_bytes: per_link(totals.nvlink_rx_bytes),
            })
            .collect())
    }

    fn encoder_utilization(&self) -> Reading<f64> {
        self.now()?;
        Ok(0.0)
    }

    fn decoder_utilization(&self) -> Reading<f64> {
        self.now()?;
        Ok(0.0)
    }

    fn processes(&self) -> Reading<Vec<ProcessUsage>> {
        let t = self.now()?;
        Ok(match &self.spec.mode {
            GpuMode::Whole(tenant) | GpuMode::Failing { tenant, .. } => {
                tenant_processes(tenant, &self.activity(t), None)
            }
            GpuMode::Mig(instances) => instances
                .iter()
                .flat_map(|i| {
                    let a = self.instance_activity(i, t);
                    tenant_processes(&i.tenant, &a, Some(i.gpu_instance_id))
                })
                .collect(),
        })
    }

    fn gpm(&self) -> Reading<GpmMetrics> {
        let t = self.now()?;
        Ok(gpm(&self.activity(t)))
    }

    fn mig_instances(&self) -> Reading<Vec<MigInstance>> {
        let t = self.now()?;
        let GpuMode::Mig(instances) = &self.spec.mode else {
            return Ok(Vec::new());
        };
        Ok(instances
            .iter()
            .map(|i| {
                let total = gib_bytes(f64::from(i.profile.memory_gib));
                let used = i.tenant.memory_used_bytes;
                MigInstance {
                    gpu_instance_id: i.gpu_instance_id,
                    profile: i.profile.name.to_string(),
                    uuid: Some(mig_uuid(self.identity.index, i.gpu_instance_id)),
                    memory: Some(Memory {
                        total_bytes: total,
                        used_bytes: used,
                        free_bytes: total.saturating_sub(used),
                        reserved_bytes: None,
                    }),
                    gpm: Some(gpm(&self.instance_activity(i, t))),
                }
            })
            .collect())
    }
}
