//! `InitializeInjection`: the entry point CUDA calls when `CUDA_INJECTION64_PATH`
//! names this library.
//!
//! Whatever happens here, the application goes on: on any error the library writes
//! one line to stderr (`poolprof-inject: <why>, stepping aside`) and does nothing more.

use crate::config::Config;
use crate::cupti::{self, DutyThread};
use crate::sender::{self, Sender, SenderHandle};
use crate::tracing_state::{Tracing, TRACING};
use crate::wire::{DutyCycle, Hello};
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};
use std::time::Duration;

/// How long the exit handler waits for the last report.
pub const EXIT_FLUSH_TIMEOUT: Duration = Duration::from_millis(500);

/// How a process that never traces describes itself to the exporter: the protocol
/// has no "never", and the rarest sample it can carry reports no records the same
/// way.
const NEVER_ON_THE_WIRE: DutyCycle = DutyCycle::Sampled {
    trace_ms: 1,
    period_ms: 600_000,
};

static INIT: Once = Once::new();
/// The process that started the threads: a forked child inherits the state but not
/// the threads, and must not wait for them at exit.
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
static RUNNING: Mutex<Option<(SenderHandle, Option<DutyThread>)>> = Mutex::new(None);

/// Called by the CUDA driver during `cuInit` when `CUDA_INJECTION64_PATH` points at
/// this library. Always returns 1 (success): a failure here must not fail the
/// application's CUDA initialisation.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    INIT.call_once(|| match std::panic::catch_unwind(initialize) {
        Ok(Ok(())) => {}
        Ok(Err(why)) => step_aside(&why),
        Err(_) => step_aside("internal error during start"),
    });
    1
}

fn step_aside(why: &str) {
    TRACING.set(Tracing::Inactive);
    eprintln!("poolprof-inject: {why}, stepping aside");
}

fn initialize() -> Result<(), String> {
    let config = Config::from_env().map_err(|e| e.to_string())?;
    if !config.enabled {
        return Ok(());
    }
    let source = cupti::start(&config).map_err(|e| e.to_string())?;
    let kinds = source.kinds().to_vec();
    let hello = hello(&config);
    let sender = Sender::new(config.socket.clone(), hello, source, config.max_kernels);
    let handle = sender::spawn(sender, config.interval).map_err(|e| {
        cupti::stop();
        format!("cannot start the sender thread: {e}")
    })?;
    // Every record kind is on from `cupti::start` unless the duty cycle is "never"
    // (then none is); the duty-cycle thread takes the flag over from here.
    TRACING.set(match config.duty {
        Some(_) => Tracing::On,
        None => Tracing::Off,
    });
    let duty = config.duty.and_then(|duty| {
        cupti::spawn_duty_cycle(duty, &kinds, config.detach, config.window_log.as_deref())
    });
    *RUNNING.lock().unwrap_or_else(|p| p.into_inner()) = Some((handle, duty));
    OWNER_PID.store(std::process::id(), Ordering::Relaxed);
    // SAFETY: registering a plain extern "C" function; failure only loses the exit flush.
    if unsafe { libc::atexit(at_exit) } != 0 {
        eprintln!(
            "poolprof-inject: cannot register the exit handler; the last interval may be lost"
        );
    }
    Ok(())
}

fn hello(config: &Config) -> Hello {
    let process_name = std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    Hello {
        pid: std::process::id(),
        process_name,
        workload: config.workload.clone(),
        library_version: env!("CARGO_PKG_VERSION").to_string(),
        interval_ms: config.interval.as_millis() as u32,
        duty: config.duty.unwrap_or(NEVER_ON_THE_WIRE),
    }
}

/// Sends what is left before the process exits.
extern "C" fn at_exit() {
    if OWNER_PID.load(Ordering::Relaxed) != std::process::id() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let running = RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some((handle, duty)) = running {
            if let Some(duty) = duty {
                duty.stop();
            }
            crate::counters::close();
            let _ = handle.finish(EXIT_FLUSH_TIMEOUT);
            cupti::stop();
            TRACING.set(Tracing::Inactive);
        }
    });
}
