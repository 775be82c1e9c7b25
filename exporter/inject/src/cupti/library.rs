//! The libcupti this library calls: the copy the process has already loaded, if any.
//!
//! Why not simply the first `libcupti.so` on the search path: PyTorch wheels bring
//! their own libcupti and load it at `import torch`. With the library on a second copy
//! in the same process, the PyTorch profiler failed to subscribe and recorded no GPU
//! activity at all (on the H100: `docs/validation/kernels-h100.md`, runs 22–24). Sharing the application's copy leaves
//! one CUPTI, whose single subscription the library can check before each window.

use super::StartError;
use cudarc::cupti::sys::{
    CUptiResult, CUpti_Activity, CUpti_ActivityAttribute, CUpti_ActivityKind,
    CUpti_BuffersCallbackCompleteFunc, CUpti_BuffersCallbackRequestFunc, CUpti_CallbackDomain,
    CUpti_CallbackFunc, CUpti_CallbackId, CUpti_SubscriberHandle,
};
use cudarc::driver::sys::CUcontext;
use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

/// Names tried, in order, when no libcupti is loaded yet (CUDA 12 or newer).
const BY_NAME: [&str; 3] = ["libcupti.so", "libcupti.so.13", "libcupti.so.12"];

/// The CUPTI functions the library calls, resolved in one loaded libcupti.
pub struct Cupti {
    /// Where it was loaded from (the application's copy, or the name found).
    pub path: String,
    /// `cuptiSubscribe`.
    pub subscribe: unsafe extern "C" fn(
        *mut CUpti_SubscriberHandle,
        CUpti_CallbackFunc,
        *mut c_void,
    ) -> CUptiResult,
    /// `cuptiUnsubscribe`.
    pub unsubscribe: unsafe extern "C" fn(CUpti_SubscriberHandle) -> CUptiResult,
    /// `cuptiEnableDomain`.
    pub enable_domain:
        unsafe extern "C" fn(u32, CUpti_SubscriberHandle, CUpti_CallbackDomain) -> CUptiResult,
    /// `cuptiFinalize`.
    pub finalize: unsafe extern "C" fn() -> CUptiResult,
    /// `cuptiActivityRegisterCallbacks`.
    register_callbacks: unsafe extern "C" fn(
        CUpti_BuffersCallbackRequestFunc,
        CUpti_BuffersCallbackCompleteFunc,
    ) -> CUptiResult,
    /// `cuptiActivityEnable`.
    enable: unsafe extern "C" fn(CUpti_ActivityKind) -> CUptiResult,
    /// `cuptiActivityDisable`.
    disable: unsafe extern "C" fn(CUpti_ActivityKind) -> CUptiResult,
    /// `cuptiActivityFlushAll`.
    flush_all: unsafe extern "C" fn(u32) -> CUptiResult,
    /// `cuptiActivityGetNextRecord`.
    pub next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut CUpti_Activity) -> CUptiResult,
    /// `cuptiActivityGetNumDroppedRecords`.
    pub dropped_records: unsafe extern "C" fn(CUcontext, u32, *mut usize) -> CUptiResult,
    /// `cuptiActivitySetAttribute`, optional: without it CUPTI zeroes each buffer itself.
    pub set_attribute: Option<
        unsafe extern "C" fn(CUpti_ActivityAttribute, *mut usize, *mut c_void) -> CUptiResult,
    >,
    /// `cuptiEnableCallback`, optional: only kernel counters use it.
    pub enable_callback: Option<
        unsafe extern "C" fn(
            u32,
            CUpti_SubscriberHandle,
            CUpti_CallbackDomain,
            CUpti_CallbackId,
        ) -> CUptiResult,
    >,
    /// Keeps the functions above mapped.
    _library: libloading::Library,
}

impl Cupti {
    /// Registers the buffer callbacks (`cuptiActivityRegisterCallbacks`).
    pub fn register(
        &self,
        requested: CUpti_BuffersCallbackRequestFunc,
        completed: CUpti_BuffersCallbackCompleteFunc,
    ) -> CUptiResult {
        // SAFETY: plain function pointers CUPTI keeps and calls later.
        unsafe { (self.register_callbacks)(requested, completed) }
    }

    /// Enables records of one kind (`cuptiActivityEnable`).
    pub fn enable_kind(&self, kind: CUpti_ActivityKind) -> CUptiResult {
        // SAFETY: a value argument only.
        unsafe { (self.enable)(kind) }
    }

    /// Disables records of one kind (`cuptiActivityDisable`).
    pub fn disable_kind(&self, kind: CUpti_ActivityKind) -> CUptiResult {
        // SAFETY: a value argument only.
        unsafe { (self.disable)(kind) }
    }

    /// Hands every completed buffer (every buffer, with the forced flag) to the
    /// completion callback (`cuptiActivityFlushAll`).
    pub fn flush(&self, flag: u32) -> CUptiResult {
        // SAFETY: a value argument only.
        unsafe { (self.flush_all)(flag) }
    }
}

static CUPTI: OnceLock<Cupti> = OnceLock::new();

/// The loaded CUPTI, once [`load`] succeeded.
pub fn get() -> Option<&'static Cupti> {
    CUPTI.get()
}

/// Loads CUPTI (`chosen`, else the process's own copy when it has one, else the
/// first found by name) and resolves every function; the same answer on every call.
pub fn load(chosen: Option<&std::path::Path>) -> Result<&'static Cupti, StartError> {
    if let Some(cupti) = CUPTI.get() {
        return Ok(cupti);
    }
    let (library, path) = match chosen {
        Some(path) => open_chosen(path)?,
        None => open()?,
    };
    let cupti = resolve(library, path)?;
    Ok(CUPTI.get_or_init(|| cupti))
}

fn open() -> Result<(libloading::Library, String), StartError> {
    let candidates = loaded_copies().into_iter().chain(BY_NAME.map(String::from));
    for path in candidates {
        // SAFETY: loading libcupti runs only its initialisers, which CUDA tools rely on.
        if let Ok(library) = unsafe { libloading::Library::new(&path) } {
            return Ok((library, path));
        }
    }
    Err(StartError::NoCupti)
}

fn open_chosen(path: &std::path::Path) -> Result<(libloading::Library, String), StartError> {
    // SAFETY: as in `open`.
    match unsafe { libloading::Library::new(path) } {
        Ok(library) => Ok((library, path.display().to_string())),
        Err(e) => Err(StartError::ChosenCupti(format!("{}: {e}", path.display()))),
    }
}

fn resolve(library: libloading::Library, path: String) -> Result<Cupti, StartError> {
    /// Copies the function pointer named `$name` out of the library, or fails.
    macro_rules! function {
        ($name:literal) => {
            // SAFETY: the type is the one CUPTI's header declares for this name.
            *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                .map_err(|_| StartError::MissingSymbol($name))?
        };
    }
    // SAFETY: as above; an optional function.
    let set_attribute = unsafe { library.get(b"cuptiActivitySetAttribute\0") }
        .ok()
        .map(|f| *f);
    // SAFETY: as above; an optional function.
    let enable_callback = unsafe { library.get(b"cuptiEnableCallback\0") }
        .ok()
        .map(|f| *f);
    Ok(Cupti {
        enable_callback,
        subscribe: function!("cuptiSubscribe"),
        unsubscribe: function!("cuptiUnsubscribe"),
        enable_domain: function!("cuptiEnableDomain"),
        finalize: function!("cuptiFinalize"),
        register_callbacks: function!("cuptiActivityRegisterCallbacks"),
        enable: function!("cuptiActivityEnable"),
        disable: function!("cuptiActivityDisable"),
        flush_all: function!("cuptiActivityFlushAll"),
        next_record: function!("cuptiActivityGetNextRecord"),
        dropped_records: function!("cuptiActivityGetNumDroppedRecords"),
        set_attribute,
        path,
        _library: library,
    })
}

/// Paths of the libcupti copies already mapped into this process, in load order.
pub fn loaded_copies() -> Vec<String> {
    let paths = mapped_objects();
    paths.into_iter().filter(|path| is_libcupti(path)).collect()
}

/// The names of every object the dynamic loader has mapped, in load order.
fn mapped_objects() -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    // SAFETY: the callback only reads the entries it is given, for the call's length.
    unsafe { libc::dl_iterate_phdr(Some(collect), (&mut paths as *mut Vec<String>).cast()) };
    paths
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid entry and our own `data`.
    let (info, paths) = unsafe { (&*info, &mut *data.cast::<Vec<String>>()) };
    if !info.dlpi_name.is_null() {
        // SAFETY: the loader's names are NUL-terminated.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) };
        paths.push(name.to_string_lossy().into_owned());
    }
    0
}

/// Whether `path` names a libcupti shared object (`.../libcupti.so`, `.so.13`,
/// `.so.2025.3.1`), by its file name.
fn is_libcupti(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file == "libcupti.so" || file.starts_with("libcupti.so.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_libcupti_file_names_count() {
        for path in [
            "/opt/venv/site-packages/nvidia/cu13/lib/libcupti.so.13",
            "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.2025.3.1",
            "libcupti.so",
        ] {
            assert!(is_libcupti(path), "{path}");
        }
        for path in [
            "",
            "/usr/lib/libcupti_static.a",
            "/usr/lib/libcuptix.so.1",
            "/opt/libcupti.so.13/libfoo.so",
        ] {
            assert!(!is_libcupti(path), "{path}");
        }
    }

    #[test]
    fn a_chosen_copy_that_does_not_load_is_named_in_the_error() {
        let missing = std::path::Path::new("/nonexistent/libcupti.so.13");
        let Err(err) = load(Some(missing)) else {
            panic!("loaded a file that does not exist");
        };
        let msg = err.to_string();
        assert!(matches!(err, StartError::ChosenCupti(_)), "{msg}");
        assert!(
            msg.contains("POOLPROF_INJECT_CUPTI=/nonexistent/libcupti.so.13"),
            "{msg}"
        );
        assert!(get().is_none(), "a failed load leaves nothing behind");
    }

    #[test]
    fn the_copies_loaded_are_read_from_the_loader() {
        let paths = mapped_objects();
        assert!(
            paths.iter().any(|p| p.contains("libc.so")),
            "the loader lists what is mapped: {paths:?}"
        );
        assert!(loaded_copies().iter().all(|p| is_libcupti(p)));
    }
}
