//! Reading CUPTI activity records out of a completed buffer.
//!
//! Fields are read one at a time, unaligned, at the offsets of cudarc's bindings of
//! `CUpti_ActivityKernel9`, `CUpti_ActivityMemcpy6` and `CUpti_ActivityMemset4`
//! (newer CUPTI versions write newer structs that only add fields at the end). The
//! whole struct is never read as a Rust value: its enum fields could hold values the
//! bindings do not know, which Rust does not allow.

use crate::aggregate::{KernelRun, MemcpyDirection};
use crate::wire::Geometry;
use cudarc::cupti::sys::{
    CUpti_ActivityKernel9 as Kernel, CUpti_ActivityKind, CUpti_ActivityMemcpy6 as Memcpy,
    CUpti_ActivityMemcpyKind, CUpti_ActivityMemset4 as Memset,
};
use std::ffi::{c_char, CStr};
use std::mem::offset_of;

/// Activity kind of a kernel record when kernels run concurrently.
pub const KIND_CONCURRENT_KERNEL: u32 =
    CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL as u32;
/// Activity kind of a serialized kernel record.
pub const KIND_KERNEL: u32 = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL as u32;
/// Activity kind of a memory copy record.
pub const KIND_MEMCPY: u32 = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY as u32;
/// Activity kind of a memset record.
pub const KIND_MEMSET: u32 = CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET as u32;

/// Name used when a kernel name is not UTF-8.
pub const INVALID_NAME: &str = "<invalid-utf8>";

/// One activity record, as much as poolprof uses of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// A kernel execution.
    Kernel(KernelRun<'a>),
    /// A memory copy.
    Memcpy {
        /// CUDA device ordinal.
        device: u32,
        /// Direction.
        direction: MemcpyDirection,
        /// Bytes copied.
        bytes: u64,
    },
    /// A memset.
    Memset {
        /// CUDA device ordinal.
        device: u32,
        /// Bytes set.
        bytes: u64,
    },
    /// A kind this library does not use.
    Other(u32),
}

/// Reads the record at `record`.
///
/// # Safety
/// `record` must point to a whole activity record as CUPTI wrote it (or a buffer laid
/// out the same way), at least as large as the struct its kind names, and a kernel
/// record's name must be null or a NUL-terminated string that outlives `'a`.
pub unsafe fn parse<'a>(record: *const u8) -> Record<'a> {
    match kind(record) {
        KIND_CONCURRENT_KERNEL | KIND_KERNEL => Record::Kernel(parse_kernel(record)),
        KIND_MEMCPY => Record::Memcpy {
            device: read(record, offset_of!(Memcpy, deviceId)),
            direction: direction(read(record, offset_of!(Memcpy, copyKind))),
            bytes: read(record, offset_of!(Memcpy, bytes)),
        },
        KIND_MEMSET => Record::Memset {
            device: read(record, offset_of!(Memset, deviceId)),
            bytes: read(record, offset_of!(Memset, bytes)),
        },
        other => Record::Other(other),
    }
}

/// A kernel record's fields, its name still CUPTI's pointer: summing records by that
/// pointer ([`crate::batch`]) reads each distinct name once per buffer, not once per
/// launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawKernel {
    /// CUDA device ordinal.
    pub device: u32,
    /// CUPTI's id of the context the kernel ran in.
    pub context: u32,
    /// The driver's number of this launch in its context.
    pub grid_id: i64,
    /// CUPTI's NUL-terminated name, or null.
    pub name: *const c_char,
    /// GPU start timestamp, ns.
    pub start_ns: u64,
    /// GPU end timestamp, ns.
    pub end_ns: u64,
    /// Launch geometry and resources.
    pub geometry: Geometry,
}

/// The activity kind of the record at `record`.
///
/// # Safety
/// `record` must point to at least 4 readable bytes.
pub unsafe fn kind(record: *const u8) -> u32 {
    read(record, 0)
}

/// Reads a kernel record without its name.
///
/// # Safety
/// `record` must point to a whole kernel record (`KIND_KERNEL` or
/// `KIND_CONCURRENT_KERNEL`).
pub unsafe fn raw_kernel(record: *const u8) -> RawKernel {
    let dim = |offset: usize| -> u32 { read::<i32>(record, offset).max(0) as u32 };
    RawKernel {
        device: read(record, offset_of!(Kernel, deviceId)),
        context: read(record, offset_of!(Kernel, contextId)),
        grid_id: read(record, offset_of!(Kernel, gridId)),
        name: read(record, offset_of!(Kernel, name)),
        start_ns: read(record, offset_of!(Kernel, start)),
        end_ns: read(record, offset_of!(Kernel, end)),
        geometry: Geometry {
            grid: [
                dim(offset_of!(Kernel, gridX)),
                dim(offset_of!(Kernel, gridY)),
                dim(offset_of!(Kernel, gridZ)),
            ],
            block: [
                dim(offset_of!(Kernel, blockX)),
                dim(offset_of!(Kernel, blockY)),
                dim(offset_of!(Kernel, blockZ)),
            ],
            registers: read(record, offset_of!(Kernel, registersPerThread)),
            static_shared_bytes: dim(offset_of!(Kernel, staticSharedMemory)),
            dynamic_shared_bytes: dim(offset_of!(Kernel, dynamicSharedMemory)),
        },
    }
}

/// The text of a kernel name pointer: `""` for null, [`INVALID_NAME`] when not UTF-8.
///
/// # Safety
/// `name` must be null or a NUL-terminated string that outlives `'a`.
pub unsafe fn name_of<'a>(name: *const c_char) -> &'a str {
    if name.is_null() {
        ""
    } else {
        CStr::from_ptr(name).to_str().unwrap_or(INVALID_NAME)
    }
}

unsafe fn parse_kernel<'a>(record: *const u8) -> KernelRun<'a> {
    let raw = raw_kernel(record);
    KernelRun {
        device: raw.device,
        name: name_of(raw.name),
        start_ns: raw.start_ns,
        end_ns: raw.end_ns,
        geometry: raw.geometry,
    }
}

fn direction(copy_kind: u8) -> MemcpyDirection {
    const HTOD: u8 = CUpti_ActivityMemcpyKind::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD as u8;
    const DTOH: u8 = CUpti_ActivityMemcpyKind::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH as u8;
    const DTOD: u8 = CUpti_ActivityMemcpyKind::CUPTI_ACTIVITY_MEMCPY_KIND_DTOD as u8;
    match copy_kind {
        HTOD => MemcpyDirection::HtoD,
        DTOH => MemcpyDirection::DtoH,
        DTOD => MemcpyDirection::DtoD,
        _ => MemcpyDirection::Other,
    }
}

unsafe fn read<T: Copy>(base: *const u8, offset: usize) -> T {
    base.add(offset).cast::<T>().read_unaligned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::mem::size_of;

    /// An 8-aligned zeroed buffer of `bytes`, as CUPTI's buffers are.
    fn buffer(bytes: usize) -> Vec<u64> {
        vec![0u64; bytes.div_ceil(8)]
    }

    fn put<T: Copy>(buf: &mut [u64], offset: usize, value: T) {
        let base = buf.as_mut_ptr().cast::<u8>();
        assert!(offset + size_of::<T>() <= buf.len() * 8);
        unsafe { base.add(offset).cast::<T>().write_unaligned(value) };
    }

    #[test]
    fn kernel_record_fields_are_read() {
        let name = CString::new("_Z4gemmPfS_").unwrap();
        let mut buf = buffer(size_of::<Kernel>());
        put(&mut buf, 0, KIND_CONCURRENT_KERNEL);
        put(&mut buf, offset_of!(Kernel, deviceId), 3u32);
        put(&mut buf, offset_of!(Kernel, start), 1_000u64);
        put(&mut buf, offset_of!(Kernel, end), 3_500u64);
        put(&mut buf, offset_of!(Kernel, gridX), 132i32);
        put(&mut buf, offset_of!(Kernel, gridY), 2i32);
        put(&mut buf, offset_of!(Kernel, gridZ), 1i32);
        put(&mut buf, offset_of!(Kernel, blockX), 128i32);
        put(&mut buf, offset_of!(Kernel, blockY), 1i32);
        put(&mut buf, offset_of!(Kernel, blockZ), 1i32);
        put(&mut buf, offset_of!(Kernel, registersPerThread), 96u16);
        put(&mut buf, offset_of!(Kernel, staticSharedMemory), 1024i32);
        put(&mut buf, offset_of!(Kernel, dynamicSharedMemory), 65536i32);
        put(&mut buf, offset_of!(Kernel, name), name.as_ptr());
        let record = unsafe { parse(buf.as_ptr().cast()) };
        assert_eq!(
            record,
            Record::Kernel(KernelRun {
                device: 3,
                name: "_Z4gemmPfS_",
                start_ns: 1_000,
                end_ns: 3_500,
                geometry: Geometry {
                    grid: [132, 2, 1],
                    block: [128, 1, 1],
                    registers: 96,
                    static_shared_bytes: 1024,
                    dynamic_shared_bytes: 65536,
                },
            })
        );
    }

    #[test]
    fn null_and_non_utf8_names_do_not_fail() {
        let bad = CString::new(vec![0xff, 0xfe]).unwrap();
        let mut buf = buffer(size_of::<Kernel>());
        put(&mut buf, 0, KIND_KERNEL);
        let Record::Kernel(run) = (unsafe { parse(buf.as_ptr().cast()) }) else {
            panic!("kernel expected")
        };
        assert_eq!(run.name, "");
        put(&mut buf, offset_of!(Kernel, name), bad.as_ptr());
        let Record::Kernel(run) = (unsafe { parse(buf.as_ptr().cast()) }) else {
            panic!("kernel expected")
        };
        assert_eq!(run.name, INVALID_NAME);
    }

    #[test]
    fn negative_dimensions_read_as_zero() {
        let mut buf = buffer(size_of::<Kernel>());
        put(&mut buf, 0, KIND_CONCURRENT_KERNEL);
        put(&mut buf, offset_of!(Kernel, gridX), -5i32);
        let Record::Kernel(run) = (unsafe { parse(buf.as_ptr().cast()) }) else {
            panic!("kernel expected")
        };
        assert_eq!(run.geometry.grid[0], 0);
    }

    #[test]
    fn memcpy_directions_and_memset() {
        let mut buf = buffer(size_of::<Memcpy>().max(size_of::<Memset>()));
        put(&mut buf, 0, KIND_MEMCPY);
        put(&mut buf, offset_of!(Memcpy, deviceId), 1u32);
        put(&mut buf, offset_of!(Memcpy, bytes), 4096u64);
        for (kind, expected) in [
            (1u8, MemcpyDirection::HtoD),
            (2, MemcpyDirection::DtoH),
            (8, MemcpyDirection::DtoD),
            (10, MemcpyDirection::Other),
            (0, MemcpyDirection::Other),
        ] {
            put(&mut buf, offset_of!(Memcpy, copyKind), kind);
            assert_eq!(
                unsafe { parse(buf.as_ptr().cast()) },
                Record::Memcpy {
                    device: 1,
                    direction: expected,
                    bytes: 4096
                }
            );
        }
        let mut buf = buffer(size_of::<Memset>());
        put(&mut buf, 0, KIND_MEMSET);
        put(&mut buf, offset_of!(Memset, deviceId), 2u32);
        put(&mut buf, offset_of!(Memset, bytes), 77u64);
        assert_eq!(
            unsafe { parse(buf.as_ptr().cast()) },
            Record::Memset {
                device: 2,
                bytes: 77
            }
        );
    }

    #[test]
    fn unknown_kinds_are_skipped() {
        let mut buf = buffer(64);
        put(&mut buf, 0, 9999u32);
        assert_eq!(unsafe { parse(buf.as_ptr().cast()) }, Record::Other(9999));
    }

    #[test]
    fn kernel9_layout_is_the_one_gpu_md_validated() {
        // Offsets CUPTI 13's header gives CUpti_ActivityKernel9 (packed(8)); a change in
        // the bindings would silently misread every record.
        assert_eq!(offset_of!(Kernel, start), 16);
        assert_eq!(offset_of!(Kernel, end), 24);
        assert_eq!(offset_of!(Kernel, deviceId), 40);
        assert_eq!(offset_of!(Kernel, gridX), 52);
        assert_eq!(offset_of!(Kernel, name), 104);
    }
}
