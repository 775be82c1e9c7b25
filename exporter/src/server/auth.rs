//! HTTP basic auth against bcrypt hashes from `basic_auth_users`.
//!
//! bcrypt is deliberately slow (tens of milliseconds) and Prometheus sends the same
//! credentials every scrape, so successful checks are remembered for a short time.
//! Unknown users are checked against a decoy hash so timing does not reveal names.

use base64::Engine;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a verified user/password pair is trusted without running bcrypt again.
const CACHE_TTL: Duration = Duration::from_secs(60);
/// Entries kept at most; the cache only grows with distinct successful logins.
const CACHE_MAX: usize = 256;

/// The `WWW-Authenticate` value sent with 401.
pub const CHALLENGE: &str = "Basic realm=\"poolprof\", charset=\"UTF-8\"";

/// Verifies `Authorization: Basic` headers.
#[derive(Debug)]
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    decoy_hash: String,
    verified: Mutex<HashMap<(String, String), Instant>>,
    // One bcrypt at a time: a burst of wrong passwords cannot take every core.
    bcrypt_turn: Arc<Mutex<()>>,
}

impl BasicAuth {
    /// Users and their bcrypt hashes (already validated by the web config).
    pub fn new(users: BTreeMap<String, String>) -> Self {
        let cost = users
            .values()
            .find_map(|hash| hash.parse::<bcrypt::HashParts>().ok())
            .map_or(bcrypt::DEFAULT_COST, |parts| parts.get_cost());
        let decoy_hash = bcrypt::hash("poolprof decoy password", cost)
            .expect("bcrypt of a constant with a valid cost cannot fail");
        Self {
            users,
            decoy_hash,
            verified: Mutex::new(HashMap::new()),
            bcrypt_turn: Arc::new(Mutex::new(())),
        }
    }

    /// True when `authorization` carries a configured user with the right password.
    pub async fn allows(&self, authorization: Option<&[u8]>) -> bool {
        let Some((user, password)) = authorization.and_then(parse_basic) else {
            return false;
        };
        let key = (user, password);
        if self.recently_verified(&key) {
            return true;
        }
        let known = self.users.get(&key.0);
        let hash = known.unwrap_or(&self.decoy_hash).clone();
        let password = key.1.clone();
        let turn = self.bcrypt_turn.clone();
        let matches = tokio::task::spawn_blocking(move || {
            let _turn = turn.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            bcrypt::verify(password, &hash).unwrap_or(false)
        })
        .await
        .unwrap_or(false);
        let ok = matches && known.is_some();
        if ok {
            self.remember(key);
        }
        ok
    }

    fn recently_verified(&self, key: &(String, String)) -> bool {
        let verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        verified.get(key).is_some_and(|at| at.elapsed() < CACHE_TTL)
    }

    fn remember(&self, key: (String, String)) {
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if verified.len() >= CACHE_MAX {
            verified.retain(|_, at| at.elapsed() < CACHE_TTL);
            if verified.len() >= CACHE_MAX {
                verified.clear();
            }
        }
        verified.insert(key, Instant::now());
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
        assert!(
            auth.allows(Some(&header("alice", "s3cret:with colon")))
                .await
        );
        assert!(!auth.allows(Some(&header("alice", "s3cret"))).await);
        assert!(!auth.allows(Some(&header("bob", "s3cret:with colon"))).await);
        assert!(!auth.allows(None).await);
        assert!(!auth.allows(Some(b"Bearer abc")).await);
        assert!(!auth.allows(Some(b"Basic !!!not-base64")).await);
    }

    #[tokio::test]
    async fn success_is_cached_but_failure_is_not() {
        let auth = auth();
        assert!(
            auth.allows(Some(&header("alice", "s3cret:with colon")))
                .await
        );
        assert_eq!(auth.verified.lock().unwrap().len(), 1);
        assert!(!auth.allows(Some(&header("alice", "wrong"))).await);
        assert_eq!(auth.verified.lock().unwrap().len(), 1);
    }

    #[test]
    fn scheme_is_case_insensitive() {
        let mut h = header("a", "b");
        h[..5].copy_from_slice(b"bAsIc");
        assert_eq!(parse_basic(&h), Some(("a".to_string(), "b".to_string())));
    }
}
