//! CUPTI's range profiler (`cupti_range_profiler.h`, `cupti_profiler_host.h`, CUDA
//! 12.6 and newer), resolved by name in the libcupti the library already uses.
//!
//! One launch is profiled as one auto range in kernel replay: CUPTI replays the kernel
//! inside its launch call as many times as the metrics need passes (saving and
//! restoring the memory it writes), so [`Session::start`] goes right before the launch
//! and [`Session::finish`] right after it, on the launching thread.

use super::metrics::{Measure, METRICS};
use cudarc::cupti::sys::{
    CUptiResult, CUpti_Device_GetChipName_Params, CUpti_MetricType, CUpti_ProfilerRange,
    CUpti_ProfilerReplayMode, CUpti_ProfilerType, CUpti_Profiler_DeInitialize_Params,
    CUpti_Profiler_GetCounterAvailability_Params, CUpti_Profiler_Host_ConfigAddMetrics_Params,
    CUpti_Profiler_Host_Deinitialize_Params, CUpti_Profiler_Host_EvaluateToGpuValues_Params,
    CUpti_Profiler_Host_GetBaseMetrics_Params, CUpti_Profiler_Host_GetConfigImageSize_Params,
    CUpti_Profiler_Host_GetConfigImage_Params, CUpti_Profiler_Host_Initialize_Params,
    CUpti_Profiler_Host_Object, CUpti_Profiler_Initialize_Params,
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params, CUpti_RangeProfiler_DecodeData_Params,
    CUpti_RangeProfiler_Disable_Params, CUpti_RangeProfiler_Enable_Params,
    CUpti_RangeProfiler_GetCounterDataInfo_Params, CUpti_RangeProfiler_GetCounterDataSize_Params,
    CUpti_RangeProfiler_Object, CUpti_RangeProfiler_SetConfig_Params,
    CUpti_RangeProfiler_Start_Params, CUpti_RangeProfiler_Stop_Params,
};
use cudarc::driver::sys::CUcontext;
use std::ffi::{c_char, CStr, CString};

/// A failed CUPTI call: which, and its result code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {code:?}")]
pub struct CallError {
    /// The function.
    pub call: &'static str,
    /// What it returned.
    pub code: CUptiResult,
}

/// Whether `POOLPROF_KERNEL_COUNTERS_TRACE` asks for the profiler's details on stderr.
/// Read once: the profiler calls this inside CUPTI's launch callbacks.
fn tracing() -> bool {
    static TRACING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACING.get_or_init(|| std::env::var_os("POOLPROF_KERNEL_COUNTERS_TRACE").is_some())
}

fn check(call: &'static str, code: CUptiResult) -> Result<(), CallError> {
    match code {
        CUptiResult::CUPTI_SUCCESS => Ok(()),
        code => Err(CallError { call, code }),
    }
}

/// Each params struct's `…_STRUCT_SIZE` from CUPTI's headers, under its type's name.
#[allow(non_upper_case_globals)]
mod struct_size {
    use cudarc::cupti::sys;
    pub const CUpti_Device_GetChipName_Params: u32 = sys::Device_GetChipName_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_DeInitialize_Params: u32 =
        sys::Profiler_DeInitialize_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_ConfigAddMetrics_Params: u32 =
        sys::Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_Deinitialize_Params: u32 =
        sys::Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_EvaluateToGpuValues_Params: u32 =
        sys::Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_GetConfigImageSize_Params: u32 =
        sys::Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_GetConfigImage_Params: u32 =
        sys::Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_Initialize_Params: u32 =
        sys::Profiler_Host_Initialize_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Initialize_Params: u32 = sys::Profiler_Initialize_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_CounterDataImage_Initialize_Params: u32 =
        sys::RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_DecodeData_Params: u32 =
        sys::RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_Disable_Params: u32 =
        sys::RangeProfiler_Disable_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_Enable_Params: u32 = sys::RangeProfiler_Enable_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_GetCounterDataInfo_Params: u32 =
        sys::RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_GetCounterDataSize_Params: u32 =
        sys::RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_SetConfig_Params: u32 =
        sys::RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_Start_Params: u32 = sys::RangeProfiler_Start_Params_STRUCT_SIZE;
    pub const CUpti_RangeProfiler_Stop_Params: u32 = sys::RangeProfiler_Stop_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_Host_GetBaseMetrics_Params: u32 =
        sys::Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
    pub const CUpti_Profiler_GetCounterAvailability_Params: u32 =
        sys::Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
}

/// A params struct zeroed, with its `structSize` set (CUPTI's versioning): the header's
/// `…_STRUCT_SIZE`, the end of the last field, not `size_of` with its trailing padding
/// (`cuptiRangeProfilerSetConfig` refuses 96 for its 90 with INVALID_PARAMETER).
macro_rules! params {
    ($ty:ident { $($field:ident : $value:expr),* $(,)? }) => {{
        // SAFETY: every CUPTI params struct is plain data for which all-zero is the
        // documented "unset" value (null pointers, zero sizes).
        let mut p: $ty = unsafe { std::mem::zeroed() };
        p.structSize = struct_size::$ty as usize;
        $(p.$field = $value;)*
        p
    }};
}

type Call<P> = unsafe extern "C" fn(*mut P) -> CUptiResult;

/// The range-profiler functions.
pub struct RangeProfiler {
    initialize: Call<CUpti_Profiler_Initialize_Params>,
    counter_availability: Call<CUpti_Profiler_GetCounterAvailability_Params>,
    base_metrics: Call<CUpti_Profiler_Host_GetBaseMetrics_Params>,
    deinitialize: Call<CUpti_Profiler_DeInitialize_Params>,
    chip_name: Call<CUpti_Device_GetChipName_Params>,
    host_initialize: Call<CUpti_Profiler_Host_Initialize_Params>,
    host_deinitialize: Call<CUpti_Profiler_Host_Deinitialize_Params>,
    add_metrics: Call<CUpti_Profiler_Host_ConfigAddMetrics_Params>,
    config_image_size: Call<CUpti_Profiler_Host_GetConfigImageSize_Params>,
    config_image: Call<CUpti_Profiler_Host_GetConfigImage_Params>,
    evaluate: Call<CUpti_Profiler_Host_EvaluateToGpuValues_Params>,
    enable: Call<CUpti_RangeProfiler_Enable_Params>,
    disable: Call<CUpti_RangeProfiler_Disable_Params>,
    counter_data_size: Call<CUpti_RangeProfiler_GetCounterDataSize_Params>,
    counter_data_initialize: Call<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>,
    set_config: Call<CUpti_RangeProfiler_SetConfig_Params>,
    start: Call<CUpti_RangeProfiler_Start_Params>,
    stop: Call<CUpti_RangeProfiler_Stop_Params>,
    decode: Call<CUpti_RangeProfiler_DecodeData_Params>,
    counter_data_info: Call<CUpti_RangeProfiler_GetCounterDataInfo_Params>,
    _library: libloading::Library,
}

impl RangeProfiler {
    /// Resolves every function in the libcupti at `path` (already loaded: this only
    /// adds a reference); `Err` names the first one missing (a CUPTI older than 12.6).
    pub fn load(path: &str) -> Result<Self, String> {
        // SAFETY: the library is mapped already; loading it again runs nothing.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot open {path} again: {e}"))?;
        macro_rules! function {
            ($name:literal) => {
                // SAFETY: the type is the one CUPTI's header declares for this name.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }.map_err(|_| {
                    format!(
                        "CUPTI lacks {} (the range profiler needs CUDA 12.6 or newer)",
                        $name
                    )
                })?
            };
        }
        Ok(Self {
            initialize: function!("cuptiProfilerInitialize"),
            counter_availability: function!("cuptiProfilerGetCounterAvailability"),
            base_metrics: function!("cuptiProfilerHostGetBaseMetrics"),
            deinitialize: function!("cuptiProfilerDeInitialize"),
            chip_name: function!("cuptiDeviceGetChipName"),
            host_initialize: function!("cuptiProfilerHostInitialize"),
            host_deinitialize: function!("cuptiProfilerHostDeinitialize"),
            add_metrics: function!("cuptiProfilerHostConfigAddMetrics"),
            config_image_size: function!("cuptiProfilerHostGetConfigImageSize"),
            config_image: function!("cuptiProfilerHostGetConfigImage"),
            evaluate: function!("cuptiProfilerHostEvaluateToGpuValues"),
            enable: function!("cuptiRangeProfilerEnable"),
            disable: function!("cuptiRangeProfilerDisable"),
            counter_data_size: function!("cuptiRangeProfilerGetCounterDataSize"),
            counter_data_initialize: function!("cuptiRangeProfilerCounterDataImageInitialize"),
            set_config: function!("cuptiRangeProfilerSetConfig"),
            start: function!("cuptiRangeProfilerStart"),
            stop: function!("cuptiRangeProfilerStop"),
            decode: function!("cuptiRangeProfilerDecodeData"),
            counter_data_info: function!("cuptiRangeProfilerGetCounterDataInfo"),
            _library: library,
        })
    }

    /// `cuptiProfilerInitialize` (once per attachment of CUPTI).
    pub fn initialize(&self) -> Result<(), CallError> {
        let mut p = params!(CUpti_Profiler_Initialize_Params {});
        // SAFETY: a valid params struct.
        check("cuptiProfilerInitialize", unsafe {
            (self.initialize)(&mut p)
        })
    }

    /// `cuptiProfilerDeInitialize`, before CUPTI is finalized.
    pub fn deinitialize(&self) -> Result<(), CallError> {
        let mut p = params!(CUpti_Profiler_DeInitialize_Params {});
        // SAFETY: a valid params struct.
        check("cuptiProfilerDeInitialize", unsafe {
            (self.deinitialize)(&mut p)
        })
    }

    /// The chip name of a CUDA device ordinal (`GH100`), which the host API needs.
    pub fn chip_name(&self, ordinal: usize) -> Result<CString, CallError> {
        let mut p = params!(CUpti_Device_GetChipName_Params {
            deviceIndex: ordinal
        });
        // SAFETY: a valid params struct; CUPTI returns a string it owns.
        check("cuptiDeviceGetChipName", unsafe {
            (self.chip_name)(&mut p)
        })?;
        if p.pChipName.is_null() {
            return Err(CallError {
                call: "cuptiDeviceGetChipName",
                code: CUptiResult::CUPTI_ERROR_UNKNOWN,
            });
        }
        // SAFETY: a NUL-terminated string CUPTI keeps alive; copied at once.
        Ok(unsafe { CStr::from_ptr(p.pChipName) }.to_owned())
    }

    /// Which counters `context`'s device can collect now (another profiler may hold
    /// some): the host API builds a configuration only of those.
    fn counter_availability(&self, context: CUcontext) -> Result<Vec<u8>, CallError> {
        let mut p = params!(CUpti_Profiler_GetCounterAvailability_Params { ctx: context });
        // SAFETY: a valid params struct; a null image asks for its size.
        let code = unsafe { (self.counter_availability)(&mut p) };
        check("cuptiProfilerGetCounterAvailability", code)?;
        let mut image = vec![0u8; p.counterAvailabilityImageSize];
        p.pCounterAvailabilityImage = image.as_mut_ptr();
        // SAFETY: the buffer has the size CUPTI asked for.
        let code = unsafe { (self.counter_availability)(&mut p) };
        check("cuptiProfilerGetCounterAvailability", code)?;
        Ok(image)
    }

    /// Builds the configuration of [`METRICS`] for `chip` and what `context`'s device
    /// can collect, leaving out the metrics the chip does not know.
    pub fn configure(&self, chip: &CStr, context: CUcontext) -> Result<Config, CallError> {
        let available = self.counter_availability(context)?;
        let mut p = params!(CUpti_Profiler_Host_Initialize_Params {
            profilerType: CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            pChipName: chip.as_ptr(),
            pCounterAvailabilityImage: available.as_ptr(),
        });
        // SAFETY: a valid params struct; `chip` outlives the call.
        check("cuptiProfilerHostInitialize", unsafe {
            (self.host_initialize)(&mut p)
        })?;
        let host = p.pHostObject;
        let built = self.build_config(host);
        let mut d = params!(CUpti_Profiler_Host_Deinitialize_Params { pHostObject: host });
        match built {
            Ok((names, measures, image)) => Ok(Config {
                host,
                names,
                measures,
                image,
            }),
            Err(e) => {
                // SAFETY: the host object was just created.
                let _ = unsafe { (self.host_deinitialize)(&mut d) };
                Err(e)
            }
        }
    }

    /// Prints the chip's base metrics that bear on FLOPs, DRAM and time (tracing only).
    fn trace_base_metrics(&self, host: *mut CUpti_Profiler_Host_Object) {
        for kind in [
            CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER,
            CUpti_MetricType::CUPTI_METRIC_TYPE_RATIO,
            CUpti_MetricType::CUPTI_METRIC_TYPE_THROUGHPUT,
        ] {
            let mut p = params!(CUpti_Profiler_Host_GetBaseMetrics_Params {
                pHostObject: host,
                metricType: kind,
            });
            // SAFETY: a valid params struct; CUPTI returns an array it owns.
            if unsafe { (self.base_metrics)(&mut p) } != CUptiResult::CUPTI_SUCCESS
                || p.ppMetricNames.is_null()
            {
                continue;
            }
            for i in 0..p.numMetrics {
                // SAFETY: `numMetrics` NUL-terminated names CUPTI keeps alive.
                let name = unsafe { CStr::from_ptr(*p.ppMetricNames.add(i)) }.to_string_lossy();
                let wanted = [
                    "tensor",
                    "dram__bytes",
                    "gpu__time",
                    "op_f",
                    "op_d",
                    "op_h",
                    "pipe_fma",
                    "pipe_fp",
                ];
                if wanted.iter().any(|w| name.contains(w)) {
                    eprintln!("poolprof-inject: counters: base metric {kind:?} {name}");
                }
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn build_config(
        &self,
        host: *mut CUpti_Profiler_Host_Object,
    ) -> Result<(Vec<CString>, Vec<Measure>, Vec<u8>), CallError> {
        if tracing() {
            self.trace_base_metrics(host);
        }
        let mut names = Vec::new();
        let mut measures = Vec::new();
        for (name, measure) in METRICS {
            let c = CString::new(*name).expect("metric names have no NUL");
            let mut ptr = c.as_ptr();
            let mut p = params!(CUpti_Profiler_Host_ConfigAddMetrics_Params {
                pHostObject: host,
                ppMetricNames: &mut ptr,
                numMetrics: 1,
            });
            // SAFETY: a valid params struct; the name outlives the call.
            let code = unsafe { (self.add_metrics)(&mut p) };
            if code == CUptiResult::CUPTI_SUCCESS {
                names.push(c);
                measures.push(*measure);
            } else if tracing() {
                eprintln!("poolprof-inject: counters: {name} refused: {code:?}");
            }
        }
        if names.is_empty() {
            return Err(CallError {
                call: "cuptiProfilerHostConfigAddMetrics (no metric known to this GPU)",
                code: CUptiResult::CUPTI_ERROR_INVALID_METRIC_NAME,
            });
        }
        let mut size = params!(CUpti_Profiler_Host_GetConfigImageSize_Params { pHostObject: host });
        // SAFETY: a valid params struct.
        let code = unsafe { (self.config_image_size)(&mut size) };
        check("cuptiProfilerHostGetConfigImageSize", code)?;
        let mut image = vec![0u8; size.configImageSize];
        let mut get = params!(CUpti_Profiler_Host_GetConfigImage_Params {
            pHostObject: host,
            configImageSize: image.len(),
            pConfigImage: image.as_mut_ptr(),
        });
        // SAFETY: a valid params struct; the buffer has the size CUPTI asked for.
        check("cuptiProfilerHostGetConfigImage", unsafe {
            (self.config_image)(&mut get)
        })?;
        Ok((names, measures, image))
    }

    /// `cuptiRangeProfilerEnable` on a context.
    pub fn enable(&self, context: CUcontext) -> Result<ContextProfiler, CallError> {
        let mut p = params!(CUpti_RangeProfiler_Enable_Params { ctx: context });
        // SAFETY: a valid params struct and a live context (the one launching).
        check("cuptiRangeProfilerEnable", unsafe { (self.enable)(&mut p) })?;
        Ok(ContextProfiler(p.pRangeProfilerObject))
    }

    /// `cuptiRangeProfilerDisable`.
    pub fn disable(&self, profiler: ContextProfiler) -> Result<(), CallError> {
        let mut p = params!(CUpti_RangeProfiler_Disable_Params {
            pRangeProfilerObject: profiler.0,
        });
        // SAFETY: an object from `enable`, disabled once.
        check("cuptiRangeProfilerDisable", unsafe {
            (self.disable)(&mut p)
        })
    }

    /// Configures `profiler` for one auto range in kernel replay and starts it: the
    /// next kernel launched in its context is profiled.
    pub fn start(&self, profiler: ContextProfiler, config: &Config) -> Result<Session, CallError> {
        let mut names: Vec<*const c_char> = config.names.iter().map(|n| n.as_ptr()).collect();
        let mut size = params!(CUpti_RangeProfiler_GetCounterDataSize_Params {
            pRangeProfilerObject: profiler.0,
            pMetricNames: names.as_mut_ptr(),
            numMetrics: names.len(),
            maxNumOfRanges: 1,
            maxNumRangeTreeNodes: 1,
        });
        // SAFETY: a valid params struct; the names outlive the call.
        let code = unsafe { (self.counter_data_size)(&mut size) };
        check("cuptiRangeProfilerGetCounterDataSize", code)?;
        let mut counter_data = vec![0u8; size.counterDataSize];
        let mut init = params!(CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
            pRangeProfilerObject: profiler.0,
            counterDataSize: counter_data.len(),
            pCounterData: counter_data.as_mut_ptr(),
        });
        // SAFETY: the buffer has the size CUPTI asked for.
        let code = unsafe { (self.counter_data_initialize)(&mut init) };
        check("cuptiRangeProfilerCounterDataImageInitialize", code)?;
        let mut set = params!(CUpti_RangeProfiler_SetConfig_Params {
            pRangeProfilerObject: profiler.0,
            configSize: config.image.len(),
            pConfig: config.image.as_ptr(),
            counterDataImageSize: counter_data.len(),
            pCounterDataImage: counter_data.as_mut_ptr(),
            range: CUpti_ProfilerRange::CUPTI_AutoRange,
            replayMode: CUpti_ProfilerReplayMode::CUPTI_KernelReplay,
            maxRangesPerPass: 1,
            numNestingLevels: 1,
            minNestingLevel: 1,
            passIndex: 0,
            targetNestingLevel: 0,
        });
        // SAFETY: the config image and counter data live in `config` and the session
        // (a Vec's heap buffer does not move when the Vec does).
        check("cuptiRangeProfilerSetConfig", unsafe {
            (self.set_config)(&mut set)
        })?;
        let mut start = params!(CUpti_RangeProfiler_Start_Params {
            pRangeProfilerObject: profiler.0,
        });
        // SAFETY: a configured object.
        check("cuptiRangeProfilerStart", unsafe {
            (self.start)(&mut start)
        })?;
        Ok(Session {
            profiler,
            counter_data,
        })
    }

    /// Stops a session after its launch, decodes it and evaluates the metrics of its
    /// range; `Ok(None)` when no range was recorded (the launch was not a kernel the
    /// profiler saw).
    pub fn finish(&self, session: Session, config: &Config) -> Result<Option<Vec<f64>>, CallError> {
        let Session {
            profiler,
            counter_data,
        } = session;
        // The counters are read once the kernel's passes have run: wait for them (once
        // per distinct kernel, on the launching thread).
        // SAFETY: a driver call with no preconditions, in the launch's context.
        let _ = unsafe { cudarc::driver::sys::cuCtxSynchronize() };
        let mut stop = params!(CUpti_RangeProfiler_Stop_Params {
            pRangeProfilerObject: profiler.0,
        });
        // SAFETY: a started object.
        check("cuptiRangeProfilerStop", unsafe { (self.stop)(&mut stop) })?;
        let mut decode = params!(CUpti_RangeProfiler_DecodeData_Params {
            pRangeProfilerObject: profiler.0,
        });
        // SAFETY: a stopped object whose counter data is `counter_data`.
        check("cuptiRangeProfilerDecodeData", unsafe {
            (self.decode)(&mut decode)
        })?;
        if tracing() {
            eprintln!(
                "poolprof-inject: counters: all passes submitted {}, pass {}, ranges dropped {}",
                stop.isAllPassSubmitted, stop.passIndex, decode.numOfRangeDropped
            );
        }
        let mut info = params!(CUpti_RangeProfiler_GetCounterDataInfo_Params {
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
        });
        // SAFETY: a decoded counter data image.
        let code = unsafe { (self.counter_data_info)(&mut info) };
        check("cuptiRangeProfilerGetCounterDataInfo", code)?;
        if info.numTotalRanges == 0 {
            return Ok(None);
        }
        let mut names: Vec<*const c_char> = config.names.iter().map(|n| n.as_ptr()).collect();
        let mut values = vec![f64::NAN; names.len()];
        let mut eval = params!(CUpti_Profiler_Host_EvaluateToGpuValues_Params {
            pHostObject: config.host,
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
            rangeIndex: 0,
            ppMetricNames: names.as_mut_ptr(),
            numMetrics: names.len(),
            pMetricValues: values.as_mut_ptr(),
        });
        // SAFETY: buffers of `numMetrics` entries that outlive the call.
        let code = unsafe { (self.evaluate)(&mut eval) };
        check("cuptiProfilerHostEvaluateToGpuValues", code)?;
        if tracing() {
            for (n, v) in config.names.iter().zip(&values) {
                eprintln!("poolprof-inject: counters: {} = {v}", n.to_string_lossy());
            }
        }
        Ok(Some(values))
    }

    /// Frees a configuration's host object.
    pub fn release(&self, config: Config) {
        let mut d = params!(CUpti_Profiler_Host_Deinitialize_Params {
            pHostObject: config.host,
        });
        // SAFETY: the host object of `config`, freed once.
        let _ = unsafe { (self.host_deinitialize)(&mut d) };
    }
}

/// The metrics configured for one chip.
pub struct Config {
    host: *mut CUpti_Profiler_Host_Object,
    names: Vec<CString>,
    /// What each configured metric measures, in the order values come back.
    pub measures: Vec<Measure>,
    image: Vec<u8>,
}

// SAFETY: the host object is host memory CUPTI's host API uses from any thread; the
// library only touches it under its state lock.
unsafe impl Send for Config {}

/// A range profiler enabled on one context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextProfiler(*mut CUpti_RangeProfiler_Object);

// SAFETY: an opaque handle CUPTI accepts from any thread; used under the state lock.
unsafe impl Send for ContextProfiler {}

/// One launch being profiled.
pub struct Session {
    profiler: ContextProfiler,
    counter_data: Vec<u8>,
}

#[cfg(test)]
mod struct_size_tests {
    use super::*;

    #[test]
    fn struct_sizes_are_the_headers_not_the_padded_rust_sizes() {
        // CUPTI checks structSize against its own: the end of the last field.
        assert_eq!(struct_size::CUpti_RangeProfiler_SetConfig_Params, 90);
        assert!(
            (struct_size::CUpti_RangeProfiler_SetConfig_Params as usize)
                < std::mem::size_of::<CUpti_RangeProfiler_SetConfig_Params>()
        );
        let p = params!(CUpti_RangeProfiler_Stop_Params {});
        assert_eq!(p.structSize, 41);
    }
}
