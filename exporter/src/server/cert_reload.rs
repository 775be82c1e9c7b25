//! The server certificate follows its files: when `cert_file` or `key_file` changes
//! (cert-manager, a renewed Let's Encrypt pair), new handshakes get the new pair
//! without a restart, as with exporter-toolkit. A pair that fails to load (say, the
//! certificate written before its key) leaves the previous one in use.

use super::pem::{load_certs, load_key};
use super::web_config::PemSource;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the files are looked at, at most.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);

/// Why a pair could not be loaded: the field at fault and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairError {
    /// `cert_file` or `key_file`.
    pub field: &'static str,
    /// What is wrong, naming the file.
    pub message: String,
}

/// What identifies one version of the files: a hash of each file's bytes (content,
/// not modification time, whose granularity can hide a quick rewrite).
type Stamp = Vec<Option<u64>>;

/// A certificate resolver that reloads the pair when its files change.
#[derive(Debug)]
pub struct ReloadingCert {
    cert: PemSource,
    key: PemSource,
    provider: Arc<CryptoProvider>,
    check_every: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    current: Arc<CertifiedKey>,
    loaded: Stamp,
    failed: Option<Stamp>,
    checked_at: Instant,
}

impl ReloadingCert {
    /// Loads the pair now (an error here refuses to start) and checks the files
    /// again at most every `check_every`.
    pub fn load(
        cert: PemSource,
        key: PemSource,
        provider: Arc<CryptoProvider>,
        check_every: Duration,
    ) -> Result<Self, PairError> {
        let loaded = stamp(&[&cert, &key]);
        let current = load_pair(&cert, &key, &provider)?;
        Ok(Self {
            state: Mutex::new(State {
                current,
                loaded,
                failed: None,
                checked_at: Instant::now(),
            }),
            cert,
            key,
            provider,
            check_every,
        })
    }

    /// The pair to present now, reloaded first when the files changed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.checked_at.elapsed() >= self.check_every {
            state.checked_at = Instant::now();
            let now = stamp(&[&self.cert, &self.key]);
            if now != state.loaded && state.failed.as_ref() != Some(&now) {
                match load_pair(&self.cert, &self.key, &self.provider) {
                    Ok(pair) => {
                        tracing::info!("TLS certificate reloaded");
                        state.current = pair;
                        state.loaded = now;
                        state.failed = None;
                    }
                    Err(e) => {
                        tracing::warn!(field = e.field, error = %e.message, "TLS certificate changed but cannot be loaded; still serving the previous one");
                        state.failed = Some(now);
                    }
                }
            }
        }
        state.current.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn load_pair(
    cert: &PemSource,
    key: &PemSource,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, PairError> {
    let error = |field, message| PairError { field, message };
    let certs = load_certs(cert).map_err(|m| error("cert_file", m))?;
    let key = load_key(key).map_err(|m| error("key_file", m))?;
    let pair = CertifiedKey::from_der(certs, key, provider).map_err(|e| {
        error(
            "key_file",
            format!("does not match cert_file or cannot be used: {e}"),
        )
    })?;
    Ok(Arc::new(pair))
}

fn stamp(sources: &[&PemSource]) -> Stamp {
    sources
        .iter()
        .map(|source| match source {
            PemSource::File(path) => std::fs::read(path).ok().map(|bytes| {
                let mut hasher = DefaultHasher::new();
                bytes.hash(&mut hasher);
                hasher.finish()
            }),
            PemSource::Inline(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn write_pair(dir: &Path, name: &str) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
        cert.der().to_vec()
    }

    fn resolver(dir: &Path) -> ReloadingCert {
        ReloadingCert::load(
            PemSource::File(dir.join("tls.crt")),
            PemSource::File(dir.join("tls.key")),
            Arc::new(rustls::crypto::ring::default_provider()),
            Duration::ZERO,
        )
        .unwrap()
    }

    fn served(resolver: &ReloadingCert) -> Vec<u8> {
        resolver.current().cert[0].to_vec()
    }

    #[test]
    fn a_renewed_pair_is_served_without_restart() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first.example");
        let resolver = resolver(dir.path());
        assert_eq!(served(&resolver), first);
        let second = write_pair(dir.path(), "second.example");
        assert_eq!(served(&resolver), second);
    }

    #[test]
    fn a_broken_renewal_keeps_the_previous_pair() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first.example");
        let resolver = resolver(dir.path());
        // A key that belongs to another certificate: the half-finished renewal.
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("tls.key"), other.serialize_pem()).unwrap();
        assert_eq!(served(&resolver), first);
        let third = write_pair(dir.path(), "third.example");
        assert_eq!(served(&resolver), third, "the next good pair is picked up");
    }

    #[test]
    fn mismatched_pair_is_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path(), "a.example");
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("tls.key"), other.serialize_pem()).unwrap();
        let err = ReloadingCert::load(
            PemSource::File(dir.path().join("tls.crt")),
            PemSource::File(dir.path().join("tls.key")),
            Arc::new(rustls::crypto::ring::default_provider()),
            CHECK_EVERY,
        )
        .unwrap_err();
        assert_eq!(err.field, "key_file");
    }
}
