//! The optional counters message (type 3): hardware counters of kernels the library
//! profiled once each (`POOLPROF_KERNEL_COUNTERS=1`).
//!
//! Payload: a `u16` count, then per kernel: device ordinal `u32`, UUID presence `u8`
//! (+ 16 bytes), name (string), a `u8` of which values were measured (bit 0 fp64,
//! 1 fp32, 2 fp16, 3 tensor, 4 DRAM bytes, 5 duration), then seven `u64`: fp64, fp32,
//! fp16 and tensor FLOPs, DRAM bytes read and written, duration in ns (0 where not
//! measured). Adding a message type kept the protocol at version 2: a library without
//! counters never sends it, so exporters of either build accept it, and this build's
//! exporter accepts both.

use super::{
    frame, DecodeError, DeviceId, Reader, Writer, MAX_KERNEL_NAME_BYTES, MAX_PAYLOAD_BYTES,
    TYPE_COUNTERS,
};

/// Most kernels in one counters frame (each at most about 1.1 KiB on the wire).
pub const MAX_COUNTERS_PER_FRAME: usize = 256;

const FP64: u8 = 1;
const FP32: u8 = 1 << 1;
const FP16: u8 = 1 << 2;
const TENSOR: u8 = 1 << 3;
const DRAM: u8 = 1 << 4;
const DURATION: u8 = 1 << 5;
const ALL: u8 = FP64 | FP32 | FP16 | TENSOR | DRAM | DURATION;

/// Floating-point operations of one launch by precision; `None` where the GPU's
/// counters for it could not be collected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flops {
    /// Double precision, CUDA cores (FMA counted as 2).
    pub fp64: Option<u64>,
    /// Single precision, CUDA cores (FMA counted as 2).
    pub fp32: Option<u64>,
    /// Half precision, CUDA cores (FMA counted as 2).
    pub fp16: Option<u64>,
    /// Tensor-core operations, every input type together.
    pub tensor: Option<u64>,
}

impl Flops {
    /// The sum of what was measured (0 when nothing was).
    pub fn total(&self) -> u64 {
        [self.fp64, self.fp32, self.fp16, self.tensor]
            .into_iter()
            .flatten()
            .fold(0u64, u64::saturating_add)
    }
}

/// Counters of one profiled launch of a kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelCounters {
    /// The GPU it ran on.
    pub device: DeviceId,
    /// The kernel's (usually mangled) name, at most [`MAX_KERNEL_NAME_BYTES`].
    pub name: String,
    /// FLOPs by precision.
    pub flops: Flops,
    /// DRAM bytes read and written, if measured.
    pub dram_bytes: Option<(u64, u64)>,
    /// GPU time of the profiled launch (a replayed pass), if measured.
    pub duration_ns: Option<u64>,
}

/// The counters message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Kernels profiled since the previous counters message.
    pub kernels: Vec<KernelCounters>,
}

/// Encodes counters as frames of at most [`MAX_COUNTERS_PER_FRAME`] kernels each
/// (none for an empty list).
pub fn encode_counters(kernels: &[KernelCounters]) -> Vec<Vec<u8>> {
    kernels
        .chunks(MAX_COUNTERS_PER_FRAME)
        .map(|chunk| {
            let mut w = Writer::default();
            w.u16(chunk.len() as u16);
            for k in chunk {
                write_kernel(&mut w, k);
            }
            debug_assert!(w.0.len() <= MAX_PAYLOAD_BYTES);
            frame(TYPE_COUNTERS, w.0)
        })
        .collect()
}

fn write_kernel(w: &mut Writer, k: &KernelCounters) {
    w.u32(k.device.ordinal);
    match k.device.uuid {
        Some(uuid) => {
            w.u8(1);
            w.0.extend_from_slice(&uuid);
        }
        None => w.u8(0),
    }
    w.str(&k.name, MAX_KERNEL_NAME_BYTES);
    let f = &k.flops;
    let (read, write) = k.dram_bytes.unwrap_or((0, 0));
    let values = [
        (FP64, f.fp64),
        (FP32, f.fp32),
        (FP16, f.fp16),
        (TENSOR, f.tensor),
        (DRAM, k.dram_bytes.map(|_| read)),
        (DRAM, k.dram_bytes.map(|_| write)),
        (DURATION, k.duration_ns),
    ];
    let measured = values
        .iter()
        .filter(|(_, v)| v.is_some())
        .fold(0u8, |bits, (bit, _)| bits | bit);
    w.u8(measured);
    for (_, v) in values {
        w.u64(v.unwrap_or(0));
    }
}

pub(super) fn read_counters(r: &mut Reader<'_>) -> Result<Counters, DecodeError> {
    let count = r.count("counters.kernels", MAX_COUNTERS_PER_FRAME)?;
    let mut kernels = Vec::with_capacity(count);
    for _ in 0..count {
        kernels.push(read_kernel(r)?);
    }
    Ok(Counters { kernels })
}

fn read_kernel(r: &mut Reader<'_>) -> Result<KernelCounters, DecodeError> {
    let ordinal = r.u32("counters.ordinal")?;
    let uuid = match r.u8("counters.uuid")? {
        0 => None,
        1 => Some(r.array16("counters.uuid")?),
        _ => {
            return Err(DecodeError::Invalid {
                field: "counters.uuid",
                reason: "presence flag must be 0 or 1",
            })
        }
    };
    let name = r.str("counters.name", MAX_KERNEL_NAME_BYTES)?;
    if name.is_empty() {
        return Err(DecodeError::Invalid {
            field: "counters.name",
            reason: "must not be empty",
        });
    }
    let measured = r.u8("counters.measured")?;
    if measured & !ALL != 0 {
        return Err(DecodeError::Invalid {
            field: "counters.measured",
            reason: "unknown bits set",
        });
    }
    let mut values = [0u64; 7];
    for v in values.iter_mut() {
        *v = r.u64("counters.values")?;
    }
    let [fp64, fp32, fp16, tensor, read, write, duration] = values;
    let has = |bit: u8, v: u64| (measured & bit != 0).then_some(v);
    Ok(KernelCounters {
        device: DeviceId { ordinal, uuid },
        name,
        flops: Flops {
            fp64: has(FP64, fp64),
            fp32: has(FP32, fp32),
            fp16: has(FP16, fp16),
            tensor: has(TENSOR, tensor),
        },
        dram_bytes: has(DRAM, 0).map(|_| (read, write)),
        duration_ns: has(DURATION, duration),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode, encode_delta, Delta, Message, HEADER_BYTES};

    fn kernel(i: usize, measured: bool) -> KernelCounters {
        let v = |x: u64| measured.then_some(x);
        KernelCounters {
            device: DeviceId {
                ordinal: (i % 2) as u32,
                uuid: (i % 3 != 0).then_some([i as u8; 16]),
            },
            name: format!("_Z6kernel{i}Pf"),
            flops: Flops {
                fp64: v(1),
                fp32: Some(2 * i as u64),
                fp16: v(3),
                tensor: v(1 << 40),
            },
            dram_bytes: measured.then_some((4096, 1 << 33)),
            duration_ns: v(12_345),
        }
    }

    fn decode_all(frames: &[Vec<u8>]) -> Vec<KernelCounters> {
        let mut out = Vec::new();
        for f in frames {
            let (message, used) = decode(f).unwrap();
            assert_eq!(used, f.len());
            let Message::Counters(c) = message else {
                panic!("not a counters message: {message:?}");
            };
            out.extend(c.kernels);
        }
        out
    }

    #[test]
    fn counters_round_trip_with_what_was_not_measured_kept_apart_from_zero() {
        let kernels: Vec<_> = (0..7).map(|i| kernel(i, i % 2 == 0)).collect();
        let frames = encode_counters(&kernels);
        assert_eq!(frames.len(), 1);
        assert_eq!(decode_all(&frames), kernels);
        let zero = KernelCounters {
            flops: Flops {
                fp32: Some(0),
                ..Flops::default()
            },
            ..kernel(1, false)
        };
        assert_eq!(
            decode_all(&encode_counters(std::slice::from_ref(&zero))),
            [zero]
        );
        assert!(encode_counters(&[]).is_empty());
    }

    #[test]
    fn many_kernels_split_into_frames_within_the_limits() {
        let mut kernels: Vec<_> = (0..600).map(|i| kernel(i, true)).collect();
        kernels[5].name = "x".repeat(5000);
        let frames = encode_counters(&kernels);
        assert_eq!(frames.len(), 3);
        assert!(frames
            .iter()
            .all(|f| f.len() - HEADER_BYTES <= MAX_PAYLOAD_BYTES));
        let back = decode_all(&frames);
        assert_eq!(back.len(), 600);
        assert_eq!(
            back[5].name.len(),
            MAX_KERNEL_NAME_BYTES,
            "long names truncated"
        );
        assert_eq!(back[599], kernels[599]);
    }

    #[test]
    fn a_counters_frame_does_not_disturb_the_deltas_around_it() {
        // Version stays 2: an old-layout stream with a counters frame in between
        // decodes frame by frame.
        let delta = Delta {
            seq: 4,
            dropped_records: 0,
            kernel_duty_ppm: 50_000,
            devices: Vec::new(),
        };
        let mut stream = encode_delta(&delta).concat();
        stream.extend(encode_counters(&[kernel(1, true)]).concat());
        stream.extend(encode_delta(&delta).concat());
        let (first, a) = decode(&stream).unwrap();
        let (second, b) = decode(&stream[a..]).unwrap();
        let (third, _) = decode(&stream[a + b..]).unwrap();
        assert_eq!(first, Message::Delta(delta.clone()));
        assert!(matches!(second, Message::Counters(c) if c.kernels.len() == 1));
        assert_eq!(third, Message::Delta(delta));
    }

    #[test]
    fn malformed_counters_are_refused_with_a_typed_error() {
        let frame = encode_counters(&[kernel(1, true)]).remove(0);
        let name_len_at = HEADER_BYTES + 2 + 4 + 1 + 16;
        let flags_at = name_len_at + 2 + "_Z6kernel1Pf".len();
        let mut bad_flags = frame.clone();
        bad_flags[flags_at] = 0x80;
        assert_eq!(
            decode(&bad_flags).unwrap_err().reason(),
            "invalid",
            "unknown measured bits"
        );
        let mut empty_name = frame.clone();
        empty_name[name_len_at] = 0;
        assert!(decode(&empty_name).is_err());
        let mut too_many = frame.clone();
        too_many[HEADER_BYTES..HEADER_BYTES + 2].copy_from_slice(&1000u16.to_le_bytes());
        assert_eq!(decode(&too_many).unwrap_err().reason(), "too_many");
        let mut short = frame;
        let len = short.len();
        short.truncate(len - 3);
        short[8..12].copy_from_slice(&((len - 3 - HEADER_BYTES) as u32).to_le_bytes());
        assert_eq!(decode(&short).unwrap_err().reason(), "truncated");
    }
}
