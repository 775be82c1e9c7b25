//! The wire protocol between the injection library and `poolprof-exporter`.
//!
//! A connection carries length-prefixed binary frames over a local stream socket. Each
//! frame is a 12-byte header followed by a payload:
//!
//! | bytes | field |
//! | --- | --- |
//! | 4 | magic `PPKI` |
//! | 2 | protocol version, little-endian ([`VERSION`]) |
//! | 1 | message type (1 = [`Hello`], 2 = [`Delta`], 3 = [`Counters`]) |
//! | 1 | reserved, 0 |
//! | 4 | payload length, little-endian, at most [`MAX_PAYLOAD_BYTES`] |
//!
//! The first frame of a connection is a [`Hello`]; every later frame is a [`Delta`]
//! holding what happened since the previous one, or [`Counters`] (optional, only from
//! a library with `POOLPROF_KERNEL_COUNTERS=1`). All integers are little-endian;
//! strings are a `u16` length and UTF-8 bytes. Every count and length is bounded, so a
//! reader never allocates more than the bytes a peer actually sent, and the encoder
//! truncates or splits so that what it writes always decodes.

use std::fmt;
use std::io::Read;

/// First four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"PPKI";
/// The protocol version this build speaks, and the only one it reads.
///
/// Version 2 changed a meaning, not the layout: memcpy and memset bytes are sampled by
/// the duty cycle like kernels and scaled by [`Delta::kernel_duty_ppm`] (in version 1
/// they were exact and scaled by nothing). Reading the other version would scale a
/// peer's bytes wrongly, so a frame of any other version is refused
/// ([`DecodeError::WrongVersion`]).
pub const VERSION: u16 = 2;
/// Size of the frame header.
pub const HEADER_BYTES: usize = 12;
/// Largest payload a frame may announce.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;
/// Longest kernel name, in bytes; the encoder truncates longer names.
pub const MAX_KERNEL_NAME_BYTES: usize = 1024;
/// Longest process name, workload or version string, in bytes.
pub const MAX_LABEL_BYTES: usize = 256;
/// Most kernel entries in one frame; the encoder splits larger deltas.
pub const MAX_KERNELS_PER_FRAME: usize = 512;
/// Most devices in one frame.
pub const MAX_DEVICES_PER_FRAME: usize = 64;
/// Duty cycle meaning "every record traced", in parts per million.
pub const FULL_DUTY_PPM: u32 = 1_000_000;

const TYPE_HELLO: u8 = 1;
const TYPE_DELTA: u8 = 2;
const TYPE_COUNTERS: u8 = 3;

mod counters;
pub use counters::{encode_counters, Counters, Flops, KernelCounters, MAX_COUNTERS_PER_FRAME};

/// Why bytes could not be decoded into a message. A reader that sees any of these
/// closes the connection: the stream cannot be resynchronised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the frame needs.
    #[error("truncated {what}: need {needed} bytes, have {available}")]
    Truncated {
        /// The part being read.
        what: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// The frame does not start with [`MAGIC`].
    #[error("bad magic {0:02x?}: not a poolprof-inject peer")]
    BadMagic([u8; 4]),
    /// The peer speaks another protocol version.
    #[error("protocol version {got} not supported (this exporter speaks {supported}); upgrade the older side")]
    WrongVersion {
        /// Version in the frame.
        got: u16,
        /// Version this build speaks.
        supported: u16,
    },
    /// The header announces more than [`MAX_PAYLOAD_BYTES`].
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    Oversized {
        /// Announced payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The message type is not one this version knows.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// A string field is not UTF-8.
    #[error("field {0} is not valid UTF-8")]
    BadUtf8(&'static str),
    /// A string field is longer than its limit.
    #[error("field {field} is {len} bytes, over the limit of {max}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A list holds more entries than its limit.
    #[error("{field} holds {count} entries, over the limit of {max}")]
    TooMany {
        /// The list.
        field: &'static str,
        /// Its announced count.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A value is out of its range or inconsistent with another.
    #[error("field {field}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The payload holds bytes after the message.
    #[error("{0} unexpected bytes after the message")]
    TrailingBytes(usize),
}

impl DecodeError {
    /// A short, fixed label for this kind of error (used as a metric label).
    pub fn reason(&self) -> &'static str {
        match self {
            DecodeError::Truncated { .. } => "truncated",
            DecodeError::BadMagic(_) => "bad_magic",
            DecodeError::WrongVersion { .. } => "wrong_version",
            DecodeError::Oversized { .. } => "oversized",
            DecodeError::UnknownType(_) => "unknown_type",
            DecodeError::BadUtf8(_) => "bad_utf8",
            DecodeError::TooLong { .. } => "too_long",
            DecodeError::TooMany { .. } => "too_many",
            DecodeError::Invalid { .. } => "invalid",
            DecodeError::TrailingBytes(_) => "trailing_bytes",
        }
    }
}

/// Tracing duty cycle of every record kind (kernels, memcpy, memset): trace
/// `trace_ms` out of every `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DutyCycle {
    /// Every record is traced.
    Always,
    /// Records are collected only part of the time.
    Sampled {
        /// Milliseconds traced in each period, at least 1.
        trace_ms: u32,
        /// Length of a period, greater than `trace_ms`.
        period_ms: u32,
    },
}

impl DutyCycle {
    /// The traced fraction in parts per million.
    pub fn ppm(self) -> u32 {
        match self {
            DutyCycle::Always => FULL_DUTY_PPM,
            DutyCycle::Sampled {
                trace_ms,
                period_ms,
            } => share_ppm(u128::from(trace_ms), u128::from(period_ms)),
        }
    }
}

/// `part` over `whole` in parts per million, at least 1 (a sampled process always
/// says it traced something: a ratio of 0 would scale its counts by infinity) and at
/// most [`FULL_DUTY_PPM`].
pub fn share_ppm(part: u128, whole: u128) -> u32 {
    (part * u128::from(FULL_DUTY_PPM) / whole.max(1)).clamp(1, u128::from(FULL_DUTY_PPM)) as u32
}

/// First message of a connection: who the process is and how it samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The process id as the process sees it (the exporter trusts the socket's peer
    /// credentials instead, which are in its own pid namespace).
    pub pid: u32,
    /// Short process name (`/proc/self/comm`).
    pub process_name: String,
    /// `POOLPROF_WORKLOAD` if the process has it set.
    pub workload: Option<String>,
    /// Version of the injection library.
    pub library_version: String,
    /// Milliseconds between deltas.
    pub interval_ms: u32,
    /// Tracing duty cycle.
    pub duty: DutyCycle,
}

/// Launch statistics of one kernel (or of a group of folded kernels).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// Number of launches.
    pub launches: u64,
    /// Sum of durations, nanoseconds.
    pub total_ns: u64,
    /// Shortest launch, nanoseconds (0 when `launches` is 0).
    pub min_ns: u64,
    /// Longest launch, nanoseconds.
    pub max_ns: u64,
}

impl KernelStats {
    /// Statistics of a single launch.
    pub fn one(duration_ns: u64) -> Self {
        Self {
            launches: 1,
            total_ns: duration_ns,
            min_ns: duration_ns,
            max_ns: duration_ns,
        }
    }

    /// Adds `other` into `self`, saturating.
    pub fn merge(&mut self, other: &KernelStats) {
        if other.launches == 0 {
            return;
        }
        self.min_ns = if self.launches == 0 {
            other.min_ns
        } else {
            self.min_ns.min(other.min_ns)
        };
        self.max_ns = self.max_ns.max(other.max_ns);
        self.launches = self.launches.saturating_add(other.launches);
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
    }

    fn validate(&self, field: &'static str, allow_empty: bool) -> Result<(), DecodeError> {
        if self.launches == 0 {
            return if allow_empty && self.total_ns == 0 && self.min_ns == 0 && self.max_ns == 0 {
                Ok(())
            } else {
                Err(DecodeError::Invalid {
                    field,
                    reason: "no launches but non-zero durations",
                })
            };
        }
        if self.min_ns > self.max_ns || self.max_ns > self.total_ns {
            return Err(DecodeError::Invalid {
                field,
                reason: "durations not ordered min <= max <= total",
            });
        }
        Ok(())
    }
}

/// Launch geometry and resources of a kernel (its last launch in the interval).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Geometry {
    /// Grid size in blocks, x y z.
    pub grid: [u32; 3],
    /// Block size in threads, x y z.
    pub block: [u32; 3],
    /// Registers per thread.
    pub registers: u16,
    /// Static shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared_bytes: u32,
}

/// One kernel's activity on one device during an interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDelta {
    /// The kernel's (usually mangled) name, at most [`MAX_KERNEL_NAME_BYTES`].
    pub name: String,
    /// Launch statistics.
    pub stats: KernelStats,
    /// Geometry of the last launch.
    pub geometry: Geometry,
}

/// Bytes moved by memory copies, by direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemcpyBytes {
    /// Host to device.
    pub htod: u64,
    /// Device to host.
    pub dtoh: u64,
    /// Device to device (same device).
    pub dtod: u64,
    /// Everything else: peer to peer, arrays, host to host.
    pub other: u64,
}

impl MemcpyBytes {
    /// Adds `other` into `self`, saturating.
    pub fn merge(&mut self, other: &MemcpyBytes) {
        self.htod = self.htod.saturating_add(other.htod);
        self.dtoh = self.dtoh.saturating_add(other.dtoh);
        self.dtod = self.dtod.saturating_add(other.dtod);
        self.other = self.other.saturating_add(other.other);
    }

    /// True when no byte moved.
    pub fn is_empty(&self) -> bool {
        *self == MemcpyBytes::default()
    }
}

/// Which GPU a device delta is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// CUDA device ordinal inside the process (depends on `CUDA_VISIBLE_DEVICES`).
    pub ordinal: u32,
    /// The device UUID (the 16 bytes behind NVML's `GPU-…` string), when known.
    pub uuid: Option<[u8; 16]>,
}

impl DeviceId {
    /// The UUID in NVML's text form (`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`), or
    /// `cuda:<ordinal>` when the library could not read it.
    pub fn label(&self) -> String {
        match self.uuid {
            Some(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                format!(
                    "GPU-{}-{}-{}-{}-{}",
                    &hex[0..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..32]
                )
            }
            None => format!("cuda:{}", self.ordinal),
        }
    }
}

/// Activity on one device during an interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDelta {
    /// The device.
    pub device: DeviceId,
    /// Kernels seen, each name once.
    pub kernels: Vec<KernelDelta>,
    /// Launches of kernels the library folded because it saw too many distinct names.
    pub folded: KernelStats,
    /// Memory copies (sampled like the kernels).
    pub memcpy: MemcpyBytes,
    /// Bytes written by memsets (sampled like the kernels).
    pub memset_bytes: u64,
}

/// What happened in the process since the previous delta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    /// Sequence number of the interval, from 0; frames split from one interval share it.
    pub seq: u64,
    /// Activity records lost since the previous delta (CUPTI buffers full).
    pub dropped_records: u64,
    /// Share of the activity the delta's records sample, in ppm
    /// (1..=[`FULL_DUTY_PPM`]): of its periods' kernel launches as the library counts
    /// them from grid ids, or of time when it cannot. It covers kernels, memcpy and
    /// memset alike (since version 2), and the reader scales launches, kernel time and
    /// bytes up by its inverse.
    pub kernel_duty_ppm: u32,
    /// Per-device activity.
    pub devices: Vec<DeviceDelta>,
}

impl Delta {
    /// True when the delta carries no activity and no drops.
    pub fn is_empty(&self) -> bool {
        self.dropped_records == 0
            && self.devices.iter().all(|d| {
                d.kernels.is_empty()
                    && d.folded.launches == 0
                    && d.memcpy.is_empty()
                    && d.memset_bytes == 0
            })
    }
}

/// A decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// First message of a connection.
    Hello(Hello),
    /// Activity since the previous delta.
    Delta(Delta),
    /// Hardware counters of kernels profiled once each (optional; version 2 peers
    /// without it never send it).
    Counters(Counters),
}

/// A validated frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    message_type: u8,
    payload_len: usize,
}

impl FrameHeader {
    /// Checks magic, version, type and length; a reader calls this before it reads
    /// (or allocates for) the payload.
    pub fn parse(bytes: &[u8; HEADER_BYTES]) -> Result<FrameHeader, DecodeError> {
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(DecodeError::BadMagic(magic));
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != VERSION {
            return Err(DecodeError::WrongVersion {
                got: version,
                supported: VERSION,
            });
        }
        let message_type = bytes[6];
        if !matches!(message_type, TYPE_HELLO | TYPE_DELTA | TYPE_COUNTERS) {
            return Err(DecodeError::UnknownType(message_type));
        }
        if bytes[7] != 0 {
            return Err(DecodeError::Invalid {
                field: "header.reserved",
                reason: "must be 0",
            });
        }
        let payload_len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        if payload_len > MAX_PAYLOAD_BYTES {
            return Err(DecodeError::Oversized {
                len: payload_len,
                max: MAX_PAYLOAD_BYTES,
            });
        }
        Ok(FrameHeader {
            message_type,
            payload_len,
        })
    }

    /// Number of payload bytes that follow the header.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// Decodes the payload that followed this header.
    pub fn decode_payload(&self, payload: &[u8]) -> Result<Message, DecodeError> {
        if payload.len() != self.payload_len {
            return Err(DecodeError::Truncated {
                what: "payload",
                needed: self.payload_len,
                available: payload.len(),
            });
        }
        let mut r = Reader::new(payload);
        let message = match self.message_type {
            TYPE_HELLO => Message::Hello(read_hello(&mut r)?),
            TYPE_COUNTERS => Message::Counters(counters::read_counters(&mut r)?),
            _ => Message::Delta(read_delta(&mut r)?),
        };
        match r.remaining() {
            0 => Ok(message),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }
}

/// Decodes the first frame in `buf`, returning the message and the bytes it used.
pub fn decode(buf: &[u8]) -> Result<(Message, usize), DecodeError> {
    let header: &[u8; HEADER_BYTES] = buf
        .get(..HEADER_BYTES)
        .and_then(|h| h.try_into().ok())
        .ok_or(DecodeError::Truncated {
            what: "header",
            needed: HEADER_BYTES,
            available: buf.len(),
        })?;
    let header = FrameHeader::parse(header)?;
    let end = HEADER_BYTES + header.payload_len;
    let payload = buf.get(HEADER_BYTES..end).ok_or(DecodeError::Truncated {
        what: "payload",
        needed: header.payload_len,
        available: buf.len() - HEADER_BYTES,
    })?;
    Ok((header.decode_payload(payload)?, end))
}

/// Encodes a hello as one frame, truncating strings to their limits.
pub fn encode_hello(hello: &Hello) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(hello.pid);
    w.str(&hello.process_name, MAX_LABEL_BYTES);
    match &hello.workload {
        Some(workload) => {
            w.u8(1);
            w.str(workload, MAX_LABEL_BYTES);
        }
        None => w.u8(0),
    }
    w.str(&hello.library_version, MAX_LABEL_BYTES);
    w.u32(hello.interval_ms);
    let (trace, period) = match hello.duty {
        DutyCycle::Always => (0, 0),
        DutyCycle::Sampled {
            trace_ms,
            period_ms,
        } => (trace_ms, period_ms),
    };
    w.u32(trace);
    w.u32(period);
    frame(TYPE_HELLO, w.0)
}

/// Encodes a delta as one or more frames, each within the limits: kernels beyond
/// [`MAX_KERNELS_PER_FRAME`] (or devices beyond [`MAX_DEVICES_PER_FRAME`]) go to further
/// frames with the same sequence number; names are truncated to
/// [`MAX_KERNEL_NAME_BYTES`].
pub fn encode_delta(delta: &Delta) -> Vec<Vec<u8>> {
    split_delta(delta)
        .iter()
        .map(|part| frame(TYPE_DELTA, write_delta(part)))
        .collect()
}

fn split_delta(delta: &Delta) -> Vec<Delta> {
    let empty = |d: &Delta| Delta {
        seq: d.seq,
        dropped_records: 0,
        kernel_duty_ppm: d.kernel_duty_ppm,
        devices: Vec::new(),
    };
    let mut parts = vec![Delta {
        dropped_records: delta.dropped_records,
        ..empty(delta)
    }];
    let mut kernels_in_part = 0;
    for device in &delta.devices {
        let mut rest: &[KernelDelta] = &device.kernels;
        let mut first_piece = true;
        while first_piece || !rest.is_empty() {
            let part_full = {
                let last = parts.last().expect("parts is never empty");
                kernels_in_part == MAX_KERNELS_PER_FRAME
                    || last.devices.len() == MAX_DEVICES_PER_FRAME
            };
            if part_full {
                parts.push(empty(delta));
                kernels_in_part = 0;
            }
            let take = rest.len().min(MAX_KERNELS_PER_FRAME - kernels_in_part);
            let (now, later) = rest.split_at(take);
            let piece = DeviceDelta {
                device: device.device,
                kernels: now.to_vec(),
                folded: if first_piece {
                    device.folded
                } else {
                    KernelStats::default()
                },
                memcpy: if first_piece {
                    device.memcpy
                } else {
                    MemcpyBytes::default()
                },
                memset_bytes: if first_piece { device.memset_bytes } else { 0 },
            };
            parts
                .last_mut()
                .expect("parts is never empty")
                .devices
                .push(piece);
            kernels_in_part += take;
            rest = later;
            first_piece = false;
        }
    }
    parts
}

fn write_delta(delta: &Delta) -> Vec<u8> {
    let mut w = Writer::default();
    w.u64(delta.seq);
    w.u64(delta.dropped_records);
    w.u32(delta.kernel_duty_ppm.clamp(1, FULL_DUTY_PPM));
    w.u16(delta.devices.len() as u16);
    for device in &delta.devices {
        w.u32(device.device.ordinal);
        match device.device.uuid {
            Some(uuid) => {
                w.u8(1);
                w.0.extend_from_slice(&uuid);
            }
            None => w.u8(0),
        }
        w.stats(&device.folded);
        w.u64(device.memcpy.htod);
        w.u64(device.memcpy.dtoh);
        w.u64(device.memcpy.dtod);
        w.u64(device.memcpy.other);
        w.u64(device.memset_bytes);
        w.u16(device.kernels.len() as u16);
        for kernel in &device.kernels {
            w.str(&kernel.name, MAX_KERNEL_NAME_BYTES);
            w.stats(&kernel.stats);
            let g = &kernel.geometry;
            for v in g.grid.iter().chain(g.block.iter()) {
                w.u32(*v);
            }
            w.u16(g.registers);
            w.u32(g.static_shared_bytes);
            w.u32(g.dynamic_shared_bytes);
        }
    }
    w.0
}

fn frame(message_type: u8, payload: Vec<u8>) -> Vec<u8> {
    debug_assert!(payload.len() <= MAX_PAYLOAD_BYTES);
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(message_type);
    out.push(0);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn read_hello(r: &mut Reader<'_>) -> Result<Hello, DecodeError> {
    let pid = r.u32("hello.pid")?;
    let process_name = r.str("hello.process_name", MAX_LABEL_BYTES)?;
    let workload = match r.u8("hello.workload")? {
        0 => None,
        1 => Some(r.str("hello.workload", MAX_LABEL_BYTES)?),
        _ => {
            return Err(DecodeError::Invalid {
                field: "hello.workload",
                reason: "presence flag must be 0 or 1",
            })
        }
    };
    let library_version = r.str("hello.library_version", MAX_LABEL_BYTES)?;
    let interval_ms = r.u32("hello.interval_ms")?;
    if interval_ms == 0 {
        return Err(DecodeError::Invalid {
            field: "hello.interval_ms",
            reason: "must be at least 1",
        });
    }
    let trace_ms = r.u32("hello.duty")?;
    let period_ms = r.u32("hello.duty")?;
    let duty = match (trace_ms, period_ms) {
        (0, 0) => DutyCycle::Always,
        (t, p) if t >= 1 && p > t => DutyCycle::Sampled {
            trace_ms: t,
            period_ms: p,
        },
        _ => {
            return Err(DecodeError::Invalid {
                field: "hello.duty",
                reason: "need 0/0 or 1 <= trace_ms < period_ms",
            })
        }
    };
    Ok(Hello {
        pid,
        process_name,
        workload,
        library_version,
        interval_ms,
        duty,
    })
}

fn read_delta(r: &mut Reader<'_>) -> Result<Delta, DecodeError> {
    let seq = r.u64("delta.seq")?;
    let dropped_records = r.u64("delta.dropped_records")?;
    let kernel_duty_ppm = r.u32("delta.kernel_duty_ppm")?;
    if !(1..=FULL_DUTY_PPM).contains(&kernel_duty_ppm) {
        return Err(DecodeError::Invalid {
            field: "delta.kernel_duty_ppm",
            reason: "must be in 1..=1000000",
        });
    }
    let device_count = r.count("delta.devices", MAX_DEVICES_PER_FRAME)?;
    let mut devices = Vec::with_capacity(device_count);
    let mut kernels_seen = 0;
    for _ in 0..device_count {
        let device = read_device(r, &mut kernels_seen)?;
        devices.push(device);
    }
    Ok(Delta {
        seq,
        dropped_records,
        kernel_duty_ppm,
        devices,
    })
}

fn read_device(r: &mut Reader<'_>, kernels_seen: &mut usize) -> Result<DeviceDelta, DecodeError> {
    let ordinal = r.u32("device.ordinal")?;
    let uuid = match r.u8("device.uuid")? {
        0 => None,
        1 => Some(r.array16("device.uuid")?),
        _ => {
            return Err(DecodeError::Invalid {
                field: "device.uuid",
                reason: "presence flag must be 0 or 1",
            })
        }
    };
    let folded = r.stats("device.folded")?;
    folded.validate("device.folded", true)?;
    let memcpy = MemcpyBytes {
        htod: r.u64("device.memcpy")?,
        dtoh: r.u64("device.memcpy")?,
        dtod: r.u64("device.memcpy")?,
        other: r.u64("device.memcpy")?,
    };
    let memset_bytes = r.u64("device.memset_bytes")?;
    let count = r.count("device.kernels", MAX_KERNELS_PER_FRAME - *kernels_seen)?;
    *kernels_seen += count;
    let mut kernels = Vec::with_capacity(count);
    for _ in 0..count {
        kernels.push(read_kernel(r)?);
    }
    Ok(DeviceDelta {
        device: DeviceId { ordinal, uuid },
        kernels,
        folded,
        memcpy,
        memset_bytes,
    })
}

fn read_kernel(r: &mut Reader<'_>) -> Result<KernelDelta, DecodeError> {
    let name = r.str("kernel.name", MAX_KERNEL_NAME_BYTES)?;
    if name.is_empty() {
        return Err(DecodeError::Invalid {
            field: "kernel.name",
            reason: "must not be empty",
        });
    }
    let stats = r.stats("kernel.stats")?;
    stats.validate("kernel.stats", false)?;
    let mut dims = [0u32; 6];
    for d in dims.iter_mut() {
        *d = r.u32("kernel.geometry")?;
    }
    let geometry = Geometry {
        grid: [dims[0], dims[1], dims[2]],
        block: [dims[3], dims[4], dims[5]],
        registers: r.u16("kernel.registers")?,
        static_shared_bytes: r.u32("kernel.static_shared_bytes")?,
        dynamic_shared_bytes: r.u32("kernel.dynamic_shared_bytes")?,
    };
    Ok(KernelDelta {
        name,
        stats,
        geometry,
    })
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str, max: usize) {
        let s = truncate_utf8(s, max);
        self.u16(s.len() as u16);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn stats(&mut self, s: &KernelStats) {
        self.u64(s.launches);
        self.u64(s.total_ns);
        self.u64(s.min_ns);
        self.u64(s.max_ns);
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, what: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated {
                what,
                needed: n,
                available: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(what, 1)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let b = self.take(what, 2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(what, 4)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(what, 8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn array16(&mut self, what: &'static str) -> Result<[u8; 16], DecodeError> {
        Ok(self.take(what, 16)?.try_into().expect("16 bytes"))
    }
    fn count(&mut self, field: &'static str, max: usize) -> Result<usize, DecodeError> {
        let count = usize::from(self.u16(field)?);
        if count > max {
            return Err(DecodeError::TooMany { field, count, max });
        }
        Ok(count)
    }
    fn str(&mut self, field: &'static str, max: usize) -> Result<String, DecodeError> {
        let len = usize::from(self.u16(field)?);
        if len > max {
            return Err(DecodeError::TooLong { field, len, max });
        }
        let bytes = self.take(field, len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| DecodeError::BadUtf8(field))
    }
    fn stats(&mut self, field: &'static str) -> Result<KernelStats, DecodeError> {
        Ok(KernelStats {
            launches: self.u64(field)?,
            total_ns: self.u64(field)?,
            min_ns: self.u64(field)?,
            max_ns: self.u64(field)?,
        })
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// Why [`read_message`] returned no message.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// The socket failed (or timed out) before a whole frame arrived.
    #[error("reading a frame: {0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not a valid frame.
    #[error("{0}")]
    Decode(#[from] DecodeError),
}

/// Reads one whole frame from a stream. Memory grows only with bytes actually
/// received, never with what the header announces.
pub fn read_message<R: Read>(reader: &mut R) -> Result<Message, ReadError> {
    let mut header = [0u8; HEADER_BYTES];
    let mut got = 0;
    while got < HEADER_BYTES {
        match reader.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Err(ReadError::Closed),
            Ok(0) => {
                return Err(DecodeError::Truncated {
                    what: "header",
                    needed: HEADER_BYTES,
                    available: got,
                }
                .into())
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let header = FrameHeader::parse(&header)?;
    let mut payload = Vec::new();
    std::io::Read::take(&mut *reader, header.payload_len() as u64).read_to_end(&mut payload)?;
    Ok(header.decode_payload(&payload)?)
}
