//! A budget of password checks per client address, so one client guessing passwords
//! cannot keep the bcrypt queue full: each check it starts spends a token, tokens come
//! back at a fixed rate, and a client with none left is refused without running bcrypt.
//! A check that succeeds gives its token back, so only failures count.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Password checks a client may start at once before it has to wait for the refill.
pub const BURST: u32 = 5;
/// One more check is allowed per this much time.
pub const REFILL_EVERY: Duration = Duration::from_secs(1);
/// Clients tracked at most; past it, clients with a full budget are forgotten first.
const MAX_CLIENTS: usize = 10_000;

/// Per-client token buckets.
#[derive(Debug)]
pub struct FailedLogins {
    burst: u32,
    refill_every: Duration,
    clients: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: u32,
    // When the bucket was last topped up; tokens accrue from here.
    since: Instant,
}

impl Default for FailedLogins {
    fn default() -> Self {
        Self::new(BURST, REFILL_EVERY)
    }
}

impl FailedLogins {
    /// `burst` checks at once, one more every `refill_every`.
    pub fn new(burst: u32, refill_every: Duration) -> Self {
        Self {
            burst: burst.max(1),
            refill_every: refill_every.max(Duration::from_millis(1)),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Spends one check for `client`, or says how long until one is available.
    pub fn try_spend(&self, client: IpAddr) -> Result<(), Duration> {
        let client = client_key(client);
        let now = Instant::now();
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if !clients.contains_key(&client) && clients.len() >= MAX_CLIENTS {
            clients.retain(|_, bucket| self.refilled(*bucket, now).tokens < self.burst);
            if clients.len() >= MAX_CLIENTS {
                // Too many clients failing at once: refuse newcomers rather than grow.
                return Err(self.refill_every);
            }
        }
        let bucket = clients.entry(client).or_insert(Bucket {
            tokens: self.burst,
            since: now,
        });
        *bucket = self.refilled(*bucket, now);
        if bucket.tokens == 0 {
            return Err(self.refill_every.saturating_sub(now - bucket.since));
        }
        if bucket.tokens == self.burst {
            bucket.since = now;
        }
        bucket.tokens -= 1;
        Ok(())
    }

    /// Gives back the check spent for `client` (its password was right).
    pub fn refund(&self, client: IpAddr) {
        let client = client_key(client);
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bucket) = clients.get_mut(&client) {
            bucket.tokens = (bucket.tokens + 1).min(self.burst);
        }
    }

    fn refilled(&self, bucket: Bucket, now: Instant) -> Bucket {
        let periods = (now - bucket.since).as_nanos() / self.refill_every.as_nanos();
        let periods = u32::try_from(periods).unwrap_or(u32::MAX);
        if periods == 0 {
            return bucket;
        }
        let tokens = bucket.tokens.saturating_add(periods).min(self.burst);
        let since = bucket.since + self.refill_every * periods.min(self.burst);
        Bucket {
            tokens,
            since: if tokens == self.burst { now } else { since },
        }
    }
}

/// The address a budget belongs to: IPv4 as is (also when it arrives IPv4-mapped on
/// a dual-stack socket), IPv6 by its /64, since one host usually holds a whole /64.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn a_client_gets_its_burst_then_waits() {
        let budget = FailedLogins::new(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(budget.try_spend(A).is_ok());
        }
        let wait = budget.try_spend(A).unwrap_err();
        assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60));
        assert!(
            budget.try_spend(B).is_ok(),
            "another client has its own budget"
        );
    }

    #[test]
    fn tokens_come_back_over_time() {
        let budget = FailedLogins::new(2, Duration::from_millis(30));
        assert!(budget.try_spend(A).is_ok());
        assert!(budget.try_spend(A).is_ok());
        assert!(budget.try_spend(A).is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(budget.try_spend(A).is_ok(), "one token refilled");
        assert!(budget.try_spend(A).is_err(), "only one");
    }

    #[test]
    fn a_refund_returns_the_spent_token() {
        let budget = FailedLogins::new(1, Duration::from_secs(60));
        assert!(budget.try_spend(A).is_ok());
        budget.refund(A);
        assert!(budget.try_spend(A).is_ok());
    }

    #[test]
    fn mapped_ipv4_and_one_ipv6_prefix_share_a_budget() {
        let budget = FailedLogins::new(1, Duration::from_secs(60));
        assert!(budget.try_spend(A).is_ok());
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert!(budget.try_spend(mapped).is_err());
        assert!(budget.try_spend("2001:db8::1".parse().unwrap()).is_ok());
        assert!(budget.try_spend("2001:db8::ffff".parse().unwrap()).is_err());
        assert!(budget.try_spend("2001:db8:0:1::1".parse().unwrap()).is_ok());
    }
}
