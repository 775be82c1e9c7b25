//! Wire protocol: round trips, bounds and hostile input.

use poolprof_inject::wire::*;
use proptest::prelude::*;

fn hello() -> Hello {
    Hello {
        pid: 4242,
        process_name: "python3".into(),
        workload: Some("team-a/train".into()),
        library_version: "0.1.0".into(),
        interval_ms: 1000,
        duty: DutyCycle::Sampled {
            trace_ms: 100,
            period_ms: 1000,
        },
    }
}

fn kernel(name: &str, launches: u64) -> KernelDelta {
    KernelDelta {
        name: name.into(),
        stats: KernelStats {
            launches,
            total_ns: launches * 1000 + 1000,
            min_ns: 1000,
            max_ns: 2000,
        },
        geometry: Geometry {
            grid: [80, 2, 1],
            block: [256, 1, 1],
            registers: 32,
            static_shared_bytes: 1024,
            dynamic_shared_bytes: 49152,
        },
    }
}

fn delta(kernels: usize) -> Delta {
    Delta {
        seq: 7,
        dropped_records: 3,
        kernel_duty_ppm: 100_000,
        devices: vec![DeviceDelta {
            device: DeviceId {
                ordinal: 0,
                uuid: Some([0xab; 16]),
            },
            kernels: (0..kernels)
                .map(|i| kernel(&format!("_Z6kernel{i}v"), i as u64 + 1))
                .collect(),
            folded: KernelStats::one(5),
            memcpy: MemcpyBytes {
                htod: 1 << 20,
                dtoh: 4096,
                dtod: 0,
                other: 12,
            },
            memset_bytes: 64,
        }],
    }
}

fn single_frame(bytes: &[u8]) -> Message {
    let (message, used) = decode(bytes).expect("decodes");
    assert_eq!(used, bytes.len(), "one frame uses every byte");
    message
}

#[test]
fn hello_round_trips() {
    let h = hello();
    assert_eq!(single_frame(&encode_hello(&h)), Message::Hello(h));
    let always = Hello {
        workload: None,
        duty: DutyCycle::Always,
        ..hello()
    };
    assert_eq!(single_frame(&encode_hello(&always)), Message::Hello(always));
}

#[test]
fn delta_round_trips_in_one_frame() {
    let d = delta(10);
    let frames = encode_delta(&d);
    assert_eq!(frames.len(), 1);
    assert_eq!(single_frame(&frames[0]), Message::Delta(d));
}

#[test]
fn large_delta_splits_into_frames_that_add_up() {
    let d = delta(MAX_KERNELS_PER_FRAME * 2 + 17);
    let frames = encode_delta(&d);
    assert_eq!(frames.len(), 3);
    let mut kernels = Vec::new();
    let mut memcpy = MemcpyBytes::default();
    let mut dropped = 0;
    for f in &frames {
        assert!(f.len() <= HEADER_BYTES + MAX_PAYLOAD_BYTES);
        let Message::Delta(part) = single_frame(f) else {
            panic!("expected a delta")
        };
        assert_eq!(part.seq, d.seq);
        dropped += part.dropped_records;
        for dev in part.devices {
            memcpy.merge(&dev.memcpy);
            kernels.extend(dev.kernels);
        }
    }
    assert_eq!(kernels, d.devices[0].kernels);
    assert_eq!(
        memcpy, d.devices[0].memcpy,
        "memcpy is sent once, not per frame"
    );
    assert_eq!(dropped, d.dropped_records);
}

#[test]
fn many_devices_split_too() {
    let mut d = delta(1);
    let template = d.devices[0].clone();
    d.devices = (0..(MAX_DEVICES_PER_FRAME as u32 + 3))
        .map(|ordinal| DeviceDelta {
            device: DeviceId {
                ordinal,
                uuid: None,
            },
            ..template.clone()
        })
        .collect();
    let frames = encode_delta(&d);
    assert_eq!(frames.len(), 2);
    let total: usize = frames
        .iter()
        .map(|f| match single_frame(f) {
            Message::Delta(p) => p.devices.len(),
            Message::Hello(_) | Message::Counters(_) => 0,
        })
        .sum();
    assert_eq!(total, d.devices.len());
}

#[test]
fn long_names_are_truncated_on_a_char_boundary() {
    let mut d = delta(1);
    d.devices[0].kernels[0].name = "é".repeat(MAX_KERNEL_NAME_BYTES); // 2 bytes each
    let Message::Delta(back) = single_frame(&encode_delta(&d)[0]) else {
        panic!("expected a delta")
    };
    let name = &back.devices[0].kernels[0].name;
    assert_eq!(name.len(), MAX_KERNEL_NAME_BYTES);
    assert!(name.chars().all(|c| c == 'é'));
}

#[test]
fn every_truncation_is_reported_as_truncated() {
    let bytes = encode_delta(&delta(3)).remove(0);
    for cut in 0..bytes.len() {
        match decode(&bytes[..cut]) {
            Err(DecodeError::Truncated { .. }) => {}
            other => panic!("prefix of {cut} bytes gave {other:?}"),
        }
    }
}

#[test]
fn truncated_payload_with_honest_length_is_truncated() {
    // A header whose length is short by 4: the reader runs out inside the message.
    let mut bytes = encode_hello(&hello());
    let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) - 4;
    bytes[8..12].copy_from_slice(&len.to_le_bytes());
    bytes.truncate(bytes.len() - 4);
    assert!(matches!(decode(&bytes), Err(DecodeError::Truncated { .. })));
}

#[test]
fn oversized_frames_are_rejected_from_the_header_alone() {
    let mut header = [0u8; HEADER_BYTES];
    header[..4].copy_from_slice(&MAGIC);
    header[4..6].copy_from_slice(&VERSION.to_le_bytes());
    header[6] = 2;
    header[8..12].copy_from_slice(&(MAX_PAYLOAD_BYTES as u32 + 1).to_le_bytes());
    assert_eq!(
        FrameHeader::parse(&header),
        Err(DecodeError::Oversized {
            len: MAX_PAYLOAD_BYTES + 1,
            max: MAX_PAYLOAD_BYTES
        })
    );
    header[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        FrameHeader::parse(&header).unwrap_err().reason(),
        "oversized"
    );
}

#[test]
fn wrong_version_magic_and_type_are_typed() {
    let good = encode_hello(&hello());
    let mut newer = good.clone();
    newer[4..6].copy_from_slice(&(VERSION + 1).to_le_bytes());
    assert_eq!(
        decode(&newer).unwrap_err(),
        DecodeError::WrongVersion {
            got: VERSION + 1,
            supported: VERSION
        }
    );
    let mut magic = good.clone();
    magic[..4].copy_from_slice(b"GET ");
    assert_eq!(decode(&magic).unwrap_err(), DecodeError::BadMagic(*b"GET "));
    let mut kind = good.clone();
    kind[6] = 9;
    assert_eq!(decode(&kind).unwrap_err(), DecodeError::UnknownType(9));
}

#[test]
fn version_1_frames_whose_memory_bytes_were_exact_are_refused_not_scaled() {
    // Version 1 sent exact memcpy/memset bytes next to a kernel-only duty; this build
    // scales the bytes by the duty, so it must not read them.
    assert_eq!(VERSION, 2);
    let hello = encode_hello(&hello());
    let deltas = encode_delta(&delta(3));
    for frame in std::iter::once(&hello).chain(&deltas) {
        let mut v1 = frame.clone();
        v1[4..6].copy_from_slice(&1u16.to_le_bytes());
        let err = decode(&v1).unwrap_err();
        assert_eq!(
            err,
            DecodeError::WrongVersion {
                got: 1,
                supported: 2
            }
        );
        assert_eq!(err.reason(), "wrong_version");
        assert!(err.to_string().contains("upgrade the older side"), "{err}");
        let mut stream: &[u8] = &v1;
        assert!(matches!(
            read_message(&mut stream),
            Err(ReadError::Decode(DecodeError::WrongVersion { got: 1, .. }))
        ));
    }
}

#[test]
fn every_frame_carries_the_current_version() {
    let frames = std::iter::once(encode_hello(&hello())).chain(encode_delta(&delta(600)));
    for frame in frames {
        assert_eq!(u16::from_le_bytes([frame[4], frame[5]]), VERSION);
    }
}

#[test]
fn bad_utf8_and_trailing_bytes_are_typed() {
    let h = Hello {
        process_name: "abc".into(),
        ..hello()
    };
    let mut bytes = encode_hello(&h);
    // pid (4) then name length (2) then "abc".
    bytes[HEADER_BYTES + 6] = 0xff;
    assert_eq!(
        decode(&bytes).unwrap_err(),
        DecodeError::BadUtf8("hello.process_name")
    );

    let mut bytes = encode_hello(&hello());
    bytes.push(0);
    let len = (bytes.len() - HEADER_BYTES) as u32;
    bytes[8..12].copy_from_slice(&len.to_le_bytes());
    assert_eq!(decode(&bytes).unwrap_err(), DecodeError::TrailingBytes(1));
}

#[test]
fn inconsistent_stats_are_invalid() {
    let mut d = delta(1);
    d.devices[0].kernels[0].stats.min_ns = 10_000; // above max
    let err = decode(&encode_delta(&d)[0]).unwrap_err();
    assert_eq!(err.reason(), "invalid", "{err}");

    let mut d = delta(1);
    d.devices[0].kernels[0].stats = KernelStats::default(); // a kernel with no launch
    assert_eq!(
        decode(&encode_delta(&d)[0]).unwrap_err().reason(),
        "invalid"
    );
}

#[test]
fn too_many_kernels_in_a_hand_made_frame_is_rejected() {
    let bytes = encode_delta(&delta(1)).remove(0);
    // The kernel count is the u16 just before the single kernel entry.
    let name_len = "_Z6kernel0v".len();
    let kernel_bytes = 2 + name_len + 32 + 24 + 2 + 8;
    let count_at = bytes.len() - kernel_bytes - 2;
    let mut forged = bytes.clone();
    forged[count_at..count_at + 2]
        .copy_from_slice(&(MAX_KERNELS_PER_FRAME as u16 + 1).to_le_bytes());
    assert!(matches!(
        decode(&forged),
        Err(DecodeError::TooMany {
            field: "device.kernels",
            ..
        })
    ));
}

#[test]
fn uuid_label_matches_nvml_format() {
    let id = DeviceId {
        ordinal: 3,
        uuid: Some([
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ]),
    };
    assert_eq!(id.label(), "GPU-12345678-9abc-def0-0123-456789abcdef");
    assert_eq!(
        DeviceId {
            ordinal: 3,
            uuid: None
        }
        .label(),
        "cuda:3"
    );
}

#[test]
fn duty_cycle_ppm() {
    assert_eq!(DutyCycle::Always.ppm(), FULL_DUTY_PPM);
    let d = DutyCycle::Sampled {
        trace_ms: 50,
        period_ms: 1000,
    };
    assert_eq!(d.ppm(), 50_000);
}

fn arb_stats() -> impl Strategy<Value = KernelStats> {
    (1u64..1_000_000, 0u64..1_000_000, 0u64..1_000_000).prop_map(|(launches, a, b)| {
        let (min, max) = (a.min(b), a.max(b));
        KernelStats {
            launches,
            total_ns: max + min * (launches - 1),
            min_ns: min,
            max_ns: max,
        }
    })
}

fn arb_kernel() -> impl Strategy<Value = KernelDelta> {
    (
        "[a-zA-Z_][a-zA-Z0-9_:<>]{0,40}",
        arb_stats(),
        any::<[u32; 6]>(),
        any::<u16>(),
    )
        .prop_map(|(name, stats, dims, registers)| KernelDelta {
            name,
            stats,
            geometry: Geometry {
                grid: [dims[0], dims[1], dims[2]],
                block: [dims[3], dims[4], dims[5]],
                registers,
                static_shared_bytes: dims[0] / 7,
                dynamic_shared_bytes: dims[1] / 3,
            },
        })
}

fn arb_delta() -> impl Strategy<Value = Delta> {
    let device = (
        any::<u32>(),
        proptest::option::of(any::<[u8; 16]>()),
        proptest::collection::vec(arb_kernel(), 0..20),
        proptest::option::of(arb_stats()),
        any::<[u64; 5]>(),
    )
        .prop_map(|(ordinal, uuid, kernels, folded, bytes)| DeviceDelta {
            device: DeviceId { ordinal, uuid },
            kernels,
            folded: folded.unwrap_or_default(),
            memcpy: MemcpyBytes {
                htod: bytes[0],
                dtoh: bytes[1],
                dtod: bytes[2],
                other: bytes[3],
            },
            memset_bytes: bytes[4],
        });
    (
        any::<u64>(),
        any::<u64>(),
        1u32..=FULL_DUTY_PPM,
        proptest::collection::vec(device, 0..4),
    )
        .prop_map(|(seq, dropped_records, kernel_duty_ppm, devices)| Delta {
            seq,
            dropped_records,
            kernel_duty_ppm,
            devices,
        })
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn random_payloads_behind_a_valid_header_never_panic(
        kind in 1u8..=2,
        payload in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.push(kind);
        bytes.push(0);
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&payload);
        if let Ok((_, used)) = decode(&bytes) {
            prop_assert_eq!(used, bytes.len());
        }
    }

    #[test]
    fn mutated_frames_never_panic(d in arb_delta(), at in any::<usize>(), byte in any::<u8>()) {
        let mut bytes = encode_delta(&d).remove(0);
        let i = at % bytes.len();
        bytes[i] = byte;
        let _ = decode(&bytes);
    }

    #[test]
    fn deltas_round_trip(d in arb_delta()) {
        let frames = encode_delta(&d);
        prop_assert_eq!(frames.len(), 1);
        prop_assert_eq!(single_frame(&frames[0]), Message::Delta(d));
    }
}

#[test]
fn read_message_reads_frames_from_a_stream_in_order() {
    let mut stream = encode_hello(&hello());
    for f in encode_delta(&delta(2)) {
        stream.extend(f);
    }
    let mut cursor = std::io::Cursor::new(stream);
    assert!(matches!(read_message(&mut cursor), Ok(Message::Hello(_))));
    assert_eq!(read_message(&mut cursor).unwrap(), Message::Delta(delta(2)));
    assert!(matches!(read_message(&mut cursor), Err(ReadError::Closed)));
}

#[test]
fn read_message_reports_a_frame_cut_mid_payload() {
    let mut bytes = encode_hello(&hello());
    bytes.truncate(bytes.len() - 1);
    let err = read_message(&mut std::io::Cursor::new(bytes)).unwrap_err();
    assert!(
        matches!(err, ReadError::Decode(DecodeError::Truncated { .. })),
        "{err}"
    );
}
