//! Polling with a bounded deadline.

use std::time::{Duration, Instant};

/// How often [`until`] polls.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Calls `check` until it returns `Ok`, or panics after `timeout`.
///
/// `check` returns `Err(observation)` while the condition does not hold; the last
/// observation goes into the panic message, so a timeout says what was seen instead.
pub fn until<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    match try_until(timeout, &mut check) {
        Ok(value) => value,
        Err(last) => panic!(
            "timed out after {:.1}s waiting for {what}; last observation: {last}",
            timeout.as_secs_f64()
        ),
    }
}

/// Calls `check` until it returns `Ok`; after `timeout`, returns the last `Err`.
pub fn try_until<T>(
    timeout: Duration,
    mut check: impl FnMut() -> Result<T, String>,
) -> Result<T, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(value) => return Ok(value),
            Err(last) if Instant::now() >= deadline => return Err(last),
            Err(_) => std::thread::sleep(POLL_INTERVAL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_first_success() {
        let mut calls = 0;
        let got = until("third call", Duration::from_secs(5), || {
            calls += 1;
            if calls == 3 {
                Ok(calls)
            } else {
                Err(format!("call {calls}"))
            }
        });
        assert_eq!(got, 3);
    }

    #[test]
    fn gives_up_with_the_last_observation() {
        let got: Result<(), String> =
            try_until(Duration::from_millis(300), || Err("still 0".to_string()));
        assert_eq!(got, Err("still 0".to_string()));
    }

    #[test]
    #[should_panic(expected = "waiting for the answer; last observation: 41")]
    fn until_panics_with_what_and_the_last_observation() {
        until::<()>(
            "the answer",
            Duration::from_millis(100),
            || Err("41".into()),
        );
    }
}
