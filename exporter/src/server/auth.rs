//! HTTP basic auth against bcrypt hashes from `basic_auth_users`, checked before a
//! request takes a `--web.max-requests` slot.
//!
//! bcrypt is deliberately slow (tens of milliseconds), so it must not be run for
//! every scrape nor on demand of whoever can reach the port:
//! - a password that bcrypt accepted is remembered (as an HMAC under a key made at
//!   start, compared in constant time), so Prometheus's scrapes cost one HMAC;
//! - other checks run bcrypt one at a time, and each client address has a budget of
//!   checks ([`FailedLogins`]); a client that spent it is refused at once (429)
//!   without running bcrypt.
//!
//! Unknown users are checked against a decoy hash so timing does not reveal names.

use super::failed_logins::FailedLogins;
use base64::Engine;
use ring::hmac;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How long a remembered password stays trusted without being used.
const REMEMBER_UNUSED: Duration = Duration::from_secs(600);

/// The `WWW-Authenticate` value sent with 401.
pub const CHALLENGE: &str = "Basic realm=\"poolprof\", charset=\"UTF-8\"";

/// The outcome of checking one request's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A configured user with the right password.
    Allowed,
    /// No, wrong or malformed credentials (401).
    Denied,
    /// The client used up its budget of password checks; retry after this (429).
    Throttled(Duration),
}

/// Verifies `Authorization: Basic` headers.
#[derive(Debug)]
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    decoy_hash: String,
    remember_key: hmac::Key,
    // User → HMAC of the password bcrypt accepted, and when it was last used.
    verified: Mutex<HashMap<String, (hmac::Tag, Instant)>>,
    // One bcrypt at a time: a burst of wrong passwords cannot take every core.
    bcrypt_turn: Arc<Semaphore>,
    budget: FailedLogins,
}

impl BasicAuth {
    /// Users and their bcrypt hashes (already validated by the web config).
    pub fn new(users: BTreeMap<String, String>) -> Self {
        Self::with_budget(users, FailedLogins::default())
    }

    /// As [`BasicAuth::new`], with a chosen per-client budget of password checks.
    pub fn with_budget(users: BTreeMap<String, String>, budget: FailedLogins) -> Self {
        let cost = users
            .values()
            .find_map(|hash| hash.parse::<bcrypt::HashParts>().ok())
            .map_or(bcrypt::DEFAULT_COST, |parts| parts.get_cost());
        let decoy_hash = bcrypt::hash("poolprof decoy password", cost)
            .expect("bcrypt of a constant with a valid cost cannot fail");
        let remember_key = hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
            .expect("the OS random source is available");
        Self {
            users,
            decoy_hash,
            remember_key,
            verified: Mutex::new(HashMap::new()),
            bcrypt_turn: Arc::new(Semaphore::new(1)),
            budget,
        }
    }

    /// Checks the `Authorization` header of a request from `client`.
    pub async fn check(&self, authorization: Option<&[u8]>, client: IpAddr) -> Verdict {
        // No header or not basic auth: nothing to verify, so nothing to budget.
        let Some((user, password)) = authorization.and_then(parse_basic) else {
            return Verdict::Denied;
        };
        if self.remembered(&user, &password) {
            return Verdict::Allowed;
        }
        if let Err(wait) = self.budget.try_spend(client) {
            return Verdict::Throttled(wait);
        }
        if self.bcrypt_matches(&user, &password).await {
            self.budget.refund(client);
            self.remember(user, &password);
            Verdict::Allowed
        } else {
            Verdict::Denied
        }
    }

    /// True when `authorization` carries a configured user with the right password.
    pub async fn allows(&self, authorization: Option<&[u8]>, client: IpAddr) -> bool {
        self.check(authorization, client).await == Verdict::Allowed
    }

    async fn bcrypt_matches(&self, user: &str, password: &str) -> bool {
        let known = self.users.get(user);
        let hash = known.unwrap_or(&self.decoy_hash).clone();
        let password = password.to_string();
        let Ok(_turn) = self.bcrypt_turn.acquire().await else {
            return false;
        };
        let matches =
            tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
                .await
                .unwrap_or(false);
        matches && known.is_some()
    }

    fn remembered(&self, user: &str, password: &str) -> bool {
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        let Some((tag, used)) = verified.get_mut(user) else {
            return false;
        };
        if used.elapsed() >= REMEMBER_UNUSED {
            verified.remove(user);
            return false;
        }
        // hmac::verify compares in constant time.
        let right = hmac::verify(&self.remember_key, password.as_bytes(), tag.as_ref()).is_ok();
        if right {
            *used = Instant::now();
        }
        right
    }

    fn remember(&self, user: String, password: &str) {
        let tag = hmac::sign(&self.remember_key, password.as_bytes());
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        // One entry per configured user at most: only accepted passwords get here.
        verified.insert(user, (tag, Instant::now()));
    }
}

/// Splits `Basic base64(user:password)` into user and password.
fn parse_basic(header: &[u8]) -> Option<(String, String)> {
    let header = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3));

    fn header(user: &str, password: &str) -> Vec<u8> {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        format!("Basic {encoded}").into_bytes()
    }

    fn auth() -> BasicAuth {
        let hash = bcrypt::hash("s3cret:with colon", 4).unwrap();
        BasicAuth::new(BTreeMap::from([("alice".to_string(), hash)]))
    }

    #[tokio::test]
    async fn right_password_passes_and_wrong_ones_fail() {
        let auth = auth();
        let right = header("alice", "s3cret:with colon");
        assert!(auth.allows(Some(&right), CLIENT).await);
        for wrong in [
            header("alice", "s3cret"),
            header("bob", "s3cret:with colon"),
            b"Bearer abc".to_vec(),
            b"Basic !!!not-base64".to_vec(),
        ] {
            assert!(!auth.allows(Some(&wrong), OTHER).await);
        }
        assert!(!auth.allows(None, CLIENT).await);
    }

    #[tokio::test]
    async fn an_accepted_password_is_remembered_and_a_wrong_one_is_not() {
        let auth = auth();
        let right = header("alice", "s3cret:with colon");
        assert_eq!(auth.check(Some(&right), CLIENT).await, Verdict::Allowed);
        assert!(auth.remembered("alice", "s3cret:with colon"));
        assert!(!auth.remembered("alice", "wrong"));
        assert_eq!(
            auth.check(Some(&header("alice", "wrong")), CLIENT).await,
            Verdict::Denied
        );
        assert!(
            auth.remembered("alice", "s3cret:with colon"),
            "a wrong try does not evict the right password"
        );
    }

    #[tokio::test]
    async fn a_client_out_of_budget_is_refused_without_bcrypt_but_a_known_password_passes() {
        let hash = bcrypt::hash("right", 4).unwrap();
        let auth = BasicAuth::with_budget(
            BTreeMap::from([("prom".to_string(), hash)]),
            FailedLogins::new(2, Duration::from_secs(60)),
        );
        let right = header("prom", "right");
        assert_eq!(auth.check(Some(&right), OTHER).await, Verdict::Allowed);
        let wrong = header("prom", "guess");
        assert_eq!(auth.check(Some(&wrong), CLIENT).await, Verdict::Denied);
        assert_eq!(auth.check(Some(&wrong), CLIENT).await, Verdict::Denied);
        assert!(matches!(
            auth.check(Some(&wrong), CLIENT).await,
            Verdict::Throttled(wait) if wait > Duration::ZERO
        ));
        assert_eq!(
            auth.check(Some(&right), CLIENT).await,
            Verdict::Allowed,
            "a remembered password needs no budget"
        );
        assert_eq!(auth.check(Some(&wrong), OTHER).await, Verdict::Denied);
    }

    #[test]
    fn scheme_is_case_insensitive() {
        let mut h = header("a", "b");
        h[..5].copy_from_slice(b"bAsIc");
        assert_eq!(parse_basic(&h), Some(("a".to_string(), "b".to_string())));
    }
}
