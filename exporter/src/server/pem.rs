//! Reading certificates and keys from PEM files or inline PEM text.

use super::web_config::PemSource;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

fn read_pem(source: &PemSource) -> Result<(Vec<u8>, String), String> {
    match source {
        PemSource::File(path) => std::fs::read(path)
            .map(|bytes| (bytes, path.display().to_string()))
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        PemSource::Inline(pem) => Ok((pem.as_bytes().to_vec(), "inline PEM".to_string())),
    }
}

/// The certificates in `source`, in order; an error when there are none.
pub fn load_certs(source: &PemSource) -> Result<Vec<CertificateDer<'static>>, String> {
    let (bytes, origin) = read_pem(source)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{origin}: not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{origin}: no CERTIFICATE block found"));
    }
    Ok(certs)
}

/// The first private key in `source` (PKCS#8, PKCS#1 or SEC1).
pub fn load_key(source: &PemSource) -> Result<PrivateKeyDer<'static>, String> {
    let (bytes, origin) = read_pem(source)?;
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| format!("{origin}: no usable PKCS#8, PKCS#1 or SEC1 private key: {e}"))
}

/// The certificates in `source` as trust anchors.
pub fn load_roots(source: &PemSource) -> Result<RootCertStore, String> {
    let certs = load_certs(source)?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| format!("not a usable CA certificate: {e}"))?;
    }
    Ok(roots)
}
