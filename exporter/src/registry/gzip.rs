//! gzip bodies (RFC 1952) from one deflate compressor kept for the process.
//! Prometheus asks for gzip on every scrape; a fresh compressor allocates and zeroes a
//! few hundred KiB of tables each time, which cost more CPU than compressing the body
//! itself. One for all threads, not one per thread: each snapshot is compressed once,
//! so they rarely wait, and the tables stay resident once, not per HTTP thread.

use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use std::sync::{LazyLock, Mutex};

/// Magic, deflate, no flags, no modification time, "fastest" extra flag, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff];

static COMPRESSOR: LazyLock<Mutex<Compress>> =
    LazyLock::new(|| Mutex::new(Compress::new(Compression::fast(), false)));

/// `body` as one gzip member.
pub fn gzip(body: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(HEADER.len() + body.len() / 3 + 64);
    out.extend_from_slice(&HEADER);
    // A panic mid-compression leaves the compressor to be reset, which deflate does
    // first, so a poisoned lock is still usable.
    let mut compressor = COMPRESSOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    deflate(&mut compressor, body, &mut out);
    drop(compressor);
    let mut crc = Crc::new();
    crc.update(body);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    // ISIZE is the length modulo 2^32 (RFC 1952, 2.3.1).
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    Bytes::from(out)
}

/// Appends `input` compressed as raw deflate to `out`, leaving `compressor` reset
/// for the next body.
fn deflate(compressor: &mut Compress, input: &[u8], out: &mut Vec<u8>) {
    compressor.reset();
    loop {
        let consumed = compressor.total_in() as usize;
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(1024));
        }
        let status = compressor
            .compress_vec(&input[consumed..], out, FlushCompress::Finish)
            .expect("deflate into a Vec with room left cannot fail");
        if status == Status::StreamEnd {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    #[test]
    fn round_trips_and_the_kept_compressor_starts_afresh() {
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("poolprof_gpu_up{{gpu=\"{}\"}} 1\n", i % 97).into_bytes())
            .collect();
        for body in [&b"# EOF\n"[..], &big, b"", &big[..1000]] {
            let gz = gzip(body);
            assert_eq!(&gz[..3], &[0x1f, 0x8b, 8]);
            assert_eq!(gunzip(&gz), body);
        }
        assert!(gzip(&big).len() < big.len() / 10, "it compresses");
    }

    #[test]
    fn incompressible_bodies_grow_the_output_as_needed() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert_eq!(gunzip(&gzip(&noise)), noise);
    }
}
