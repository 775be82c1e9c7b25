//! Optional per-kernel hardware counters (`POOLPROF_KERNEL_COUNTERS=1`): the first
//! launch of each distinct kernel is profiled once with CUPTI's range profiler (FLOPs
//! by precision, DRAM bytes, GPU time), and the results travel to the exporter in a
//! counters message.
//!
//! How it fits the duty cycle: profiling needs a CUPTI subscription (to see a launch
//! before it happens), and CUPTI serves one subscriber, so holding one all the time
//! would keep a profiler started later (torch.profiler, Nsight) from CUPTI. The
//! library therefore subscribes only inside duty-cycle windows, after it checked that
//! no other client is there, and unsubscribes when the window ends, before it checks
//! again and detaches; a profiler that starts inside a window while counters are
//! still being collected fails to subscribe until the window ends (at most 200 ms by
//! default, and only in the first windows of a process: see [`plan`]). Counters end
//! for the process at the cap, after [`plan::IDLE_WINDOWS`] windows without a new
//! kernel, or at the first CUPTI error (one line on stderr); the library's sampling
//! goes on either way. With the variable unset nothing here runs: no subscription,
//! no range profiler, no extra work in the callbacks.

pub mod metrics;
pub mod plan;
mod range_profiler;

use crate::cupti::library;
use crate::wire::{DeviceId, KernelCounters};
use cudarc::cupti::sys::{
    CUptiResult, CUpti_ApiCallbackSite, CUpti_CallbackData, CUpti_CallbackDomain, CUpti_CallbackId,
    CUpti_SubscriberHandle,
};
use cudarc::driver::sys::{self as driver_sys, CUcontext};
use plan::{Plan, Stopped};
use range_profiler::{Config as MetricConfig, ContextProfiler, RangeProfiler, Session};
use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Driver API launch calls whose first launch of a kernel is profiled:
/// `cuLaunchKernel`, `cuLaunchCooperativeKernel`, `cuLaunchKernelEx` (and `_ptsz`).
const DRIVER_LAUNCHES: [CUpti_CallbackId; 6] = [307, 442, 477, 478, 652, 653];
/// Runtime API launch calls: `cudaLaunchKernel`, `cudaLaunchCooperativeKernel`,
/// `cudaLaunchKernelExC` (and `_ptsz`). Whether the runtime's launches also reach the
/// driver callbacks is not documented; with both, the outer call starts the session
/// and the inner one finds it in flight (unverified until the device run).
const RUNTIME_LAUNCHES: [CUpti_CallbackId; 6] = [211, 214, 269, 270, 430, 431];

/// Longest wait at the end of a window for a launch being profiled to return.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(2);

/// Most results held for the sender (it takes them every interval).
const MAX_PENDING: usize = 1024;

struct InFlight {
    thread: i32,
    correlation: u32,
    name: String,
    ordinal: u32,
    session: Session,
}

struct State {
    plan: Plan,
    profiler: RangeProfiler,
    /// Metric configurations by device ordinal (one chip each).
    configs: HashMap<u32, MetricConfig>,
    /// Range profilers enabled in this window, by context.
    contexts: Vec<(usize, ContextProfiler)>,
    in_flight: Option<InFlight>,
    results: Vec<KernelCounters>,
    subscriber: Option<CUpti_SubscriberHandle>,
    initialized: bool,
}

// SAFETY: the raw handles in State are opaque CUPTI tokens usable from any thread;
// every access goes through the mutex.
unsafe impl Send for State {}

static STATE: OnceLock<Mutex<State>> = OnceLock::new();
/// Launch callbacks may start profiling (a window is open and counters are wanted).
static OPEN: AtomicBool = AtomicBool::new(false);
/// A launch is being profiled: its exit callback must run even once `OPEN` is off.
static FLYING: AtomicBool = AtomicBool::new(false);
static IDLE: Condvar = Condvar::new();

thread_local! {
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn lock() -> Option<MutexGuard<'static, State>> {
    STATE
        .get()
        .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Prepares counters when `cap` is set (`POOLPROF_KERNEL_COUNTERS=1`): resolves the
/// range profiler in the libcupti at `cupti_path`. A CUPTI without it, or a driver
/// without `cuCtxGetDevice`, turns counters off with one line; sampling goes on.
pub fn init(cap: Option<usize>, cupti_path: &str) {
    let Some(cap) = cap else {
        return;
    };
    if !driver_has("cuCtxGetDevice") {
        return off("the CUDA driver lacks cuCtxGetDevice");
    }
    match RangeProfiler::load(cupti_path) {
        Ok(profiler) => {
            let _ = STATE.set(Mutex::new(State {
                plan: Plan::new(cap),
                profiler,
                configs: HashMap::new(),
                contexts: Vec::new(),
                in_flight: None,
                results: Vec::new(),
                subscriber: None,
                initialized: false,
            }));
        }
        Err(why) => off(&why),
    }
}

fn off(why: &str) {
    eprintln!("poolprof-inject: kernel counters off for this process: {why}");
}

fn driver_has(name: &str) -> bool {
    // SAFETY: the driver is loaded (it injected us); only the address is looked up.
    let present = unsafe { driver_sys::is_culib_present() };
    // SAFETY: as above.
    present && unsafe { driver_sys::culib().get::<*const ()>(name.as_bytes()) }.is_ok()
}

/// A window began (records on, no other client found): subscribes to launches while
/// counters are still wanted.
pub fn window_started() {
    let Some(mut state) = lock() else {
        return;
    };
    if state.plan.stopped().is_some() || state.subscriber.is_some() {
        return;
    }
    if let Err(why) = open(&mut state) {
        fail(&mut state, why);
        drop(close_window(state));
    }
}

fn open(state: &mut State) -> Result<(), String> {
    state.profiler.initialize().map_err(|e| e.to_string())?;
    state.initialized = true;
    let cupti = library::get().ok_or("CUPTI not loaded")?;
    let mut handle: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the callback is a plain extern "C" fn.
    let code = unsafe { (cupti.subscribe)(&mut handle, Some(on_launch), std::ptr::null_mut()) };
    match code {
        CUptiResult::CUPTI_SUCCESS => {}
        CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
            return Err("another profiler holds CUPTI".into())
        }
        code => return Err(format!("cuptiSubscribe failed: {code:?}")),
    }
    state.subscriber = Some(handle);
    let enable_callback = cupti
        .enable_callback
        .ok_or("CUPTI lacks cuptiEnableCallback")?;
    let driver = CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
    let runtime = CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API;
    let wanted = DRIVER_LAUNCHES
        .iter()
        .map(|id| (driver, *id))
        .chain(RUNTIME_LAUNCHES.iter().map(|id| (runtime, *id)));
    let mut enabled = 0;
    for (domain, cbid) in wanted {
        // SAFETY: a handle from cuptiSubscribe; an id this CUPTI lacks is refused.
        if unsafe { enable_callback(1, handle, domain, cbid) } == CUptiResult::CUPTI_SUCCESS {
            enabled += 1;
        }
    }
    if enabled == 0 {
        return Err("cuptiEnableCallback refused every launch callback".into());
    }
    OPEN.store(true, Ordering::Release);
    Ok(())
}

/// The window ends (before the library checks for other clients and detaches):
/// waits for a launch being profiled, disables the range profilers and unsubscribes.
pub fn window_ending() {
    let Some(state) = lock() else {
        return;
    };
    if state.subscriber.is_none() && !state.initialized {
        return;
    }
    let mut state = close_window(state);
    state.plan.window_ended();
}

/// Stops counters for good (another client took CUPTI over, or the process exits).
pub fn close() {
    let Some(state) = lock() else {
        return;
    };
    let mut state = close_window(state);
    state.plan.stop(Stopped::Idle);
    for (_, config) in std::mem::take(&mut state.configs) {
        state.profiler.release(config);
    }
}

fn close_window(mut state: MutexGuard<'static, State>) -> MutexGuard<'static, State> {
    OPEN.store(false, Ordering::Release);
    let deadline = Instant::now() + IN_FLIGHT_WAIT;
    while state.in_flight.is_some() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            // The launch never reached its exit callback: leave its session
            // (stopping it from here could race with the replay) and stop counters.
            state.in_flight = None;
            FLYING.store(false, Ordering::Release);
            fail(
                &mut state,
                "a profiled launch did not return within 2 s".into(),
            );
            break;
        }
        state = IDLE
            .wait_timeout(state, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    for (_, profiler) in std::mem::take(&mut state.contexts) {
        let _ = state.profiler.disable(profiler);
    }
    if let (Some(handle), Some(cupti)) = (state.subscriber.take(), library::get()) {
        // SAFETY: our handle from cuptiSubscribe, unsubscribed once.
        let _ = unsafe { (cupti.unsubscribe)(handle) };
    }
    if std::mem::take(&mut state.initialized) {
        let _ = state.profiler.deinitialize();
    }
    state
}

/// Stops counters for the process after an error, with one line on stderr.
fn fail(state: &mut State, why: String) {
    if state.plan.stopped().is_none() {
        off(&why);
    }
    state.plan.stop(Stopped::Failed(why));
    OPEN.store(false, Ordering::Release);
}

/// Counters profiled since the last call, for the sender (UUIDs not yet filled in).
pub fn take() -> Vec<KernelCounters> {
    lock()
        .map(|mut s| std::mem::take(&mut s.results))
        .unwrap_or_default()
}

/// The launch callback: on entry to the first launch of a kernel the plan wants,
/// starts a one-kernel session; on exit of that same call, evaluates it. Never
/// unwinds into CUPTI.
unsafe extern "C" fn on_launch(
    _userdata: *mut c_void,
    domain: CUpti_CallbackDomain,
    _cbid: CUpti_CallbackId,
    data: *const c_void,
) {
    let api = matches!(
        domain,
        CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API
            | CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API
    );
    if !api || data.is_null() {
        return;
    }
    // SAFETY: for the driver and runtime API domains CUPTI passes a CUpti_CallbackData.
    let data = unsafe { &*data.cast::<CUpti_CallbackData>() };
    let site = data.callbackSite;
    let wanted = match site {
        CUpti_ApiCallbackSite::CUPTI_API_ENTER => OPEN.load(Ordering::Acquire),
        CUpti_ApiCallbackSite::CUPTI_API_EXIT => FLYING.load(Ordering::Acquire),
        _ => false,
    };
    // A launch CUPTI makes while this thread is in here (none is expected) must not
    // take the state lock a second time.
    if !wanted || IN_CALLBACK.with(|c| c.replace(true)) {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        if site == CUpti_ApiCallbackSite::CUPTI_API_ENTER {
            launch_entered(data)
        } else {
            launch_returned(data)
        }
    });
    IN_CALLBACK.with(|c| c.set(false));
}

fn launch_entered(data: &CUpti_CallbackData) {
    // No context yet (a runtime call that will create one): a later launch serves.
    if data.symbolName.is_null() || data.context.is_null() {
        return;
    }
    // SAFETY: CUPTI's NUL-terminated kernel name, valid during the callback.
    let Ok(name) = unsafe { CStr::from_ptr(data.symbolName) }.to_str() else {
        return;
    };
    // Never wait on the library's threads before a launch: a busy lock skips it.
    let Some(Ok(mut state)) = STATE.get().map(Mutex::try_lock) else {
        return;
    };
    if state.in_flight.is_some() || !OPEN.load(Ordering::Acquire) || !state.plan.wants(name) {
        return;
    }
    state.plan.trying(name);
    match start_session(&mut state, data.context) {
        Ok((ordinal, session)) => {
            state.in_flight = Some(InFlight {
                // SAFETY: gettid has no preconditions.
                thread: unsafe { libc::gettid() },
                correlation: data.correlationId,
                name: name.to_string(),
                ordinal,
                session,
            });
            FLYING.store(true, Ordering::Release);
        }
        Err(why) => fail(&mut state, why),
    }
}

fn start_session(state: &mut State, context: CUcontext) -> Result<(u32, Session), String> {
    let ordinal = current_device().ok_or("cuCtxGetDevice failed in a launch")?;
    if !state.configs.contains_key(&ordinal) {
        let chip = state
            .profiler
            .chip_name(ordinal as usize)
            .map_err(|e| e.to_string())?;
        let config = state
            .profiler
            .configure(&chip, context)
            .map_err(|e| e.to_string())?;
        state.configs.insert(ordinal, config);
    }
    let key = context as usize;
    let profiler = match state.contexts.iter().find(|(c, _)| *c == key) {
        Some((_, p)) => *p,
        None => {
            let p = state.profiler.enable(context).map_err(|e| e.to_string())?;
            state.contexts.push((key, p));
            p
        }
    };
    let config = &state.configs[&ordinal];
    let session = state
        .profiler
        .start(profiler, config)
        .map_err(|e| e.to_string())?;
    Ok((ordinal, session))
}

fn launch_returned(data: &CUpti_CallbackData) {
    let Some(mut state) = lock() else {
        return;
    };
    // SAFETY: gettid has no preconditions.
    let thread = unsafe { libc::gettid() };
    let ours = state
        .in_flight
        .as_ref()
        .is_some_and(|f| f.thread == thread && f.correlation == data.correlationId);
    if !ours {
        return;
    }
    let flight = state.in_flight.take().expect("checked above");
    FLYING.store(false, Ordering::Release);
    let config = &state.configs[&flight.ordinal];
    let measures = config.measures.clone();
    match state.profiler.finish(flight.session, config) {
        Ok(Some(values)) => {
            let e = metrics::evaluate(&measures, &values);
            if state.results.len() < MAX_PENDING {
                state.results.push(KernelCounters {
                    device: DeviceId {
                        ordinal: flight.ordinal,
                        uuid: None,
                    },
                    name: flight.name,
                    flops: e.flops,
                    dram_bytes: e.dram_bytes,
                    duration_ns: e.duration_ns,
                });
            }
            state.plan.profiled();
        }
        Ok(None) => {}
        Err(e) => fail(&mut state, e.to_string()),
    }
    IDLE.notify_all();
}

/// The CUDA device of the calling thread's current context (the launching one). A
/// `CUdevice` is its ordinal.
fn current_device() -> Option<u32> {
    let mut device = 0;
    // SAFETY: `init` checked the symbol; a valid out-pointer.
    unsafe { driver_sys::cuCtxGetDevice(&mut device) }
        .result()
        .ok()?;
    u32::try_from(device).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test: the state is process-wide. Without the variable, or without a
    /// CUPTI that has the range profiler, nothing is set up and every hook the duty
    /// cycle, the sender and the exit handler call is a no-op.
    #[test]
    fn without_counters_every_hook_does_nothing() {
        init(None, "/nonexistent/libcupti.so");
        assert!(STATE.get().is_none());
        init(Some(64), "/nonexistent/libcupti.so");
        assert!(STATE.get().is_none(), "no range profiler: counters off");
        window_started();
        assert!(!OPEN.load(Ordering::Acquire));
        window_ending();
        close();
        assert!(take().is_empty());
        // A launch callback that CUPTI would deliver changes nothing either.
        // SAFETY: plain data; all-zero is a valid record (ENTER, null pointers).
        let data: CUpti_CallbackData = unsafe { std::mem::zeroed() };
        let driver = CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
        // SAFETY: a valid (zeroed) callback record, as CUPTI would pass it.
        unsafe {
            on_launch(
                std::ptr::null_mut(),
                driver,
                307,
                (&data as *const CUpti_CallbackData).cast(),
            )
        };
        assert!(take().is_empty());
    }
}
