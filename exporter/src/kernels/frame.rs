//! Reading one frame from a peer under deadlines and a shared memory budget.
//!
//! A socket read timeout restarts with every byte, so a peer sending one byte a second
//! would never time out. Here every read gets only what is left of a deadline fixed
//! before the frame: the first byte must come by `first_byte_by`, the whole frame
//! (header and payload) by its own deadline, however the bytes trickle in.
//!
//! A frame's payload is read into memory as it arrives. A large one (over
//! [`SMALL_FRAME`]) first takes its announced length from a [`ByteBudget`] shared by
//! all connections, so peers that announce large frames and send them slowly cannot
//! together hold more than the budget. Small frames, a real process's report in most
//! intervals, need no budget (each connection holds at most one), so hostile large
//! frames cannot starve them.

use poolprof_inject::wire::{DecodeError, FrameHeader, Message, HEADER_BYTES};
use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Bytes read from the socket per call while a payload arrives.
const CHUNK: usize = 64 * 1024;

/// Payloads up to this size are read without taking from the budget (a report of 50
/// kernels with 150-byte names is about 12 KiB).
pub const SMALL_FRAME: usize = 64 * 1024;

/// Why no frame was read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection before a frame began.
    #[error("connection closed")]
    Closed,
    /// No frame began before the deadline (silence).
    #[error("no frame before the deadline")]
    Silent,
    /// A frame began but was not complete before its deadline.
    #[error("frame not complete before its deadline")]
    Slow,
    /// The payload could not be given memory from the budget before the deadline.
    #[error("no room in the buffer budget before the deadline")]
    Busy,
    /// The socket failed.
    #[error("reading a frame: {0}")]
    Io(std::io::Error),
    /// The bytes are not a valid frame.
    #[error("{0}")]
    Decode(#[from] DecodeError),
}

impl FrameError {
    /// The `reason` label of `poolprof_inject_rejected_connections_total` (`Closed`
    /// between frames is an orderly close, which callers do not count).
    pub fn reason(&self) -> &'static str {
        match self {
            FrameError::Closed => "closed",
            FrameError::Silent => "timeout",
            FrameError::Slow => "frame_timeout",
            FrameError::Busy => "busy",
            FrameError::Io(_) => "io_error",
            FrameError::Decode(e) => e.reason(),
        }
    }
}

/// When a frame has to arrive.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    /// The first byte must arrive by then.
    pub first_byte_by: Instant,
    /// Time the whole frame has from its first byte; `None`: `first_byte_by` is the
    /// deadline of the whole frame too (the hello, due a fixed time after accept).
    pub frame_timeout: Option<Duration>,
    /// Largest payload accepted in this frame (below the protocol's limit before the
    /// hello, which is small).
    pub max_payload: usize,
}

/// Memory all connections together may hold in frames still arriving.
#[derive(Debug)]
pub struct ByteBudget {
    free: Mutex<usize>,
    freed: Condvar,
}

impl ByteBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Self {
        Self {
            free: Mutex::new(bytes),
            freed: Condvar::new(),
        }
    }

    /// Takes `bytes`, waiting until `deadline` for other frames to give them back.
    fn take(&self, bytes: usize, deadline: Instant) -> Option<Reservation<'_>> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free < bytes {
            let left = deadline.checked_duration_since(Instant::now())?;
            free = self
                .freed
                .wait_timeout(free, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *free -= bytes;
        Some(Reservation {
            budget: self,
            bytes,
        })
    }
}

/// Bytes taken from a [`ByteBudget`], given back on drop.
struct Reservation<'a> {
    budget: &'a ByteBudget,
    bytes: usize,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        *self.budget.free.lock().unwrap_or_else(|p| p.into_inner()) += self.bytes;
        self.budget.freed.notify_all();
    }
}

/// Reads one frame under `deadlines`, its payload within `budget`.
pub fn read_frame(
    stream: &mut UnixStream,
    deadlines: Deadlines,
    budget: &ByteBudget,
) -> Result<Message, FrameError> {
    let mut header = [0u8; HEADER_BYTES];
    match read_by(stream, &mut header[..1], deadlines.first_byte_by) {
        Ok(0) => return Err(FrameError::Closed),
        Ok(_) => {}
        Err(FrameError::Slow) => return Err(FrameError::Silent),
        Err(e) => return Err(e),
    }
    let deadline = match deadlines.frame_timeout {
        Some(timeout) => Instant::now() + timeout,
        None => deadlines.first_byte_by,
    };
    read_exact_by(stream, &mut header[1..], deadline, "header")?;
    let header = FrameHeader::parse(&header)?;
    let len = header.payload_len();
    if len > deadlines.max_payload {
        return Err(DecodeError::Oversized {
            len,
            max: deadlines.max_payload,
        }
        .into());
    }
    let _reserved = match len {
        0..=SMALL_FRAME => None,
        _ => Some(budget.take(len, deadline).ok_or(FrameError::Busy)?),
    };
    // Grown as bytes arrive, never to what the header announced before they do.
    let mut payload = Vec::new();
    while payload.len() < len {
        let want = (len - payload.len()).min(CHUNK);
        let start = payload.len();
        payload.reserve_exact(want);
        payload.resize(start + want, 0);
        let n = read_by(stream, &mut payload[start..], deadline)?;
        payload.truncate(start + n);
        if n == 0 {
            return Err(truncated("payload", len, start).into());
        }
    }
    Ok(header.decode_payload(&payload)?)
}

fn truncated(what: &'static str, needed: usize, available: usize) -> DecodeError {
    DecodeError::Truncated {
        what,
        needed,
        available,
    }
}

/// Fills `buf` by `deadline`.
fn read_exact_by(
    stream: &mut UnixStream,
    buf: &mut [u8],
    deadline: Instant,
    what: &'static str,
) -> Result<(), FrameError> {
    let mut got = 0;
    while got < buf.len() {
        match read_by(stream, &mut buf[got..], deadline)? {
            0 => return Err(truncated(what, buf.len() + 1, got + 1).into()),
            n => got += n,
        }
    }
    Ok(())
}

/// One read that waits at most until `deadline` (`Slow` after it).
fn read_by(
    stream: &mut UnixStream,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<usize, FrameError> {
    loop {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(FrameError::Slow)?;
        stream
            .set_read_timeout(Some(left))
            .map_err(FrameError::Io)?;
        match stream.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poolprof_inject::wire::{encode_hello, DutyCycle, Hello, MAGIC, VERSION};
    use std::io::Write;

    fn hello_frame() -> Vec<u8> {
        encode_hello(&Hello {
            pid: 1,
            process_name: "p".into(),
            workload: Some("w".into()),
            library_version: "t".into(),
            interval_ms: 1000,
            duty: DutyCycle::Always,
        })
    }

    fn deadlines(first: Duration, frame: Option<Duration>) -> Deadlines {
        Deadlines {
            first_byte_by: Instant::now() + first,
            frame_timeout: frame,
            max_payload: 1 << 20,
        }
    }

    #[test]
    fn a_whole_frame_is_read() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        b.write_all(&hello_frame()).unwrap();
        let budget = ByteBudget::new(1 << 20);
        let got = read_frame(&mut a, deadlines(Duration::from_secs(5), None), &budget);
        assert!(matches!(got, Ok(Message::Hello(_))), "{got:?}");
        assert_eq!(*budget.free.lock().unwrap(), 1 << 20, "budget given back");
    }

    #[test]
    fn a_trickled_frame_misses_its_deadline_though_every_byte_is_on_time() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let frame = hello_frame();
        let writer = std::thread::spawn(move || {
            for byte in frame {
                if b.write_all(&[byte]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let budget = ByteBudget::new(1 << 20);
        let started = Instant::now();
        let got = read_frame(
            &mut a,
            deadlines(Duration::from_secs(5), Some(Duration::from_millis(200))),
            &budget,
        );
        assert!(matches!(got, Err(FrameError::Slow)), "{got:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        drop(a);
        writer.join().unwrap();
    }

    #[test]
    fn silence_before_the_first_byte_is_not_a_slow_frame() {
        let (mut a, _b) = UnixStream::pair().unwrap();
        let budget = ByteBudget::new(1 << 20);
        let got = read_frame(&mut a, deadlines(Duration::from_millis(50), None), &budget);
        assert!(matches!(got, Err(FrameError::Silent)), "{got:?}");
    }

    #[test]
    fn payloads_beyond_the_frame_limit_are_refused_before_reading() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&[1, 0]);
        header.extend_from_slice(&5000u32.to_le_bytes());
        b.write_all(&header).unwrap();
        let budget = ByteBudget::new(1 << 20);
        let mut d = deadlines(Duration::from_secs(5), None);
        d.max_payload = 4096;
        let got = read_frame(&mut a, d, &budget);
        assert!(
            matches!(got, Err(FrameError::Decode(DecodeError::Oversized { .. }))),
            "{got:?}"
        );
    }

    /// A frame header announcing a delta of `len` bytes.
    fn large_header(len: usize) -> Vec<u8> {
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&[2, 0]);
        header.extend_from_slice(&(len as u32).to_le_bytes());
        header
    }

    #[test]
    fn a_large_frame_waits_for_budget_and_gives_up_at_its_deadline() {
        let budget = ByteBudget::new(SMALL_FRAME * 2);
        let held = budget.take(SMALL_FRAME, Instant::now()).unwrap();
        let (mut a, mut b) = UnixStream::pair().unwrap();
        b.write_all(&large_header(SMALL_FRAME + 1)).unwrap();
        let got = read_frame(
            &mut a,
            deadlines(Duration::from_secs(5), Some(Duration::from_millis(100))),
            &budget,
        );
        assert!(matches!(got, Err(FrameError::Busy)), "{got:?}");
        // a small frame is read though the budget is short
        let (mut c, mut d) = UnixStream::pair().unwrap();
        d.write_all(&hello_frame()).unwrap();
        let small = read_frame(&mut c, deadlines(Duration::from_secs(5), None), &budget);
        assert!(matches!(small, Ok(Message::Hello(_))), "{small:?}");
        drop(held);
        assert_eq!(*budget.free.lock().unwrap(), SMALL_FRAME * 2);
    }

    #[test]
    fn a_large_frame_is_read_as_it_arrives_and_gives_its_budget_back() {
        let budget = ByteBudget::new(1 << 20);
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let len = 200_000;
        let writer = std::thread::spawn(move || {
            b.write_all(&large_header(len)).unwrap();
            b.write_all(&vec![0xff; len]).unwrap();
        });
        // The bytes arrive whole but are no delta: decoding fails after reading them all.
        let got = read_frame(&mut a, deadlines(Duration::from_secs(5), None), &budget);
        assert!(matches!(got, Err(FrameError::Decode(_))), "{got:?}");
        writer.join().unwrap();
        assert_eq!(*budget.free.lock().unwrap(), 1 << 20);
    }
}
