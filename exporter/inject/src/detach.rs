//! Detaching CUPTI while a duty cycle is off, and attaching it again.
//!
//! Why: once kernel records have been enabled, disabling them does not give the
//! application its speed back. On the H100 a loop of tiny kernels ran 10% slower with
//! records on 5% of the time than with them never enabled, nearly as slow as with
//! every launch traced (`docs/validation/kernels-h100.md`). Only `cuptiFinalize`
//! removes CUPTI from the launch path, and CUPTI asks that it be called at the exit of
//! a CUDA API call, so the library subscribes to driver API callbacks just long enough
//! for the next call to finalize CUPTI there, and makes that call itself (an
//! application waiting on something else would otherwise leave it pending, and resume
//! with CUPTI attached).
//!
//! Every CUPTI call the library's own threads make goes through [`with_attached`], so
//! none races with the finalization or re-attaches CUPTI by accident while it is
//! detached. The callback never waits for that lock (it only tries it), so an
//! application thread is never blocked by the library's threads.
//!
//! CUPTI serves one subscriber, and a profiler started later in the process (the
//! PyTorch profiler subscribes when it first starts) must find CUPTI free: the library
//! holds a subscription only while a finalization is pending, for at most
//! [`detach`]'s wait, and checks before each window ([`attach`]) and at its end
//! ([`check_alone`]) that no other client subscribed. Once one has, the library steps
//! aside for good ([`Attachment::Aside`]) and makes no CUPTI call again.

use crate::cupti::library;
use cudarc::cupti::sys::{
    CUptiResult, CUpti_ApiCallbackSite, CUpti_CallbackData, CUpti_CallbackDomain, CUpti_CallbackId,
    CUpti_SubscriberHandle,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where CUPTI stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachment {
    /// Attached: the library's threads may call CUPTI.
    Attached,
    /// Subscribed; the next driver API exit finalizes CUPTI.
    Finalizing(Subscriber),
    /// Finalized: nothing of CUPTI is on the application's launch path.
    Detached,
    /// Another CUPTI client subscribed: the library makes no CUPTI call again.
    Aside,
}

/// Another CUPTI client (a profiler) holds CUPTI's subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("another CUPTI client is active (a profiler such as Nsight or torch.profiler)")]
pub struct OtherClient;

/// A CUPTI subscriber handle (a pointer CUPTI owns; only passed back to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscriber(CUpti_SubscriberHandle);

// SAFETY: the handle is an opaque token CUPTI accepts from any thread.
unsafe impl Send for Subscriber {}

static STATE: Mutex<Attachment> = Mutex::new(Attachment::Attached);
static CHANGED: Condvar = Condvar::new();
/// Set while a finalization is wanted, so the callback can skip the lock otherwise.
static WANTED: AtomicBool = AtomicBool::new(false);
/// What the last `cuptiFinalize` returned (`u32::MAX` before the first), for the
/// window log.
static FINALIZED: AtomicU32 = AtomicU32::new(u32::MAX);

/// The thread (kernel tid) that ran the last `cuptiFinalize`, for the window log.
static FINALIZER: AtomicI32 = AtomicI32::new(0);

/// The result code of the last `cuptiFinalize` (`u32::MAX` if none ran yet) and the
/// thread that ran it.
pub fn last_finalize() -> (u32, i32) {
    (
        FINALIZED.load(Ordering::Relaxed),
        FINALIZER.load(Ordering::Relaxed),
    )
}

fn state() -> MutexGuard<'static, Attachment> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `call` (a CUPTI call of the library's own threads) unless CUPTI is detached
/// or being finalized; `None` when it did not run.
pub fn with_attached<R>(call: impl FnOnce() -> R) -> Option<R> {
    let guard = state();
    (*guard == Attachment::Attached).then(call)
}

/// Asks the next driver API call to finalize CUPTI, makes one itself (`driver_call`,
/// on this thread, so an idle application is detached at once too), and waits up to
/// `wait` for it. Returns whether CUPTI is detached. If no call finalized it in time,
/// the finalization is cancelled (CUPTI stays attached, records off) rather than left
/// pending, so the subscription it needs never keeps a profiler from subscribing for
/// longer than `wait`. Records must be off and flushed before.
pub fn detach(wait: Duration, driver_call: impl FnOnce()) -> Result<bool, CUptiResult> {
    {
        let mut guard = state();
        if *guard != Attachment::Attached {
            return Ok(*guard == Attachment::Detached);
        }
        let subscriber = subscribe()?;
        *guard = Attachment::Finalizing(subscriber);
        WANTED.store(true, Ordering::Release);
    }
    // Its exit callback finalizes CUPTI here unless an application thread was first.
    driver_call();
    let deadline = Instant::now() + wait;
    let mut guard = state();
    while matches!(*guard, Attachment::Finalizing(_)) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            cancel_finalization(&mut guard);
            break;
        }
        guard = CHANGED
            .wait_timeout(guard, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Ok(*guard == Attachment::Detached)
}

/// Makes CUPTI usable for a window: cancels a pending finalization, checks with
/// `alone` that no other client subscribed (stepping aside for good if one did), and
/// after a finished finalization runs `reattach` (which registers the buffer
/// callbacks again). Returns whether CUPTI is attached.
pub fn attach(
    alone: impl FnOnce() -> bool,
    reattach: impl FnOnce() -> bool,
) -> Result<bool, OtherClient> {
    let mut guard = state();
    cancel_finalization(&mut guard);
    if *guard == Attachment::Aside || !alone() {
        *guard = Attachment::Aside;
        return Err(OtherClient);
    }
    if *guard == Attachment::Detached && reattach() {
        *guard = Attachment::Attached;
    }
    Ok(*guard == Attachment::Attached)
}

/// Checks with `alone`, while CUPTI is attached, that no other client subscribed;
/// if one did, the library steps aside for good. Detached, nothing is asked of CUPTI
/// (asking would attach it again): [`attach`] checks before the next window.
pub fn check_alone(alone: impl FnOnce() -> bool) -> Result<(), OtherClient> {
    let mut guard = state();
    match *guard {
        Attachment::Aside => Err(OtherClient),
        Attachment::Attached if !alone() => {
            *guard = Attachment::Aside;
            Err(OtherClient)
        }
        _ => Ok(()),
    }
}

/// Whether no other CUPTI client is subscribed: subscribing (with no callback domain
/// enabled) succeeds and is undone at once. CUPTI answers
/// `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED` while another client holds its
/// subscription; any other failure is not taken for a client.
pub fn no_other_subscriber() -> bool {
    let Some(cupti) = library::get() else {
        return true;
    };
    let mut handle: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: `handle` is a valid out-pointer; no domain is enabled, so the callback
    // is never called.
    let subscribed = unsafe { (cupti.subscribe)(&mut handle, Some(on_api), std::ptr::null_mut()) };
    match subscribed {
        CUptiResult::CUPTI_SUCCESS => {
            // SAFETY: the handle was just returned by cuptiSubscribe.
            let _ = unsafe { (cupti.unsubscribe)(handle) };
            true
        }
        CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => false,
        _ => true,
    }
}

/// Unsubscribes a pending finalization, leaving CUPTI attached.
fn cancel_finalization(guard: &mut Attachment) {
    if let Attachment::Finalizing(subscriber) = *guard {
        WANTED.store(false, Ordering::Release);
        if let Some(cupti) = library::get() {
            // SAFETY: a handle from cuptiSubscribe that CUPTI has not finalized (the
            // callback finalizes only under the lock, which the caller holds).
            let _ = unsafe { (cupti.unsubscribe)(subscriber.0) };
        }
        *guard = Attachment::Attached;
    }
}

fn subscribe() -> Result<Subscriber, CUptiResult> {
    let cupti = library::get().ok_or(CUptiResult::CUPTI_ERROR_NOT_INITIALIZED)?;
    let mut handle: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: `handle` is a valid out-pointer; the callback is a plain extern "C" fn
    // that ignores its user data.
    let subscribed = unsafe { (cupti.subscribe)(&mut handle, Some(on_api), std::ptr::null_mut()) };
    if subscribed != CUptiResult::CUPTI_SUCCESS {
        return Err(subscribed);
    }
    let driver_api = CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
    // SAFETY: the handle was just returned by cuptiSubscribe.
    let enabled = unsafe { (cupti.enable_domain)(1, handle, driver_api) };
    if enabled != CUptiResult::CUPTI_SUCCESS {
        // SAFETY: as above.
        let _ = unsafe { (cupti.unsubscribe)(handle) };
        return Err(enabled);
    }
    Ok(Subscriber(handle))
}

/// The driver API callback: at the exit of a call, finalizes CUPTI when that is
/// wanted and the lock is free (otherwise a later call does it).
unsafe extern "C" fn on_api(
    _userdata: *mut c_void,
    domain: CUpti_CallbackDomain,
    _cbid: CUpti_CallbackId,
    data: *const c_void,
) {
    if domain != CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API
        || data.is_null()
        || !WANTED.load(Ordering::Acquire)
    {
        return;
    }
    // SAFETY: for the driver API domain CUPTI passes a CUpti_CallbackData.
    let site = unsafe { (*data.cast::<CUpti_CallbackData>()).callbackSite };
    if site != CUpti_ApiCallbackSite::CUPTI_API_EXIT {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let Ok(mut guard) = STATE.try_lock() else {
            return;
        };
        if let (Attachment::Finalizing(_), Some(cupti)) = (*guard, library::get()) {
            WANTED.store(false, Ordering::Release);
            // SAFETY: called at an API exit site, as CUPTI requires; records are off
            // and flushed, and no thread of ours calls CUPTI while we hold the lock.
            let result = unsafe { (cupti.finalize)() };
            FINALIZED.store(result as u32, Ordering::Relaxed);
            // SAFETY: gettid has no preconditions.
            FINALIZER.store(unsafe { libc::gettid() }, Ordering::Relaxed);
            *guard = Attachment::Detached;
            CHANGED.notify_all();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test: the state is process-wide.
    #[test]
    fn library_calls_run_only_while_attached_and_another_client_sets_it_aside() {
        let alone = || true;
        assert_eq!(with_attached(|| 7), Some(7));
        let nothing_to_register = || panic!("attached already: nothing to register");
        assert_eq!(attach(alone, nothing_to_register), Ok(true));
        assert_eq!(check_alone(alone), Ok(()));

        *state() = Attachment::Detached;
        assert_eq!(with_attached(|| 7), None, "no CUPTI call while detached");
        let never_asked = || panic!("detached: asking CUPTI would attach it");
        assert_eq!(check_alone(never_asked), Ok(()));
        assert_eq!(attach(alone, || false), Ok(false), "a failed registration");
        assert_eq!(*state(), Attachment::Detached);
        assert_eq!(attach(alone, || true), Ok(true));
        assert_eq!(*state(), Attachment::Attached);
        assert_eq!(with_attached(|| 8), Some(8));

        // A profiler subscribed while the library was detached: it never registers
        // its callbacks over the profiler's, and never calls CUPTI again.
        *state() = Attachment::Detached;
        let never_registered = || panic!("registered over another client");
        assert_eq!(attach(|| false, never_registered), Err(OtherClient));
        assert_eq!(with_attached(|| 9), None);
        assert_eq!(
            attach(alone, never_registered),
            Err(OtherClient),
            "for good"
        );
        assert_eq!(check_alone(alone), Err(OtherClient));
        let never_called = || panic!("aside: no driver call to finalize with");
        assert_eq!(detach(Duration::ZERO, never_called), Ok(false));

        // One subscribed during a window: found at its end, before records go off.
        *state() = Attachment::Attached;
        assert_eq!(check_alone(|| false), Err(OtherClient));
        assert_eq!(*state(), Attachment::Aside);
        *state() = Attachment::Attached;
    }
}
