//! NVML's list queries (running processes, process-utilization samples) in one
//! driver call each. nvml-wrapper first asks for the count with a null buffer and
//! then fills one: two round trips to the driver. For the process list each costs
//! the full query (0.14 ms of CPU for both on an H100, 0.07 ms for one; the
//! utilization samples cost 2.1 ms either way: their count is cheap;
//! `docs/validation/cost/h100-collector-cpu.md`). Here a buffer sized by the last
//! answer is passed at once and grown only when NVML says it was too small.

use nvml_wrapper::error::{nvml_sym, NvmlError};
use nvml_wrapper::struct_wrappers::device::{ProcessInfo, ProcessUtilizationSample};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlProcessInfo_t, nvmlProcessUtilizationSample_t,
    nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE, nvmlReturn_enum_NVML_SUCCESS, nvmlReturn_t,
};
use std::sync::atomic::{AtomicU32, Ordering};

/// Entries a first call makes room for.
const FIRST_CAPACITY: u32 = 32;
/// Most entries ever asked for: far above any real GPU's processes or buffered
/// samples, so a driver answering nonsense cannot make us allocate without bound.
const MAX_CAPACITY: u32 = 1 << 16;
/// Calls one read may make while the list grows between them.
const ATTEMPTS: usize = 3;

/// A list query's buffer size, remembered between reads.
#[derive(Debug)]
pub struct ListCapacity(AtomicU32);

impl Default for ListCapacity {
    fn default() -> Self {
        Self(AtomicU32::new(FIRST_CAPACITY))
    }
}

impl ListCapacity {
    /// Runs `call(buffer, count)` with room for the remembered number of entries,
    /// growing the buffer when NVML answers that it was too small, and returns the
    /// entries NVML wrote.
    fn fill<T: Copy>(
        &self,
        zero: T,
        mut call: impl FnMut(*mut T, &mut u32) -> nvmlReturn_t,
    ) -> Result<Vec<T>, NvmlError> {
        let mut capacity = self.0.load(Ordering::Relaxed).clamp(1, MAX_CAPACITY);
        for _ in 0..ATTEMPTS {
            let mut buffer = vec![zero; capacity as usize];
            let mut count = capacity;
            let status = call(buffer.as_mut_ptr(), &mut count);
            if status == nvmlReturn_enum_NVML_SUCCESS {
                buffer.truncate(count.min(capacity) as usize);
                // Room for the list to double before the next read needs two calls.
                let next = (2 * count).clamp(FIRST_CAPACITY, MAX_CAPACITY);
                self.0.store(next.max(capacity / 2), Ordering::Relaxed);
                return Ok(buffer);
            }
            if status != nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE || capacity == MAX_CAPACITY {
                return Err(NvmlError::from(status));
            }
            capacity = count.max(2 * capacity).saturating_add(8).min(MAX_CAPACITY);
        }
        Err(NvmlError::InsufficientSize(None))
    }
}

/// The compute processes running on `device` (NVML's v3 query).
pub fn compute_processes(
    nvml: &Nvml,
    device: &Device<'_>,
    capacity: &ListCapacity,
) -> Result<Vec<ProcessInfo>, NvmlError> {
    let get = nvml_sym(nvml.lib().nvmlDeviceGetComputeRunningProcesses_v3.as_ref())?;
    // SAFETY: a plain C struct of integers, for which all zeroes is a valid value.
    let zero: nvmlProcessInfo_t = unsafe { std::mem::zeroed() };
    let infos = capacity.fill(zero, |buffer, count| {
        // SAFETY: the handle comes from this library; `buffer` has room for `*count`
        // entries and both outlive the call.
        unsafe { get(device.handle(), count, buffer) }
    })?;
    Ok(infos.into_iter().map(ProcessInfo::from).collect())
}

/// The per-process utilization samples newer than `since` (µs; 0 for all buffered).
/// NVML answers NotFound when there are none.
pub fn process_utilization(
    nvml: &Nvml,
    device: &Device<'_>,
    since: u64,
    capacity: &ListCapacity,
) -> Result<Vec<ProcessUtilizationSample>, NvmlError> {
    let get = nvml_sym(nvml.lib().nvmlDeviceGetProcessUtilization.as_ref())?;
    // SAFETY: a plain C struct of integers, for which all zeroes is a valid value.
    let zero: nvmlProcessUtilizationSample_t = unsafe { std::mem::zeroed() };
    let samples = capacity.fill(zero, |buffer, count| {
        // SAFETY: as above.
        unsafe { get(device.handle(), buffer, count, since) }
    })?;
    Ok(samples
        .into_iter()
        .map(ProcessUtilizationSample::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_wrapper_sys::bindings::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;

    /// A fake list query over `entries`: NVML's contract for a caller's buffer.
    fn query(entries: &[u32]) -> impl FnMut(*mut u32, &mut u32) -> nvmlReturn_t + '_ {
        move |buffer, count| {
            let n = entries.len() as u32;
            if *count < n {
                *count = n;
                return nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
            }
            for (i, e) in entries.iter().enumerate() {
                // SAFETY: the caller's buffer holds `*count` >= n entries.
                unsafe { *buffer.add(i) = *e };
            }
            *count = n;
            nvmlReturn_enum_NVML_SUCCESS
        }
    }

    #[test]
    fn one_call_when_the_list_fits() {
        let capacity = ListCapacity::default();
        let mut calls = 0;
        let mut inner = query(&[7, 8, 9]);
        let got = capacity
            .fill(0u32, |b, c| {
                calls += 1;
                inner(b, c)
            })
            .unwrap();
        assert_eq!(got, vec![7, 8, 9]);
        assert_eq!(calls, 1);
    }

    #[test]
    fn a_longer_list_grows_the_buffer_and_is_remembered() {
        let capacity = ListCapacity::default();
        let long: Vec<u32> = (0..100).collect();
        let mut calls = 0;
        let mut inner = query(&long);
        let got = capacity
            .fill(0u32, |b, c| {
                calls += 1;
                inner(b, c)
            })
            .unwrap();
        assert_eq!(got, long);
        assert_eq!(calls, 2, "one call too small, one that fits");
        let mut again = 0;
        let mut inner = query(&long);
        capacity
            .fill(0u32, |b, c| {
                again += 1;
                inner(b, c)
            })
            .unwrap();
        assert_eq!(again, 1, "the next read makes room at once");
    }

    #[test]
    fn an_empty_list_is_empty_and_errors_pass_through() {
        let capacity = ListCapacity::default();
        assert_eq!(capacity.fill(0u32, query(&[])).unwrap(), Vec::<u32>::new());
        let lost = capacity.fill(0u32, |_, _| nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST);
        assert!(matches!(lost, Err(NvmlError::GpuLost)), "{lost:?}");
    }

    #[test]
    fn a_driver_that_always_wants_more_is_bounded() {
        let capacity = ListCapacity::default();
        let mut calls = 0;
        let greedy = capacity.fill(0u32, |_, count| {
            calls += 1;
            *count = u32::MAX;
            nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE
        });
        assert!(greedy.is_err());
        assert!(calls <= ATTEMPTS);
    }
}
