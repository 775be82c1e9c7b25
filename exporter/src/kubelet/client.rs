//! A client of the kubelet's `v1.PodResourcesLister/List` gRPC call over its Unix
//! socket. Each call opens a fresh connection on a runtime of its own and drops both
//! afterwards: at one call every ten seconds that costs nothing, a restarted kubelet
//! needs no reconnection logic, and a hung kubelet leaves no socket behind.

use super::proto::{ListPodResourcesRequest, ListPodResourcesResponse};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::codegen::http::Uri;
use tonic::codegen::Service;

/// The gRPC method poolprof calls.
pub const LIST_METHOD: &str = "/v1.PodResourcesLister/List";
/// Largest answer accepted (gRPC's own default); a node's pods fit in a few KiB.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Why a `List` call failed. Every message names the socket.
#[derive(Debug, thiserror::Error)]
pub enum PodResourcesError {
    /// The call's own runtime could not start (out of file descriptors).
    #[error("cannot start a runtime for the kubelet call: {0}")]
    Runtime(std::io::Error),
    /// Nothing answers on the socket, or what answers does not speak HTTP/2.
    #[error("cannot connect to the kubelet pod-resources socket {}: {reason}", socket.display())]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// The transport error with its causes.
        reason: String,
    },
    /// The kubelet did not answer within the timeout.
    #[error("the kubelet pod-resources socket {} did not answer within {}", socket.display(), humantime::format_duration(*timeout))]
    TimedOut {
        /// The socket.
        socket: PathBuf,
        /// The timeout.
        timeout: Duration,
    },
    /// The call returned a gRPC error, or an answer that does not decode or is too large.
    #[error("the kubelet pod-resources socket {} answered List with {code:?}: {message}", socket.display())]
    Call {
        /// The socket.
        socket: PathBuf,
        /// The gRPC status code.
        code: tonic::Code,
        /// The status message.
        message: String,
    },
}

/// Calls `List` on one socket.
#[derive(Debug, Clone)]
pub struct PodResourcesClient {
    socket: PathBuf,
    timeout: Duration,
}

impl PodResourcesClient {
    /// A client of the kubelet at `socket`; each call, connection included, gives up
    /// after `timeout`.
    pub fn new(socket: impl Into<PathBuf>, timeout: Duration) -> Self {
        Self {
            socket: socket.into(),
            timeout,
        }
    }

    /// The socket it calls.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Lists the pods and their devices, blocking the calling thread at most about
    /// `timeout`. Must not be called from inside an async runtime.
    pub fn list(&self) -> Result<ListPodResourcesResponse, PodResourcesError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(PodResourcesError::Runtime)?;
        let answer = runtime.block_on(self.list_async());
        // Connection tasks still waiting on a hung kubelet go with the runtime.
        runtime.shutdown_background();
        answer
    }

    /// Lists the pods and their devices, giving up after `timeout`.
    pub async fn list_async(&self) -> Result<ListPodResourcesResponse, PodResourcesError> {
        match tokio::time::timeout(self.timeout, self.call()).await {
            Ok(answer) => answer,
            Err(_) => Err(PodResourcesError::TimedOut {
                socket: self.socket.clone(),
                timeout: self.timeout,
            }),
        }
    }

    async fn call(&self) -> Result<ListPodResourcesResponse, PodResourcesError> {
        // The authority is never resolved: the connector ignores the URI.
        let channel = tonic::transport::Endpoint::from_static("http://localhost")
            .connect_with_connector(UnixConnector(self.socket.clone()))
            .await
            .map_err(|e| PodResourcesError::Connect {
                socket: self.socket.clone(),
                reason: with_causes(&e),
            })?;
        let mut grpc =
            tonic::client::Grpc::new(channel).max_decoding_message_size(MAX_RESPONSE_BYTES);
        grpc.ready().await.map_err(|e| PodResourcesError::Connect {
            socket: self.socket.clone(),
            reason: with_causes(&e),
        })?;
        let codec =
            tonic::codec::ProstCodec::<ListPodResourcesRequest, ListPodResourcesResponse>::default(
            );
        let response = grpc
            .unary(
                tonic::Request::new(ListPodResourcesRequest {}),
                PathAndQuery::from_static(LIST_METHOD),
                codec,
            )
            .await
            .map_err(|status| self.call_error(status))?;
        Ok(response.into_inner())
    }
}

impl PodResourcesClient {
    /// A status the kubelet sent is a failed call; one the client made up from a
    /// broken connection (it has a cause: HTTP/2 or I/O) is a connection failure,
    /// whichever step the connection broke in.
    fn call_error(&self, status: tonic::Status) -> PodResourcesError {
        match std::error::Error::source(&status) {
            Some(cause) => PodResourcesError::Connect {
                socket: self.socket.clone(),
                reason: format!("{}: {}", status.message(), with_causes(cause)),
            },
            None => PodResourcesError::Call {
                socket: self.socket.clone(),
                code: status.code(),
                message: status.message().to_string(),
            },
        }
    }
}

/// An error with its chain of causes, for messages that say what actually failed
/// ("transport error" alone does not).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Some errors already print their cause; say each part once.
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// Connects every request of a channel to one Unix socket.
struct UnixConnector(PathBuf);

impl Service<Uri> for UnixConnector {
    type Response = TokioIo<tokio::net::UnixStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let path = self.0.clone();
        Box::pin(async move { Ok(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_socket_is_a_connect_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("kubelet.sock");
        let err = PodResourcesClient::new(&socket, Duration::from_secs(1))
            .list()
            .unwrap_err();
        assert!(matches!(err, PodResourcesError::Connect { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(&socket.display().to_string()), "{message}");
        assert!(
            message.contains("No such file"),
            "causes included: {message}"
        );
    }
}
