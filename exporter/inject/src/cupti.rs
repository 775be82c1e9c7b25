//! The CUPTI side: loading, activity callbacks, and the duty cycle ([`duty`]).
//!
//! CUPTI is loaded at run time through cudarc's dynamic loading. cudarc panics on a
//! missing library or symbol, so [`start`] first checks that every symbol it will
//! call exists and refuses to go on otherwise. Callbacks never unwind into CUPTI and
//! never block an application thread: buffers come from a lock-free pool, and the
//! windows' lock is only taken by CUPTI's delivery thread, our sender and our
//! duty-cycle thread.

use crate::aggregate::Aggregator;
use crate::batch::Batch;
use crate::buffers::BufferPool;
use crate::config::Config;
use crate::detach;
use crate::records::{self, parse, Record, KIND_CONCURRENT_KERNEL, KIND_KERNEL};
use crate::sample::Sample;
use crate::sender::Source;
use crate::windows::Windows;
use crate::wire::{DutyCycle, FULL_DUTY_PPM};
use cudarc::cupti::sys::{CUptiResult, CUpti_Activity, CUpti_ActivityFlag, CUpti_ActivityKind};
use cudarc::driver::sys::{self as driver_sys, CUcontext};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

mod duty;
pub mod library;
pub use duty::{spawn_duty_cycle, DutyThread};

const KERNEL: CUpti_ActivityKind = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
const MEMORY_KINDS: [CUpti_ActivityKind; 2] = [
    CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
];
const DRIVER_SYMBOLS: [&str; 3] = ["cuDeviceGet", "cuDeviceGetUuid_v2", "cuCtxGetCurrent"];

/// Why the library steps aside.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// libcupti could not be loaded.
    #[error("CUPTI (libcupti.so) not found; add its directory (e.g. /usr/local/cuda/extras/CUPTI/lib64) to LD_LIBRARY_PATH")]
    NoCupti,
    /// The libcupti `POOLPROF_INJECT_CUPTI` names could not be loaded.
    #[error("cannot load POOLPROF_INJECT_CUPTI={0}; name an existing libcupti.so or unset it")]
    ChosenCupti(String),
    /// The loaded CUPTI lacks a function this library calls.
    #[error("CUPTI lacks {0}; it is older than this library supports (CUDA 12 or newer)")]
    MissingSymbol(&'static str),
    /// Another tool already collects activity records.
    #[error(transparent)]
    OtherSubscriber(#[from] detach::OtherClient),
    /// A CUPTI call failed.
    #[error("{call} failed: {code:?}")]
    Cupti {
        /// The function.
        call: &'static str,
        /// CUPTI's result code.
        code: CUptiResult,
    },
    /// The buffer pool could not be allocated.
    #[error("cannot allocate {count} activity buffers of {size} bytes")]
    NoMemory {
        /// Buffer size.
        size: usize,
        /// Buffer count.
        count: usize,
    },
    /// `InitializeInjection` ran twice.
    #[error("already initialized")]
    AlreadyStarted,
}

/// State shared by the callbacks, the sender and the duty-cycle thread.
struct Shared {
    /// Records by window; the callbacks add to the current one.
    windows: Mutex<Windows>,
    pool: BufferPool,
    uuids: Mutex<HashMap<u32, Option<[u8; 16]>>>,
    /// The traced share of time (the configured one until the duty cycle measures it;
    /// 1 when every record is traced, also once a duty cycle stopped).
    duty_ppm: AtomicU32,
    /// A duty cycle runs: windows are sent once their period is measured.
    sampling: AtomicBool,
    /// No record is taken any more: the process is exiting, or another CUPTI client
    /// took over and the library stepped aside.
    closed: AtomicBool,
    /// CUPTI was told buffers come zeroed, so they are cleared before reuse.
    zeroed_buffers: bool,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The activity kinds `config` asks for: none when the duty cycle is "never";
/// otherwise concurrent kernels (never the serializing `KIND_KERNEL`), plus memcpy and
/// memset unless `trace_memory` is off. The duty cycle toggles all of them together.
fn kinds(config: &Config) -> Vec<CUpti_ActivityKind> {
    let mut kinds = Vec::new();
    if config.duty.is_none() {
        return kinds;
    }
    kinds.push(KERNEL);
    if config.trace_memory {
        kinds.extend(MEMORY_KINDS);
    }
    kinds
}

/// Loads CUPTI, checks that no other client subscribed, registers the buffer
/// callbacks and enables the kinds `config` asks for (returned in
/// [`CuptiSource::kinds`], for the duty cycle). On error every kind it enabled is
/// disabled again.
pub fn start(config: &Config) -> Result<CuptiSource, StartError> {
    let cupti = library::load(config.cupti.as_deref())?;
    check_driver_symbols()?;
    detach::check_alone(detach::no_other_subscriber)?;
    crate::counters::init(config.kernel_counters, &cupti.path);
    let zeroed_buffers = promise_zeroed_buffers(cupti);
    let pool =
        BufferPool::new(config.buffer_bytes, config.buffers).ok_or(StartError::NoMemory {
            size: config.buffer_bytes,
            count: config.buffers,
        })?;
    let time_ppm = config.duty.map_or(1, DutyCycle::ppm);
    let shared = Shared {
        windows: Mutex::new(Windows::new(config.max_kernels, time_ppm)),
        pool,
        uuids: Mutex::new(HashMap::new()),
        duty_ppm: AtomicU32::new(time_ppm),
        // Set from the start, so nothing is sent unmeasured before the duty-cycle
        // thread runs (if it cannot start, everything is traced and this is cleared).
        sampling: AtomicBool::new(matches!(config.duty, Some(DutyCycle::Sampled { .. }))),
        closed: AtomicBool::new(false),
        zeroed_buffers,
    };
    SHARED.set(shared).map_err(|_| StartError::AlreadyStarted)?;
    let registered = cupti.register(Some(buffer_requested), Some(buffer_completed));
    check("cuptiActivityRegisterCallbacks", registered)?;
    let kinds = kinds(config);
    for (i, kind) in kinds.iter().enumerate() {
        if let Err(e) = check("cuptiActivityEnable", cupti.enable_kind(*kind)) {
            for enabled in &kinds[..i] {
                let _ = cupti.disable_kind(*enabled);
            }
            return Err(e);
        }
    }
    Ok(CuptiSource { kinds })
}

/// The driver functions [`device_uuid`] and [`driver_call`] call (cudarc panics on a
/// missing one).
fn check_driver_symbols() -> Result<(), StartError> {
    // SAFETY: the driver is loaded already (it is the one injecting us); looking a
    // symbol up does not call it.
    if unsafe { driver_sys::is_culib_present() } {
        let driver = unsafe { driver_sys::culib() };
        for name in DRIVER_SYMBOLS {
            // SAFETY: only the address is read.
            if unsafe { driver.get::<*const ()>(name.as_bytes()) }.is_err() {
                return Err(StartError::MissingSymbol(name));
            }
        }
    }
    Ok(())
}

/// Tells CUPTI that buffers come zeroed, so it does not zero each one on the
/// application thread that asks for it; `false` (CUPTI zeroes them, as by default)
/// when this CUPTI lacks the call or refuses it.
fn promise_zeroed_buffers(cupti: &library::Cupti) -> bool {
    let Some(set_attribute) = cupti.set_attribute else {
        return false;
    };
    let mut value: u8 = 1;
    let mut size = std::mem::size_of::<u8>();
    // SAFETY: size and value point at live locals of the size the attribute takes (a
    // uint8_t).
    let result = unsafe {
        set_attribute(
            cudarc::cupti::sys::CUpti_ActivityAttribute::CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
            &mut size,
            (&mut value as *mut u8).cast(),
        )
    };
    result == CUptiResult::CUPTI_SUCCESS
}

/// `Ok` for success; otherwise why `call` failed.
fn check(call: &'static str, result: CUptiResult) -> Result<(), StartError> {
    match result {
        CUptiResult::CUPTI_SUCCESS => Ok(()),
        CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            Err(detach::OtherClient.into())
        }
        code => Err(StartError::Cupti { call, code }),
    }
}

/// Gives CUPTI a buffer from the pool, or none (CUPTI then drops records and counts
/// them) when every buffer is in use.
unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    let got = SHARED
        .get()
        .filter(|s| !s.closed.load(Ordering::Relaxed))
        .and_then(|s| s.pool.acquire().map(|p| (p, s.pool.buffer_size())));
    let (ptr, len) = got.unwrap_or((std::ptr::null_mut(), 0));
    // SAFETY: CUPTI passes valid out-pointers.
    unsafe {
        *buffer = ptr;
        *size = len;
        *max_records = 0;
    }
}

/// Aggregates the records of a filled buffer and returns it to the pool (zeroed, when
/// CUPTI was promised zeroed buffers). This runs on CUPTI's worker thread or on the
/// sender's during a flush, never on an application thread.
unsafe extern "C" fn buffer_completed(
    context: CUcontext,
    stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid_size: usize,
) {
    let (Some(shared), Some(cupti)) = (SHARED.get(), library::get()) else {
        return;
    };
    // A panic must not unwind into CUPTI (it would abort the application).
    let _ = std::panic::catch_unwind(|| {
        if shared.closed.load(Ordering::Relaxed) {
            return;
        }
        let mut dropped = 0usize;
        // SAFETY: CUPTI passes its own context and stream; `dropped` is a valid out-pointer.
        let _ = unsafe { (cupti.dropped_records)(context, stream_id, &mut dropped) };
        let mut memory = Aggregator::new(0);
        let mut batch = Batch::default();
        if !buffer.is_null() && valid_size > 0 {
            // SAFETY: the buffer holds `valid_size` bytes of records CUPTI wrote.
            unsafe { read_buffer(cupti, buffer, valid_size, &mut batch, &mut memory) };
        }
        let mut windows = lock(&shared.windows);
        let window = windows.current();
        window.launches.merge(batch.launches());
        window.records.record_dropped(dropped as u64);
        window.records.absorb(memory);
        // SAFETY: kernel names are owned by CUPTI and live for the process.
        unsafe { batch.fold_into(&mut window.records) };
    });
    if buffer.is_null() {
        return;
    }
    if shared.zeroed_buffers {
        shared
            .pool
            .release_zeroed(buffer, shared.pool.buffer_size());
    } else {
        shared.pool.release(buffer);
    }
}

/// Sums kernel records into `batch` and memory records into `memory` (memcpy and
/// memset are rare next to launches and go straight to an aggregator).
unsafe fn read_buffer(
    cupti: &library::Cupti,
    buffer: *mut u8,
    valid_size: usize,
    batch: &mut Batch,
    memory: &mut Aggregator,
) {
    let mut record: *mut CUpti_Activity = std::ptr::null_mut();
    // SAFETY: CUPTI walks its own buffer; it returns an error at the end.
    while unsafe { (cupti.next_record)(buffer, valid_size, &mut record) }
        == CUptiResult::CUPTI_SUCCESS
    {
        let at = record.cast::<u8>();
        // SAFETY: CUPTI returned a pointer to a whole record inside the buffer.
        match unsafe { records::kind(at) } {
            // SAFETY: the kind says it is a kernel record.
            KIND_CONCURRENT_KERNEL | KIND_KERNEL => batch.add(&unsafe { records::raw_kernel(at) }),
            // SAFETY: a whole record; kernel names never get here.
            _ => match unsafe { parse(at) } {
                Record::Memcpy {
                    device,
                    direction,
                    bytes,
                } => memory.record_memcpy(device, direction, bytes),
                Record::Memset { device, bytes } => memory.record_memset(device, bytes),
                Record::Kernel(_) | Record::Other(_) => {}
            },
        }
    }
}

/// The [`Source`] the sender reads: CUPTI's records, window by window once measured.
pub struct CuptiSource {
    kinds: Vec<CUpti_ActivityKind>,
}

impl CuptiSource {
    /// The activity kinds [`start`] enabled, which a duty cycle toggles together.
    pub fn kinds(&self) -> &[CUpti_ActivityKind] {
        &self.kinds
    }
}

impl Source for CuptiSource {
    fn flush(&self, forced: bool) {
        let flag = if forced {
            CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED as u32
        } else {
            0
        };
        if let Some(cupti) = library::get() {
            let _ = detach::with_attached(|| cupti.flush(flag));
        }
    }

    fn take(&self) -> Sample {
        let Some(shared) = SHARED.get() else {
            return Sample::new(Aggregator::new(0), FULL_DUTY_PPM);
        };
        let mut windows = lock(&shared.windows);
        if shared.sampling.load(Ordering::Acquire) {
            windows.take_ready()
        } else {
            windows.take_all(shared.duty_ppm.load(Ordering::Relaxed))
        }
    }

    fn counters(&self) -> Vec<crate::wire::KernelCounters> {
        crate::counters::take()
    }

    fn uuid(&self, ordinal: u32) -> Option<[u8; 16]> {
        let shared = SHARED.get()?;
        *lock(&shared.uuids)
            .entry(ordinal)
            .or_insert_with(|| device_uuid(ordinal))
    }
}

/// The 16 UUID bytes of a CUDA device ordinal, through the driver API (CUDA is
/// initialised by the time the sender asks).
fn device_uuid(ordinal: u32) -> Option<[u8; 16]> {
    // SAFETY: check_symbols verified the driver library and both symbols.
    if !unsafe { driver_sys::is_culib_present() } {
        return None;
    }
    let mut device = 0;
    // SAFETY: out-pointers are valid locals.
    unsafe { driver_sys::cuDeviceGet(&mut device, i32::try_from(ordinal).ok()?) }
        .result()
        .ok()?;
    let mut uuid = driver_sys::CUuuid_st { bytes: [0; 16] };
    // SAFETY: as above.
    unsafe { driver_sys::cuDeviceGetUuid_v2(&mut uuid, device) }
        .result()
        .ok()?;
    Some(uuid.bytes.map(|b| b as u8))
}

/// The cheapest driver API call there is (`cuCtxGetCurrent` of this thread), made so
/// that its exit callback can finalize CUPTI (`crate::detach`).
fn driver_call() {
    // SAFETY: check_driver_symbols verified the driver library and the symbol.
    if !unsafe { driver_sys::is_culib_present() } {
        return;
    }
    let mut context: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the call only reads this thread's current context.
    let _ = unsafe { driver_sys::cuCtxGetCurrent(&mut context) };
}

/// Stops collection at exit: no buffer is handed out and no record taken after this.
pub fn stop() {
    if let Some(shared) = SHARED.get() {
        shared.closed.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_for(duty: &str, memcpy: &str) -> Vec<CUpti_ActivityKind> {
        let config = Config::from_lookup(|var| match var {
            "POOLPROF_INJECT_DUTY" => Some(duty.to_string()),
            "POOLPROF_INJECT_MEMCPY" => Some(memcpy.to_string()),
            _ => None,
        })
        .unwrap();
        kinds(&config)
    }

    #[test]
    fn by_default_kernels_memcpy_and_memset_are_traced_together() {
        let all = [KERNEL, MEMORY_KINDS[0], MEMORY_KINDS[1]];
        assert_eq!(kinds(&Config::default()), all);
        assert_eq!(kinds_for("always", "on"), all);
        assert_eq!(kinds_for("50/1000", "off"), [KERNEL]);
    }

    #[test]
    fn never_enables_no_record_kind_at_all() {
        assert!(kinds_for("never", "on").is_empty());
        assert!(kinds_for("0/1000", "off").is_empty());
    }
}
