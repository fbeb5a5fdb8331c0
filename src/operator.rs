//! `tfjob-operator run`: wire the controller, leader election, HTTP endpoints and shutdown. I/O.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use futures::FutureExt;
use kube::client::ClientBuilder;
use kube::{Api, Client};
use tokio::sync::watch;

use crate::controller::run_scope;
use crate::http::{self, Endpoints, Probes};
use crate::metrics::LeaseLabels;
use crate::reconcile::Shared;
use crate::reconcile::plan::model::Settings;
use crate::runtime::leader::LeaderElector;
use crate::runtime::recorder::EventRecorder;
use crate::settings::{RunArgs, bind_address};

/// Name under which the operator records events and holds the lease.
pub const CONTROLLER_NAME: &str = "tfjob-operator";

/// How long a stopping operator waits for its queued events to be published.
const EVENTS_AT_STOP: Duration = Duration::from_secs(5);
/// How long a stopping operator waits for the passes in flight. A pass whose request the API
/// server never answers (kube's client has no read timeout) would hold the stop for good; cut
/// short, it is like a pass killed, which the next operator resumes. With the events (5 s) and
/// the lease's release (5 s) the stop stays within Kubernetes' 30 s grace period.
const DRAIN_AT_STOP: Duration = Duration::from_secs(15);

/// Run until SIGTERM/SIGINT, against the cluster kubectl would use.
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let mut config = kube::Config::infer()
        .await
        .context("finding a Kubernetes cluster (in-cluster, KUBECONFIG or ~/.kube/config)")?;
    // Named in the API server's audit log and request metrics.
    config.headers.push((
        ::http::header::USER_AGENT,
        ::http::HeaderValue::from_static(concat!("tfjob-operator/", env!("CARGO_PKG_VERSION"))),
    ));
    let probes = Probes::default();
    // Every request of the client counted as client-go counts them (`rest_client_*`).
    let counted = probes.metrics.rest.layer(&config.cluster_url);
    // The Kueue side's own client only in the Kueue mode: each client holds its own TLS set-up.
    let kueue_client = args
        .kueue
        .then(|| kueue_client(&config, &counted))
        .transpose()?;
    let client = ClientBuilder::try_from(config)
        .context("building the Kubernetes client")?
        .with_layer(&counted)
        .build();
    let kueue_client = kueue_client.unwrap_or_else(|| client.clone());
    serve_endpoints(&args, &probes).await?;
    run_with_clients(client, kueue_client, args, probes, shutdown_signal()).await
}

/// The Kueue side's client: the same cluster, named apart in the audit log, as Kueue's own
/// integration is.
fn kueue_client(
    config: &kube::Config,
    counted: &crate::metrics::rest::RestLayer,
) -> anyhow::Result<Client> {
    let mut config = config.clone();
    config
        .headers
        .retain(|(name, _)| name != ::http::header::USER_AGENT);
    config.headers.push((
        ::http::header::USER_AGENT,
        ::http::HeaderValue::from_static(crate::kueue::USER_AGENT),
    ));
    Ok(ClientBuilder::try_from(config)
        .context("building the Kubernetes client")?
        .with_layer(counted)
        .build())
}

/// Run with a given client until `shutdown` resolves (used by the demo and the tests; the
/// Kueue mode's requests go through the same client). In-flight reconciles finish before this
/// returns, or are cut short 15 s after `shutdown` (`DRAIN_AT_STOP`).
pub async fn run_with(
    client: Client,
    args: RunArgs,
    probes: Probes,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    run_with_clients(client.clone(), client, args, probes, shutdown).await
}

/// Run with the TFJob controller's client and the Kueue mode's (`--kueue`) until `shutdown`
/// resolves.
pub async fn run_with_clients(
    client: Client,
    kueue_client: Client,
    args: RunArgs,
    probes: Probes,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let identity = identity();
    let elector = args.leader_elect.then(|| {
        let ns = args
            .leader_election_namespace
            .clone()
            .or_else(pod_namespace)
            .unwrap_or_else(|| "default".into());
        LeaderElector::new(
            Api::namespaced(client.clone(), &ns),
            &args.leader_election_id,
            &identity,
        )
    });
    // client-go's `leader_election_master_status`, with leader election only: 0 while
    // waiting, 1 while leading.
    let gauge = elector.as_ref().map(|_| {
        let lease = LeaseLabels {
            name: args.leader_election_id.clone(),
        };
        probes.metrics.leader.get_or_create(&lease).clone()
    });
    let leading = |on: bool| {
        if let Some(gauge) = &gauge {
            gauge.set(i64::from(on));
        }
    };
    if let Some(elector) = &elector {
        // A standby replica is healthy and ready: it is waiting, not broken.
        probes.ready.store(true, Ordering::Relaxed);
        leading(false);
        tracing::info!(lease = %args.leader_election_id, %identity, "waiting for leadership");
        tokio::select! {
            _ = elector.acquire() => tracing::info!("became leader"),
            _ = stopped() => return Ok(()),
        }
        leading(true);
    }
    let (events, publisher) = crate::runtime::publisher::start(EventRecorder::new(
        client.clone(),
        CONTROLLER_NAME,
        &identity,
    ));
    let settings = Settings {
        cluster_domain: args.cluster_domain.clone().filter(|d| !d.is_empty()),
        gang: args.gang.gang(),
    };
    if let Some(gang) = &settings.gang {
        tracing::info!(scheduler = gang.scheduler_name(), podgroups = %gang.crd_name(), "gang scheduling on");
    }
    let kueue = args.kueue.then(|| {
        tracing::info!(
            "Kueue mode on: TFJobs with a queue label get their Workloads from the operator"
        );
        Arc::new(crate::kueue::KueueSide {
            recorder: EventRecorder::new(
                kueue_client.clone(),
                crate::kueue::CONTROLLER_NAME,
                &identity,
            ),
            client: kueue_client,
        })
    });
    let shared = Arc::new(Shared {
        client,
        settings,
        events,
        metrics: probes.metrics.clone(),
        memory: Default::default(),
        max_backoff: Duration::from_secs_f64(args.max_error_backoff),
        kueue,
    });
    let scopes: Vec<Option<String>> = if args.namespaces.is_empty() {
        vec![None]
    } else {
        args.namespaces.iter().cloned().map(Some).collect()
    };
    let pending = Arc::new(AtomicUsize::new(scopes.len()));
    let controllers = scopes.into_iter().map(|ns| {
        let (pending, ready) = (pending.clone(), probes.ready.clone());
        let on_ready = move || {
            if pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                ready.store(true, Ordering::Relaxed);
            }
        };
        run_scope(
            shared.clone(),
            ns,
            args.concurrency.max(1),
            stopped(),
            on_ready,
        )
    });
    let all = drained_within(
        futures::future::join_all(controllers),
        stopped(),
        DRAIN_AT_STOP,
    );
    match &elector {
        Some(elector) => {
            tokio::select! {
                _ = all => {},
                _ = elector.keep().fuse() => {
                    leading(false);
                    anyhow::bail!("lost the leader lease; exiting so a standby takes over")
                }
            }
        }
        None => {
            all.await;
        }
    }
    // The queued events go out before the lease is released (a standby then starts clean).
    drop(shared);
    publisher.finish_within(EVENTS_AT_STOP).await;
    if let Some(elector) = &elector {
        elector.release().await;
        leading(false);
    }
    tracing::info!("stopped");
    Ok(())
}

async fn serve_endpoints(args: &RunArgs, probes: &Probes) -> anyhow::Result<()> {
    let metrics = bind_address(&args.metrics_bind_address)
        .map_err(anyhow::Error::msg)
        .context("--metrics-bind-address")?;
    let health = bind_address(&args.health_probe_bind_address)
        .map_err(anyhow::Error::msg)
        .context("--health-probe-bind-address")?;
    match (metrics, health) {
        (Some(m), Some(h)) if m == h => {
            http::serve(
                m,
                probes.clone(),
                Endpoints {
                    metrics: true,
                    health: true,
                },
            )
            .await?;
        }
        (m, h) => {
            if let Some(m) = m {
                http::serve(
                    m,
                    probes.clone(),
                    Endpoints {
                        metrics: true,
                        health: false,
                    },
                )
                .await
                .context("metrics endpoint")?;
            }
            if let Some(h) = h {
                http::serve(
                    h,
                    probes.clone(),
                    Endpoints {
                        metrics: false,
                        health: true,
                    },
                )
                .await
                .context("health endpoint")?;
            }
        }
    }
    Ok(())
}

/// Runs `scopes` to their end, or once `stopped` has resolved, for at most `limit` more.
async fn drained_within(scopes: impl Future, stopped: impl Future<Output = ()>, limit: Duration) {
    let cut = async {
        stopped.await;
        tokio::time::sleep(limit).await;
    };
    tokio::select! {
        _ = scopes => {},
        _ = cut => tracing::warn!(
            "passes still in flight {limit:?} after the stop are cut short; the next operator \
             resumes their jobs"
        ),
    }
}

/// SIGTERM (Kubernetes stopping the pod) or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return futures::future::pending().await,
            };
        tokio::select! {
            _ = term.recv() => {},
            _ = tokio::signal::ctrl_c() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down: draining in-flight reconciles");
}

/// This replica's name in the lease and in events: the pod name when running in a cluster,
/// made unique per operator instance (tests run several in one process).
fn identity() -> String {
    static INSTANCES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| CONTROLLER_NAME.to_string());
    let instance = INSTANCES.fetch_add(1, Ordering::Relaxed);
    format!("{host}_{}_{instance}", std::process::id())
}

fn pod_namespace() -> Option<String> {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
