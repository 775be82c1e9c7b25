//! Detaching CUPTI while a duty cycle is off, and attaching it again.
//!
//! Why: once kernel records have been enabled, disabling them does not give the
//! application its speed back. On the H100 a loop of tiny kernels ran 10% slower with
//! records on 5% of the time than with them never enabled, nearly as slow as with
//! every launch traced (`docs/validation/kernels-h100.md`). Only `cuptiFinalize`
//! removes CUPTI from the launch path, and CUPTI asks that it be called at the exit of
//! a CUDA API call on an application thread, so the library subscribes to driver API
//! callbacks just long enough for the next call to finalize CUPTI there.
//!
//! Every CUPTI call the library's own threads make goes through [`with_attached`], so
//! none races with the finalization or re-attaches CUPTI by accident while it is
//! detached. The callback never waits for that lock (it only tries it), so an
//! application thread is never blocked by the library's threads.

use cudarc::cupti::sys::{
    self as cupti_sys, CUptiResult, CUpti_ApiCallbackSite, CUpti_CallbackData,
    CUpti_CallbackDomain, CUpti_CallbackId, CUpti_SubscriberHandle,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The symbols detaching needs besides those the activity API does.
pub const SYMBOLS: [&str; 4] = [
    "cuptiSubscribe",
    "cuptiUnsubscribe",
    "cuptiEnableDomain",
    "cuptiFinalize",
];

/// Where CUPTI stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachment {
    /// Attached: the library's threads may call CUPTI.
    Attached,
    /// Subscribed; the next driver API exit finalizes CUPTI.
    Finalizing(Subscriber),
    /// Finalized: nothing of CUPTI is on the application's launch path.
    Detached,
}

/// A CUPTI subscriber handle (a pointer CUPTI owns; only passed back to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscriber(CUpti_SubscriberHandle);

// SAFETY: the handle is an opaque token CUPTI accepts from any thread.
unsafe impl Send for Subscriber {}

static STATE: Mutex<Attachment> = Mutex::new(Attachment::Attached);
static CHANGED: Condvar = Condvar::new();
/// Set while a finalization is wanted, so the callback can skip the lock otherwise.
static WANTED: AtomicBool = AtomicBool::new(false);

fn state() -> MutexGuard<'static, Attachment> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `call` (a CUPTI call of the library's own threads) unless CUPTI is detached
/// or being finalized; `None` when it did not run.
pub fn with_attached<R>(call: impl FnOnce() -> R) -> Option<R> {
    let guard = state();
    (*guard == Attachment::Attached).then(call)
}

/// Asks the next driver API call of the application to finalize CUPTI and waits up to
/// `wait` for it. Returns whether CUPTI is detached (an idle application may make no
/// call in time: the finalization then stays pending until [`attach`] cancels it).
/// Records must be off and flushed before.
pub fn detach(wait: Duration) -> Result<bool, CUptiResult> {
    {
        let mut guard = state();
        if *guard != Attachment::Attached {
            return Ok(*guard == Attachment::Detached);
        }
        let subscriber = subscribe()?;
        *guard = Attachment::Finalizing(subscriber);
        WANTED.store(true, Ordering::Release);
    }
    let deadline = Instant::now() + wait;
    let mut guard = state();
    while matches!(*guard, Attachment::Finalizing(_)) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        guard = CHANGED
            .wait_timeout(guard, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Ok(*guard == Attachment::Detached)
}

/// Makes CUPTI usable again: cancels a pending finalization, or runs `reattach` (which
/// registers the buffer callbacks again) after a finished one. Returns whether CUPTI
/// is attached.
pub fn attach(reattach: impl FnOnce() -> bool) -> bool {
    let mut guard = state();
    match *guard {
        Attachment::Attached => true,
        Attachment::Finalizing(subscriber) => {
            WANTED.store(false, Ordering::Release);
            // SAFETY: a handle from cuptiSubscribe that CUPTI has not finalized (the
            // callback finalizes only under this lock, which we hold).
            let _ = unsafe { cupti_sys::cuptiUnsubscribe(subscriber.0) };
            *guard = Attachment::Attached;
            true
        }
        Attachment::Detached => {
            if reattach() {
                *guard = Attachment::Attached;
            }
            *guard == Attachment::Attached
        }
    }
}

fn subscribe() -> Result<Subscriber, CUptiResult> {
    let mut handle: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: `handle` is a valid out-pointer; the callback is a plain extern "C" fn
    // that ignores its user data.
    let subscribed =
        unsafe { cupti_sys::cuptiSubscribe(&mut handle, Some(on_api), std::ptr::null_mut()) };
    if subscribed != CUptiResult::CUPTI_SUCCESS {
        return Err(subscribed);
    }
    // SAFETY: the handle was just returned by cuptiSubscribe.
    let enabled = unsafe {
        cupti_sys::cuptiEnableDomain(1, handle, CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API)
    };
    if enabled != CUptiResult::CUPTI_SUCCESS {
        // SAFETY: as above.
        let _ = unsafe { cupti_sys::cuptiUnsubscribe(handle) };
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
        if matches!(*guard, Attachment::Finalizing(_)) {
            WANTED.store(false, Ordering::Release);
            // SAFETY: called at an API exit site, as CUPTI requires; records are off
            // and flushed, and no thread of ours calls CUPTI while we hold the lock.
            let _ = unsafe { cupti_sys::cuptiFinalize() };
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
    fn library_calls_run_only_while_attached_and_attaching_registers_again() {
        assert_eq!(with_attached(|| 7), Some(7));
        assert!(attach(|| panic!("attached already: nothing to register")));

        *state() = Attachment::Detached;
        assert_eq!(with_attached(|| 7), None, "no CUPTI call while detached");
        assert!(!attach(|| false), "a failed registration stays detached");
        assert_eq!(*state(), Attachment::Detached);
        assert!(attach(|| true));
        assert_eq!(*state(), Attachment::Attached);
        assert_eq!(with_attached(|| 8), Some(8));
    }
}
