//! A response body, bounded in size: read whole (small answers, errors) or handed chunk
//! by chunk to the parser thread, so that a large answer is never held whole beside what
//! is parsed from it.

use std::io::{self, Read};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc as std_mpsc, OnceLock};

use bytes::{Buf, Bytes};
use tokio::sync::{mpsc, oneshot};

/// Chunks in flight between the network and the parser: enough to keep both busy, few
/// enough that a slow parser holds back the network rather than filling memory.
const CHUNKS_IN_FLIGHT: usize = 8;

/// Why a body could not be read in full.
#[derive(Debug)]
pub enum BodyError {
    /// The status and headers arrived, the body did not in full.
    Ended(reqwest::Error),
    /// The body is larger than this limit, in bytes (declared or counted).
    TooLarge(usize),
    /// The parser panicked before it answered (a bug): the query fails, not the run.
    ParserStopped,
}

/// Reads the body, refusing more than `limit` bytes (before or while reading).
pub async fn read_bounded(
    resp: &mut reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, BodyError> {
    refuse_declared(resp, limit)?;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Ended)? {
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Runs `parse` on the parser thread over the body as it arrives, refusing more than
/// `limit` bytes. A body that fails to arrive is the error, whatever the parser made of
/// the part it saw; a parser that gives up early stops the reading.
pub async fn parse_streamed<T, F>(
    mut resp: reqwest::Response,
    limit: usize,
    parse: F,
) -> Result<T, BodyError>
where
    T: Send + 'static,
    F: FnOnce(ChunkReader) -> T + Send + 'static,
{
    refuse_declared(&resp, limit)?;
    let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let (done, parsed) = oneshot::channel();
    parser_thread(Box::new(move || {
        let _ = done.send(parse(ChunkReader::new(rx)));
    }));
    let fed = feed(&mut resp, tx, limit).await;
    // The sender is gone by now, so the parser meets the end of its input and answers.
    let parsed = parsed.await;
    fed.and(parsed.map_err(|_| BodyError::ParserStopped))
}

type Job = Box<dyn FnOnce() + Send>;

/// Hands `job` to the one thread that parses streamed answers, started on first use.
///
/// One long-lived thread, not the blocking pool: glibc's malloc gives each thread an
/// arena of its own, and the parsed samples (most of a run's memory) left a run's worth
/// of freed pages in whichever pool thread parsed them; with a `serve` run every 10 s
/// over 2,000 series the process's RSS grew 102 -> 328 MiB in eight runs. On one thread each
/// answer reuses the last one's pages. Answers are parsed one at a time, in the order
/// their requests were answered; the analyzer queries one at a time.
fn parser_thread(job: Job) {
    static JOBS: OnceLock<std_mpsc::Sender<Job>> = OnceLock::new();
    let jobs = JOBS.get_or_init(|| {
        let (tx, rx) = std_mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("answer-parser".into())
            .spawn(move || {
                for job in rx {
                    // A panicking parse drops its answer's sender, which fails that
                    // query (`BodyError::ParserStopped`); the thread goes on.
                    let _ = panic::catch_unwind(AssertUnwindSafe(job));
                }
            })
            .expect("cannot start the answer parser thread");
        tx
    });
    jobs.send(job)
        .expect("the answer parser thread has stopped");
}

/// Sends the body's chunks to the parser until the body ends, the limit is passed or the
/// parser stops listening.
async fn feed(
    resp: &mut reqwest::Response,
    tx: mpsc::Sender<Bytes>,
    limit: usize,
) -> Result<(), BodyError> {
    let mut total = 0usize;
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Ended)? {
        total += chunk.len();
        if total > limit {
            return Err(BodyError::TooLarge(limit));
        }
        if tx.send(chunk).await.is_err() {
            // The parser has its answer (an error): the rest of the body cannot change it.
            return Ok(());
        }
    }
    Ok(())
}

fn refuse_declared(resp: &reqwest::Response, limit: usize) -> Result<(), BodyError> {
    match resp.content_length() {
        Some(n) if n > limit as u64 => Err(BodyError::TooLarge(limit)),
        _ => Ok(()),
    }
}

/// The body's chunks as a blocking [`Read`]; the end of input when the sender is gone.
pub struct ChunkReader {
    rx: mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl ChunkReader {
    fn new(rx: mpsc::Receiver<Bytes>) -> ChunkReader {
        ChunkReader {
            rx,
            current: Bytes::new(),
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: &str) -> reqwest::Response {
        reqwest::Response::from(hyper::Response::new(body.to_string()))
    }

    fn read_all(mut r: ChunkReader) -> Vec<u8> {
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        out
    }

    #[tokio::test]
    async fn a_parser_that_panics_fails_its_answer_and_not_the_next() {
        let failed = parse_streamed(response("{}"), 1024, |_| -> u8 { panic!("a bug") }).await;
        assert!(
            matches!(failed, Err(BodyError::ParserStopped)),
            "{failed:?}"
        );
        let next = parse_streamed(response("the next answer"), 1024, read_all).await;
        assert_eq!(next.unwrap(), b"the next answer");
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_refused() {
        let got = parse_streamed(response("0123456789"), 9, read_all).await;
        assert!(matches!(got, Err(BodyError::TooLarge(9))), "{got:?}");
    }
}
