//! Xid errors: one NVML event set for every GPU, waited on by a background
//! thread that hands `(uuid, xid)` to the collection loop through a bounded queue.

use crate::backend::XidEvent;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, EventSet, Nvml};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Events kept between two collections; beyond that the newest are dropped
/// (a storm of Xids is already visible from the ones kept).
const QUEUE_CAPACITY: usize = 1024;
/// How long one wait blocks, which bounds how long shutdown takes. Each wait costs
/// about 47 µs of CPU on an H100 (0.094 ms/s at 500 ms; run 1 of
/// `docs/validation/cost/h100-collector-cpu.md`), hence not shorter.
const WAIT_MS: u32 = 2000;

/// The running watcher. Dropping it stops the thread.
pub struct XidWatcher {
    events: Mutex<Receiver<XidEvent>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl XidWatcher {
    /// Registers every device that supports critical Xid events and starts the
    /// thread. Returns `None` (after logging why) when no device can be watched.
    pub fn start(nvml: &'static Nvml, devices: &[&Device<'static>]) -> Option<Self> {
        let set = match register_all(nvml, devices) {
            Ok(set) => set,
            Err(reason) => {
                tracing::warn!(%reason, "Xid events are not watched; poolprof_gpu_xid_errors_total stays absent");
                return None;
            }
        };
        let (tx, rx) = sync_channel(QUEUE_CAPACITY);
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("nvml-xid".into())
            .spawn(move || watch(set, tx, &thread_stop))
            .map_err(|e| tracing::warn!(error = %e, "cannot start the Xid thread"))
            .ok()?;
        Some(Self {
            events: Mutex::new(rx),
            stop,
            thread: Some(thread),
        })
    }

    /// Events since the last call, oldest first.
    pub fn drain(&self) -> Vec<XidEvent> {
        match self.events.lock() {
            Ok(rx) => rx.try_iter().collect(),
            Err(_) => Vec::new(),
        }
    }
}

impl Drop for XidWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One set with every device that supports critical Xid events registered.
/// A failed registration frees the set (NVML's rule), so the set is rebuilt with
/// the devices registered so far and the failing one is skipped.
fn register_all(
    nvml: &'static Nvml,
    devices: &[&Device<'static>],
) -> Result<EventSet<'static>, String> {
    let mut registered: Vec<&Device<'static>> = Vec::new();
    let mut set = nvml.create_event_set().map_err(|e| e.to_string())?;
    for &device in devices {
        let supported = device
            .supported_event_types()
            .is_ok_and(|t| t.contains(EventTypes::CRITICAL_XID_ERROR));
        if !supported {
            tracing::info!(gpu = ?device.index().ok(), "GPU does not report Xid events");
            continue;
        }
        match device.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(s) => {
                set = s;
                registered.push(device);
            }
            Err(e) => {
                tracing::warn!(gpu = ?device.index().ok(), error = %e, "cannot watch Xid events of this GPU");
                set = rebuild(nvml, &registered)?;
            }
        }
    }
    if registered.is_empty() {
        return Err("no GPU supports critical Xid events".into());
    }
    Ok(set)
}

fn rebuild(nvml: &'static Nvml, devices: &[&Device<'static>]) -> Result<EventSet<'static>, String> {
    let mut set = nvml.create_event_set().map_err(|e| e.to_string())?;
    for device in devices {
        set = device
            .register_events(EventTypes::CRITICAL_XID_ERROR, set)
            .map_err(|e| e.to_string())?;
    }
    Ok(set)
}

fn watch(set: EventSet<'static>, tx: SyncSender<XidEvent>, stop: &AtomicBool) {
    let mut full_logged = false;
    while !stop.load(Ordering::Relaxed) {
        let event = match set.wait(WAIT_MS) {
            Ok(event) => event,
            Err(NvmlError::Timeout) => continue,
            Err(e) => {
                // A lost GPU makes every wait fail at once; do not spin.
                tracing::debug!(error = %e, "Xid wait failed");
                std::thread::sleep(Duration::from_millis(u64::from(WAIT_MS)));
                continue;
            }
        };
        let Some(XidError::Value(xid)) = event.event_data else {
            continue;
        };
        let Ok(uuid) = event.device.uuid() else {
            tracing::warn!(xid, "Xid error on a GPU whose UUID cannot be read");
            continue;
        };
        tracing::warn!(%uuid, xid, "Xid error");
        match tx.try_send(XidEvent { uuid, xid }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) if !full_logged => {
                full_logged = true;
                tracing::warn!("Xid queue full; dropping events until the next collection");
            }
            Err(TrySendError::Full(_)) => {}
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
}
