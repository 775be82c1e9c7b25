//! CPU time of the calling thread, which `poolprof_exporter_collector_cpu_seconds_total`
//! adds up per collector: wall time alone cannot tell a collector that burns CPU from
//! one that waits on the driver.

/// Seconds of CPU the calling thread has used, or `None` where the clock is missing.
pub fn thread_cpu_seconds() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec that we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_work_done_on_this_thread() {
        let before = thread_cpu_seconds().unwrap();
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed().as_millis() < 30 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let after = thread_cpu_seconds().unwrap();
        assert!(after - before >= 0.010, "{before} -> {after}");
    }
}
