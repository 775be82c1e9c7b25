//! Which kubelet pod-resources socket to call, if any: the one the operator named,
//! which must exist, or the kubelet's default path where it exists (a node without
//! Kubernetes has none, and pod info is simply off there).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Where the kubelet serves the pod-resources API.
pub const DEFAULT_SOCKET_PATH: &str = "/var/lib/kubelet/pod-resources/kubelet.sock";

/// An explicitly given socket path that cannot be the kubelet's socket.
#[derive(Debug, thiserror::Error)]
pub enum SocketPathError {
    /// Nothing is at the path, or it cannot be looked at.
    #[error(
        "--kubelet.pod-resources-socket {}: {source}; mount the kubelet's /var/lib/kubelet/pod-resources directory (read-only hostPath) and point the flag at kubelet.sock in it, or pass --no-kubelet",
        path.display()
    )]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// Why it cannot be looked at.
        source: std::io::Error,
    },
    /// The path is a file or directory, not a socket.
    #[error("--kubelet.pod-resources-socket {}: not a Unix socket; point it at the kubelet's kubelet.sock", path.display())]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
}

/// What the flags and the node say about pod info.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketChoice {
    /// Call the kubelet at this socket.
    Use(PathBuf),
    /// No flag and nothing at the default path: pod info is off.
    Absent(PathBuf),
}

/// The socket to use: `explicit` when given (it must be a socket), otherwise
/// `default` when something is there. A default path that exists but cannot be
/// looked at (permissions) is still used, so the failing calls say why.
pub fn choose(explicit: Option<&Path>, default: &Path) -> Result<SocketChoice, SocketPathError> {
    let Some(path) = explicit else {
        return Ok(match std::fs::symlink_metadata(default) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                SocketChoice::Absent(default.to_path_buf())
            }
            _ => SocketChoice::Use(default.to_path_buf()),
        });
    };
    let metadata = std::fs::metadata(path).map_err(|source| SocketPathError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    if !metadata.file_type().is_socket() {
        return Err(SocketPathError::NotASocket {
            path: path.to_path_buf(),
        });
    }
    Ok(SocketChoice::Use(path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn default_path_is_used_only_where_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let default = dir.path().join("kubelet.sock");
        assert_eq!(
            choose(None, &default).unwrap(),
            SocketChoice::Absent(default.clone())
        );
        let _listener = UnixListener::bind(&default).unwrap();
        assert_eq!(
            choose(None, &default).unwrap(),
            SocketChoice::Use(default.clone())
        );
    }

    #[test]
    fn explicit_socket_wins_over_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("mine.sock");
        let _listener = UnixListener::bind(&socket).unwrap();
        assert_eq!(
            choose(Some(&socket), &dir.path().join("absent.sock")).unwrap(),
            SocketChoice::Use(socket)
        );
    }

    #[test]
    fn explicit_path_that_is_missing_or_no_socket_is_refused_naming_flag_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.sock");
        let err = choose(Some(&missing), &missing).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, SocketPathError::Unreadable { .. }));
        assert!(
            message.contains("--kubelet.pod-resources-socket"),
            "{message}"
        );
        assert!(
            message.contains(&missing.display().to_string()),
            "{message}"
        );

        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let err = choose(Some(&file), &missing).unwrap_err();
        assert!(matches!(err, SocketPathError::NotASocket { .. }));
        assert!(err.to_string().contains(&file.display().to_string()));
    }
}
