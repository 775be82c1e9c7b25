//! `nvml-floor`: the least an NVML client must do — `nvmlInit`, a handle for every
//! GPU — and then nothing, so bench/exporter/run.sh can measure what NVML alone
//! costs a bare process (CPU and resident memory) side by side with the exporter.
//! Uses nvml-wrapper, as poolprof-exporter does, so both load NVML the same way.
//!
//! usage: nvml-floor [SECONDS]   (default: until killed)
//! Exit codes: 0 done, 1 NVML could not start or a GPU handle failed, 2 bad arguments.

use nvml_wrapper::Nvml;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let seconds = match std::env::args().nth(1).map(|s| s.parse::<u64>()) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(_)) => {
            eprintln!("nvml-floor: the argument must be a whole number of seconds to stay up");
            return ExitCode::from(2);
        }
    };
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("nvml-floor: cannot start NVML ({e}): needs an NVIDIA driver and GPU");
            return ExitCode::from(1);
        }
    };
    let count = match nvml.device_count() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("nvml-floor: cannot count GPUs: {e}");
            return ExitCode::from(1);
        }
    };
    let mut handles = Vec::with_capacity(count as usize);
    for index in 0..count {
        match nvml.device_by_index(index) {
            Ok(d) => handles.push(d),
            Err(e) => {
                eprintln!("nvml-floor: cannot open GPU {index}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    println!(
        "nvml-floor: NVML started, {} GPU handle(s); idle",
        handles.len()
    );
    match seconds {
        Some(s) => std::thread::sleep(Duration::from_secs(s)),
        None => loop {
            std::thread::park();
        },
    }
    drop(handles);
    ExitCode::SUCCESS
}
