//! A fake kubelet serving the real `v1.PodResourcesLister/List` gRPC call (tonic's
//! HTTP/2 server and prost codec) on a Unix socket, with answers a test changes while
//! it runs: pods, a gRPC error, a call that never returns, or bytes that are not
//! HTTP/2 at all.

use poolprof_exporter::kubelet::client::LIST_METHOD;
use poolprof_exporter::kubelet::proto::{
    ContainerDevices, ContainerResources, ListPodResourcesRequest, ListPodResourcesResponse,
    PodResources,
};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{BoxFuture, Context, Poll, Service};

/// What the fake answers.
#[derive(Clone, Debug)]
pub enum Mode {
    /// These pods.
    Pods(ListPodResourcesResponse),
    /// A gRPC error status.
    Fail(tonic::Code, String),
    /// Accepts the call and never answers.
    Hang,
    /// Accepts the connection, writes bytes that are not HTTP/2, and closes it.
    Garbage,
}

/// A running fake kubelet; stops when dropped.
pub struct FakeKubelet {
    mode: Arc<Mutex<Mode>>,
    calls: Arc<AtomicUsize>,
    socket: PathBuf,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FakeKubelet {
    /// Listens on `socket` and answers with `mode` until told otherwise.
    pub fn start(socket: &Path, mode: Mode) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mode = Arc::new(Mutex::new(mode));
        let calls = Arc::new(AtomicUsize::new(0));
        let listener = {
            let _entered = runtime.enter();
            tokio::net::UnixListener::bind(socket).unwrap()
        };
        let incoming =
            futures::stream::unfold((listener, mode.clone()), |(listener, mode)| async move {
                loop {
                    let stream = match listener.accept().await {
                        Ok((stream, _)) => stream,
                        Err(e) => return Some((Err(e), (listener, mode))),
                    };
                    if matches!(*mode.lock().unwrap(), Mode::Garbage) {
                        let mut stream = stream;
                        let _ = stream
                            .write_all(b"HTTP/1.0 200 OK\r\n\r\nnot grpc at all")
                            .await;
                        continue;
                    }
                    return Some((Ok::<_, std::io::Error>(stream), (listener, mode)));
                }
            });
        let lister = Lister {
            mode: mode.clone(),
            calls: calls.clone(),
        };
        runtime.spawn(async move {
            let served = tonic::transport::Server::builder()
                .serve_with_incoming(lister, incoming)
                .await;
            if let Err(e) = served {
                eprintln!("fake kubelet stopped: {e}");
            }
        });
        Self {
            mode,
            calls,
            socket: socket.to_path_buf(),
            runtime: Some(runtime),
        }
    }

    /// Answers with `mode` from now on.
    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// How many `List` calls reached the service.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The `v1.PodResourcesLister` service: `List` only, as tonic-generated servers
/// route it (by path, `UNIMPLEMENTED` for any other method).
#[derive(Clone)]
struct Lister {
    mode: Arc<Mutex<Mode>>,
    calls: Arc<AtomicUsize>,
}

impl Service<Request<Body>> for Lister {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if request.uri().path() != LIST_METHOD {
            let status = tonic::Status::unimplemented(request.uri().path().to_string());
            return Box::pin(async move { Ok(status.into_http()) });
        }
        let list = List(self.clone());
        Box::pin(async move {
            let codec = tonic::codec::ProstCodec::<ListPodResourcesResponse, ListPodResourcesRequest>::default();
            Ok(tonic::server::Grpc::new(codec).unary(list, request).await)
        })
    }
}

/// One `List` call.
struct List(Lister);

impl tonic::server::UnaryService<ListPodResourcesRequest> for List {
    type Response = ListPodResourcesResponse;
    type Future = BoxFuture<tonic::Response<Self::Response>, tonic::Status>;

    fn call(&mut self, _request: tonic::Request<ListPodResourcesRequest>) -> Self::Future {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        let mode = self.0.mode.lock().unwrap().clone();
        Box::pin(async move {
            match mode {
                Mode::Pods(pods) => Ok(tonic::Response::new(pods)),
                Mode::Fail(code, message) => Err(tonic::Status::new(code, message)),
                Mode::Hang | Mode::Garbage => std::future::pending().await,
            }
        })
    }
}

/// A pod whose one container holds `ids` of `resource`.
pub fn pod(
    namespace: &str,
    name: &str,
    container: &str,
    resource: &str,
    ids: &[&str],
) -> PodResources {
    PodResources {
        name: name.into(),
        namespace: namespace.into(),
        containers: vec![ContainerResources {
            name: container.into(),
            devices: vec![ContainerDevices {
                resource_name: resource.into(),
                device_ids: ids.iter().map(|s| s.to_string()).collect(),
            }],
        }],
    }
}

/// A `List` answer holding `pods`.
pub fn pods(pods: Vec<PodResources>) -> Mode {
    Mode::Pods(ListPodResourcesResponse {
        pod_resources: pods,
    })
}
